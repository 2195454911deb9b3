"""A user's training function (probmut.train.function_trainer, `train --trainer
MODULE:FUNCTION`): every mode and backend of a run, resumable, with what the function
read recorded; and TensorFlow never imported. The functions (scikit-learn's MLP on the
digits, a tenth of a second an instance): tests/train/user_trainers.py."""

import json
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from probmut.bagging import PosteriorSettings
from probmut.errors import ProbmutError
from probmut.io.populations import read_instances
from probmut.io.workdir import read_record
from probmut.train import train_populations
from probmut.train.options import (
    ExecutionOptions,
    Instances,
    Search,
    TrainingOptions,
    UntilScore,
    UntilSettled,
)
from probmut.train.work import instance_seed

from .commands import REPO, env, kill_interrupt_resume
from .test_run import assert_same_but_seconds

pytest.importorskip("sklearn")
MLP = "tests.train.user_trainers:mlp"
#: Set for a run: its processes refuse to train where TensorFlow is imported (user_trainers).
NO_TENSORFLOW = "PROBMUT_TEST_NO_TENSORFLOW"
MUTATIONS = ["delete_training_data:50", "change_learning_rate:0.05", "change_epochs:2"]
QUIET = ExecutionOptions(progress=False)
SMALL = PosteriorSettings(sample=3, bootstraps=20, trials=20)


def _train(out, mutations=MUTATIONS, trainer=MLP, mode=None, execution=QUIET, **options):
    return train_populations(out, mutations, trainer=trainer,
                             mode=mode or Instances(count=3), execution=execution,
                             training=TrainingOptions(epochs=6), **options)


def _files(out):
    return sorted(p.name for p in out.iterdir() if p.is_file())


@pytest.fixture(scope="module")
def run(tmp_path_factory, ):
    """One run of every kind of mutation a function takes, in this process."""
    out = tmp_path_factory.mktemp("function") / "run"
    return out, _train(out)


def test_a_function_trains_each_instance_with_its_seed_and_its_settings(run):
    out, report = run
    assert report.counts == {"healthy": 3, "delete_training_data_50": 3,
                             "change_learning_rate_0.05": 3, "change_epochs_2": 3}
    assert not report.failures and all(not f.flags for f in report.flags.values())
    for stem in report.counts:
        records = read_instances(out / f"{stem}.csv")
        assert [r.seed for r in records] == [instance_seed(42, i, stem) for i in range(3)]
        assert all(0.5 < r.accuracy <= 1 and r.loss_history for r in records)
    # what the function read, recorded per instance: the epochs given, the rate mutated
    assert read_record(out, "change_learning_rate_0.05", 0).read == (
        "batch_size", "epochs", "learning_rate")
    assert [len(r.loss_history) for r in read_instances(out / "change_epochs_2.csv")] == [2] * 3
    settings = json.loads((out / ".work" / "settings.json").read_text())
    assert (settings["trainer"], settings["code"], settings["architecture"]) == (
        "function", MLP, None)
    assert settings["config"]["epochs"] == 6 and settings["config"]["optimizer"] is None
    manifest = tomllib.loads((out / "manifest.toml").read_text())["models"]["run"]
    assert manifest["description"] == (f"training function {MLP} on digits, 3 instances, "
                                       "6 epochs, seed 42 (probmut train)")


