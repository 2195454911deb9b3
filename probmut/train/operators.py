"""Mutation operators: small pure functions of (data | training settings | model, magnitude).

Three levels:

* ``data`` (source level, before training): ``apply(x, y, n_classes, params, rng) -> (x, y)``
* ``training`` (source level, settings): ``apply(config, params) -> config``
* ``model`` (model level, on a trained healthy instance, paired):
  ``apply(model, params, rng) -> model``

A magnitude is written ``VALUE[@TARGET]``: ``3.1``, ``elu@1`` (layer 1),
``0.05_1`` (ratio 0.05, scale 1), ``12.5@all``. Layer-level operators without
``@LAYER`` act on the first layer that fits (see ``LAYER_KIND``). Bad magnitudes
raise :class:`ProbmutError` from :func:`parse_mutations`/:func:`bind` before training.

Shares are rounded half up: ``count(n, share) = floor(share * n + 0.5)``; operators on
units touch at least one unit (two for ``neuron_switch``).

Examples
--------
>>> import numpy as np
>>> [m.stem for m in parse_mutations("delete_training_data:3.1,9.29")]
['delete_training_data_3.1', 'delete_training_data_9.29']
>>> y = np.repeat(np.arange(3), 10)
>>> x, y2 = delete_training_data(y[:, None], y, 3, {"percent": 20.0}, np.random.default_rng(0))
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


def count(n: int, share: float) -> int:
    """Number of items for a share in [0, 1] of ``n``, rounded half up.

    >>> count(10, 0.25), count(450, 0.031)
    (3, 14)
    """
    return int(math.floor(share * n + 0.5))


# ---------------------------------------------------------------- magnitude parsing

def _number(text: str, what: str, low: float, high: float = math.inf, *, integer=False):
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{what} must be {'an integer' if integer else 'a number'}, "
                         f"got {text!r}") from None
    if not low <= value <= high or not math.isfinite(value):
        bound = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
        raise ValueError(f"{what} must be {bound}, got {text}")
    return value


def _percent(value, target):
    if target is not None:
        raise ValueError("takes no @target")
    return {"percent": _number(value, "percent", 0, 100)}


def _ratio_scale(value, target):
    ratio, sep, scale = value.partition("_")
    if not sep:
        raise ValueError(f"write RATIO_SCALE as in the paper, e.g. 0.05_1; got {value!r}")
    return {"ratio": _number(ratio, "ratio", 0, 1), "scale": _number(scale, "scale", 0),
            "layer": _layer(target)}


def _ratio(value, target):
    return {"ratio": _number(value, "ratio", 0, 1), "layer": _layer(target)}


def _layer(target):
    return None if target is None else _number(target, "layer index", 0, integer=True)


def _change_label_params(value, target):
    if target not in (None, "all"):
        raise ValueError(f"the only target is @all (all classes), got @{target}")
    return {"percent": _number(value, "percent", 0, 100), "all_classes": target == "all"}


def _noise_params(value, target):
    percent, _, std = value.partition("_")
    params = _percent(percent, target)
    params["std"] = _number(std, "noise std", 0) if std else 0.1
    return params


def _keras_name(kind: str, with_layer: bool):
    """Parser for a Keras activation/initializer/loss/optimizer name, checked by Keras."""
    def parse(value, target):
        import keras

        getter = getattr(keras, kind).get
        try:
            getter(value)
        except (ValueError, TypeError):
            raise ValueError(f"unknown Keras {kind[:-1]} {value!r} (see keras.{kind})") from None
        if target is not None and not with_layer:
            raise ValueError("takes no @target")
        return {"name": value, "layer": _layer(target)} if with_layer else {"name": value}
    return parse


def _positive(what, integer):
    def parse(value, target):
        if target is not None:
            raise ValueError("takes no @target")
        low = 1 if integer else math.ulp(0.0)
        return {"value": _number(value, what, low, integer=integer)}
    return parse


def _layer_only(value, target):
    if target is not None:
        raise ValueError("write the layer index as the magnitude, e.g. layer_deactivation:6")
    return {"layer": _number(value, "layer index", 0, integer=True)}


# ---------------------------------------------------------------- data operators

def _choose(rng, candidates, k):
    return np.sort(rng.choice(candidates, size=k, replace=False)) if k else np.array([], int)


def change_label(x, y, n_classes, params, rng):
    """Give ``percent`` of the most frequent class's labels (or of all labels, ``@all``)
    a random different class. Exactly ``count(n, percent/100)`` labels change."""
    if params["all_classes"]:
        candidates = np.arange(len(y))
    else:
        candidates = np.flatnonzero(y == np.argmax(np.bincount(y, minlength=n_classes)))
    chosen = _choose(rng, candidates, count(len(candidates), params["percent"] / 100))
    y = y.copy()
    y[chosen] = (y[chosen] + rng.integers(1, n_classes, size=chosen.size)) % n_classes
    return x, y


def _delete_per_class(x, y, params, rng, classes):
    drop = [_choose(rng, np.flatnonzero(y == c), count(int(np.sum(y == c)), params["percent"] / 100))
            for c in classes]
    keep = np.setdiff1d(np.arange(len(y)), np.concatenate([np.array([], int), *drop]))
    return x[keep], y[keep]


def delete_training_data(x, y, n_classes, params, rng):
    """Remove ``percent`` of the training samples of every class."""
    return _delete_per_class(x, y, params, rng, np.unique(y))


def unbalance_train_data(x, y, n_classes, params, rng):
    """Remove ``percent`` of the samples of each class with fewer samples than average."""
    counts = np.bincount(y, minlength=n_classes)
    present = np.flatnonzero(counts)
    return _delete_per_class(x, y, params, rng, present[counts[present] < counts[present].mean()])


def data_repetition(x, y, n_classes, params, rng):
    """Append a copy of ``percent`` of the training samples (DeepMutation DR)."""
    chosen = _choose(rng, np.arange(len(y)), count(len(y), params["percent"] / 100))
    return np.concatenate([x, x[chosen]]), np.concatenate([y, y[chosen]])


def noise_perturbation(x, y, n_classes, params, rng):
    """Add Gaussian noise (std ``std``, default 0.1 on [0, 1] inputs) to ``percent`` of
    the training inputs (DeepMutation NP); magnitude ``PERCENT`` or ``PERCENT_STD``."""
    chosen = _choose(rng, np.arange(len(y)), count(len(y), params["percent"] / 100))
    x = x.copy()
    x[chosen] += rng.normal(0.0, params["std"], size=x[chosen].shape).astype(x.dtype)
    return x, y


def data_shuffle(x, y, n_classes, params, rng):
    """Permute the order of ``percent`` of the training samples (DeepMutation DS).

    Keras shuffles every epoch, so this is expected to be an equivalent mutant: a
    negative control whose kill rate should match healthy vs healthy."""
    chosen = _choose(rng, np.arange(len(y)), count(len(y), params["percent"] / 100))
    order = np.arange(len(y))
    order[chosen] = rng.permutation(chosen)
    return x[order], y[order]


# ---------------------------------------------------------------- training operators

def _layer_change(attribute):
    def apply(config, params):
        change = (params["layer"], attribute, params["name"])
        return config.replace(layer_changes=(*config.layer_changes, change))
    return apply


def _setting(name, key="value"):
    def apply(config, params):
        return config.replace(**{name: params[key]})
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
    """Add N(0, (scale sd(W))^2) noise to ``ratio`` of one layer's kernel weights, sd(W)
    the standard deviation of that kernel (DeepMutation GF; magnitude ``RATIO_SCALE``)."""
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * flat.std())


def _per_unit(change, minimum=1, axis=-1):
    """Model operator changing a ``ratio`` of a layer's units (kernel axis ``axis``)."""
    def apply(model, params, rng):
        layer = model.layers[params["layer"]]
        weights, kernel, bias = _kernel_bias(layer)
        units = _units(kernel.shape[axis], params["ratio"], rng, minimum)
        change(np.moveaxis(kernel, axis, -1), bias, units, rng)
        layer.set_weights(weights)
        return model
    apply.__doc__ = change.__doc__
    return apply


