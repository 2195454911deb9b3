"""Mutation operators: exact counts, parsing errors, model-level operators touch only
their target (no training needed: operators act on data arrays or weights)."""

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train import operators as ops
from probmut.train.operators import OPERATORS, parse_mutations


def _data():
    # 5 classes with 40, 30, 20, 20, 10 samples; x remembers each sample's position
    y = np.repeat(np.arange(5), [40, 30, 20, 20, 10])
    x = np.arange(len(y), dtype=np.float32)[:, None]
    return x, y


def _apply(name, magnitude, x, y, seed=0):
    mutation = parse_mutations(f"{name}:{magnitude}")[0]
    return mutation.operator.apply(x, y, 5, mutation.params, np.random.default_rng(seed))


@pytest.mark.parametrize("percent, changed", [(0, 0), (12.5, 5), (25, 10), (60, 24), (100, 40)])
def test_change_label_changes_exactly_the_share_of_the_largest_class(percent, changed):
    x, y = _data()
    _, y2 = _apply("change_label", percent, x, y)
    diff = y2 != y
    assert diff.sum() == changed
    assert np.all(y[diff] == 0)  # class 0 is the most frequent
    assert np.all((y2 >= 0) & (y2 < 5))


def test_change_label_all_classes():
    x, y = _data()
    _, y2 = _apply("change_label", "10@all", x, y)
    assert (y2 != y).sum() == 12  # 10% of 120
    assert len(np.unique(y[y2 != y])) > 1


def test_delete_training_data_removes_the_share_of_every_class():
    x, y = _data()
    x2, y2 = _apply("delete_training_data", 30.93, x, y)
    # round half up of 30.93% of 40, 30, 20, 20, 10
    assert np.bincount(y2).tolist() == [40 - 12, 30 - 9, 20 - 6, 20 - 6, 10 - 3]
    # rows stay aligned: every kept x is the position of a sample of that class
    assert np.array_equal(y[x2[:, 0].astype(int)], y2)


def test_unbalance_removes_only_from_classes_below_average():
    x, y = _data()  # average 24: classes 2, 3, 4 are below
    _, y2 = _apply("unbalance_train_data", 50, x, y)
    assert np.bincount(y2).tolist() == [40, 30, 10, 10, 5]


def test_data_repetition_appends_copies():
    x, y = _data()
    x2, y2 = _apply("data_repetition", 10, x, y)
    assert len(y2) == 132 and np.array_equal(x2[:120], x)
    assert len(np.unique(x2[120:])) == 12
    assert np.array_equal(y[x2[120:, 0].astype(int)], y2[120:])


def test_noise_perturbation_changes_exactly_the_share_of_inputs():
    x, y = _data()
    x = np.zeros((120, 4, 4, 1), np.float32)
    x2, y2 = _apply("noise_perturbation", "25_0.2", x, y)
    changed = np.any(x2 != x, axis=(1, 2, 3))
    assert changed.sum() == 30 and np.array_equal(y2, y)
    assert 0.15 < x2[changed].std() < 0.25


def test_data_shuffle_moves_only_the_chosen_samples():
    x, y = _data()
    x2, y2 = _apply("data_shuffle", 50, x, y)
    moved = x2[:, 0] != x[:, 0]
    assert 0 < moved.sum() <= 60
    assert np.array_equal(np.sort(x2[:, 0]), x[:, 0])  # a permutation
    assert np.array_equal(y[x2[:, 0].astype(int)], y2)


def test_same_seed_same_mutation():
    x, y = _data()
    assert np.array_equal(_apply("change_label", 50, x, y, 3)[1],
                          _apply("change_label", 50, x, y, 3)[1])


@pytest.mark.parametrize("text, message", [
    ("no_such_operator:1", "unknown mutation operator"),
    ("delete_training_data:-1", "between 0 and 100"),
    ("delete_training_data:101", "between 0 and 100"),
    ("delete_training_data:abc", "must be a number"),
    ("delete_training_data", "give magnitudes"),
    ("change_label:10@3", "only target is @all"),
    ("weights_fuzzing:0.05", "RATIO_SCALE"),
    ("weights_fuzzing:1.5_1", "ratio must be between 0 and 1"),
    ("neurons_freezing:0.1@-1", "layer index must be at least 0"),
    ("change_epochs:0", "at least 1"),
    ("change_batch_size:2.5", "an integer"),
    ("change_learning_rate:0", "learning rate"),
    ("delete_training_data:3/4", "path separator"),
])
def test_bad_magnitudes_are_clear_errors(text, message):
    with pytest.raises(ProbmutError, match=message):
        parse_mutations(text)


def test_training_operators_change_only_their_setting():
    from probmut.train.models import TrainConfig

    base = TrainConfig(epochs=12, batch_size=128, optimizer="adadelta", learning_rate=1.0)
    expected = {
        "change_epochs:3": base.replace(epochs=3),
        "change_batch_size:64": base.replace(batch_size=64),
        "change_learning_rate:0.01": base.replace(learning_rate=0.01),
    }
    for text, config in expected.items():
        m = parse_mutations(text)[0]
        assert m.operator.apply(base, m.params) == config


# ------------------------------------------------------------ needs Keras


@pytest.fixture(scope="module")
def keras():
    pytest.importorskip("tensorflow")
    import keras

    return keras


