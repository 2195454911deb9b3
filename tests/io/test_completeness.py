"""A run that stopped early is a partial run for every command that reads it: the
trainer's manifest records each population's target, and a population short of it is
named with its counts (a warning), refused with --strict, and carried in the JSON.

The runs here are written with the trainer's own writers (manifest, population CSV,
outcomes) and no TensorFlow; tests/train/test_run.py interrupts a real run.
"""

import json

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.io.completeness import IncompleteRunWarning, check_complete, noting_completeness
from probmut.io.manifest import Manifest, add_to_manifest
from probmut.io.outcomes import load_outcomes
from probmut.io.populations import read_instances, read_population
from probmut.io.records import InstanceRecord
from probmut.train.run import write_population

TARGET = 10
MESSAGE = ("rs3: {stem} has {n} of 10 instances (the run stopped early: rerun the same "
           "`probmut train` command to finish it)")


def write_run(folder, counts: dict[str, int], targets: bool = True, seed: int = 0):
    """A run directory as the trainer leaves it: ``counts`` maps each population stem
    (healthy, delete_training_data_MAG) to the instances written, the manifest records a
    target of 10 for each (unless not ``targets``)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, 60)
    for stem, count in counts.items():
        shift = 0.0 if stem == "healthy" else float(stem.rsplit("_", 1)[1]) / 100
        records, rows = [], []
        for i in range(count):
            row = rng.random(60) < 0.9 - shift
            records.append(InstanceRecord(i, float(row.mean()), seed=i,
                                          seconds=float(rng.normal(5, 0.2)),
                                          loss_history=(1.0, 0.4), initial_loss=2.3,
                                          constant=False))
            rows.append(row)
        write_population(folder / f"{stem}.csv", records, rows, labels)
    magnitudes = [stem.rsplit("_", 1)[1] for stem in counts if stem != "healthy"]
    add_to_manifest(folder / "manifest.toml", "rs3", "healthy.csv", "a run",
                    [("delete_training_data", m, False) for m in magnitudes],
                    targets={f"{stem}.csv": TARGET for stem in counts} if targets else None)
    return folder


@pytest.fixture
def short_run(tmp_path):
    """healthy complete (10 of 10), the 10% mutant complete, the 50% one short (6 of 10)."""
    return write_run(tmp_path / "rs3", {"healthy": 10, "delete_training_data_10": 10,
                                        "delete_training_data_50": 6})


def by_manifest(run):
    return ["--manifest", run / "manifest.toml", "--model", "rs3", "--mutation",
            "delete_training_data"]


#: Every command that reads populations, with settings that keep it to a second.
FAST = ["--bootstraps", "4", "--trials", "10", "--sample", "3"]
COMMANDS = {
    "kill": lambda run: ["kill", *by_manifest(run)],
    "posterior": lambda run: ["posterior", *by_manifest(run), *FAST, "--no-plot"],
    "repeat": lambda run: ["repeat", *by_manifest(run), "--repetitions", "2", "--trials", "5",
                           "--sample", "2", "--pool", "3"],
    "mce": lambda run: ["mce", *by_manifest(run), *FAST, "--repetitions", "2", "--no-cache"],
    "sample-size": lambda run: ["sample-size", *by_manifest(run), *FAST, "--sizes", "5",
                                "--subpopulations", "2", "--repetitions", "2", "--no-plot",
                                "--no-cache", "--quiet"],
    "recommend": lambda run: ["recommend", *by_manifest(run), *FAST, "--sizes", "5",
                              "--simulations", "10", "--no-cache", "--quiet"],
    "symptoms": lambda run: ["symptoms", run, "--no-plot"],
    "inputs": lambda run: ["inputs", run / "healthy.outcomes.npz",
                           run / "delete_training_data_50.outcomes.npz"],
    "kill (files)": lambda run: ["kill", run / "healthy.csv", run / "delete_training_data_50.csv"],
}
JSON = {"kill", "posterior", "repeat", "mce", "sample-size", "recommend", "symptoms", "inputs",
        "kill (files)"}



@pytest.mark.parametrize("command", COMMANDS)
def test_every_reader_names_a_population_short_of_its_target(cli, short_run, command):
    code, out, err = cli(*COMMANDS[command](short_run))
    assert code == 0, err
    short = [line for line in err.splitlines() if "stopped early" in line]
    assert short == ["probmut: warning: " + MESSAGE.format(stem="delete_training_data_50", n=6)]


@pytest.mark.parametrize("command", COMMANDS)
def test_strict_refuses_a_population_short_of_its_target(cli, short_run, command):
    code, out, err = cli(*COMMANDS[command](short_run), "--strict")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"probmut {command.split()[0]}: error: "
        + MESSAGE.format(stem="delete_training_data_50", n=6) + " (--strict)"]


@pytest.mark.parametrize("command", sorted(JSON))
def test_json_says_which_populations_are_complete(cli, short_run, command):
    code, out, err = cli(*COMMANDS[command](short_run), "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["complete"] is False
    entries = {e["population"]: e for e in document["completeness"]}
    assert entries["delete_training_data_50"] == {
        "population": "delete_training_data_50",
        "file": str(short_run / "delete_training_data_50.csv"), "instances": 6,
        "target": TARGET, "complete": False}
    assert entries["healthy"]["complete"] is True and entries["healthy"]["instances"] == 10


def test_a_finished_run_reads_as_complete_without_a_word(cli, tmp_path):
    run = write_run(tmp_path / "rs3", {"healthy": 10, "delete_training_data_50": 10})
    code, out, err = cli(*COMMANDS["kill"](run), "--json", "--strict")
    assert code == 0 and "stopped early" not in err
    document = json.loads(out)
    assert document["complete"] is True
    assert [e["complete"] for e in document["completeness"]] == [True, True]


def test_a_manifest_without_targets_is_read_as_today(cli, tmp_path):
    run = write_run(tmp_path / "rs3", {"healthy": 10, "delete_training_data_50": 6},
                    targets=False)
    code, out, err = cli(*COMMANDS["kill"](run), "--json", "--strict")
    assert code == 0 and "stopped early" not in err
    assert "complete" not in json.loads(out) and "completeness" not in json.loads(out)
    # the bundled data has no targets either
    code, out, _ = cli("kill", "--model", "mnist", "--mutation",
                           "delete_training_data", "--json", "--strict")
    assert code == 0 and "completeness" not in json.loads(out)


def test_a_population_not_written_yet_is_refused_with_its_target(cli, tmp_path):
    run = write_run(tmp_path / "rs3", {"healthy": 4, "delete_training_data_50": 3})
    (run / "delete_training_data_50.csv").unlink()  # killed before its first assembly
    code, _, err = cli(*COMMANDS["kill"](run))
    assert code == 2
    assert err.strip().splitlines()[-1] == ("probmut kill: error: " + MESSAGE.format(
        stem="delete_training_data_50", n=0))


def test_a_population_with_no_instance_yet_is_refused_with_its_target(tmp_path):
    run = write_run(tmp_path / "rs3", {"healthy": 4, "delete_training_data_50": 0})
    for read in (read_population, read_instances):
        with pytest.raises(ProbmutError, match="delete_training_data_50 has 0 of 10 instances"):
            read(run / "delete_training_data_50.csv")


def test_the_library_readers_warn_and_strict_refuses(short_run):
    path = short_run / "delete_training_data_50.csv"
    outcomes = short_run / "delete_training_data_50.outcomes.npz"
    for read in (read_population, read_instances, load_outcomes):
        with pytest.warns(IncompleteRunWarning, match="has 6 of 10 instances"):
            read(outcomes if read is load_outcomes else path)
        with pytest.raises(ProbmutError, match="has 6 of 10 instances") as refused:
            read(outcomes if read is load_outcomes else path, strict=True)
        assert refused.value.option == "strict"


def test_the_target_is_found_through_the_manifest_given(tmp_path):
    """A manifest elsewhere that lists the files with targets is used, not only the one
    beside the files."""
    run = write_run(tmp_path / "rs3", {"healthy": 10, "delete_training_data_50": 6},
                    targets=False)
    elsewhere = tmp_path / "mine.toml"
    add_to_manifest(elsewhere, "mine", "rs3/healthy.csv", "by hand", [],
                    targets={"rs3/healthy.csv": 12})
    manifest = Manifest.load(elsewhere)
    assert manifest.target(run / "healthy.csv") == ("mine", 12)
    with pytest.warns(IncompleteRunWarning, match="mine: healthy has 10 of 12"):
        read_population(run / "healthy.csv", manifest=manifest)
    with noting_completeness() as noted:
        assert check_complete(run / "healthy.csv", 12, manifest=manifest).complete
    assert [c.to_dict()["target"] for c in noted] == [12]


@pytest.mark.parametrize("targets", ['"x"', "-1", "true", '{ "a.csv" = 1.5 }'])
def test_malformed_targets_in_a_manifest_are_refused(cli, tmp_path, targets):
    path = tmp_path / "manifest.toml"
    path.write_text(f'[models.m]\nhealthy = "h.csv"\ntargets = {targets}\n'
                    if targets.startswith("{") else
                    f'[models.m]\nhealthy = "h.csv"\n[models.m.targets]\n"h.csv" = {targets}\n')
    code, _, err = cli("kill", "--manifest", path, "--model", "m",
                           "--mutation", "x")
    assert code == 2 and "targets] must map population files to whole numbers" in err


def test_coverage_against_an_unfinished_run_warns_and_strict_refuses(short_run):
    """``coverage --against RUN`` reads the run's outcome files (no TensorFlow needed for
    that part)."""
    from probmut.cli.coverage import _against

    with pytest.warns(IncompleteRunWarning, match="delete_training_data_50 has 6 of 10"):
        _, mutants = _against(str(short_run), strict=False)
    assert len(mutants) == 2
    with pytest.raises(ProbmutError, match="delete_training_data_50 has 6 of 10"):
        _against(str(short_run), strict=True)
