"""A stack's members as one model of grouped convolutions and batched matrix products.

PyTorch's ensembling (``vmap`` over the member's model) runs each layer through its
batching rule; for a chain of the common layers this module runs the traced graph itself
on the members' data side by side, with the kernels that suit a stack on a CPU:

* a convolution is one convolution with a group per member, its input laid out with
  the members' channels side by side, ``(batch, members x channels, ...)``, in which
  the layers between convolutions (activations, pooling, dropout) also run;
* a Dense layer is a batched matrix product ``(members, batch, in) @ (members, in, out)``;
* flattening, softmax and the loss read the members one after the other,
  ``(members x batch, ...)``.

Member k computes exactly its own model's function (its weights only, its data only);
only the summation order of the batched kernels differs from the model run alone.
:func:`problem` says why a model is not such a chain (then the stack uses ``vmap``).

Examples
--------
>>> import torch
>>> from torch import nn
>>> from probmut.train.torch.build import Built
>>> from probmut.train.torch.graph import TorchGraph, trace
>>> model = trace(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3)))
>>> built = Built(model, TorchGraph(model, (1, 4, 4)), (1, 4, 4))
>>> problem(built) is None
True
>>> weights = {n: torch.stack([w, w + 1]) for n, w in model.named_parameters()}
>>> x = torch.randn(2, 5, 1, 4, 4)       # (members, batch, ...)
>>> out = GroupedModel(built)(weights, x, {})
>>> out.shape
torch.Size([2, 5, 3])
>>> bool(torch.allclose(out[0], model(x[0]), atol=1e-6))   # member 0: its own model
True
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from probmut.train.torch.activations import MIXING, node_activation
from probmut.train.torch.modules import SeededDropout

_CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_CONVOLVE = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}
_POOLS = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
_FLATTEN_FUNCTIONS = {torch.flatten}
MERGED, CHANNELS = "members, batch", "batch, member channels"


def _flattens(node, module) -> bool:
    """A flatten of every axis but the batch's."""
    if isinstance(module, nn.Flatten):
        return module.start_dim == 1 and module.end_dim == -1
    start = node.kwargs.get("start_dim", node.args[1] if len(node.args) > 1 else 0)
    end = node.kwargs.get("end_dim", node.args[2] if len(node.args) > 2 else -1)
    flattens = (node.op == "call_function" and node.target in _FLATTEN_FUNCTIONS) or (
        node.op == "call_method" and node.target == "flatten")
    return flattens and start == 1 and end == -1


def _kind(built, node) -> str | None:
    """How the grouped model runs ``node``, None if it cannot."""
    graph, module = built.graph, None
    if node.op in ("placeholder", "output"):
        return node.op
    if node.op == "call_module":
        module = built.training_module.get_submodule(node.target)
    if isinstance(module, _CONVOLUTIONS):
        plain = module.groups == 1 and module.padding_mode == "zeros"
        return "convolution" if plain else None
    if isinstance(module, nn.Linear):
        return "dense"
    if isinstance(module, SeededDropout):
        return "dropout"
    if isinstance(module, _POOLS):
        return "pool"
    if _flattens(node, module):
        return "flatten"
    activation = node_activation(node, dict(built.training_module.named_modules()))
    if activation is not None and activation not in MIXING:
        return "elementwise"
    same = {n.name: n for n in graph.module.graph.nodes}.get(node.name)  # the model's node
    if activation in MIXING and same in graph.shapes and len(graph.shapes[same]) == 1:
        return "classes"
    return None


def problem(built) -> str | None:
    """Why ``built``'s training graph is not a chain the grouped model runs, or None."""
    if built.graph is None:
        return built.problem
    for node in built.training_module.graph.nodes:
        inputs = [n for n in node.all_input_nodes]
        if node.op not in ("placeholder", "output") and len(inputs) != 1:
            return f"{node.name} reads {len(inputs)} tensors"
        if _kind(built, node) is None:
            return f"{node.name} ({node.op} {node.target}) is not a layer the grouped model runs"
    return None


