"""A torch model as probmut's layer table, read from its ``torch.fx`` graph.

:func:`trace` turns a model into a ``torch.fx.GraphModule`` (refused with one line
naming the reason when the model does not trace: data-dependent control flow, say); its
dropouts become :class:`~probmut.train.torch.modules.SeededDropout` (an ``nn.Dropout``
module in place, a ``F.dropout`` call as a new module), so that every instance draws its
masks from its own generator. :class:`TorchGraph` reads the traced model once, on two
samples: its layer table (what ``@LAYER`` indexes and messages print), each layer's
calls, the per-sample shape of every tensor, what is an output, and where a layer's
neurons go (:meth:`TorchGraph.neuron_routes`).

The layer table lists, in the order data flows, every leaf module the model calls (a
shared module once, however many calls it has) and every function or tensor method
that gives a tensor (``torch.relu``, ``x.view``, ``+``): what a Keras functional model
has as layers. An activation is a layer of its own (Keras folds it into its Dense or
Conv layer), so the indices of a bundled torch architecture are not the Keras one's:
the bundled specs give their own published layers.

Examples
--------
>>> from torch import nn
>>> model = trace(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.5),
...                             nn.Linear(3, 2)))
>>> g = TorchGraph(model, (4,))
>>> [f"{layer.name} {layer.kind}" for layer in g.layers]
['0 Linear', '1 ReLU', '2 SeededDropout', '3 Linear']
>>> g.is_output(g.layers[3]), g.same_shape(g.layers[1]), g.identity_at_inference(g.layers[2])
(True, True, True)
>>> [(consumer.name, rows.tolist()) for consumer, rows in g.neuron_routes(g.layers[0])]
[('3', [0, 1, 2])]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import fx, nn

from probmut.errors import ProbmutError
from probmut.train.torch.activations import MIXING, node_activation
from probmut.train.torch.initializers import weighted
from probmut.train.torch.modules import BatchNormalization, SeededDropout

_DROPOUT_FUNCTIONS = {F.dropout, torch.dropout}
_DROPOUT_MODULES = (nn.Dropout, nn.AlphaDropout, SeededDropout)
_NORMALIZATION = (BatchNormalization, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d,
                  nn.LayerNorm)
_POOL_MODULES = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d,
                 nn.AvgPool3d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d,
                 nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d,
                 nn.AdaptiveMaxPool3d)
_POOL_FUNCTIONS = {F.max_pool1d, F.max_pool2d, F.max_pool3d, F.avg_pool1d, F.avg_pool2d,
                   F.avg_pool3d, F.adaptive_avg_pool1d, F.adaptive_avg_pool2d,
                   F.adaptive_avg_pool3d, F.adaptive_max_pool1d, F.adaptive_max_pool2d,
                   F.adaptive_max_pool3d}
_MOVE_MODULES = (nn.Flatten, nn.Unflatten)
_MOVE_FUNCTIONS = {torch.flatten, torch.reshape, torch.permute, torch.transpose,
                   torch.squeeze, torch.unsqueeze}
_MOVE_METHODS = {"view", "reshape", "flatten", "permute", "transpose", "contiguous",
                 "squeeze", "unsqueeze"}
_CONCATENATE = {torch.cat, torch.concat}


def trace(module: nn.Module) -> fx.GraphModule:
    """``module`` as a ``torch.fx.GraphModule`` sharing its submodules and weights, its
    dropouts seeded (module notes). Raises :class:`ProbmutError` if it does not trace."""
    from probmut.io.records import one_line

    try:
        traced = fx.symbolic_trace(module)
    except Exception as error:  # noqa: BLE001 - torch.fx reports untraceable code in many types
        raise ProbmutError(
            f"the torch model {type(module).__name__} cannot be traced by torch.fx "
            f"({one_line(error)}); operators that target its layers need a forward "
            "without data-dependent control flow", option="architecture") from None
    for node in list(traced.graph.nodes):
        if node.op == "call_module" and type(traced.get_submodule(node.target)) is nn.Dropout:
            set_module(traced, node.target, SeededDropout(traced.get_submodule(node.target).p))
        elif node.op == "call_function" and node.target in _DROPOUT_FUNCTIONS:
            p = node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
            name = fresh_name(traced, node.name)
            traced.add_submodule(name, SeededDropout(p))
            with traced.graph.inserting_after(node):
                replacement = traced.graph.call_module(name, (node.args[0],))
            node.replace_all_uses_with(replacement)
            traced.graph.erase_node(node)
    traced.recompile()
    return traced


def set_module(root: nn.Module, target: str, module: nn.Module) -> None:
    """Put ``module`` at the dotted path ``target`` of ``root``."""
    parent, _, name = target.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, name, module)


def fresh_name(root: nn.Module, base: str) -> str:
    """A submodule name of ``root`` not taken yet, from ``base``."""
    taken = dict(root.named_modules())
    name, k = f"probmut_{base}", 1
    while name in taken:
        name, k = f"probmut_{base}_{k}", k + 1
    return name


@dataclass(frozen=True, eq=False)
class Layer:
    """One layer of the table: ``name`` (the module's path, or the node's name),
    ``kind`` (the module's class, or the function's name), ``module`` (None for a
    function) and its ``calls`` (its nodes of the graph)."""

    name: str
    kind: str
    module: nn.Module | None
    calls: tuple


def _kind(node, modules) -> str:
    if node.op == "call_module":
        return type(modules[node.target]).__name__
    if node.op == "call_method":
        return node.target
    return getattr(node.target, "__name__", str(node.target))


class TorchGraph:
    """The layer table and the graph of a traced model (:func:`trace`) whose inputs have
    the per-sample shape ``input_shape``; read on two random samples in inference mode."""

    def __init__(self, module: fx.GraphModule, input_shape):
        self.module = module
        modules = dict(module.named_modules())
        self.values = _recorded(module, tuple(input_shape))
        self.shapes = {node: tuple(value.shape[1:]) for node, value in self.values.items()
                       if isinstance(value, torch.Tensor) and node.op != "placeholder"}
        layers, seen = [], {}
        for node in module.graph.nodes:
            if node.op not in ("call_module", "call_function", "call_method") \
                    or node not in self.shapes:
                continue
            key = node.target if node.op == "call_module" else node
            if key not in seen:
                seen[key] = len(layers)
                layers.append([node.target if node.op == "call_module" else node.name,
                               _kind(node, modules),
                               modules[node.target] if node.op == "call_module" else None, []])
            layers[seen[key]][3].append(node)
        self.layers = tuple(Layer(name, kind, mod, tuple(calls))
                            for name, kind, mod, calls in layers)
        self._layer_of = {node: layer for layer in self.layers for node in layer.calls}
        output = next(n for n in module.graph.nodes if n.op == "output")
        self.outputs = frozenset(output.all_input_nodes)
        self._modules = modules
        self._routes: dict = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers)

    def describe(self) -> str:
        """``index name (kind)`` per layer, for messages."""
        return "; ".join(f"{i} {layer.name} ({layer.kind})" for i, layer in enumerate(self.layers))

    def layer_of(self, node) -> Layer | None:
        return self._layer_of.get(node)

    def layer_of_module(self, module: nn.Module) -> Layer | None:
        return next((layer for layer in self.layers if layer.module is module), None)

    def inputs_of(self, node) -> list:
        """The nodes of tensors ``node`` reads."""
        return [n for n in node.all_input_nodes if n in self.shapes or n.op == "placeholder"]

    def is_output(self, layer: Layer) -> bool:
        return any(call in self.outputs for call in layer.calls)

    def same_shape(self, layer: Layer) -> bool:
        """Does every call of ``layer`` read one tensor and give one of its shape?"""
        for call in layer.calls:
            inputs = self.inputs_of(call)
            if len(inputs) != 1 or self.shape(inputs[0]) != self.shapes[call]:
                return False
        return True

    def shape(self, node) -> tuple:
        return tuple(self.values[node].shape[1:])

    def weighted(self, layer: Layer) -> bool:
        return layer.module is not None and weighted(layer.module)

    def units(self, layer: Layer) -> int:
        """A weighted layer's units (Dense) or filters (convolution)."""
        return int(layer.module.weight.shape[0])

    def activation(self, layer: Layer) -> str | None:
        """The Keras name of the activation ``layer`` computes, None if not one."""
        return node_activation(layer.calls[0], self._modules)

    def feeds_activation(self, layer: Layer) -> bool:
        """Does some call of ``layer`` go on into an activation?"""
        return any(self.layer_of(user) is not None and self.activation(self.layer_of(user))
                   for call in layer.calls for user in call.users)

    def identity_at_inference(self, layer: Layer) -> bool:
        """Does ``layer`` pass its input through unchanged at inference (a dropout, an
        ``Identity``)? Checked on a random input of its shape."""
        if layer.module is None or not self.same_shape(layer):
            return isinstance(layer.module, _DROPOUT_MODULES)
        if isinstance(layer.module, (*_DROPOUT_MODULES, nn.Identity)):
            return True
        x = torch.randn((4, *self.shapes[layer.calls[0]]),
                        generator=torch.Generator().manual_seed(0))
        training = layer.module.training
        layer.module.eval()
        try:
            with torch.no_grad():
                return bool(torch.allclose(layer.module(x), x))
        except Exception:  # noqa: BLE001 - a module that cannot run alone is not an identity
            return False
        finally:
            layer.module.train(training)

    def output_activation(self) -> str | None:
        """``"softmax"`` or ``"sigmoid"`` when the model's one output is that activation
        of a 2-D tensor over its class axis (a loss then reads its logits, as Keras'
        does), else None."""
        if len(self.outputs) != 1:
            return None
        (node,) = self.outputs
        layer = self.layer_of(node)
        name = layer and self.activation(layer)
        if name == "sigmoid" and len(self.shapes[node]) == 1:
            return name
        if name != "softmax" or len(self.shapes[node]) != 1:
            return None
        if node.op == "call_module":
            dim = getattr(self._modules[node.target], "dim", None)
        else:
            dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
        return name if dim in (1, -1) else None

    def neuron_routes(self, layer: Layer):
        """Where the neurons of a weighted ``layer`` (its units or channels) go: for each
        weighted layer they feed, the neuron each input row of its kernel carries (-1:
        none). None if they feed no weighted layer, reach a model output, or meet an op
        that mixes them with other values (an addition, a softmax, a matrix product);
        a shared consumer must read the same neurons in every call."""
        if layer.name not in self._routes:
            self._routes[layer.name] = _routes(self, layer) if self.weighted(layer) else None
        return self._routes[layer.name]


