"""Symptoms, saved models, evaluate and the magnitude search on real digits runs
(TensorFlow; one epoch and three instances per population to stay CPU-cheap)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from probmut.io.outcomes import load_outcome_records, load_outcomes
from probmut.io.populations import read_instances

from .commands import probmut

pytestmark = pytest.mark.train
FAST = ["--dataset", "digits", "--architecture", "digits_cnn", "--epochs", "1", "--instances", "3",
        "--quiet"]
# A learning rate that makes the loss explode, and a benign mutation. (Mutations that
# cannot train are refused before training by probmut.train.legality; crashes are
# tested below with a backend whose calls fail, as a lost worker's do.)
DIVERGE, BENIGN = "change_learning_rate:1000", "delete_training_data:10"


@pytest.fixture(scope="module")
def symptoms_run(tmp_path_factory):
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("runs") / "digits"
    # default --stack auto: the three instances of a population train as one stack
    result = probmut("train", *FAST, "--save-models", "--mutation", DIVERGE,
                     "--mutation", BENIGN, "--mutation", "neurons_freezing:0.5",
                     "--out", out)
    return out, result


@pytest.mark.slow
def test_symptoms_classifies_divergence_and_a_benign_mutation(symptoms_run):
    out, result = symptoms_run
    assert "3 instances diverged" in result.stderr
    document = json.loads(probmut("symptoms", out, "--json", "--no-plot").stdout)
    symptoms = {p["name"]: p for p in document["results"]}
    assert symptoms["change_learning_rate_1000"]["symptom"] == "nan"
    assert symptoms["change_learning_rate_1000"]["constant"] == 3  # one-class predictors
    assert symptoms["delete_training_data_10"]["symptom"] in (
        "insignificant accuracy change", "significant accuracy change")
    # a stack's members share its time: no per-instance seconds, so no time comparison
    assert symptoms["delete_training_data_10"]["time_change"] is None
    records = read_instances(out / "healthy.csv")
    assert all(r.status == "ok" and math.isnan(r.seconds) and len(r.loss_history) == 1
               and r.initial_loss > r.final_loss for r in records)
    stored = load_outcome_records(out / "change_learning_rate_1000.outcomes.npz")
    assert [r.status for r in stored] == ["diverged"] * 3
    # the kill analyses refuse the diverged population instead of counting it
    refused = probmut("kill", out / "healthy.csv", out / "change_learning_rate_1000.csv",
                      check=False)
    assert refused.returncode == 2 and "every instance failed" in refused.stderr


@pytest.mark.slow
def test_evaluate_reproduces_the_accuracies_and_outcomes_train_wrote(symptoms_run, tmp_path):
    out, _ = symptoms_run
    # the run's saved models (healthy, model-level mutant saved after mutation, diverged)
    # scored again, grouped into populations with a manifest
    manifest = tmp_path / "rescored" / "manifest.toml"
    doc = json.loads(probmut("evaluate", out / "models", "--dataset", "digits", "--write-manifest",
                             manifest, "--json", "--quiet").stdout)
    populations = ["healthy", "neurons_freezing_0.5", "change_learning_rate_1000",
                   "delete_training_data_10"]
    assert sorted(Path(p["file"]).stem for p in doc["results"]) == sorted(populations)
    for population in populations:
        trained = {r.instance: r.accuracy for r in read_instances(out / f"{population}.csv")}
        scored = read_instances(manifest.parent / f"{population}.csv")
        assert {r.instance: r.accuracy for r in scored} == trained  # exactly
        ids, correct, labels = load_outcomes(out / f"{population}.outcomes.npz", keep_failed=True)
        ids2, correct2, labels2 = load_outcomes(manifest.parent / f"{population}.outcomes.npz",
                                                keep_failed=True)
        assert np.array_equal(ids, ids2) and np.array_equal(correct, correct2)
        assert np.array_equal(labels, labels2)
    # the saved diverged models have finite weights: evaluate sees one-class predictors
    rescored = read_instances(manifest.parent / "change_learning_rate_1000.csv")
    assert all(r.constant for r in rescored)
    kill = json.loads(probmut("kill", "--manifest", manifest, "--model", "rescored",
                              "--mutation", "neurons_freezing", "--json").stdout)
    assert kill["n_healthy"] == kill["n_mutant"] == 3


class _LostMutantWorkers:
    """A backend that runs healthy calls and fails every other call, as a lost worker
    process does (:class:`probmut.train.backends.WorkerDied`)."""

    def __init__(self, backend):
        self.backend = backend

    def map_unordered(self, fn, calls):
        from probmut.train.backends import WorkerDied

        calls = list(calls)
        healthy = [i for i, call in enumerate(calls) if call[0][0].population == "healthy"]
        for index, outcome in self.backend.map_unordered(fn, [calls[i] for i in healthy]):
            yield healthy[index], outcome
        for index in sorted(set(range(len(calls))) - set(healthy)):
            yield index, WorkerDied("the worker process died (exit code -9)")


@pytest.mark.slow
def test_a_crashed_stack_records_each_member_once_and_is_retried_on_request(tmp_path):
    pytest.importorskip("tensorflow")
    from probmut.train.backends import Serial
    from probmut.train.datasets import load_dataset
    from probmut.train.legality import prepare
    from probmut.train.models import MODELS
    from probmut.train.operators import parse_mutations
    from probmut.train.run import run_populations
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import RunSettings

    configure_tensorflow(1)
    data, spec = load_dataset("digits"), MODELS["digits_cnn"]
    config = spec.config.replace(epochs=1)
    settings = RunSettings("digits", "digits_cnn", config, seed=42, stack=3)
    mutations = prepare(parse_mutations(BENIGN), spec, data, config)
    with Serial(1, {"dataset": data}) as serial:
        report = run_populations(settings, mutations, 3, tmp_path, _LostMutantWorkers(serial),
                                 data, name="digits", progress=False)
        assert len(report.failures) == 3 and "crashed" in report.failures[0]
        stored = load_outcome_records(tmp_path / "delete_training_data_10.outcomes.npz")
        assert [r.status for r in stored] == ["crashed"] * 3  # each member of the stack
        assert "exit code -9" in stored[0].error
        document = json.loads(probmut("symptoms", tmp_path, "--json", "--no-plot").stdout)
        assert document["results"][0]["symptom"] == "crash"
        healthy = read_instances(tmp_path / "healthy.csv")
        assert all(r.status == "ok" and len(r.loss_history) == 1 for r in healthy)
        record = tmp_path / ".work" / "delete_training_data_10" / "00000.npz"
        before = record.stat().st_mtime_ns
        again = run_populations(settings, mutations, 3, tmp_path, serial, data, name="digits",
                                progress=False)
        assert again.trained == 0 and record.stat().st_mtime_ns == before  # recorded once
        retried = run_populations(settings, mutations, 3, tmp_path, serial, data,
                                  name="digits", progress=False, retry_failed=True)
    assert retried.trained == 3 and not retried.failures
    assert [r.status for r in read_instances(tmp_path / "delete_training_data_10.csv")] == \
        ["ok"] * 3


@pytest.mark.slow
def test_search_brackets_the_killable_magnitude_within_the_bound(symptoms_run):
    out, _ = symptoms_run
    # DeepCrime's bound for the operator: 99 (at 100 no training data is left, refused)
    text = probmut("train", *FAST, "--search", "delete_training_data:0,99", "--resolution",
                   "50", "--decision", "deepcrime", "--out", out).stdout
    assert "trained 3 magnitudes (at most 3 = " in text  # ceil(log2(99 / 50)) + 2
    lines = text.splitlines()
    decided = [line.split()[:2] for line in lines[2:5]]
    assert [value for value, _ in decided] == ["99", "0", "49.5"]
    assert all(trained == "yes" for _, trained in decided)
    assert any(line.startswith(("bracket: not killed at", "killed at 0")) for line in lines)

    # searched again from Python (in this process): every magnitude is on disk, nothing
    # is retrained
    from probmut.train import train_populations
    from probmut.train.options import ExecutionOptions, Search, TrainingOptions

    again = train_populations(out, mode=Search(magnitudes="delete_training_data:0,99",
                                               resolution=50, instances=3,
                                               decision="deepcrime"),
                              training=TrainingOptions(epochs=1),
                              execution=ExecutionOptions(progress=False))
    assert again.trained == again.search.trained == 0
    assert [s.value for s in again.search.steps] == [99, 0, 49.5]
    assert str(again.search).splitlines()[-2] in lines
    assert again.to_dict()["search"]["killable_magnitude"] == again.search.bracket[1]
    # a range whose strong end leaves no training data is refused before training
    refused = probmut("train", *FAST, "--search", "delete_training_data:0,100",
                      "--out", out, check=False)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1] == (
        "probmut train: error: delete_training_data:100: the mutated training set holds no "
        "samples (magnitude 100 of the search delete_training_data:0,100: narrow its range) "
        "(--search)")


def test_an_instance_past_its_timeout_stops_and_is_recorded_as_timed_out():
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.instance import train_instance
    from probmut.train.models import MODELS
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import Assignment, RunSettings

    configure_tensorflow(1)
    settings = RunSettings("digits", "digits_cnn", MODELS["digits_cnn"].config)
    result = train_instance(Assignment(settings, "change_epochs_100000", 0, "change_epochs",
                                 {"value": 100000}, timeout=3.0), dataset=load_dataset("digits"))
    assert result.status == "timed out" and result.correct is None
    assert math.isnan(result.accuracy) and 3.0 <= result.seconds < 60
    assert result.loss_history and result.initial_loss > 0  # what it did before it stopped


@pytest.mark.slow
def test_coverage_on_the_saved_healthy_models_against_the_runs_mutants(symptoms_run, tmp_path):
    out, _ = symptoms_run
    figure = tmp_path / "coverage.png"
    result = probmut("coverage", out, "--against", out, "--neurons", "2,3", "--subsets", 20,
                     "--sanity", 5, "--json", "--plot", figure, "--quiet")
    doc = json.loads(result.stdout)
    assert doc["layer"].startswith("dense") and doc["neurons"] == 2 and doc["test_inputs"] == 450
    assert len(doc["idc"]["per_instance"]) == 3 and 0 < doc["idc"]["mean"] <= 1
    assert set(doc["idc_by_neurons"]) == {"2", "3"}
    for baseline in ("nc", "kmnc", "tknc"):
        assert 0 < doc[baseline]["mean"] <= 1
    correlation = doc["correlation"]
    assert correlation["subsets"] == 20 and correlation["subset_size"] == 45
    assert {"tau", "p_value", "ci_low", "ci_high"} <= set(correlation)
    assert doc["sanity"]["draws"] == 5 and len(doc["sanity"]["per_instance"]) == 3
    # the crashed and diverged populations cannot be killed on any subset: left out
    assert "every instance failed; left out" in result.stderr
    assert figure.read_bytes()[:4] == b"\x89PNG"


def test_coverage_needs_saved_models(tmp_path, capsys):
    pytest.importorskip("tensorflow")
    from probmut.cli import main

    (tmp_path / "manifest.toml").write_text('[models.x]\nhealthy = "healthy.csv"\n')
    assert main(["coverage", str(tmp_path), "--no-plot"]) == 2
    assert "--save-models" in capsys.readouterr().err


@pytest.fixture
def model_folder(tmp_path):
    """A folder of two files named as models (their content is not read before the
    checks below)."""
    folder = tmp_path / "models" / "healthy"
    folder.mkdir(parents=True)
    for i in range(2):
        (folder / f"{i:05d}.keras").write_bytes(b"PK")
    return folder


@pytest.mark.parametrize("argv, says", [
    (["{m}/00000.keras", "{m}/00000.keras", "--out", "{t}/p.csv"],
     "{m}/00000.keras: given twice; each model file is one instance, name it once"),
    (["{m}", "{m}/00001.keras", "--out", "{t}/p.csv"], "{m}/00001.keras: given twice"),
    (["{m}/00000.keras", "{m}/../healthy/00000.keras", "--out", "{t}/p.csv"],
     "{m}/../healthy/00000.keras: given twice (as {m}/00000.keras)"),
    (["{m}/00000.keras", "--out", "{t}"],
     "{t}: is a directory; give a file name for the population file (--out)"),
    (["{m}/00000.keras", "--out", "{t}/" + "p" * 300 + ".csv"], "File name too long"),
    (["{m}/00000.keras", "--out", "{t}/" + "p" * 246 + ".csv"],
     "p.outcomes.npz: File name too long"),  # the CSV's name fits, its outcomes file's not
    (["{m}", "--write-manifest", "{t}"],
     "{t}: is a directory; give a file name for the manifest (--write-manifest)"),
    (["{m}", "--manifest", "{t}"], "one of the arguments --out --write-manifest is required"),  # --manifest: its name before 0.2.0
])
def test_evaluate_refuses_what_it_cannot_score_or_write(tmp_path, capsys, model_folder, argv,
                                                        says):
    pytest.importorskip("tensorflow")
    from probmut.cli import main

    fill = {"m": model_folder, "t": tmp_path}
    assert main(["evaluate", *(a.format(**fill) for a in argv), "--dataset", "digits"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("probmut evaluate: error: "), err
    assert says.format(**fill) in err[0], err[0]
    assert not list(tmp_path.glob("p*"))  # nothing written


@pytest.mark.parametrize("content, says", [
    (b"", "the file is empty"),
    (b"random bytes, not a zip archive",
     "not a .keras model (a .keras file is a zip archive; this one is damaged or another kind "
     "of file)"),
])
def test_evaluate_says_what_is_wrong_with_a_damaged_model_file(tmp_path, capsys, content, says):
    pytest.importorskip("tensorflow")
    from probmut.cli import main

    model = tmp_path / "m.keras"
    model.write_bytes(content)
    assert main(["evaluate", str(model), "--dataset", "digits", "--out", str(tmp_path / "p.csv"),
                 "--quiet"]) == 1  # a model that cannot be scored is a crashed instance
    assert f"1 model failed (recorded in the population files):\n  {model}: crashed: {says}" \
        in capsys.readouterr().err
    assert [(r.status, r.error) for r in read_instances(tmp_path / "p.csv")] == [("crashed", says)]


def test_evaluate_says_how_many_failed_and_over_how_many_the_mean_is(tmp_path, capsys):
    """'5 instances, mean accuracy 0.9' with 4 of 5 crashed, and 'nan' when all did
    (issue 44): the count that failed, how, and the instances the mean is over."""
    pytest.importorskip("tensorflow")
    from probmut.cli import main
    from probmut.train.datasets import load_dataset
    from probmut.train.models import MODELS

    folder = tmp_path / "models"
    folder.mkdir()
    for i in (1, 2):
        (folder / f"{i:05d}.keras").write_bytes(b"")  # crashes when loaded
    assert main(["evaluate", str(folder), "--dataset", "digits", "--out",
                 str(tmp_path / "none.csv"), "--quiet"]) == 1
    assert capsys.readouterr().out == (f"{tmp_path}/none.csv: 2 instances, all failed (2 "
                                       "crashed): no accuracy to average, on 450 test inputs "
                                       "of digits\n")
    MODELS["digits_cnn"].build(load_dataset("digits").dims).save(folder / "00000.keras")
    assert main(["evaluate", str(folder), "--dataset", "digits", "--out",
                 str(tmp_path / "p.csv"), "--quiet", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert (document["instances"], document["scored"]) == (3, 1)
    accuracy = read_instances(tmp_path / "p.csv")[0].accuracy
    assert document["accuracy_mean"] == accuracy  # the one scored
    assert main(["evaluate", str(folder), "--dataset", "digits", "--out",
                 str(tmp_path / "p.csv"), "--quiet"]) == 1
    assert capsys.readouterr().out == (f"{tmp_path}/p.csv: 3 instances, 2 failed (2 crashed), "
                                       f"mean accuracy {accuracy:.6g} over the 1 scored, on 450 "
                                       "test inputs of digits\n")


def test_coverage_says_a_truncated_model_file_is_damaged(tmp_path, capsys):
    """Keras called a truncated .keras file "File not found" (issue 44)."""
    pytest.importorskip("tensorflow")
    from probmut.cli import main

    (tmp_path / "manifest.toml").write_text('[models.x]\nhealthy = "healthy.csv"\n')
    models = tmp_path / "models" / "healthy"
    models.mkdir(parents=True)
    (models / "00000.keras").write_bytes(b"PK\x03\x04" + bytes(200))  # a zip cut short
    assert main(["coverage", str(tmp_path), "--dataset", "digits", "--no-plot", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"probmut coverage: error: {models / '00000.keras'}: cannot load the model: "
                   "not a .keras model (a .keras file is a zip archive; this one is damaged or "
                   "another kind of file)"]
