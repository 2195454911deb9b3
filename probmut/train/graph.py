"""A built Keras model as a graph: probmut's table of its layers, the calls that join
them, and copies made through it.

``model.layers`` lists a model's own layers in the order they were added, a nested model
as one layer and a shared layer once; it is not the order data flows in (the bundled
``gaze_lenet`` lists its second input after the image branch) and says nothing of
branches and joins. What the operators need comes from the graph instead
(:func:`graph`, read once per model):

* ``layers``, probmut's layer table, which ``@LAYER`` indexes and error messages print:
  ``model.layers`` with each nested model's layers in its place (recursively, without
  their input layers); a model without nested models has exactly ``model.layers``;
* ``calls``: every call of those layers in an order data can flow in, with the tensors
  each reads and writes (a nested model's tensors are those of the model around it, a
  shared layer has one call per use), and which tensors are the model's outputs;
* :meth:`Graph.neuron_routes`: where a layer's neurons go, through branches, joins,
  nested models and shared layers, up to the layers with connection weights they feed
  (:mod:`probmut.train.layer_weights`), and where each of those reads them.

A subclassed model (a ``keras.Model`` with its own ``call``) keeps no graph: it is read
through one call of it on symbolic inputs of the shapes it was built with, through its
own layers (:func:`graph`), so that the operators that change a layer's weights find
them; it cannot be rebuilt (:attr:`Graph.rebuild_problem`).

:func:`rebuild` copies a model through its graph (Sequential or functional, nested
models too) with some layers replaced, removed or followed by others, and does not
compile the copy: a compiled model's loss may be a function Keras cannot find by name.
A layer is copied from its configuration (:func:`fresh_copy`), with the custom functions
and classes it holds (a custom activation) found by name.

Examples
--------
>>> import keras
>>> block = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, name="inner")],
...                          name="block")
>>> x = keras.Input((4,), name="x")
>>> model = keras.Model(x, keras.layers.Dense(2, name="out")(block(x)))
>>> [layer.name for layer in model.layers]
['x', 'block', 'out']
>>> graph(model).names
('x', 'block/inner', 'out')
>>> copy, placed = rebuild(model, lambda layer: [] if layer.name == "inner" else None)
>>> [layer.name for layer in graph(copy).layers]    # the nested layer removed
['x', 'out']
"""

from __future__ import annotations

import inspect
import itertools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.layer_traits import elementwise, is_input, kind, traits_of
from probmut.train.layer_weights import connections, input_rows, units_of


def is_nested(layer) -> bool:
    """A model whose graph can be opened (Sequential or functional), used as a layer."""
    import keras

    if isinstance(layer, keras.Sequential):
        return getattr(layer, "_functional", None) is not None
    return isinstance(layer, keras.Model) and hasattr(layer, "_nodes_by_depth")


@dataclass(frozen=True)
class Call:
    """One call of a layer: the tensors it reads and writes (keys of :attr:`Graph.shapes`)."""

    layer: Any
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Route:
    """Where a layer's neurons reach a layer with connection weights: ``consumer`` reads
    its input's channel ``i`` in slice ``i`` of its weight ``weight`` on ``axis``
    (:func:`probmut.train.layer_weights.input_rows`), and channel ``i`` carries neuron
    ``carried[i]`` (-1: none of them)."""

    consumer: Any
    weight: int
    axis: int
    carried: np.ndarray


