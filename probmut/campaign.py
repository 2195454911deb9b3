"""A mutation-testing campaign in one answer: every mutant of one model, how sure each
kill decision is, the campaign's mutation score with its uncertainty, and per operator
the smallest killed magnitude (what ``probmut report`` shows; :mod:`probmut.report`
renders it as one HTML page).

**Mutation score.** Each mutant m has a kill probability pi_m: the chance that one
k-vs-k kill test (DeepCrime's by default) on random instances kills it, with its bagged
posterior (METHOD.md section 3: B resample posteriors ``Beta(s_mb + 1, N - s_mb + 1)``,
equally weighted). The mutation score is the share of the mutants that such a test
kills, in expectation::

    score = (1 / M) * sum over m of pi_m

over the M mutants that are analysed and not flagged (flagged ones, equivalent or
broken, are listed and left out; survivors stay in). Its posterior comes from joint
draws of the pi_m (:func:`posterior_draws`): a draw picks one bootstrap resample b and
draws every pi_m from its b-th resample posterior. All mutants of a model are analysed
with the same seed, so resample b holds the same healthy resample for each of them
(common random numbers): a draw keeps the correlation the shared healthy population
gives their kill probabilities. ``mean`` is the posterior mean, computed exactly (the
average of the mixtures' means: with the default moment-matched Beta fit, the average of
the posterior means the tables show); ``ci_low, ci_high`` the equal-tailed 95% interval
of the draws. Beside it, ``decided``: the plain share of the same mutants decided killed
(ratio above the threshold, METHOD.md section 4).

**Smallest killed magnitude.** For an operator whose magnitudes are numbers (or
``A_B`` pairs of numbers of which one varies, as weights_fuzzing's ``0.05_1``), the
posterior means of the kill probability against the magnitude are fitted by isotonic
(monotone) regression, weighted by the posteriors' precisions, increasing or decreasing
as the means' rank correlation with the magnitude says (increasing on a tie). The
smallest killed magnitude is where the fit reaches ``level`` (1/2: a k-vs-k test kills
more often than not; for a posterior symmetric around 1/2 the Hellinger ratio is exactly
1, so this matches the decision rule), by linear interpolation between the tested
magnitudes; a decreasing fit gives the largest killed magnitude instead. Its 95%
interval repeats the fit, unweighted, on joint posterior draws of the kill
probabilities (as for the score) and takes the equal-tailed interval of the crossing
magnitudes. A crossing below the smallest tested magnitude (killed at every one) or
above the largest (killed at none) is reported as such (``None`` in the numbers, with
its share of the draws).

**Verdicts.** Each mutant also gets the verdict of :func:`probmut.recommend.recommend`
on its instances: ``killed``, ``not killed`` or ``not settled`` (the decision a
population of 200 fresh instances per side would reach, predicted with probability at
least 0.95, the uncertainty of the instances at hand included). The summary counts
these verdicts; the plain decision of every mutant is in its row.

**Per operator** (:meth:`Campaign.operators`): its mutants' outcomes and the score of its
own analysed, unflagged mutants, computed as the campaign's.

**Next steps** (:meth:`Campaign.next_steps`): every mutant whose verdict is not settled,
or that could not be analysed, with the instances per side that would settle it
(recommend's ``needed``) and a ``probmut train ... --until-settled`` command from the
settings its run recorded. **Changes** (:attr:`Campaign.comparison`): the outcomes that
differ from an earlier report's (its JSON document).

**Completeness.** A population holding fewer instances than its run's target is short,
and the campaign is then unfinished, never reported as complete. The targets are the
manifest's ``targets`` table, which ``probmut train`` records before it trains anything
(and again at every round of ``--until-settled``, where mutants stop at different sizes):
the same targets every reader checks (:func:`probmut.io.completeness.check_complete`). A
population not written yet, or holding only its header (a run stopped before any of its
instances finished), is "0 of N" and its mutant not analysed: never an error. A
manifest without targets (the bundled data, one written by hand) cannot say whether a
population is short: its completeness is unknown, and the summary says so.

Examples
--------
>>> from probmut.bagging import PosteriorSettings, study_from_kill_counts
>>> study = study_from_kill_counts(np.full(50, 5), [np.full(50, 90), np.full(50, 10)],
...                                ["healthy", "a", "b"], PosteriorSettings(bootstraps=50))
>>> score = mutation_score(study.populations[1:], seed=1)
>>> round(score.mean, 4), score.decided      # (91/102 + 11/102) / 2; one of two decided killed
(0.5, 0.5)
"""

from __future__ import annotations

import json
import math
import warnings
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.results import Result, counted, plain

#: Joint posterior draws behind the score's and the smallest killed magnitude's intervals.
DRAWS = 20_000
#: Kill probability at which a magnitude counts as killed on the fitted curve.
LEVEL = 0.5
#: What each mutant's summary outcome can be, in the order of the summary's counts.
OUTCOMES = ("killed", "not killed", "not settled", "flagged", "not analysed")


# --- posterior draws and the mutation score -------------------------------------------------

def _stream(seed, role: int, name: str = "") -> np.random.Generator:
    """An independent random stream per computation (role) and item (name), from the seed:
    a mutation's numbers do not depend on which other mutations are in the campaign."""
    from probmut.engine import seed_sequence

    root = seed_sequence(seed)
    return np.random.default_rng(np.random.SeedSequence(
        root.entropy, spawn_key=(*root.spawn_key, role, zlib.crc32(name.encode()))))


def posterior_draws(posteriors, draws: int = DRAWS, seed=None) -> np.ndarray:
    """Joint draws of the kill probabilities of several populations from their bagged
    posteriors: each draw picks one bootstrap resample b (the same for all) and draws each
    pi_m from ``Beta(s_mb + 1, N - s_mb + 1)``. Returns a (draws, populations) array.

    ``posteriors``: :class:`~probmut.bagging.PopulationPosterior` objects with the same
    numbers of resamples and trials.

    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rows = [summarize(n, np.full(20, c), PosteriorSettings(bootstraps=20))
    ...         for n, c in (("a", 10), ("b", 90))]
    >>> posterior_draws(rows, 1000, seed=0).mean(axis=0).round(1).tolist()
    [0.1, 0.9]
    """
    posteriors = list(posteriors)
    if not posteriors:
        raise ProbmutError("no populations to draw from")
    shapes = {(p.kill_counts.size, p.trials) for p in posteriors}
    if len(shapes) > 1:
        raise ProbmutError("joint draws need the same numbers of bootstrap resamples and "
                           f"trials for every population, got {sorted(shapes)}")
    (bootstraps, trials), = shapes
    counts = np.stack([p.kill_counts for p in posteriors])
    rng = seed if isinstance(seed, np.random.Generator) else _stream(seed, 0)
    chosen = counts[:, rng.integers(0, bootstraps, draws)].T
    return rng.beta(chosen + 1.0, trials - chosen + 1.0)


def _equal_tailed(values, mass: float):
    tail = (1 - mass) / 2
    return (float(np.quantile(values, tail, method="inverted_cdf")),
            float(np.quantile(values, 1 - tail, method="inverted_cdf")))


@dataclass(frozen=True)
class MutationScore(Result):
    """The mutation score with its uncertainty (see the module notes): ``mean`` and the
    ``mass`` interval ``[ci_low, ci_high]`` of the expected share of ``mutants`` that a
    k-vs-k test kills; ``decided`` the share decided killed (``killed`` of them)."""

    mean: float
    ci_low: float
    ci_high: float
    decided: float
    mutants: int
    killed: int
    draws: int = DRAWS
    mass: float = 0.95

    def to_dict(self) -> dict:
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "decided": self.decided, "mutants": self.mutants, "killed": self.killed,
                "draws": self.draws, "mass": self.mass}

    def __str__(self) -> str:
        return (f"mutation score {self.mean:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] "
                f"({self.mass:.0%} interval of the expected share of {self.mutants} mutants a "
                f"kill test kills); decided killed: {self.killed} of {self.mutants} "
                f"({self.decided:.3f})")


