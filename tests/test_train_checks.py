"""Legality before training, equivalence and breakage flags after it: in the run summary
(text and JSON), the manifest, and ``probmut kill/posterior`` (``--exclude-flagged``)."""

import json
import tomllib

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train.flags import broken_instances, population_flags


def test_broken_instances_are_constant_or_at_chance():
    labels = np.repeat(np.arange(10), 45)
    rng = np.random.default_rng(0)
    good = rng.random((3, 450)) < 0.95
    constant = labels[None, :] == 3                         # predicts class 3 everywhere
    chance = np.array([np.arange(450) % 25 < 3,            # 0.12 < 0.1 + 3 x 0.0141
                       np.arange(450) % 50 < 5])           # 0.10
    above = (np.arange(450) % 4 == 0)[None, :]             # 0.25: clearly above chance
    correct = np.vstack([good, constant, chance, above])
    assert broken_instances(correct, labels, 0.1, "classification").tolist() == [
        False, False, False, True, True, True, False]
    # right on one class only, though above a chance level of 0.05 (0.1 > 0.05 + 0.031):
    # broken for a classifier; for continuous targets only the chance level counts
    assert broken_instances(constant, labels, 0.05, "classification").tolist() == [True]
    assert broken_instances(constant, labels, 0.05, "regression").tolist() == [False]


def test_population_flags_need_half_of_the_instances():
    labels = np.repeat([0, 1], 50)
    ok, constant = np.ones(100, bool), labels == 1
    assert population_flags(np.array([ok, ok, constant]), labels, 0.5, "classification").flags \
        == ()
    flags = population_flags(np.array([ok, constant]), labels, 0.5, "classification")
    assert flags.flags == ("broken",) and "1 of 2 instances" in flags.reasons[0]
    assert population_flags(np.array([ok]), labels, 0.5, "classification",
                            equivalent_instances=[True, False]).flags == ()
    assert population_flags(np.array([ok]), labels, 0.5, "classification",
                            equivalent_before="by design: x").flags == ("equivalent",)


# ------------------------------------------------------------ legality (Keras, no training)

@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.models import MODELS

    return MODELS["digits_cnn"], load_dataset("digits")


def _prepare(digits, text, data=None):
    from probmut.train.legality import prepare
    from probmut.train.operators import parse_mutations

    spec, dataset = digits
    return prepare(parse_mutations(text), spec, data or dataset, spec.config)


@pytest.mark.train
@pytest.mark.parametrize("text, message", [
    ("change_patience:2", "no early stopping to change"),  # DeepCrime changes an existing one
    ("change_earlystopping_patience:2", "no early stopping to change"),
    ("change_gradient_clipping", "the healthy optimizer does not clip gradients"),
    ("remove_validation_set", "needs a validation set"),
    ("make_output_classes_overlap:10@3-12", "class 12 is not a class of the data"),
    ("change_label:10@10", "class 10 is not a class"),
    ("remove_layer:3", "output shape equals its input shape"),  # the Flatten
    ("change_loss_function:ctc", "not a valid model"),
    ("change_activation_function:nosuch", "unknown Keras activation"),
])
def test_illegal_mutations_stop_before_training(digits, text, message):
    with pytest.raises(ProbmutError, match=message) as error:
        _prepare(digits, text)
    assert "\n" not in str(error.value)


@pytest.mark.train
@pytest.mark.parametrize("text, reason", [
    ("change_epochs:15", "the same settings and architecture"),       # digits_cnn's own
    ("change_activation_function:relu@0", "the same settings and architecture"),
    ("change_dropout_rate:0.25", "the same settings and architecture"),
    ("delete_training_data:0", "it leaves the training data unchanged"),
    ("change_label:0@3", "it leaves the training data unchanged"),
    ("add_noise:0.01", "it leaves the training data unchanged"),  # int(1347 x 0.0001) = 0
    ("data_shuffle:50", "by design: Keras reshuffles"),
    ("change_epochs:3", ""),
    ("change_activation_function:elu@0", ""),
    ("delete_training_data:1", ""),
])
def test_equivalence_known_before_training(digits, text, reason):
    assert _prepare(digits, text)[0].equivalent.startswith(reason)


