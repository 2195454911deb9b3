"""Mutation operators: what each one changes, counted exactly against its reference's
rule (DeepCrime's ``int(n * percent / 100)``, DeepMutation++'s and PMT's
``int(n * ratio)``, over the layer or the whole network the reference samples from), on
synthetic data and on the bundled digits_cnn and DeepCrime MNIST models. No training:
operators act on data arrays, training settings, built models or weights. The counts a
user sees (``probmut train --dry-run``) are tested in tests/train/test_dryrun.py.
"""


import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train import operators as ops
from probmut.train.datasets import ModelDims
from probmut.train.models import TrainConfig
from probmut.train.operators import ALIASES, OPERATORS, count, parse_mutations
from probmut.train.operators.model import select
from probmut.train.tasks import strata

DEEPMUTATION = ["DR", "LE", "DM", "DF", "NP", "LR", "LAs", "AFRs", "GF", "WS", "NEB", "NAI",
                "NS", "LD", "LAm", "AFRm"]
#: DeepCrime's 24 operators by the names its configuration uses (utils/properties).
DEEPCRIME = ["change_label", "delete_training_data", "unbalance_train_data",
             "make_output_classes_overlap", "add_noise", "change_activation_function",
             "add_activation_function", "remove_activation_function",
             "change_weights_initialisation", "add_weights_regularisation",
             "change_weights_regularisation", "remove_weights_regularisation",
             "change_dropout_rate", "add_bias", "remove_bias", "change_loss_function",
             "change_optimisation_function", "change_learning_rate", "change_epochs",
             "change_batch_size", "disable_batching", "change_gradient_clip",
             "change_earlystopping_patience", "remove_validation_set"]


def test_both_catalogues_are_in_the_registry():
    assert set(DEEPMUTATION) <= set(ALIASES)
    for name in DEEPCRIME:
        operator = parse_mutations(name)[0].operator
        assert "DeepCrime" in operator.source, name
    for alias in DEEPMUTATION:
        assert "DeepMutation" in OPERATORS[ALIASES[alias][0]].source, alias
    assert sorted(set(ALIASES) - set(DEEPMUTATION)) == ["change_earlystopping_patience",
                                                         "change_gradient_clip"]
    assert {op.level for op in OPERATORS.values()} == {"data", "training", "model"}


def test_aliases_and_defaults():
    assert [m.population for m in parse_mutations("LE:10")] == ["change_label_10@all"]
    assert [m.population for m in parse_mutations("LE:10@3")] == ["change_label_10@3"]
    # DeepMutation's data level: 1% of the training data (section V-B); DeepCrime's own
    # names keep their default
    assert [m.population for m in parse_mutations("DR")] == ["data_repetition_1"]
    assert [m.population for m in parse_mutations("DM") + parse_mutations("delete_training_data")] \
        == ["delete_training_data_1", "delete_training_data_10"]
    assert [m.population for m in parse_mutations("LE") + parse_mutations("change_label")] == [
        "change_label_1@all", "change_label_10"]
    assert [m.population for m in parse_mutations("DF") + parse_mutations("NP")] == [
        "data_shuffle_1", "noise_perturbation_1"]
    assert parse_mutations("weights_fuzzing")[0].params == {"ratio": 0.05, "scale": 1.0,
                                                            "layer": None}  # PMT's 0.05_1
    assert [m.population for m in parse_mutations("disable_batching")] == ["disable_batching_on"]
    assert [m.population for m in parse_mutations("change_earlystopping_patience:3")] == [
        "change_patience_3"]
    assert parse_mutations("LD")[0].params == {"layer": None}  # bound later to a layer
    # DeepMutation's model level: 1% of the network; GF as the paper's N(w, sd^2)
    assert parse_mutations("GF")[0].params == {"ratio": 0.01, "scale": None, "sd": 0.1,
                                               "layer": None}
    for alias in ["WS", "NEB", "NAI", "NS"]:
        assert parse_mutations(alias)[0].params == {"ratio": 0.01, "layer": None}, alias
        assert OPERATORS[ALIASES[alias][0]].scope == "network", alias
    assert parse_mutations("neurons_freezing:0.05@network")[0].params["layer"] == "network"
    assert parse_mutations("remove_bias:each")[0].params == {"layer": "each"}
    assert parse_mutations("change_gradient_clipping")[0].params == {"clip": (None, 0.5)}
    assert parse_mutations("LAs")[0].params == {"insert": "batch_normalization", "name": None,
                                                "layer": None}


@pytest.mark.parametrize("n, share, per, expected", [
    (40, 34, 100, 13),      # 13.6: truncated (rounding would give 14)
    (100, 29, 100, 29),     # computed as DeepCrime does, n * percent / 100 (no 28.999...)
    (32, 0.05, 1, 1),       # PMT's neurons_freezing:0.05 on 32 filters: 1.6 -> 1
    (16, 0.1, 1, 1),        # 1.6 -> 1
    (38160, 0.01, 1, 381),  # digits_cnn's kernel weights, DeepMutation's 1%
])
def test_counts_are_truncated_as_the_references_count(n, share, per, expected):
    assert count(n, share, per) == expected
    assert count(n, share, per) == int(n * share / per)


def test_network_selection_draws_from_all_pools_at_once():
    sizes = [144, 4608, 32768, 640]
    picks = select(sizes, 0.01, np.random.default_rng(0), minimum=1)
    assert sum(len(p) for p in picks) == 381
    assert all(np.all((p >= 0) & (p < s)) and len(np.unique(p)) == len(p)
               for p, s in zip(picks, sizes, strict=True))
    # uniform over the pooled positions: each pool's share of 200 x 381 draws is
    # hypergeometric; 4 standard deviations of its sum
    totals = np.sum([[len(p) for p in select(sizes, 0.01, np.random.default_rng(seed))]
                     for seed in range(200)], axis=0)
    share = np.array(sizes) / sum(sizes)
    sd = np.sqrt(200 * 381 * share * (1 - share) * (1 - 381 / sum(sizes)))
    assert np.all(np.abs(totals - 200 * 381 * share) < 4 * sd), (totals, 200 * 381 * share)
    assert [len(p) for p in select(sizes, 0.0, np.random.default_rng(0), minimum=1)] == [0] * 4
    assert sum(len(p) for p in select([10], 0.01, np.random.default_rng(0), minimum=1)) == 1


