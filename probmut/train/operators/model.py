"""Model-level operators (on a trained healthy instance, no retraining):
``apply(model, params, rng) -> model``.

Weight and unit operators act on one layer (``@LAYER``) or on the whole network
(``@network``: every layer that fits at once, nested models' layers too; a shared layer
once). A layer's weights are its variables (:mod:`probmut.train.layer_weights`): the
weight operators fuzz its connection weights (kernel, recurrent kernel, a custom layer's
matrices), the unit operators change its units where its weights hold them (a kernel's
column, a transposed convolution's output channel, a recurrent cell's column in each gate
block). Over the network the count is taken of all the network's weights or units
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

from probmut.train.graph import copy_weights, fresh_copy, graph, rebuild
from probmut.train.layer_weights import connections
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
    """Add N(0, sd(chosen weights, their weight array)^2) noise to ``ratio`` of the
    connection weights of the layers in scope, drawn over all of them at once."""
    layers = _layers(model, params, "weights")
    weights = [layer.get_weights() for layer in layers]
    arrays = [[values[i] for i in connections(layer)]
              for layer, values in zip(layers, weights, strict=True)]
    picks = select([sum(a.size for a in layer_arrays) for layer_arrays in arrays],
                   params["ratio"], rng, minimum)
    for layer, values, layer_arrays, chosen in zip(layers, weights, arrays, picks, strict=True):
        if chosen.size:
            noise = rng.normal(0.0, 1.0, size=chosen.size)
            start = 0
            for array in layer_arrays:  # the layer's connection weights laid end to end
                flat = array.reshape(-1)  # a view of the copy get_weights made
                inside = (chosen >= start) & (chosen < start + flat.size)
                at = chosen[inside] - start
                flat[at] += (noise[inside] * sd(flat[at], flat)).astype(flat.dtype)
                start += flat.size
            layer.set_weights(values)
    return model


def weights_fuzzing(model, params, rng):
    """Add N(0, (scale |w|)^2) noise to ``ratio`` of the connection weights w (PMT's
    operator; magnitude ``RATIO_SCALE``, e.g. ``0.05_1``)."""
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * np.abs(chosen),
                 minimum=0)


def gaussian_fuzzing(model, params, rng):
    """Fuzz ``ratio`` of the connection weights w to N(w, sd^2) (DeepMutation GF): sd given
    (``RATIO_sdSD``), or ``scale`` x the sd of the weight's array (``RATIO_SCALE``)."""
    if params["sd"] is not None:
        return _fuzz(model, params, rng, lambda chosen, flat: params["sd"], minimum=1)
    return _fuzz(model, params, rng, lambda chosen, flat: params["scale"] * flat.std(),
                 minimum=1)


def per_unit(change, kind):
    """Model operator changing ``ratio`` of the units of the layers in scope (of the
    layer kind ``kind``), at least one: ``change(units, weights, chosen, rng)`` changes
    one layer's ``get_weights()`` list (:class:`~probmut.train.layer_weights.Units`)."""
    def apply(model, params, rng):
        layers = _layers(model, params, kind)
        found = [graph(model).units(layer) for layer in layers]
        picks = select([units.count for units in found], params["ratio"], rng, minimum=1)
        for layer, units, chosen in zip(layers, found, picks, strict=True):
            if chosen.size:
                weights = layer.get_weights()
                change(units, weights, chosen, rng)
                layer.set_weights(weights)
        return model
    apply.__doc__ = change.__doc__
    return apply


def freeze(units, weights, chosen, rng):
    """Zero the chosen units' incoming weights and bias, the entries of their
    pre-activation (PMT's neurons freezing)."""
    units.zero(weights, chosen)


def invert(units, weights, chosen, rng):
    """Negate the pre-activation of the chosen units (DeepMutation NAI)."""
    units.negate(weights, chosen)


def switch(units, weights, chosen, rng):
    """The chosen units trade weights and biases in a cycle, each taking the next one's
    (their outputs trade places, DeepMutation NS); a unit chosen alone in its layer
    switches with another unit of that layer, drawn at random."""
    if len(chosen) == 1:
        others = np.setdiff1d(np.arange(units.count), chosen)
        chosen = np.sort(np.append(chosen, rng.choice(others)))
    units.trade(weights, chosen, np.roll(chosen, 1))


def shuffle_weights(units, weights, chosen, rng):
    """Shuffle the incoming weights of the chosen units (DeepMutation WS)."""
    for unit in chosen:
        units.shuffle(weights, unit, rng)


def neuron_effect_blocking(model, params, rng):
    """Block the effect of ``ratio`` of the neurons (units, channels; at least one) on
    the layers they feed: every weight from them into a weighted layer is zeroed
    (DeepMutation NEB), wherever the model's graph takes them
    (:meth:`probmut.train.graph.Graph.neuron_routes`). ``@LAYER`` is a layer whose
    neurons are blocked; over the network, every layer whose neurons can be."""
    model_graph = graph(model)
    sources = _layers(model, params, "neurons")
    picks = select([neurons(model_graph, layer) for layer in sources], params["ratio"], rng,
                   minimum=1)
    for source, chosen in zip(sources, picks, strict=True):
        if chosen.size:
            for route in model_graph.neuron_routes(source):
                weights = route.consumer.get_weights()
                np.moveaxis(weights[route.weight], route.axis, 0)[
                    np.isin(route.carried, chosen)] = 0
                route.consumer.set_weights(weights)
    return model


def neurons(model_graph, layer) -> int:
    """A layer's neurons: the last axis of its output (its units, channels)."""
    return int(model_graph.shapes[model_graph.calls_of(layer)[0].outputs[0]][-1])


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


def layer_deactivation(model, params, rng):
    """Replace one hidden layer whose output shape equals its input shape (and which
    acts at inference: not a dropout) by the identity (DeepMutation LD); the other
    layers keep their trained weights."""
    import keras

    return _mutant(model, params["layer"], lambda layer: [keras.layers.Identity(name=layer.name)])


def remove_activation_trained(model, params, rng):
    """The activation of one trained layer becomes linear; every weight is kept
    (DeepMutation AFRm)."""
    return _mutant(model, params["layer"], lambda layer: [fresh_copy(layer, activation="linear")])


def duplicate_layer(model, params, rng):
    """Insert a copy of one trained hidden layer (its weights too) right after it; the
    layer's output shape must equal its input shape (DeepMutation LAm)."""
    return _mutant(model, params["layer"],
                   lambda layer: [fresh_copy(layer), fresh_copy(layer, name=layer.name + "_copy")])
