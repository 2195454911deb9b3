"""Legality before training, equivalence and breakage flags after it: in the run summary
(text and JSON), the manifest, and ``probmut kill/posterior`` (``--exclude-flagged``)."""

import json
import tomllib

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train.flags import (
    DIFFERENT,
    SAME_PREDICTIONS,
    SAME_TEST_PREDICTIONS,
    SAME_WEIGHTS,
    broken_instances,
    data_equivalence,
    error_rates,
    population_flags,
    quality_control,
)


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
                            equivalent_before="by design: x").flags == ("equivalent",)


@pytest.mark.parametrize("matches, flags, survivor", [
    ([SAME_WEIGHTS] * 3, ("equivalent",), ""),
    ([SAME_WEIGHTS, SAME_WEIGHTS, None], ("equivalent",), ""),          # None: not derived
    # changed weights, the same predictions on every input at hand: not provably the
    # same mutant (issue 42: GF:0.001_sd0.001 was flagged equivalent)
    ([SAME_PREDICTIONS] * 3, (), "and on the 400 training inputs too, though 3 have other "
                                 "weights"),
    ([SAME_WEIGHTS, SAME_PREDICTIONS, None], (), "though 1 has other weights"),
    ([SAME_WEIGHTS, SAME_TEST_PREDICTIONS, SAME_PREDICTIONS], (),
     "but 1 predicts otherwise on some of the 400 training inputs"),
    ([SAME_TEST_PREDICTIONS] * 3, (), "but 3 predict otherwise on some of the 400 training"),
    ([SAME_TEST_PREDICTIONS, DIFFERENT, SAME_WEIGHTS], (), ""),
    ([None, None], (), ""),                                              # source level
])
def test_equivalent_means_the_same_weights(matches, flags, survivor):
    """Equivalent: every instance kept its healthy instance's weights. The same
    predictions on the test inputs (and on the training inputs too) with other weights
    make a survivor, never a flag."""
    labels = np.repeat([0, 1], 50)
    found = population_flags(np.ones((len(matches), 100), bool), labels, 0.5, "classification",
                             matches=matches, training_inputs=400)
    assert found.flags == flags and bool(found.survivor) == bool(survivor)
    if survivor:
        assert found.survivor.startswith(f"all {sum(m is not None for m in matches)} instances "
                                         "predict on the 100 test inputs")
        assert survivor in found.survivor
        assert found.items()[-1][0] == "survivor"


def test_data_equivalence_is_found_by_applying_the_operator():
    """data_shuffle only reorders the samples with their labels: equivalent, because
    training draws a new order every epoch; a permutation of the inputs alone, or of
    one input of several, is not."""
    from probmut.train.operators import parse_mutations

    rng = np.random.default_rng(0)
    x, y = rng.random((200, 8, 8, 1)).astype(np.float32), rng.integers(0, 10, 200)
    shuffle = parse_mutations("data_shuffle:30")[0]
    shuffled = shuffle.operator.apply(x, y, 10, shuffle.params, np.random.default_rng(1),
                                      "classification")
    assert not np.array_equal(shuffled[0], x)
    assert data_equivalence(*shuffled, x, y).startswith("it only reorders the training samples")
    assert data_equivalence(x, y, x, y) == "it leaves the training data unchanged"
    assert data_equivalence(shuffled[0], y, x, y) == ""      # the labels stay behind
    two = (x, rng.random((200, 3)))
    order = rng.permutation(200)
    assert data_equivalence((two[0][order], two[1][order]), y[order], two, y) != ""
    assert data_equivalence((two[0][order], two[1]), y[order], two, y) == ""
    noisy = x.copy()
    noisy[:20] += np.float32(0.1)
    assert data_equivalence(noisy, y, x, y) == ""