# ------------------------------------------------------------ data operators

def _data():
    # 5 classes with 40, 30, 20, 20, 10 samples; x remembers each sample's position
    y = np.repeat(np.arange(5), [40, 30, 20, 20, 10])
    x = np.arange(len(y), dtype=np.float32)[:, None]
    return x, y


def _apply(name, magnitude, x, y, seed=0, task="classification", n_classes=5):
    mutation = parse_mutations(f"{name}:{magnitude}")[0]
    return mutation.operator.apply(x, y, n_classes, mutation.params,
                                   np.random.default_rng(seed), task)


@pytest.mark.parametrize("percent, changed", [(0, 0), (12.5, 5), (25, 10), (34, 13), (100, 40)])
def test_change_label_changes_the_truncated_share_of_the_largest_class(percent, changed):
    x, y = _data()
    _, y2 = _apply("change_label", percent, x, y)
    diff = y2 != y
    assert diff.sum() == changed
    assert np.all(y[diff] == 0)  # class 0 is the most frequent
    assert np.all((y2 >= 0) & (y2 < 5))


def test_change_label_all_classes_and_a_chosen_class():
    x, y = _data()
    _, y2 = _apply("change_label", "10@all", x, y)
    assert (y2 != y).sum() == 12  # 10% of 120
    assert len(np.unique(y[y2 != y])) > 1
    _, y3 = _apply("change_label", "50@3", x, y)  # the source class chosen: class 3
    assert (y3 != y).sum() == 10 and set(y[y3 != y]) == {3}


def test_regression_label_noise_has_one_sd_for_all_targets():
    """DeepCrime: noise sd = percent/100 x np.std(y_train), one sd over both columns."""
    rng = np.random.default_rng(1)
    y = rng.normal(0, [1.0, 3.0], size=(20000, 2)).astype(np.float32)
    _, y2 = _apply("change_label", 20, y, y, task="regression")
    noise = y2 - y
    assert np.all(noise != 0)
    # both columns get 0.2 x the pooled sd (sqrt(5) here), not 0.2 x their own sd;
    # Monte-Carlo se of an sd from 20000 draws is 0.5%
    assert np.allclose(noise.std(axis=0) / (0.2 * y.std()), 1, rtol=0.03)


# MovieLens ml-latest-small's rating counts (0.5, 1, ..., 5 stars), a tenth of them,
# scaled to [0, 1] as DeepCrime's movie_recomm scales ratings
RATINGS = np.repeat((np.arange(1, 11) - 1) / 9,
                    [137, 281, 179, 755, 555, 2005, 1314, 2682, 855, 1321]).astype(np.float32)


def _ratings():
    return (np.arange(len(RATINGS))[:, None],) * 2, RATINGS.copy()


def test_recommender_labels_are_classes_of_ratings():
    """DeepCrime configures MovieLens as a classifier: change_label relabels P% of the
    most common rating (4 stars) with another rating value."""
    x, y = _ratings()
    _, y2 = _apply("change_label", 10, x, y, task="recommendation")
    changed = y2 != y
    assert changed.sum() == int(2682 * 10 / 100)
    assert np.all(y[changed] == np.float32(7 / 9))  # 4 stars
    assert set(y2[changed]) <= set(RATINGS) and len(set(y2[changed])) > 5


def test_recommender_unbalance_trims_the_ratings_below_the_average_count():
    """The ratings rarer than the average: 0.5 to 2.5 stars and 4.5 (not 5)."""
    x, y = _ratings()
    _, y2 = _apply("unbalance_train_data", 50, x, y, task="recommendation")
    before = dict(zip(*np.unique(y, return_counts=True), strict=True))
    after = dict(zip(*np.unique(y2, return_counts=True), strict=True))
    trimmed = [round(float(v) * 9 / 2 + 0.5, 1) for v in before if after[v] < before[v]]
    assert trimmed == [0.5, 1.0, 1.5, 2.0, 2.5, 4.5]
    assert all(after[v] == before[v] - int(before[v] * 50 / 100) for v in before
               if after[v] < before[v])
    _, y3 = _apply("delete_training_data", 10, x, y, task="recommendation")
    assert len(y) - len(y3) == sum(int(c * 10 / 100) for c in before.values())
    x4, y4 = _apply("make_output_classes_overlap", 10, x, y, task="recommendation")
    assert len(y4) == len(y) + 268 and np.all(y4[len(y):] == np.float32(5 / 9))  # 3 stars


def test_regression_groups_are_deepcrimes_buckets_around_zero():
    """Gaze targets far from 0 (relative to their sd) all fall in DeepCrime's top
    bucket, so deletion takes the share of one group (mean +- sd would make nine)."""
    rng = np.random.default_rng(2)
    y = (rng.normal(0, 0.1, size=(300, 2)) + 10).astype(np.float32)
    assert np.unique(strata(y, "regression")).tolist() == [8]
    x = np.arange(300, dtype=np.float32)[:, None]
    _, y2 = _apply("delete_training_data", 45, x, y, task="regression")
    assert len(y2) == 300 - 135
    centred = rng.normal(0, 1, size=(3000, 2)).astype(np.float32)
    groups = strata(centred, "regression")
    sd = centred.std(axis=0)
    expected = (((centred >= -sd).astype(int) + (centred >= sd)) * [3, 1]).sum(axis=1)
    assert np.array_equal(groups, expected) and len(np.unique(groups)) == 9


def test_delete_training_data_removes_the_share_of_every_class():
    x, y = _data()
    x2, y2 = _apply("delete_training_data", 45, x, y)
    # int(45% of 40, 30, 20, 20, 10) = 18, 13, 9, 9, 4 (rounding: 18, 14, 9, 9, 5)
    assert np.bincount(y2).tolist() == [40 - 18, 30 - 13, 20 - 9, 20 - 9, 10 - 4]
    # rows stay aligned: every kept x is the position of a sample of that class
    assert np.array_equal(y[x2[:, 0].astype(int)], y2)


