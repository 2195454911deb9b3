"""Mutation operators: small pure functions of (data | training settings | model, magnitude).

One registry, :data:`OPERATORS`: each :class:`Operator` has its level, magnitude syntax
and meaning, documented default magnitude, default target, source paper and
DeepMutation short names (:data:`ALIASES`). Three levels:

* ``data`` (source level, before training):
  ``apply(x, y, n_classes, params, rng, task) -> (x, y)``
* ``training`` (source level, model and training settings): ``apply(config, params) -> config``
* ``model`` (model level, on a trained healthy instance, paired):
  ``apply(model, params, rng) -> model``

A magnitude is written ``VALUE[@TARGET]``: ``3.1``, ``elu@1`` (layer 1), ``0.05_1``
(ratio 0.05, scale 1), ``12.5@all``, ``10@3+7`` (classes 3 and 7). Without magnitudes
(``--mutation data_shuffle``) the operator's documented default is used; layer
operators then act on their default layer (see ``LAYER_KIND``). Bad magnitudes raise
:class:`ProbmutError` from :func:`parse_mutations`/:func:`bind` before training.

Shares are rounded half up: ``count(n, share) = floor(share * n + 0.5)``; operators on
units touch at least one unit (two for ``neuron_switch``).

Examples
--------
>>> import numpy as np
>>> [m.stem for m in parse_mutations("delete_training_data:3.1,9.29")]
['delete_training_data_3.1', 'delete_training_data_9.29']
>>> [m.stem for m in parse_mutations("LE:10")]   # DeepMutation's label error: all labels
['change_label_10@all']
>>> y = np.repeat(np.arange(3), 10)
>>> x, y2 = delete_training_data(y[:, None], y, 3, {"percent": 20.0, "classes": None},
...                              np.random.default_rng(0))
>>> np.bincount(y2).tolist()
[8, 8, 8]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets import concat, take

ALL_TASKS = ("classification", "regression", "recommendation")
IMAGE_TASKS = ("classification", "regression")


def count(n: int, share: float) -> int:
    """Number of items for a share in [0, 1] of ``n``, rounded half up.

    >>> count(10, 0.25), count(450, 0.031)
    (3, 14)
    """
    return int(math.floor(share * n + 0.5))


# ---------------------------------------------------------------- magnitude parsing

def _number(text: str, what: str, low: float, high: float = math.inf, *, integer=False,
            below_high=False):
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{what} must be {'an integer' if integer else 'a number'}, "
                         f"got {text!r}") from None
    too_high = value >= high if below_high else value > high
    if value < low or too_high or not math.isfinite(value):
        bound = (f"at least {low:g}" if high == math.inf else
                 f"in [{low:g}, {high:g})" if below_high else f"between {low:g} and {high:g}")
        raise ValueError(f"{what} must be {bound}, got {text}")
    return value


def _no_target(target):
    if target is not None:
        raise ValueError("takes no @target")


def _classes(target):
    """``@3`` or ``@3+7``: class ids a local (class-targeted) operator is restricted to."""
    if target is None:
        return None
    return tuple(sorted({_number(c, "class id", 0, integer=True) for c in target.split("+")}))


def _percent(value, target):
    _no_target(target)
    return {"percent": _number(value, "percent", 0, 100)}


def _local_percent(value, target):
    return {"percent": _number(value, "percent", 0, 100), "classes": _classes(target)}


def _change_label_params(value, target):
    percent = _number(value, "percent", 0, 100)
    if target == "all":
        return {"percent": percent, "all_classes": True, "classes": None}
    return {"percent": percent, "all_classes": False, "classes": _classes(target)}


def _overlap_params(value, target):
    pair = None
    if target is not None:
        first, sep, second = target.partition("-")
        if not sep:
            raise ValueError(f"write the classes as @FROM-TO, e.g. @3-5; got @{target}")
        pair = (_number(first, "class id", 0, integer=True),
                _number(second, "class id", 0, integer=True))
        if pair[0] == pair[1]:
            raise ValueError("the two classes must differ")
    return {"percent": _number(value, "percent", 0, 100), "pair": pair}


def _noise_params(value, target):
    percent, _, std = value.partition("_")
    params = _local_percent(percent, target)
    params["std"] = _number(std, "noise std", 0) if std else 0.1
    return params


def _ratio_scale(value, target):
    ratio, sep, scale = value.partition("_")
    if not sep:
        raise ValueError(f"write RATIO_SCALE as in the paper, e.g. 0.05_1; got {value!r}")
    return {"ratio": _number(ratio, "ratio", 0, 1), "scale": _number(scale, "scale", 0),
            "layer": _layer(target)}


def _gaussian_params(value, target):
    ratio, sep, scale = value.partition("_")
    if sep and scale.startswith("sd"):  # DeepMutation's form: an absolute sd
        return {"ratio": _number(ratio, "ratio", 0, 1), "scale": None,
                "sd": _number(scale[2:], "noise sd", 0), "layer": _layer(target)}
    if not sep:
        raise ValueError(f"write RATIO_SCALE (sd relative to the kernel's) or RATIO_sdSD "
                         f"(an absolute sd, DeepMutation's), e.g. 0.1_1 or 0.1_sd0.05; "
                         f"got {value!r}")
    return {**_ratio_scale(value, target), "sd": None}


def _ratio(value, target):
    return {"ratio": _number(value, "ratio", 0, 1), "layer": _layer(target)}


def _layer(target):
    return None if target is None else _number(target, "layer index", 0, integer=True)


def _layer_only(value, target):
    """The magnitude is a layer index; empty: the operator's default layer."""
    if target is not None:
        raise ValueError("write the layer index as the magnitude, e.g. layer_deactivation:6")
    return {"layer": _number(value, "layer index", 0, integer=True) if value else None}


