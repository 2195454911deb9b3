"""The log density of the model of :mod:`probmut.bayes` and its gradient, compiled by
Numba (cached on disk) for nutpie's sampler, and the priors that PyMC's model of it reads
too; tests/bayes/test_density.py checks them against PyMC's value and gradient.
Parameters on the unconstrained scale, in PyMC's order: mu (2), log sigma (2), then
log(nu - 1) of the Student-t (one shared by both groups; paired: healthy, then
difference). A module of its own, imported on first use, so that importing
:mod:`probmut.bayes`, as the command line does for its choices, needs no Numba.
"""

from __future__ import annotations

import math

import numpy as np

from probmut.compiled import compiled

#: Priors on the scaled data: mu ~ Normal(0, MU_SD), sigma ~ HalfNormal(SIGMA_SD),
#: nu - 1 ~ Exponential with mean NU_MINUS_ONE_MEAN.
MU_SD = 2.0
SIGMA_SD = 2.0
NU_MINUS_ONE_MEAN = 29.0

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@compiled(nogil=True)
def digamma(x):
    # psi(x) for x > 0: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
    # asymptotic series to the x^-10 term (next term below 3e-14 there).
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240
                                                                          - inv2 / 132))))
    return result + math.log(x) - 0.5 / x - series


@compiled(nogil=True)
def _group_log_likelihood(z, mu, sigma, nu, student):
    # Log likelihood of one group and its derivatives in mu, log sigma and nu. With
    # r = (z - mu) / sigma and t = nu + r^2, the t's kernel is -(nu + 1)/2 log(t / nu).
    n = z.shape[0]
    inv_sigma = 1.0 / sigma
    sum_log_t = sum_r = sum_rr = 0.0
    for i in range(n):
        r = (z[i] - mu) * inv_sigma
        if student:
            t = nu + r * r
            inv_t = 1.0 / t
            sum_log_t += math.log(t)
            sum_r += r * inv_t
            sum_rr += r * r * inv_t
        else:
            sum_r += r
            sum_rr += r * r
    if not student:
        logp = -0.5 * sum_rr - n * (math.log(sigma) + _HALF_LOG_2PI)
        return logp, sum_r * inv_sigma, sum_rr - n, 0.0
    kernel = sum_log_t - n * math.log(nu)  # the sum of log(1 + r^2 / nu)
    logp = (n * (math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu)
                 - 0.5 * math.log(nu * math.pi) - math.log(sigma)) - 0.5 * (nu + 1.0) * kernel)
    d_nu = (0.5 * n * (digamma(0.5 * (nu + 1.0)) - digamma(0.5 * nu) - 1.0 / nu)
            - 0.5 * kernel + 0.5 * (nu + 1.0) / nu * sum_rr)
    return logp, (nu + 1.0) * sum_r * inv_sigma, (nu + 1.0) * sum_rr - n, d_nu


@compiled(nogil=True)
def model_log_density(x, first, second, student, paired):
    # The model's log density (PyMC's, the transforms' Jacobians included) and gradient.
    grad = np.zeros(x.shape[0])
    logp = 0.0
    for g in range(2):
        sigma = math.exp(x[2 + g])
        logp += (-0.5 * (x[g] / MU_SD) ** 2 - math.log(MU_SD) - _HALF_LOG_2PI
                 + 0.5 * math.log(2 / math.pi) - math.log(SIGMA_SD)
                 - 0.5 * (sigma / SIGMA_SD) ** 2 + x[2 + g])
        grad[g] -= x[g] / MU_SD**2
        grad[2 + g] += 1.0 - (sigma / SIGMA_SD) ** 2
    for j in range(4, x.shape[0]):
        excess = math.exp(x[j])
        logp += x[j] - math.log(NU_MINUS_ONE_MEAN) - excess / NU_MINUS_ONE_MEAN
        grad[j] += 1.0 - excess / NU_MINUS_ONE_MEAN
    for g in range(2):
        j = 4 + g if paired else 4
        nu = 1.0 + math.exp(x[j]) if student else 0.0
        value, d_mu, d_log_sigma, d_nu = _group_log_likelihood(
            first if g == 0 else second, x[g], math.exp(x[2 + g]), nu, student)
        logp += value
        grad[g] += d_mu
        grad[2 + g] += d_log_sigma
        if student:
            grad[j] += d_nu * (nu - 1.0)
    return logp, grad