def test_error_rates_on_the_passed_tests_and_the_quality_control():
    """The error rate of a mutant instance is the share of its original's passed tests it
    fails; unpaired, the mean over every healthy instance as the original. Checked
    against a plain loop; the quality control removes on the mean rate."""
    rng = np.random.default_rng(7)
    healthy, mutant = rng.random((5, 300)) < 0.9, rng.random((4, 300)) < 0.7
    loop = [np.mean([np.sum(h & ~m) / np.sum(h) for h in healthy]) for m in mutant]
    assert np.allclose(error_rates(healthy, mutant, paired=False), loop)
    paired = error_rates(healthy[:4], mutant, paired=True)
    assert np.allclose(paired, [np.sum(h & ~m) / np.sum(h)
                                for h, m in zip(healthy[:4], mutant, strict=True)])
    rates = error_rates(healthy, mutant, paired=False)
    assert quality_control(rates, rates.mean() - 1e-9).startswith(
        f"mean error rate {rates.mean():.3f} on the passed tests (4 instances)")
    assert quality_control(rates, rates.mean()) == ""
    assert quality_control(np.empty(0), 0.0) == ""


@pytest.fixture
def checked_run(tmp_path):
    """A run directory written as probmut train writes it, without training: a healthy
    population, a model-level survivor (its test accuracies are the healthy ones), a
    model-level mutant flagged equivalent, and a source-level mutant that gets a third
    of what the healthy instances get right wrong."""
    from probmut.io.manifest import add_to_manifest
    from probmut.io.records import InstanceRecord
    from probmut.train.run import write_population

    rng = np.random.default_rng(11)
    labels = np.repeat(np.arange(4), 50)
    healthy = rng.random((6, 200)) < 0.9
    populations = {"healthy": healthy, "weights_fuzzing_0.01_1": healthy,
                   "weights_fuzzing_0_1": healthy,
                   "delete_training_data_50": healthy & (rng.random((6, 200)) < 0.66)}
    for stem, correct in populations.items():
        records = [InstanceRecord(i, float(row.mean()), seed=i) for i, row in enumerate(correct)]
        write_population(tmp_path / f"{stem}.csv", records, list(correct), labels)
    survivor = "all 6 instances predict on the 200 test inputs what ..."
    add_to_manifest(tmp_path / "manifest.toml", "m", "healthy.csv", "a run", [
        ("weights_fuzzing", "0.01_1", True, [], survivor),
        ("weights_fuzzing", "0_1", True, ["equivalent"], ""),
        ("delete_training_data", "50", False, [], "")])
    return tmp_path


def test_exclude_flagged_never_drops_a_survivor(checked_run, cli):
    by_name = ["--manifest", checked_run / "manifest.toml", "--model", "m", "--mutation",
               "weights_fuzzing"]
    excluded = cli.run("kill", *by_name, "--exclude-flagged", "--json")
    document = json.loads(excluded.out)
    assert document["flags"] == [] and document["survivor"].startswith("all 6 instances")
    assert document["killed"] is False  # the test set cannot tell it apart
    assert "excluded flagged populations: 0_1 (equivalent)" in excluded.err
    assert cli.ok("kill", *by_name).strip().splitlines()[-2:] == [
        "flags (probmut train's checks, from the manifest): 0_1: equivalent",
        "survivors (every instance predicts on the test set what its healthy instance "
        "predicts; never excluded): 0.01_1"]


def test_the_quality_control_removes_a_population_from_the_manifest(checked_run, cli):
    from probmut.io.manifest import Manifest, add_to_manifest
    from probmut.train.operators import parse_mutations
    from probmut.train.quality import removed_by_quality_control

    mutations = parse_mutations("delete_training_data:50") + parse_mutations(
        "weights_fuzzing:0.01_1,0_1")
    counts = dict.fromkeys(["healthy", *(m.population for m in mutations)], 6)
    removed = removed_by_quality_control(checked_run, mutations, 0.2, counts)
    assert list(removed) == ["delete_training_data_50"]
    assert removed["delete_training_data_50"].startswith("mean error rate 0.3")
    assert removed_by_quality_control(checked_run, mutations, 0.4, counts) == {}
    add_to_manifest(checked_run / "manifest.toml", "m", "healthy.csv", "a run",
                    [("delete_training_data", "50", False, [], "",
                      removed["delete_training_data_50"])])
    mutation = Manifest.load(checked_run / "manifest.toml").mutation("m", "delete_training_data")
    assert mutation.magnitudes == () and "50" in mutation.removed
    by_name = ["--manifest", checked_run / "manifest.toml", "--model", "m"]
    cli.refused("kill", *by_name, "--mutation", "delete_training_data",
                says="every magnitude was removed by probmut train's quality control: 50: "
                     "mean error rate 0.3")
    cli.refused("kill", *by_name, "--mutation", "delete_training_data", "--magnitudes", "50",
                says="delete_training_data 50: removed by probmut train's quality control")
    document = cli.json("symptoms", "--manifest", checked_run / "manifest.toml", "--no-plot")
    names = [p["name"] for p in document["results"]]
    assert names == ["weights_fuzzing_0.01_1", "weights_fuzzing_0_1"]


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
    ("data_shuffle:50", "it only reorders the training samples"),
    ("change_epochs:3", ""),
    ("change_activation_function:elu@0", ""),
    ("delete_training_data:1", ""),
])
def test_equivalence_known_before_training(digits, text, reason):
    assert _prepare(digits, text)[0].equivalent.startswith(reason)