def _switch_only(value, target):
    _no_target(target)
    if value != "on":
        raise ValueError(f"takes no magnitude (write just the operator's name, or ':on'); "
                         f"got {value!r}")
    return {}


def _keras_name(with_layer: bool):
    """Parser for a Keras activation/initializer/loss/optimizer name (checked against
    Keras by :func:`bind`, so that parsing needs no TensorFlow)."""
    def parse(value, target):
        if not value:
            raise ValueError("give a name")
        if not with_layer:
            _no_target(target)
            return {"name": value}
        return {"name": value, "layer": _layer(target)}
    return parse


def check_keras_name(mutation: Mutation) -> None:
    """Is the mutation's Keras name (activation, initializer, loss, optimizer) known to Keras?"""
    kind = mutation.operator.keras_kind
    if kind is None:
        return
    import keras

    try:
        getattr(keras, kind).get(mutation.params["name"])
    except (ValueError, TypeError):
        singular = "loss" if kind == "losses" else kind.removesuffix("s")
        raise ProbmutError(f"{mutation.label}: unknown Keras {singular} "
                           f"{mutation.params['name']!r} (see keras.{kind})") from None


def _regulariser_name(value, target):
    from probmut.train.models import REGULARISERS

    if value not in REGULARISERS:
        raise ValueError(f"regulariser must be one of {', '.join(REGULARISERS)}, got {value!r}")
    return {"name": value, "layer": _layer(target)}


def _rate(value, target):
    return {"value": _number(value, "dropout rate", 0, 1, below_high=True),
            "layer": _layer(target)}


def _clip_params(value, target):
    _no_target(target)
    kind, sep, threshold = value.partition("_")
    if not sep or kind not in ("value", "norm"):
        raise ValueError(f"write value_THRESHOLD (clip each gradient value) or norm_THRESHOLD "
                         f"(clip each gradient's norm), e.g. value_0.5; got {value!r}")
    return {"clip": (kind, _number(threshold, "clip threshold", math.ulp(0.0)))}


def _positive(what, integer, low=None):
    def parse(value, target):
        _no_target(target)
        minimum = low if low is not None else (1 if integer else math.ulp(0.0))
        return {"value": _number(value, what, minimum, integer=integer)}
    return parse


# ---------------------------------------------------------------- data operators

def _choose(rng, candidates, k):
    return np.sort(rng.choice(candidates, size=k, replace=False)) if k else np.array([], int)


def _strata(y, task):
    from probmut.train.tasks import strata

    return strata(y, task)


def _pool(y, classes):
    """Samples an operator may touch: all, or those of the given classes."""
    return np.arange(len(y)) if classes is None else np.flatnonzero(np.isin(y, classes))


def change_label(x, y, n_classes, params, rng, task="classification"):
    """Classifiers: ``percent`` of the most frequent class's labels (of class C with
    ``@C``, of all labels with ``@all``) get a random other class; exactly
    ``count(n, percent/100)`` labels change. Continuous targets (DeepCrime's label noise):
    every target gets N(0, (percent/100 x sd of its column)^2) noise."""
    if task != "classification":
        sd = y.reshape(len(y), -1).std(axis=0).reshape(y.shape[1:]) * params["percent"] / 100
        return x, (y + rng.normal(0.0, 1.0, size=y.shape) * sd).astype(y.dtype)
    if params["all_classes"]:
        candidates = np.arange(len(y))
    elif params["classes"] is not None:
        candidates = _pool(y, params["classes"])
    else:
        candidates = np.flatnonzero(y == np.argmax(np.bincount(y, minlength=n_classes)))
    chosen = _choose(rng, candidates, count(len(candidates), params["percent"] / 100))
    y = y.copy()
    y[chosen] = (y[chosen] + rng.integers(1, n_classes, size=chosen.size)) % n_classes
    return x, y


def _delete_per_stratum(x, y, percent, rng, groups, chosen_groups):
    drop = [_choose(rng, np.flatnonzero(groups == g), count(int(np.sum(groups == g)),
                                                            percent / 100))
            for g in chosen_groups]
    keep = np.setdiff1d(np.arange(len(y)), np.concatenate([np.array([], int), *drop]))
    return take(x, keep), y[keep]


def delete_training_data(x, y, n_classes, params, rng, task="classification"):
    """Remove ``percent`` of the training samples of every class (of the classes given
    with ``@C1+C2``; for continuous targets, of every label bucket)."""
    groups = _strata(y, task)
    chosen = np.unique(groups) if params["classes"] is None else params["classes"]
    return _delete_per_stratum(x, y, params["percent"], rng, groups, chosen)


