"""What the trainer knows about Keras layers: one table of layer traits, by class name.

Stacked training (:mod:`probmut.train.stack`), relevance propagation
(:mod:`probmut.train.relevance`), the operators' targets
(:mod:`probmut.train.operators.layers`) and the paths of neurons through a model
(:mod:`probmut.train.graph`) read their knowledge of layer classes here. A
class not in :data:`LAYERS` has none of the traits. What a layer's weights are is read
from the layer itself, not from its class (:mod:`probmut.train.layer_weights`), but for
how Keras' recurrent layers lay out their gates, which no single call of the layer shows
(:data:`RECURRENT_GATES`).

Examples
--------
>>> traits_of("MaxPooling2D")
Traits(per_sample=True, channelwise=True, relevance='pool', neurons='channel')
>>> traits_of("LSTM")
Traits(per_sample=False, channelwise=False, relevance=None, neurons=None)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traits:
    """``per_sample``: no weights and no randomness, each sample computed on its own (a
    stack runs it on all its members' samples at once); ``channelwise``: also each
    channel on its own, in the channels-last image layout (a stack runs it on its
    members' channels side by side; an Activation layer only with an elementwise
    function, :data:`ELEMENTWISE_ACTIVATIONS`); ``relevance``: how relevance passes
    through it, ``"pass"`` (unchanged: elementwise, or the identity at inference),
    ``"reshape"`` or ``"pool"``; ``neurons``: where a value goes at inference (what
    neuron effect blocking follows), ``"elementwise"`` (to the same position; an
    Activation layer only with an elementwise function), ``"channel"`` (within its
    channel), ``"reshape"`` (the same values in another layout), ``"concatenate"``
    (beside the other inputs' values), None (mixed with other values)."""

    per_sample: bool = False
    channelwise: bool = False
    relevance: str | None = None
    neurons: str | None = None


_PER_SAMPLE = Traits(per_sample=True)
_ELEMENTWISE = Traits(per_sample=True, channelwise=True, relevance="pass", neurons="elementwise")
# random or regularising only in training
_INFERENCE_IDENTITY = Traits(relevance="pass", neurons="elementwise")
_POOL = Traits(per_sample=True, relevance="pool", neurons="channel")
_POOL_2D = Traits(per_sample=True, channelwise=True, relevance="pool", neurons="channel")
_PADDING = Traits(per_sample=True, channelwise=True, neurons="channel")
_RESHAPE = Traits(per_sample=True, relevance="reshape", neurons="reshape")

#: Keras layer classes (by name) and their :class:`Traits`.
LAYERS = {
    "InputLayer": Traits(per_sample=True, relevance="pass"),
    "Flatten": _RESHAPE, "Reshape": _RESHAPE,
    "Permute": _PER_SAMPLE,
    "Activation": _ELEMENTWISE, "ReLU": _ELEMENTWISE, "LeakyReLU": _ELEMENTWISE,
    "ELU": _ELEMENTWISE, "Identity": _ELEMENTWISE,
    "Softmax": Traits(per_sample=True, relevance="pass"),  # combines the channels
    "MaxPooling1D": _POOL, "MaxPooling2D": _POOL_2D, "MaxPooling3D": _POOL,
    "AveragePooling1D": _POOL, "AveragePooling2D": _POOL_2D, "AveragePooling3D": _POOL,
    "GlobalAveragePooling1D": _POOL, "GlobalAveragePooling2D": _POOL,
    "GlobalMaxPooling1D": _POOL, "GlobalMaxPooling2D": _POOL,
    "ZeroPadding2D": _PADDING, "Cropping2D": _PADDING, "UpSampling2D": _PADDING,
    "Dropout": _INFERENCE_IDENTITY, "SpatialDropout1D": _INFERENCE_IDENTITY,
    "SpatialDropout2D": _INFERENCE_IDENTITY, "SpatialDropout3D": _INFERENCE_IDENTITY,
    "GaussianNoise": _INFERENCE_IDENTITY, "GaussianDropout": _INFERENCE_IDENTITY,
    "AlphaDropout": _INFERENCE_IDENTITY, "ActivityRegularization": _INFERENCE_IDENTITY,
    "BatchNormalization": Traits(neurons="elementwise"),  # an affine map per value at inference
    "Concatenate": Traits(neurons="concatenate"),
}

#: Keras' activation functions (by their ``__name__``) that compute each value on its
#: own (not softmax, log_softmax, sparsemax or glu, which combine the channels).
ELEMENTWISE_ACTIVATIONS = {"linear", "relu", "relu6", "leaky_relu", "elu", "selu", "celu",
                           "gelu", "silu", "mish", "sigmoid", "hard_sigmoid", "hard_silu",
                           "sparse_sigmoid", "tanh", "hard_tanh", "tanh_shrink", "softplus",
                           "sparse_plus", "squareplus", "softsign", "soft_shrink",
                           "hard_shrink", "threshold", "exponential"}

_NONE = Traits()

#: Keras' recurrent layers (by class name): (gate blocks, the block of the candidate the
#: layer's activation takes). Their cell's kernel, recurrent kernel and bias hold the
#: blocks side by side, ``units`` columns each (LSTM: input, forget, candidate, output;
#: GRU: update, reset, candidate; SimpleRNN: the candidate alone).
RECURRENT_GATES = {"LSTM": (4, 2), "GRU": (3, 2), "SimpleRNN": (1, 0)}


def kind(layer) -> str:
    """A layer's class name, the key of :data:`LAYERS`."""
    return type(layer).__name__


def traits_of(layer_or_kind) -> Traits:
    """The :class:`Traits` of a layer, or of a class name."""
    name = layer_or_kind if isinstance(layer_or_kind, str) else kind(layer_or_kind)
    return LAYERS.get(name, _NONE)


def is_input(layer) -> bool:
    return kind(layer) == "InputLayer"


def has_kernel(layer) -> bool:
    """A layer with a ``kernel`` attribute (Dense, convolutions): what relevance
    propagation follows. The mutation operators read a layer's weights from its
    variables instead (:mod:`probmut.train.layer_weights`)."""
    return getattr(layer, "kernel", None) is not None


def activation_name(layer) -> str | None:
    """The ``__name__`` of a layer's activation function, None if it has none."""
    return getattr(getattr(layer, "activation", None), "__name__", None)


def elementwise(activation) -> bool:
    """Whether a Keras activation function computes each value on its own."""
    return getattr(activation, "__name__", None) in ELEMENTWISE_ACTIVATIONS
