"""A layer's weights as the model-level operators see them: its variables, not a
``kernel`` attribute, and its units found from what the layer computes.

Keras keeps a recurrent layer's kernels on its cell, a custom layer's wherever its author
put them (the Keras guide's ``self.w`` and ``self.b``), and the output channels of a
transposed or depthwise convolution on other axes of its kernel than the last. So:

* :func:`weight_indices`: a layer's weights, the variables training updates (its
  trainable variables; a frozen layer's, those it would train): not a normalisation's
  moving statistics, nor a random generator's state.
* :func:`connections`: its *connection weights*, those of two or more axes (kernel,
  recurrent kernel, depthwise and pointwise kernels, embeddings, a custom layer's
  matrices), except the biases Keras names so (a GRU keeps its input and recurrent
  biases in one array of two axes); biases, gates and normalisation scales are not. What
  Gaussian fuzzing and PMT's weights fuzzing draw from.
* :func:`units_of`: its *units*, the last axis of its output, and where each of its
  weights holds them (:class:`Units`), found by probing the layer: which entries of a
  weight change which output unit, which weights negated together negate the output (the
  unit's pre-activation), and whether trading two units' entries trades their outputs.
  Keras' recurrent layers are read from their gate layout instead
  (:data:`probmut.train.layer_traits.RECURRENT_GATES`: through the recurrence every weight
  reaches every unit), and their switch is probed the same way. Where the units cannot be
  told apart, it says why, in words.
* :func:`input_rows`: where a layer with connection weights reads each channel of its
  input (a Dense kernel's rows, a transposed convolution kernel's last axis), found by
  probing: what neuron effect blocking zeroes.

A probe calls the layer itself on random inputs, with random weights of each weight's own
spread put in for the probe and the layer's own put back after, so that no random stream
of Keras is drawn from; what it finds depends on the layer's class, configuration and
input only, and is kept per process.

Examples
--------
>>> import keras
>>> layer = keras.layers.Conv2DTranspose(3, 2)
>>> layer.build((None, 4, 4, 5))
>>> found = units_of(layer, (4, 4, 5))
>>> found.count, [(axes.name, axes.start) for axes in found.axes]   # output channels: axis 2
(3, [('kernel', 2), ('bias', 0)])
>>> input_rows(layer, (4, 4, 5))    # (weight, axis): its input channels are the last axis
(0, 3)
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np

from probmut.train.layer_traits import RECURRENT_GATES, kind

#: Units probed for where a weight holds them: every unit of a small layer, else these.
_PROBED = 6


def weight_indices(layer) -> list[int]:
    """Indices (in ``layer.get_weights()``) of the layer's weights: its trainable
    variables, or, for a frozen layer, those it would train unfrozen."""
    if layer.trainable:
        return [i for i, v in enumerate(layer.weights) if v.trainable]
    layer.trainable = True
    try:
        trained = {id(v) for v in layer.trainable_weights}
    finally:
        layer.trainable = False
    return [i for i, v in enumerate(layer.weights) if id(v) in trained]


def connections(layer) -> list[int]:
    """Indices of the layer's connection weights: its weights of two or more axes, but
    for the biases Keras names so."""
    return [i for i in weight_indices(layer) if len(layer.weights[i].shape) >= 2
            and not layer.weights[i].name.endswith("bias")]


def weight_name(layer, index: int) -> str:
    """How messages name weight ``index`` of ``layer``: the attribute that holds it (the
    Keras guide's ``w``; a recurrent cell's ``recurrent_kernel``), else its path in the
    layer."""
    variable = layer.weights[index]
    for owner in filter(None, (layer, getattr(layer, "cell", None))):
        for attribute, value in vars(owner).items():
            if value is variable:
                return attribute.lstrip("_")
    return variable.path.removeprefix(layer.path + "/")


@dataclass(frozen=True)
class UnitAxes:
    """Where one weight (``weight``: its index in the layer's ``get_weights()``, named
    ``name``) holds the layer's units: the C-order flat index over its axes ``[start,
    stop)`` is ``block * units + unit`` (``blocks``: a recurrent cell's gate blocks, else
    1). ``pre_activation``: the blocks whose entries carry the unit's pre-activation (what
    NAI negates and neurons freezing zeroes); ``rows``: an axis that holds the same units
    on the input side (a recurrent kernel's rows, which NS permutes with its columns)."""

    weight: int
    name: str
    start: int
    stop: int
    connection: bool
    blocks: int = 1
    pre_activation: tuple[int, ...] = ()
    rows: int | None = None

    def view(self, array: np.ndarray, count: int) -> np.ndarray:
        """``array`` (this weight's values, C-contiguous) as ``(unit, block, rest...)``: a
        view, so that writing into it writes ``array``."""
        shape = array.shape
        blocked = array.reshape(shape[:self.start] + (self.blocks, count) + shape[self.stop:])
        return np.moveaxis(blocked, (self.start + 1, self.start), (0, 1))


@dataclass(frozen=True)
class Units:
    """A layer's ``count`` units and where its weights hold them (``axes``).
    ``not_negatable`` says why no weights carry a unit's pre-activation (None when they
    were found), ``not_switchable`` why its units cannot trade places (None when they can).
    The methods change a layer's ``get_weights()`` list in place."""

    count: int
    axes: tuple[UnitAxes, ...]
    not_negatable: str | None = None
    not_switchable: str | None = None

    @property
    def connections(self) -> tuple[UnitAxes, ...]:
        return tuple(axes for axes in self.axes if axes.connection)

    def names(self, kind: str) -> list[str]:
        """The weights an operator of the layer kind ``kind`` changes: their entries of
        the units' pre-activation (``"pre_activation"``: NAI, neurons freezing), their
        connection weights (``"units"``: WS), every weight that holds them
        (``"switchable"``: NS)."""
        chosen = {"pre_activation": [a for a in self.axes if a.pre_activation],
                  "units": self.connections, "switchable": self.axes}[kind]
        return [axes.name for axes in chosen]

    def zero(self, weights, chosen) -> None:
        """Zero the pre-activation entries of the ``chosen`` units (PMT's neurons freezing)."""
        for axes in self.axes:
            if axes.pre_activation:
                axes.view(weights[axes.weight], self.count)[np.ix_(chosen,
                                                                   axes.pre_activation)] = 0

    def negate(self, weights, chosen) -> None:
        """Negate the pre-activation entries of the ``chosen`` units (DeepMutation NAI)."""
        for axes in self.axes:
            if axes.pre_activation:
                axes.view(weights[axes.weight], self.count)[np.ix_(chosen,
                                                                   axes.pre_activation)] *= -1

    def trade(self, weights, chosen, rolled) -> None:
        """Unit ``chosen[i]`` takes every entry of unit ``rolled[i]`` (DeepMutation NS)."""
        for axes in self.axes:
            view = axes.view(weights[axes.weight], self.count)
            view[chosen] = view[rolled]
            if axes.rows is not None:
                rows = np.moveaxis(weights[axes.weight], axes.rows, 0)
                rows[chosen] = rows[rolled]

    def shuffle(self, weights, unit: int, rng) -> None:
        """Shuffle the incoming connection weights of ``unit``, each gate block's apart
        (DeepMutation WS)."""
        for axes in self.connections:
            view = axes.view(weights[axes.weight], self.count)
            for block in range(axes.blocks):
                column = view[unit, block]
                view[unit, block] = rng.permutation(column.reshape(-1)).reshape(column.shape)

    def changed(self, before, after) -> int:
        """How many units have an entry of their own (on their side of each weight, not a
        recurrent kernel's rows, which hold every unit's weight from them) that differs
        between two ``get_weights()`` lists."""
        differs = np.zeros(self.count, bool)
        for axes in self.axes:
            moved = before[axes.weight] != after[axes.weight]
            differs |= axes.view(moved, self.count).reshape(self.count, -1).any(axis=1)
        return int(differs.sum())


class _Probe:
    """``layer`` called on its own on a random input of ``spec`` (per-sample shape, dtype),
    with random weights put in (each trainable weight drawn with its own spread, or 0.5);
    the layer's weights and activation are put back on leaving. ``linear``: call it with a
    linear activation (its pre-activation), where it has an activation to swap."""

    def __init__(self, layer, spec, linear: bool):
        rng = np.random.default_rng(0)
        shape, dtype = spec
        shape = (4, *(3 if d is None else d for d in shape))
        integers = np.issubdtype(np.dtype(dtype), np.integer)
        self.x = (rng.integers(0, 2, shape) if integers else rng.normal(size=shape)).astype(dtype)
        self.layer, self.linear = layer, linear
        self.values = layer.get_weights()
        for i in weight_indices(layer):
            spread = float(np.std(self.values[i])) or 0.5
            self.values[i] = rng.normal(0, spread, self.values[i].shape).astype(
                self.values[i].dtype)

    def __enter__(self):
        import keras

        self.saved, self.activation = self.layer.get_weights(), None
        if self.linear and callable(getattr(self.layer, "activation", None)):
            self.activation = self.layer.activation
            try:
                self.layer.activation = keras.activations.linear
            except AttributeError:  # a read-only property
                self.activation = None
        return self

    def __exit__(self, *exc):
        self.layer.set_weights(self.saved)
        if self.activation is not None:
            self.layer.activation = self.activation

    def output(self, values=None, x=None) -> np.ndarray:
        self.layer.set_weights(self.values if values is None else values)
        out = self.layer(self.x if x is None else x, training=False)
        if isinstance(out, list | tuple | dict):
            raise _Unknown("it gives several outputs")
        return np.asarray(out)

    def supports(self, unit: int, indices) -> list[np.ndarray]:
        """For each weight of ``indices``: which of its entries change output ``unit``."""
        import tensorflow as tf

        self.layer.set_weights(self.values)
        variables = [self.layer.weights[i].value for i in indices]
        with tf.GradientTape() as tape:
            total = tf.reduce_sum(self.layer(self.x, training=False)[..., unit])
        return [np.zeros(v.shape, bool) if g is None else np.asarray(tf.convert_to_tensor(g)) != 0
                for v, g in zip(variables, tape.gradient(total, variables), strict=True)]


class _Unknown(Exception):
    """The layer's units (or inputs) cannot be found; the message says why."""


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(b).max()))))