def unbalance_train_data(x, y, n_classes, params, rng, task="classification"):
    """Remove ``percent`` of the samples of each class (label bucket) with fewer samples
    than the average class."""
    groups = _strata(y, task)
    present, counts = np.unique(groups, return_counts=True)
    return _delete_per_stratum(x, y, params["percent"], rng, groups,
                               present[counts < counts.mean()])


def make_output_classes_overlap(x, y, n_classes, params, rng, task="classification"):
    """Copies of ``percent`` of the most frequent class's samples are added with the
    second most frequent class as their label (``@A-B``: from class A to class B)."""
    if params["pair"] is None:
        order = np.argsort(-np.bincount(y, minlength=n_classes), kind="stable")
        source, target = int(order[0]), int(order[1])
    else:
        source, target = params["pair"]
    members = np.flatnonzero(y == source)
    chosen = _choose(rng, members, count(len(members), params["percent"] / 100))
    return concat(x, take(x, chosen)), np.concatenate([y, np.full(chosen.size, target, y.dtype)])


def _first_input(x):
    return x[0] if isinstance(x, tuple) else x


def _with_first_input(x, first):
    return (first, *x[1:]) if isinstance(x, tuple) else first


def add_noise(x, y, n_classes, params, rng, task="classification"):
    """``percent`` of the training inputs get Gaussian noise whose sd is ``percent``% of
    that input's own sd (DeepCrime; the image input of a multi-input model)."""
    chosen = _choose(rng, np.arange(len(y)), count(len(y), params["percent"] / 100))
    images = _first_input(x).copy()
    spread = images[chosen].reshape(chosen.size, -1).std(axis=1) * params["percent"] / 100
    noise = rng.normal(0.0, 1.0, size=images[chosen].shape)
    images[chosen] += (noise * spread.reshape(-1, *[1] * (images.ndim - 1))).astype(images.dtype)
    return _with_first_input(x, images), y


def data_repetition(x, y, n_classes, params, rng, task="classification"):
    """Append a copy of ``percent`` of the training samples (of the classes given with
    ``@C1+C2``) (DeepMutation DR)."""
    pool = _pool(y, params["classes"])
    chosen = _choose(rng, pool, count(len(pool), params["percent"] / 100))
    return concat(x, take(x, chosen)), np.concatenate([y, y[chosen]])


def noise_perturbation(x, y, n_classes, params, rng, task="classification"):
    """Add Gaussian noise (std ``std``, default 0.1 on [0, 1] inputs) to ``percent`` of
    the training inputs (of the classes given with ``@C1+C2``) (DeepMutation NP)."""
    pool = _pool(y, params["classes"])
    chosen = _choose(rng, pool, count(len(pool), params["percent"] / 100))
    images = _first_input(x).copy()
    images[chosen] += rng.normal(0.0, params["std"], size=images[chosen].shape).astype(
        images.dtype)
    return _with_first_input(x, images), y


def data_shuffle(x, y, n_classes, params, rng, task="classification"):
    """Permute the order of ``percent`` of the training samples (DeepMutation DF).

    Keras shuffles every epoch, so this is an equivalent mutant by construction: a
    negative control whose kill rate should match healthy vs healthy."""
    chosen = _choose(rng, np.arange(len(y)), count(len(y), params["percent"] / 100))
    order = np.arange(len(y))
    order[chosen] = rng.permutation(chosen)
    return take(x, order), y[order]


# ---------------------------------------------------------------- training operators

_FROM_PARAMS = object()


def _layer_change(attribute, value=_FROM_PARAMS, key="name"):
    """Set one attribute of the target layer's config (``value``, or ``params[key]``)."""
    def apply(config, params):
        change = (params["layer"], attribute, params[key] if value is _FROM_PARAMS else value)
        return config.replace(layer_changes=(*config.layer_changes, change))
    return apply


def _structure(kind):
    def apply(config, params):
        return config.replace(structure=(*config.structure, (kind, params["layer"])))
    return apply


def _setting(name, key="value"):
    def apply(config, params):
        return config.replace(**{name: params[key]})
    return apply


def _fixed(**settings):
    def apply(config, params):
        return config.replace(**settings)
    return apply


def change_optimisation_function(config, params):
    """Use another Keras optimizer, with its own default learning rate."""
    return config.replace(optimizer=params["name"], learning_rate=None)


# ---------------------------------------------------------------- model operators

def _units(n, ratio, rng, minimum=1):
    return _choose(rng, np.arange(n), min(n, max(minimum, count(n, ratio))))


def _kernel_bias(layer):
    weights = layer.get_weights()
    return weights, weights[0], (weights[1] if len(weights) > 1 else None)


