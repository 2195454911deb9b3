"""The mutation score of a campaign and the parts of its variance: joint draws of the
mutants' kill probabilities from their bagged posteriors (see :mod:`probmut.campaign`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probmut.errors import ProbmutError
from probmut.results import Result
from probmut.seeds import generator
from probmut.validation import checked, instance, integer, number, renamed, seed, sequence


def _posterior(value, name):
    from probmut.bagging import PopulationPosterior

    return instance(PopulationPosterior, "a bagged posterior (PopulationPosterior)")(value, name)

#: Joint posterior draws behind the score's and the smallest killed magnitude's intervals.
DRAWS = 20_000


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
    return resampled_draws(posteriors, draws, seed)[1]


def resampled_draws(posteriors, draws: int = DRAWS, seed=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`posterior_draws` with the resample each draw picked: ``(resamples, draws)``,
    the same draws for the same seed.

    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rows = [summarize("a", np.arange(20) * 5, PosteriorSettings(bootstraps=20))]
    >>> picked, values = resampled_draws(rows, 4, seed=0)
    >>> picked.shape, values.shape
    ((4,), (4, 1))
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
    rng = seed if isinstance(seed, np.random.Generator) else generator(seed, "campaign draws", "")
    picked = rng.integers(0, bootstraps, draws)
    chosen = counts[:, picked].T
    return picked, rng.beta(chosen + 1.0, trials - chosen + 1.0)


def equal_tailed(values, mass: float):
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


@checked(posteriors=sequence(_posterior, what="bagged posteriors"), draws=integer(1, 10**7),
         mass=number(0, 1, low_open=True, high_open=True), seed=seed)
def mutation_score(posteriors, *, draws: int = DRAWS, mass: float = 0.95,
                   seed=None) -> MutationScore:
    """The mutation score of the mutants whose bagged posteriors are given (module notes).

    Parameters
    ----------
    posteriors : sequence of PopulationPosterior
        The :class:`~probmut.bagging.PopulationPosterior` of each mutant in the score
        (leave flagged mutants out; keep survivors).
    draws : int, optional
        The joint posterior draws of the interval.
    mass : float, optional
        The interval's probability mass.
    seed : int, SeedSequence, Generator or None, optional
        The same seed gives the same interval.

    Returns
    -------
    MutationScore
        The score's exact posterior mean, its equal-tailed interval, and the plain share
        decided killed.

    Raises
    ------
    ProbmutError
        For no posterior, posteriors of different numbers of resamples or trials, or an
        argument of the wrong type.
    """
    posteriors = list(posteriors)
    if not posteriors:
        raise ProbmutError("the mutation score needs at least one analysed mutant")
    trials = posteriors[0].trials
    exact = np.mean([(p.kill_counts.mean() + 1) / (trials + 2) for p in posteriors])
    low, high = equal_tailed(posterior_draws(posteriors, draws, seed).mean(axis=1), mass)
    killed = sum(p.killed for p in posteriors)
    return MutationScore(float(exact), low, high, killed / len(posteriors), len(posteriors),
                         killed, draws, mass)


def campaign_score(posteriors, settings, seed) -> MutationScore:
    """The score of a campaign's analysed, unflagged mutants as ``probmut report`` shows
    it for the same seed: drawn from the campaign's own stream, at the settings' mass."""
    return mutation_score(posteriors, seed=score_stream(seed), mass=settings.mass)


def score_stream(seed) -> np.random.Generator:
    """The stream of a campaign's score draws (:func:`campaign_score`) for ``seed``."""
    return generator(seed, "campaign draws", "score")


@renamed(jobs="threads")
def mutant_posterior(healthy, mutant, settings, *, paired: bool = False, seed=None,
                     threads: int | None = None):
    """The bagged posterior of one mutant population against the healthy one, without the
    healthy baseline: the kill counts, summary and decision :func:`summarize_campaign`
    gets for it with the same seed (paired populations on the instance ids both hold).

    >>> from probmut.bagging import PosteriorSettings, bagged_posteriors
    >>> from probmut.population import Population
    >>> rng = np.random.default_rng(0)
    >>> h, m = (Population.from_values(rng.normal(mu, 0.01, 50)) for mu in (0.9, 0.895))
    >>> row = mutant_posterior(h, m, PosteriorSettings(), seed=3)
    >>> bagged = bagged_posteriors(h, [m], seed=3).populations[1]
    >>> bool(np.array_equal(row.kill_counts, bagged.kill_counts))
    True
    """
    from probmut.bagging import summarize
    from probmut.engine import kill_counts

    h, m = aligned_populations(healthy, mutant, paired, [])
    if m is None:
        raise ProbmutError(f"{mutant.where}: no instance id in common with the healthy "
                           "population to pair with")
    counts = kill_counts(h.values, m.values, bootstraps=settings.bootstraps,
                         trials=settings.trials, sample=settings.sample, paired=paired,
                         criterion=settings.criterion, seed=seed, threads=threads)
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
    posteriors : sequence of PopulationPosterior
        Each mutant's :class:`~probmut.bagging.PopulationPosterior`, analysed with the
        same seed (:func:`mutant_posterior`).
    healthy : array_like
        The healthy accuracies the unpaired mutants are compared with.
    mutants : sequence of array_like
        Each mutant's accuracies (paired: those of its pairs).
    paired : sequence of bool
        For each mutant, whether it is paired.

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


def aligned_populations(healthy, mutant, paired: bool, notes: list):
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