def test_delete_training_data_local_and_on_two_inputs():
    x, y = _data()
    pair = (x, x * 10)  # a model with two inputs: rows must stay aligned across both
    (a, b), y2 = _apply("delete_training_data", "50@1+4", pair, y)
    assert np.bincount(y2).tolist() == [40, 15, 20, 20, 5]
    assert np.array_equal(b, a * 10) and np.array_equal(y[a[:, 0].astype(int)], y2)


def test_unbalance_removes_only_from_classes_below_average():
    x, y = _data()  # average 24: classes 2, 3, 4 are below
    _, y2 = _apply("unbalance_train_data", 45, x, y)
    assert np.bincount(y2).tolist() == [40, 30, 11, 11, 6]


def test_make_output_classes_overlap_adds_relabelled_copies():
    x, y = _data()
    x2, y2 = _apply("make_output_classes_overlap", 34, x, y)
    assert len(y2) == 133 and np.array_equal(x2[:120], x) and np.array_equal(y2[:120], y)
    assert np.all(y[x2[120:, 0].astype(int)] == 0)  # copies of the most frequent class
    assert np.all(y2[120:] == 1)  # labelled as the second most frequent
    assert len(np.unique(x2[120:])) == 13
    x3, y3 = _apply("make_output_classes_overlap", "50@3-4", x, y)
    assert np.all(y[x3[120:, 0].astype(int)] == 3) and np.all(y3[120:] == 4) and len(y3) == 130


def test_data_repetition_appends_copies_also_of_chosen_classes():
    x, y = _data()
    x2, y2 = _apply("data_repetition", 10, x, y)
    assert len(y2) == 132 and np.array_equal(x2[:120], x)
    assert len(np.unique(x2[120:])) == 12
    assert np.array_equal(y[x2[120:, 0].astype(int)], y2[120:])
    x3, y3 = _apply("data_repetition", "50@2", x, y)
    assert len(y3) == 130 and np.all(y3[120:] == 2)


def test_noise_perturbation_changes_exactly_the_share_of_inputs():
    _, y = _data()
    x = np.zeros((120, 4, 4, 1), np.float32)
    x2, y2 = _apply("noise_perturbation", "25_0.2", x, y)
    changed = np.any(x2 != x, axis=(1, 2, 3))
    assert changed.sum() == 30 and np.array_equal(y2, y)
    assert 0.15 < x2[changed].std() < 0.25
    x3, _ = _apply("noise_perturbation", "50@4", x, y)
    changed = np.any(x3 != x, axis=(1, 2, 3))
    assert changed.sum() == 5 and set(y[changed]) == {4}


def test_add_noise_scales_with_each_inputs_own_spread():
    _, y = _data()
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (120, 20, 20, 1)).astype(np.float32) * np.arange(1, 121)[:, None, None,
                                                                              None]
    x2, y2 = _apply("add_noise", 50, x, y)
    changed = np.any(x2 != x, axis=(1, 2, 3))
    assert changed.sum() == 60 and np.array_equal(y2, y)
    ratio = (x2 - x)[changed].reshape(60, -1).std(axis=1) / x[changed].reshape(60, -1).std(axis=1)
    # noise sd = 50% of the input's sd, for every input whatever its own scale; each
    # ratio comes from 400 draws (relative se about 3.5%)
    assert np.allclose(ratio, 0.5, rtol=0.15)


def test_add_noise_whose_share_counts_to_no_input_changes_nothing():
    """DeepCrime: int(120 x 0.01 / 100) = 0 inputs, no noise (legality then flags it
    equivalent before training)."""
    _, y = _data()
    x = np.random.default_rng(3).random((120, 4, 4, 1)).astype(np.float32)
    x2, y2 = _apply("add_noise", 0.01, x, y)
    assert np.array_equal(x2, x) and np.array_equal(y2, y)


def test_data_shuffle_moves_only_the_chosen_samples():
    x, y = _data()
    x2, y2 = _apply("data_shuffle", 50, x, y)
    moved = x2[:, 0] != x[:, 0]
    assert 0 < moved.sum() <= 60
    assert np.array_equal(np.sort(x2[:, 0]), x[:, 0])  # a permutation
    assert np.array_equal(y[x2[:, 0].astype(int)], y2)
    assert OPERATORS["data_shuffle"].note.startswith("equivalent")


def test_same_seed_same_mutation():
    x, y = _data()
    assert np.array_equal(_apply("change_label", 50, x, y, 3)[1],
                          _apply("change_label", 50, x, y, 3)[1])


@pytest.mark.parametrize("text, message", [
    ("no_such_operator:1", "unknown mutation operator"),
    ("delete_training_data:-1", "between 0 and 100"),
    ("delete_training_data:101", "between 0 and 100"),
    ("delete_training_data:abc", "must be a number"),
    ("delete_training_data:", "give magnitudes"),
    ("change_label:10@x", "class id must be an integer"),
    ("unbalance_train_data:10@3", "takes no @target"),
    ("make_output_classes_overlap:10@3", "@FROM-TO"),
    ("make_output_classes_overlap:10@3-3", "must differ"),
    ("weights_fuzzing:0.05", "RATIO_SCALE"),
    ("gaussian_fuzzing:0.05", "RATIO_sdSD"),
    ("weights_fuzzing:1.5_1", "ratio must be between 0 and 1"),
    ("neurons_freezing:0.1@-1", "layer index must be at least 0"),
    ("change_activation_function:elu@network", "layer index must be an integer"),
    ("change_epochs:0", "at least 1"),
    ("change_batch_size:2.5", "an integer"),
    ("change_learning_rate:0", "learning rate"),
    ("change_dropout_rate:1.5", "between 0 and 1"),   # DeepCrime's largest rate is 1
    ("add_weights_regularisation:l3", "one of l1, l2, l1_l2"),
    ("change_gradient_clipping:max_0.5", "T, value_T or norm_T"),
    ("change_gradient_clipping:0", "clip threshold must be at least"),
    ("change_patience:-1", "at least 0"),
    ("disable_batching:5", "takes no magnitude"),
    ("layer_deactivation:6@2", "layer index as the magnitude"),
    ("delete_training_data:3/4", "path separator"),
    # issue 57: Python reads "1_0" as 10 and "١٠" as 10; a magnitude is in decimal digits
    ("delete_training_data:1_0", r"percent must be a number in decimal digits .*, got '1_0'"),
    ("weights_fuzzing:0.05_1_2", r"scale must be a number in decimal digits .*, got '1_2'"),
    ("change_epochs:1_0", r"must be an integer in decimal digits .*, got '1_0'"),
    ("neurons_freezing:0.1@1_0", r"layer index must be an integer in decimal digits"),
    ("delete_training_data:\u0661\u0660", "percent must be a number in decimal digits"),
    ("delete_training_data:nan", "percent must be a number in decimal digits"),
    ("change_learning_rate:inf", "must be a number in decimal digits"),
    ("delete_trainig_data:10", r"did you mean delete_training_data\?"),
])
def test_bad_magnitudes_are_clear_errors(text, message):
    with pytest.raises(ProbmutError, match=message):
        parse_mutations(text)