@dataclass(eq=False)
class Graph:
    """A model's layer table (``layers``, named by ``names``: ``sub/name`` inside a
    nested model ``sub``), its layer ``calls`` in an order data flows in, its
    ``outputs``, each tensor's per-sample shape and dtype, and (a subclassed model) why it
    cannot be rebuilt."""

    layers: tuple
    names: tuple[str, ...]
    calls: tuple[Call, ...]
    outputs: frozenset[int]
    shapes: dict[int, tuple]
    dtypes: dict[int, str]
    rebuild_problem: str | None = None
    _routes: dict = field(default_factory=dict, repr=False)

    def index(self, layer) -> int:
        return next(i for i, candidate in enumerate(self.layers) if candidate is layer)

    def name(self, layer) -> str:
        """The layer's index and name in the table, as messages name it."""
        index = self.index(layer)
        return f"{index} {self.names[index]}"

    def calls_of(self, layer) -> list[Call]:
        return [call for call in self.calls if call.layer is layer]

    def is_output(self, layer) -> bool:
        """Does a call of ``layer`` give one of the model's outputs?"""
        return any(key in self.outputs for call in self.calls_of(layer) for key in call.outputs)

    def same_shape(self, layer) -> bool:
        """Does every call of ``layer`` take one tensor and give one of the same shape?"""
        calls = self.calls_of(layer)
        return bool(calls) and all(
            len(call.inputs) == 1 and len(call.outputs) == 1
            and self.shapes[call.inputs[0]] == self.shapes[call.outputs[0]] for call in calls)

    def input_shape(self, layer) -> tuple:
        """The per-sample shape of ``layer``'s (first) input."""
        return self.shapes[self.calls_of(layer)[0].inputs[0]]

    def input_spec(self, layer) -> tuple[tuple, str] | None:
        """The per-sample shape and dtype of ``layer``'s one input (its first call's);
        None when it takes several."""
        inputs = self.calls_of(layer)[0].inputs
        return (self.shapes[inputs[0]], self.dtypes[inputs[0]]) if len(inputs) == 1 else None

    def units(self, layer):
        """The layer's :class:`~probmut.train.layer_weights.Units`, or why they are not
        known (a str)."""
        return units_of(layer, self.input_spec(layer))

    def neuron_routes(self, layer) -> tuple[Route, ...] | None:
        """Where the neurons of ``layer`` (a layer with connection weights: its units or
        channels, the last axis of its output) go, followed through the graph: one
        :class:`Route` per layer with connection weights they feed. None if they feed
        none, or if some of their values reach a model output, or a layer that mixes them
        with other values (an ``Add``, a softmax, ...) on the way, or a layer that reads
        its inputs in a way probmut cannot find: their effect cannot then be blocked by
        zeroing weights (:meth:`route_problem` says which)."""
        routes = self._routes_of(layer)
        return None if isinstance(routes, str) else routes

    def route_problem(self, layer) -> str | None:
        """Why the neurons of ``layer`` cannot be blocked (None if they can)."""
        routes = self._routes_of(layer)
        return routes if isinstance(routes, str) else None

    def _routes_of(self, layer):
        if id(layer) not in self._routes:
            self._routes[id(layer)] = _routes(self, layer)
        return self._routes[id(layer)]


_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def graph(model) -> Graph:
    """The :class:`Graph` of a built Keras model (read once, then remembered); a
    subclassed model's read through one symbolic call of it. Raises
    :class:`ProbmutError` for a model whose graph cannot be read: a Sequential model
    never built (no ``keras.Input``), a subclassed model never called, or whose ``call``
    cannot run on symbolic inputs."""
    if model not in _GRAPHS:
        if is_nested(model):
            _GRAPHS[model] = _read(model)
        elif type(model).__name__ == "Sequential":
            raise ProbmutError(f"the layers of model {model.name!r} cannot be followed: it is "
                               "not built; start it with keras.Input(shape)",
                               option="architecture")
        else:
            _GRAPHS[model] = _read(_traced(model), rebuild_problem=(
                f"it is a subclassed model ({type(model).__name__}): probmut reads its layers "
                "through a call of it but cannot rebuild it; build it with keras.Sequential "
                "or the functional API for this operator"))
    return _GRAPHS[model]


def _traced(model):
    """A functional view of a subclassed ``model`` through its own layers: its ``call`` run
    once on symbolic inputs of the shapes it was built with."""
    import keras

    built = getattr(model, "_build_shapes_dict", None)
    where = (f"the layers of model {model.name!r} cannot be followed: it is a subclassed model "
             f"({type(model).__name__})")
    if not model.built or not built:
        raise ProbmutError(f"{where} never built (call it once on data)", option="architecture")
    numbers = itertools.count()  # named here, so that two reads name them alike
    inputs = keras.tree.map_shape_structure(
        lambda shape: keras.Input(batch_shape=(None, *shape[1:]),
                                  name=f"{model.name}_input_{next(numbers)}"),
        next(iter(built.values())))
    try:
        return keras.Model(inputs, model.call(inputs), name=model.name)
    except Exception as error:  # noqa: BLE001 - whatever the user's call does on symbols
        raise ProbmutError(f"{where} whose call does not run on symbolic inputs "
                           f"({type(error).__name__}: "
                           f"{' '.join(str(error).split())[:160]}); build it with "
                           "keras.Sequential or the functional API", option="architecture") \
            from None


def table(model) -> tuple[tuple, tuple[str, ...]]:
    """The model's layer table and names (:attr:`Graph.layers`, :attr:`Graph.names`); for
    a model whose graph cannot be read (never built, a subclassed call that does not
    run on symbols), its own ``model.layers``, so that messages can still name them."""
    try:
        found = graph(model)
    except ProbmutError:
        return tuple(model.layers), tuple(layer.name for layer in model.layers)
    return found.layers, found.names


def _function(model):
    """The functional graph of a Sequential or functional model."""
    import keras

    return model._functional if isinstance(model, keras.Sequential) else model