def mutation_score(posteriors, *, draws: int = DRAWS, mass: float = 0.95,
                   seed=None) -> MutationScore:
    """The mutation score of the mutants whose bagged posteriors are given (module notes).

    Parameters
    ----------
    posteriors : :class:`~probmut.bagging.PopulationPosterior` of each mutant in the
        score (leave flagged mutants out; keep survivors).
    draws : joint posterior draws for the interval.
    mass : the interval's probability mass.
    seed : same seed, same interval.
    """
    posteriors = list(posteriors)
    if not posteriors:
        raise ProbmutError("the mutation score needs at least one analysed mutant")
    trials = posteriors[0].trials
    exact = np.mean([(p.kill_counts.mean() + 1) / (trials + 2) for p in posteriors])
    low, high = _equal_tailed(posterior_draws(posteriors, draws, seed).mean(axis=1), mass)
    killed = sum(p.killed for p in posteriors)
    return MutationScore(float(exact), low, high, killed / len(posteriors), len(posteriors),
                         killed, draws, mass)


def campaign_score(posteriors, settings, seed) -> MutationScore:
    """The score of a campaign's analysed, unflagged mutants as ``probmut report`` shows
    it for the same seed: drawn from the campaign's own stream, at the settings' mass."""
    return mutation_score(posteriors, seed=_stream(seed, 0, "score"), mass=settings.mass)


def mutant_posterior(healthy, mutant, settings, *, paired: bool = False, seed=None,
                     jobs: int | None = None):
    """The bagged posterior of one mutant population against the healthy one, without the
    healthy baseline: the kill counts, summary and decision :func:`summarize_campaign`
    gets for it with the same seed (paired populations on the instance ids both hold).

    >>> from probmut.bagging import PosteriorSettings, bagged_posteriors
    >>> from probmut.population import Population
    >>> rng = np.random.default_rng(0)
    >>> h, m = (Population.from_values(rng.normal(mu, 0.01, 50)) for mu in (0.9, 0.895))
    >>> row = mutant_posterior(h, m, PosteriorSettings(), seed=3)
    >>> bool(np.array_equal(row.kill_counts, bagged_posteriors(h, [m], seed=3).populations[1].kill_counts))
    True
    """
    from probmut.bagging import summarize
    from probmut.engine import kill_counts

    h, m = _aligned(healthy, mutant, paired, [])
    if m is None:
        raise ProbmutError(f"{mutant.where}: no instance id in common with the healthy "
                           "population to pair with")
    counts = kill_counts(h.values, m.values, bootstraps=settings.bootstraps,
                         trials=settings.trials, sample=settings.sample, paired=paired,
                         criterion=settings.criterion, seed=seed, jobs=jobs)
    return summarize(m.name, counts, settings)


@dataclass(frozen=True)
class ScoreShares:
    """Where the variance of the mutation score's joint draws comes from, and what it
    would be with other numbers of instances (:func:`score_shares`). Parts of the score's
    variance: ``fixed``, which no instance reduces (the Monte-Carlo noise of the N trials
    of a resample and of the Beta draws); ``healthy``, carried by the healthy instances
    (shared by every mutant compared with them); ``mutants``, each mutant's own; read at
    ``healthy_size`` healthy and ``sizes`` mutant instances (paired: pairs)."""

    fixed: float
    healthy: float
    mutants: tuple[float, ...]
    healthy_size: int
    sizes: tuple[int, ...]

    def variance(self, healthy_size: int | None = None, sizes=None) -> float:
        """The score's variance predicted with ``healthy_size`` healthy and ``sizes``
        mutant instances (default: those read): the healthy and each mutant's part scale
        as 1/n.

        >>> ScoreShares(0.1, 2.0, (1.0, 0.5), 20, (20, 10)).variance(40, (20, 20))
        2.35
        """
        h = self.healthy_size if healthy_size is None else healthy_size
        sizes = self.sizes if sizes is None else sizes
        return (self.fixed + self.healthy * self.healthy_size / h
                + sum(part * read / n for part, read, n
                      in zip(self.mutants, self.sizes, sizes, strict=True)))

    def to_dict(self) -> dict:
        return {"fixed": self.fixed, "healthy": self.healthy, "mutants": list(self.mutants)}


def score_shares(posteriors, healthy, mutants, paired) -> ScoreShares:
    """The parts of the mutation score's variance (:class:`ScoreShares`), from the joint
    resamples of the score (common random numbers: resample b of every unpaired mutant
    holds the same healthy resample).

    With mu_mb = (s_mb + 1) / (N + 2) the kill rate of mutant m in resample b, the score's
    draws have the variance ``Var_b(sum_m mu_mb) / M^2`` plus the Beta draws' noise. Of
    it, no instance reduces the binomial noise of the N trials of each resample
    (``N mu (1 - mu) / (N + 2)^2``) and of the Beta draws (``mu (1 - mu) / (N + 3)``):
    ``fixed``. The rest of each mutant's own variance ``Var_b(mu_mb)`` comes from its own
    instances and from the healthy ones; the two-sample split of a mean difference gives
    its own instances the share ``(v_m / n_m) / (v_h / n_h + v_m / n_m)`` (v the
    accuracies' variances, n the sizes); a paired mutant carries all of it (a pair is one
    instance of each). Everything else, the covariances of the mutants' kill rates across
    resamples included, goes with the healthy population they share: ``healthy``.

    Parameters
    ----------
    posteriors : each mutant's :class:`~probmut.bagging.PopulationPosterior`, analysed
        with the same seed (:func:`mutant_posterior`).
    healthy : the healthy accuracies the unpaired mutants are compared with.
    mutants : each mutant's accuracies (paired: those of its pairs).
    paired : for each mutant, whether it is paired.

    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rng = np.random.default_rng(0)
    >>> shared = rng.integers(-20, 21, 100)   # a healthy resample moves every kill count
    >>> rows = [summarize(name, np.clip(c + shared + rng.integers(-5, 6, 100), 0, 100),
    ...                   PosteriorSettings()) for name, c in (("a", 40), ("b", 60))]
    >>> shares = score_shares(rows, rng.normal(0, 1, 50), [rng.normal(0, 1, 50)] * 2,
    ...                       [False, False])
    >>> bool(shares.healthy > 2 * sum(shares.mutants)), shares.healthy_size, shares.sizes
    (True, 50, (50, 50))
    """
    posteriors, mutants = list(posteriors), [np.asarray(m, dtype=np.float64) for m in mutants]
    trials = posteriors[0].trials
    rates = (np.stack([p.kill_counts for p in posteriors]) + 1.0) / (trials + 2)
    spread = rates * (1 - rates)
    trial_noise = spread.mean(axis=1) * trials / (trials + 2) ** 2
    beta_noise = spread.mean(axis=1) / (trials + 3)
    own = np.maximum(rates.var(axis=1, ddof=1) - trial_noise, 0.0)
    healthy = np.asarray(healthy, dtype=np.float64)
    h_part = healthy.var(ddof=1) / healthy.size
    m_parts = np.array([m.var(ddof=1) / m.size for m in mutants])
    with np.errstate(invalid="ignore"):
        share = np.where(paired, 1.0, np.nan_to_num(m_parts / (h_part + m_parts), nan=0.5))
    by_mutant = own * share
    total = rates.sum(axis=0).var(ddof=1)
    scale = len(posteriors) ** 2
    return ScoreShares(
        fixed=float((trial_noise + beta_noise).sum() / scale),
        healthy=float(max(total - trial_noise.sum() - by_mutant.sum(), 0.0) / scale),
        mutants=tuple(float(v) for v in by_mutant / scale), healthy_size=int(healthy.size),
        sizes=tuple(int(m.size) for m in mutants))


# --- the kill probability against the magnitude -----------------------------------------------