def _recorded(module: fx.GraphModule, input_shape: tuple) -> dict:
    """Every node's value for two random samples, in inference mode."""
    values = {}

    class Recorder(fx.Interpreter):
        def run_node(self, node):
            values[node] = super().run_node(node)
            return values[node]

    x = torch.randn((2, *input_shape), generator=torch.Generator().manual_seed(0))
    training = module.training
    module.eval()
    try:
        with torch.no_grad():
            Recorder(module).run(x)
    finally:
        module.train(training)
    return values


def channel_axis(module: nn.Module) -> int:
    """The per-sample axis of a weighted layer's units: last for a Dense layer, first
    (torch's channels) for a convolution."""
    return -1 if isinstance(module, nn.Linear) else 0


def _owners_at_input(owner: np.ndarray, module: nn.Module) -> np.ndarray | None:
    """The neuron each input row of ``module``'s kernel reads, if each row reads one
    neuron (or none) at every position; else None."""
    if isinstance(module, nn.Linear):
        rows = owner.reshape(-1, owner.shape[-1])
    elif getattr(module, "groups", 1) == 1:
        rows = np.moveaxis(owner, 0, -1).reshape(-1, owner.shape[0])
    else:
        return None
    return rows[0] if np.all(rows == rows[:1]) else None


def _routes(graph: TorchGraph, source: Layer):
    carried = {}
    for call in source.calls:
        shape = graph.shapes[call]
        axis = channel_axis(source.module)
        carried[call] = np.moveaxis(np.broadcast_to(
            np.arange(shape[axis]), (*np.delete(shape, axis % len(shape)), shape[axis])),
            -1, axis).copy()
    rows: dict = {}
    for node in graph.module.graph.nodes:
        if node in carried:
            continue
        inputs = graph.inputs_of(node)
        found = [carried.get(n) for n in inputs]
        if all(f is None for f in found):
            continue
        consumer = graph.layer_of(node)
        if node.op == "output" or consumer is None:
            return None
        if graph.weighted(consumer):
            owners = _owners_at_input(found[0], consumer.module) if len(inputs) == 1 else None
            if owners is None:
                return None
            rows.setdefault(consumer.name, [consumer, []])[1].append(owners)
            continue
        passed = _passed(graph, node, inputs, found)
        if passed is None:
            return None
        carried[node] = passed
    routes = []
    for consumer, per_call in rows.values():
        if len(per_call) != len(consumer.calls) or any(
                not np.array_equal(r, per_call[0]) for r in per_call):
            return None
        routes.append((consumer, np.asarray(per_call[0])))
    return tuple(routes) or None