def _fuzz(model, params, rng, sigma):
    layer = model.layers[params["layer"]]
    weights, kernel, _ = _kernel_bias(layer)
    flat = kernel.ravel()  # a copy, written back below
    chosen = _choose(rng, np.arange(flat.size), count(flat.size, params["ratio"]))
    noise = rng.normal(0.0, 1.0, size=chosen.size) * sigma(flat[chosen], flat)
    flat[chosen] += noise.astype(flat.dtype)
    weights[0] = flat.reshape(kernel.shape)
    layer.set_weights(weights)
    return model


def weights_fuzzing(model, params, rng):
    """Add N(0, (scale |w|)^2) noise to ``ratio`` of one layer's kernel weights w
    (the PMT paper's operator; magnitude ``RATIO_SCALE``, e.g. ``0.05_1``)."""
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * np.abs(chosen))


def gaussian_fuzzing(model, params, rng):
    """Add Gaussian noise to ``ratio`` of one layer's kernel weights (DeepMutation GF):
    sd = ``scale`` x the sd of that kernel (``RATIO_SCALE``), or a given sd as in
    DeepMutation (``RATIO_sdSD``)."""
    if params["sd"] is not None:
        return _fuzz(model, params, rng, lambda chosen, flat: params["sd"])
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * flat.std())


def _per_unit(change, minimum=1):
    """Model operator changing a ``ratio`` of a layer's units (the kernel's last axis)."""
    def apply(model, params, rng):
        layer = model.layers[params["layer"]]
        weights, kernel, bias = _kernel_bias(layer)
        change(kernel, bias, _units(kernel.shape[-1], params["ratio"], rng, minimum), rng)
        layer.set_weights(weights)
        return model
    apply.__doc__ = change.__doc__
    return apply


def _freeze(kernel, bias, units, rng):
    """Zero the weights and bias of ``ratio`` of a layer's units/filters (at least one)."""
    kernel[..., units] = 0
    if bias is not None:
        bias[units] = 0


def _invert(kernel, bias, units, rng):
    """Negate the pre-activation of ``ratio`` of a layer's units (DeepMutation NAI)."""
    kernel[..., units] *= -1
    if bias is not None:
        bias[units] *= -1


def _switch(kernel, bias, units, rng):
    """Rotate ``ratio`` of a layer's units (at least two) so each takes the next one's
    weights and bias: their outputs trade places (DeepMutation NS)."""
    rolled = np.roll(units, 1)
    kernel[..., units] = kernel[..., rolled]
    if bias is not None:
        bias[units] = bias[rolled]


def _shuffle_weights(kernel, bias, units, rng):
    """Shuffle the incoming weights of ``ratio`` of a layer's units (DeepMutation WS)."""
    for unit in units:
        column = kernel[..., unit]
        kernel[..., unit] = rng.permutation(column.reshape(-1)).reshape(column.shape)


def next_weighted_layer(model, index: int):
    """The layer that the neurons (units, channels) of layer ``index`` feed, and which
    of its kernel's input rows neuron c reaches: ``(j, rows)`` with ``rows(c)`` the
    indices on that kernel's input axis. Only through a chain of layers that keep the
    channel axis (pooling, dropout, activations, ...) or a ``Flatten`` (channels last);
    ``None`` when the next weighted layer is not reached that way."""
    layers = model.layers
    if not _has_kernel(layers[index]):
        return None
    channels = layers[index].output.shape[-1]
    flattened = False
    for j in range(index + 1, len(layers)):
        layer = layers[j]
        if layer.input is not layers[j - 1].output:  # a branch or a join: not a chain
            return None
        if _has_kernel(layer):
            inputs = layer.input.shape[-1]
            if flattened:
                return j, lambda c, n=inputs: np.arange(c, n, channels)
            return (j, lambda c: np.array([c])) if inputs == channels else None
        if type(layer).__name__ == "Flatten" and not flattened:
            flattened = True
        elif not (_same_shape(layer) or (not flattened and layer.output.shape[-1] == channels)):
            return None
    return None


def neuron_effect_blocking(model, params, rng):
    """Block the effect of ``ratio`` of a hidden layer's neurons (units, channels; at
    least one) on the next layer: every weight from them into it is zeroed
    (DeepMutation NEB). ``@LAYER`` is the layer whose neurons are blocked."""
    index = params["layer"]
    consumer, rows = next_weighted_layer(model, index)
    layer = model.layers[consumer]
    weights, kernel, _ = _kernel_bias(layer)
    neurons = _units(model.layers[index].output.shape[-1], params["ratio"], rng)
    for neuron in neurons:
        kernel[..., rows(neuron), :] = 0  # the input axis is the kernel's second to last
    layer.set_weights(weights)
    return model


def _copy_weights(source, target, skip=()):
    by_name = {layer.name: layer for layer in source.layers}
    for layer in target.layers:
        if layer.name in by_name and layer.name not in skip and layer.weights:
            layer.set_weights(by_name[layer.name].get_weights())


def _clone_replacing(model, index, replacement):
    """A copy of a trained ``model`` with layer ``index`` replaced by ``replacement(layer)``
    (which may set its own weights later); the other layers keep their trained weights."""
    import keras

    target = model.layers[index]
    mutant = keras.models.clone_model(
        model, clone_function=lambda layer: replacement(layer) if layer is target
        else type(layer).from_config(layer.get_config()))
    _copy_weights(model, mutant)
    return mutant