@pytest.mark.train
def test_validation_operators_change_the_healthy_early_stopping(digits):
    """change_patience needs the healthy model's early stopping; remove_validation_set
    trains on the validation data too, so it is never equivalent (issue 42: it was,
    without early stopping)."""
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
                   spec.config)[0].equivalent == ""


@pytest.mark.train
@pytest.mark.parametrize("in_place", [True, False])
def test_a_mutant_the_test_set_cannot_tell_apart_is_not_equivalent(in_place):
    """A two-class linear model (the class is the larger input): its test inputs lie far
    from the boundary, one training input near it. Shifting a bias by 0.05 flips the
    near one only: the same on the test inputs, not on the training inputs; by 0.001,
    the same everywhere; by 2, different on the test inputs too."""
    pytest.importorskip("tensorflow")
    from types import SimpleNamespace

    import keras

    from probmut.train.instance import _mutate_paired

    def healthy():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
        model.set_weights([np.eye(2, dtype=np.float32), np.zeros(2, np.float32)])
        return model

    def shift(by):
        def apply(model, params, rng):
            mutant = model if in_place else keras.models.clone_model(model)
            mutant.set_weights([model.get_weights()[0], np.array([0, by], np.float32)])
            return mutant
        return SimpleNamespace(apply=apply)

    data = SimpleNamespace(task="classification",
                           x_test=np.array([[1, 0], [0, 1], [2, 0.5]], np.float32),
                           x_train=np.array([[1, 0], [0.51, 0.49], [0, 3]], np.float32))
    for by, match in ((0.0, SAME_WEIGHTS if in_place else SAME_PREDICTIONS),
                      (0.001, SAME_PREDICTIONS), (0.05, SAME_TEST_PREDICTIONS),
                      (2.0, DIFFERENT)):
        mutant, outputs, found = _mutate_paired(healthy(), shift(by), {}, None, data)
        assert found == match, by
        assert mutant.get_weights()[1][1] == np.float32(by)  # the mutant keeps its change
        assert np.allclose(outputs, data.x_test + [0, by])


@pytest.mark.train
@pytest.mark.parametrize("argv, says", [
    (["--max-error-rate", "1.5"], "must be a finite number in [0, 1), got 1.5"),
    (["--max-error-rate", "0.2", "--until-settled", "--mutation", "change_label"],
     "the quality control applies to a run of a number of instances, not to a search or "
     "training until settled"),
])
def test_bad_max_error_rates_are_refused(argv, says, tmp_path, cli):
    pytest.importorskip("tensorflow")
    cli.refused("train", "--out", tmp_path / "x", *argv, says=says)
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------ after training (a real run)

@pytest.fixture(scope="module")
def flagged_run(tmp_path_factory):
    """digits_cnn, 3 instances of 1 epoch: a healthy population, an unchanged setting
    (change_epochs:1 = the run's epochs), weights fuzzed at ratio 0 (weights unchanged),
    all 64 dense units frozen (constant predictions) and a real mutant."""
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("flags") / "flags"
    args = ["train", "--instances", "3", "--epochs", "1", "--out", out, "--quiet",
            "--mutation", "change_epochs:1", "--mutation", "weights_fuzzing:0_1",
            "--mutation", "neurons_freezing:1@4", "--mutation", "delete_training_data:50"]
    return out, args