def magnitude_values(magnitudes) -> tuple[np.ndarray | None, str]:
    """Numbers to order magnitudes by, and the axis they make: the magnitudes themselves
    when they are numbers; for pairs ``A_B`` (weights_fuzzing's ``0.05_1``) the one part
    that varies; else None (categories: an activation, an optimiser). A ``@TARGET``
    suffix is ignored when every magnitude has the same one.

    >>> magnitude_values(["3.1", "9.29", "30.93"])
    (array([ 3.1 ,  9.29, 30.93]), 'magnitude')
    >>> magnitude_values(["0.05_0.1", "0.05_1", "0.05_2"])
    (array([0.1, 1. , 2. ]), 'magnitude 0.05_x')
    >>> magnitude_values(["elu", "tanh"])
    (None, 'categories')
    """
    texts = [str(m) for m in magnitudes]
    if len({t.partition("@")[2] for t in texts}) == 1:
        texts = [t.partition("@")[0] for t in texts]
    try:
        parts = np.array([[float(p) for p in t.split("_")] for t in texts])
    except ValueError:  # a word, or pairs of different lengths
        return None, "categories"
    if not np.all(np.isfinite(parts)):
        return None, "categories"
    varying = [j for j in range(parts.shape[1]) if np.unique(parts[:, j]).size > 1]
    if parts.shape[1] == 1:
        return parts[:, 0], "magnitude"
    if len(varying) != 1:
        return None, "categories"
    shown = texts[0].split("_")
    shown[varying[0]] = "x"
    return parts[:, varying[0]], f"magnitude {'_'.join(shown)}"


def isotonic(values, weights=None) -> np.ndarray:
    """Increasing isotonic regression along the last axis (weighted least squares), by
    the max-min formula ``fit_i = max over j <= i of min over k >= i of mean(y[j..k])``
    (Barlow et al. 1972), for many rows at once.

    >>> isotonic([1.0, 3.0, 2.0, 4.0]).tolist()
    [1.0, 2.5, 2.5, 4.0]
    >>> from scipy.optimize import isotonic_regression
    >>> y, w = np.array([0.3, 0.1, 0.6, 0.5, 0.9]), np.array([1.0, 4.0, 1.0, 2.0, 1.0])
    >>> bool(np.allclose(isotonic(y, w), isotonic_regression(y, weights=w).x))
    True
    """
    y = np.asarray(values, dtype=np.float64)
    w = np.ones_like(y) if weights is None else np.broadcast_to(
        np.asarray(weights, dtype=np.float64), y.shape)
    zero = np.zeros(y.shape[:-1] + (1,))
    sum_w = np.concatenate([zero, np.cumsum(w, axis=-1)], axis=-1)
    sum_wy = np.concatenate([zero, np.cumsum(w * y, axis=-1)], axis=-1)
    size = y.shape[-1]
    fit = np.empty_like(y)
    for i in range(size):
        # means[..., j, k] of the blocks y[j..k] with j <= i <= k
        means = ((sum_wy[..., None, i + 1:] - sum_wy[..., :i + 1, None])
                 / (sum_w[..., None, i + 1:] - sum_w[..., :i + 1, None]))
        fit[..., i] = means.min(axis=-1).max(axis=-1)
    return fit


def crossing(x, fitted, level: float = LEVEL) -> np.ndarray:
    """Where increasing fitted values reach ``level``, by linear interpolation between the
    sorted magnitudes ``x``, for each row: ``-inf`` when already at the first magnitude,
    ``inf`` when never.

    >>> crossing([10.0, 20.0, 30.0], [[0.2, 0.4, 0.8], [0.6, 0.7, 0.9], [0.1, 0.2, 0.3]]).tolist()
    [22.5, -inf, inf]
    """
    x = np.asarray(x, dtype=np.float64)
    fitted = np.atleast_2d(np.asarray(fitted, dtype=np.float64))
    reached = fitted >= level
    first = np.argmax(reached, axis=1)
    result = np.full(fitted.shape[0], np.inf)
    result[reached[:, 0]] = -np.inf
    inside = reached.any(axis=1) & ~reached[:, 0]
    rows, upper = np.flatnonzero(inside), first[inside]
    low_y, high_y = fitted[rows, upper - 1], fitted[rows, upper]
    result[rows] = x[upper - 1] + (level - low_y) / (high_y - low_y) * (x[upper] - x[upper - 1])
    return result


@dataclass(frozen=True)
class KillCurve(Result):
    """One operator's kill probability against its magnitudes, and where it reaches
    ``level`` (see the module notes). Arrays run over ``magnitudes``, ordered by their
    ``values`` (None for categories, which get no fit). ``threshold``,
    ``threshold_low`` and ``threshold_high``: the crossing magnitude and its interval,
    ``-inf`` below the smallest tested magnitude and ``inf`` above the largest (None
    without a fit); ``p_every`` and ``p_none`` the shares of the draws killed at every
    tested magnitude and at none. ``excluded``: flagged or unanalysed magnitudes, not
    fitted."""

    mutation: str
    magnitudes: tuple[str, ...]
    values: np.ndarray | None
    axis: str
    means: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    fitted: np.ndarray | None = None
    direction: str | None = None
    threshold: float | None = None
    threshold_low: float | None = None
    threshold_high: float | None = None
    p_every: float | None = None
    p_none: float | None = None
    excluded: tuple[str, ...] = ()
    baseline: float | None = None
    level: float = LEVEL
    mass: float = 0.95

    index = "magnitude"

    def _where(self, value: float) -> str:
        if value == -math.inf:
            return f"below {self.magnitudes[0]}"
        if value == math.inf:
            return f"above {self.magnitudes[-1]}"
        return f"{value:.4g}"

    def describe_threshold(self) -> str:
        """The smallest (or largest) killed magnitude with its interval, in words."""
        if not self.magnitudes:
            return "no analysed, unflagged magnitude: no fit"
        if self.values is None:
            return "categorical magnitudes: no order, no smallest killed magnitude"
        if self.threshold is None:
            return "fewer than two analysed magnitudes: no fit"
        side = "largest" if self.direction == "decreasing" else "smallest"
        axis = "" if self.axis == "magnitude" else f" ({self.axis})"
        return (f"{side} killed magnitude{axis}: {self._where(self.threshold)}, "
                f"{self.mass:.0%} interval [{self._where(self.threshold_low)}, "
                f"{self._where(self.threshold_high)}]; killed at every tested magnitude in "
                f"{self.p_every:.0%} of the draws, at none in {self.p_none:.0%}")

    def rows(self) -> list[dict]:
        fitted = [None] * len(self.magnitudes) if self.fitted is None else self.fitted
        return [{"magnitude": m, "value": None if self.values is None else self.values[i],
                 "mean": self.means[i], "ci_low": self.ci_low[i], "ci_high": self.ci_high[i],
                 "fitted": fitted[i]} for i, m in enumerate(self.magnitudes)]

    def to_dict(self) -> dict:
        return plain({"mutation": self.mutation, "axis": self.axis,
                      "direction": self.direction, "level": self.level,
                      "threshold": {"estimate": _number(self.threshold),
                                    "ci_low": _number(self.threshold_low),
                                    "ci_high": _number(self.threshold_high),
                                    "killed_at_every_magnitude": self.p_every,
                                    "killed_at_none": self.p_none,
                                    "text": self.describe_threshold()},
                      "magnitudes": self.rows(), "excluded": list(self.excluded),
                      "baseline": self.baseline})

    def __str__(self) -> str:
        return f"{self.mutation}: {self.describe_threshold()}"