_FOUND: dict = {}


def _remembered(kind, find, layer, spec):
    """``find(layer, spec)``, kept per process by the layer's class, configuration, weight
    shapes and input; a :class:`_Unknown` or a failing call becomes its reason (a str)."""
    config = {k: v for k, v in layer.get_config().items() if k != "name"}
    key = (kind, type(layer), repr(config), spec, tuple(tuple(w.shape) for w in layer.weights))
    if key not in _FOUND:
        if spec is None:
            _FOUND[key] = "it takes several inputs"
        else:
            try:
                _FOUND[key] = find(layer, spec)
            except _Unknown as reason:
                _FOUND[key] = str(reason)
            except Exception as error:  # noqa: BLE001 - a user's layer, called on its own
                _FOUND[key] = (f"it cannot be called on its own "
                               f"({type(error).__name__}: {' '.join(str(error).split())[:120]})")
    return _FOUND[key]


def _spec(spec):
    """``(per-sample shape, dtype)`` from either or a shape alone (float32); None stays."""
    if spec is None:
        return None
    if len(spec) == 2 and isinstance(spec[0], tuple | list) and isinstance(spec[1], str):
        return tuple(spec[0]), spec[1]
    return tuple(spec), "float32"


def units_of(layer, spec) -> Units | str:
    """The :class:`Units` of a layer with connection weights, called on inputs of
    ``spec``: ``(per-sample shape, dtype)`` or a per-sample shape (float32); None when it
    takes several inputs. A str says why they cannot be known."""
    if not connections(layer):
        return "it has no connection weights"
    return _remembered("units", _units, layer, _spec(spec))