def test_every_documented_number_form_is_read():
    """The forms docs/operators.md lists: digits, a point and fraction, an exponent."""
    percents = [m.params["percent"] for m in
                parse_mutations("delete_training_data:10,010,3.1,.5,1e1,2.5E-1")]
    assert percents == [10.0, 10.0, 3.1, 0.5, 10.0, 0.25]


# ------------------------------------------------------------ training operators

BASE = TrainConfig(epochs=12, batch_size=128, optimizer="adadelta", learning_rate=1.0,
                   clip=("value", 1.0), patience=5)


@pytest.mark.parametrize("text, changes", [
    ("change_epochs:3", {"epochs": 3}),
    ("change_batch_size:64", {"batch_size": 64}),
    ("change_learning_rate:0.01", {"learning_rate": 0.01}),
    ("change_optimisation_function:sgd", {"optimizer": "sgd", "learning_rate": None}),
    ("change_loss_function:mean_squared_error", {"loss": "mean_squared_error"}),
    ("disable_batching", {"full_batch": True}),
    ("remove_validation_set", {"validation": False, "patience": None}),  # fit(validation_split=0)
    ("change_patience:3", {"patience": 3}),
    ("change_gradient_clipping", {"clip": ("value", 0.5)}),  # DeepCrime's clipvalue 0.5
    ("change_gradient_clipping:value_2", {"clip": ("value", 2.0)}),
    ("change_activation_function:elu@1", {"layer_changes": ((1, "activation", "elu"),)}),
    ("remove_activation_function:4", {"layer_changes": ((4, "activation", "linear"),)}),
    ("add_weights_regularisation:l1_l2@2",
     {"layer_changes": ((2, "kernel_regularizer", "l1_l2"),)}),
    ("remove_weights_regularisation:2", {"layer_changes": ((2, "kernel_regularizer", None),)}),
    ("change_dropout_rate:0.5@5", {"layer_changes": ((5, "rate", 0.5),)}),
    ("remove_bias:0", {"layer_changes": ((0, "use_bias", False),)}),
    ("add_bias:0", {"layer_changes": ((0, "use_bias", True),)}),
    ("remove_layer:5", {"structure": (("remove", 5, None),)}),
    ("add_layer:batch_normalization@0", {"structure": (("add", 0, "batch_normalization"),)}),
    ("add_layer:tanh@4", {"structure": (("add", 4, "tanh"),)}),
])
def test_training_operators_change_only_their_setting(text, changes):
    m = parse_mutations(text)[0]
    assert m.operator.apply(BASE, m.params) == BASE.replace(**changes)


@pytest.mark.parametrize("text, config, problem", [
    ("change_patience:3", BASE.replace(patience=None), "no early stopping to change"),
    ("change_gradient_clipping", BASE.replace(clip=None), "does not clip gradients"),
    ("change_gradient_clipping:norm_1", BASE, "clips by value, not by norm"),
    ("change_patience:3", BASE, None),
    ("change_gradient_clipping:value_0.1", BASE, None),
])
def test_change_operators_need_the_setting_they_change(text, config, problem):
    mutation = parse_mutations(text)[0]
    found = mutation.operator.requires(config, mutation.params)
    assert found is None if problem is None else problem in found


# ------------------------------------------------------------ needs Keras

DIMS = {"digits_cnn": ModelDims((8, 8, 1), 10), "deepcrime_mnist": ModelDims((28, 28, 1), 10),
        "gaze_lenet": ModelDims(((36, 60, 1), (2,)), 2)}


@pytest.fixture(scope="module")
def keras():
    pytest.importorskip("tensorflow")
    import keras

    return keras


def _model(keras, name="digits_cnn"):
    """A bundled model, untrained, with non-zero biases so that changes to them show."""
    from probmut.train.models import MODELS

    keras.utils.set_random_seed(0)
    model = MODELS[name].build(DIMS[name])
    model.set_weights([w if w.ndim > 1 else np.arange(1.0, w.size + 1)
                       for w in model.get_weights()])
    return model


def _table(model):
    return [type(layer).__name__ for layer in model.layers]


def _bound(text, model, task="classification", published=None):
    return ops.bind(parse_mutations(text)[0], model, task, published)


def _mutate(model, text, seed=0):
    mutation, = _bound(text, model)
    return mutation.operator.apply(model, mutation.params, np.random.default_rng(seed))


def _changed(before, after):
    return [not np.array_equal(b, a) for b, a in zip(before, after, strict=True)]


DIGITS = ["Conv2D", "MaxPooling2D", "Conv2D", "Flatten", "Dense", "Dropout", "Dense"]


@pytest.mark.train
def test_keras_names_are_checked_when_bound(keras):
    model = _model(keras)
    for text in ["change_activation_function:nosuch", "change_loss_function:nosuch",
                 "change_optimisation_function:nosuch", "change_weights_initialisation:nosuch",
                 "add_layer:nosuch"]:
        with pytest.raises(ProbmutError, match="unknown Keras"):
            _bound(text, model)
    assert _bound("change_activation_function:elu@2", model)[0].params == {"name": "elu",
                                                                          "layer": 2}