def layer_deactivation(model, params, rng):
    """Replace one hidden layer whose output shape equals its input shape (and which
    acts at inference: not a dropout) by the identity (DeepMutation LD); the other
    layers keep their trained weights."""
    import keras

    return _clone_replacing(model, params["layer"],
                            lambda layer: keras.layers.Identity(name=layer.name))


def remove_activation_trained(model, params, rng):
    """The activation of one trained hidden layer becomes linear; every weight is kept
    (DeepMutation AFRm)."""
    def linear(layer):
        return type(layer).from_config({**layer.get_config(), "activation": "linear"})
    return _clone_replacing(model, params["layer"], linear)


def duplicate_layer(model, params, rng):
    """Insert a copy of one trained hidden layer (its weights too) right after it; the
    layer's output shape must equal its input shape (DeepMutation LAm; Sequential)."""
    import keras

    index = params["layer"]
    layers = [keras.Input(model.inputs[0].shape[1:], dtype=model.inputs[0].dtype)]
    for i, layer in enumerate(model.layers):
        layers.append(type(layer).from_config(layer.get_config()))
        if i == index:
            layers.append(type(layer).from_config({**layer.get_config(),
                                                   "name": layer.name + "_copy"}))
    mutant = keras.Sequential(layers, name=model.name)
    _copy_weights(model, mutant)
    copy = mutant.get_layer(model.layers[index].name + "_copy")
    copy.set_weights(model.layers[index].get_weights())
    return mutant


# ---------------------------------------------------------------- which layers fit

def _has_kernel(layer):
    return getattr(layer, "kernel", None) is not None


def _is_input(layer):
    return type(layer).__name__ == "InputLayer"


def _single_input(layer):
    return not _is_input(layer) and not isinstance(layer.input, list | tuple)


def _same_shape(layer):
    return _single_input(layer) and tuple(layer.input.shape) == tuple(layer.output.shape)


def identity_at_inference(layer) -> bool:
    """Does ``layer`` pass its input through unchanged at inference (a dropout, a
    Gaussian noise layer, an Identity)? Checked on a random input of its shape."""
    if not _same_shape(layer):
        return False
    shape = [4 if d is None else d for d in layer.input.shape]
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    return bool(np.allclose(np.asarray(layer(x, training=False)), x))


def _activation_name(layer):
    activation = getattr(layer, "activation", None)
    return getattr(activation, "__name__", None)


def _sequential(model):
    import keras

    return isinstance(model, keras.Sequential)


def _removable(layer, model):
    """Removing the layer leaves a Sequential model whose shapes still fit."""
    if not _sequential(model):
        return False
    import keras

    index = model.layers.index(layer)
    try:
        keras.Sequential([keras.Input(model.inputs[0].shape[1:], dtype=model.inputs[0].dtype)]
                         + [type(other).from_config(other.get_config())
                            for i, other in enumerate(model.layers) if i != index])
    except (ValueError, TypeError):
        return False
    return True


#: Which layers an operator may target: (words for messages, fits(layer, model), default
#: preference or None). Without @LAYER the first hidden layer (not an input or output
#: layer) that fits, and passes the preference if one is given, is used.
LAYER_KIND = {
    "activation": ("a layer with an activation",
                   lambda layer, model: _activation_name(layer) is not None),
    "linear_activation": ("a layer with a linear activation (no activation)",
                          lambda layer, model: _activation_name(layer) == "linear"),
    "nonlinear_activation": ("a layer with a non-linear activation",
                             lambda layer, model: _activation_name(layer) not in (None, "linear")),
    "kernel_initializer": ("a layer with a kernel initializer",
                           lambda layer, model: hasattr(layer, "kernel_initializer")),
    "kernel": ("a layer with a kernel (Dense, Conv)", lambda layer, model: _has_kernel(layer)),
    "no_regulariser": ("a layer with a kernel and no kernel regulariser",
                       lambda layer, model: _has_kernel(layer)
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
                          lambda layer, model: _same_shape(layer)
                          and not identity_at_inference(layer)),
    "duplicable": ("a layer of a Sequential model whose output shape equals its input "
                   "shape and which acts at inference",
                   lambda layer, model: _sequential(model) and _same_shape(layer)
                   and not identity_at_inference(layer)),
    "removable": ("a layer of a Sequential model whose removal keeps the shapes fitting",
                  _removable),
    "addable": ("a layer of a Sequential model after which a fresh copy of it fits",
                lambda layer, model: _sequential(model) and _single_input(layer)),
}
#: A preference among fitting layers for the default target (DeepMutation's LR removes
#: layers whose input and output shapes agree; LAs copies a layer with weights).
_PREFER = {"removable": _same_shape, "addable": _has_kernel}


# ---------------------------------------------------------------- registry

