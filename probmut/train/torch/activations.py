"""Keras' activations by their Keras names, as torch modules, and the activations a
traced torch model already computes (modules, functions and tensor methods).

An activation operator names a Keras activation (``change_activation_function:elu``), so
that a mutant means the same thing in both frameworks; each name maps to the torch
module computing Keras' function with Keras' defaults (``leaky_relu``'s slope 0.2, not
torch's 0.01; ``softmax`` over the class axis, torch's axis 1). Keras' ``glu``,
``sparsemax``, ``sparse_plus``, ``sparse_sigmoid``, ``squareplus`` and ``threshold`` have
no torch module here and are refused by name.

Examples
--------
>>> make("leaky_relu")
LeakyReLU(negative_slope=0.2)
>>> keras_name_of(make("elu")), keras_name_of(make("linear"))
('elu', 'linear')
"""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F
from torch import nn

from probmut.errors import ProbmutError
from probmut.train.torch.modules import Exponential

#: Keras activation name -> a torch module computing it.
ACTIVATIONS = {
    "linear": nn.Identity, "relu": nn.ReLU, "elu": nn.ELU, "selu": nn.SELU, "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid, "softplus": nn.Softplus, "softsign": nn.Softsign,
    "exponential": Exponential, "gelu": nn.GELU, "silu": nn.SiLU, "swish": nn.SiLU,
    "hard_sigmoid": nn.Hardsigmoid, "hard_silu": nn.Hardswish, "hard_swish": nn.Hardswish,
    "leaky_relu": lambda: nn.LeakyReLU(0.2), "relu6": nn.ReLU6, "mish": nn.Mish,
    "celu": nn.CELU, "hard_tanh": nn.Hardtanh, "tanh_shrink": nn.Tanhshrink,
    "soft_shrink": lambda: nn.Softshrink(0.5), "hard_shrink": lambda: nn.Hardshrink(0.5),
    "log_sigmoid": nn.LogSigmoid, "softmax": lambda: nn.Softmax(dim=1),
    "log_softmax": lambda: nn.LogSoftmax(dim=1),
}

#: Activations that combine the values of a sample (not each value on its own).
MIXING = {"softmax", "log_softmax"}

_MODULE_NAMES = {nn.Identity: "linear", nn.ReLU: "relu", nn.ELU: "elu", nn.SELU: "selu",
                 nn.Tanh: "tanh", nn.Sigmoid: "sigmoid", nn.Softplus: "softplus",
                 nn.Softsign: "softsign", Exponential: "exponential", nn.GELU: "gelu",
                 nn.SiLU: "silu", nn.Hardsigmoid: "hard_sigmoid", nn.Hardswish: "hard_silu",
                 nn.LeakyReLU: "leaky_relu", nn.ReLU6: "relu6", nn.Mish: "mish",
                 nn.CELU: "celu", nn.Hardtanh: "hard_tanh", nn.Tanhshrink: "tanh_shrink",
                 nn.Softshrink: "soft_shrink", nn.Hardshrink: "hard_shrink",
                 nn.LogSigmoid: "log_sigmoid", nn.Softmax: "softmax",
                 nn.LogSoftmax: "log_softmax"}

_FUNCTION_NAMES = {F.relu: "relu", torch.relu: "relu", F.elu: "elu", F.selu: "selu",
                   torch.selu: "selu", torch.tanh: "tanh", F.tanh: "tanh",
                   torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid", F.softplus: "softplus",
                   F.softsign: "softsign", torch.exp: "exponential", F.gelu: "gelu",
                   F.silu: "silu", F.hardsigmoid: "hard_sigmoid", F.hardswish: "hard_silu",
                   F.leaky_relu: "leaky_relu", F.relu6: "relu6", F.mish: "mish",
                   F.celu: "celu", F.hardtanh: "hard_tanh", F.tanhshrink: "tanh_shrink",
                   F.softshrink: "soft_shrink", F.hardshrink: "hard_shrink",
                   F.logsigmoid: "log_sigmoid", F.softmax: "softmax", torch.softmax: "softmax",
                   F.log_softmax: "log_softmax", torch.log_softmax: "log_softmax"}

_METHOD_NAMES = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "exp": "exponential",
                 "softmax": "softmax", "log_softmax": "log_softmax"}


def canonical(name: str) -> str:
    """The Keras activation ``name`` as :data:`ACTIVATIONS` keys it; raises
    :class:`ProbmutError` for one torch cannot compute here."""
    if name not in ACTIVATIONS:
        raise ProbmutError(f"unknown activation {name!r} for torch; one of "
                           f"{', '.join(sorted(ACTIVATIONS))}", option="mutation")
    return name


def make(name: str) -> nn.Module:
    """A fresh torch module computing Keras' activation ``name``."""
    return ACTIVATIONS[canonical(name)]()


def keras_name_of(module: nn.Module) -> str | None:
    """The Keras name of the activation ``module`` computes, None if it is not one (a
    leaky ReLU of another slope is named with its slope)."""
    name = _MODULE_NAMES.get(type(module))
    if name == "leaky_relu" and module.negative_slope != 0.2:
        return f"leaky_relu({module.negative_slope:g})"
    return name


def node_activation(node, modules: dict) -> str | None:
    """The Keras name of the activation a traced node computes (a module, a function, a
    tensor method), None if it computes none."""
    if node.op == "call_module":
        return keras_name_of(modules[node.target])
    if node.op == "call_function" and node.target is not operator.getitem:
        try:
            return _FUNCTION_NAMES.get(node.target)
        except TypeError:  # an unhashable callable
            return None
    if node.op == "call_method":
        return _METHOD_NAMES.get(node.target)
    return None