@pytest.mark.train
@pytest.mark.parametrize("text, layer", [
    ("neurons_freezing:0.1", 0), ("weights_fuzzing:0.1_1", 0),   # PMT: the first conv
    ("change_activation_function:elu", 0), ("remove_activation_function", 0),
    ("remove_bias", 0), ("add_weights_regularisation", 0), ("change_dropout_rate:0.5", 5),
    ("remove_layer", 5), ("add_layer", 0), ("remove_activation_trained", 0),
    ("GF", "network"), ("WS", "network"), ("NEB", "network"), ("NAI", "network"),
    ("NS", "network"),
])
def test_default_targets(keras, text, layer):
    mutation, = _bound(text, _model(keras))
    assert mutation.params["layer"] == layer
    if mutation.operator.parse is ops.magnitudes.layer_only:  # the index is the magnitude
        assert mutation.population == f"{mutation.operator.name}_{layer}"


@pytest.mark.train
def test_default_targets_follow_the_subjects_published_configurations(keras):
    """DeepCrime's and PMT's MNIST: change_activation_function on the Dense(128) layer
    (their index 6, which counts the InputLayer); UnityEyes: the second convolution,
    and add_activation_function on the linear output layer (their indices 3 and 9)."""
    from probmut.train.models import MODELS

    mnist = MODELS["deepcrime_mnist"]
    model = mnist.build(DIMS["deepcrime_mnist"])
    bound, = _bound("change_activation_function:elu", model, published=mnist.layers)
    assert bound.params["layer"] == 5 and _table(model)[5] == "Dense"
    assert model.layers[5].units == 128 and bound.population == "change_activation_function_elu"
    assert _bound("change_activation_function:elu@0", model, published=mnist.layers)[0] \
        .params["layer"] == 0  # an explicit target wins
    gaze = MODELS["gaze_lenet"]
    model = gaze.build(DIMS["gaze_lenet"])
    assert _bound("change_activation_function:tanh", model, "regression",
                  gaze.layers)[0].params["layer"] == 3
    assert model.layers[3].filters == 50
    output, = _bound("add_activation_function:relu", model, "regression", gaze.layers)
    assert output.params["layer"] == 9 and model.layers[9].output is model.outputs[0]


@pytest.mark.train
def test_each_makes_one_mutant_per_layer_that_fits_as_deepcrime_loops(keras):
    model = _model(keras)
    each = _bound("remove_bias:each", model)
    assert [m.population for m in each] == ["remove_bias_0", "remove_bias_2", "remove_bias_4",
                                      "remove_bias_6"]  # the output layer too
    assert [m.population for m in _bound("change_activation_function:tanh@each", model)] == [
        f"change_activation_function_tanh@{i}" for i in (0, 2, 4, 6)]


@pytest.mark.train
@pytest.mark.parametrize("text, message", [
    ("neurons_freezing:0.1@9", "layer 9 is out of range"),
    ("neurons_freezing:0.1@1", "is not a layer with connection weights"),
    ("layer_deactivation:5", "acts at inference"),   # the dropout: identity at inference
    ("layer_deactivation", "no hidden layer"),
    ("duplicate_layer", "no hidden layer"),
    ("add_activation_function:relu", "no hidden layer"),  # every hidden layer has relu
    ("add_bias", "no hidden layer"), ("change_weights_regularisation:l1", "no hidden layer"),
    ("remove_weights_regularisation", "no hidden layer"),
    ("remove_weights_regularisation:each", "no layer that is"),
    ("neuron_effect_blocking:0.1@6", "is not a layer whose neurons reach"),  # the output
    ("remove_layer:1", "output shape equals its input shape"),  # max pooling: LR's rule
    ("remove_layer:3", "output shape equals its input shape"),  # the Flatten
])
def test_impossible_targets_are_clear_errors_with_the_layer_table(keras, text, message):
    model = _model(keras)
    with pytest.raises(ProbmutError, match=message) as error:
        _bound(text, model)
    assert "layers: 0 conv2d" in str(error.value) and "6 dense" in str(error.value)


@pytest.mark.train
def test_task_restricted_operators_say_so(keras):
    model = _model(keras)
    with pytest.raises(ProbmutError, match="only for classification and recommendation "
                                           "models; this is a regression model"):
        _bound("make_output_classes_overlap:10", model, "regression")
    with pytest.raises(ProbmutError, match="only for classification and regression"):
        _bound("noise_perturbation:10", model, "recommendation")
    with pytest.raises(ProbmutError, match="class targets"):
        _bound("delete_training_data:10@3", model, "regression")


# -- model level, on both bundled CNNs

def _unit_columns(before, after):
    """Output units (kernel columns) whose kernel slice changed."""
    return np.flatnonzero(np.any((before != after).reshape(-1, before.shape[-1]), axis=0))


@pytest.mark.train
@pytest.mark.parametrize("name, units", [("digits_cnn", 16), ("deepcrime_mnist", 32)])
def test_unit_operators_on_one_layer_change_the_truncated_share(keras, name, units):
    share = max(1, int(units * 0.1))  # 1 of 16, 3 of 32 (rounding gave 2 and 3)
    cases = [("neurons_freezing:0.1", share, True), ("neuron_activation_inverse:0.1@0", share,
                                                     True),
             ("neuron_switch:0.1@0", max(2, share), True), ("weight_shuffling:0.1@0", share,
                                                             False)]
    for text, columns, bias_changed in cases:
        model = _model(keras, name)
        before = [w.copy() for w in model.get_weights()]
        _mutate(model, text)
        after = model.get_weights()
        cols = _unit_columns(before[0], after[0])
        assert len(cols) == columns, text
        assert _changed(before, after) == [True, bias_changed] + [False] * (len(before) - 2), text
        if bias_changed:
            assert set(np.flatnonzero(after[1] != before[1])) == set(cols), text