@dataclass(frozen=True)
class Operator:
    """One mutation operator. ``magnitude`` says what ``VALUE[@TARGET]`` means,
    ``default`` is the documented default magnitude, ``target`` the default target;
    ``by_design`` names a flag the operator earns by construction, with why."""

    name: str
    level: str  # "data", "training" or "model"
    parse: Callable[[str, str | None], dict]
    apply: Callable
    magnitude: str
    default: str
    source: str
    target: str = ""
    aliases: tuple[str, ...] = ()
    layer_kind: str | None = None  # which layers it may target, see LAYER_KIND
    tasks: tuple[str, ...] = ALL_TASKS
    needs_validation: bool = False
    by_design: tuple[str, str] | None = None
    keras_kind: str | None = None  # "activations", ...: the name in params is Keras'

    @property
    def paired(self) -> bool:
        return self.level == "model"

    def describe(self) -> dict:
        """The operator as ``--list-operators --json`` prints it."""
        return {"name": self.name, "aliases": list(self.aliases), "level": self.level,
                "magnitude": self.magnitude, "default": self.default,
                "default_target": self.target or "first hidden " + LAYER_KIND[self.layer_kind][0][2:],
                "source": self.source, "tasks": list(self.tasks),
                "note": (f"{self.by_design[0]} by design: {self.by_design[1]}"
                         if self.by_design else "")}


_DC, _DM, _PMT = "DeepCrime", "DeepMutation", "PMT"
_HIDDEN = "first hidden layer"