def _units(layer, spec) -> Units:
    gates = RECURRENT_GATES.get(kind(layer))
    with _Probe(layer, spec, linear=gates is None) as probe:
        count = int(probe.output().shape[-1])
        axes = _gate_axes(layer, count, *gates) if gates else _probed_axes(probe, count)
        if not any(a.connection for a in axes):
            raise _Unknown("its units cannot be told apart: every connection weight reaches "
                           "several of its output units")
        not_negatable = None
        if gates is None:
            axes, not_negatable = _pre_activation(probe, axes)
        units = Units(count, tuple(axes), not_negatable)
        return dataclasses.replace(units, not_switchable=_switch_problem(probe, units))


def _gate_axes(layer, count, blocks, candidate) -> list[UnitAxes]:
    """A Keras recurrent layer's kernel, recurrent kernel and bias: ``blocks`` gate blocks
    of ``count`` columns on the last axis; the candidate's block is the pre-activation."""
    cell, axes = layer.cell, []
    roles = {id(getattr(cell, name, None)): name for name in ("kernel", "recurrent_kernel",
                                                              "bias")}
    for i in weight_indices(layer):
        shape = tuple(layer.weights[i].shape)
        name = roles.get(id(layer.weights[i]))
        if name is None or shape[-1] != blocks * count:
            raise _Unknown(f"its weight {weight_name(layer, i)} is not laid out as Keras' "
                           f"{blocks} gate blocks")
        axes.append(UnitAxes(i, name, len(shape) - 1, len(shape), name != "bias", blocks,
                             (candidate,), 0 if name == "recurrent_kernel" else None))
    return axes


