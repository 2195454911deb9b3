"""Fitting the model: :func:`model_posterior` (one mutant) and :func:`model_posteriors`
(several), from populations to the posterior of the kill probability, the mean accuracy
difference and Cohen's d, with diagnostics."""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import numpy as np

from probmut import seeds
from probmut.bayes.diagnostics import ConvergenceWarning, arviz, diagnostics_of
from probmut.bayes.kill import simulated_kill_rates
from probmut.bayes.model import scaled_data
from probmut.bayes.nutpie_sampler import sample as nutpie_sample
from probmut.bayes.pymc_sampler import sample as pymc_sample
from probmut.bayes.results import BayesComparison, BayesStudy
from probmut.bayes.settings import BayesSettings
from probmut.errors import ProbmutError
from probmut.population import aligned, as_population

#: Each sampler's ``sample(first, second, paired, settings, seed, progressbar)``.
_SAMPLERS = {"nutpie": nutpie_sample, "pymc": pymc_sample}


def _sample(paired: bool, first, second, settings: BayesSettings, seed: int, progressbar):
    """NUTS draws of the model's parameters given the two groups' scaled data."""
    with _ctrl_c_stops():
        return _SAMPLERS[settings.sampler](first, second, paired, settings, seed, progressbar)


def _nu_draws(posterior, name, likelihood, shape):
    if likelihood == "normal":
        return np.full(shape, np.inf)
    return posterior[name + "_minus_one"].values + 1.0


def _skewness(values) -> float:
    centered = values - values.mean()
    spread = np.sqrt(np.mean(centered**2))
    return float(np.mean(centered**3) / spread**3) if spread > 0 else 0.0


