"""Bagged posterior of the kill probability, its Beta summary, distances and decision.

For each bootstrap resample b the DeepCrime test killed ``s_b`` of ``N`` trials; with a
uniform prior its posterior is ``Beta(s_b + 1, N - s_b + 1)``. The bagged posterior is
the equal-weight mixture of the B posteriors (METHOD.md section 3), summarised by one
Beta: by moment matching (default: the mixture's exact mean and variance) or by least
squares on a grid (the paper's fit). The summary is compared with the ideal sound
``Beta(1, N + 1)`` and ideal mutant ``Beta(N + 1, 1)`` posteriors by the Hellinger
distance; ``ratio = H(post, sound) / H(post, mutant) > threshold`` means killed. The Beta
maths (densities, fits, intervals, distances, the ratio) is :mod:`probmut.beta`; this
module holds the bagged posterior, its settings and its results.

References
----------
Tambon, Khomh, Antoniol. A probabilistic framework for mutation testing in deep neural
networks. Information and Software Technology, 2023.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from probmut import seeds
from probmut.beta import (
    FITS,
    INTERVALS,
    SOLVERS,
    beta_mean_var,
    credible_interval,
    fit_beta,
    ideal_distances,
    prob_greater,
    similarity_ratio,
)
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion
from probmut.population import population, populations
from probmut.results import Result, listing
from probmut.validation import (
    MAX_COUNT,
    check_fields,
    checked,
    choice,
    flag,
    function,
    instance,
    integer,
    kill_count_array,
    number,
    optional,
    renamed,
    seed,
    sequence,
    text,
    threads,
)

#: Jackknife variants of the Monte-Carlo error (see :mod:`probmut.mce`).
JACKKNIFES = ("standard", "paper")


@dataclass(frozen=True)
class PosteriorSettings:
    """Every choice of a bagged-posterior analysis (and of its repetitions), in one place.

    ``fit`` is the Beta summary (``"moments"`` or least squares ``"lsq"`` on the grid of
    step ``grid_step``, computed by ``solver``); ``jackknife`` the standard error of
    repeated analyses (:mod:`probmut.mce`). :func:`probmut.paper.posterior_settings`
    gives exactly the paper's choices.

    >>> PosteriorSettings().fit, PosteriorSettings().interval, PosteriorSettings().jackknife
    ('moments', 'hdi', 'standard')
    """

    bootstraps: int = 100
    trials: int = 100
    sample: int = 20
    fit: str = "moments"
    grid_step: float = 0.001
    interval: str = "hdi"
    mass: float = 0.95
    threshold: float = 1.0
    criterion: KillCriterion = field(default_factory=KillCriterion)
    jackknife: str = "standard"
    solver: str = "lm"

    def __post_init__(self):
        check_fields(
            self, bootstraps=integer(1, MAX_COUNT), trials=integer(1, MAX_COUNT),
            sample=integer(2, MAX_COUNT), fit=choice(FITS),
            grid_step=number(0, 0.5, low_open=True, high_open=True), interval=choice(INTERVALS),
            mass=number(0, 1, low_open=True, high_open=True),
            threshold=number(0, math.inf, low_open=True), criterion=instance(KillCriterion),
            jackknife=choice(JACKKNIFES), solver=choice(SOLVERS))

    def describe(self, saved_bootstraps: str | None = None) -> str:
        """The settings in words. For kill counts saved by another run, give their number
        of bootstrap resamples as ``saved_bootstraps``: the words then say only what is
        known of them (not the kill test nor the sample size that produced them).

        >>> PosteriorSettings().describe(saved_bootstraps="7")[:56]
        'B=7 bootstraps x N=100 trials, from saved kill counts; B'
        """
        fit = ("least squares on a grid of step " + f"{self.grid_step:g}"
               if self.fit == "lsq" else "moment matching")
        interval = {"hdi": "highest-density", "equal-tailed": "equal-tailed",
                    "normal": "mean +- 1.96 sd (normal approximation)"}[self.interval]
        tests = (f"B={saved_bootstraps} bootstraps x N={self.trials} trials, from saved kill "
                 "counts" if saved_bootstraps is not None else
                 f"B={self.bootstraps} bootstraps x N={self.trials} trials of {self.sample} vs "
                 f"{self.sample} instances; kill iff {self.criterion.describe()}")
        return (f"{tests}; Beta fit: {fit}; {self.mass:.0%} interval: {interval}; killed iff "
                f"ratio > {self.threshold:g}")


@dataclass(frozen=True)
class PopulationPosterior:
    """The bagged posterior of one population against the healthy baseline."""

    name: str
    kill_counts: np.ndarray
    trials: int
    alpha: float
    beta: float
    mean: float
    var: float
    ci_low: float
    ci_high: float
    h_sound: float
    h_mutant: float
    ratio: float
    killed: bool
    p_above_baseline: float | None

    def to_dict(self) -> dict:
        row = asdict(self)
        row.pop("kill_counts")
        row["kill_rate_mean"] = float(np.mean(self.kill_counts) / self.trials)
        return row


def summarize(name: str, kill_counts, settings: PosteriorSettings,
              baseline: PopulationPosterior | None = None) -> PopulationPosterior:
    """Beta summary, interval, distances, ratio and decision of one population.

    >>> row = summarize("m", np.full(100, 100), PosteriorSettings())
    >>> row.killed, round(row.mean, 4)
    (True, 0.9902)
    """
    counts = np.asarray(kill_counts, dtype=np.int64)
    n = settings.trials
    a, b = fit_beta(counts, n, settings.fit, settings.grid_step, settings.solver)
    mean, var = beta_mean_var(a, b)
    low, high = credible_interval(a, b, settings.interval, settings.mass)
    h_sound, h_mutant = ideal_distances(a, b, n)
    ratio = similarity_ratio(h_sound, h_mutant)
    above = None if baseline is None else prob_greater(a, b, baseline.alpha, baseline.beta)
    return PopulationPosterior(
        name=name, kill_counts=counts, trials=n, alpha=a, beta=b, mean=mean, var=var,
        ci_low=low, ci_high=high, h_sound=h_sound, h_mutant=h_mutant, ratio=ratio,
        killed=bool(ratio > settings.threshold), p_above_baseline=above)


@dataclass(frozen=True)
class PosteriorStudy(Result):
    """Bagged posteriors of a healthy baseline (first row) and mutant populations."""

    populations: tuple[PopulationPosterior, ...]
    settings: PosteriorSettings
    paired: bool = False
    seed: int | None = None
    source: str = "populations"

    @property
    def baseline(self) -> PopulationPosterior:
        return self.populations[0]

    @property
    def saved(self) -> bool:
        """The kill counts were not computed here (e.g. read from saved kill rates): their
        number of resamples is theirs, their kill test and sample size are not known."""
        return self.source != "populations"

    def _saved_bootstraps(self) -> list[int]:
        return [int(np.size(p.kill_counts)) for p in self.populations]

    def describe(self) -> str:
        """The settings in words (see :meth:`PosteriorSettings.describe`)."""
        if not self.saved:
            return self.settings.describe()
        counts = self._saved_bootstraps()
        if len(set(counts)) == 1:
            return self.settings.describe(saved_bootstraps=str(counts[0]))
        return self.settings.describe(saved_bootstraps=", ".join(
            f"{n} ({p.name})" for n, p in zip(counts, self.populations, strict=True)))

    def to_dict(self) -> dict:
        rows = [p.to_dict() for p in self.populations]
        detail = {k: v for k, v in asdict(self.settings).items() if k != "criterion"}
        if self.saved:
            counts = self._saved_bootstraps()
            detail.pop("sample")
            detail["bootstraps"] = counts[0] if len(set(counts)) == 1 else counts
        else:
            detail["criterion"] = asdict(self.settings.criterion)
        return listing(rows, paired=self.paired, seed=self.seed,
                       source=self.source, settings=self.describe(), settings_detail=detail)


    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([p.to_dict() for p in self.populations]).set_index("name")

    def __str__(self) -> str:
        header = (f"{'population':<22}{'mean':>8}  {'95% interval':<17}{'H_sound':>9}"
                  f"{'H_mutant':>10}{'ratio':>11}  {'P(>base)':>8}  decision")
        lines = [header, "-" * len(header)]
        for p in self.populations:
            above = "" if p.p_above_baseline is None else f"{p.p_above_baseline:.3f}"
            verdict = "baseline" if p is self.baseline else ("KILLED" if p.killed else "not killed")
            lines.append(
                f"{p.name:<22}{p.mean:>8.4f}  [{p.ci_low:.3f}, {p.ci_high:.3f}]  "
                f"{p.h_sound:>9.5f}{p.h_mutant:>10.5f}{p.ratio:>11.6g}  {above:>8}  {verdict}")
        lines.append(f"settings: {self.describe()}"
                     + (", paired by instance id" if self.paired else "")
                     + (f", seed {self.seed}" if self.seed is not None else ""))
        return "\n".join(lines)


@checked(baseline_counts=kill_count_array,
         mutant_counts=sequence(kill_count_array, what="arrays of kill counts"),
         names=sequence(text, what="names"), settings=instance(PosteriorSettings),
         paired=flag, seed=seed, source=text)
def study_from_kill_counts(baseline_counts, mutant_counts, names, settings: PosteriorSettings,
                           paired: bool = False, seed=None,
                           source: str = "kill counts") -> PosteriorStudy:
    """Posterior study from saved kill counts: the baseline, then each mutant row.

    ``names`` has one name for the baseline and one per mutant row.

    Returns
    -------
    PosteriorStudy
        One posterior per population of kill counts, the healthy baseline first.

    Raises
    ------
    ProbmutError
        When ``names`` does not hold one name per population (healthy first), a count
        exceeds the settings' trials, or an argument is of the wrong type.
    """
    if len(names) != len(mutant_counts) + 1:
        raise ProbmutError(f"{len(names)} names for {len(mutant_counts) + 1} populations",
                           option="names")
    for name, counts in [("baseline_counts", baseline_counts),
                         *((f"mutant_counts[{i}]", c) for i, c in enumerate(mutant_counts))]:
        if counts.max() > settings.trials:
            raise ProbmutError(f"{name} holds a kill count of {counts.max()}, more than the "
                               f"settings' {settings.trials} trials", option=name.split("[")[0])
    baseline = summarize(names[0], baseline_counts, settings)
    rows = [baseline] + [summarize(name, counts, settings, baseline)
                         for name, counts in zip(names[1:], mutant_counts, strict=True)]
    return PosteriorStudy(tuple(rows), settings, paired, seed, source)


@renamed(jobs="threads")
@checked(healthy=population, mutants=populations,
         settings=optional(instance(PosteriorSettings)), paired=flag, seed=seed, threads=threads,
         names=optional(sequence(text, what="names")), report=optional(function))
def bagged_posteriors(healthy, mutants, settings: PosteriorSettings | None = None, *,
                      paired: bool = False, seed=None, threads: int | None = None,
                      names=None, report=None) -> PosteriorStudy:
    """Bagged posteriors of the healthy baseline (healthy vs itself) and each mutant.

    Parameters
    ----------
    healthy : Population or array_like
        The healthy population (:class:`~probmut.population.Population`) or its
        accuracies.
    mutants : sequence of Population or array_like
        The mutant populations, or their accuracies.
    settings : PosteriorSettings, optional
        The analysis (default: probmut's defaults).
    paired : bool, optional
        Model-level mutations: the populations are aligned by instance id.
    seed : int, SeedSequence, Generator or None, optional
        See :func:`probmut.engine.kill_counts`. Every population pair is run with the same
        seed (common random numbers): a mutant's numbers do not depend on which other
        mutants are analysed with it, nor on their order.
    threads : int, optional
        Engine threads (None: all cores); the numbers do not depend on them.
    names : sequence of str, optional
        A display name for each population, the healthy one first (default: the
        populations' own names).
    report : callable, optional
        Called with the number of kill tests run, as they run (a progress bar's
        ``update``); ``(1 + len(mutants)) * B * N`` in all.

    Returns
    -------
    PosteriorStudy
        The healthy baseline's posterior first, then each mutant's.

    Raises
    ------
    ProbmutError
        For populations :func:`~probmut.population.as_population` refuses, paired
        populations whose instance ids differ, a population smaller than the sample size k,
        counts (B, N, threads) out of range (:func:`probmut.engine.kill_counts`), or an
        argument of the wrong type (mutants not a list of populations, settings not a
        :class:`PosteriorSettings`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> study = bagged_posteriors(rng.normal(0.99, 0.002, 100),
    ...                           [rng.normal(0.98, 0.002, 100)], seed=1)
    >>> [p.killed for p in study.populations]
    [False, True]
    """
    from probmut.engine import kill_counts
    from probmut.population import aligned, as_population

    settings = settings or PosteriorSettings()
    mutants = [as_population(m, f"mutant {i}") for i, m in enumerate(mutants, start=1)]
    names = list(names) if names else [healthy.name] + [m.name for m in mutants]
    _warn_if_sample_near_population(settings.sample, [healthy] + mutants)
    # One key for every pair, fixed here so that seed=None still shares it.
    stream = seeds.stream(seed, "bagged posterior")

    def counts(h, m):
        h, m = aligned(h, m, paired)
        return kill_counts(h.values, m.values, bootstraps=settings.bootstraps,
                           trials=settings.trials, sample=settings.sample, paired=paired,
                           criterion=settings.criterion, seed=stream, threads=threads,
                           report=report)

    baseline = counts(healthy, healthy)
    mutant_counts = [counts(healthy, m) for m in mutants]
    return study_from_kill_counts(baseline, mutant_counts, names, settings, paired, seed,
                                  source="populations")


class SmallPopulationWarning(UserWarning):
    """The sample size k is close to the population size: the bagged posterior degrades."""


def _warn_if_sample_near_population(sample: int, populations) -> None:
    smallest = min(populations, key=len)
    if 2 * sample > len(smallest):
        warnings.warn(
            f"{smallest.where}: {len(smallest)} instances for samples of k = {sample}: the "
            "trials of one resample share most instances, so kill counts pile up at 0 and N "
            "and the bagged posterior is unreliable (the paper draws 20 of 200); train "
            "more instances or lower the sample size k", SmallPopulationWarning, stacklevel=4)
