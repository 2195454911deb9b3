"""A stack's members as one model of batched matrix products.

PyTorch's ensembling (``vmap`` over the member's model) runs each layer through its
batching rule; for a chain of the common layers this module runs the traced graph itself
on the members' data side by side, every tensor laid out as ``(members, ...one sample's
shape..., batch)``: the batch last, so that each layer is one kernel for all members and
no layer copies its input into another layout:

* a Dense layer is one batched matrix product, ``(members, out, in) @ (members, in,
  batch)``;
* a convolution is one batched matrix product of the kernel and its input's columns
  (the input values under each kernel position: :meth:`Geometry.columns`), ``(members, out,
  in x kernel) @ (members, in x kernel, positions x batch)``, whose result is the output
  in the same layout;
* flattening is a view (one sample's values are already in torch's order);
* 2-D pooling is torch's pooling of the tensor read as channels-last images (an image
  per member and channel, the batch as its channels): no copy either way;
* a ReLU read only by a max pool runs after the pool, on fewer values (the maximum of
  ReLUs is the ReLU of the maximum, and their gradients are equal too: ReLU keeps the
  order of values and is flat where it changes them);
* elementwise layers (activations, dropout with the members' masks) run as they are;
  a softmax over classes and the output read the members' batches in their own order,
  ``(members, batch, ...)``.

Member k computes exactly its own model's function (its weights only, its data only);
only the summation order of the batched kernels differs from the model run alone.
:func:`problem` says why a model is not such a chain (then the stack uses ``vmap``).

Examples
--------
>>> import torch
>>> from torch import nn
>>> from probmut.train.torch.build import Built
>>> from probmut.train.torch.graph import TorchGraph, trace
>>> model = trace(nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
...                             nn.Flatten(), nn.Linear(8, 3)))
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

import itertools
import math

import torch
import torch.nn.functional as F
from torch import nn

from probmut.train.torch.activations import MIXING, node_activation
from probmut.train.torch.modules import SeededDropout

_CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_MAX_POOLS = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)
_POOLS = (*_MAX_POOLS, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
_FLATTEN_FUNCTIONS = {torch.flatten}


def _flattens(node, module) -> bool:
    """A flatten of every axis but the batch's."""
    if isinstance(module, nn.Flatten):
        return module.start_dim == 1 and module.end_dim == -1
    start = node.kwargs.get("start_dim", node.args[1] if len(node.args) > 1 else 0)
    end = node.kwargs.get("end_dim", node.args[2] if len(node.args) > 2 else -1)
    flattens = (node.op == "call_function" and node.target in _FLATTEN_FUNCTIONS) or (
        node.op == "call_method" and node.target == "flatten")
    return flattens and start == 1 and end == -1


def _sample_shape(built, node) -> tuple | None:
    """The per-sample shape of ``node``'s value (a node of the training graph), if known."""
    if node.op == "placeholder":
        return tuple(built.input_shape)
    same = {n.name: n for n in built.graph.module.graph.nodes}.get(node.name)  # the model's
    return built.graph.shapes.get(same)


