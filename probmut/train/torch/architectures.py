"""The torch architectures: the bundled ones, with the layers, shapes and initialisation
of the Keras ones of the same name (:data:`ARCHITECTURES`), and a user's
``module:function`` (:func:`resolve`).

A torch model takes images as torch lays them out, channels first: probmut hands it the
data's images (stored channels last, as Keras takes them) transposed, and a model
function gets ``input_shape`` as ``(channels, height, width)`` (:func:`torch_dims`,
:func:`torch_inputs`). A classifier outputs class probabilities, as the Keras ones do
(a final softmax; the loss then reads the softmax's logits, as Keras' does). The
bundled ones initialise their Dense and convolution layers as Keras' defaults do
(Glorot-uniform kernels, zero biases: :func:`probmut.train.torch.initializers.keras_defaults`)
and train with the Keras ones' settings (:data:`probmut.train.models.MODELS`). Their only
difference in layout: torch flattens a convolution's output channel by channel (Keras
position by position), a fixed permutation of the next Dense layer's inputs.

Examples
--------
>>> from probmut.train.datasets import ModelDims
>>> dims = torch_dims(ModelDims((8, 8, 1), 10))
>>> dims.input_shape
(1, 8, 8)
>>> model = ARCHITECTURES["digits_cnn"].build(dims)
>>> [type(layer).__name__ for layer in model]  # doctest: +NORMALIZE_WHITESPACE
['Conv2d', 'ReLU', 'MaxPool2d', 'Conv2d', 'ReLU', 'Flatten', 'Linear', 'ReLU', 'Dropout',
 'Linear', 'Softmax']
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from torch import nn

from probmut.errors import ProbmutError
from probmut.train.datasets import ModelDims
from probmut.train.torch.initializers import keras_defaults
from probmut.train.torch.settings import MODELS, TrainConfig


@dataclass(frozen=True)
class TorchSpec:
    """A torch architecture: ``build(dims) -> nn.Module`` (``dims`` from
    :func:`torch_dims`), its training settings, a description, and ``layers``: the layer
    each operator targets by default where the torch layer table
    (:mod:`probmut.train.torch.graph`, an activation a layer of its own) would otherwise
    default to another layer than the Keras model's: the Keras spec's published layers,
    and ``remove_layer``'s first dropout (Keras' first hidden layer keeping its shape,
    torch's would be a ReLU); ``initializer``: the Keras name of the weight
    initialiser its Dense and convolution layers start from (None: the module's own)."""

    build: Callable[[ModelDims], nn.Module]
    config: TrainConfig
    description: str
    layers: dict[str, int] = dataclasses.field(default_factory=dict)
    task: str = "classification"
    initializer: str | None = "glorot_uniform"


def torch_dims(dims: ModelDims) -> ModelDims:
    """``dims`` as a torch model sees them: an image's shape channels first."""
    shape = tuple(dims.input_shape)
    if len(shape) == 3:
        shape = (shape[2], shape[0], shape[1])
    return dataclasses.replace(dims, input_shape=shape)


def torch_inputs(x: np.ndarray) -> np.ndarray:
    """Inputs as a torch model takes them: images (``(n, height, width, channels)``)
    channels first, other arrays as they are; float32, contiguous."""
    if isinstance(x, tuple):
        raise ProbmutError("a torch model takes one input array; this data has "
                           f"{len(x)}", option="architecture")
    if x.ndim == 4:
        x = np.moveaxis(x, 3, 1)
    return np.ascontiguousarray(x, dtype=np.float32)


def _digits_cnn(dims):
    channels, height, width = dims.input_shape
    return keras_defaults(nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(32 * (height // 2) * (width // 2), 64), nn.ReLU(), nn.Dropout(0.25),
        nn.Linear(64, dims.n_outputs), nn.Softmax(dim=1)))


def _deepcrime_mnist(dims):
    channels, height, width = dims.input_shape
    return keras_defaults(nn.Sequential(
        nn.Conv2d(channels, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
        nn.Linear(64 * ((height - 4) // 2) * ((width - 4) // 2), 128), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(128, dims.n_outputs), nn.Softmax(dim=1)))


def _mlp(dims):
    return keras_defaults(nn.Sequential(
        nn.Flatten(), nn.Linear(math.prod(dims.input_shape), 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, dims.n_outputs), nn.Softmax(dim=1)))


ARCHITECTURES = {
    "digits_cnn": TorchSpec(_digits_cnn, MODELS["digits_cnn"].config,
                            "small CNN for 8x8 digits (2 conv, dense 64), torch",
                            layers={"remove_layer": 8}),
    "deepcrime_mnist": TorchSpec(_deepcrime_mnist, MODELS["deepcrime_mnist"].config,
                                 "DeepCrime's MNIST convnet (2 conv, max pool, dropout, "
                                 "dense 128), torch",
                                 layers={"change_activation_function": 8,  # Keras' 5
                                         "remove_layer": 5}),
    "mlp": TorchSpec(_mlp, MODELS["mlp"].config, "MLP (dense 128, dropout 0.2), torch",
                     layers={"remove_layer": 3}),
}

_WANTED = "a function (input_shape, n_classes) -> torch.nn.Module"


def _check_outputs(name: str, model: nn.Module, shape: tuple, n_classes: int) -> None:
    """A classifier gives one row of ``n_classes`` outputs per sample (checked on two)."""
    import torch

    from probmut.io.records import one_line

    model.eval()
    try:
        with torch.no_grad():
            outputs = model(torch.zeros((2, *shape)))
    except Exception as error:  # noqa: BLE001 - the user's forward, on inputs of the data's shape
        raise ProbmutError(f"{name}: the model fails on inputs of shape {(2, *shape)} "
                           f"({one_line(error)})", option="architecture") from None
    if not isinstance(outputs, torch.Tensor) or tuple(outputs.shape) != (2, n_classes):
        got = tuple(outputs.shape) if isinstance(outputs, torch.Tensor) else type(outputs).__name__
        raise ProbmutError(f"{name}: the model gives {got} for 2 samples, not one row of "
                           f"{n_classes} class probabilities each", option="architecture")


def resolve(name: str, dims: ModelDims) -> TorchSpec:
    """The :class:`TorchSpec` of a bundled architecture or of a user ``module:function``
    (called once here with ``torch_dims(dims)``, so that a broken one fails before
    training; it trains with the settings of a user's Keras model function,
    ``TrainConfig(epochs=10, batch_size=32)``: Adam, categorical crossentropy)."""
    if name in ARCHITECTURES:
        return ARCHITECTURES[name]
    if ":" not in name:
        other = " (it is a Keras architecture only)" if name in MODELS else ""
        raise ProbmutError(f"unknown torch architecture {name!r}{other}; use one of "
                           f"{', '.join(ARCHITECTURES)} or module:function ({_WANTED})",
                           option="architecture")
    from probmut.io.records import one_line

    module_name, _, function_name = name.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except Exception as error:  # noqa: BLE001 - whatever the user's module raises on import
        raise ProbmutError(f"{name}: cannot import {function_name} from {module_name} "
                           f"({one_line(error)}); the module must be importable (on every "
                           "worker, for the ray backend)", option="architecture") from None
    shape = torch_dims(dims).input_shape

    def build(model_dims):
        return function(tuple(model_dims.input_shape), model_dims.n_outputs)

    try:
        model = build(torch_dims(dims))
    except Exception as error:  # noqa: BLE001 - the user's function, called as every instance will
        raise ProbmutError(f"{name}: {function_name}({shape}, {dims.n_outputs}) failed "
                           f"({one_line(error)}); it must be {_WANTED}",
                           option="architecture") from None
    if not isinstance(model, nn.Module):
        raise ProbmutError(f"{name}: {function_name} returned an object of type "
                           f"{type(model).__name__}, not a torch.nn.Module; it must be "
                           f"{_WANTED}", option="architecture")
    _check_outputs(name, model, shape, dims.n_outputs)
    return TorchSpec(build, TrainConfig(epochs=10, batch_size=32), f"user torch model {name}",
                     initializer=None)



@functools.lru_cache(maxsize=4)
def spec_of(architecture: str, dims: ModelDims) -> TorchSpec:
    """The architecture's :class:`TorchSpec` (:func:`resolve`; a user function resolved
    once per process)."""
    return resolve(architecture, dims)