def _passed(graph: TorchGraph, node, inputs, found) -> np.ndarray | None:
    """The neuron each value of ``node``'s output carries (-1: none), from what its
    inputs carry; None if ``node`` mixes them with other values."""
    out = graph.shapes[node]
    owners = [np.full(graph.shape(n), -1) if f is None else f
              for n, f in zip(inputs, found, strict=True)]
    module = graph._modules.get(node.target) if node.op == "call_module" else None
    if node.op == "call_function" and node.target in _CONCATENATE:
        dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else 0)
        if dim == 0:
            return None
        return np.concatenate(owners, axis=dim - 1 if dim > 0 else dim)
    if len(owners) != 1:
        return None
    (owner,) = owners
    activation = graph.activation(graph.layer_of(node))
    elementwise = (activation is not None and activation not in MIXING) or isinstance(
        module, (*_DROPOUT_MODULES, *_NORMALIZATION, nn.Identity))
    if elementwise:
        return owner if owner.shape == out and not isinstance(module, nn.LayerNorm) else None
    if isinstance(module, _POOL_MODULES) or (node.op == "call_function"
                                             and node.target in _POOL_FUNCTIONS):
        per_channel = owner.reshape(owner.shape[0], -1)
        if out[0] != owner.shape[0] or not np.all(per_channel == per_channel[:, :1]):
            return None
        return np.broadcast_to(per_channel[:, :1].reshape(-1, *[1] * (len(out) - 1)),
                               out).copy()
    moves = isinstance(module, _MOVE_MODULES) or (
        node.op == "call_function" and node.target in _MOVE_FUNCTIONS) or (
        node.op == "call_method" and node.target in _MOVE_METHODS)
    return _moved(graph, node, inputs[0], owner) if moves else None


def _moved(graph: TorchGraph, node, source, owner: np.ndarray) -> np.ndarray | None:
    """``owner`` moved as ``node`` moves its input's values (a reshape, a permutation)."""
    batch = graph.values[source].shape[0]
    tensor = torch.from_numpy(owner).to(torch.float64).expand(batch, *owner.shape).clone()

    def value(arg):
        if arg is source:
            return tensor
        return graph.values[arg] if isinstance(arg, fx.Node) else arg

    args = fx.node.map_arg(node.args, value)
    kwargs = fx.node.map_arg(node.kwargs, value)
    if node.op == "call_module":
        moved = graph._modules[node.target](*args, **kwargs)
    elif node.op == "call_method":
        moved = getattr(args[0], node.target)(*args[1:], **kwargs)
    else:
        moved = node.target(*args, **kwargs)
    moved = moved[0].numpy().astype(np.int64)
    return moved if tuple(moved.shape) == graph.shapes[node] else None


