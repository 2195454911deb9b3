"""End-to-end population runs on digits: files, kill decision, resume, determinism, Ray.

Runs go through the command line (the ``cli`` fixture; a process of their own where a
run is killed or interrupted), with 2 epochs and a handful of instances to stay
CPU-cheap; the runs that take more than ~20 s are marked slow.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

from probmut.io.outcomes import load_outcomes
from probmut.io.populations import COLUMNS, read_instances

from ..conftest import CLI, interruptible
from .commands import REPO, env

pytestmark = pytest.mark.train
FAST = ["--dataset", "digits", "--architecture", "digits_cnn", "--epochs", "2", "--quiet"]


def read_population(path):
    lines = Path(path).read_text().splitlines()
    header, rows = lines[0], [line.split(",") for line in lines[1:]]
    return header, [int(r[0]) for r in rows], np.array([float(r[1]) for r in rows])


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("runs") / "digits"
    # One instance at a time (--stack 1): test_same_seed_same_accuracy_in_process compares
    # with train_instance; stacked runs are tested in test_stack.py.
    result = CLI.run("train", *FAST, "--instances", 4, "--jobs", 2, "--stack", 1,
                     "--mutation", "delete_training_data:90",
                     "--mutation", "neurons_freezing:0.5", "--mutation", "weights_fuzzing:0_1",
                     "--format", "deepcrime",
                     "--out", out)
    return out, result


@pytest.mark.slow
def test_run_writes_valid_populations_and_manifest(digits_run):
    out, result = digits_run
    assert "trained 16 instances" in result.out
    for stem in ["healthy", "delete_training_data_90", "neurons_freezing_0.5"]:
        header, ids, acc = read_population(out / f"{stem}.csv")
        assert header.split(",") == list(COLUMNS)
        assert ids == [0, 1, 2, 3]
        assert np.all((acc >= 0) & (acc <= 1))
        ids2, correct, labels = load_outcomes(out / f"{stem}.outcomes.npz")
        assert ids2.tolist() == ids and correct.shape == (4, 450) and labels.shape == (450,)
        assert np.allclose(correct.mean(axis=1), acc)  # outcomes agree with accuracies
        dc_header, dc_values = (out / f"{stem}.deepcrime.csv").read_text().splitlines()
        assert dc_header.split(";") == ["true_label"] + [f"pred_label_model_{i}" for i in ids]
        assert np.array_equal(np.array(dc_values.split(";")[1:], float), acc)
    manifest = tomllib.loads((out / "manifest.toml").read_text())["models"]["digits"]
    assert manifest["healthy"] == "healthy.csv"
    assert manifest["mutations"]["delete_training_data"] == {
        "paired": False, "pattern": "delete_training_data_{magnitude}.csv", "magnitudes": ["90"],
        "flags": {"90": []}}
    assert manifest["mutations"]["neurons_freezing"]["paired"] is True
    # flags from the instances' matches with their healthy instances (read as the
    # populations are assembled): a fuzzing of 0 keeps every weight
    assert manifest["mutations"]["weights_fuzzing"]["flags"] == {"0_1": ["equivalent"]}
    assert manifest["mutations"]["neurons_freezing"]["flags"] == {"0.5": []}


@pytest.mark.slow
def test_strong_mutation_is_killed_by_probmut_kill(digits_run, cli):
    out, _ = digits_run
    verdict = json.loads(cli.run("kill", out / "healthy.csv", out / "delete_training_data_90.csv",
                                 "--json").out)
    assert verdict["killed"] is True and verdict["p_value"] < 0.05
    assert verdict["effect_size"] >= 0.5
    # the analysis finds the populations through the manifest too
    by_name = cli.run("kill", "--manifest", out / "manifest.toml", "--model", "digits",
                      "--mutation", "delete_training_data")
    assert "KILLED" in by_name.out


@pytest.mark.slow
def test_same_seed_same_accuracy_in_process(digits_run):
    """An instance retrained here (one process, no pool) equals the run's (worker pool)."""
    from probmut.train.datasets import load_dataset
    from probmut.train.instance import train_instance
    from probmut.train.models import MODELS
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import Assignment, RunSettings

    out, _ = digits_run
    configure_tensorflow(1)
    settings = RunSettings("digits", "digits_cnn", MODELS["digits_cnn"].config.replace(epochs=2),
                           seed=42)  # probmut train's default seed
    first = train_instance(Assignment(settings, "healthy", 1), dataset=load_dataset("digits"))
    again = train_instance(Assignment(settings, "healthy", 1), dataset=load_dataset("digits"))
    assert np.array_equal(first.correct, again.correct)
    assert first.accuracy == read_population(out / "healthy.csv")[2][1]


