"""A user's training program (probmut.train.command_trainer, `train --command`): one
process per instance, its spec in $PROBMUT_SPEC, its result in $PROBMUT_RESULT; a
program that crashes, hangs, writes garbage or nothing fails its instance only; what
it read is what its result says. The program: tests/train/user_program.py."""

import json
import shlex
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.io.populations import read_instances
from probmut.train import train_populations
from probmut.train.options import ExecutionOptions, Instances, TrainingOptions

from ..conftest import interruptible
from .commands import REPO, env

PROGRAM = f"{sys.executable} tests/train/user_program.py"


def _train(out, command, mutations=(), count=2, **execution):
    return train_populations(out, list(mutations), command=command, mode=Instances(count=count),
                             training=TrainingOptions(learning_rate=1.0),
                             execution=ExecutionOptions(progress=False, **execution))


def test_a_program_that_crashes_hangs_or_writes_garbage_fails_its_instance_only(tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(REPO)
    report = _train(tmp_path / "run", f"{PROGRAM} --misbehave", count=6, timeout=3)
    records = read_instances(tmp_path / "run" / "healthy.csv")
    assert [r.status for r in records] == ["ok", "crashed", "timed out", "crashed", "crashed",
                                           "ok"]
    assert records[1].error == ("exit code 3; stderr ends: Traceback (most recent call last): "
                                "/ MemoryError: boom")
    assert records[2].error == "stopped after 3 s (--timeout)"
    assert records[3].error.startswith("its result is not JSON (Expecting value: line 1 "
                                       "column 1 (char 0)): 'accuracy: high'")
    assert records[4].error == "it wrote no result to $PROBMUT_RESULT"
    assert 0.5 < records[0].accuracy < 1 and records[5].accuracy > 0.5
    assert len(report.failures) == 4 and report.counts == {"healthy": 6}


@pytest.mark.parametrize("flag, flags", [("", ()), (" --no-read", ("unverified",))])
def test_what_a_program_read_is_what_its_result_says(tmp_path, monkeypatch, flag, flags):
    """A program that lists the hyperparameters it read: its training-level mutants are
    mutants; one that does not: they are flagged unverified, never silently counted."""
    monkeypatch.chdir(REPO)
    mutations = ["change_learning_rate:0.5", "delete_training_data:50"]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        report = _train(tmp_path / "run", PROGRAM + flag, mutations)
    assert [str(w.message) for w in said if "flagged" in str(w.message)] == [
        "change_learning_rate_0.5: the training program did not say which hyperparameters it "
        "read: flagged unverified (its verdicts and the mutation score leave it out)"] * len(flags)
    assert report.flags["change_learning_rate_0.5"].flags == flags
    assert report.flags["delete_training_data_50"].flags == ()  # probmut's own mutation
    healthy, mutant = (np.array([r.accuracy for r in read_instances(tmp_path / "run" / name)])
                       for name in ("healthy.csv", "change_learning_rate_0.5.csv"))
    assert not np.array_equal(healthy, mutant)  # the rate reached the program
    settings = json.loads((tmp_path / "run" / ".work" / "settings.json").read_text())
    assert (settings["trainer"], settings["code"]) == ("command", PROGRAM + flag)
    # the report's next step trains on with the same program
    from probmut.bagging import PosteriorSettings
    from probmut.campaign import summarize_campaign

    campaign = summarize_campaign(tmp_path / "run" / "manifest.toml", verdicts=False,
                                  settings=PosteriorSettings(sample=3, bootstraps=20, trials=20))
    assert {m.name: m.flags for m in campaign.mutants} == {
        "change_learning_rate_0.5": flags, "delete_training_data_50": ()}
    command = shlex.split(campaign.next_steps().command)
    assert command[command.index("--command") + 1] == PROGRAM + flag


def test_the_spec_file_holds_the_functions_keys_and_the_data(tmp_path):
    from probmut.train.command_trainer import _write_spec
    from probmut.train.datasets import load_dataset
    from probmut.train.hyperparameters import user_config
    from probmut.train.operators import parse_mutations
    from probmut.train.training_set import training_set
    from probmut.train.work import Assignment, RunSettings

    data = load_dataset("digits")
    mutation = parse_mutations("change_label:20")[0]
    settings = RunSettings("digits", None, user_config(epochs=4), trainer="command",
                           code="x")
    assignment = Assignment(settings, mutation.population, 1, mutation.operator.name,
                            mutation.params)
    spec_path, result_path = _write_spec(assignment, data, tmp_path)
    spec = json.loads(spec_path.read_text())
    assert spec == {"instance": 1, "seed": assignment.seed, "population": "change_label_20",
                    "mutation": {"operator": "change_label", "magnitude": "20",
                                 "parameters": json.loads(json.dumps(mutation.params))},
                    "hyperparameters": {"epochs": 4, "validation": True, "full_batch": False},
                    "n_classes": 10, "save_model": False, "folder": str(tmp_path),
                    "data": str(tmp_path / "data.npz")}
    x, y = training_set(data, settings.config, mutation.operator, mutation.params,
                        assignment.seed)
    with np.load(spec["data"]) as arrays:
        assert sorted(arrays.files) == ["x_test", "x_train", "y_test", "y_train"]
        assert np.array_equal(arrays["x_train"], x) and np.array_equal(arrays["y_train"], y)
    assert result_path == tmp_path / "result.json" and not result_path.exists()


@pytest.mark.parametrize("command, says", [
    ("", "the training command is empty"),
    ("python 'unclosed", "No closing quotation"),
])
def test_a_command_that_cannot_run_is_refused(tmp_path, command, says):
    with pytest.raises(ProbmutError, match=says) as refused:
        _train(tmp_path / "run", command)
    assert refused.value.option == "command"


def test_an_interrupted_run_stops_its_program_and_resumes(tmp_path):
    """Ctrl-C while a program trains: the run stops, the program with it (its process
    group killed, no orphan left), and the same command finishes the run."""
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "probmut", "train", "--command",
            f"{PROGRAM} --slow {tmp_path / 'pids'}", "--instances", "3", "--out", str(out),
            "--learning-rate", "1", "--quiet"]
    process = subprocess.Popen(argv, cwd=REPO, env=env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    records = out / ".work" / "healthy"
    deadline = time.monotonic() + 300
    while len(list(records.glob("*.npz"))) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the second program started
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "completed work is kept" in stderr, stderr
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    for pid in pids:
        assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0
    resumed = subprocess.run(argv, cwd=REPO, env=env(), capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert [r.status for r in read_instances(out / "healthy.csv")] == ["ok"] * 3
