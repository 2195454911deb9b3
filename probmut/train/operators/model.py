"""Model-level operators (on a trained healthy instance, no retraining):
``apply(model, params, rng) -> model``.

Weight and unit operators act on one layer (``@LAYER``) or on the whole network
(``@network``: every layer with a kernel at once, nested models' layers too; a shared
layer once). Over the network the count is taken of all the network's weights or units
together and drawn uniformly from all of them, as DeepMutation++ samples (so each layer
gets what the draw gives it, often nothing in a small layer). Counts are truncated as
DeepMutation++ and PMT count them, with at least one item when the ratio is above 0
(DeepMutation++, PMT's ``neurons_freezing``; PMT's ``weights_fuzzing`` has no minimum).

Layer operators (LD, AFRm, LAm) copy the model through its graph
(:func:`probmut.train.graph.rebuild`: Sequential or functional, nested models too), keep
every trained weight, and compile the copy as the healthy model is compiled (its own
optimizer settings and loss object: a loss function Keras cannot find by name stays).

Examples
--------
>>> picks = select([10, 30, 60], 0.1, np.random.default_rng(0), minimum=1)
>>> sum(len(p) for p in picks)   # int(100 x 0.1) positions over the three pools
10
"""

from __future__ import annotations

import numpy as np

from probmut.train.graph import copy_weights, graph, rebuild
from probmut.train.layer_traits import units
from probmut.train.operators.data import choose
from probmut.train.operators.layers import fitting
from probmut.train.operators.magnitudes import NETWORK, count


def scope(model, params, kind: str) -> list[int]:
    """The layers (indices in the model's layer table) a weight or unit operator acts
    on: ``@LAYER``'s, or (``@network``) every layer of ``kind``."""
    if params["layer"] == NETWORK:
        return fitting(model, kind, hidden_only=False)
    return [params["layer"]]


def _layers(model, params, kind: str) -> list:
    table = graph(model).layers
    return [table[i] for i in scope(model, params, kind)]


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
    layers = _layers(model, params, "kernel")
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
        layers = _layers(model, params, kind)
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
    the layers they feed: every weight from them into a weighted layer is zeroed
    (DeepMutation NEB), wherever the model's graph takes them
    (:meth:`probmut.train.graph.Graph.neuron_routes`). ``@LAYER`` is a layer whose
    neurons are blocked; over the network, every layer whose neurons can be."""
    sources = _layers(model, params, "neurons")
    picks = select([units(layer) for layer in sources], params["ratio"], rng, minimum=1)
    for source, neurons in zip(sources, picks, strict=True):
        if neurons.size:
            for consumer, carried in graph(model).neuron_routes(source):
                weights = consumer.get_weights()  # the kernel's input axis: second to last
                weights[0][..., np.isin(carried, neurons), :] = 0
                consumer.set_weights(weights)
    return model


def _mutant(model, index, replacement):
    """A copy of a trained ``model`` in which the layer at ``index`` of its layer table
    is replaced by the layers ``replacement(layer)`` gives; every layer keeps its
    trained weights (a copy or duplicate of the layer too), and the copy is compiled as
    ``model`` is."""
    target = graph(model).layers[index]
    mutant, placed = rebuild(model, lambda layer: replacement(layer) if layer is target
                             else None)
    copy_weights(placed)
    if getattr(model, "optimizer", None) is not None and getattr(model, "loss", None) is not None:
        optimizer = model.optimizer
        mutant.compile(optimizer=type(optimizer).from_config(optimizer.get_config()),
                       loss=model.loss)
    return mutant


def _copy(layer, **changes):
    return type(layer).from_config({**layer.get_config(), **changes})


def layer_deactivation(model, params, rng):
    """Replace one hidden layer whose output shape equals its input shape (and which
    acts at inference: not a dropout) by the identity (DeepMutation LD); the other
    layers keep their trained weights."""
    import keras

    return _mutant(model, params["layer"], lambda layer: [keras.layers.Identity(name=layer.name)])


def remove_activation_trained(model, params, rng):
    """The activation of one trained layer becomes linear; every weight is kept
    (DeepMutation AFRm)."""
    return _mutant(model, params["layer"], lambda layer: [_copy(layer, activation="linear")])


def duplicate_layer(model, params, rng):
    """Insert a copy of one trained hidden layer (its weights too) right after it; the
    layer's output shape must equal its input shape (DeepMutation LAm)."""
    return _mutant(model, params["layer"],
                   lambda layer: [_copy(layer), _copy(layer, name=layer.name + "_copy")])
