"""The torch modules probmut puts into a model, each computing what its Keras layer
computes: :class:`SeededDropout` (Keras' ``Dropout``, its masks from the instance's own
generator), :class:`BatchNormalization` (Keras' ``BatchNormalization``, the layer
``add_layer`` inserts) and :class:`Exponential` (Keras' ``exponential`` activation).

Examples
--------
>>> import torch
>>> drop = SeededDropout(0.5).train()
>>> drop.generator = torch.Generator().manual_seed(1)
>>> out = drop(torch.ones(1, 8))
>>> sorted(set(out.flatten().tolist()))   # dropped, or kept and scaled by 1 / (1 - 0.5)
[0.0, 2.0]
>>> norm = BatchNormalization(3)
>>> norm.momentum, norm.epsilon      # Keras' defaults (torch's: 0.1 of the batch, 1e-5)
(0.99, 0.001)
"""

from __future__ import annotations

import torch
from torch import nn


class SeededDropout(nn.Module):
    """Keras' ``Dropout(rate)`` (inverted dropout: a value is kept where a uniform draw is
    at least ``rate``, and scaled by ``1 / (1 - rate)``) with its masks drawn from
    ``generator`` (the instance's own: :mod:`probmut.train.torch.fitting` sets it), or
    given as ``mask`` (a stack draws each member's masks from the member's generator and
    hands them in). The identity at inference, as Keras' layer."""

    def __init__(self, p: float):
        super().__init__()
        self.p = float(p)
        self.generator: torch.Generator | None = None
        self.register_buffer("mask", None, persistent=False)  # a stack hands masks in

    def extra_repr(self) -> str:
        return f"p={self.p:g}"

    def draw(self, shape, generator: torch.Generator | None) -> torch.Tensor:
        """A mask (the kept values' scale, 0 where dropped) of ``shape``."""
        return self.masked(torch.rand(shape, generator=generator))

    def draw_members(self, shape, generators: list) -> torch.Tensor:
        """Each member's mask of ``shape`` from its own generator, stacked: member k's is
        the one :meth:`draw` gives it alone."""
        uniform = torch.empty((len(generators), *shape))
        for k, generator in enumerate(generators):
            torch.rand(shape, generator=generator, out=uniform[k])
        return self.masked(uniform)

    def masked(self, uniform: torch.Tensor) -> torch.Tensor:
        if self.p >= 1:
            return torch.zeros_like(uniform)
        return (uniform >= self.p).to(torch.float32) / (1.0 - self.p)

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        mask = self.mask if self.mask is not None else self.draw(x.shape, self.generator)
        return x * mask


class BatchNormalization(nn.Module):
    """Keras' ``BatchNormalization()`` over torch's channel axis (1): in training each
    channel is normalised by its batch mean and (biased) variance, and the moving
    statistics follow ``moving = momentum x moving + (1 - momentum) x batch`` (momentum
    0.99, epsilon 1e-3; torch's ``BatchNorm`` keeps 0.9 of the old value, uses epsilon
    1e-5 and the unbiased variance for its running statistics); at inference the moving
    statistics normalise."""

    def __init__(self, channels: int, momentum: float = 0.99, epsilon: float = 1e-3):
        super().__init__()
        self.momentum, self.epsilon = momentum, epsilon
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))
        self.register_buffer("moving_mean", torch.zeros(channels))
        self.register_buffer("moving_variance", torch.ones(channels))

    def forward(self, x):
        shape = [1, -1] + [1] * (x.dim() - 2)
        if self.training:
            axes = [0, *range(2, x.dim())]
            mean = x.mean(axes)
            variance = x.var(axes, unbiased=False)
            with torch.no_grad():
                self.moving_mean.mul_(self.momentum).add_(mean.detach(), alpha=1 - self.momentum)
                self.moving_variance.mul_(self.momentum).add_(variance.detach(),
                                                              alpha=1 - self.momentum)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        scale = self.gamma * torch.rsqrt(variance + self.epsilon)
        return (x - mean.reshape(shape)) * scale.reshape(shape) + self.beta.reshape(shape)


class Exponential(nn.Module):
    """Keras' ``exponential`` activation: ``exp(x)``."""

    def forward(self, x):
        return torch.exp(x)