def _kind(built, node) -> str | None:
    """How the grouped model runs ``node``, None if it cannot."""
    module = None
    if node.op in ("placeholder", "output"):
        return node.op
    if node.op == "call_module":
        module = built.training_module.get_submodule(node.target)
    if isinstance(module, _CONVOLUTIONS):
        plain = module.groups == 1 and module.padding_mode == "zeros"
        return "convolution" if plain else None
    if isinstance(module, nn.Linear):
        flat = _sample_shape(built, node.all_input_nodes[0])
        return "dense" if flat is not None and len(flat) == 1 else None
    if isinstance(module, SeededDropout):
        return "dropout"
    if isinstance(module, _POOLS):
        return None if getattr(module, "return_indices", False) else "pool"
    if _flattens(node, module):
        return "flatten"
    activation = node_activation(node, dict(built.training_module.named_modules()))
    if activation is not None and activation not in MIXING:
        return "elementwise"
    shape = _sample_shape(built, node)
    if activation in MIXING and shape is not None and len(shape) == 1:
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
        modules = dict(self.module.named_modules())
        steps = [(node, node, _kind(built, node), modules.get(node.target)
                  if node.op == "call_module" else None, node.all_input_nodes[:1])
                 for node in self.module.graph.nodes]
        for i in range(len(steps) - 1):
            relu, _, _, relu_module, before = steps[i]
            pool, _, kind, pool_module, _ = steps[i + 1]
            if kind == "pool" and isinstance(pool_module, _MAX_POOLS) and \
                    node_activation(relu, modules) == "relu" and list(relu.users) == [pool]:
                # max pooling then ReLU: the same values and gradients (ReLU keeps the
                # order of values and is flat where it changes them), ReLU on fewer
                steps[i:i + 2] = [(relu, pool, "pool", pool_module, before),
                                  (pool, relu, "elementwise", relu_module, [relu])]
        #: in the order they run: (the value computed, the node whose operation computes
        #: it, its kind, its module or None, the values it reads)
        self.steps = steps

    def __call__(self, weights: dict, x: torch.Tensor, masks: dict) -> torch.Tensor:
        values = {}
        for computed, node, kind, module, reads in self.steps:
            if kind == "placeholder":
                values[computed] = x.movedim(1, -1).contiguous()
                continue
            value = values[reads[0]]
            if kind == "output":
                return value.movedim(-1, 1)
            values[computed] = self._run(node, kind, module, value, weights, masks)
        raise ValueError("the graph has no output")

    def _run(self, node, kind, module, value, weights, masks):
        members, batch = value.shape[0], value.shape[-1]
        if kind in ("convolution", "dense"):
            kernel = weights[f"{node.target}.weight"]
            bias = weights.get(f"{node.target}.bias")
            if kind == "convolution":
                return _convolve(value, kernel, bias, module)
            return torch.bmm(kernel, value) if bias is None else \
                torch.baddbmm(bias.unsqueeze(-1), kernel, value)
        if kind == "dropout":
            mask = masks.get(f"{node.target}.mask")
            if not module.training or mask is None:
                return value
            return value * mask.movedim(1, -1)
        if kind == "flatten":
            return value.reshape(members, -1, batch)
        if kind == "pool":  # an image per member and channel, the batch as its channels
            images = value.reshape(members * value.shape[1], *value.shape[2:]).movedim(-1, 1)
            pooled = module(images).movedim(1, -1)
            return pooled.reshape(members, value.shape[1], *pooled.shape[1:])
        if kind == "classes":
            rows = value.movedim(-1, 1).reshape(members * batch, -1)
            return _apply(node, module, rows).reshape(members, batch, -1).movedim(1, -1)
        return _apply(node, module, value)


def _apply(node, module, value):
    """``node``'s own operation on ``value``."""
    if module is not None:
        return module(value)
    if node.op == "call_method":
        return getattr(value, node.target)(*node.args[1:], **node.kwargs)
    return node.target(value, *node.args[1:], **node.kwargs)


def _convolve(value, kernel, bias, module):
    """The members' convolution of ``value`` ``(members, in, ...positions..., batch)`` by
    their ``kernel`` ``(members, out, in, ...)`` and ``bias`` (or None)."""
    geometry = Geometry.of(module, value.shape[2:-1])
    out = Convolution.apply(value, kernel, bias, geometry)
    return out.reshape(*kernel.shape[:2], *geometry.outputs, value.shape[-1])