def _freeze(kernel, bias, units, rng):
    """Zero the weights and bias of ``ratio`` of a layer's units/filters (at least one)."""
    kernel[..., units] = 0
    if bias is not None:
        bias[units] = 0


def _block_inputs(kernel, inputs, units, rng):
    """Zero every weight leaving ``ratio`` of the previous layer's neurons (channels) into
    this layer, so they no longer affect it (DeepMutation NEB)."""
    kernel[..., units] = 0


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


def layer_deactivation(model, params, rng):
    """Replace one layer whose output shape equals its input shape by the identity
    (DeepMutation LD); the other layers keep their trained weights."""
    import keras

    target = model.layers[params["layer"]]
    mutant = keras.models.clone_model(
        model, clone_function=lambda layer: keras.layers.Identity(name=layer.name)
        if layer is target else type(layer).from_config(layer.get_config()))
    for old, new in zip(model.layers, mutant.layers, strict=True):
        if old is not target:
            new.set_weights(old.get_weights())
    return mutant


# ---------------------------------------------------------------- registry

@dataclass(frozen=True)
class Operator:
    name: str
    level: str  # "data", "training" or "model"
    parse: Callable[[str, str | None], dict]
    apply: Callable
    layer_kind: str | None = None  # which layers it may target, see LAYER_KIND

    @property
    def paired(self) -> bool:
        return self.level == "model"


def _has_kernel(layer):
    return hasattr(layer, "kernel") and getattr(layer, "kernel", None) is not None


LAYER_KIND = {
    "activation": ("a layer with an activation", lambda layer: hasattr(layer, "activation")),
    "kernel_initializer": ("a layer with a kernel initializer",
                           lambda layer: hasattr(layer, "kernel_initializer")),
    "kernel": ("a layer with a kernel (Dense, Conv)", _has_kernel),
    "same_shape": ("a layer whose output shape equals its input shape",
                   lambda layer: tuple(layer.input.shape) == tuple(layer.output.shape)),
}