@pytest.mark.train
def test_validation_operators_change_the_healthy_early_stopping(digits):
    """change_patience needs the healthy model's early stopping; remove_validation_set
    without early stopping changes nothing training uses (its validation data is only
    evaluated)."""
    from probmut.train.datasets import load_dataset
    from probmut.train.legality import prepare
    from probmut.train.operators import parse_mutations

    spec, _ = digits
    data = load_dataset("digits", validation_split=0.1)
    stopping = spec.config.replace(patience=3)
    assert [m.equivalent for m in prepare(parse_mutations("change_patience:2,3"), spec, data,
                                          stopping)] == [
        "", "the same settings and architecture as the healthy model"]
    assert prepare(parse_mutations("remove_validation_set"), spec, data,
                   stopping)[0].equivalent == ""
    assert prepare(parse_mutations("remove_validation_set"), spec, data,
                   spec.config)[0].equivalent == (
        "without early stopping the validation data never changes training")


# ------------------------------------------------------------ after training (a real run)

@pytest.fixture(scope="module")
def flagged_run(tmp_path_factory):
    """digits_cnn, 3 instances of 1 epoch: a healthy population, an unchanged setting
    (change_epochs:1 = the run's epochs), weights fuzzed at ratio 0 (weights unchanged),
    all 64 dense units frozen (constant predictions) and a real mutant."""
    pytest.importorskip("tensorflow")
    from probmut.cli.main import main

    out = tmp_path_factory.mktemp("flags") / "flags"
    args = ["train", "--instances", "3", "--epochs", "1", "--out", str(out), "--quiet",
            "--mutation", "change_epochs:1", "--mutation", "weights_fuzzing:0_1",
            "--mutation", "neurons_freezing:1@4", "--mutation", "delete_training_data:50",
            "--json"]
    return out, main, args


@pytest.mark.train
@pytest.mark.slow
def test_flags_in_summary_manifest_and_analysis(flagged_run, capsys):
    out, main, args = flagged_run
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    flags = {p["name"]: p["flags"] for p in summary["populations"]}
    assert flags == {"healthy": [], "change_epochs_1": ["equivalent"],
                     "weights_fuzzing_0_1": ["equivalent"],
                     "neurons_freezing_1@4": ["broken"], "delete_training_data_50": []}
    reasons = {p["name"]: p["reasons"] for p in summary["populations"]}
    assert reasons["weights_fuzzing_0_1"] == [
        "all 3 instances predict what their healthy instances predict"]
    assert reasons["neurons_freezing_1@4"][0].startswith("3 of 3 instances predict one class")

    manifest = tomllib.loads((out / "manifest.toml").read_text())["models"]["flags"]
    assert manifest["mutations"]["neurons_freezing"]["flags"] == {"1@4": ["broken"]}
    assert manifest["mutations"]["change_epochs"]["flags"] == {"1": ["equivalent"]}
    assert manifest["mutations"]["delete_training_data"]["flags"] == {"50": []}

    by_name = ["--manifest", str(out / "manifest.toml"), "--model", "flags", "--mutation"]
    assert main(["kill", *by_name, "neurons_freezing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flags"] == ["broken"]
    assert main(["kill", *by_name, "weights_fuzzing"]) == 0
    assert capsys.readouterr().out.strip().endswith(
        "flags (probmut train's checks, from the manifest): 0_1: equivalent")
    assert main(["posterior", *by_name, "delete_training_data", "--no-plot", "--json",
                 "--bootstraps", "5", "--trials", "5", "--sample", "2"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [p.get("flags") for p in document["populations"]] == [None, []]
    assert main(["kill", *by_name, "change_epochs", "--exclude-flagged"]) == 2
    err = capsys.readouterr().err
    assert "excluded flagged populations: 1 (equivalent)" in err
    assert "--exclude-flagged left no mutant population" in err


@pytest.mark.train
def test_list_operators_json(capsys):
    from probmut.cli.main import main
    from probmut.train.operators import OPERATORS

    assert main(["train", "--list-operators", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(OPERATORS)
    assert set(rows[0]) >= {"name", "aliases", "level", "magnitude", "default_target", "source"}
    neb = next(r for r in rows if r["name"] == "neuron_effect_blocking")
    assert neb["aliases"] == ["NEB"] and neb["level"] == "model"
    assert neb["source"] == "DeepMutation"
    assert neb["default_target"].startswith("the whole network: every layer whose neurons")
    clip = next(r for r in rows if r["name"] == "change_gradient_clipping")
    assert clip["aliases"] == ["change_gradient_clip"] and clip["default"] == "0.5"
