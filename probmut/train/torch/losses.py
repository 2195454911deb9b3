"""Keras' losses by their Keras names, computed in torch as Keras computes them.

A loss is the mean over the batch of a per-sample loss (Keras' ``sum_over_batch_size``),
each as Keras 3 defines it (its epsilon 1e-7, ``huber``'s delta 1, hinge losses turning
0/1 labels into -1/+1). As in Keras, a crossentropy on the output of a softmax (or a
binary crossentropy on a sigmoid's) is computed from the logits the activation received
(:class:`Outputs`), not from clipped probabilities: the model's training graph hands
them over (:mod:`probmut.train.torch.build`).

Examples
--------
>>> import torch
>>> logits = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
>>> target = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
>>> soft = Outputs(logits, "softmax")
>>> round(float(batch_loss("categorical_crossentropy", target, soft)), 4)
1.1269
>>> round(float(batch_loss("mse", target, soft)), 4)      # on the probabilities
0.395
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from probmut.errors import ProbmutError

#: Keras' ``backend.epsilon()``.
EPSILON = 1e-7


@dataclass(frozen=True)
class Outputs:
    """A model's outputs for a batch: ``values`` as the model gives them, or the logits
    of its final softmax (``logits_of="softmax"``) or sigmoid (``"sigmoid"``)."""

    values: torch.Tensor
    logits_of: str | None = None

    @property
    def probabilities(self) -> torch.Tensor:
        if self.logits_of == "softmax":
            return torch.softmax(self.values, dim=-1)
        if self.logits_of == "sigmoid":
            return torch.sigmoid(self.values)
        return self.values


def _clip(x, low=EPSILON, high=1 - EPSILON):
    return x.clamp(low, high)


def categorical_crossentropy(target, outputs: Outputs):
    if outputs.logits_of == "softmax":
        return -(target * torch.log_softmax(outputs.values, dim=-1)).sum(-1)
    p = outputs.values
    p = _clip(p / p.sum(-1, keepdim=True))
    return -(target * torch.log(p)).sum(-1)


def sparse_categorical_crossentropy(target, outputs: Outputs):
    labels = target.long().reshape(-1)
    values = outputs.values.reshape(len(labels), -1)
    if outputs.logits_of != "softmax":
        values = torch.log(_clip(values))
    return F.cross_entropy(values, labels, reduction="none").reshape(outputs.values.shape[:-1])


def binary_crossentropy(target, outputs: Outputs):
    if outputs.logits_of == "sigmoid":
        return F.binary_cross_entropy_with_logits(outputs.values, target,
                                                  reduction="none").mean(-1)
    p = _clip(outputs.probabilities)
    return -(target * torch.log(p) + (1 - target) * torch.log(1 - p)).mean(-1)


def _mean_squared_error(t, p):
    return ((t - p) ** 2).mean(-1)


def _mean_absolute_error(t, p):
    return (t - p).abs().mean(-1)


def _mean_absolute_percentage_error(t, p):
    return 100.0 * ((t - p) / t.abs().clamp_min(EPSILON)).abs().mean(-1)


def _mean_squared_logarithmic_error(t, p):
    return ((torch.log(p.clamp_min(EPSILON) + 1) - torch.log(t.clamp_min(EPSILON) + 1))
            ** 2).mean(-1)


def _hinge_labels(t):
    """Keras turns 0/1 labels (all of the batch's) into -1/+1 for its hinge losses."""
    return torch.where(((t == 0) | (t == 1)).all(), 2.0 * t - 1.0, t)


def _hinge(t, p):
    return (1.0 - _hinge_labels(t) * p).clamp_min(0).mean(-1)


def _squared_hinge(t, p):
    return ((1.0 - _hinge_labels(t) * p).clamp_min(0) ** 2).mean(-1)


def _categorical_hinge(t, p):
    return (((1 - t) * p).amax(-1) - (t * p).sum(-1) + 1.0).clamp_min(0)


def _log_cosh(t, p):
    x = p - t
    return (x + F.softplus(-2.0 * x) - math.log(2.0)).mean(-1)


def _huber(t, p, delta=1.0):
    error = (p - t).abs()
    return torch.where(error <= delta, 0.5 * error ** 2,
                       delta * error - 0.5 * delta ** 2).mean(-1)


def _kl_divergence(t, p):
    t, p = _clip(t, EPSILON, 1), _clip(p, EPSILON, 1)
    return (t * torch.log(t / p)).sum(-1)


def _poisson(t, p):
    return (p - t * torch.log(p + EPSILON)).mean(-1)


def _cosine_similarity(t, p):
    def normalized(x):
        return x * torch.rsqrt((x * x).sum(-1, keepdim=True).clamp_min(1e-12))
    return -(normalized(t) * normalized(p)).sum(-1)


def _on_probabilities(function):
    def loss(target, outputs: Outputs):
        return function(target, outputs.probabilities)
    return loss


#: Keras loss name -> ``loss(target, outputs) -> per-sample losses``.
LOSSES = {
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    **{function.__name__[1:]: _on_probabilities(function) for function in [
        _mean_squared_error, _mean_absolute_error, _mean_absolute_percentage_error,
        _mean_squared_logarithmic_error, _hinge, _squared_hinge, _categorical_hinge,
        _log_cosh, _huber, _kl_divergence, _poisson, _cosine_similarity]},
}

#: The other names Keras accepts for them (short names and class names).
ALIASES = {"mse": "mean_squared_error", "MSE": "mean_squared_error",
           "MeanSquaredError": "mean_squared_error", "mae": "mean_absolute_error",
           "MAE": "mean_absolute_error", "MeanAbsoluteError": "mean_absolute_error",
           "mape": "mean_absolute_percentage_error", "MAPE": "mean_absolute_percentage_error",
           "MeanAbsolutePercentageError": "mean_absolute_percentage_error",
           "msle": "mean_squared_logarithmic_error", "MSLE": "mean_squared_logarithmic_error",
           "MeanSquaredLogarithmicError": "mean_squared_logarithmic_error",
           "kld": "kl_divergence", "KLD": "kl_divergence", "KLDivergence": "kl_divergence",
           "bce": "binary_crossentropy", "BCE": "binary_crossentropy",
           "BinaryCrossentropy": "binary_crossentropy",
           "CategoricalCrossentropy": "categorical_crossentropy",
           "SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
           "Hinge": "hinge", "SquaredHinge": "squared_hinge",
           "CategoricalHinge": "categorical_hinge", "LogCosh": "log_cosh", "Huber": "huber",
           "Poisson": "poisson", "CosineSimilarity": "cosine_similarity"}


def canonical(name: str) -> str:
    """The Keras loss ``name`` as :data:`LOSSES` keys it; raises :class:`ProbmutError` for
    one not here."""
    name = ALIASES.get(name, name)
    if name not in LOSSES:
        raise ProbmutError(f"unknown loss {name!r} for torch; one of "
                           f"{', '.join(sorted(LOSSES))}", option="mutation")
    return name


def batch_loss(name: str, target: torch.Tensor, outputs: Outputs) -> torch.Tensor:
    """Keras' loss ``name`` of a batch: the mean of its per-sample losses (of each
    member's batch, for a stack's outputs ``(members, batch, classes)``: one per member)."""
    per_sample = LOSSES[canonical(name)](target, outputs)
    return per_sample.mean() if per_sample.dim() == 1 else per_sample.mean(-1)
