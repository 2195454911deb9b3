"""The library's entry, probmut.train.train_populations: what `probmut train` does, the
same files and summary; and a driver that imports TensorFlow only where it needs it."""

import json
import subprocess
import sys

import pytest

from probmut.bagging import PosteriorSettings
from probmut.errors import ProbmutError
from probmut.train import train_populations
from probmut.train.options import (
    DataOptions,
    ExecutionOptions,
    Instances,
    Search,
    TrainingOptions,
    UntilScore,
    UntilSettled,
)

from .commands import REPO

pytestmark = pytest.mark.train
MUTATIONS = ["delete_training_data:50", "change_epochs:2"]


def _files(out):
    """Every file of a run that the analyses read, and the run's recorded settings."""
    names = [p.relative_to(out) for p in sorted(out.iterdir()) if p.is_file()]
    return {str(name): (out / name).read_bytes()
            for name in [*names, ".work/settings.json"]}


@pytest.mark.slow
def test_the_library_writes_what_the_command_writes(tmp_path, monkeypatch, cli):
    """The same call from Python (one job: its checks in this process) and from the
    command (two jobs: the checks that need Keras in a worker): the same files byte for
    byte (every population trains stacked here, so no wall-clock seconds are recorded),
    and the report prints the command's summary."""
    for side in ("library", "command"):
        (tmp_path / side).mkdir()
    monkeypatch.chdir(tmp_path / "command")
    argv = ["train", "--out", "run", "--instances", "2", "--epochs", "1", "--jobs", "2",
            "--format", "deepcrime", "--quiet"]
    printed = cli.ok(*argv, *(f"--mutation={m}" for m in MUTATIONS))
    monkeypatch.chdir(tmp_path / "library")
    report = train_populations("run", MUTATIONS, mode=Instances(count=2),
                               training=TrainingOptions(epochs=1), write_deepcrime_csv=True,
                               execution=ExecutionOptions(progress=False))
    library, command = _files(tmp_path / "library" / "run"), _files(tmp_path / "command" / "run")
    assert library.keys() == command.keys() and len(library) == 11
    assert [name for name in library if library[name] != command[name]] == []
    assert printed.splitlines()[1:] == str(report).splitlines()[1:]  # all but the seconds
    assert report.counts == {"healthy": 2, "delete_training_data_50": 2, "change_epochs_2": 2}
    assert report.to_frame().loc["change_epochs_2", "instances"] == 2


@pytest.mark.slow
def test_with_workers_the_driver_never_imports_tensorflow(tmp_path):
    """--jobs 2: the legality of a training-level mutation and the stack size are decided
    in a worker; the driver trains the run, and refuses an illegal mutation with the same
    one line as in one process, without importing TensorFlow (so in a fresh interpreter:
    this one has imported it)."""
    code = ("import sys; from probmut.cli.main import main\n"
            f"out = {str(tmp_path)!r}\n"
            "common = ['train', '--instances', '2', '--epochs', '1', '--jobs', '2', '--quiet']\n"
            "assert main([*common, '--mutation', 'change_epochs:2', '--out', out + '/a']) == 0\n"
            "assert main([*common, '--mutation', 'change_patience:2', '--out', out + '/b']) == 2\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'keras')))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert result.stderr.strip().splitlines()[-1] == (
        "probmut train: error: change_patience:2: the healthy model has no early stopping to "
        "change (train it with a patience N and a validation split) (--mutation)")
    assert json.loads((tmp_path / "a" / ".work" / "settings.json").read_text())["stack"] == 20


@pytest.mark.parametrize("argv", [
    ["--list-operators"],
    ["--dry-run", "--mutation", "delete_training_data:10", "--json"],
    ["--dry-run", "--mutation", "delete_training_data:120"],  # illegal: exit 2
    ["--mutation", "delete_training_data:100", "--out", "{out}"],  # refused on the data alone
    ["--jobs", "0", "--out", "{out}"],
])
def test_what_needs_no_keras_imports_no_tensorflow(tmp_path, argv):
    # A fresh interpreter, not the cli fixture: this one has imported TensorFlow.
    argv = [a.format(out=tmp_path / "run") for a in argv]
    code = ("import sys; from probmut.cli.main import main\n"
            f"code = main(['train', *{argv!r}])\n"
            "print(code, sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'keras')))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    code, imported = result.stdout.strip().splitlines()[-1].split(" ", 1)
    assert imported == "[]" and code == ("0" if "delete_training_data:10" in argv
                                         or "--list-operators" in argv else "2")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("options, says, option", [
    ({"mode": Instances(count=0)}, "instances must be at least 1, got 0", "instances"),
    ({"execution": ExecutionOptions(jobs=0)}, "jobs must be at least 1, got 0", "jobs"),
    ({"execution": ExecutionOptions(stack=2, timeout=10)},
     "a time limit applies to one instance at a time", "timeout"),
    ({"data": DataOptions(dataset="digits", data="x.npz")}, "either a named dataset or data",
     "data"),
    ({"data": DataOptions(dataset="x.npz")}, "unknown dataset 'x.npz'", "dataset"),
    ({"mode": Search(magnitudes="delete_training_data:0,99"), "mutations": ["DR"]},
     "a search trains its own magnitudes", "mutation"),
    ({"mode": UntilSettled()}, "training until settled needs at least one mutation",
     "until_settled"),
    ({"mode": UntilScore(width=1.5), "mutations": ["DR"]}, "must be in \\(0, 1\\)",
     "until_score"),
    ({"mode": UntilSettled(max_instances=10), "mutations": ["DR"]},
     "the sample size k = 20 is more than the maximum of 10", "sample"),
    ({"mode": 20}, "unknown training mode 20", "mode"),
    ({"mutations": ["delete_training_data:10,10"]}, "'10' is given 2 times", "mutation"),
])
def test_bad_arguments_are_refused_with_the_setting_at_fault(tmp_path, options, says, option):
    options = {"mutations": (), **options}
    with pytest.raises(ProbmutError, match=says) as refused:
        train_populations(tmp_path / "run", options.pop("mutations"),
                          execution=options.pop("execution", ExecutionOptions(progress=False)),
                          **options)
    assert refused.value.option == option
    assert "--" not in str(refused.value)  # the library never names a flag itself
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("mode", [UntilSettled, UntilScore])
def test_a_run_in_rounds_holds_its_lock_from_start_to_end(tmp_path, monkeypatch, mode):
    """A fresh run in rounds dropped its lock between rounds (while its verdicts were read),
    so a second identical command was admitted and the first then died (issue 57): the
    lock is held for the whole run, a new run's too."""
    import probmut.train.rounds
    import probmut.train.until_score
    from probmut.io.atomic import _HELD

    lock = str((tmp_path / "run" / ".work" / "lock").resolve())
    held = []
    for module, name in ((probmut.train.rounds, "train_until_settled"),
                         (probmut.train.until_score, "train_until_score")):
        monkeypatch.setattr(module, name, lambda *args, **kwargs: held.append(lock in _HELD))
    small = PosteriorSettings(sample=2)
    train_populations(tmp_path / "run", ["delete_training_data:50"],
                      mode=mode(round_size=2, max_instances=4, analysis=small),
                      execution=ExecutionOptions(stack=1, progress=False))
    assert held == [True]
