"""Keras' optimizers by their Keras names, as probmut's own torch updates.

torch's optimizers do not compute Keras' updates: torch's Adam adds its epsilon to the
bias-corrected root of the second moment (Keras adds it to the uncorrected root, and
Keras' epsilon is 1e-7, torch's 1e-8), torch's RMSprop adds epsilon outside the square
root (Keras inside), torch's Adagrad starts its accumulator at 0 (Keras at 0.1). So
that ``change_optimisation_function:rmsprop`` means the same thing in both frameworks,
:class:`KerasOptimizer` applies Keras 3's update rules with Keras' defaults (learning
rates 0.01 for SGD, 0.001 for the others), after Keras' gradient clipping (``clipvalue``
elementwise; ``clipnorm`` per weight tensor, by its own norm) and AdamW's decoupled
weight decay (0.004, every weight).

Every update reads a weight, its gradient and its own state only, so one optimiser
updates a stack of members (weights with a leading member axis) exactly as each member's
own would: only the clipping norm is then taken per member (``stacked=True``).

Examples
--------
>>> import torch
>>> w = torch.zeros(2)
>>> opt = KerasOptimizer("adam", None, None, [w])
>>> opt.learning_rate, opt.epsilon
(0.001, 1e-07)
>>> opt.step([torch.tensor([1.0, -2.0])])
>>> [round(x, 6) for x in w.tolist()]    # Adam's first step: about -lr x sign(gradient)
[-0.001, 0.001]
"""

from __future__ import annotations

import math

import torch

from probmut.errors import ProbmutError

#: Keras optimizer name (lower case) -> its default hyperparameters.
DEFAULTS = {
    "sgd": {"learning_rate": 0.01},
    "adam": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
    "adamw": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7,
              "weight_decay": 0.004},
    "rmsprop": {"learning_rate": 0.001, "rho": 0.9, "epsilon": 1e-7},
    "adadelta": {"learning_rate": 0.001, "rho": 0.95, "epsilon": 1e-7},
    "adagrad": {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7},
    "adamax": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
    "nadam": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7},
    "lion": {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.99},
}


def canonical(name) -> str:
    """The Keras optimizer ``name`` as :data:`DEFAULTS` keys it (Keras takes ``Adam`` and
    ``adam`` alike); raises :class:`ProbmutError` for one not here."""
    if not isinstance(name, str):
        raise ProbmutError("a serialized Keras optimizer (a compiled Keras model's) cannot "
                           "train a torch model; name one of "
                           f"{', '.join(DEFAULTS)}", option="mutation")
    if name.lower() not in DEFAULTS:
        raise ProbmutError(f"unknown optimizer {name!r} for torch; one of "
                           f"{', '.join(DEFAULTS)}", option="mutation")
    return name.lower()


class KerasOptimizer:
    """Keras' optimizer ``name`` over the tensors ``weights`` (updated in place), with
    ``learning_rate`` (None: Keras' default for it) and ``clip`` (``("value" | "norm",
    threshold)`` or None). ``stacked``: the tensors carry a leading member axis."""

    def __init__(self, name, learning_rate: float | None, clip, weights: list,
                 stacked: bool = False):
        self.name = canonical(name)
        settings = dict(DEFAULTS[self.name])
        if learning_rate is not None:
            settings["learning_rate"] = float(learning_rate)
        self.__dict__.update(settings)
        self.clip, self.stacked, self.weights = clip, stacked, list(weights)
        self.iterations = 0
        first = {"adagrad": self.__dict__.get("initial_accumulator_value", 0.0)}.get(self.name,
                                                                                      0.0)
        self.slots = [[torch.full_like(w, first) for w in self.weights]
                      for _ in range(_SLOTS[self.name])]
        self.u_product = 1.0  # Nadam's running product of its momentum schedule

    def clipped(self, grads: list) -> list:
        """Keras' gradient clipping: by value elementwise, or each tensor (each member's
        part of it, stacked) scaled to a norm of at most the threshold."""
        if self.clip is None:
            return grads
        kind, threshold = self.clip
        if kind == "value":
            return [g.clamp(-threshold, threshold) for g in grads]
        clipped = []
        for g in grads:
            axes = tuple(range(1, g.dim())) if self.stacked else tuple(range(g.dim()))
            norm = g.square().sum(axes, keepdim=True).sqrt() if axes else g.abs()
            clipped.append(g * threshold / torch.clamp(norm, min=threshold))
        return clipped

    @torch.no_grad()
    def step(self, grads: list) -> None:
        """One update of every weight from its gradient (in the order of ``weights``)."""
        grads = [g.contiguous() for g in self.clipped(list(grads))]  # fused kernels need it
        self.iterations += 1
        if self.name == "adamw":
            torch._foreach_mul_(self.weights, 1 - self.weight_decay * self.learning_rate)
        _RULES[self.name](self, self.weights, grads, *self.slots)