OPERATORS = {op.name: op for op in [
    # -- data (source level)
    Operator("change_label", "data", _change_label_params, change_label,
             "P[@C|@all]: P% of the most frequent class's labels (class C's, all labels') get "
             "another random class; regression/recommendation: N(0, (P% x sd)^2) label noise",
             "10", f"{_DC}, {_DM}", "the most frequent class", aliases=("LE",)),
    Operator("delete_training_data", "data", _local_percent, delete_training_data,
             "P[@C1+C2]: remove P% of every class (of classes C1, C2; label buckets for "
             "continuous targets)", "10", f"{_DC}, {_DM}", "every class", aliases=("DM",)),
    Operator("unbalance_train_data", "data", _percent, unbalance_train_data,
             "P: remove P% of each class with fewer samples than the average", "50", _DC,
             "the classes below the average size"),
    Operator("make_output_classes_overlap", "data", _overlap_params,
             make_output_classes_overlap,
             "P[@A-B]: copies of P% of class A's samples are added labelled B (default: the "
             "two most frequent classes)", "10", _DC, "the two most frequent classes",
             tasks=("classification",)),
    Operator("add_noise", "data", _percent, add_noise,
             "P: P% of the inputs get Gaussian noise of sd P% x the input's own sd", "10", _DC,
             "the (image) inputs", tasks=IMAGE_TASKS),
    Operator("data_repetition", "data", _local_percent, data_repetition,
             "P[@C1+C2]: append copies of P% of the samples (of classes C1, C2)", "10", _DM,
             "all samples", aliases=("DR",)),
    Operator("noise_perturbation", "data", _noise_params, noise_perturbation,
             "P[_SD][@C1+C2]: P% of the inputs (of classes C1, C2) get N(0, SD^2) noise "
             "(SD 0.1)", "10", _DM, "all samples", aliases=("NP",), tasks=IMAGE_TASKS),
    Operator("data_shuffle", "data", _percent, data_shuffle,
             "P: permute the order of P% of the samples", "10", _DM, "all samples",
             aliases=("DF",), by_design=("equivalent", "Keras reshuffles the training data "
                                                       "every epoch")),
    # -- training (source level)
    Operator("change_activation_function", "training", _keras_name(True),
             _layer_change("activation"), "NAME[@LAYER]: the layer's activation becomes NAME",
             "elu", _DC, layer_kind="activation", keras_kind="activations"),
    Operator("add_activation_function", "training", _keras_name(True),
             _layer_change("activation"),
             "NAME[@LAYER]: a layer without activation (linear) gets NAME", "relu", _DC,
             layer_kind="linear_activation", keras_kind="activations"),
    Operator("remove_activation_function", "training", _layer_only,
             _layer_change("activation", "linear"),
             "[LAYER]: the layer's activation becomes linear (retrained)", "", f"{_DC}, {_DM}",
             aliases=("AFRs",), layer_kind="nonlinear_activation"),
    Operator("change_weights_initialisation", "training", _keras_name(True),
             _layer_change("kernel_initializer"),
             "NAME[@LAYER]: the layer's kernel initializer becomes NAME", "he_normal", _DC,
             layer_kind="kernel_initializer", keras_kind="initializers"),
    Operator("add_weights_regularisation", "training", _regulariser_name,
             _layer_change("kernel_regularizer"),
             "l1|l2|l1_l2[@LAYER]: a layer without one gets a kernel regulariser (factor "
             "0.01)", "l2", _DC, layer_kind="no_regulariser"),
    Operator("change_weights_regularisation", "training", _regulariser_name,
             _layer_change("kernel_regularizer"),
             "l1|l2|l1_l2[@LAYER]: the layer's kernel regulariser becomes another", "l1", _DC,
             layer_kind="regulariser"),
    Operator("remove_weights_regularisation", "training", _layer_only,
             _layer_change("kernel_regularizer", None),
             "[LAYER]: the layer loses its kernel regulariser", "", _DC,
             layer_kind="regulariser"),
    Operator("change_dropout_rate", "training", _rate, _layer_change("rate", key="value"),
             "RATE[@LAYER]: a Dropout layer's rate becomes RATE (in [0, 1))", "0.75", _DC,
             layer_kind="dropout"),
    Operator("add_bias", "training", _layer_only, _layer_change("use_bias", True),
             "[LAYER]: a layer without a bias gets one", "", _DC, layer_kind="no_bias"),
    Operator("remove_bias", "training", _layer_only, _layer_change("use_bias", False),
             "[LAYER]: the layer loses its bias", "", _DC, layer_kind="bias"),
    Operator("change_loss_function", "training", _keras_name(False),
             _setting("loss", "name"), "NAME: a Keras loss", "mean_squared_error", _DC,
             "the model's loss", keras_kind="losses"),
    Operator("change_optimisation_function", "training", _keras_name(False),
             change_optimisation_function,
             "NAME: a Keras optimizer, with its default learning rate", "rmsprop", _DC,
             "the model's optimizer", keras_kind="optimizers"),
    Operator("change_learning_rate", "training", _positive("learning rate", False),
             _setting("learning_rate"), "RATE: the learning rate", "0.01", _DC,
             "the optimizer"),
    Operator("change_epochs", "training", _positive("epochs", True), _setting("epochs"),
             "N: the number of epochs", "1", _DC, "training"),
    Operator("change_batch_size", "training", _positive("batch size", True),
             _setting("batch_size"), "N: the batch size", "64", _DC, "training"),
    Operator("disable_batching", "training", _switch_only, _fixed(full_batch=True),
             "(none): one batch of the whole training set per epoch", "on", _DC, "training"),
    Operator("change_gradient_clipping", "training", _clip_params, _setting("clip", "clip"),
             "value_T|norm_T: clip every gradient value to [-T, T] | every gradient's norm "
             "to T", "value_0.01", _DC, "the optimizer"),
    Operator("change_patience", "training", _positive("patience", True, low=0),
             _setting("patience"),
             "P: early stopping on the validation loss with patience P epochs (needs "
             "--validation-split)", "1", _DC, "training", needs_validation=True),
    Operator("remove_validation_set", "training", _switch_only, _fixed(validation=False),
             "(none): the validation set is trained on too, no early stopping (needs "
             "--validation-split)", "on", _DC, "training", needs_validation=True),
    Operator("remove_layer", "training", _layer_only, _structure("remove"),
             "[LAYER]: the layer is removed (retrained)", "", _DM, aliases=("LR",),
             layer_kind="removable",
             target=f"{_HIDDEN} whose output shape equals its input shape"),
    Operator("add_layer", "training", _layer_only, _structure("add"),
             "[LAYER]: a fresh copy of the layer is added right after it (retrained)", "", _DM,
             aliases=("LAs",), layer_kind="addable", target=f"{_HIDDEN} with a kernel"),
    # -- model level
    Operator("weights_fuzzing", "model", _ratio_scale, weights_fuzzing,
             "RATIO_SCALE[@LAYER]: RATIO of the kernel weights w get N(0, (SCALE |w|)^2) noise",
             "0.1_1", _PMT, layer_kind="kernel"),
    Operator("gaussian_fuzzing", "model", _gaussian_params, gaussian_fuzzing,
             "RATIO_SCALE|RATIO_sdSD[@LAYER]: RATIO of the kernel weights get Gaussian noise of "
             "sd SCALE x the kernel's sd, or of sd SD (DeepMutation's form)", "0.1_1", _DM,
             aliases=("GF",), layer_kind="kernel"),
    Operator("neurons_freezing", "model", _ratio, _per_unit(_freeze),
             "RATIO[@LAYER]: RATIO of the layer's units get kernel and bias zeroed", "0.1",
             _PMT, layer_kind="kernel"),
    Operator("weight_shuffling", "model", _ratio, _per_unit(_shuffle_weights),
             "RATIO[@LAYER]: the incoming weights of RATIO of the units are shuffled", "0.1",
             _DM, aliases=("WS",), layer_kind="kernel"),
    Operator("neuron_effect_blocking", "model", _ratio, neuron_effect_blocking,
             "RATIO[@LAYER]: the weights from RATIO of the layer's neurons into the next "
             "layer are zeroed", "0.1", _DM, aliases=("NEB",), layer_kind="neurons"),
    Operator("neuron_activation_inverse", "model", _ratio, _per_unit(_invert),
             "RATIO[@LAYER]: kernel and bias of RATIO of the units negated", "0.1", _DM,
             aliases=("NAI",), layer_kind="kernel"),
    Operator("neuron_switch", "model", _ratio, _per_unit(_switch, minimum=2),
             "RATIO[@LAYER]: RATIO of the units (at least two) trade weights cyclically",
             "0.1", _DM, aliases=("NS",), layer_kind="kernel"),
    Operator("layer_deactivation", "model", _layer_only, layer_deactivation,
             "[LAYER]: the layer becomes the identity", "", _DM, aliases=("LD",),
             layer_kind="active_same_shape"),
    Operator("duplicate_layer", "model", _layer_only, duplicate_layer,
             "[LAYER]: a copy of the trained layer is inserted after it", "", _DM,
             aliases=("LAm",), layer_kind="duplicable"),
    Operator("remove_activation_trained", "model", _layer_only, remove_activation_trained,
             "[LAYER]: the trained layer's activation becomes linear", "", _DM,
             aliases=("AFRm",), layer_kind="nonlinear_activation"),
]}