@pytest.mark.train
def test_pmt_neurons_freezing_0_05_freezes_one_of_32_filters(keras):
    """PMT's bundled MNIST population: size = int(32 x 0.05) = 1 filter of the first
    convolution, kernel and bias zeroed."""
    model = _model(keras, "deepcrime_mnist")
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "neurons_freezing:0.05")
    after = model.get_weights()
    cols = _unit_columns(before[0], after[0])
    assert len(cols) == 1 and np.all(after[0][..., cols] == 0) and after[1][cols[0]] == 0
    assert _changed(before, after) == [True, True] + [False] * (len(before) - 2)


@pytest.mark.train
@pytest.mark.parametrize("text, changed_units", [
    ("WS", 1), ("NAI", 1), ("NS", 2), ("neurons_freezing:0.05@network", 6),
    ("WS:0.1", 12), ("NAI:0.1", 12), ("NS:0.1", None),
])
def test_unit_operators_over_the_network(keras, text, changed_units):
    """int(122 units x ratio) over the network's four weighted layers; NS moves at least
    two units in every layer it touches."""
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, text, seed=1)
    after = model.get_weights()
    per_layer = [len(_unit_columns(before[k], after[k])) for k in range(0, len(before), 2)]
    expected = changed_units or int(122 * 0.1)
    if text.startswith("NS"):  # a unit drawn alone in its layer takes a partner
        assert sum(per_layer) >= expected and all(n != 1 for n in per_layer)
    else:
        assert sum(per_layer) == expected, per_layer
    if text.startswith("WS"):
        assert all(np.array_equal(before[k], after[k]) for k in range(1, len(before), 2))


@pytest.mark.train
def test_gaussian_fuzzing_default_fuzzes_1_percent_of_the_whole_network(keras):
    """The paper's 1% of the network's weights: int(38160 x 0.01) = 381 kernel weights
    over every weighted layer (biases untouched), each w -> N(w, 0.1^2)."""
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "GF", seed=3)
    after = model.get_weights()
    kernels = range(0, len(before), 2)
    changed = [int(np.sum(before[k] != after[k])) for k in kernels]
    assert sum(changed) == 381 and changed[2] > 250  # the dense kernel holds 86% of them
    assert all(np.array_equal(before[k], after[k]) for k in range(1, len(before), 2))
    delta = np.concatenate([(after[k] - before[k])[after[k] != before[k]] for k in kernels])
    assert abs(delta.std() / 0.1 - 1) < 0.15  # se of an sd from 381 draws: 3.6%


@pytest.mark.train
def test_weights_and_gaussian_fuzzing_on_one_kernel(keras):
    model = _model(keras, "deepcrime_mnist")
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "weights_fuzzing:0.05_1@5")  # dense 128: 9216 x 128 kernel
    after = model.get_weights()
    assert _changed(before, after) == [False] * 4 + [True] + [False] * 3
    changed = after[4] != before[4]
    assert changed.sum() == int(1179648 * 0.05)
    ratio = np.abs(after[4][changed] - before[4][changed]) / np.abs(before[4][changed])
    assert 0.6 < np.median(ratio) < 0.75  # |N(0, 1)| has median 0.674 (noise scale |w|)

    for text, expected_sd in [("gaussian_fuzzing:0.5_1@5", before[4].std()),
                              ("gaussian_fuzzing:0.5_sd0.05@5", 0.05)]:
        model = _model(keras, "deepcrime_mnist")
        _mutate(model, text)
        delta = (model.get_weights()[4] - before[4])[model.get_weights()[4] != before[4]]
        assert delta.size == 589824  # 50%
        assert abs(delta.std() / expected_sd - 1) < 0.01  # se of an sd from 590k draws: 0.1%

    model = _model(keras)  # PMT's weights_fuzzing has no minimum: int(144 x 0.001) = 0
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "weights_fuzzing:0.001_1")
    assert not any(_changed(before, model.get_weights()))


@pytest.mark.train
@pytest.mark.parametrize("name, text, consumer, neurons, rows_each", [
    ("digits_cnn", "neuron_effect_blocking:0.1@0", 2, 1, 1),       # conv 16 -> pool -> conv
    ("digits_cnn", "neuron_effect_blocking:0.1@2", 4, 3, 16),      # conv 32 -> flatten -> dense
    ("digits_cnn", "neuron_effect_blocking:0.1@4", 6, 6, 1),       # dense 64 -> dropout -> dense
    ("deepcrime_mnist", "neuron_effect_blocking:0.1@0", 1, 3, 1),  # conv 32 -> conv
    ("deepcrime_mnist", "neuron_effect_blocking:0.1@1", 5, 6, 144),  # conv 64 -> pool, dropout,
])                                                                   # flatten -> dense
def test_neuron_effect_blocking_zeroes_what_the_neurons_send_to_the_next_layer(
        keras, name, text, consumer, neurons, rows_each):
    model = _model(keras, name)
    before = [w.copy() for w in model.get_weights()]
    mutation, = _bound(text, model)
    mutation.operator.apply(model, mutation.params, np.random.default_rng(0))
    after = model.get_weights()
    kernel = 2 * [i for i, layer in enumerate(model.layers) if layer.weights].index(consumer)
    assert _changed(before, after) == [i == kernel for i in range(len(before))]
    rows = np.moveaxis(after[kernel], after[kernel].ndim - 2, 0)  # input axis first
    zero_rows = np.flatnonzero(np.all(rows.reshape(len(rows), -1) == 0, axis=1))
    assert len(zero_rows) == neurons * rows_each
    channels = model.layers[mutation.params["layer"]].output.shape[-1]
    assert len(set(zero_rows % channels)) == neurons  # whole neurons (channels last)


@pytest.mark.train
def test_neuron_effect_blocking_over_the_network(keras):
    """int(112 x 0.1) = 11 neurons of the three layers that feed a weighted layer
    (16 + 32 + 64; the output layer feeds none), blocked in their consumers."""
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "NEB:0.1", seed=2)
    after = model.get_weights()
    blocked = 0
    for kernel, channels in [(2, 16), (4, 32), (6, 64)]:  # consumers of layers 0, 2, 4
        rows = np.moveaxis(after[kernel] != before[kernel], -2, 0)
        changed_rows = np.flatnonzero(rows.reshape(len(rows), -1).any(axis=1))
        blocked += len(set(changed_rows % channels))
    assert blocked == 11
    assert not _changed(before, after)[0]  # nothing blocks the image's effect


