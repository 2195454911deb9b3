"""The torch trainer computes what Keras computes, checked against Keras itself on the
same inputs: every activation, loss, optimizer rule and initialiser it names by a Keras
name, the bundled architectures' layers, and training steps end to end."""

import numpy as np
import pytest

from . import torch_or_skip

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def keras():
    torch_or_skip()
    pytest.importorskip("tensorflow")
    from probmut.train.tf_setup import set_tensorflow_environment

    set_tensorflow_environment()
    import keras

    return keras


def test_every_activation_is_keras_own(keras):
    import torch

    from probmut.train.torch.activations import ACTIVATIONS, make

    x = np.random.default_rng(0).normal(0, 3, size=(6, 5)).astype(np.float32)
    for name in ACTIVATIONS:
        expected = np.asarray(keras.activations.get(name)(x))
        got = make(name)(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_every_loss_is_keras_own(keras):
    import torch

    from probmut.train.torch.losses import LOSSES, Outputs, batch_loss

    rng = np.random.default_rng(1)
    logits = rng.normal(0, 2, size=(8, 5)).astype(np.float32)
    probabilities = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = rng.integers(0, 5, size=8)
    one_hot = np.eye(5, dtype=np.float32)[labels]
    for name in LOSSES:
        target = labels if name.startswith("sparse") else one_hot
        expected = float(np.mean(keras.losses.get(name)(target, probabilities)))
        got = float(batch_loss(name, torch.from_numpy(target),
                               Outputs(torch.from_numpy(probabilities))))
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-6), name
    # from a softmax's (a sigmoid's) logits, as Keras' crossentropies read them
    for name, target in (("categorical_crossentropy", one_hot),
                         ("sparse_categorical_crossentropy", labels)):
        expected = float(np.mean(keras.losses.get(name)(target, logits, from_logits=True)))
        got = float(batch_loss(name, torch.from_numpy(target),
                               Outputs(torch.from_numpy(logits), "softmax")))
        assert got == pytest.approx(expected, rel=1e-5), name
    expected = float(np.mean(keras.losses.binary_crossentropy(one_hot, logits, from_logits=True)))
    got = float(batch_loss("binary_crossentropy", torch.from_numpy(one_hot),
                           Outputs(torch.from_numpy(logits), "sigmoid")))
    assert got == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("clip", [None, ("value", 0.05), ("norm", 0.5)])
def test_every_optimizer_takes_keras_steps(keras, clip):
    """Six steps of every optimizer from the same weights and gradients: Keras' own
    update (its defaults, its clipping) and probmut's agree to float rounding."""
    import torch

    from probmut.train.torch.optimizers import DEFAULTS, KerasOptimizer

    rng = np.random.default_rng(2)
    start = [rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)]
    grads = [[rng.normal(size=w.shape).astype(np.float32) for w in start] for _ in range(6)]
    for name in DEFAULTS:
        options = {} if clip is None else {"clip" + clip[0]: clip[1]}
        reference = keras.optimizers.get({"class_name": name, "config": options})
        variables = [keras.Variable(w.copy()) for w in start]
        weights = [torch.from_numpy(w.copy()) for w in start]
        ours = KerasOptimizer(name, None, clip, weights)
        for step in grads:
            reference.apply([keras.ops.convert_to_tensor(g) for g in step], variables)
            ours.step([torch.from_numpy(g) for g in step])
        for variable, weight in zip(variables, weights, strict=True):
            np.testing.assert_allclose(weight.numpy(), np.asarray(variable), rtol=2e-5,
                                       atol=2e-6, err_msg=f"{name} {clip}")


def test_every_initializer_draws_from_keras_distribution(keras):
    """The same shape (a Dense(96) on 160 inputs, a 3 x 3 convolution of 24 to 40
    channels) drawn by Keras and by probmut: the same standard deviation and spread (the
    99th percentile of |w|: a uniform's or truncated normal's bound), to the Monte-Carlo
    error of ~15000 draws (within 4%: about five standard errors of an sd)."""
    import torch

    from probmut.train.torch.initializers import INITIALIZERS, initialise

    for torch_shape, keras_shape in (((96, 160), (160, 96)), ((40, 24, 3, 3), (3, 3, 24, 40))):
        for name in INITIALIZERS:
            expected = np.asarray(keras.initializers.get(name)(keras_shape))
            got = torch.empty(torch_shape)
            initialise(got, name, torch.Generator().manual_seed(3))
            got = got.numpy()
            if expected.std() == 0:
                np.testing.assert_array_equal(np.unique(got), np.unique(expected), err_msg=name)
                continue
            assert got.std() == pytest.approx(expected.std(), rel=0.04), name
            assert np.quantile(np.abs(got), 0.99) == pytest.approx(
                np.quantile(np.abs(expected), 0.99), rel=0.04), name
            assert got.mean() == pytest.approx(0, abs=4 * got.std() / np.sqrt(got.size)), name