def _model(keras):
    """A small untrained model whose biases are non-zero, so changes to them show."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.layers.Input((6, 6, 1)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(20, activation="relu"),
        keras.layers.Dropout(0.1),
        keras.layers.Dense(4, activation="softmax"),
    ])
    model.set_weights([w if w.ndim > 1 else np.arange(1.0, w.size + 1) for w in model.get_weights()])
    return model


def _mutate(model, text, seed=0):
    mutation = ops.bind(parse_mutations(text)[0], model)
    return mutation.operator.apply(model, mutation.params, np.random.default_rng(seed))


def _changed(before, after):
    return [not np.array_equal(b, a) for b, a in zip(before, after, strict=True)]


@pytest.mark.train
def test_keras_names_are_checked(keras):
    for text in ["change_activation_function:nosuch", "change_loss_function:nosuch",
                 "change_optimisation_function:nosuch", "change_weights_initialisation:nosuch"]:
        with pytest.raises(ProbmutError, match="unknown Keras"):
            parse_mutations(text)
    assert parse_mutations("change_activation_function:elu@2")[0].params == {"name": "elu",
                                                                             "layer": 2}


@pytest.mark.train
def test_bind_defaults_and_checks_layers(keras):
    model = _model(keras)
    bound = ops.bind(parse_mutations("neurons_freezing:0.1")[0], model)
    assert bound.params["layer"] == 0  # the first layer with a kernel
    with pytest.raises(ProbmutError, match="out of range.*layers: 0 conv2d"):
        ops.bind(parse_mutations("neurons_freezing:0.1@9")[0], model)
    with pytest.raises(ProbmutError, match="is not a layer with a kernel"):
        ops.bind(parse_mutations("neurons_freezing:0.1@1")[0], model)
    with pytest.raises(ProbmutError, match="output shape equals its input shape"):
        ops.bind(parse_mutations("layer_deactivation:2")[0], model)


@pytest.mark.train
def test_weights_fuzzing_changes_the_ratio_of_one_kernel(keras):
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]  # conv k, b, dense k, b, out k, b
    _mutate(model, "weights_fuzzing:0.05_1@2")
    after = model.get_weights()
    assert _changed(before, after) == [False, False, True, False, False, False]
    changed = after[2] != before[2]
    assert changed.sum() == 128  # 5% of the 128 x 20 kernel
    ratio = np.abs(after[2][changed] - before[2][changed]) / np.abs(before[2][changed])
    assert np.median(ratio) < 2  # noise scale is |w|


@pytest.mark.train
def test_neurons_freezing_zeroes_whole_units(keras):
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "neurons_freezing:0.2@0")  # 20% of 8 filters: 2
    kernel, bias = model.get_weights()[:2]
    frozen = np.flatnonzero(np.all(kernel == 0, axis=(0, 1, 2)))
    assert len(frozen) == 2 and np.all(bias[frozen] == 0)
    assert _changed(before, model.get_weights()) == [True, True, False, False, False, False]
    _mutate(model, "neurons_freezing:0.001@2")  # at least one unit
    assert np.all(model.get_weights()[2] == 0, axis=0).sum() == 1


@pytest.mark.train
@pytest.mark.parametrize("text, kernel_cols_changed, bias_changed", [
    ("neuron_activation_inverse:0.25@2", 5, True),
    ("neuron_switch:0.1@2", 2, True),
    ("weight_shuffling:0.1@2", 2, False),
])
def test_unit_operators_touch_only_the_chosen_units(keras, text, kernel_cols_changed,
                                                    bias_changed):
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, text)
    after = model.get_weights()
    cols = np.flatnonzero(np.any(after[2] != before[2], axis=0))
    assert len(cols) == kernel_cols_changed
    assert _changed(before, after) == [False, False, True, bias_changed, False, False]
    if bias_changed:
        assert set(np.flatnonzero(after[3] != before[3])) == set(cols)
    assert np.allclose(np.sort(np.abs(after[2]), axis=None), np.sort(np.abs(before[2]), axis=None))


@pytest.mark.train
def test_neuron_effect_blocking_zeroes_inputs_of_the_layer(keras):
    model = _model(keras)
    before = [w.copy() for w in model.get_weights()]
    _mutate(model, "neuron_effect_blocking:0.25@4")  # 25% of the 20 inputs of the output layer
    after = model.get_weights()
    assert np.all(after[4] == 0, axis=1).sum() == 5
    assert _changed(before, after) == [False] * 4 + [True, False]


@pytest.mark.train
def test_gaussian_fuzzing_scale_is_the_kernel_sd(keras):
    model = _model(keras)
    before = model.get_weights()[2].copy()
    _mutate(model, "gaussian_fuzzing:0.5_1@2")
    delta = (model.get_weights()[2] - before)[model.get_weights()[2] != before]
    assert delta.size == 1280 and 0.5 < delta.std() / before.std() < 1.5


@pytest.mark.train
def test_layer_deactivation_keeps_the_other_weights(keras):
    model = _model(keras)
    x = np.random.default_rng(0).random((3, 6, 6, 1), dtype=np.float32)
    mutant = _mutate(model, "layer_deactivation:3")  # the dropout layer
    assert type(mutant.layers[3]).__name__ == "Identity"
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), mutant.get_weights(),
                                                    strict=True))
    assert np.allclose(model(x, training=False), mutant(x, training=False))


def test_every_operator_is_documented_and_has_a_level():
    assert {op.level for op in OPERATORS.values()} == {"data", "training", "model"}
    assert {name for name, op in OPERATORS.items() if op.paired} == {
        "weights_fuzzing", "gaussian_fuzzing", "neurons_freezing", "weight_shuffling",
        "neuron_effect_blocking", "neuron_activation_inverse", "neuron_switch",
        "layer_deactivation"}
