"""Which layers of a built Keras model an operator may target: one table of layer traits.

:data:`LAYER_KIND` maps each kind to the words used in messages and a test
``fits(layer, model)``. Without ``@LAYER`` an operator acts on the subject's published
layer if its model names one (:class:`probmut.train.models.ModelSpec`), else on the
first hidden layer (not an input or an output layer) that fits; ``@each`` makes one
mutant per layer that fits, hidden or output, as DeepCrime's loop over a model's layers
does.
"""

from __future__ import annotations

import numpy as np


def has_kernel(layer) -> bool:
    """A Dense or convolution layer (the weighted layers of DeepMutation and PMT)."""
    return getattr(layer, "kernel", None) is not None


def is_input(layer) -> bool:
    return type(layer).__name__ == "InputLayer"


def _single_input(layer):
    return not is_input(layer) and not isinstance(layer.input, list | tuple)


def same_shape(layer) -> bool:
    return _single_input(layer) and tuple(layer.input.shape) == tuple(layer.output.shape)


def is_output(layer, model) -> bool:
    return id(layer.output) in {id(t) for t in model.outputs}


def hidden(layer, model) -> bool:
    return not is_input(layer) and not is_output(layer, model)


def identity_at_inference(layer) -> bool:
    """Does ``layer`` pass its input through unchanged at inference (a dropout, a
    Gaussian noise layer, an Identity)? Checked on a random input of its shape."""
    if not same_shape(layer):
        return False
    shape = [4 if d is None else d for d in layer.input.shape]
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    return bool(np.allclose(np.asarray(layer(x, training=False)), x))


def activation_name(layer) -> str | None:
    activation = getattr(layer, "activation", None)
    return getattr(activation, "__name__", None)


def sequential(model) -> bool:
    import keras

    return isinstance(model, keras.Sequential)


def next_weighted_layer(model, index: int):
    """The layer that the neurons (units, channels) of layer ``index`` feed, and which
    of its kernel's input rows neuron c reaches: ``(j, rows)`` with ``rows(c)`` the
    indices on that kernel's input axis. Only through a chain of layers that keep the
    channel axis (pooling, dropout, activations, ...) or a ``Flatten`` (channels last);
    ``None`` when the next weighted layer is not reached that way."""
    layers = model.layers
    if not has_kernel(layers[index]):
        return None
    channels = layers[index].output.shape[-1]
    flattened = False
    for j in range(index + 1, len(layers)):
        layer = layers[j]
        if layer.input is not layers[j - 1].output:  # a branch or a join: not a chain
            return None
        if has_kernel(layer):
            inputs = layer.input.shape[-1]
            if flattened:
                return j, lambda c, n=inputs: np.arange(c, n, channels)
            return (j, lambda c: np.array([c])) if inputs == channels else None
        if type(layer).__name__ == "Flatten" and not flattened:
            flattened = True
        elif not (same_shape(layer) or (not flattened and layer.output.shape[-1] == channels)):
            return None
    return None


def units(layer) -> int:
    """A weighted layer's units (Dense) or filters (convolutions): its kernel's last axis."""
    return int(layer.kernel.shape[-1])


#: Which layers an operator may target: (words for messages, fits(layer, model)).
LAYER_KIND = {
    "activation": ("a layer with an activation",
                   lambda layer, model: activation_name(layer) is not None),
    "linear_activation": ("a layer with a linear activation (no activation)",
                          lambda layer, model: activation_name(layer) == "linear"),
    "nonlinear_activation": ("a layer with a non-linear activation",
                             lambda layer, model: activation_name(layer) not in (None, "linear")),
    "kernel_initializer": ("a layer with a kernel initializer",
                           lambda layer, model: hasattr(layer, "kernel_initializer")),
    "kernel": ("a layer with a kernel (Dense, Conv)", lambda layer, model: has_kernel(layer)),
    "switchable": ("a layer with a kernel and at least two units",
                   lambda layer, model: has_kernel(layer) and units(layer) >= 2),
    "no_regulariser": ("a layer with a kernel and no kernel regulariser",
                       lambda layer, model: has_kernel(layer)
                       and getattr(layer, "kernel_regularizer", 0) is None),
    "regulariser": ("a layer with a kernel regulariser",
                    lambda layer, model: getattr(layer, "kernel_regularizer", None) is not None),
    "dropout": ("a Dropout layer", lambda layer, model: type(layer).__name__ == "Dropout"),
    "bias": ("a layer with a bias", lambda layer, model: getattr(layer, "use_bias", False)
             is True),
    "no_bias": ("a layer that can take a bias but has none",
                lambda layer, model: getattr(layer, "use_bias", True) is False),
    "neurons": ("a layer whose neurons feed a next Dense/Conv layer through a chain of "
                "layers that keep the channels (or a Flatten)",
                lambda layer, model: next_weighted_layer(model, model.layers.index(layer))
                is not None),
    "active_same_shape": ("a layer whose output shape equals its input shape and which "
                          "acts at inference (not a dropout)",
                          lambda layer, model: same_shape(layer)
                          and not identity_at_inference(layer)),
    "duplicable": ("a layer of a Sequential model whose output shape equals its input "
                   "shape and which acts at inference",
                   lambda layer, model: sequential(model) and same_shape(layer)
                   and not identity_at_inference(layer)),
    "removable": ("a layer of a Sequential model whose output shape equals its input shape",
                  lambda layer, model: sequential(model) and same_shape(layer)),
    "insertion_point": ("a layer of a Sequential model",
                        lambda layer, model: sequential(model) and _single_input(layer)),
}


def fitting(model, kind: str, *, hidden_only: bool) -> list[int]:
    """Indices of the layers of ``model`` that fit ``kind`` (hidden ones only, or
    hidden and output layers)."""
    fits = LAYER_KIND[kind][1]
    return [i for i, layer in enumerate(model.layers)
            if not is_input(layer) and (not hidden_only or hidden(layer, model))
            and fits(layer, model)]