def _spearman_sign(x, y) -> float:
    """Sign of the rank correlation of x and y (average ranks for ties; 0 if undefined)."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float(np.sign(np.sum(rx * ry)))


def kill_curve(mutation: str, posteriors: dict, *, excluded=(), baseline=None,
               level: float = LEVEL, draws: int = DRAWS, mass: float = 0.95,
               seed=None) -> KillCurve:
    """The kill probability of one operator against its magnitudes, and its smallest
    killed magnitude with its interval (see the module notes).

    Parameters
    ----------
    mutation : the operator's name (it also keys the random stream).
    posteriors : magnitude -> :class:`~probmut.bagging.PopulationPosterior`, the
        magnitudes to fit (analysed and not flagged).
    excluded : the operator's other magnitudes, listed but not fitted.
    baseline : the healthy population's posterior mean (healthy against itself), drawn
        for reference.
    level, draws, mass, seed : the kill probability that counts as killed, the joint
        posterior draws of the interval, its mass, and the seed.

    Examples
    --------
    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rows = {m: summarize(m, np.full(40, c), PosteriorSettings(bootstraps=40))
    ...         for m, c in (("10", 10), ("20", 30), ("30", 70), ("40", 95))}
    >>> curve = kill_curve("op", rows, seed=1)
    >>> curve.direction, round(curve.threshold, 2)     # the fit reaches 1/2 between 20 and 30
    ('increasing', 25.0)
    """
    names = list(posteriors)
    values, axis = magnitude_values(names)
    order = np.argsort(values, kind="stable") if values is not None else np.arange(len(names))
    names = [names[i] for i in order]
    rows = [posteriors[name] for name in names]
    means = np.array([p.mean for p in rows])
    common = dict(mutation=mutation, magnitudes=tuple(names), axis=axis, means=means,
                  ci_low=np.array([p.ci_low for p in rows]),
                  ci_high=np.array([p.ci_high for p in rows]), excluded=tuple(excluded),
                  baseline=baseline, level=level, mass=mass)
    if values is None or len(rows) < 2:
        return KillCurve(values=None if values is None else values[order], **common)
    values = values[order]
    decreasing = _spearman_sign(values, means) < 0
    # A decreasing curve is an increasing one on the reversed (negated) magnitudes.
    flip = slice(None, None, -1) if decreasing else slice(None)
    sign = -1.0 if decreasing else 1.0
    x = sign * values[flip]
    weights = 1.0 / np.array([p.var for p in rows])[flip]
    fitted = isotonic(means[flip], weights)
    estimate = float(crossing(x, fitted, level)[0])
    drawn = posterior_draws(rows[flip], draws,
                            _stream(seed, 1, mutation))
    crossings = crossing(x, isotonic(drawn), level)
    low, high = _equal_tailed(crossings, mass)
    if decreasing:
        estimate, low, high = -estimate, -high, -low
    return KillCurve(values=values, fitted=fitted[flip],
                     direction="decreasing" if decreasing else "increasing",
                     threshold=estimate, threshold_low=low, threshold_high=high,
                     p_every=float(np.mean(crossings == -np.inf)),
                     p_none=float(np.mean(crossings == np.inf)), **common)


def _number(value):
    """A threshold in JSON: the number, or "below"/"above" the tested magnitudes."""
    if value is None or math.isfinite(value):
        return value
    return "below" if value < 0 else "above"


# --- the campaign -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PopulationCount:
    """How many instances a population file holds against its run's target (None when
    the manifest records none). ``instances`` counts every record, failed ones too (they
    were trained); 0 when the file does not exist yet (``exists`` False) or holds only
    its header. ``failures``: its failed instances by status (crashed, timed out,
    diverged), None when the file has no symptom records to say (DeepCrime's format)."""

    name: str
    file: str
    instances: int
    target: int | None
    exists: bool = True
    failures: dict[str, int] | None = None

    @property
    def complete(self) -> bool | None:
        """Whether it holds its target; None when no target is recorded."""
        return None if self.target is None else self.instances >= self.target

    def describe(self) -> str:
        """Its instances against its target, in words (the status box's line).

        >>> PopulationCount("m", "m.csv", 0, 40).describe()
        'm: 0 of 40 instances (no instance yet)'
        """
        why = "" if self.instances else " (no instance yet)" if self.exists else " (no file yet)"
        return f"{self.name}: {self.instances} of {self.target} instances{why}"

    def to_dict(self) -> dict:
        return {"name": self.name, "file": self.file, "instances": self.instances,
                "target": self.target, "complete": self.complete,
                "failures": self.failures}


@dataclass(frozen=True)
class MutantSummary:
    """Everything the campaign knows about one mutant population.

    ``status`` is ``analysed``, ``missing`` (no population file yet), ``empty`` (a file
    holding no instance yet), ``failed`` (every instance failed) or ``too few`` (fewer
    usable instances than the sample size k). ``study`` is its bagged posterior against
    the healthy baseline (Figure 3; paired by instance id for a model-level mutant, so is
    its baseline), ``posterior`` its row; ``test`` the kill criterion's test on the whole
    populations; ``verdict`` the pilot verdict (``verdict``, ``p_killed``, ``needed``,
    ``message``); ``rounds`` its rows of a run trained until settled; ``symptoms`` and
    ``inputs`` where the run has symptom records and per-input outcomes; ``notes`` the
    warnings its own analysis gave.
    """

    name: str
    mutation: str
    magnitude: str
    paired: bool
    count: PopulationCount
    usable: int = 0
    status: str = "analysed"
    flags: tuple[str, ...] = ()
    study: object = None
    test: object = None
    verdict: dict | None = None
    rounds: tuple[dict, ...] = ()
    symptoms: object = None
    inputs: object = None
    notes: tuple[str, ...] = ()
    #: The healthy and mutant populations as analysed (aligned by id when paired): what
    #: the verdict is computed from (:func:`with_verdicts`).
    populations: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def posterior(self):
        return None if self.study is None else self.study.populations[1]

    @property
    def baseline(self):
        """The healthy population against itself as this mutant's analysis had it (paired
        by instance id for a model-level mutant), or None."""
        return None if self.study is None else self.study.baseline

    @property
    def conflict(self) -> str | None:
        """Where the kill test on the whole populations and the bagged posterior's
        decision disagree, or a settled verdict contradicts the decision: the three in
        words (None otherwise; "not settled" alone is the outcome's to say)."""
        if self.posterior is None:
            return None
        said = {"test": "killed" if self.test.killed else "not killed",
                "decision": self.decision}
        if self.verdict:
            said["verdict"] = self.verdict["verdict"]
        settled = said.get("verdict", self.decision) != "not settled"
        if said["test"] == self.decision and (not settled
                                              or said.get("verdict", self.decision)
                                              == self.decision):
            return None
        return ", ".join(f"{what} {says}" for what, says in said.items())

    @property
    def remarks(self) -> tuple[str, ...]:
        """What a reader of its verdict must see beside it (with its ``notes``, the
        warnings of its analysis): a short population, the flags, a disagreement between
        test, decision and verdict."""
        found = []
        if self.count.complete is False:
            found.append(f"short: {self.count.instances} of {self.count.target} instances")
        if self.flags:
            found.append(f"flagged {', '.join(self.flags)}: left out of the score")
        if self.conflict:
            found.append(f"disagree: {self.conflict}")
        return tuple(found)

    @property
    def decision(self) -> str:
        """The bagged posterior's decision (ratio rule), or why there is none."""
        if self.posterior is None:
            return self.status
        return "killed" if self.posterior.killed else "not killed"

    @property
    def outcome(self) -> str:
        """The summary's category (:data:`OUTCOMES`): flagged, not analysed, or the
        verdict (the decision when verdicts were not computed)."""
        if self.flags:
            return "flagged"
        if self.posterior is None:
            return "not analysed"
        return self.verdict["verdict"] if self.verdict else self.decision

    def to_dict(self) -> dict:
        p, t = self.posterior, self.test
        return plain({
            "name": self.name, "mutation": self.mutation, "magnitude": self.magnitude,
            "paired": self.paired, "status": self.status, "usable": self.usable,
            **{k: v for k, v in self.count.to_dict().items() if k != "name"},
            "flags": list(self.flags), "decision": self.decision, "outcome": self.outcome,
            "posterior": None if p is None else p.to_dict(),
            "kill_test": None if t is None else t.to_dict(), "verdict": self.verdict,
            "conflict": self.conflict, "notes": list(self.notes),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "rounds": list(self.rounds),
            "symptoms": None if self.symptoms is None else self.symptoms.to_dict(),
            "inputs": None if self.inputs is None else self.inputs.to_dict()})

    def row(self) -> dict:
        """The mutant's line of the campaign table."""
        p, t, v = self.posterior, self.test, self.verdict
        return {"name": self.name, "mutation": self.mutation, "magnitude": self.magnitude,
                "instances": self.count.instances, "target": self.count.target,
                "mean": p and p.mean, "ci_low": p and p.ci_low, "ci_high": p and p.ci_high,
                "ratio": p and p.ratio, "decision": self.decision,
                "verdict": v and v["verdict"], "p_killed": v and v["p_killed"],
                "p_value": t and t.p_value, "effect_size": t and t.effect_size,
                "test_killed": t and t.killed, "conflict": self.conflict,
                "flags": ", ".join(self.flags),
                "symptom": self.symptoms and self.symptoms.symptom, "outcome": self.outcome}


@dataclass(frozen=True)
class Campaign(Result):
    """One model's mutation-testing campaign (see the module notes and :func:`summarize_campaign`)."""

    model: str
    manifest: str
    description: str
    data: dict | None
    settings: object
    seed: object
    healthy: PopulationCount
    baseline: object
    mutants: tuple[MutantSummary, ...]
    score: MutationScore | None
    curves: tuple[KillCurve, ...]
    verdicts: bool = True
    inputs: object = None
    coverage: dict | None = None
    rounds_file: str | None = None
    notes: tuple[str, ...] = ()
    operator_scores: tuple[MutationScore | None, ...] = ()
    paired_baseline: object = None
    run_settings: dict | None = None
    #: An earlier report's JSON document and its file (``--compare``).
    earlier: tuple[str, dict] | None = field(default=None, repr=False)

    @property
    def comparison(self) -> Comparison | None:
        """What changed since the earlier report (None without one)."""
        if self.earlier is None:
            return None
        now = {"model": self.model, "mutation_score": self.score and self.score.to_dict(),
               "mutants": [{"name": m.name, "outcome": m.outcome} for m in self.mutants]}
        return compare_reports(now, self.earlier[1], self.earlier[0])
    score_rounds: tuple[dict, ...] = ()

    @property
    def populations(self) -> tuple[PopulationCount, ...]:
        return (self.healthy, *(m.count for m in self.mutants))

    @property
    def complete(self) -> bool | None:
        """Every population holds its recorded target (none missing, none short); None
        when the manifest records no targets."""
        judged = [p.complete for p in self.populations if p.complete is not None]
        return all(judged) if judged else None

    @property
    def short(self) -> tuple[PopulationCount, ...]:
        return tuple(p for p in self.populations if p.complete is False)

    @property
    def counts(self) -> dict[str, int]:
        """Mutants per summary outcome (:data:`OUTCOMES`)."""
        found = [m.outcome for m in self.mutants]
        return {outcome: found.count(outcome) for outcome in OUTCOMES}

    @property
    def flagged(self) -> tuple[MutantSummary, ...]:
        return tuple(m for m in self.mutants if m.flags)

    def rows(self) -> list[dict]:
        return [m.row() for m in self.mutants]

    def operators(self) -> list[dict]:
        """Per operator (the manifest's order): its mutants, their counts per outcome and
        the mutation score of its analysed, unflagged mutants (None without one)."""
        rows = []
        for curve, score in zip(self.curves, self.operator_scores or [None] * len(self.curves),
                                strict=True):
            found = [m.outcome for m in self.mutants if m.mutation == curve.mutation]
            rows.append({"mutation": curve.mutation, "mutants": len(found),
                         "counts": {o: found.count(o) for o in OUTCOMES}, "score": score})
        return rows

    def next_steps(self) -> NextSteps:
        """What would settle the unsettled and unanalysed mutants (see :class:`NextSteps`)."""
        return _next_steps(self)

    def to_dict(self) -> dict:
        return plain({
            "model": self.model, "manifest": self.manifest, "description": self.description,
            "data": self.data, "seed": self.seed, "settings": self.settings.describe(),
            "complete": self.complete,
            "populations": [p.to_dict() for p in self.populations],
            "mutation_score": None if self.score is None else self.score.to_dict(),
            "counts": self.counts, "verdicts": self.verdicts,
            "flagged": [{"name": m.name, "flags": list(m.flags)} for m in self.flagged],
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "paired_baseline": (None if self.paired_baseline is None
                                else self.paired_baseline.to_dict()),
            "operators": [c.to_dict() | {"mutants": o["mutants"], "counts": o["counts"],
                                         "score": o["score"] and o["score"].to_dict()}
                          for c, o in zip(self.curves, self.operators(), strict=True)],
            "mutants": [m.to_dict() for m in self.mutants],
            "next_steps": self.next_steps().to_dict(),
            "compare": None if self.comparison is None else self.comparison.to_dict(),
            "inputs": None if self.inputs is None else {
                k: v for k, v in self.inputs.to_dict().items() if k != "mutants"},
            "coverage": self.coverage, "rounds": self.rounds_file,
            "score_rounds": list(self.score_rounds), "notes": list(self.notes)})

    def _repr_html_(self) -> str:
        import html

        head = [*self.status_lines()[:1],
                str(self.score) if self.score else "mutation score: no analysed mutant"]
        return ("".join(f"<p>{html.escape(line)}</p>" for line in head)
                + super()._repr_html_())

    def status_lines(self) -> list[str]:
        """Whether the campaign is complete, and every short population."""
        if self.complete is None:
            sizes = sorted({p.instances for p in self.populations})
            held = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"
            return [f"completeness unknown: the manifest records no targets (probmut train "
                    f"records them); the populations hold {held} instances"]
        if self.complete:
            return ["complete: every population holds the target its run recorded"]
        lines = [f"UNFINISHED: {len(self.short)} population(s) short of the target their run "
                 "recorded; rerun the same probmut train command to finish them"]
        lines += [f"  {p.describe()}" for p in self.short]
        return lines

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {o}" for o, n in self.counts.items() if n)
        lines = [f"Campaign of {self.model}: {len(self.mutants)} mutants, healthy population "
                 f"{self.healthy.instances} instances; "
                 f"{'verdicts' if self.verdicts else 'decisions'}: {counts}",
                 *self.status_lines(),
                 str(self.score) if self.score else "mutation score: no analysed mutant"]
        if self.score_rounds:
            last = self.score_rounds[-1]
            lines.append(f"trained until the score was settled (train --until-score): "
                         f"{len(self.score_rounds)} rounds, {last['spent']} instances, the "
                         f"last interval {last['score']['width']:.3f} wide")
        if self.flagged:
            lines.append("flagged, left out of the score: " + "; ".join(
                f"{m.name} ({', '.join(m.flags)})" for m in self.flagged))
        lines += [f"{label}: {numbers}" for label, numbers in self.baselines()]
        lines += [self.failures_line(), "", *self._operator_table()]
        lines += [str(c) for c in self.curves]
        width = max([len("mutant")] + [len(m.name) for m in self.mutants]) + 1
        lines += ["", f"{'mutant':<{width}}{'n':>5}{'mean':>8}  {'95% interval':<17}"
                      f"{'ratio':>9}  {'decision':<12}{'verdict':<13}flags"]
        for m in self.mutants:
            p = m.posterior
            numbers = (f"{p.mean:>8.4f}  [{p.ci_low:.3f}, {p.ci_high:.3f}]  {p.ratio:>9.4g}"
                       if p else f"{'':>8}  {'':<17}{'':>9}")
            verdict = m.verdict["verdict"] if m.verdict else ""
            lines.append(f"{m.name:<{width}}{m.count.instances:>5}{numbers}  "
                         f"{m.decision:<12}{verdict:<13}{', '.join(m.flags)}".rstrip())
        lines.append(f"settings: {self.settings.describe()}, seed {self.seed}")
        steps = self.next_steps()
        if steps.steps:
            lines += ["", str(steps)]
        if self.comparison is not None:
            lines += ["", str(self.comparison)]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def baselines(self) -> list[tuple[str, str]]:
        """The healthy population against itself, the baseline of the mutants' P(above the
        baseline), as (label, numbers): unpaired, and paired by instance id where
        model-level mutants use it."""
        return [(label, f"posterior mean {post.mean:.4f} [{post.ci_low:.3f}, "
                        f"{post.ci_high:.3f}]" + why)
                for label, post, why in (
                    ("healthy vs healthy", self.baseline, ""),
                    ("healthy vs healthy, paired", self.paired_baseline,
                     " (by instance id: the model-level mutants' baseline)"))
                if post is not None]

    def failures_line(self) -> str:
        """The failed instances of every population that records them, in one line."""
        recorded = [p for p in self.populations if p.failures is not None]
        if not recorded:
            return ("instance failures: not recorded (the population files hold accuracies "
                    "only)")
        failed = [f"{p.name}: " + ", ".join(f"{n} {status}" for status, n in p.failures.items())
                  for p in recorded if p.failures]
        return "instance failures: " + ("; ".join(failed) if failed else
                                        f"none in {len(recorded)} populations")

    def _operator_table(self) -> list[str]:
        rows = self.operators()
        width = max(len("operator"), *(len(r["mutation"]) for r in rows)) + 1 if rows else 9
        lines = [f"{'operator':<{width}}{'mutants':>8}" + "".join(f"{o:>{len(o) + 2}}"
                                                               for o in OUTCOMES)
                 + f"  score [{self.settings.mass:.0%} interval]"]
        for row in rows:
            score = row["score"]
            lines.append(f"{row['mutation']:<{width}}{row['mutants']:>8}" + "".join(
                f"{row['counts'][o]:>{len(o) + 2}}" for o in OUTCOMES) + "  " + (
                f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]" if score
                else "none analysed"))
        return lines


