"""Monte-Carlo error (MCE) of the bagged posterior (METHOD.md section 5).

The bagged posterior is itself a Monte-Carlo estimate. Repeat the whole bagging R times
with fresh randomness, take from each repetition the mean and the variance of its Beta
summary, and report their averages with jackknife standard errors: with ``theta_i`` the
leave-one-out average of the R values, ``se = sqrt((R-1)/R * sum_i (theta_i -
mean(theta))^2)``; the 95% interval is ``average +- 1.96 se`` (the paper's rounding of
the normal quantile, :data:`probmut.beta.Z95`).

The paper's code divides the leave-one-out *sums* by R instead of R - 1, which shrinks
the standard error by the factor (R - 1) / R; ``jackknife="paper"`` reproduces its
published figures, ``"standard"`` (the default) is the textbook jackknife (for an
average it equals ``sd / sqrt(R)``).

Beta summaries: moment matching by default (exact and instant); ``fit="lsq"`` is the
least-squares fit, run for all R repetitions at once by
:func:`probmut.beta.fit_beta_batch`. :func:`probmut.paper.mce_settings`
(``--paper``) is the paper's MCE code: least squares on its coarser grid (step 0.01),
one ``curve_fit`` per repetition, the paper's jackknife, p rounded to 3 decimals.

References
----------
Koehler, Brown, Haneuse. On the assessment of Monte Carlo error in simulation-based
statistical analyses. The American Statistician 63(2), 2009.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from probmut import seeds
from probmut.bagging import JACKKNIFES, PosteriorSettings
from probmut.beta import Z95, beta_mean_var, fit_beta_batch, ratio_of
from probmut.errors import ProbmutError
from probmut.io.cache import Cache
from probmut.population import population
from probmut.results import Result
from probmut.validation import (
    MAX_COUNT,
    checked,
    flag,
    function,
    instance,
    integer,
    optional,
    renamed,
    seed,
    text,
    threads,
)


def jackknife_se(values, jackknife: str = "standard") -> np.ndarray:
    """Jackknife standard error of the average of ``values`` along the last axis.

    Parameters
    ----------
    values : array_like, shape (..., R)
        R >= 2 repetitions of each value.
    jackknife : {"standard", "paper"}
        Leave-one-out averages (standard), or leave-one-out sums divided by R, as the
        paper's code does: the standard value times (R-1)/R.

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 7.0])
    >>> bool(np.isclose(jackknife_se(x), x.std(ddof=1) / 2))
    True
    >>> bool(np.isclose(jackknife_se(x, "paper"), jackknife_se(x) * 3 / 4))
    True
    """
    if jackknife not in JACKKNIFES:
        raise ProbmutError(
            f"unknown jackknife {jackknife!r}; choose one of {', '.join(JACKKNIFES)}")
    values = np.asarray(values, dtype=np.float64)
    count = values.shape[-1]
    if count < 2:
        raise ProbmutError(f"the jackknife needs at least 2 repetitions, got {count}")
    total = values.sum(axis=-1, keepdims=True)
    leave_one_out = (total - values) / (count if jackknife == "paper" else count - 1)
    deviation = leave_one_out - leave_one_out.mean(axis=-1, keepdims=True)
    return np.sqrt((count - 1) / count * (deviation**2).sum(axis=-1))


def repetition_moments(kill_counts, settings: PosteriorSettings) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the Beta summary of every repetition.

    ``kill_counts`` has shape (..., R, B); returns two arrays of shape (..., R).
    """
    counts = np.asarray(kill_counts)
    a, b = fit_beta_batch(counts.reshape(-1, counts.shape[-1]), settings.trials,
                          settings.fit, settings.grid_step, solver=settings.solver)
    mean, var = beta_mean_var(a, b)
    return mean.reshape(counts.shape[:-1]), var.reshape(counts.shape[:-1])


