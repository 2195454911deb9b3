"""How many instances to train: the population-size study (METHOD.md section 6).

For each population size n, draw sub-populations of n healthy and n mutant instances
(paired data: the same instance ids on both sides), run the Monte-Carlo error analysis
(:mod:`probmut.mce`: R repetitions of the B x N bagging) on each, and summarise, over
the sub-populations, the estimates (average posterior mean and variance) and their MCE
bounds (``estimate +- 1.96 se``) by their median and 2.5 / 97.5 percentiles. These are
the paper's Figures 4/5.

This is a replication of the paper's study: its sub-populations are drawn *without
replacement from the population at hand*. Sizes above half of that population share
most of their instances, so their spread understates the spread of fresh instances;
the study flags those sizes (``overlap``). To predict fresh instances from a pilot, use
:mod:`probmut.recommend`.

All R x B x N tests of a chunk of sub-populations run in one call of the compiled engine;
chunks are cached on disk (:mod:`probmut.io.cache`) so a rerun computes nothing again
and an interrupted study resumes. Sub-population draws and engine streams depend on the seed
and the chunk's place only: the numbers do not depend on chunking or ``threads``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from probmut import paper, seeds
from probmut.bagging import PosteriorSettings
from probmut.beta import Z95, ratio_of
from probmut.errors import ProbmutError
from probmut.io.cache import Cache, cache_key
from probmut.mce import jackknife_se, repetition_moments
from probmut.population import population
from probmut.progress import progress as progress_display
from probmut.results import Result
from probmut.validation import (
    MAX_COUNT,
    checked,
    flag,
    instance,
    integer,
    optional,
    renamed,
    seed,
    sequence,
    text,
    threads,
)

#: What is summarised over sub-populations, in the order of the JSON output.
QUANTITIES = ("mean", "var", "mean_lower", "mean_upper", "var_lower", "var_upper")


def default_sizes(available: int, sample: int = 20) -> list[int]:
    """The paper's sizes for 200 or more instances; else 8 sizes from k to 95% of them.

    >>> default_sizes(200)
    [25, 50, 75, 100, 125, 150, 175, 190]
    >>> default_sizes(60)
    [20, 25, 31, 36, 41, 46, 52, 57]
    """
    if available >= 200:
        return list(paper.SIZES)
    top = max(sample, int(0.95 * available))
    return sorted({int(round(v)) for v in np.linspace(sample, top, 8)})


@dataclass(frozen=True)
class SizeResult:
    """MCE results of every sub-population of one population size n."""

    n: int
    means: np.ndarray
    mean_se: np.ndarray
    variances: np.ndarray
    var_se: np.ndarray
    killed: np.ndarray

    def values(self, quantity: str) -> np.ndarray:
        """One value per sub-population: an estimate or one of its MCE bounds."""
        estimate, se = ((self.means, self.mean_se) if quantity.startswith("mean")
                        else (self.variances, self.var_se))
        if quantity.endswith("_lower"):
            return estimate - Z95 * se
        if quantity.endswith("_upper"):
            return estimate + Z95 * se
        return estimate

    def summary(self, quantity: str) -> dict:
        """Median and 2.5 / 97.5 percentiles over the sub-populations."""
        values = self.values(quantity)
        return {"median": float(np.median(values)), "low": float(np.quantile(values, 0.025)),
                "high": float(np.quantile(values, 0.975))}

    @property
    def killed_share(self) -> float:
        return float(self.killed.mean())

    @property
    def agreement(self) -> float:
        """Share of sub-populations that reach the majority decision."""
        return max(self.killed_share, 1.0 - self.killed_share)

    @property
    def mean_band(self) -> float:
        """Width of the 95% band of the posterior mean over sub-populations."""
        summary = self.summary("mean")
        return summary["high"] - summary["low"]

    def to_dict(self) -> dict:
        return ({"n": self.n} | {q: self.summary(q) for q in QUANTITIES}
                | {"killed_share": self.killed_share, "agreement": self.agreement,
                   "mean_band": self.mean_band, "subpopulations": int(self.means.size)})


#: Sizes above this share of the population overlap so much that their spread
#: understates the spread of fresh instances.
OVERLAP_SHARE = 0.5


def overlaps(n: int, population: int) -> bool:
    """Whether sub-populations of n drawn from ``population`` instances share so many
    instances that their spread understates fresh instances (n above half of it).

    Two sub-populations of n out of P share n^2 / P instances on average; above n = P/2
    that is more than half of each.

    >>> overlaps(100, 200), overlaps(125, 200)
    (False, True)
    """
    return n > OVERLAP_SHARE * population


@dataclass(frozen=True)
class SampleSizeStudy(Result):
    """The population-size study of one mutant against its healthy population."""

    name: str
    sizes: tuple[SizeResult, ...]
    settings: PosteriorSettings
    repetitions: int
    subpopulations: int
    population: tuple[int, int]
    paired: bool = False
    seed: int | None = None

    @property
    def jackknife(self) -> str:
        return self.settings.jackknife

    @property
    def available(self) -> int:
        return min(self.population)

    @property
    def overlap_note(self) -> str | None:
        """What the sizes above half of the population mean, or None if there are none."""
        flagged = [s.n for s in self.sizes if overlaps(s.n, self.available)]
        if not flagged:
            return None
        return (f"n above half of the {self.available} instances ({', '.join(map(str, flagged))}"
                "): the sub-populations share most of their instances, so their spread "
                "understates that of fresh instances; `probmut recommend` predicts fresh "
                "instances")

    def to_dict(self) -> dict:
        sizes = [s.to_dict() | {"overlap": overlaps(s.n, self.available)} for s in self.sizes]
        return {"name": self.name, "sizes": sizes, "overlap_note": self.overlap_note,
                "subpopulations": self.subpopulations, "repetitions": self.repetitions,
                "bootstraps": self.settings.bootstraps, "trials": self.settings.trials,
                "sample": self.settings.sample, "population": list(self.population),
                "paired": self.paired, "seed": self.seed, "jackknife": self.jackknife,
                "fit": self.settings.fit, "settings": self.settings.describe()}


    def to_frame(self):
        """One row per population size; columns ``{quantity}_{median,low,high}``."""
        import pandas as pd

        rows = []
        for size in self.sizes:
            row = {"n": size.n}
            for quantity in QUANTITIES:
                row |= {f"{quantity}_{k}": v for k, v in size.summary(quantity).items()}
            rows.append(row | {"killed_share": size.killed_share, "agreement": size.agreement,
                               "mean_band": size.mean_band,
                               "overlap": overlaps(size.n, self.available)})
        return pd.DataFrame(rows).set_index("n")

    def __str__(self) -> str:
        s = self.settings
        lines = [f"Population-size study: {self.name} ({self.subpopulations} sub-populations x "
                 f"R={self.repetitions} x B={s.bootstraps} x N={s.trials} per size; population "
                 f"{self.population[0]} healthy, {self.population[1]} mutant"
                 + (", paired" if self.paired else "") + ")",
                 "median [2.5%, 97.5%] over sub-populations",
                 f"{'n':>6}  {'posterior mean':<26}{'MCE lower':>10}{'MCE upper':>10}  "
                 f"{'variance':<29}{'killed':>7}{'agreement':>10}{'mean band':>10}"]
        for size in self.sizes:
            mean, var = size.summary("mean"), size.summary("var")
            mark = "*" if overlaps(size.n, self.available) else " "
            lines.append(
                f"{size.n:>5}{mark}  {mean['median']:.4f} [{mean['low']:.4f}, {mean['high']:.4f}]"
                f"{size.summary('mean_lower')['median']:>10.4f}"
                f"{size.summary('mean_upper')['median']:>10.4f}  "
                f"{var['median']:.5f} [{var['low']:.5f}, {var['high']:.5f}]"
                f"{size.killed_share:>7.0%}{size.agreement:>10.0%}{size.mean_band:>10.4f}")
        if self.overlap_note:
            lines.append("* " + self.overlap_note)
        lines.append(f"settings: {s.describe()}; jackknife: {self.jackknife}"
                     + (f", seed {self.seed}" if self.seed is not None else ""))
        return "\n".join(lines)


def _moments(healthy, mutant, settings, repetitions, paired, engine_root, threads, first_set,
             cache, chunk, bar, key):
    """The mean and the variance of the posterior of each of one size's sub-populations
    (rows: ``healthy[i]`` against ``mutant[i]``, the ``first_set + i``-th set of the
    engine's stream) in each repetition (columns), ``chunk`` sub-populations per engine
    call, each chunk read from ``cache`` (under ``key(start, stop)``) or computed and
    stored; ``bar`` counts the kill tests."""
    from probmut.engine import kill_counts

    count = len(healthy)
    tests = settings.bootstraps * settings.trials * repetitions
    means, variances = np.empty((count, repetitions)), np.empty((count, repetitions))
    for start in range(0, count, chunk):
        stop = min(start + chunk, count)
        shape = (stop - start, repetitions)
        stored = cache.get(key(start, stop), shapes={"means": shape, "variances": shape})
        if stored is None:
            counts = kill_counts(healthy[start:stop], mutant[start:stop],
                                 bootstraps=settings.bootstraps, trials=settings.trials,
                                 sample=settings.sample, repetitions=repetitions, paired=paired,
                                 criterion=settings.criterion, seed=engine_root, threads=threads,
                                 first_set=first_set + start, report=bar.update)
            stored = dict(zip(("means", "variances"), repetition_moments(counts, settings),
                              strict=True))
            cache.put(key(start, stop), **stored)
        else:
            bar.update((stop - start) * tests)
        means[start:stop] = stored["means"]
        variances[start:stop] = stored["variances"]
    return means, variances


def _draw(rng: np.random.Generator, count: int, n: int, n_h: int, n_m: int, paired: bool):
    healthy = np.empty((count, n), dtype=np.int64)
    mutant = np.empty((count, n), dtype=np.int64)
    for j in range(count):
        healthy[j] = rng.choice(n_h, n, replace=False)
        mutant[j] = healthy[j] if paired else rng.choice(n_m, n, replace=False)
    return healthy, mutant


def _study_sizes(sizes, settings, available: int, subpopulations: int,
                 repetitions: int) -> list[int]:
    """The study's sizes, sorted, once each; refused where one lies outside k to the
    ``available`` instances, or where the study's resamples exceed the engine's limit."""
    from probmut.engine import MAX_RESAMPLES

    sizes = sorted(set(sizes))
    if sizes[0] < settings.sample or sizes[-1] > available:
        raise ProbmutError(
            f"population sizes must lie between the sample size k = {settings.sample} and the "
            f"smallest population ({available} instances); got {sizes[0]}..{sizes[-1]}")
    resamples = len(sizes) * subpopulations * repetitions * settings.bootstraps
    if resamples > MAX_RESAMPLES:
        raise ProbmutError(
            f"{resamples:,} bootstrap resamples (sizes x sub-populations x repetitions x "
            f"bootstraps) exceed the limit of {MAX_RESAMPLES:,}; lower the sub-populations or "
            "the repetitions", option="subpopulations")
    return sizes


@renamed(jobs="threads")
@checked(healthy=population, mutant=population, settings=optional(instance(PosteriorSettings)),
         sizes=sequence(integer(2, MAX_COUNT), at_least=1, what="sizes"),
         subpopulations=integer(2, MAX_COUNT), repetitions=integer(2, MAX_COUNT), paired=flag,
         seed=seed, threads=threads, cache=optional(instance(Cache)), chunk=integer(1, MAX_COUNT),
         progress=flag, name=optional(text))
def sample_size_study(healthy, mutant, settings: PosteriorSettings | None = None, *,
                      sizes=paper.SIZES, subpopulations: int = 30, repetitions: int = 100,
                      paired: bool = False, seed=None,
                      threads: int | None = None, cache: Cache | None = None, chunk: int = 10,
                      progress: bool = False, name: str | None = None) -> SampleSizeStudy:
    """The population-size study of ``mutant`` against ``healthy`` (METHOD.md section 6).

    Parameters
    ----------
    healthy, mutant : Population or array_like
        The two populations (:class:`~probmut.population.Population`) or their
        accuracies.
    settings : PosteriorSettings, optional
        B, N, k, the criterion, the Beta fit and the jackknife (default
        :class:`PosteriorSettings`; the paper's: :func:`probmut.paper.study_settings`).
    sizes : sequence of int, optional
        The population sizes n (each at most the smaller population).
    subpopulations : int, optional
        The sub-populations per size (30).
    repetitions : int, optional
        R (100).
    paired : bool, optional
        Model-level mutation: sub-populations take the same ids on both sides.
    seed : int, SeedSequence, Generator or None, optional
        The sub-populations and the tests are derived from it.
    threads : int, optional
        Engine threads; the numbers do not depend on them.
    cache : Cache, optional
        A :class:`~probmut.io.cache.Cache` to reuse and resume chunks.
    chunk : int, optional
        The sub-populations per engine call (a unit of caching).
    progress : bool, optional
        Show progress on stderr (see :func:`probmut.progress.progress`).
    name : str, optional
        The display name (default: the mutant population's).

    Returns
    -------
    SampleSizeStudy

    Raises
    ------
    ProbmutError
        For no population size, sizes outside k to the smallest population, fewer than 2
        repetitions or sub-populations (one has no spread to draw a band from), a chunk
        under 1, more bootstrap resamples in all than the engine takes in one call
        (:data:`probmut.engine.MAX_RESAMPLES`), populations that cannot be read or
        paired, or an argument of the wrong type.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h, m = rng.normal(0.99, 0.002, 60), rng.normal(0.985, 0.002, 60)
    >>> study = sample_size_study(h, m, sizes=(20, 50), subpopulations=5, repetitions=5,
    ...                           seed=1)
    >>> [(s.n, overlaps(s.n, 60)) for s in study.sizes]
    [(20, False), (50, True)]
    """
    from probmut.population import aligned

    settings = settings or PosteriorSettings()
    jackknife = settings.jackknife
    healthy, mutant = aligned(healthy, mutant, paired)
    name = name or mutant.name
    h, m = healthy.values, mutant.values
    sizes = _study_sizes(sizes, settings, min(h.size, m.size), subpopulations, repetitions)
    root = seeds.seed_sequence(seed)
    engine_root = seeds.stream(root, "sample-size tests")
    cache = cache or Cache(None)
    base_key = ("sample-size", h, m, paired, settings, repetitions, subpopulations,
                root.entropy, jackknife)
    tests = settings.bootstraps * settings.trials * repetitions
    bar = progress_display(len(sizes) * subpopulations * tests, f"sample size {name}",
                           enabled=progress, unit="test", unit_scale=True)
    results = []
    with bar:
        for index, n in enumerate(sizes):
            rng = seeds.generator(root, "sample-size draws", index)
            ids_h, ids_m = _draw(rng, subpopulations, n, h.size, m.size, paired)
            means, variances = _moments(
                h[ids_h], m[ids_m], settings, repetitions, paired, engine_root, threads,
                index * subpopulations, cache, chunk, bar,
                key=functools.partial(cache_key, *base_key, n, index))
            average_mean, average_var = means.mean(axis=1), variances.mean(axis=1)
            killed = np.array([ratio_of(a, v, settings.trials) > settings.threshold
                               for a, v in zip(average_mean, average_var, strict=True)])
            results.append(SizeResult(n, average_mean, jackknife_se(means, jackknife),
                                      average_var, jackknife_se(variances, jackknife), killed))
    return SampleSizeStudy(name, tuple(results), settings, repetitions, subpopulations,
                           (h.size, m.size), paired, seed)