def test_the_same_run_in_worker_processes_gives_the_same_files_without_tensorflow(run,
                                                                                  tmp_path):
    """--jobs 2 through the command, in a fresh interpreter (this one has imported
    TensorFlow): the files of the run in this process, and neither the driver nor a
    worker (the function refuses to train where it is) imported TensorFlow."""
    out, _ = run
    code = ("import sys; from probmut.cli.main import main\n"
            f"argv = ['train', '--trainer', {MLP!r}, '--instances', '3', '--epochs', '6', "
            f"'--jobs', '2', '--quiet', '--out', {str(tmp_path / 'run')!r}]\n"
            f"argv += [w for m in {MUTATIONS!r} for w in ('--mutation', m)]\n"
            "assert main(argv) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'keras')))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO,
                            env=env() | {NO_TENSORFLOW: "1"}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert _files(tmp_path / "run") == _files(out)
    for name in _files(out):
        if name != "manifest.toml":  # the model's name is the folder's: the same here
            assert_same_but_seconds(out / name, tmp_path / "run" / name)


def test_an_unread_hyperparameter_is_flagged_not_applied_once_per_population(tmp_path):
    with pytest.warns(UserWarning, match="change_learning_rate_0.05: the training code never "
                                         "read learning_rate: flagged not applied") as said:
        report = _train(tmp_path / "run", trainer="tests.train.user_trainers:"
                                                  "ignores_learning_rate",
                        mode=Instances(count=2))
    assert len([w for w in said if "never read" in str(w.message)]) == 1
    flags = report.flags["change_learning_rate_0.05"]
    assert flags.flags == ("not applied",)
    assert flags.reasons == ("the training code never read learning_rate (2 of 2 instances)",)
    assert not report.flags["change_epochs_2"].flags  # read: applied
    assert not report.flags["delete_training_data_50"].flags  # probmut's own data mutation
    assert "[not applied: the training code never read learning_rate" in str(report)
    manifest = tomllib.loads((tmp_path / "run" / "manifest.toml").read_text())
    mutations = manifest["models"]["run"]["mutations"]
    assert mutations["change_learning_rate"]["flags"] == {"0.05": ["not applied"]}
    # the report reads its flags from the manifest, and its next step trains with the
    # function again
    from probmut.campaign import summarize_campaign

    campaign = summarize_campaign(tmp_path / "run" / "manifest.toml", settings=SMALL,
                                  verdicts=False)
    flagged = {m.name: m.flags for m in campaign.mutants if m.flags}
    assert flagged == {"change_learning_rate_0.05": ("not applied",)}
    command = campaign.next_steps().command
    assert "--trainer tests.train.user_trainers:ignores_learning_rate" in command
    assert "--architecture" not in command and "--epochs 6" in command


def test_a_failing_instance_is_recorded_and_the_run_goes_on(tmp_path, capsys):
    report = _train(tmp_path / "run", [], trainer="tests.train.user_trainers:troubled",
                    mode=Instances(count=4), execution=ExecutionOptions(progress=False))
    records = read_instances(tmp_path / "run" / "healthy.csv")
    assert [r.status for r in records] == ["ok", "crashed", "crashed", "ok"]
    assert records[1].error == "ValueError: no batch of None"
    assert records[2].error.startswith("ValueError: the training code returned dict "
                                       "{'acc': 0.9}, not a mapping with 'accuracy'")
    assert len(report.failures) == 2
    printed = capsys.readouterr()
    assert "training instance 3" in printed.err and "training instance 3" not in printed.out


@pytest.mark.parametrize("mutation, says", [
    ("change_activation_function:elu", "changes a layer of the model"),
    ("change_patience:2", "the healthy model has no early stopping to change"),
    ("delete_training_data:100", "the mutated training set holds no samples"),
])
def test_what_a_function_cannot_be_given_is_refused_before_training(tmp_path, mutation, says):
    with pytest.raises(ProbmutError, match=says):
        _train(tmp_path / "run", [mutation])
    assert not (tmp_path / "run" / ".work" / "healthy").exists()


@pytest.mark.parametrize("options, says, option", [
    ({"trainer": "tests.train.user_trainers:nosuch"}, "cannot import nosuch from "
                                                      "tests.train.user_trainers", "trainer"),
    ({"trainer": "nocolon"}, "give the training function as MODULE:FUNCTION", "trainer"),
    ({"trainer": lambda spec: {}}, "defined at the top level of a module", "trainer"),
    ({"trainer": "tests.train.user_trainers:_fit"}, r"it takes \(spec, learning_rate\); "
                                                     "probmut calls it with one argument",
     "trainer"),
    ({"architecture": "mlp"}, "the architecture is the network probmut's trainer builds",
     "architecture"),
    ({"command": "python x.py"}, "either a training function or a training command",
     "command"),
    ({"execution": ExecutionOptions(stack=4, progress=False)},
     "a training function trains one instance at a time", "stack"),
])
def test_a_bad_trainer_is_refused_in_one_line(tmp_path, options, says, option):
    with pytest.raises(ProbmutError, match=says) as refused:
        _train(tmp_path / "run", **{"trainer": MLP, **options})
    assert refused.value.option == option


def test_rounds_until_settled_and_until_score_train_a_function(tmp_path):
    settled = _train(tmp_path / "settled", ["delete_training_data:90"],
                     mode=UntilSettled(round_size=3, max_instances=9, analysis=SMALL))
    verdict = settled.final["delete_training_data_90"]
    assert verdict["verdict"] in ("killed", "not killed", "not settled")
    assert json.loads((tmp_path / "settled" / "rounds.json").read_text())["rounds"]
    score = _train(tmp_path / "score", ["delete_training_data:90", "change_epochs:1"],
                   mode=UntilScore(width=0.5, round_size=2, max_instances=8,
                                   analysis=PosteriorSettings(sample=2, bootstraps=20,
                                                              trials=20)))
    assert score.rounds and score.final["message"].startswith("mutation score")
    assert score.counts["healthy"] >= 8


def test_a_search_decides_with_the_runs_seed(tmp_path):
    report = _train(tmp_path / "search", [], mode=Search(magnitudes="change_epochs:6,1",
                                                         instances=4), seed=7)
    assert report.search.decision.endswith("seed 7")
    assert report.search.steps and report.counts["healthy"] == 4


def test_a_run_killed_or_interrupted_resumes_to_the_files_of_a_whole_run(tmp_path):
    """SIGKILL after two instances, Ctrl-C after two more, then the same command: the
    instances done are kept, and the files are those of a run never stopped."""
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "probmut", "train", "--trainer",
            "tests.train.user_trainers:slow_mlp", "--instances", "4", "--epochs", "6",
            "--mutation", "delete_training_data:50", "--out", str(out), "--quiet"]
    assert kill_interrupt_resume(argv, lambda: list((out / ".work").rglob("0*.npz"))) < 8
    whole = tmp_path / "whole"
    _train(whole, ["delete_training_data:50"], trainer="tests.train.user_trainers:slow_mlp",
           mode=Instances(count=4), name="run")
    assert _files(out) == _files(whole)
    for name in _files(whole):
        assert_same_but_seconds(whole / name, out / name)