def _sgd(opt, w, g):
    torch._foreach_add_(w, g, alpha=-opt.learning_rate)


def _adam(opt, w, g, m, v):
    """Keras' Adam, ``w -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps)``, through
    torch's fused Adam kernel: torch's rule ``w -= lr / (1 - b1^t) m / (sqrt(v / (1 -
    b2^t)) + eps')`` is Keras' with ``eps' = eps / sqrt(1 - b2^t)``, given at every step.
    (AdamW's decay is applied before, as Keras applies it.)"""
    t = opt.iterations
    steps = [torch.tensor(float(t)) for _ in w]
    torch._fused_adam_(w, g, m, v, [], steps, lr=opt.learning_rate, beta1=opt.beta_1,
                       beta2=opt.beta_2, weight_decay=0.0,
                       eps=opt.epsilon / math.sqrt(1 - opt.beta_2 ** t), amsgrad=False,
                       maximize=False)


def _rmsprop(opt, w, g, v):
    torch._foreach_mul_(v, opt.rho)
    torch._foreach_addcmul_(v, g, g, value=1 - opt.rho)
    denominator = torch._foreach_add(v, opt.epsilon)
    torch._foreach_sqrt_(denominator)
    torch._foreach_addcdiv_(w, g, denominator, value=-opt.learning_rate)


def _adadelta(opt, w, g, accumulated_grad, accumulated_delta):
    torch._foreach_mul_(accumulated_grad, opt.rho)
    torch._foreach_addcmul_(accumulated_grad, g, g, value=1 - opt.rho)
    delta = torch._foreach_add(accumulated_delta, opt.epsilon)
    torch._foreach_sqrt_(delta)
    torch._foreach_mul_(delta, g)
    rms_grad = torch._foreach_add(accumulated_grad, opt.epsilon)
    torch._foreach_sqrt_(rms_grad)
    torch._foreach_div_(delta, rms_grad)  # Keras' -delta_var
    torch._foreach_mul_(accumulated_delta, opt.rho)
    torch._foreach_addcmul_(accumulated_delta, delta, delta, value=1 - opt.rho)
    torch._foreach_add_(w, delta, alpha=-opt.learning_rate)


def _adagrad(opt, w, g, accumulator):
    torch._foreach_addcmul_(accumulator, g, g)
    denominator = torch._foreach_add(accumulator, opt.epsilon)
    torch._foreach_sqrt_(denominator)
    torch._foreach_addcdiv_(w, g, denominator, value=-opt.learning_rate)


def _adamax(opt, w, g, m, u):
    torch._foreach_lerp_(m, g, 1 - opt.beta_1)
    torch._foreach_mul_(u, opt.beta_2)
    torch._foreach_maximum_(u, torch._foreach_abs(g))
    denominator = torch._foreach_add(u, opt.epsilon)
    step = opt.learning_rate / (1 - opt.beta_1 ** opt.iterations)
    torch._foreach_addcdiv_(w, m, denominator, value=-step)


def _nadam(opt, w, g, m, v):
    t, beta_1, beta_2 = opt.iterations, opt.beta_1, opt.beta_2
    u_t = beta_1 * (1.0 - 0.5 * 0.96 ** t)
    u_next = beta_1 * (1.0 - 0.5 * 0.96 ** (t + 1))
    opt.u_product *= u_t
    torch._foreach_lerp_(m, g, 1 - beta_1)
    torch._foreach_mul_(v, beta_2)
    torch._foreach_addcmul_(v, g, g, value=1 - beta_2)
    m_hat = torch._foreach_mul(m, u_next / (1 - opt.u_product * u_next))
    torch._foreach_add_(m_hat, g, alpha=(1 - u_t) / (1 - opt.u_product))
    denominator = torch._foreach_div(v, 1 - beta_2 ** t)
    torch._foreach_sqrt_(denominator)
    torch._foreach_add_(denominator, opt.epsilon)
    torch._foreach_addcdiv_(w, m_hat, denominator, value=-opt.learning_rate)


def _lion(opt, w, g, m):
    direction = torch._foreach_mul(m, opt.beta_1)
    torch._foreach_add_(direction, g, alpha=1 - opt.beta_1)
    torch._foreach_sign_(direction)
    torch._foreach_add_(w, direction, alpha=-opt.learning_rate)
    torch._foreach_mul_(m, opt.beta_2)
    torch._foreach_add_(m, g, alpha=1 - opt.beta_2)


_RULES = {"sgd": _sgd, "adam": _adam, "adamw": _adam, "rmsprop": _rmsprop,
          "adadelta": _adadelta, "adagrad": _adagrad, "adamax": _adamax, "nadam": _nadam,
          "lion": _lion}
_SLOTS = {"sgd": 0, "adam": 2, "adamw": 2, "rmsprop": 1, "adadelta": 2, "adagrad": 1,
          "adamax": 2, "nadam": 2, "lion": 1}