@pytest.mark.train
def test_remove_activation_trained_keeps_every_weight(keras):
    model = _model(keras)
    mutant = _mutate(model, "AFRm")
    assert _table(mutant) == DIGITS
    assert mutant.layers[0].activation.__name__ == "linear"
    assert model.layers[0].activation.__name__ == "relu"
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), mutant.get_weights(),
                                                    strict=True))
    x = np.random.default_rng(0).normal(0, 10, (3, 8, 8, 1)).astype(np.float32)
    assert np.all(model.layers[0](x) >= 0)
    assert np.any(mutant.layers[0](x) < 0)  # negative pre-activations now pass


def _same_shape_model(keras):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(8, activation="relu"),
                             keras.layers.Dense(8, activation="tanh"), keras.layers.Dropout(0.1),
                             keras.layers.Dense(3, activation="softmax")])


@pytest.mark.train
def test_layer_deactivation_and_duplication_on_a_layer_that_keeps_its_shape(keras):
    model = _same_shape_model(keras)
    x = np.random.default_rng(0).random((5, 6), dtype=np.float32)
    deactivated = _mutate(model, "LD")  # the first hidden layer 8 -> 8 that acts: layer 1
    assert _table(deactivated) == ["Dense", "Identity", "Dropout", "Dense"]
    kept = [w for i, layer in enumerate(model.layers) if i != 1 for w in layer.get_weights()]
    assert all(np.array_equal(a, b) for a, b in zip(kept, deactivated.get_weights(), strict=True))
    assert not np.allclose(model(x), deactivated(x))

    duplicated = _mutate(model, "LAm")
    assert _table(duplicated) == ["Dense", "Dense", "Dense", "Dropout", "Dense"]
    assert [layer.name for layer in duplicated.layers][2] == model.layers[1].name + "_copy"
    assert all(np.array_equal(a, b) for a, b in zip(duplicated.layers[2].get_weights(),
                                                    model.layers[1].get_weights(), strict=True))
    twice = model.layers[1](model.layers[1](model.layers[0](x)))
    assert np.allclose(duplicated(x), model.layers[3](twice))


# -- training level: the mutated model as built for training

def _built(keras, text, name="digits_cnn"):
    from probmut.train.models import MODELS, build_model

    spec = MODELS[name]
    keras.utils.set_random_seed(0)
    mutation, = _bound(text, spec.build(DIMS[name]))
    return build_model(spec, DIMS[name], mutation.operator.apply(spec.config, mutation.params))


@pytest.mark.train
def test_layer_structure_operators(keras):
    """LR removes a layer whose input and output shapes agree (the Dropout); LAs inserts
    a batch normalisation or an activation layer, as DeepMutation's LAs does."""
    removed = _built(keras, "LR")
    assert _table(removed) == ["Conv2D", "MaxPooling2D", "Conv2D", "Flatten", "Dense", "Dense"]
    added = _built(keras, "LAs")
    assert _table(added) == ["Conv2D", "BatchNormalization", *DIGITS[1:]]
    activation = _built(keras, "add_layer:tanh@4")
    assert _table(activation) == [*DIGITS[:5], "Activation", *DIGITS[5:]]
    assert activation.layers[5].activation.__name__ == "tanh"
    assert len(activation.get_weights()) == len(_built(keras, "change_epochs:3").get_weights())


@pytest.mark.train
def test_layer_setting_operators(keras):
    assert _built(keras, "change_activation_function:tanh@4").layers[4].activation.__name__ \
        == "tanh"
    assert _built(keras, "AFRs:2").layers[2].activation.__name__ == "linear"
    regularised = _built(keras, "add_weights_regularisation:l1_l2")
    assert regularised.layers[0].kernel_regularizer.get_config() == {"l1": 0.01, "l2": 0.01}
    assert len(regularised.losses) == 1
    assert _built(keras, "change_dropout_rate:0.75").layers[5].rate == 0.75
    unbiased = _built(keras, "remove_bias")
    assert unbiased.layers[0].bias is None
    assert len(unbiased.get_weights()) == len(_built(keras, "change_epochs:3").get_weights()) - 1
    initialised = _built(keras, "change_weights_initialisation:zeros@2")
    assert np.all(initialised.layers[2].kernel.numpy() == 0)


@pytest.mark.train
def test_deepcrimes_largest_dropout_rate_trains_one_instance_at_a_time(keras):
    """change_dropout_rate:1 (in DeepCrime's list) drops every input in training; a
    stack's inverted-dropout scale 1 / (1 - rate) would be infinite, so it falls back."""
    from probmut.train.stack import stack_problem

    spec_config = TrainConfig(epochs=1, batch_size=8)
    assert stack_problem(_built(keras, "change_dropout_rate:1"), spec_config).endswith(
        " drops every input (rate 1)")
    assert stack_problem(_built(keras, "change_dropout_rate:0.75"), spec_config) is None


@pytest.mark.train
def test_gradient_clipping_changes_the_healthy_optimizers_threshold(keras):
    from probmut.train.models import make_optimizer

    for healthy, text, expected in [(("value", 1.0), "change_gradient_clipping", (0.5, None)),
                                    (("norm", 2.0), "change_gradient_clipping:0.25",
                                     (None, 0.25))]:
        config = TrainConfig(epochs=1, batch_size=8, optimizer="adadelta", learning_rate=1.0,
                             clip=healthy)
        mutation = parse_mutations(text)[0]
        optimizer = make_optimizer(mutation.operator.apply(config, mutation.params))
        assert (optimizer.clipvalue, optimizer.clipnorm) == expected
        assert float(optimizer.learning_rate) == 1.0


