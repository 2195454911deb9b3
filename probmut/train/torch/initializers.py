"""Keras' weight initialisers by their Keras names, on torch weights.

Keras and torch initialise differently by default (Keras: Glorot-uniform kernels and
zero biases; torch: Kaiming-uniform with a = sqrt(5) for both), so probmut initialises
its bundled torch architectures as Keras does (:func:`keras_defaults`), and
``change_weights_initialisation:NAME`` applies Keras' ``NAME``: a mutant means the same
thing in both frameworks. Fans are Keras' (a Dense kernel: its inputs and units; a
convolution: the receptive field times its input or output channels), which are torch's
own fans of the same weight; Keras' truncated normals are cut at two standard deviations
and scaled by 1 / 0.8796... so that the variance is the one asked for.

Examples
--------
>>> import torch
>>> weight = torch.empty(64, 512)        # a Dense(64) on 512 inputs, torch's layout
>>> _ = initialise(weight, "glorot_uniform", torch.Generator().manual_seed(0))
>>> bool(weight.abs().max() <= (6 / (512 + 64)) ** 0.5)
True
"""

from __future__ import annotations

import math

import torch
from torch import nn

from probmut.errors import ProbmutError

#: Keras' truncated normal: the standard deviation of a unit normal cut at +-2.
TRUNCATED_SD = 0.87962566103423978


def _fans(weight: torch.Tensor) -> tuple[int, int]:
    return nn.init._calculate_fan_in_and_fan_out(weight)


def _variance_scaling(scale: float, mode: str, distribution: str):
    def apply(weight, generator):
        fan_in, fan_out = _fans(weight)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        n = max(1.0, n)
        if distribution == "uniform":
            limit = math.sqrt(3.0 * scale / n)
            return nn.init.uniform_(weight, -limit, limit, generator=generator)
        if distribution == "untruncated_normal":
            return nn.init.normal_(weight, 0.0, math.sqrt(scale / n), generator=generator)
        sd = math.sqrt(scale / n) / TRUNCATED_SD
        return nn.init.trunc_normal_(weight, 0.0, sd, -2 * sd, 2 * sd, generator=generator)
    return apply


def _truncated(sd):
    def apply(weight, generator):
        return nn.init.trunc_normal_(weight, 0.0, sd, -2 * sd, 2 * sd, generator=generator)
    return apply


#: Keras initialiser name -> ``apply(weight, generator)`` (Keras' defaults: normals of sd
#: 0.05, uniforms on [-0.05, 0.05], an orthogonal gain of 1).
INITIALIZERS = {
    "glorot_uniform": _variance_scaling(1.0, "fan_avg", "uniform"),
    "glorot_normal": _variance_scaling(1.0, "fan_avg", "truncated_normal"),
    "he_uniform": _variance_scaling(2.0, "fan_in", "uniform"),
    "he_normal": _variance_scaling(2.0, "fan_in", "truncated_normal"),
    "lecun_uniform": _variance_scaling(1.0, "fan_in", "uniform"),
    "lecun_normal": _variance_scaling(1.0, "fan_in", "truncated_normal"),
    "variance_scaling": _variance_scaling(1.0, "fan_in", "truncated_normal"),
    "random_normal": lambda w, g: nn.init.normal_(w, 0.0, 0.05, generator=g),
    "random_uniform": lambda w, g: nn.init.uniform_(w, -0.05, 0.05, generator=g),
    "truncated_normal": _truncated(0.05),
    "orthogonal": lambda w, g: nn.init.orthogonal_(w, 1.0, generator=g),
    "zeros": lambda w, g: nn.init.zeros_(w),
    "ones": lambda w, g: nn.init.ones_(w),
}

#: The other names Keras accepts for them (its class names and short names).
ALIASES = {"GlorotUniform": "glorot_uniform", "GlorotNormal": "glorot_normal",
           "HeUniform": "he_uniform", "HeNormal": "he_normal",
           "LecunUniform": "lecun_uniform", "LecunNormal": "lecun_normal",
           "VarianceScaling": "variance_scaling", "RandomNormal": "random_normal",
           "normal": "random_normal", "RandomUniform": "random_uniform",
           "uniform": "random_uniform", "TruncatedNormal": "truncated_normal",
           "Orthogonal": "orthogonal", "OrthogonalInitializer": "orthogonal",
           "Zeros": "zeros", "zero": "zeros", "Ones": "ones", "one": "ones"}


def canonical(name: str) -> str:
    """The Keras initialiser ``name`` as :data:`INITIALIZERS` keys it; raises
    :class:`ProbmutError` for one not here."""
    name = ALIASES.get(name, name)
    if name not in INITIALIZERS:
        raise ProbmutError(f"unknown weight initializer {name!r} for torch; one of "
                           f"{', '.join(sorted(INITIALIZERS))}", option="mutation")
    return name


def initialise(weight: torch.Tensor, name: str, generator: torch.Generator | None = None):
    """Fill ``weight`` (torch's layout) in place with Keras' initialiser ``name``."""
    with torch.no_grad():
        return INITIALIZERS[canonical(name)](weight, generator)


def weighted(module: nn.Module) -> bool:
    """A Dense or convolution layer: torch's ``Linear`` and ``ConvNd`` (not transposed)."""
    return isinstance(module, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d)


def keras_defaults(module: nn.Module, generator: torch.Generator | None = None) -> nn.Module:
    """Initialise every Dense and convolution layer of ``module`` as Keras' default does:
    Glorot-uniform kernels, zero biases (in the order of ``module.modules()``)."""
    for layer in module.modules():
        if weighted(layer):
            initialise(layer.weight, "glorot_uniform", generator)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
    return module