class GroupedModel:
    """The members' training graph of ``built`` run side by side (module notes):
    ``model(weights, x, masks)`` with stacked ``weights`` (name -> ``(members, ...)``),
    inputs ``x`` ``(members, batch, ...)`` and the dropouts' ``masks`` (``NAME.mask`` ->
    ``(members, batch, ...)``) gives the outputs ``(members, batch, ...)``."""

    def __init__(self, built):
        self.module = built.training_module
        self.steps = [(node, _kind(built, node)) for node in self.module.graph.nodes]

    def __call__(self, weights: dict, x: torch.Tensor, masks: dict) -> torch.Tensor:
        members, batch = x.shape[:2]
        values = {}
        for node, kind in self.steps:
            if kind == "placeholder":
                values[node] = (x.reshape(members * batch, *x.shape[2:]), MERGED)
                continue
            value, layout = values[node.all_input_nodes[0]]
            if kind == "output":
                return _merged(value, layout, members, batch).reshape(members, batch, -1)
            values[node] = self._run(node, kind, value, layout, weights, masks, members, batch)
        raise ValueError("the graph has no output")

    def _run(self, node, kind, value, layout, weights, masks, members, batch):
        module = self.module.get_submodule(node.target) if node.op == "call_module" else None
        if kind == "convolution":
            value = _side_by_side(value, layout, members, batch)
            kernel = weights[f"{node.target}.weight"]
            bias = weights.get(f"{node.target}.bias")
            out = _CONVOLVE[type(module)](
                value, kernel.reshape(-1, *kernel.shape[2:]),
                None if bias is None else bias.reshape(-1), module.stride, module.padding,
                module.dilation, groups=members)
            return out, CHANNELS
        if kind == "dense":
            value = _merged(value, layout, members, batch).reshape(members, batch, -1)
            kernel = weights[f"{node.target}.weight"].transpose(1, 2)
            bias = weights.get(f"{node.target}.bias")
            out = torch.bmm(value, kernel) if bias is None else \
                torch.baddbmm(bias.unsqueeze(1), value, kernel)
            return out.reshape(members * batch, -1), MERGED
        if kind == "dropout":
            mask = masks.get(f"{node.target}.mask")
            if not module.training or mask is None:
                return value, layout
            mask = mask.reshape(members * batch, *mask.shape[2:])
            return value * (mask if layout == MERGED else
                            _side_by_side(mask, MERGED, members, batch)), layout
        if kind == "flatten":
            return _merged(value, layout, members, batch).reshape(members * batch, -1), MERGED
        if kind == "pool" and value.dim() == 4:
            # torch's 2-D pooling is many times faster on channels-last memory
            pooled = module(value.contiguous(memory_format=torch.channels_last))
            return pooled.contiguous(), layout
        if kind == "classes":
            value, layout = _merged(value, layout, members, batch), MERGED
        if node.op == "call_module":
            return module(value), layout
        if node.op == "call_method":
            return getattr(value, node.target)(*node.args[1:], **node.kwargs), layout
        return node.target(value, *node.args[1:], **node.kwargs), layout


def _merged(value, layout, members, batch):
    """``(members x batch, channels, ...)`` from either layout."""
    if layout == MERGED:
        return value
    channels = value.shape[1] // members
    return value.reshape(batch, members, channels, *value.shape[2:]).transpose(0, 1).reshape(
        members * batch, channels, *value.shape[2:])


def _side_by_side(value, layout, members, batch):
    """``(batch, members x channels, ...)`` from either layout."""
    if layout == CHANNELS:
        return value
    channels = value.shape[1]
    return value.reshape(members, batch, channels, *value.shape[2:]).transpose(0, 1).reshape(
        batch, members * channels, *value.shape[2:])