OPERATORS = {op.name: op for op in [
    Operator("change_label", "data", _change_label_params, change_label),
    Operator("delete_training_data", "data", _percent, delete_training_data),
    Operator("unbalance_train_data", "data", _percent, unbalance_train_data),
    Operator("data_repetition", "data", _percent, data_repetition),
    Operator("noise_perturbation", "data", _noise_params, noise_perturbation),
    Operator("data_shuffle", "data", _percent, data_shuffle),
    Operator("change_activation_function", "training", _keras_name("activations", True),
             _layer_change("activation"), "activation"),
    Operator("change_weights_initialisation", "training", _keras_name("initializers", True),
             _layer_change("kernel_initializer"), "kernel_initializer"),
    Operator("change_loss_function", "training", _keras_name("losses", False),
             _setting("loss", "name")),
    Operator("change_optimisation_function", "training", _keras_name("optimizers", False),
             change_optimisation_function),
    Operator("change_learning_rate", "training", _positive("learning rate", False),
             _setting("learning_rate")),
    Operator("change_epochs", "training", _positive("epochs", True), _setting("epochs")),
    Operator("change_batch_size", "training", _positive("batch size", True),
             _setting("batch_size")),
    Operator("weights_fuzzing", "model", _ratio_scale, weights_fuzzing, "kernel"),
    Operator("gaussian_fuzzing", "model", _ratio_scale, gaussian_fuzzing, "kernel"),
    Operator("neurons_freezing", "model", _ratio, _per_unit(_freeze), "kernel"),
    Operator("weight_shuffling", "model", _ratio, _per_unit(_shuffle_weights), "kernel"),
    Operator("neuron_effect_blocking", "model", _ratio, _per_unit(_block_inputs, axis=-2),
             "kernel"),
    Operator("neuron_activation_inverse", "model", _ratio, _per_unit(_invert), "kernel"),
    Operator("neuron_switch", "model", _ratio, _per_unit(_switch, minimum=2), "kernel"),
    Operator("layer_deactivation", "model", _layer_only, layer_deactivation, "same_shape"),
]}


@dataclass(frozen=True)
class Mutation:
    """One operator at one magnitude: one mutant population, stored as ``{stem}.csv``."""

    operator: Operator
    magnitude: str
    params: dict[str, Any] = field(hash=False, compare=False)

    @property
    def stem(self) -> str:
        return f"{self.operator.name}_{self.magnitude}"


def parse_mutations(text: str) -> list[Mutation]:
    """``OPERATOR:MAG1,MAG2,...`` -> one :class:`Mutation` per magnitude (unbound layers)."""
    name, sep, magnitudes = text.partition(":")
    name = name.strip()
    if name not in OPERATORS:
        raise ProbmutError(f"unknown mutation operator {name!r}; known: {', '.join(OPERATORS)}")
    if not sep or not magnitudes.strip():
        raise ProbmutError(f"--mutation {text!r}: give magnitudes as {name}:MAG1,MAG2")
    mutations = []
    for magnitude in (m.strip() for m in magnitudes.split(",")):
        if not magnitude or any(c in magnitude for c in "/\\ "):
            raise ProbmutError(f"--mutation {text!r}: empty magnitude or one with a path "
                               "separator or space")
        value, _, target = magnitude.partition("@")
        try:
            params = OPERATORS[name].parse(value, target or None)
        except ValueError as error:
            raise ProbmutError(f"--mutation {name}:{magnitude}: {error}") from None
        mutations.append(Mutation(OPERATORS[name], magnitude, params))
    return mutations


def bind(mutation: Mutation, model) -> Mutation:
    """Check (and default) the target layer of ``mutation`` against a built ``model``.

    Without ``@LAYER`` the first layer of the operator's kind is used. Returns the
    mutation with ``params["layer"]`` set; raises :class:`ProbmutError` if impossible.
    """
    kind = mutation.operator.layer_kind
    if kind is None:
        return mutation
    from probmut.train.models import layer_table

    what, fits = LAYER_KIND[kind]
    layers = model.layers
    index = mutation.params["layer"]
    if index is None:
        index = next((i for i, layer in enumerate(layers[:-1]) if fits(layer)), None)
        problem = None if index is not None else f"the model has no hidden layer that is {what}"
    elif index >= len(layers):
        problem = f"layer {index} is out of range (the model has {len(layers)} layers)"
    elif not fits(layers[index]):
        problem = f"layer {index} ({layers[index].name}) is not {what}"
    else:
        problem = None
    if problem:
        raise ProbmutError(f"--mutation {mutation.operator.name}:{mutation.magnitude}: "
                           f"{problem}; layers: {layer_table(model)}")
    return Mutation(mutation.operator, mutation.magnitude, {**mutation.params, "layer": index})
