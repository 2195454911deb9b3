"""Model-based posterior of the kill probability (nutpie or PyMC), with ArviZ diagnostics.

The bagged posterior (:mod:`probmut.bagging`) resamples the instances that were
trained, so with 20-30 instances it can only replay those few. Here each population's
accuracies get a parametric model; the kill probability ``pi`` (the chance that one
k-vs-k kill test on fresh instances kills) is a function of the model's parameters,
and its posterior follows from theirs.

Model (Kruschke's BEST, on data scaled to the pair)
---------------------------------------------------
Independent populations (source-level mutations), group g in {healthy, mutant}::

    z = (accuracy - c) / s            c, s: mean and sd of both groups pooled
    z_gi ~ StudentT(nu, mu_g, sigma_g)
    mu_g ~ Normal(0, 2)   sigma_g ~ HalfNormal(2)   nu - 1 ~ Exponential(1/29)

Paired populations (model-level mutations: mutant i derived from healthy i) are
modelled through the per-instance differences ``d_i = mutant_i - healthy_i``::

    healthy_i ~ StudentT(nu_h, mu_h, sigma_h)  (scaled as above)
    d_i / r   ~ StudentT(nu_d, mu_d, sigma_d)  r = sqrt(mean(d^2)), priors as above

so a simulated mutant instance is a simulated healthy one plus a simulated difference.

The Student-t likelihood, with a shared normality parameter ``nu`` (prior mean 30, so
near-normal unless the data say otherwise), absorbs an instance that trained badly, where
a normal likelihood lets one outlier inflate sigma; ``likelihood="normal"`` is offered
for comparison. The priors are weakly informative on the scaled data, so they do not
depend on the accuracy's units. Why this model and not another: docs/validation.md.

For every posterior draw, ``trials`` k-vs-k kill tests are simulated from the model and
decided by :func:`probmut.killtest.kill_test_batch` with the user's
:class:`~probmut.killtest.KillCriterion`; the share killed is ``pi`` for that draw. Its
interval also holds the binomial noise of ``trials`` simulated tests per draw.

Effect sizes: the mean accuracy difference is ``mu_mutant - mu_healthy``; Cohen's d is
``(mu_healthy - mu_mutant) / sqrt((sigma_h^2 + sigma_m^2) / 2)`` as in BEST (for the
paired model ``sigma_m^2 = sigma_h^2 + sigma_d^2``), healthy minus mutant as in DeepCrime.

The rooms: :mod:`~probmut.bayes.settings` (:class:`BayesSettings`, plain Python, read by
the command line), :mod:`~probmut.bayes.model` (the data on the model's scale),
:mod:`~probmut.bayes.density` (priors and the log density compiled by Numba),
:mod:`~probmut.bayes.nutpie_sampler` and :mod:`~probmut.bayes.pymc_sampler` (one NUTS
each: the same posterior, other draws), :mod:`~probmut.bayes.kill` (the simulated kill
tests), :mod:`~probmut.bayes.diagnostics` (ArviZ's convergence checks),
:mod:`~probmut.bayes.results` (the answers) and :mod:`~probmut.bayes.fit` (the fits).
Nothing of the ``bayes`` extra (PyMC, nutpie, ArviZ) nor Numba is imported until a fit.

References
----------
Kruschke. Bayesian estimation supersedes the t test. J. Exp. Psychol. General, 2013.
Vehtari, Gelman, Simpson, Carpenter, Buerkner. Rank-normalization, folding, and
localization: an improved R-hat. Bayesian Analysis, 2021.
"""

from probmut.bayes.diagnostics import ConvergenceWarning, Diagnostics
from probmut.bayes.fit import model_posterior, model_posteriors
from probmut.bayes.results import BayesComparison, BayesStudy
from probmut.bayes.settings import LIKELIHOODS, SAMPLERS, BayesSettings

__all__ = ["LIKELIHOODS", "SAMPLERS", "BayesComparison", "BayesSettings", "BayesStudy",
           "ConvergenceWarning", "Diagnostics", "model_posterior", "model_posteriors"]