@pytest.mark.slow
def test_resume_after_kill_trains_only_the_missing_instances(tmp_path, cli):
    pytest.importorskip("tensorflow")
    out = tmp_path / "resume"
    # A process of its own, killed (SIGKILL) mid-run; stacks of two: the kill lands between
    # stacks, and resume must finish the rest.
    stacked = [*FAST, "--stack", "2"]
    args = [sys.executable, "-m", "probmut", "train", *stacked, "--instances", 6, "--out", out]
    process = subprocess.Popen(list(map(str, args)), cwd=REPO, env=env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = out / ".work" / "healthy"
    deadline = time.monotonic() + 300
    while len(list(records.glob("*.npz"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # no clean-up: as if the machine were lost
    process.wait()
    before = {p.name: p.stat().st_mtime_ns for p in records.glob("*.npz")}
    assert 2 <= len(before) < 6
    # the manifest, written before training, knows the population is not written yet
    unfinished = cli("symptoms", out, "--no-plot")
    assert unfinished.code == 2
    assert "resume: healthy has 0 of 6 instances (the run stopped early" in unfinished.err

    result = cli.run("train", *stacked, "--instances", 6, "--out", out)
    assert f"trained {6 - len(before)} instance" in result.out  # or instances
    assert f"{len(before)} were already done" in result.out
    assert {p.name: p.stat().st_mtime_ns for p in records.glob("*.npz")
            if p.name in before} == before  # finished instances were not retrained
    _, ids, _ = read_population(out / "healthy.csv")
    assert ids == list(range(6))
    assert not list(out.rglob("*.tmp"))
    again = cli.run("train", *stacked, "--instances", 6, "--out", out)
    assert "trained 0 instances" in again.out and "6 were already done" in again.out


@pytest.mark.slow
def test_an_interrupted_run_is_analysed_as_unfinished_until_it_is_resumed(tmp_path, cli):
    """Ctrl-C in the middle of a run (issue 32): the analyses name each population short
    of its target, --strict refuses, the JSON says so; the same command finishes the run
    and the analyses read it as complete."""
    pytest.importorskip("tensorflow")
    out = tmp_path / "rs3"
    train = ["train", *FAST, "--instances", 4, "--stack", 1,
             "--mutation", "delete_training_data:10,50", "--out", out]
    process = subprocess.Popen([sys.executable, "-m", "probmut", *map(str, train)], cwd=REPO,
                               env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=interruptible)
    second = out / ".work" / "delete_training_data_50" / "00001.npz"  # 2 of each population
    deadline = time.monotonic() + 300
    while not second.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert "interrupted; completed work is kept" in stderr
    counts = {stem: len(read_population(out / f"{stem}.csv")[1])
              for stem in ["healthy", "delete_training_data_10", "delete_training_data_50"]}
    assert all(2 <= n < 4 for n in counts.values()), counts

    by_name = ["--manifest", out / "manifest.toml", "--model", "rs3",
               "--mutation", "delete_training_data"]
    result = cli.run("kill", *by_name, "--json")
    assert [line.removeprefix("probmut: warning: ") for line in result.err.splitlines()
            if "stopped early" in line] == [
        f"rs3: {stem} has {n} of 4 instances (the run stopped early: rerun the same "
        "`probmut train` command to finish it)" for stem, n in counts.items()]
    document = json.loads(result.out)
    assert document["complete"] is False
    assert {e["population"]: e["instances"] for e in document["completeness"]} == counts
    strict = cli("kill", *by_name, "--strict")
    assert strict.code == 2 and strict.out == ""
    assert "probmut kill: error: rs3: healthy has" in strict.err

    cli.run(*train)  # the same command finishes the run
    finished = cli.run("kill", *by_name, "--json", "--strict")
    assert "stopped early" not in finished.err
    document = json.loads(finished.out)
    assert document["complete"] is True
    assert [e["instances"] for e in document["completeness"]] == [4, 4, 4]


@pytest.mark.slow
def test_resume_refuses_other_settings(digits_run, cli):
    out, _ = digits_run
    result = cli("train", "--dataset", "digits", "--epochs", "3", "--instances", 4,
                     "--out", out)
    assert result.code == 2  # which settings differ, before and now (issue 44)
    assert "holds a run with other settings: config.epochs 2 before, 3 now; use" in result.err


@pytest.mark.parametrize("args, message", [
    (["--mutation", "no_such_op:1"], "unknown mutation operator"),
    (["--mutation", "delete_training_data:120"], "between 0 and 100"),
    (["--mutation", "change_activation_function:nosuch"], "unknown Keras activation"),
    (["--mutation", "neurons_freezing:0.1@42"], "layer 42 is out of range"),
    (["--data", "missing.npz"], "no such file"),
    (["--validation-split", "1"], "argument --validation-split: must be a finite number in (0, 1)"),
    (["--architecture", "no_module_here:build"], "cannot import"),
    (["--architecture", "nosuch"], "unknown architecture 'nosuch'; use one of digits_cnn"),
    (["--model", "nosuch"], "unrecognized arguments: --model nosuch"),  # its name before 0.2.0
    (["--instances", "0"], "argument --instances: must be at least 1"),
    (["--jobs", "0"], "argument --jobs: must be at least 1"),
    (["--architecture", "os:path"], "error: os:path: path is of type module, not a function "
                             "(input_shape, n_classes) -> keras.Model (--architecture)"),
    (["--architecture", "probmut.errors:EXIT_BAD_INPUT"], "EXIT_BAD_INPUT is of type int"),
    (["--architecture", "os.path:join"], "join((8, 8, 1), 10) failed (TypeError: "),
    (["--architecture", "os:getcwd"], "getcwd((8, 8, 1), 10) failed"),
    (["--architecture", ":build"], "cannot import build from  (ValueError: Empty module name)"),
    (["--mutation", "change_loss_function:nosuch"], "unknown Keras loss 'nosuch'"),
    # issue 44: one population under two spellings would train twice, with two seeds
    (["--mutation", "delete_training_data:010,10"], "delete_training_data: magnitude '010' and "
                                                    "'10' are the same number"),
    (["--mutation", "delete_training_data:10", "--mutation", "delete_training_data:10.0"],
     "are the same number"),
])
def test_bad_input_is_a_clear_error_before_training(tmp_path, monkeypatch, cli, args, message):
    pytest.importorskip("tensorflow")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "empty_keras_home"))
    cli.refused("train", "--out", tmp_path / "out", *args, says=message)
    assert not (tmp_path / "out").exists()  # nothing trained, nothing written


@pytest.mark.parametrize("out, says", [
    ("a_file", "a_file: is a file, not a directory (the output directory) (--out)"),
    ("x" * 300, "File name too long; choose another place for the output directory (--out)"),
    ("new/" + "x" * 300 + "/run", "cannot write there (File name too long); choose another "
                                  "place for the output directory (--out)"),
    ("a_file/run", "cannot write there (Not a directory)"),
])
def test_an_out_that_cannot_hold_a_run_is_refused_before_anything_else(tmp_path, cli,
                                                                      monkeypatch, out, says):
    monkeypatch.chdir(tmp_path)
    Path("a_file").write_text("not a folder")
    error = cli.refused("train", "--out", out, "--instances", "1", says=says)
    assert error.startswith("probmut train: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing made, nothing left





def test_the_summary_counts_in_words():
    from probmut.train.run import RunReport

    one = RunReport(trained=1, resumed=1, seconds=2.0, counts={"healthy": 1, "x_1": 2},
                    out=Path("run"), name="run")
    assert str(one).splitlines()[:3] == [
        "trained 1 instance in 2.0 s (30.0/min); 1 was already done",
        "  run/healthy.csv: 1 instance", "  run/x_1.csv: 2 instances"]
    assert str(RunReport(trained=2, resumed=0, seconds=2.0)).startswith(
        "trained 2 instances in 2.0 s (60.0/min); 0 were already done")


@pytest.mark.slow
def test_ray_backend_writes_the_same_files_as_the_local_one(tmp_path):
    """In stacks of 3, on one Ray cluster: a Ray task is a unit of assignments, and a
    stack the unit of the most of them (a task of one instance is the training function's
    Ray test, tests/train/test_function_trainer.py)."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("tensorflow")
    from probmut.train.backends import LocalPool, RayBackend
    from probmut.train.datasets import load_dataset
    from probmut.train.models import MODELS
    from probmut.train.operators import parse_mutations
    from probmut.train.run import run_populations
    from probmut.train.work import RunSettings

    data = load_dataset("digits")
    config = MODELS["digits_cnn"].config.replace(epochs=1)
    mutations = [m for text in ["change_label:60", "weights_fuzzing:0.5_2@4"]
                 for m in parse_mutations(text)]
    ray.init(num_cpus=2, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        for stack in (3,):
            settings = RunSettings("digits", "digits_cnn", config, stack=stack)
            # Both sides in fresh processes: this one's TensorFlow may already run with other
            # pools, and stacked kernels add in an order that depends on their size.
            for name, backend in [("ray", RayBackend(None, 1, 0, 1, {"dataset": data})),
                                  ("local", LocalPool(1, 1, {"dataset": data}))]:
                with backend:
                    run_populations(settings, mutations, 3, tmp_path / f"{name}{stack}",
                                    backend, data, name="digits", progress=False)
    finally:
        ray.shutdown()
    for stack in (3,):
        local, remote = tmp_path / f"local{stack}", tmp_path / f"ray{stack}"
        files = sorted(p.name for p in local.iterdir() if p.is_file())
        assert len(files) == 7  # 3 populations x (csv, outcomes) + manifest
        for name in files:
            assert_same_but_seconds(local / name, remote / name)


def assert_same_but_seconds(local: Path, remote: Path) -> None:
    """Two runs' files equal but for the wall time of each instance."""
    if local.suffix == ".csv":
        assert same_but_seconds(read_instances(local), read_instances(remote)), local.name
    elif local.suffix == ".npz":
        with np.load(local) as a, np.load(remote) as b:
            assert sorted(a.files) == sorted(b.files)
            for key in a.files:
                assert key == "seconds" or np.array_equal(a[key], b[key], equal_nan=
                                                          a[key].dtype.kind == "f"), key
    else:
        assert local.read_bytes() == remote.read_bytes(), local.name


@pytest.mark.slow
def test_a_damaged_record_is_trained_again_and_the_others_kept(tmp_path, cli):
    pytest.importorskip("tensorflow")
    out = tmp_path / "damaged"
    cli.run("train", *FAST, "--instances", 3, "--stack", 1, "--out", out)
    records = out / ".work" / "healthy"
    _, _, accuracies = read_population(out / "healthy.csv")
    damaged = records / "00001.npz"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged.write_bytes(bytes(data))
    kept = {p.name: p.stat().st_mtime_ns for p in records.glob("*.npz") if p != damaged}
    result = cli.run("train", *FAST, "--instances", 3, "--stack", 1, "--out", out)
    assert "00001.npz: damaged record" in result.err
    assert "trained 1 instance in" in result.out and "2 were already done" in result.out
    assert {p.name: p.stat().st_mtime_ns for p in records.glob("*.npz") if p != damaged} == kept
    assert np.array_equal(read_population(out / "healthy.csv")[2], accuracies)  # same seed


@pytest.mark.slow
def test_a_full_disk_stops_a_run_that_resumes_to_the_same_files(tmp_path, cli, full_disk):
    """OSError 28 while saving an instance ended train in a traceback (issue 44): now one
    line naming the file, exit 2; the stacks saved before are kept, the stack being saved
    is not half-kept (its records appear together), and once space is freed the same
    command gives the files of a run that never stopped."""
    pytest.importorskip("tensorflow")
    from probmut.io.populations import read_instances

    train = ["train", *FAST, "--instances", "4", "--stack", "2", "--out"]  # 2 stacks
    cli.run(*train, tmp_path / "whole")
    out = tmp_path / "full"
    full_disk(f"{out}/.work/weights/healthy/00003.npz")  # the second stack's last write
    stopped = cli(*train, out)
    assert stopped.code == 2
    assert stopped.err.strip().splitlines()[-1:] == [  # after the warning of small populations
        f"probmut train: error: {out}/.work/weights/healthy/00003.npz: cannot write it: No "
        "space left on device; free some space and try again, or write elsewhere; completed "
        "work is kept: the same command resumes"]
    assert sorted(p.name for p in (out / ".work" / "healthy").glob("*.npz")) == [
        "00000.npz", "00001.npz"]
    assert not list(out.rglob("*.tmp*"))
    full_disk.free()
    assert "2 were already done" in cli.ok(*train, out)
    assert same_but_seconds(read_instances(out / "healthy.csv"),
                            read_instances(tmp_path / "whole" / "healthy.csv"))


def test_two_runs_on_one_output_directory_do_not_interleave(tmp_path):
    """The second is refused before TensorFlow loads (it took 13 s to refuse; issue 44)."""
    pytest.importorskip("tensorflow")
    from probmut.io.atomic import exclusive

    out = tmp_path / "busy"
    # A fresh interpreter, not the cli fixture: this one may have imported TensorFlow.
    script = ("import sys\nfrom probmut.cli import main\n"
              f"code = main({['train', *FAST, '--instances', '2', '--out', str(out)]!r})\n"
              "print('tensorflow' in sys.modules)\nsys.exit(code)")
    with exclusive(out / ".work", "lock"):  # as if another probmut train were running
        result = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env(),
                                capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    assert "another probmut train is writing to this directory" in result.stderr
    assert f"locked by process {os.getpid()}" in result.stderr
    assert result.stdout == "False\n"  # refused before TensorFlow was imported


def same_but_seconds(first, second):
    """Two populations' records agree in everything but the measured seconds."""
    strip = lambda records: [repr(dataclasses.replace(r, seconds=0.0)) for r in records]  # noqa: E731
    return strip(first) == strip(second)


class LosingBackend:
    """The synthetic backend of test_rounds.py, where healthy instance 1's unit is lost
    with its Ray node and delete_training_data_90 instance 2 crashes."""

    def __init__(self):
        from .test_rounds import SyntheticBackend

        self.synthetic = SyntheticBackend()

    def map_unordered(self, fn, calls):
        from probmut.train.backends import TaskLost
        from probmut.train.work import InstanceResult

        for index, (assignments, _, _) in enumerate(calls):
            (assignment,) = assignments
            where = (assignment.population, assignment.instance)
            if where == ("healthy", 1):
                yield index, TaskLost("NodeDiedError: the node running it is dead")
            elif where == ("delete_training_data_90", 2):
                yield index, [InstanceResult(*where, 0, float("nan"), None, 0.0,
                                             status="crashed", error="RuntimeError: boom")]
            else:
                yield index, [self.synthetic._result(assignment)]


def test_a_lost_instance_is_left_for_the_rerun_and_a_rerun_names_the_failed(tmp_path, capsys):
    """A unit lost with its Ray worker or node is no crash: nothing is recorded, the
    command says so and exits 1, and the same command trains it; an instance recorded as
    crashed is not trained again, but every rerun names it and exits 1 (docs/symptoms.md:
    the exit code is 1 while any instance of the run crashed)."""
    from probmut.cli.train import _failed
    from probmut.train.operators import parse_mutations
    from probmut.train.run import run_populations

    from .test_rounds import SETTINGS, SyntheticBackend, SyntheticData

    mutations = parse_mutations("delete_training_data:90")
    run = lambda backend: run_populations(SETTINGS, mutations, 3, tmp_path, backend,  # noqa: E731
                                          SyntheticData(), name="lost", progress=False)
    first = run(LosingBackend())
    assert first.lost == ["healthy instance 1: NodeDiedError: the node running it is dead"]
    assert first.failures == ["delete_training_data_90 instance 2: crashed: RuntimeError: boom"]
    assert first.trained == 5 and first.counts == {"healthy": 2, "delete_training_data_90": 3}
    assert not (tmp_path / ".work" / "healthy" / "00001.npz").exists()
    assert _failed(first) == 1
    err = capsys.readouterr().err
    assert "1 instance not trained: the Ray worker or node running it was lost" in err
    assert "healthy instance 1: NodeDiedError" in err and "run the same command again" in err

    again = SyntheticBackend()
    second = run(again)
    assert again.trained == [("healthy", 1)]  # the lost one; the crashed one stays recorded
    assert second.lost == [] and second.failures == []
    assert second.failed_before == [
        "delete_training_data_90 instance 2: crashed: RuntimeError: boom"]
    assert _failed(second) == 1
    assert capsys.readouterr().err.endswith(
        "1 instance recorded as failed by an earlier run, not trained again (--retry-failed "
        "trains them again):\n  delete_training_data_90 instance 2: crashed: RuntimeError: boom\n")


def test_a_resume_with_other_threads_is_refused_naming_them(tmp_path):
    """TensorFlow's threads per instance change the order of its float sums, so every
    trained instance depends on them (docs/training.md): recorded with the run's
    settings, a resume with others is refused naming them; a run of 0.2.0, which did
    not record them, takes the resume's."""
    from probmut.errors import ProbmutError
    from probmut.io.workdir import read_settings, write_settings
    from probmut.train.run import run_populations

    from .test_rounds import SETTINGS, SyntheticBackend, SyntheticData

    def run(threads):
        backend = SyntheticBackend()
        backend.threads = threads
        return run_populations(SETTINGS, [], 2, tmp_path, backend, SyntheticData(),
                               name="threads", progress=False)

    run(2)
    assert read_settings(tmp_path)["threads"] == 2
    with pytest.raises(ProbmutError, match=r"holds a run with other settings: threads 2 "
                                           r"before, 1 now; use the same settings"):
        run(1)
    recorded = read_settings(tmp_path)
    del recorded["threads"]
    write_settings(tmp_path, recorded)  # as 0.2.0 wrote it
    assert run(1).resumed == 2 and read_settings(tmp_path)["threads"] == 1


def test_populations_too_small_for_the_default_k_are_said_as_the_run_starts(tmp_path):
    from probmut.train.run import run_populations

    from .test_rounds import SETTINGS, SyntheticBackend, SyntheticData

    with pytest.warns(UserWarning, match=r"^3 instances per population: fewer than the "
                      r"k = 20 per side .* give them --sample 3 or less, or train "
                      r"--instances 20 or more$"):
        run_populations(SETTINGS, [], 3, tmp_path, SyntheticBackend(), SyntheticData(),
                        name="small", progress=False, warn_small=True)