# --- what a campaign leaves to do, and what changed since an earlier report ------------------

#: Instances per population a ``--until-settled`` run adds each round (train's default).
ROUND = 10


@dataclass(frozen=True)
class NextStep:
    """One mutant whose verdict is not settled (or that was not analysed): its instances
    per side now, and ``needed``, the instances per side that would settle its verdict
    (:func:`probmut.recommend.recommend`'s; for a mutant not analysed, its run's target or
    the sample size k, what its first verdict needs); None when no size within reach
    would (``why`` says so)."""

    name: str
    mutation: str
    magnitude: str
    outcome: str
    instances: int
    needed: int | None
    why: str

    def to_dict(self) -> dict:
        return {"name": self.name, "outcome": self.outcome, "instances": self.instances,
                "needed": self.needed, "why": self.why}


@dataclass(frozen=True)
class NextSteps(Result):
    """The campaign's unsettled and unanalysed mutants with the instances that would settle
    them, and ``command``: the ``probmut train ... --until-settled`` command that trains
    them on (in the run's folder, with the settings its run recorded), or None with
    ``no_command`` saying why (populations not trained by probmut train, say)."""

    steps: tuple[NextStep, ...]
    command: str | None
    no_command: str | None = None

    def rows(self) -> list[dict]:
        return [s.to_dict() for s in self.steps]

    def to_dict(self) -> dict:
        return {"steps": self.rows(), "command": self.command, "no_command": self.no_command}

    def __str__(self) -> str:
        if not self.steps:
            return "next steps: none (every analysed mutant's verdict is settled)"
        outcomes = [s.outcome for s in self.steps]
        lines = ["next steps: " + ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES
                                            if o in outcomes)]
        lines += [f"  {s.name}: {s.outcome}, {s.instances} instances per side; {s.why}"
                  for s in self.steps]
        lines.append(f"  {self.command}" if self.command else f"  {self.no_command}")
        return "\n".join(lines)


