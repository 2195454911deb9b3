"""Model-level operators (on a trained healthy instance, no retraining):
``apply(model, params, rng) -> model``.

Weight and unit operators act on one layer (``@LAYER``) or on the whole network
(``@network``: every layer with a kernel at once). Over the network the count is
taken of all the network's weights or units together and drawn uniformly from all of
them, as DeepMutation++ samples (so each layer gets what the draw gives it, often
nothing in a small layer). Counts are truncated as DeepMutation++ and PMT count them,
with at least one item when the ratio is above 0 (DeepMutation++, PMT's
``neurons_freezing``; PMT's ``weights_fuzzing`` has no minimum).

Examples
--------
>>> picks = select([10, 30, 60], 0.1, np.random.default_rng(0), minimum=1)
>>> sum(len(p) for p in picks)   # int(100 x 0.1) positions over the three pools
10
"""

from __future__ import annotations

import numpy as np

from probmut.train.operators.data import choose
from probmut.train.operators.layers import fitting, next_weighted_layer, units
from probmut.train.operators.magnitudes import NETWORK, count


def scope(model, params, kind: str) -> list[int]:
    """The layers a weight or unit operator acts on: ``@LAYER``'s, or (``@network``)
    every layer of ``kind``."""
    if params["layer"] == NETWORK:
        return fitting(model, kind, hidden_only=False)
    return [params["layer"]]


def select(sizes, ratio: float, rng, minimum: int = 0) -> list[np.ndarray]:
    """Positions chosen in pools of the given ``sizes`` laid end to end:
    ``count(sum(sizes), ratio)`` (at least ``minimum`` when ``ratio`` > 0) drawn
    uniformly without replacement from all of them at once; one sorted array of
    positions per pool."""
    total = int(sum(sizes))
    k = count(total, ratio)
    if ratio > 0:
        k = max(k, minimum)
    chosen = choose(rng, np.arange(total), min(k, total))
    bounds = np.cumsum([0, *sizes])
    return [chosen[(chosen >= low) & (chosen < high)] - low
            for low, high in zip(bounds[:-1], bounds[1:], strict=True)]


def _fuzz(model, params, rng, sd, minimum):
    """Add N(0, sd(chosen weights, kernel)^2) noise to ``ratio`` of the kernel weights."""
    layers = [model.layers[i] for i in scope(model, params, "kernel")]
    weights = [layer.get_weights() for layer in layers]
    picks = select([w[0].size for w in weights], params["ratio"], rng, minimum)
    for layer, values, chosen in zip(layers, weights, picks, strict=True):
        if chosen.size:
            flat = values[0].reshape(-1)  # a view of the copy get_weights made
            noise = rng.normal(0.0, 1.0, size=chosen.size) * sd(flat[chosen], flat)
            flat[chosen] += noise.astype(flat.dtype)
            layer.set_weights(values)
    return model


def weights_fuzzing(model, params, rng):
    """Add N(0, (scale |w|)^2) noise to ``ratio`` of the kernel weights w (PMT's
    operator; magnitude ``RATIO_SCALE``, e.g. ``0.05_1``)."""
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * np.abs(chosen),
                 minimum=0)


def gaussian_fuzzing(model, params, rng):
    """Fuzz ``ratio`` of the kernel weights w to N(w, sd^2) (DeepMutation GF): sd given
    (``RATIO_sdSD``), or ``scale`` x the sd of the weight's kernel (``RATIO_SCALE``)."""
    if params["sd"] is not None:
        return _fuzz(model, params, rng, lambda chosen, flat: params["sd"], minimum=1)
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * flat.std(),
                 minimum=1)


def per_unit(change, kind="kernel"):
    """Model operator changing ``ratio`` of the units (the kernel's last axis) of the
    layers in scope, at least one."""
    def apply(model, params, rng):
        layers = [model.layers[i] for i in scope(model, params, kind)]
        picks = select([units(layer) for layer in layers], params["ratio"], rng, minimum=1)
        for layer, chosen in zip(layers, picks, strict=True):
            if chosen.size:
                weights = layer.get_weights()
                change(weights[0], weights[1] if len(weights) > 1 else None, chosen, rng)
                layer.set_weights(weights)
        return model
    apply.__doc__ = change.__doc__
    return apply


def freeze(kernel, bias, chosen, rng):
    """Zero the weights and bias of the chosen units (PMT's neurons freezing)."""
    kernel[..., chosen] = 0
    if bias is not None:
        bias[chosen] = 0


def invert(kernel, bias, chosen, rng):
    """Negate the pre-activation of the chosen units (DeepMutation NAI)."""
    kernel[..., chosen] *= -1
    if bias is not None:
        bias[chosen] *= -1


def switch(kernel, bias, chosen, rng):
    """The chosen units trade weights and biases in a cycle, each taking the next one's
    (their outputs trade places, DeepMutation NS); a unit chosen alone in its layer
    switches with another unit of that layer, drawn at random."""
    if len(chosen) == 1:
        others = np.setdiff1d(np.arange(kernel.shape[-1]), chosen)
        chosen = np.sort(np.append(chosen, rng.choice(others)))
    rolled = np.roll(chosen, 1)
    kernel[..., chosen] = kernel[..., rolled]
    if bias is not None:
        bias[chosen] = bias[rolled]


def shuffle_weights(kernel, bias, chosen, rng):
    """Shuffle the incoming weights of the chosen units (DeepMutation WS)."""
    for unit in chosen:
        column = kernel[..., unit]
        kernel[..., unit] = rng.permutation(column.reshape(-1)).reshape(column.shape)


def neuron_effect_blocking(model, params, rng):
    """Block the effect of ``ratio`` of the neurons (units, channels; at least one) on
    the next layer: every weight from them into it is zeroed (DeepMutation NEB).
    ``@LAYER`` is a layer whose neurons are blocked; over the network, every layer
    whose neurons feed a next weighted layer."""
    sources = scope(model, params, "neurons")
    picks = select([units(model.layers[i]) for i in sources], params["ratio"], rng, minimum=1)
    for index, neurons in zip(sources, picks, strict=True):
        if neurons.size:
            consumer, rows = next_weighted_layer(model, index)
            weights = model.layers[consumer].get_weights()
            for neuron in neurons:  # the kernel's input axis is its second to last
                weights[0][..., rows(neuron), :] = 0
            model.layers[consumer].set_weights(weights)
    return model


def _copy_weights(source, target):
    by_name = {layer.name: layer for layer in source.layers}
    for layer in target.layers:
        if layer.name in by_name and layer.weights:
            layer.set_weights(by_name[layer.name].get_weights())


def _clone_replacing(model, index, replacement):
    """A copy of a trained ``model`` with layer ``index`` replaced by ``replacement(layer)``;
    the other layers keep their trained weights."""
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
    """The activation of one trained layer becomes linear; every weight is kept
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
    mutant.get_layer(model.layers[index].name + "_copy").set_weights(
        model.layers[index].get_weights())
    return mutant