def _groups(shape, count):
    """Axis ranges ``[start, stop)`` whose sizes multiply to ``count``, the last first."""
    return [(start, stop) for stop in range(len(shape), 0, -1) for start in range(stop - 1, -1, -1)
            if int(np.prod(shape[start:stop])) == count]


def _probed_axes(probe, count) -> list[UnitAxes]:
    """For each weight of the probed layer: the axes whose every entry changes only the
    output unit its index names (on every unit probed); a weight whose entries reach
    several units (or none) holds no unit of its own."""
    layer = probe.layer
    indices = weight_indices(layer)
    units = range(count) if count <= _PROBED else sorted({0, 1, count // 2, count - 2,
                                                          count - 1})
    supports = {unit: probe.supports(unit, indices) for unit in units}
    found = []
    for k, i in enumerate(indices):
        shape = tuple(layer.weights[i].shape)
        for start, stop in _groups(shape, count):
            axes = UnitAxes(i, weight_name(layer, i), start, stop, i in connections(layer))
            reached = [axes.view(supports[u][k], count).reshape(count, -1).any(axis=1)
                       for u in units]
            if any(r[u] for r, u in zip(reached, units, strict=True)) and all(
                    not np.delete(r, u).any() for r, u in zip(reached, units, strict=True)):
                found.append(axes)
                break
    return found


def _pre_activation(probe, axes) -> tuple[list[UnitAxes], str | None]:
    """The weights that, negated together, negate the layer's output (with a linear
    activation): the most of them that do, if only one set of that size does."""
    base = probe.output()
    for size in range(len(axes), 0, -1):
        fits = []
        for subset in itertools.combinations(axes, size):
            values = [w.copy() for w in probe.values]
            for a in subset:
                values[a.weight] *= -1
            if _close(probe.output(values), -base):
                fits.append(subset)
        if len(fits) == 1:
            chosen = {a.weight for a in fits[0]}
            return [UnitAxes(a.weight, a.name, a.start, a.stop, a.connection,
                             pre_activation=(0,) if a.weight in chosen else ())
                    for a in axes], None
        if fits:
            break
    return axes, ("no one set of its weights carries its units' pre-activation (negating "
                  "them does not negate its output)")


def _switch_problem(probe, units: Units) -> str | None:
    """Why trading two units' entries does not trade their outputs (None if it does)."""
    if units.count < 2:
        return "it has one unit"
    first, last = 0, units.count - 1
    base = probe.output()
    values = [w.copy() for w in probe.values]
    units.trade(values, np.array([first, last]), np.array([last, first]))
    swapped = base.copy()
    swapped[..., [first, last]] = base[..., [last, first]]
    if _close(probe.output(values), swapped):
        return None
    return "trading two units' weights does not trade their outputs"


def input_rows(layer, spec) -> tuple[int, int] | str:
    """Where ``layer`` reads the channels of its input (``spec`` as :func:`units_of`): the
    (weight index, axis) of a connection weight whose slice ``i`` on that axis, zeroed,
    leaves the output blind to input channel ``i``; a str says why none is found."""
    if not connections(layer):
        return "it has no connection weights"
    return _remembered("inputs", _input_rows, layer, _spec(spec))


def _input_rows(layer, spec) -> tuple[int, int]:
    channels = spec[0][-1]
    candidates = [(i, axis) for i in connections(layer) for axis in _reading_order(
        len(layer.weights[i].shape)) if layer.weights[i].shape[axis] == channels]
    with _Probe(layer, spec, linear=True) as probe:
        base = probe.output()
        for i, axis in candidates:
            if all(_blocks(probe, base, i, axis, c) for c in sorted({0, channels // 2,
                                                                      channels - 1})):
                return i, axis
    raise _Unknown("no axis of its connection weights reads its input's channels one by one")


def _reading_order(ndim: int) -> list[int]:
    """The axes of a weight in the order they are tried as its input axis: the second to
    last (a Dense or convolution kernel's), then the others from the last."""
    return [ndim - 2, *(a for a in range(ndim - 1, -1, -1) if a != ndim - 2)] if ndim >= 2 \
        else list(range(ndim))


def _blocks(probe, base, weight, axis, channel) -> bool:
    """Does zeroing slice ``channel`` of ``weight`` on ``axis`` leave the output blind to
    that input channel (which changes it otherwise)?"""
    moved = probe.x.copy()
    moved[..., channel] += 1
    if _close(probe.output(x=moved), base):
        return False
    values = [w.copy() for w in probe.values]
    np.moveaxis(values[weight], axis, 0)[channel] = 0
    return _close(probe.output(values, moved), probe.output(values))