@pytest.mark.train
def test_operators_for_layers_digits_cnn_lacks(keras):
    """A hidden layer without activation and bias, with a regulariser."""
    from probmut.train.models import ModelSpec, build_model

    def build(dims):
        return keras.Sequential([keras.layers.Input(dims.input_shape), keras.layers.Flatten(),
                                 keras.layers.Dense(16, use_bias=False, kernel_regularizer="l2"),
                                 keras.layers.Dense(dims.n_outputs, activation="softmax")])

    spec = ModelSpec(build, TrainConfig(epochs=1, batch_size=8), "test")
    probe = build(DIMS["digits_cnn"])
    for text, check in [
            ("add_bias", lambda m: m.layers[1].bias is not None),
            ("add_activation_function:tanh", lambda m: m.layers[1].activation.__name__ == "tanh"),
            ("remove_weights_regularisation", lambda m: m.layers[1].kernel_regularizer is None),
            ("change_weights_regularisation:l1", lambda m: type(
                m.layers[1].kernel_regularizer).__name__ == "L1")]:
        mutation, = ops.bind(parse_mutations(text)[0], probe)
        assert mutation.params["layer"] == 1
        assert check(build_model(spec, DIMS["digits_cnn"],
                                 mutation.operator.apply(spec.config, mutation.params))), text


@pytest.mark.train
def test_a_model_whose_graph_keras_does_not_keep_is_a_clear_error(keras):
    """Operators follow a model's graph: a Sequential model never built and a
    subclassed model have none to follow."""
    class Subclassed(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(3)

        def call(self, x):
            return self.dense(x)

    unbuilt = keras.Sequential([keras.layers.Dense(4), keras.layers.Dense(3)])
    for model, message in [(unbuilt, "it is not built; start it with keras.Input"),
                           (Subclassed(), r"it is a subclassed model \(Subclassed\)")]:
        with pytest.raises(ProbmutError, match=message):
            _bound("GF", model)


@pytest.mark.train
def test_remove_validation_set_trains_on_the_validation_set_too(keras, monkeypatch):
    """DeepCrime's lenet fits with validation_split=0.1 and its remove_validation_set
    mutant with 0: the mutant trains on all the data, and early stopping, which needs
    the validation loss, is gone. Alone and in a stack, the same samples."""
    from probmut.train import fitting, instance
    from probmut.train.datasets import load_dataset
    from probmut.train.stack.training import member_data
    from probmut.train.work import Assignment, RunSettings

    data = load_dataset("digits", validation_split=0.1)  # 1211 + 136
    fitted = []
    monkeypatch.setattr(instance.fitting, "fit", lambda model, x, y, dims, task, config,
                        validation, deadline: fitted.append((len(y), config, validation))
                        or fitting.FitReport((1.0,), 1.0, False))
    settings = RunSettings("digits", "digits_cnn", TrainConfig(epochs=1, batch_size=32,
                                                               patience=2))
    mutation = parse_mutations("remove_validation_set")[0]
    assignments = [Assignment(settings, "healthy", 0),
                   Assignment(settings, mutation.population, 0, mutation.operator.name,
                              mutation.params)]
    for assignment in assignments:
        instance.train_instance(assignment, dataset=data)
    (healthy, config, validation), (mutant, mutated, _) = fitted
    assert (healthy, mutant) == (1211, 1347) and validation[0].shape[0] == 136
    assert (config.patience, mutated.patience, mutated.validation) == (2, None, False)
    assert [len(y) for y in member_data(assignments, data)[1]] == [1211, 1347]
    x, y = fitting.training_data(data, mutated)
    assert np.array_equal(x[1211:], data.x_val) and np.array_equal(y[1211:], data.y_val)


@pytest.mark.train
def test_a_compiled_user_models_clipping_is_the_healthy_setting(keras, monkeypatch, tmp_path):
    import sys

    (tmp_path / "clipped_model.py").write_text(
        "import keras\n"
        "def build(shape, n):\n"
        "    model = keras.Sequential([keras.layers.Input(shape), keras.layers.Flatten(),\n"
        "                              keras.layers.Dense(n, activation='softmax')])\n"
        "    model.compile(optimizer=keras.optimizers.SGD(clipnorm=2.0),\n"
        "                  loss='categorical_crossentropy')\n"
        "    return model\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    from probmut.train.models import resolve_model

    assert resolve_model("clipped_model:build", DIMS["digits_cnn"]).config.clip == ("norm", 2.0)


@pytest.mark.train
def test_a_compiled_user_models_own_loss_and_learning_rate_are_the_healthy_settings(
        keras, monkeypatch, tmp_path):
    """A user function compiling with a loss function Keras cannot find by name (and
    Adam's 1e-3): the healthy model trains with that function object, the settings
    show its learning rate, and a model-level mutant is copied without recompiling
    from a config (which would look the loss up by name and fail)."""
    import sys

    (tmp_path / "own_loss_model.py").write_text(
        "import keras\n"
        "def smoothed(y_true, y_pred):\n"
        "    return keras.losses.categorical_crossentropy(y_true, y_pred, label_smoothing=0.1)\n"
        "def build(shape, n):\n"
        "    model = keras.Sequential([keras.layers.Input(shape), keras.layers.Flatten(),\n"
        "                              keras.layers.Dense(6, activation='relu'),\n"
        "                              keras.layers.Dense(n, activation='softmax')])\n"
        "    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=smoothed)\n"
        "    return model\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    import own_loss_model

    from probmut.train.models import build_model, resolve_model

    spec = resolve_model("own_loss_model:build", DIMS["digits_cnn"])
    assert (spec.config.loss, spec.config.learning_rate) == ("smoothed", 1e-3)
    healthy = build_model(spec, DIMS["digits_cnn"], spec.config)
    assert healthy.loss is own_loss_model.smoothed
    assert build_model(spec, DIMS["digits_cnn"], spec.config.replace(loss="mse")).loss == "mse"
    from probmut.train.stack.eligibility import stack_problem

    assert "the model's own object 'smoothed'" in stack_problem(healthy, spec.config)
    mutant = _mutate(healthy, "AFRm")
    assert mutant.loss is own_loss_model.smoothed and mutant.layers[1].activation.__name__ \
        == "linear"
    assert type(mutant.optimizer).__name__ == "Adam" and mutant.optimizer is not \
        healthy.optimizer