def _table(model, prefix=""):
    for layer in model.layers:
        if is_nested(layer):
            yield from ((inner, name) for inner, name in _table(layer, f"{prefix}{layer.name}/")
                        if not is_input(inner))
        else:
            yield layer, prefix + layer.name


def _read(model, rebuild_problem: str | None = None) -> Graph:
    table, seen = [], set()
    for layer, name in _table(model):
        if id(layer) not in seen:
            seen.add(id(layer))
            table.append((layer, name))
    alias, shapes, dtypes, calls = {}, {}, {}, []

    def key(tensor):
        found = alias.get(id(tensor), id(tensor))
        shapes.setdefault(found, tuple(tensor.shape[1:]))
        dtypes.setdefault(found, str(tensor.dtype))
        return found

    def walk(function):
        by_depth = function._nodes_by_depth
        for node in (n for depth in sorted(by_depth, reverse=True) for n in by_depth[depth]):
            if node.is_input:
                continue
            inputs = tuple(key(t) for t in node.input_tensors)
            if is_nested(node.operation):
                inner = _function(node.operation)
                alias.update({id(t): k for t, k in zip(inner.inputs, inputs, strict=True)})
                walk(inner)
                alias.update({id(t): key(i) for t, i in zip(node.outputs, inner.outputs,
                                                            strict=True)})
            else:
                calls.append(Call(node.operation, inputs, tuple(key(t) for t in node.outputs)))

    function = _function(model)
    walk(function)
    return Graph(tuple(layer for layer, _ in table), tuple(name for _, name in table),
                 tuple(calls), frozenset(key(t) for t in function.outputs), shapes, dtypes,
                 rebuild_problem)


def _passed(call: Call, carried: list, graph: Graph) -> np.ndarray | None:
    """The neuron each position of ``call``'s output carries, from what its inputs carry
    (None where an input carries none); None if the call mixes them with other values."""
    out = graph.shapes[call.outputs[0]] if len(call.outputs) == 1 else None
    owners = [np.full(graph.shapes[k], -1) if c is None else c
              for k, c in zip(call.inputs, carried, strict=True)]
    routes = traits_of(call.layer).neurons
    if out is None or not _channels_last(call.layer) or (len(call.inputs) > 1
                                                         and routes != "concatenate"):
        return None
    if routes == "concatenate":
        axis = call.layer.axis
        return np.concatenate(owners, axis=axis - 1 if axis > 0 else axis)
    (owner,) = owners
    if kind(call.layer) == "Activation" and not elementwise(call.layer.activation):
        return None
    if routes == "elementwise" and owner.shape == out:
        return owner
    if routes == "reshape" and owner.size == int(np.prod(out)):
        return owner.reshape(out)
    if routes == "channel" and owner.shape[-1] == out[-1]:
        per_channel = owner.reshape(-1, owner.shape[-1])
        if np.all(per_channel == per_channel[:1]):  # each channel carries one neuron or none
            return np.broadcast_to(per_channel[0], out)
    return None


def _channels_last(layer) -> bool:
    return getattr(layer, "data_format", "channels_last") == "channels_last"


def _routes(graph: Graph, layer) -> tuple[Route, ...] | str:
    """The routes of ``layer``'s neurons (:meth:`Graph.neuron_routes`), or why there are
    none."""
    if not connections(layer):
        return "it has no connection weights"
    if not _channels_last(layer):
        return "its channels are not its output's last axis (channels_first)"
    carried = {}
    for call in graph.calls_of(layer):
        for k in call.outputs:
            shape = graph.shapes[k]
            carried[k] = np.broadcast_to(np.arange(shape[-1]), shape)
    rows: dict[int, list] = {}  # consumer id -> [consumer, rows of each call that reads them]
    for call in graph.calls:
        found = [carried.get(k) for k in call.inputs]
        if all(c is None for c in found):
            continue
        if connections(call.layer):
            owner = found[0]
            per_row = owner.reshape(-1, owner.shape[-1])
            if len(found) > 1 or not _channels_last(call.layer) or not np.all(
                    per_row == per_row[:1]):  # a row carries several neurons, or other values
                return f"its neurons reach {graph.name(call.layer)} mixed with other values"
            rows.setdefault(id(call.layer), [call.layer, []])[1].append(per_row[0])
            continue
        passed = _passed(call, found, graph)
        if passed is None:
            return (f"its neurons reach {graph.name(call.layer)} ({kind(call.layer)}), which "
                    "mixes them with other values or is not known to keep them apart")
        carried[call.outputs[0]] = passed
    if any(k in graph.outputs for k in carried):
        return "its neurons reach a model output"
    if not rows:
        return "its neurons feed no layer with connection weights"
    routes = []
    for consumer, per_call in rows.values():
        # a weighted layer called several times (shared) computes every call with the
        # same weights: zeroing rows for one call changes the others unless they agree
        if len(per_call) != len(graph.calls_of(consumer)) or any(
                not np.array_equal(r, per_call[0]) for r in per_call):
            return (f"{graph.name(consumer)} is shared, and its calls read other values "
                    "where they read these neurons")
        where = input_rows(consumer, graph.input_spec(consumer))
        if isinstance(where, str):
            return f"where {graph.name(consumer)} reads them is not known: {where}"
        routes.append(Route(consumer, *where, np.asarray(per_call[0])))
    return tuple(routes)