#: DeepMutation's short names -> (operator, the @target they imply when none is given).
ALIASES = {alias: (op.name, "all" if alias == "LE" else None)
           for op in OPERATORS.values() for alias in op.aliases}


@dataclass(frozen=True)
class Mutation:
    """One operator at one magnitude: one mutant population, stored as ``{stem}.csv``.
    ``equivalent`` says why the mutant is equivalent to the healthy model before any
    training (an unchanged setting or data), if it is."""

    operator: Operator
    magnitude: str
    params: dict[str, Any] = field(hash=False, compare=False)
    equivalent: str = field(default="", compare=False)

    @property
    def stem(self) -> str:
        return f"{self.operator.name}_{self.magnitude}"

    @property
    def label(self) -> str:
        """How error messages name it: as written on the command line."""
        return f"--mutation {self.operator.name}:{self.magnitude}".rstrip(":")


def parse_mutations(text: str) -> list[Mutation]:
    """``OPERATOR[:MAG1,MAG2,...]`` -> one :class:`Mutation` per magnitude (layers unbound).

    ``OPERATOR`` may be a DeepMutation short name (:data:`ALIASES`); without magnitudes
    the operator's documented default is used.
    """
    name, sep, magnitudes = text.partition(":")
    name, implied = ALIASES.get(name.strip(), (name.strip(), None))
    if name not in OPERATORS:
        raise ProbmutError(f"unknown mutation operator {name!r}; known: {', '.join(OPERATORS)} "
                           f"(DeepMutation's names: {', '.join(ALIASES)}); see probmut train "
                           "--list-operators")
    operator = OPERATORS[name]
    if sep and not magnitudes.strip():
        raise ProbmutError(f"--mutation {text!r}: give magnitudes as {name}:MAG1,MAG2, or no "
                           f"':' for the default ({name}:{operator.default})")
    mutations = []
    for magnitude in (m.strip() for m in magnitudes.split(",")) if sep else [operator.default]:
        if (not magnitude and sep) or any(c in magnitude for c in "/\\ "):
            raise ProbmutError(f"--mutation {text!r}: empty magnitude or one with a path "
                               "separator or space")
        value, _, target = magnitude.partition("@")
        if implied and not target:
            target, magnitude = implied, f"{magnitude}@{implied}"
        try:
            params = operator.parse(value, target or None)
        except ValueError as error:
            raise ProbmutError(f"--mutation {name}:{magnitude}: {error}") from None
        mutations.append(Mutation(operator, magnitude, params))
    return mutations


def _hidden(layer, model) -> bool:
    outputs = {id(t) for t in model.outputs}
    return not _is_input(layer) and id(layer.output) not in outputs


def bind(mutation: Mutation, model, task: str = "classification") -> Mutation:
    """Check (and default) the target layer of ``mutation`` against a built ``model`` of
    ``task``.

    Without ``@LAYER`` the first hidden layer of the operator's kind is used (and, for
    layer operators written without a magnitude, becomes the magnitude). Returns the
    mutation with ``params["layer"]`` set; raises :class:`ProbmutError` if impossible.
    """
    operator = mutation.operator
    label = mutation.label
    check_keras_name(mutation)
    if task not in operator.tasks:
        raise ProbmutError(f"{label}: {operator.name} is only for "
                           f"{' and '.join(operator.tasks)} models; this is a {task} model")
    if task != "classification" and mutation.params.get("classes"):
        raise ProbmutError(f"{label}: class targets (@C) are for classifiers; this is a {task} "
                           "model")
    kind = operator.layer_kind
    if kind is None:
        return mutation
    from probmut.train.models import layer_table

    what, fits = LAYER_KIND[kind]
    layers = model.layers
    index = mutation.params["layer"]
    if index is None:
        candidates = [i for i, layer in enumerate(layers)
                      if _hidden(layer, model) and fits(layer, model)]
        preferred = [i for i in candidates if _PREFER.get(kind, lambda layer: True)(layers[i])]
        index = (preferred or candidates or [None])[0]
        problem = None if index is not None else f"the model has no hidden layer that is {what}"
    elif index >= len(layers):
        problem = f"layer {index} is out of range (the model has {len(layers)} layers)"
    elif _is_input(layers[index]) or not fits(layers[index], model):
        problem = f"layer {index} ({layers[index].name}) is not {what}"
    else:
        problem = None
    if problem:
        raise ProbmutError(f"{label}: {problem}; layers: {layer_table(model)}")
    magnitude = mutation.magnitude or str(index)
    return Mutation(operator, magnitude, {**mutation.params, "layer": index},
                    mutation.equivalent)
