"""Relevance propagation and DeepImportance's RQ1 on real Keras models (TensorFlow)."""

import numpy as np
import pytest

from probmut.errors import ProbmutError

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def keras_setup():
    pytest.importorskip("tensorflow")
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)
    import keras

    return keras


def _bias_free_relu_net(keras):
    layers = keras.layers
    keras.utils.set_random_seed(0)
    return keras.Sequential([
        layers.Input((8, 8, 1)), layers.Conv2D(4, 3, activation="relu", use_bias=False),
        layers.MaxPooling2D(2), layers.Flatten(),
        layers.Dense(16, activation="relu", use_bias=False), layers.Dropout(0.3),
        layers.Dense(5, activation="softmax", use_bias=False)])


def _gradient_times_input(keras, model, x, layer):
    """d(logit of the predicted class) / d(layer output) x layer output, per neuron."""
    import tensorflow as tf

    with tf.GradientTape() as tape:
        a = tf.convert_to_tensor(x)
        for item in model.layers[:layer + 1]:
            a = item(a)
        tape.watch(a)
        b = a
        for item in model.layers[layer + 1:-1]:
            b = item(b)
        logits = tf.matmul(b, model.layers[-1].kernel)
        top = tf.reduce_sum(logits * tf.one_hot(tf.argmax(logits, -1), logits.shape[-1]))
    g = np.asarray(tape.gradient(top, a) * a)
    return (g.reshape(len(x), -1, g.shape[-1]).sum(1) if g.ndim > 2 else g), \
        np.asarray(tf.reduce_max(logits, -1))


@pytest.mark.parametrize("layer", [0, 3])
def test_relevance_is_conserved_and_equals_gradient_times_input_without_biases(keras_setup,
                                                                               layer):
    from probmut.train.relevance import relevance

    model = _bias_free_relu_net(keras_setup)
    x = np.random.default_rng(1).random((64, 8, 8, 1)).astype(np.float32)
    expected, logit = _gradient_times_input(keras_setup, model, x, layer)
    exact = relevance(model, x, layer, epsilon=1e-9)
    assert np.abs(exact - expected).max() < 1e-5 * np.abs(expected).max()
    np.testing.assert_allclose(exact.sum(axis=1), logit, rtol=1e-5)  # conservation
    # epsilon absorbs some relevance at each layer, less as it shrinks
    gaps = [np.abs(relevance(model, x, layer, epsilon=eps).sum(axis=1) - logit).max()
            for eps in (0.01, 0.001, 0.0001)]
    assert gaps[0] > gaps[1] > gaps[2] > 0


def test_biases_absorb_relevance_in_a_dense_layer(keras_setup):
    """One dense layer: R_in sums to R_out * (z - b) / (z + eps sign z), the rule's own
    bookkeeping, computed by hand."""
    from probmut.train.relevance import relevance

    keras = keras_setup
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.Dense(3)])
    model.layers[1].bias.assign([0.5, -0.3, 0.2])
    x = np.random.default_rng(3).random((10, 6)).astype(np.float32)
    a = np.maximum(x @ model.layers[0].kernel.numpy() + model.layers[0].bias.numpy(), 0)
    z = a @ model.layers[1].kernel.numpy() + model.layers[1].bias.numpy()
    top = z.argmax(1)
    picked = z[np.arange(10), top]
    eps = 0.01
    bias = model.layers[1].bias.numpy()[top]
    expected = picked * (picked - bias) / (picked + eps * np.sign(picked))
    np.testing.assert_allclose(relevance(model, x, 0, epsilon=eps).sum(axis=1), expected,
                               rtol=1e-5)


def test_unsupported_models_and_layers_are_clear_errors(keras_setup):
    from probmut.train.relevance import check_model

    keras = keras_setup
    model = keras.Sequential([keras.layers.Input((6,)), keras.layers.Dense(4),
                              keras.layers.BatchNormalization(), keras.layers.Dense(3)])
    x = np.zeros((4, 6), np.float32)
    with pytest.raises(ProbmutError, match="BatchNormalization"):
        check_model(model, 0, x)
    with pytest.raises(ProbmutError, match="out of range"):
        check_model(_bias_free_relu_net(keras), 6, np.zeros((4, 8, 8, 1), np.float32))


def test_a_knockout_is_the_model_with_those_neurons_zeroed(keras_setup):
    """knockout_effect against the same model with the silenced neurons' weights and biases
    set to zero (a ReLU of 0 is 0: their outputs are zero), run whole by Keras; the same
    with the inputs split into batches of 7."""
    from probmut.train.relevance import knockout_effect, layer_and_output

    keras = keras_setup
    layers = keras.layers
    keras.utils.set_random_seed(1)
    model = keras.Sequential([layers.Input((6,)), layers.Dense(8, activation="relu"),
                              layers.Dense(4, activation="softmax")])
    x = np.random.default_rng(0).normal(size=(20, 6)).astype(np.float32)
    silenced = [0, 3, 5]
    zeroed = keras.models.clone_model(model)
    kernel, bias = model.layers[0].get_weights()
    kernel, bias = kernel.copy(), bias.copy()
    kernel[:, silenced], bias[silenced] = 0, 0
    zeroed.set_weights([kernel, bias, *model.layers[1].get_weights()])
    before, after = np.asarray(model(x)), np.asarray(zeroed(x))
    predicted = before.argmax(axis=1)
    rows = np.arange(len(x))
    expected = (np.mean(before[rows, predicted] - after[rows, predicted]),
                np.mean(after.argmax(axis=1) != predicted))
    assert abs(expected[0]) > 1e-4  # the knockout changes the output
    for size in (1024, 7):
        drop, changed = knockout_effect(model, 0, silenced, layer_and_output(model, x, 0, size))
        assert drop == pytest.approx(expected[0], rel=1e-5) and changed == expected[1]


@pytest.mark.slow
def test_rq1_the_important_neurons_matter_more_than_random_ones(keras_setup):
    """DeepImportance's RQ1 on a trained digits_cnn: silencing the 6 most relevant neurons
    of the penultimate layer lowers the predicted class's probability more than silencing
    6 random neurons of that layer, and few random draws do as much."""
    from probmut.train.datasets import load_dataset
    from probmut.train.instance import train_instance
    from probmut.train.models import MODELS
    from probmut.train.relevance import default_layer, relevance, sanity_check
    from probmut.train.work import Assignment, RunSettings

    data = load_dataset("digits")
    settings = RunSettings("digits", "digits_cnn", MODELS["digits_cnn"].config.replace(epochs=5))
    result = train_instance(Assignment(settings, "healthy", 0, save_model=True), dataset=data)
    import io
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.keras"
        path.write_bytes(io.BytesIO(result.model_bytes).getvalue())
        model = keras_setup.saving.load_model(path, compile=False)
    layer = default_layer(model)
    important = np.argsort(-relevance(model, data.x_train, layer).sum(axis=0))[:6]
    check = sanity_check(model, data.x_test, layer, important, draws=50, seed=0)
    assert check.important_drop > check.random_drop
    assert check.random_at_least < 0.25


def test_no_saved_models_is_a_plain_error():
    """Called from Python with an empty list (a folder without .keras files)."""
    pytest.importorskip("tensorflow")
    from probmut.train.relevance import measure_coverage

    with pytest.raises(ProbmutError, match="no saved models to measure coverage on"):
        measure_coverage([], dataset=None)