def rebuild(model, replace: Callable[[Any], list | None] | None = None):
    """A copy of a built ``model`` made through its graph, not compiled: new layers from
    each layer's config (fresh weights), nested models rebuilt the same way.
    ``replace(layer)`` may give the layers that take a layer's place, in order: ``[]``
    removes it (its one input passes on), ``[copy, extra]`` inserts ``extra`` after it;
    None keeps a fresh copy. Returns the copy and ``placed``: for each layer of the
    model's table, by id, ``(layer, the layers that took its place)``. Raises
    :class:`ProbmutError` for a model that cannot be rebuilt (subclassed)."""
    problem = graph(model).rebuild_problem
    if problem:
        raise ProbmutError(f"model {model.name!r} cannot be copied: {problem}",
                           option="architecture")
    placed: dict[int, tuple[Any, list]] = {}

    def new_layers(layer):
        if id(layer) not in placed:
            chain = replace(layer) if replace is not None else None
            if chain is None:
                chain = [fresh_copy(layer)]
            placed[id(layer)] = (layer, chain)
        return placed[id(layer)][1]

    return _rebuilt(model, new_layers), placed


def fresh_copy(layer, **changes):
    """A new layer (fresh weights) from ``layer``'s configuration with ``changes``; the
    functions and custom classes it holds (a custom activation, initializer,
    regulariser) are found by their names, as Keras looks them up.

    >>> import keras
    >>> def doubled(x):
    ...     return 2 * x
    >>> fresh_copy(keras.layers.Dense(3, activation=doubled)).activation is doubled
    True
    """
    import keras

    held = {}
    for value in vars(layer).values():
        found = value if inspect.isfunction(value) or inspect.isclass(value) else type(value)
        if found.__module__.split(".")[0] not in ("keras", "builtins"):
            held[found.__name__] = found
    with keras.saving.custom_object_scope(held):
        return type(layer).from_config({**layer.get_config(), **changes})


def _rebuilt(model, new_layers):
    import keras

    if isinstance(model, keras.Sequential):
        items = []
        for layer in model.layers:
            items += [_rebuilt(layer, new_layers)] if is_nested(layer) else new_layers(layer)
        source = model.inputs[0]
        return keras.Sequential([keras.Input(batch_shape=source.shape, dtype=source.dtype),
                                 *items], name=model.name, trainable=model.trainable)
    chains = {}

    def clone(layer):
        if is_nested(layer):
            return _rebuilt(layer, new_layers)
        chain = new_layers(layer)
        stand_in = chain[0] if chain else keras.layers.Identity()  # removed: never called
        chains[id(stand_in)] = layer, chain
        return stand_in

    def call(op, *args, **kwargs):
        if id(op) not in chains:  # a nested model
            return op(*args, **kwargs)
        layer, chain = chains[id(op)]
        if not chain:  # removed: its one input passes on
            return args[0]
        if type(chain[0]) is not type(layer):  # another layer: the call arguments it takes
            kwargs = {k: v for k, v in kwargs.items()
                      if k in chain[0].call_signature_parameters}
        x = chain[0](*args, **kwargs)
        for extra in chain[1:]:
            x = extra(x)
        return x

    # a view of the same graph that was never compiled, so that the copy is not compiled;
    # new inputs named as the model's input layers
    view = keras.Model(model.input, model.output, name=model.name)
    inputs = keras.tree.map_structure(
        lambda t: keras.Input(batch_shape=t.shape, dtype=t.dtype,
                              name=t._keras_history.operation.name), model.input)
    return keras.models.clone_model(view, input_tensors=inputs, clone_function=clone,
                                    call_function=call)


def copy_weights(placed) -> None:
    """Give each layer that took another's place (:func:`rebuild`) that layer's weights,
    where their shapes agree (an unchanged copy, a duplicate, the same layer with
    another activation)."""
    for layer, chain in placed.values():
        weights = layer.get_weights()
        for new in chain:
            if [w.shape for w in new.get_weights()] == [w.shape for w in weights] and weights:
                new.set_weights(weights)