@pytest.mark.train
@pytest.mark.slow
def test_flags_in_summary_manifest_and_analysis(flagged_run, cli):
    out, args = flagged_run
    summary = cli.json(*args)
    flags = {p["name"]: p["flags"] for p in summary["results"]}
    assert flags == {"healthy": [], "change_epochs_1": ["equivalent"],
                     "weights_fuzzing_0_1": ["equivalent"],
                     "neurons_freezing_1@4": ["broken"], "delete_training_data_50": []}
    reasons = {p["name"]: p["reasons"] for p in summary["results"]}
    assert reasons["weights_fuzzing_0_1"] == ["all 3 instances keep their healthy instances' "
                                              "weights"]
    assert [p["survivor"] for p in summary["results"]] == [None] * 5
    assert [p["removed"] for p in summary["results"]] == [None] * 5
    assert reasons["neurons_freezing_1@4"][0].startswith("3 of 3 instances predict one class")

    manifest = tomllib.loads((out / "manifest.toml").read_text())["models"]["flags"]
    assert manifest["mutations"]["neurons_freezing"]["flags"] == {"1@4": ["broken"]}
    assert manifest["mutations"]["change_epochs"]["flags"] == {"1": ["equivalent"]}
    assert manifest["mutations"]["delete_training_data"]["flags"] == {"50": []}

    by_name = ["--manifest", out / "manifest.toml", "--model", "flags", "--mutation"]
    assert cli.json("kill", *by_name, "neurons_freezing")["flags"] == ["broken"]
    assert cli.ok("kill", *by_name, "weights_fuzzing").strip().endswith(
        "flags (probmut train's checks, from the manifest): 0_1: equivalent")
    document = cli.json("posterior", *by_name, "delete_training_data", "--no-plot",
                        "--bootstraps", "5", "--trials", "5", "--sample", "2")
    assert [p.get("flags") for p in document["results"]] == [None, []]
    refusal = cli("kill", *by_name, "change_epochs", "--exclude-flagged")
    assert refusal.code == 2 and refusal.out == ""  # the exclusion is said before the error
    assert "excluded flagged populations: 1 (equivalent)" in refusal.err
    assert "--exclude-flagged left no mutant population" in refusal.err

    # DeepMutation's quality control on the finished run (nothing is trained again): the
    # one-class predictors get wrong most of what their originals get right
    summary = cli.json(*args, "--max-error-rate", "0.5")
    assert summary["trained"] == 0
    removed = {p["name"]: p["removed"] for p in summary["results"] if p["removed"]}
    assert list(removed) == ["neurons_freezing_1@4"]
    assert removed["neurons_freezing_1@4"].startswith("mean error rate 0.")
    manifest = tomllib.loads((out / "manifest.toml").read_text())["models"]["flags"]
    assert manifest["mutations"]["neurons_freezing"]["removed"] == {"1@4": removed[
        "neurons_freezing_1@4"]}
    cli.refused("kill", *by_name, "neurons_freezing", says="every magnitude was removed")
    cli.run(*args)  # without the option the population is back
    assert "removed" not in tomllib.loads((out / "manifest.toml").read_text())[
        "models"]["flags"]["mutations"]["neurons_freezing"]


@pytest.mark.train
def test_list_operators_json(cli):
    from probmut.train.operators import OPERATORS

    rows = cli.json("train", "--list-operators")
    assert [r["name"] for r in rows] == list(OPERATORS)
    assert set(rows[0]) >= {"name", "aliases", "level", "magnitude", "default_target", "source"}
    neb = next(r for r in rows if r["name"] == "neuron_effect_blocking")
    assert neb["aliases"] == ["NEB"] and neb["level"] == "model"
    assert neb["source"] == "DeepMutation"
    assert neb["default_target"].startswith("the whole network: every layer whose neurons")
    clip = next(r for r in rows if r["name"] == "change_gradient_clipping")
    assert clip["aliases"] == ["change_gradient_clip"] and clip["default"] == "0.5"


def test_one_instance_is_described_in_the_singular():
    """`--instances 1` reads "the one instance predicts ...", not "all 1 instances predict"."""
    labels = np.arange(10) % 2
    correct = np.ones((1, 10), bool)
    one = population_flags(correct, labels, 0.5, "classification", training_inputs=40,
                           matches=[SAME_WEIGHTS])
    assert one.reasons == ("the one instance keeps its healthy instance's weights",)
    broken = population_flags(np.zeros((1, 10), bool), labels, 0.5, "classification")
    assert broken.reasons == ("1 of 1 instance predicts one class or is at chance accuracy "
                              "(0.500)",)