class Geometry:
    """Where a convolution reads its input: per spatial axis the kernel's size, stride,
    dilation, zeros padded before and after, and the output's size."""

    def __init__(self, kernel, stride, dilation, padding, sizes):
        self.kernel, self.stride, self.dilation, self.padding = kernel, stride, dilation, padding
        self.outputs = tuple((size + low + high - d * (k - 1) - 1) // s + 1 for size, k, s, d,
                             (low, high) in zip(sizes, kernel, stride, dilation, padding,
                                                strict=True))

    @classmethod
    def of(cls, module, sizes):
        """The geometry of convolution ``module`` on inputs of spatial ``sizes``."""
        if module.padding == "valid":
            padding = [(0, 0)] * len(sizes)
        elif module.padding == "same":  # torch's: the odd one after
            padding = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                       for k, d in zip(module.kernel_size, module.dilation, strict=True)]
        else:
            padding = [(p, p) for p in module.padding]
        return cls(module.kernel_size, module.stride, module.dilation, padding, sizes)

    def columns(self, value):
        """``value`` ``(members, in, ...positions..., batch)`` as its columns ``(members,
        in x kernel, output positions x batch)``: for every input channel and kernel
        position, the values each output position reads there (zeros in the padding),
        the rows in the order of torch's kernel ``(out, in, ...kernel...)``."""
        pad = [0, 0] + [p for low_high in reversed(self.padding) for p in low_high]
        padded = F.pad(value, pad) if any(pad) else value
        strides = padded.stride()
        spatial = strides[2:-1]
        windows = padded.as_strided(
            (*value.shape[:2], *self.kernel, *self.outputs, value.shape[-1]),
            (*strides[:2], *(s * d for s, d in zip(spatial, self.dilation, strict=True)),
             *(s * t for s, t in zip(spatial, self.stride, strict=True)), strides[-1]))
        return windows.reshape(value.shape[0], value.shape[1] * math.prod(self.kernel), -1)

    def added_back(self, columns, shape):
        """The input of ``shape`` that gets each column's values added back onto the
        value it read: the gradient of :meth:`columns`."""
        columns = columns.reshape(*shape[:2], *self.kernel, *self.outputs, shape[-1])
        result = columns.new_zeros(shape)
        whole = (slice(None),) * 2
        for offset in itertools.product(*(range(k) for k in self.kernel)):
            reads = self._reads(offset, shape[2:-1])
            if reads is not None:
                outputs, inputs = reads
                result[(*whole, *inputs)].add_(columns[(*whole, *offset, *outputs)])
        return result

    def _reads(self, offset: tuple, sizes: tuple):
        """For the kernel position ``offset``: the output positions that read an input
        value (not a padded zero) there, and the input positions they read, as slices
        per axis."""
        outputs, inputs = [], []
        for i, size, n, s, d, (low, _) in zip(offset, sizes, self.outputs, self.stride,
                                              self.dilation, self.padding, strict=True):
            first = max(0, -(-(low - i * d) // s))
            last = min(n - 1, (size - 1 + low - i * d) // s)
            if first > last:
                return None
            start = first * s + i * d - low
            outputs.append(slice(first, last + 1))
            inputs.append(slice(start, start + (last - first) * s + 1, s))
        return tuple(outputs), tuple(inputs)


class Convolution(torch.autograd.Function):
    """The members' convolution as one batched matrix product of their kernels
    ``(members, out, in x kernel)`` and the input's columns (:meth:`Geometry.columns`):
    ``(members, out, output positions x batch)``. Its gradients are batched matrix
    products too, the kernel's computed transposed (``columns @ grad^T``: twice as fast
    as ``grad @ columns^T`` on a columns matrix this wide)."""

    @staticmethod
    def forward(ctx, value, kernel, bias, geometry):
        columns = geometry.columns(value)
        flat = kernel.reshape(kernel.shape[0], kernel.shape[1], -1)
        ctx.save_for_backward(columns, kernel)
        ctx.geometry, ctx.shape = geometry, value.shape
        return torch.bmm(flat, columns) if bias is None else \
            torch.baddbmm(bias.unsqueeze(-1), flat, columns)

    @staticmethod
    def backward(ctx, grad):
        columns, kernel = ctx.saved_tensors
        flat = kernel.reshape(kernel.shape[0], kernel.shape[1], -1)
        grad_value = grad_kernel = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_value = ctx.geometry.added_back(torch.bmm(flat.transpose(1, 2), grad),
                                                 ctx.shape)
        if ctx.needs_input_grad[1]:
            grad_kernel = torch.bmm(columns, grad.transpose(1, 2)).transpose(1, 2).reshape(
                kernel.shape)
        if ctx.needs_input_grad[2]:
            grad_bias = grad.sum(-1)
        return grad_value, grad_kernel, grad_bias, None