@dataclass(frozen=True)
class MCEResult(Result):
    """Averages of the posterior mean and variance over R repetitions, with their MCE.

    ``means`` and ``variances`` hold the R per-repetition values.
    """

    name: str
    means: np.ndarray
    variances: np.ndarray
    mean_se: float
    var_se: float
    settings: PosteriorSettings
    paired: bool = False
    seed: int | None = None
    source: str = "populations"

    @property
    def repetitions(self) -> int:
        return int(self.means.size)

    @property
    def jackknife(self) -> str:
        return self.settings.jackknife

    @property
    def mean(self) -> float:
        return float(self.means.mean())

    @property
    def var(self) -> float:
        return float(self.variances.mean())

    @property
    def mean_interval(self) -> tuple[float, float]:
        return self.mean - Z95 * self.mean_se, self.mean + Z95 * self.mean_se

    @property
    def var_interval(self) -> tuple[float, float]:
        return self.var - Z95 * self.var_se, self.var + Z95 * self.var_se

    @property
    def ratio(self) -> float:
        """Ratio of the Beta with the average mean and variance (see :func:`ratio_of`)."""
        return ratio_of(self.mean, self.var, self.settings.trials)

    @property
    def killed(self) -> bool:
        return bool(self.ratio > self.settings.threshold)

    def to_dict(self) -> dict:
        ratio = self.ratio
        return {"name": self.name, "mean": self.mean, "mean_se": float(self.mean_se),
                "mean_low": self.mean_interval[0], "mean_high": self.mean_interval[1],
                "var": self.var, "var_se": float(self.var_se),
                "var_low": self.var_interval[0], "var_high": self.var_interval[1],
                "repetitions": self.repetitions, "ratio": ratio if math.isfinite(ratio) else None,
                "killed": self.killed, "jackknife": self.jackknife, "paired": self.paired,
                "seed": self.seed, "source": self.source, "fit": self.settings.fit,
                "grid_step": self.settings.grid_step, "bootstraps": self.settings.bootstraps,
                "settings": self.settings.describe(
                    None if self.source == "populations" else str(self.settings.bootstraps))}


    def to_frame(self):
        """One row per repetition: its posterior mean and variance."""
        import pandas as pd

        return pd.DataFrame({"mean": self.means, "var": self.variances},
                            index=pd.RangeIndex(self.repetitions, name="repetition"))

    def __str__(self) -> str:
        (m_low, m_high), (v_low, v_high) = self.mean_interval, self.var_interval
        fit = (f"least squares (grid {self.settings.grid_step:g})" if self.settings.fit == "lsq"
               else "moment matching")
        return "\n".join([
            f"Monte-Carlo error of the bagged posterior: {self.name} ({self.repetitions} "
            f"repetitions, {self.source})",
            f"{'':<10}{'average':>12}{'MCE (se)':>12}   95% interval",
            f"{'mean':<10}{self.mean:>12.6f}{self.mean_se:>12.6f}   ({m_low:.6f}, {m_high:.6f})",
            f"{'variance':<10}{self.var:>12.7f}{self.var_se:>12.7f}   ({v_low:.7f}, {v_high:.7f})",
            f"decision: {'KILLED' if self.killed else 'not killed'} (ratio {self.ratio:.6g})",
            f"Beta fit: {fit}; jackknife: {self.jackknife}"
            + (", paired by instance id" if self.paired else "")
            + (f", seed {self.seed}" if self.seed is not None else ""),
        ])


def mce_from_kill_counts(kill_counts, settings: PosteriorSettings | None = None, *,
                         name: str = "mutant", paired: bool = False, seed=None,
                         source: str = "saved kill counts") -> MCEResult:
    """MCE from R x B kill counts (one row per repetition).

    Parameters
    ----------
    kill_counts : array_like of int, shape (R, B)
        The kill counts of R repetitions, e.g. ``load_kill_rates("reps.npy", 100)``.
    settings : PosteriorSettings, optional
        The fit, grid, solver, jackknife and trials (default :class:`PosteriorSettings`;
        the paper's MCE exactly: :func:`probmut.paper.mce_settings`); B is the counts'
        own.
    name : str, optional
        The mutant's display name.
    paired : bool, optional
        Whether the counts come from a paired (model-level) mutant, as recorded.
    seed : int or None, optional
        The seed the counts were made with, as recorded.
    source : str, optional
        Where the counts come from, as recorded.

    Returns
    -------
    MCEResult
        The Monte-Carlo error of the saved R x B kill counts.

    Raises
    ------
    ProbmutError
        For kill counts that are not a 2-D R x B array, or fewer than 2 repetitions.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> res = mce_from_kill_counts(rng.binomial(100, 0.3, size=(50, 100)))
    >>> round(res.mean, 2), res.mean_se < 0.001
    (0.3, True)
    """
    counts = np.asarray(kill_counts)
    if counts.ndim != 2:
        raise ProbmutError(f"kill counts for the MCE must be R x B (2-D), got shape {counts.shape}")
    # The counts' own number of resamples, whatever the settings said.
    settings = replace(settings or PosteriorSettings(), bootstraps=counts.shape[1])
    means, variances = repetition_moments(counts, settings)
    return MCEResult(name, means, variances, float(jackknife_se(means, settings.jackknife)),
                     float(jackknife_se(variances, settings.jackknife)), settings, paired,
                     seed, source)