@pytest.mark.parametrize("architecture", ["digits_cnn", "mlp"])
def test_bundled_architectures_compute_the_keras_models_outputs(keras, digits, architecture):
    """The Keras model's weights put into the torch model (a convolution's kernel
    transposed, the first Dense kernel's rows in torch's flattening order) give the Keras
    model's outputs on the test inputs: the same layers, shapes and activations."""
    import torch

    from probmut.train import models
    from probmut.train.torch.architectures import ARCHITECTURES, torch_dims
    from probmut.train.torch.fitting import predict

    reference = models.build_model(models.MODELS[architecture], digits.dims,
                                   models.MODELS[architecture].config)
    model = ARCHITECTURES[architecture].build(torch_dims(digits.dims))
    weighted = [layer for layer in reference.layers if layer.get_weights()]
    ours = [m for m in model if isinstance(m, torch.nn.Linear | torch.nn.Conv2d)]
    assert len(weighted) == len(ours)
    previous = None
    with torch.no_grad():
        for layer, module in zip(weighted, ours, strict=True):
            kernel, bias = layer.get_weights()
            if kernel.ndim == 4:
                module.weight.copy_(torch.from_numpy(kernel.transpose(3, 2, 0, 1).copy()))
            else:
                if previous is not None and len(previous) == 3:  # after a channels-last flatten
                    h, w, c = previous
                    kernel = kernel.reshape(h, w, c, -1).transpose(2, 0, 1, 3) \
                        .reshape(h * w * c, -1)
                module.weight.copy_(torch.from_numpy(kernel.T.copy()))
            module.bias.copy_(torch.from_numpy(bias))
            previous = tuple(layer.output.shape[1:])
    expected = reference.predict(digits.x_test, verbose=0)
    np.testing.assert_allclose(predict(model, digits.x_test), expected, atol=2e-5)


def test_training_steps_are_keras_steps(keras, digits):
    """Five batches of Adam on a tanh MLP from the same weights: Keras' ``train_on_batch``
    (categorical crossentropy read from the softmax's logits) and probmut's loss and
    update move the weights alike, to float rounding."""
    import torch

    from probmut.train.torch import fitting
    from probmut.train.torch.architectures import resolve, torch_dims
    from probmut.train.torch.build import build
    from probmut.train.torch.optimizers import KerasOptimizer

    spec = resolve("tests.train.torch.subjects:small_mlp", digits.dims)
    built = build(spec, torch_dims(digits.dims), spec.config, seed=5)
    layers = [m for m in built.module.modules() if isinstance(m, torch.nn.Linear)]
    reference = keras.Sequential([keras.Input(digits.dims.input_shape), keras.layers.Flatten(),
                                  keras.layers.Dense(16, activation="tanh"),
                                  keras.layers.Dense(10, activation="softmax")])
    reference.compile(optimizer=keras.optimizers.Adam(1e-2), loss="categorical_crossentropy")
    for layer, module in zip(reference.layers[1:], layers, strict=True):
        layer.set_weights([module.weight.detach().numpy().T, module.bias.detach().numpy()])
    weights = list(built.module.parameters())
    optimizer = KerasOptimizer("adam", 1e-2, None, weights)
    x = torch.from_numpy(digits.x_train[:160].reshape(160, 1, 8, 8))
    targets = fitting.targets(digits.y_train[:160], "classification", 10,
                              "categorical_crossentropy")
    for start in range(0, 160, 32):
        rows = slice(start, start + 32)
        expected = float(reference.train_on_batch(digits.x_train[rows], targets[rows].numpy()))
        loss = fitting.loss_of(built, x[rows], targets[rows], "categorical_crossentropy")
        optimizer.step(torch.autograd.grad(loss, weights))
        assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)
    for layer, module in zip(reference.layers[1:], layers, strict=True):
        np.testing.assert_allclose(module.weight.detach().numpy().T, layer.get_weights()[0],
                                   atol=1e-5)