@contextmanager
def _ctrl_c_stops():
    """Ctrl-C stops the sampling with KeyboardInterrupt. PyMC and nutpie catch it and
    return the draws made so far (PyMC fails on too few): after a SIGINT nothing they
    return is used."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = []

    def note(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield
    except Exception:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise KeyboardInterrupt


def model_posterior(healthy, mutant, settings: BayesSettings | None = None, *,
                    paired: bool = False, seed=None, name: str | None = None,
                    progressbar: bool = False) -> BayesComparison:
    """Fit the model to one healthy and one mutant population; posterior of the kill
    probability, the mean accuracy difference and Cohen's d, with diagnostics.

    Parameters
    ----------
    healthy, mutant : Population or array_like
        The two populations (:class:`~probmut.population.Population`) or their
        accuracies.
    settings : BayesSettings, optional
        The model and its sampling (default: 2 chains x 1000 draws, Student-t).
    paired : bool, optional
        Model-level mutation: the populations are aligned by instance id and modelled
        through per-instance differences.
    seed : int, SeedSequence or None, optional
        Seeds NUTS and the simulated tests.
    name : str, optional
        The display name (default: the mutant population's name).
    progressbar : bool, optional
        The sampler's progress display (for a terminal).

    Returns
    -------
    BayesComparison
        The posterior draws of the kill probability, the mean difference and Cohen's d, the
        diagnostics and the ArviZ trace.

    Raises
    ------
    ProbmutError
        For a population under 3 instances, identical accuracies (no spread to model),
        paired populations whose instance ids differ, a criterion that needs paired data on
        unpaired populations, an unusable seed, or a missing ``bayes`` extra (ArviZ, or the
        chosen sampler's package): said before any sampling.

    Warns
    -----
    ConvergenceWarning
        When R-hat, the effective sample sizes or divergences fail the checks.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> res = model_posterior(rng.normal(0.99, 0.001, 30), rng.normal(0.988, 0.001, 30),
    ...                       BayesSettings(draws=500, tune=500), seed=1)
    >>> res.kill_mean > 0.5, res.p_mutant_worse > 0.99, res.diagnostics.converged
    (True, True, True)
    """
    settings = settings or BayesSettings()
    settings.criterion.require_pairing(paired)
    arviz()  # missing: say so now, not after minutes of sampling
    healthy, mutant = aligned(healthy, as_population(mutant, name or "mutant"), paired)
    smallest = min(len(healthy), len(mutant))
    if smallest < 3:
        raise ProbmutError(f"the model needs at least 3 instances per population, got {smallest}")
    root = seeds.seed_sequence(seed)
    sampler_seed = seeds.seed_of(root, "bayes sampler")
    h, m = healthy.values, mutant.values
    first, second, (c, s, r) = scaled_data(h, m, paired)
    idata = _sample(paired, first, second, settings, sampler_seed, progressbar)
    post = idata.posterior
    shape = post["mu"].values.shape[:2]
    mu = post["mu"].values
    sigma = post["sigma"].values
    if paired:
        nu_1 = _nu_draws(post, "nu_healthy", settings.likelihood, shape)
        nu_2 = _nu_draws(post, "nu_difference", settings.likelihood, shape)
    else:
        nu_1 = nu_2 = _nu_draws(post, "nu", settings.likelihood, shape)
    mu_h, sigma_h = c + s * mu[..., 0], s * sigma[..., 0]
    if paired:      # second group: the per-instance difference
        mu_2, sigma_2 = r * mu[..., 1], r * sigma[..., 1]
        diff, sigma_m = mu_2, np.sqrt(sigma_h**2 + sigma_2**2)
    else:           # second group: the mutant
        mu_2, sigma_2 = c + s * mu[..., 1], s * sigma[..., 1]
        diff, sigma_m = mu_2 - mu_h, sigma_2
    cohens_d = -diff / np.sqrt((sigma_h**2 + sigma_m**2) / 2)
    params = [a.ravel() for a in (mu_h, sigma_h, nu_1, mu_2, sigma_2, nu_2)]
    rates = simulated_kill_rates(params, paired, settings, root).reshape(shape)
    diagnostics = diagnostics_of(idata, settings.chains, settings.draws)
    label = name or mutant.name
    if not diagnostics.converged:
        warnings.warn(f"{label}: sampling did not converge (" + "; ".join(diagnostics.problems())
                      + "); raise tune/draws before trusting the result",
                      ConvergenceWarning, stacklevel=2)
    nu_all = np.concatenate([nu_1.ravel(), nu_2.ravel()])
    for variable, draws in (("kill_probability", rates), ("mean_difference", diff),
                            ("cohens_d", cohens_d)):
        post[variable] = (("chain", "draw"), np.asarray(draws))
    return BayesComparison(
        name=label, n_healthy=len(healthy), n_mutant=len(mutant), paired=paired,
        kill_draws=rates, diff_draws=diff, d_draws=cohens_d,
        nu_mean=float(nu_all.mean()) if np.isfinite(nu_all).all() else math.inf,
        diagnostics=diagnostics, settings=settings,
        seed=seed if isinstance(seed, int) else None,
        skewness=(_skewness(h), _skewness(m - h if paired else m)), trace=idata)


def model_posteriors(healthy, mutants, settings: BayesSettings | None = None, *,
                     paired: bool = False, seed=None, names=None,
                     progress: bool = False) -> BayesStudy:
    """:func:`model_posterior` of each mutant against ``healthy``, one fit per mutant.

    Every mutant is fitted with the same seed: its numbers do not depend on which other
    mutants are analysed with it, nor on their order. ``progress`` shows one step per fit
    on stderr (and PyMC's sampling bar on a terminal).

    Returns
    -------
    BayesStudy
        One :class:`BayesComparison` per mutant, in the order given.

    Raises
    ------
    ProbmutError
        For no mutant, a missing ``bayes`` extra, or any error of :func:`model_posterior`.
    """
    import sys

    from probmut.progress import progress as progress_display

    settings = settings or BayesSettings()
    mutants = [as_population(m, f"mutant {i}") for i, m in enumerate(mutants, start=1)]
    if not mutants:
        raise ProbmutError("give at least one mutant population")
    arviz()  # missing: say so before the progress display starts
    names = list(names) if names else [m.name for m in mutants]
    shared = seeds.seed_sequence(seed).entropy  # one seed for all, also when seed is None
    comparisons = []
    with progress_display(len(mutants), "bayes: model fits", enabled=progress) as bar:
        for m, label in zip(mutants, names, strict=True):
            bar.set_postfix(fitting=label)
            comparisons.append(model_posterior(
                healthy, m, settings, paired=paired, seed=shared, name=label,
                progressbar=progress and sys.stderr.isatty()))
            bar.update()
    return BayesStudy(tuple(comparisons), settings, paired,
                      seed if isinstance(seed, int) else None)