@renamed(jobs="threads")
@checked(healthy=population, mutant=population, settings=optional(instance(PosteriorSettings)),
         repetitions=integer(2, MAX_COUNT), paired=flag, seed=seed, threads=threads,
         name=optional(text), report=optional(function), cache=optional(instance(Cache)))
def monte_carlo_error(healthy, mutant, settings: PosteriorSettings | None = None, *,
                      repetitions: int = 100, paired: bool = False, seed=None,
                      threads: int | None = None, name: str | None = None,
                      report=None, cache: Cache | None = None) -> MCEResult:
    """MCE of the bagged posterior of ``mutant`` against ``healthy``, from populations.

    All R x B x N DeepCrime tests run in the compiled engine; with a ``cache``, their
    R x B kill counts are kept on disk (keyed by the accuracies, the tests' settings, R
    and the seed), so a rerun, or a run of several mutants stopped half-way, does not
    test them again.

    Parameters
    ----------
    healthy, mutant : Population or array_like
        The two populations (:class:`~probmut.population.Population`) or their
        accuracies (paired populations are aligned by instance id).
    settings : PosteriorSettings, optional
        B, N, k, the criterion, the Beta fit and the jackknife (default
        :class:`PosteriorSettings`; the paper's: :func:`probmut.paper.mce_settings`).
    repetitions : int, optional
        R (the paper: 100).
    paired : bool, optional
        Model-level mutation: resample ids once and draw the same ids on both sides.
    seed : int, SeedSequence, Generator or None, optional
        See :func:`probmut.engine.kill_counts`: the same seed gives the same numbers.
    threads : int, optional
        Engine threads (None: all cores); the numbers do not depend on them.
    name : str, optional
        The display name (default: the mutant population's).
    report : callable, optional
        Called with the number of kill tests run, as they run (a progress bar's
        ``update``); R * B * N in all.
    cache : Cache, optional
        A :class:`~probmut.io.cache.Cache` that keeps the kill counts for a rerun.

    Returns
    -------
    MCEResult
        The R repetitions' posterior means and variances, with their Monte-Carlo errors.

    Raises
    ------
    ProbmutError
        For fewer than 2 repetitions, populations :func:`~probmut.population.as_population`
        refuses, paired populations whose ids differ, a population smaller than k, or an
        argument of the wrong type.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h, m = rng.normal(0.99, 0.002, 100), rng.normal(0.988, 0.002, 100)
    >>> res = monte_carlo_error(h, m, repetitions=10, seed=1)
    >>> res.repetitions, 0 < res.mean < 1, res.mean_se > 0
    (10, True, True)
    """
    from probmut.engine import kill_counts
    from probmut.io.cache import cache_key
    from probmut.population import aligned

    settings = settings or PosteriorSettings()
    healthy, mutant = aligned(healthy, mutant, paired)
    name = name or mutant.name
    root = seeds.stream(seed, "monte-carlo error")
    cache = cache or Cache(None)
    key = cache_key("mce", healthy.values, mutant.values, paired, settings.criterion,
                    settings.bootstraps, settings.trials, settings.sample, repetitions,
                    root.entropy)
    stored = cache.get(key, shapes={"counts": (repetitions, settings.bootstraps)})
    if stored is None:
        counts = kill_counts(healthy.values, mutant.values, bootstraps=settings.bootstraps,
                             trials=settings.trials, sample=settings.sample,
                             repetitions=repetitions, paired=paired,
                             criterion=settings.criterion, seed=root, threads=threads,
                             report=report)
        cache.put(key, counts=counts)
    else:
        counts = stored["counts"]
        if report is not None:
            report(repetitions * settings.bootstraps * settings.trials)
    return mce_from_kill_counts(counts, settings, name=name, paired=paired,
                                seed=seed, source="populations")