def _next_steps(campaign: Campaign) -> NextSteps:
    k = campaign.settings.sample
    steps = []
    for m in campaign.mutants:
        if m.flags or m.outcome not in ("not settled", "not analysed"):
            continue
        if m.outcome == "not settled":
            from probmut.recommend import MAX_INSTANCES

            needed = m.verdict["needed"]
            why = (f"about {needed} per side would settle it" if needed is not None else
                   f"no population of up to {MAX_INSTANCES} per side would settle it (see "
                   "its verdict): report its posterior mean and interval instead")
        elif m.status == "failed":
            needed, why = None, "every instance failed: more of them would fail too (see its symptoms)"
        else:
            needed = max(k, m.count.target or 0)
            why = {"missing": "no file yet", "empty": "no instance yet",
                   "too few": f"fewer usable instances than k = {k}"}.get(m.status, m.status)
            why += (f": {needed} per side, its run's target" if needed > k else
                    f": its first verdict needs k = {k} per side")
        steps.append(NextStep(m.name, m.mutation, m.magnitude, m.outcome,
                              m.count.instances, needed, why))
    command, no_command = _settle_command(campaign, [s for s in steps if s.needed])
    return NextSteps(tuple(steps), command, no_command)


def _settle_command(campaign: Campaign, steps) -> tuple[str | None, str | None]:
    """``probmut train`` into the run's folder, until settled, for these mutants, with the
    settings the run recorded (its ``.work/settings.json``); or why there is none."""
    import shlex

    run = campaign.run_settings
    if run is None:
        return None, ("no command: these populations were not trained by probmut train in "
                      "this folder (no .work/settings.json); train the instances with the "
                      "tool that made them, then report again")
    if not steps:
        return None, "nothing to train: no population within reach settles them"
    from probmut.train.datasets import DATASETS

    folder = Path(campaign.manifest).parent
    config = run.get("config", {})
    words = ["probmut", "train", "--out", shown_path(folder),
             "--dataset" if run["dataset"] in DATASETS else "--data", run["dataset"],
             "--architecture", run["model"], "--seed", str(run["seed"]),
             "--epochs", str(config["epochs"]), "--batch-size", str(config["batch_size"])]
    for option, key in (("--learning-rate", "learning_rate"), ("--patience", "patience")):
        if config.get(key) is not None:
            words += [option, str(config[key])]
    if campaign.model != folder.resolve().name:
        words += ["--name", campaign.model]
    magnitudes: dict[str, list[str]] = {}
    for step in steps:
        magnitudes.setdefault(step.mutation, []).append(step.magnitude)
    for mutation, chosen in magnitudes.items():
        words += ["--mutation", f"{mutation}:{','.join(chosen)}"]
    most = max(max(s.needed for s in steps), max(s.instances for s in steps) + ROUND)
    words += ["--until-settled", "--max-instances", str(-(-most // ROUND) * ROUND),
              "--sample", str(campaign.settings.sample)]
    return shlex.join(words), None


def shown_path(path) -> str:
    """A path as the reader would type it: relative to the current folder when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Comparison(Result):
    """This campaign against an earlier report of it (``probmut report --json``'s
    document, ``file``): the mutants whose outcome changed (``changed``: name, before,
    now), those only now (``added``) or only then (``removed``), how many kept theirs,
    and the mutation score then and now (None when there was none)."""

    file: str
    model: str
    changed: tuple[tuple[str, str, str], ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    score_before: float | None
    score_now: float | None

    def rows(self) -> list[dict]:
        return [{"name": n, "before": b, "now": a} for n, b, a in self.changed]

    def to_dict(self) -> dict:
        return {"file": self.file, "model": self.model, "changed": self.rows(),
                "added": list(self.added), "removed": list(self.removed),
                "unchanged": self.unchanged, "score_before": self.score_before,
                "score_now": self.score_now}

    def __str__(self) -> str:
        def score(value):
            return "none" if value is None else f"{value:.3f}"

        lines = [f"compared with {self.file} (a report of {self.model}): "
                 f"{counted(len(self.changed), 'outcome')} changed, {self.unchanged} the same; "
                 f"mutation score {score(self.score_before)} then, {score(self.score_now)} now"]
        lines += [f"  {n}: {b} -> {a}" for n, b, a in self.changed]
        lines += [f"  {n}: new" for n in self.added]
        lines += [f"  {n}: gone" for n in self.removed]
        return "\n".join(lines)


def compare_reports(now: dict, before: dict, file: str = "the earlier report") -> Comparison:
    """Which outcomes changed between two reports' documents (``probmut report --json``).

    >>> old = {"model": "m", "mutation_score": {"mean": 0.4}, "mutants": [
    ...     {"name": "a", "outcome": "not settled"}, {"name": "b", "outcome": "killed"}]}
    >>> new = {"model": "m", "mutation_score": {"mean": 0.5}, "mutants": [
    ...     {"name": "a", "outcome": "killed"}, {"name": "c", "outcome": "not killed"}]}
    >>> print(compare_reports(new, old, "old.json"))
    compared with old.json (a report of m): 1 outcome changed, 0 the same; mutation score 0.400 then, 0.500 now
      a: not settled -> killed
      c: new
      b: gone
    """
    then = {m["name"]: m["outcome"] for m in before["mutants"]}
    found = {m["name"]: m["outcome"] for m in now["mutants"]}
    changed = tuple((n, then[n], o) for n, o in found.items() if n in then and then[n] != o)
    return Comparison(
        file, str(before.get("model")), changed,
        tuple(n for n in found if n not in then), tuple(n for n in then if n not in found),
        sum(1 for n, o in found.items() if then.get(n) == o),
        (before.get("mutation_score") or {}).get("mean"),
        (now.get("mutation_score") or {}).get("mean"))


def _read_report(path) -> dict:
    """An earlier report's JSON document (``probmut report --json``), checked."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProbmutError(f"{path}: no such file (an earlier probmut report --json)",
                           option="compare") from None
    except (OSError, ValueError) as error:
        raise ProbmutError(f"{path}: not a JSON document ({error})", option="compare") from None
    mutants = document.get("mutants") if isinstance(document, dict) else None
    if not isinstance(mutants, list) or not all(
            isinstance(m, dict) and isinstance(m.get("name"), str)
            and isinstance(m.get("outcome"), str) for m in mutants):
        raise ProbmutError(f"{path}: not the document of probmut report --json (no list of "
                           "mutants with their outcomes)", option="compare")
    return document


def _read_run_settings(folder: Path) -> dict | None:
    """The settings a probmut train run in ``folder`` recorded (``.work/settings.json``:
    data, architecture, training settings, seed), or None."""
    path = folder / ".work" / "settings.json"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        return found if {"dataset", "model", "seed", "config"} <= set(found) else None
    except (OSError, ValueError, TypeError):
        return None


def _aligned(healthy, mutant, paired: bool, notes: list):
    """Healthy and mutant populations as the analyses take them: paired ones on their
    common instance ids (a run until settled trains healthy instances ahead of a
    model-level mutant's)."""
    from probmut.population import pair

    if not paired:
        return healthy, mutant
    common = np.intersect1d(healthy.ids, mutant.ids)
    orphans = np.setdiff1d(mutant.ids, healthy.ids)
    if orphans.size:
        notes.append(f"{mutant.where}: instance(s) {orphans.tolist()[:10]} have no usable "
                     "healthy instance to pair with; left out")
    if common.size == 0:
        return None, None
    return pair(healthy.subset(common), mutant.subset(common))


def summarize_campaign(manifest=None, model: str | None = None, settings=None, *, seed=42,
                       jobs: int | None = None, verdicts: bool = True, coverage=None,
                       compare=None, progress: bool = False) -> Campaign:
    """Analyse every mutant of one model of a manifest: the campaign's whole answer.

    Parameters
    ----------
    manifest : a :class:`~probmut.io.manifest.Manifest` or its path (default: the
        bundled data's). A run directory's ``manifest.toml``; its ``rounds.json``,
        ``coverage.json`` (``probmut coverage --json``) and the settings its run recorded
        (``.work/settings.json``, for the next steps' command) are read when present.
    model : the model (default: the manifest's first).
    settings : :class:`~probmut.bagging.PosteriorSettings` of every analysis.
    seed, jobs : same seed, same numbers, for any number of threads.
    verdicts : compute each mutant's pilot verdict (:func:`probmut.recommend.recommend`;
        the largest part of the time).
    coverage : a coverage result's JSON file (default: ``coverage.json`` beside the
        manifest, if any).
    compare : an earlier report's JSON document (``probmut report --json``): which
        outcomes changed since (:class:`Comparison`).
    progress : progress lines on stderr.

    A population file not written yet, or holding only its header (a run stopped
    early), counts 0 instances and its mutant is not analysed; the rest is. Warnings
    while reading (dropped instances, small populations) become ``notes``, and each
    mutant's own also its ``notes``.

    Examples
    --------
    >>> report = summarize_campaign(model="mnist_dc", verdicts=False)     # DeepCrime's 20 vs 20
    >>> report.counts["killed"], round(report.score.mean, 3)
    (11, 0.633)
    >>> report.complete is None       # the bundled manifest records no targets
    True
    """
    from probmut.bagging import PosteriorSettings
    from probmut.io.manifest import Manifest

    manifest = manifest if isinstance(manifest, Manifest) else Manifest.load(manifest)
    model = model or manifest.model_names()[0]
    healthy_path = manifest.healthy(model)
    settings = settings or PosteriorSettings()
    if not healthy_path.is_file():
        raise ProbmutError(f"{manifest.path}: model {model!r} has no population files yet "
                           f"({healthy_path.name} is missing): nothing to report")
    earlier = (str(compare), _read_report(compare)) if compare else None
    notes: list[str] = []
    with _noted(notes):
        result = _campaign(manifest, model, settings, seed, jobs, coverage, progress, notes)
    notes += [note for m in result.mutants for note in m.notes]
    result = replace(result, notes=tuple(dict.fromkeys(notes)), earlier=earlier,
                     verdicts=False)
    return with_verdicts(result, jobs=jobs, progress=progress) if verdicts else result


def with_verdicts(campaign: Campaign, *, jobs: int | None = None,
                  progress: bool = False) -> Campaign:
    """The campaign with every analysed mutant's verdict (:func:`probmut.recommend.recommend`
    on its instances, the pilot being the whole populations; the campaign's settings and
    seed): what ``summarize_campaign(verdicts=True)`` gives, in a second step (the figures
    of the page can be drawn meanwhile).
    """
    from probmut.progress import progress as progress_bar
    from probmut.recommend import recommend

    settings, mutants, notes = campaign.settings, [], list(campaign.notes)
    judged = [m for m in campaign.mutants if m.populations is not None]
    with progress_bar(len(judged), f"verdicts {campaign.model}", enabled=progress,
                      unit="mutant") as bar:
        for m in campaign.mutants:
            if m.populations is None:
                mutants.append(m)
                continue
            own: list[str] = []
            with _noted(own):
                # The verdict alone (no table of sizes): its blocks do not depend on them.
                advice = recommend(*m.populations, settings, sizes=(), paired=m.paired,
                                   seed=campaign.seed, jobs=jobs, name=m.name)
            verdict = {"verdict": advice.verdict, "p_killed": advice.p_killed,
                       "needed": advice.needed, "message": advice.message}
            mutants.append(replace(m, verdict=verdict,
                                   notes=tuple(dict.fromkeys((*m.notes, *own)))))
            notes += own
            bar.update()
    return replace(campaign, mutants=tuple(mutants), verdicts=True,
                   notes=tuple(dict.fromkeys(notes)))


class _noted(warnings.catch_warnings):
    """Warnings inside become lines of ``notes`` (a short population's are left out: the
    summary's status says it)."""

    def __init__(self, notes: list):
        super().__init__(record=True)
        self.notes = notes

    def __enter__(self):
        self.caught = super().__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        from probmut.io.completeness import IncompleteRunWarning

        super().__exit__(*exc)
        self.notes += [str(w.message) for w in self.caught
                       if not issubclass(w.category, IncompleteRunWarning)]


def _campaign(manifest, model, settings, seed, jobs, coverage, progress, notes):
    from probmut.bagging import bagged_posteriors
    from probmut.io.coverage import read_coverage
    from probmut.io.populations import has_symptom_records, instances_so_far, read_population
    from probmut.io.records import FAILED
    from probmut.io.rounds import read_rounds
    from probmut.progress import progress as progress_bar

    folder = manifest.path.parent
    rounds = read_rounds(folder / "rounds.json")
    beside = folder / "coverage.json"
    coverage = coverage or (beside if beside.is_file() else None)
    coverage = read_coverage(coverage) if coverage else None
    healthy_path = manifest.healthy(model)
    mutations = list(manifest.mutations(model))
    files = [healthy_path] + [f for m in mutations for f in m.files]
    records = {f: instances_so_far(f) for f in files}

    def count(path: Path, name: str) -> PopulationCount:
        target = manifest.target(path)
        failures = None
        if records[path] and has_symptom_records(path):
            statuses = [r.status for r in records[path]]
            failures = {s: statuses.count(s) for s in sorted(FAILED) if s in statuses}
        return PopulationCount(name, str(path.relative_to(folder)) if path.is_relative_to(
            folder) else str(path), len(records[path]), None if target is None else target[1],
            path.is_file(), failures)

    healthy = read_population(healthy_path, name="healthy") if records[healthy_path] else None
    enough = healthy is not None and len(healthy) >= settings.sample
    if not enough:
        held = "no instance yet" if healthy is None else f"{len(healthy)} usable instances"
        notes.append(f"{healthy_path}: {held}, fewer than the sample size k = "
                     f"{settings.sample}: no mutant can be analysed (lower the sample size, "
                     "or train more instances)")

    def baseline(paired: bool):
        return bagged_posteriors(healthy, [], settings, paired=paired, seed=seed,
                                 jobs=jobs).baseline

    symptoms = records[healthy_path] and has_symptom_records(healthy_path)
    outcomes = _outcomes_of(healthy_path, "healthy", notes) if healthy is not None else None
    mutants, mutant_outcomes = [], {}
    total = sum(len(m.files) for m in mutations)
    with progress_bar(total, f"report {model}", enabled=progress, unit="mutant") as bar:
        for mutation in mutations:
            for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
                name = f"{mutation.name}_{magnitude}"
                summary = MutantSummary(name, mutation.name, magnitude, mutation.paired,
                                        count(path, name),
                                        flags=tuple(mutation.flags.get(magnitude, ())))
                own: list[str] = []
                with _noted(own):
                    if not path.is_file():
                        summary = replace(summary, status="missing")
                    elif not records[path]:
                        summary = replace(summary, status="empty")
                    else:
                        summary = _analyse(summary, healthy if enough else None, path,
                                           settings, seed, jobs, own)
                        if symptoms and has_symptom_records(path):
                            summary = _with_symptoms(summary, records[healthy_path], path,
                                                     settings, own)
                        if outcomes is not None:
                            found = _outcomes_of(path, name, own)
                            if found is not None:
                                mutant_outcomes[name] = found
                mutants.append(replace(summary, rounds=_rounds_of(rounds, name),
                                       notes=tuple(dict.fromkeys(own))))
                bar.update()
    inputs = _inputs(outcomes, mutant_outcomes, notes)
    if inputs is not None:
        found = {m.name: m for m in inputs.mutants}
        mutants = [replace(m, inputs=found.get(m.name)) for m in mutants]
    scored = [m.posterior for m in mutants if m.posterior is not None and not m.flags]
    score = campaign_score(scored, settings, seed) if scored else None
    unpaired = baseline(False) if enough else None
    paired = baseline(True) if enough and any(m.paired for m in mutations) else None
    curves = tuple(_curve(mutation, [m for m in mutants if m.mutation == mutation.name],
                          paired if mutation.paired else unpaired, seed, settings)
                   for mutation in mutations)
    return Campaign(
        model=model, manifest=str(manifest.path),
        description=str(manifest.models[model].get("description", "")),
        data=manifest.models[model].get("data"), settings=settings, seed=seed,
        healthy=count(healthy_path, "healthy"), baseline=unpaired, mutants=tuple(mutants),
        score=score, curves=curves, verdicts=False, inputs=inputs, coverage=coverage,
        rounds_file=str(folder / "rounds.json") if rounds else None,
        operator_scores=tuple(_operator_score(mutation.name, mutants, seed, settings)
                              for mutation in mutations),
        paired_baseline=paired, run_settings=_read_run_settings(folder),
        score_rounds=tuple(r for r in rounds or () if "score" in r))


def _operator_score(mutation: str, mutants, seed, settings) -> MutationScore | None:
    """The mutation score of one operator's analysed, unflagged mutants (its own stream)."""
    scored = [m.posterior for m in mutants if m.mutation == mutation
              and m.posterior is not None and not m.flags]
    return mutation_score(scored, seed=_stream(seed, 2, mutation),
                          mass=settings.mass) if scored else None


def _analyse(summary, healthy, path, settings, seed, jobs, notes):
    """The bagged posterior and the test on whole populations of a mutant."""
    from probmut.bagging import bagged_posteriors
    from probmut.io.populations import read_population
    from probmut.io.records import AllFailedError
    from probmut.killtest import deepcrime_test

    try:
        mutant = read_population(path, name=summary.magnitude)
    except AllFailedError:
        return replace(summary, status="failed")
    if healthy is None:
        return replace(summary, status="too few", usable=len(mutant))
    h, m = _aligned(healthy, mutant, summary.paired, notes)
    if m is None or min(len(h), len(m)) < settings.sample:
        return replace(summary, status="too few", usable=len(mutant))
    study = bagged_posteriors(h, [m], settings, paired=summary.paired, seed=seed, jobs=jobs)
    return replace(summary, usable=len(mutant), study=study, populations=(h, m),
                   test=deepcrime_test(h, m, settings.criterion))


def _with_symptoms(summary, healthy_records, path, settings, notes):
    from probmut.io.populations import read_instances
    from probmut.symptoms import classify

    try:
        found = classify(healthy_records, read_instances(path), summary.name,
                         settings.criterion, summary.paired)
    except ProbmutError as error:
        notes.append(f"symptoms of {summary.name}: {error}")
        return summary
    return replace(summary, symptoms=found)


def _outcomes_of(path: Path, name: str, notes):
    """A population's per-input outcomes (``{stem}.outcomes.npz``), or None."""
    from probmut.inputs import Outcomes
    from probmut.io.records import AllFailedError

    found = path.with_name(f"{path.stem}.outcomes.npz")
    if not found.is_file():
        return None
    try:
        return Outcomes.load(found, name=name)
    except AllFailedError:
        return None
    except ProbmutError as error:
        notes.append(str(error))
        return None


def _inputs(healthy, mutants: dict, notes):
    """Per-input killing of every mutant with outcomes (:func:`probmut.inputs.analyse_inputs`)."""
    from probmut.inputs import analyse_inputs

    if healthy is None or not mutants:
        return None
    try:
        return analyse_inputs(healthy, list(mutants.values()))
    except ProbmutError as error:
        notes.append(f"per-input killing: {error}")
        return None


def _rounds_of(rounds, name: str) -> tuple[dict, ...]:
    if not rounds:
        return ()
    return tuple({"round": r.get("round"), "instances": r["instances"].get(name),
                  **r.get("verdicts", {})[name]}
                 for r in rounds if name in r.get("verdicts", {}))


def _curve(mutation, mutants, baseline, seed, settings) -> KillCurve:
    fitted = {m.magnitude: m.posterior for m in mutants if m.posterior is not None
              and not m.flags}
    excluded = tuple(m.magnitude for m in mutants if m.magnitude not in fitted)
    if not fitted:
        return KillCurve(mutation.name, (), None, "no analysed magnitude", np.zeros(0),
                         np.zeros(0), np.zeros(0), excluded=excluded)
    return kill_curve(mutation.name, fitted, excluded=excluded,
                      baseline=None if baseline is None else baseline.mean,
                      mass=settings.mass, seed=seed)
