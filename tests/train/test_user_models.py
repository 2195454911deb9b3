"""A user's model code (``--architecture module:function``) as a hostile user writes it:
a Sequential without ``keras.Input``, a model function that prints, one that calls
``sys.exit()``, one that builds slowly under ``--timeout``; each is a failure of that
code or a plain run, never a traceback or a silent exit."""

import json
import re
import textwrap

import pytest

pytestmark = pytest.mark.train

MODULE = '''
import sys

calls = []


def unbuilt(input_shape, n_classes):
    """A Sequential without keras.Input (built when first called), that prints."""
    import keras
    from keras import layers

    print("building the user's model")
    return keras.Sequential([layers.Conv2D(2, 3, activation="relu"), layers.Flatten(),
                             layers.Dense(n_classes, activation="softmax")])


def exiting(input_shape, n_classes):
    """Builds once (probmut's check before training), then calls sys.exit(0)."""
    calls.append(1)
    if len(calls) > 1:
        sys.exit(0)
    return unbuilt(input_shape, n_classes)


def always_exiting(input_shape, n_classes):
    sys.exit(3)
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of user model functions, importable under a name of this test's own."""
    name = f"user_models_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_an_unbuilt_sequential_that_prints_trains_and_json_stays_json(tmp_path, cli,
                                                                      user_module):
    """A Sequential without keras.Input ended in a traceback in the stack size's
    estimate (step_flops: its layers have no output yet): built on the data's shape, as
    fit would. What the user's code prints goes to stderr, so --json is one document.
    One instance per population is said to be too few for the analyses' default k."""
    pytest.importorskip("tensorflow")
    ran = cli("train", "--architecture", f"{user_module}:unbuilt", "--instances", 1,
              "--epochs", 1, "--quiet", "--json", "--out", tmp_path / "run")
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["trained"] == 1
    assert "building the user's model" in ran.err
    assert ("probmut: warning: 1 instance per population: fewer than the k = 20 per side "
            "that the kill analyses (report, posterior, recommend, ...) sample by default, so "
            "they would analyse nothing; k is at least 2: train --instances 20 or more\n"
            ) in ran.err


def test_a_user_model_calling_sys_exit_is_a_crashed_instance_not_the_end(tmp_path, cli,
                                                                         user_module):
    """sys.exit(0) in the model function made train exit 0 with nothing written: each
    instance it ends is recorded as crashed with the reason, the run goes on and exits 1;
    a function that exits at once is refused before training, in one line."""
    pytest.importorskip("tensorflow")
    from probmut.io.populations import read_instances

    ran = cli("train", "--architecture", f"{user_module}:exiting", "--instances", 2,
              "--epochs", 1, "--stack", 1, "--quiet", "--out", tmp_path / "run")
    assert ran.code == 1, ran.err
    records = read_instances(tmp_path / "run" / "healthy.csv")
    assert [r.status for r in records] == ["crashed", "crashed"]
    assert all(f"{user_module}:exiting called sys.exit(0)" in r.error for r in records)
    assert "2 instances failed (recorded" in ran.err
    cli.refused("train", "--architecture", f"{user_module}:always_exiting", "--instances", 2,
                "--out", tmp_path / "never",
                says=f"always_exiting((8, 8, 1), 10) failed (UserCodeExit: {user_module}:"
                     "always_exiting called sys.exit(3))")


def test_the_checks_before_training_have_no_time_limit():
    """The checks that build the model (the preflight) are no instance: under --timeout a
    user's model that builds slowly ended in an InstanceTimeout traceback there; now
    only the instances are timed (and recorded as timed out)."""
    from probmut.train.trainer import _on

    class Runner:
        def map_unordered(self, fn, calls, limited=True):
            self.limited = limited
            yield 0, fn(*calls[0])

    runner = Runner()
    assert _on(runner)(str.upper, "checked") == "CHECKED"  # the trainer's check's call
    assert runner.limited is False


@pytest.mark.parametrize("patience, split, says", [
    (-1, 0.1, "the patience is a number of epochs without improvement, 0 or more, got -1"),
    (3, None, "early stopping watches the validation loss: give a validation split "
              "(--validation-split SHARE) with the patience"),
])
def test_a_patience_that_cannot_apply_says_why(tmp_path, patience, split, says):
    from probmut.errors import ProbmutError
    from probmut.train import train_populations
    from probmut.train.options import DataOptions, TrainingOptions

    with pytest.raises(ProbmutError, match=f"^{re.escape(says)}"):
        train_populations(tmp_path, training=TrainingOptions(patience=patience),
                          data=DataOptions(validation_split=split))