@pytest.mark.slow
def test_the_ray_backend_trains_a_function_as_the_local_one(run, tmp_path):
    ray = pytest.importorskip("ray")
    out, _ = run
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        _train(tmp_path / "run", execution=ExecutionOptions(backend="ray", progress=False))
    finally:
        ray.shutdown()
    assert _files(tmp_path / "run") == _files(out)
    for name in _files(out):
        assert_same_but_seconds(out / name, tmp_path / "run" / name)


def test_the_spec_holds_the_data_a_keras_instance_trains_on(tmp_path):
    """The data-level mutation is the Keras trainer's, drawn with the instance's seed;
    the spec reads as a mapping of its names."""
    from probmut.train.datasets import load_dataset
    from probmut.train.hyperparameters import user_config
    from probmut.train.operators import parse_mutations
    from probmut.train.training_set import training_set
    from probmut.train.user_code import instance_spec
    from probmut.train.work import Assignment, RunSettings

    data = load_dataset("digits", validation_split=0.1)
    mutation = parse_mutations("delete_training_data:30")[0]
    settings = RunSettings("digits", None, user_config(epochs=3), trainer="function",
                           code=MLP)
    assignment = Assignment(settings, mutation.population, 2, mutation.operator.name,
                            mutation.params)
    spec = instance_spec(assignment, data, str(tmp_path))
    x, y = training_set(data, settings.config, mutation.operator, mutation.params,
                        assignment.seed)
    assert np.array_equal(spec.x_train, x) and np.array_equal(spec["y_train"], y)
    assert len(y) < len(data.y_train) and np.array_equal(spec.x_val, data.x_val)
    with pytest.raises(ValueError, match="read-only"):  # shared by a worker's instances
        spec.x_test[0] = 0
    assert dict(spec.mutation) == {"operator": "delete_training_data", "magnitude": "30",
                                   "parameters": mutation.params}
    assert set(spec) >= {"instance", "seed", "population", "mutation", "x_train", "y_train",
                         "x_test", "y_test", "hyperparameters"}
    assert dict(spec.hyperparameters) == {"epochs": 3, "validation": True,
                                          "full_batch": False}
    moved = parse_mutations("remove_validation_set")[0]
    spec = instance_spec(Assignment(settings, moved.population, 0, moved.operator.name,
                                    moved.params), data, str(tmp_path))
    assert spec.x_val is None and len(spec.y_train) == len(data.y_train) + len(data.y_val)


def test_the_documented_function_is_the_examples():
    """docs/training.md shows examples/digits_mlp.py's function, which its run trains."""
    documented = (REPO / "docs" / "training.md").read_text()
    listing = documented.split("```python\ndef train(spec):\n")[1].split("```")[0]
    assert "def train(spec):\n" + listing in (REPO / "examples" / "digits_mlp.py").read_text()


def test_saved_models_keep_the_suffix_of_the_functions_file(tmp_path, monkeypatch):
    """--save-models keeps each instance's model file (the function saved it as .pkl); a
    rerun finds them; a function that saves none fails its instances, in one line."""
    import pickle

    monkeypatch.chdir(REPO)  # examples/ is looked up in the current folder

    out = tmp_path / "run"
    report = _train(out, [], trainer="examples.digits_mlp:train", mode=Instances(count=2),
                    save_models=True)
    assert report.trained == 2 and not report.failures
    model = pickle.loads((out / "models" / "healthy" / "00001.pkl").read_bytes())
    assert type(model).__name__ == "MLPClassifier"
    assert _train(out, [], trainer="examples.digits_mlp:train", mode=Instances(count=2),
                  save_models=True).trained == 0
    unsaved = _train(tmp_path / "unsaved", [], mode=Instances(count=1), save_models=True)
    assert unsaved.failures == ["healthy instance 0: crashed: ValueError: save_models keeps "
                                "each instance's model, but the result has no model_path"]
