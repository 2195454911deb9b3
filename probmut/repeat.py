"""The motivating experiment (METHOD.md section 2): how often one k-vs-k test kills.

Split the healthy instance ids at random into a *sound* pool and a disjoint *unknown*
pool. Run ``trials`` kill tests (DeepCrime's unless the criterion says otherwise), each
on ``sample`` random sound-pool healthy accuracies against ``sample`` random unknown-pool
accuracies of the population under study (for paired data, the healthy sample is the
same unknown ids' healthy values).
The pass rate is kills / trials; repeat with fresh pools and report mean (sd). Healthy
against healthy gives the false-positive rate.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from probmut import seeds
from probmut.bagging import SmallPopulationWarning
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion, kill_test_batch
from probmut.population import Population, population
from probmut.results import Result, listing
from probmut.validation import (
    MAX_COUNT,
    checked,
    flag,
    function,
    instance,
    integer,
    optional,
    seed,
    text,
)

#: Kill tests decided per batch: bounds the memory of one repetition, whatever ``trials``.
_BATCH = 20_000


@dataclass(frozen=True)
class RepeatResult(Result):
    """Pass rates of repeated kill tests for one population."""

    name: str
    pass_rates: np.ndarray
    trials: int
    sample: int

    @property
    def mean(self) -> float:
        return float(self.pass_rates.mean())

    @property
    def sd(self) -> float:
        """The pass rate's standard deviation over repetitions; NaN for one repetition
        (one value has no spread)."""
        return float(self.pass_rates.std(ddof=1)) if self.pass_rates.size > 1 else math.nan

    def to_dict(self) -> dict:
        sd = None if math.isnan(self.sd) else self.sd
        return {"name": self.name, "pass_rate_mean": self.mean, "pass_rate_sd": sd,
                "repetitions": int(self.pass_rates.size), "trials": self.trials,
                "sample": self.sample, "pass_rates": self.pass_rates.tolist()}


@dataclass(frozen=True)
class RepeatStudy(Result):
    """The motivating experiment for a healthy population and its mutants (one row each)."""

    results: tuple[RepeatResult, ...]
    criterion: KillCriterion
    paired: bool
    seed: int | None

    def to_dict(self) -> dict:
        return listing([r.to_dict() for r in self.results], paired=self.paired,
                       seed=self.seed, criterion=self.criterion.describe())

    def rows(self) -> list[dict]:
        return [{k: v for k, v in r.to_dict().items() if k != "pass_rates"}
                for r in self.results]

    def __str__(self) -> str:
        first = self.results[0]
        lines = [f"{self.criterion.spec.test} repeated: {first.pass_rates.size} x {first.trials} "
                 f"tests of {first.sample} vs {first.sample} instances (kill iff "
                 f"{self.criterion.describe()})",
                 f"{'population':<24}{'pass rate':>10}  {'(sd)':<8}"]
        lines += [f"{r.name:<24}{r.mean:>10.3f}  "
                  + ("(n/a)" if math.isnan(r.sd) else f"({r.sd:.3f})") for r in self.results]
        if first.pass_rates.size == 1:
            lines.append("sd: n/a, one repetition has no spread (the sd needs at least 2)")
        return "\n".join(lines)


def _warn_if_pools_near_sample(healthy: Population, sound: int, unknown: int,
                               sample: int) -> None:
    """Warn, as the bagged posterior does (:class:`SmallPopulationWarning`), when a pool
    holds fewer than 2k instances: the tests of a repetition share most of them, and
    with pools of k they are one test repeated."""
    if 2 * sample <= min(sound, unknown):
        return
    same = ("every test of a repetition draws the same instances, so it is one test repeated "
            "and its pass rate is 0 or 1" if sound == unknown == sample else
            "the tests of a repetition share most instances, so pass rates pile up at 0 and 1")
    warnings.warn(f"{healthy.where}: pools of {sound} sound and {unknown} unknown instances for "
                  f"samples of k = {sample}: {same}; train more instances or lower the sample "
                  "size k", SmallPopulationWarning, stacklevel=4)


@checked(healthy=population, studied=population, repetitions=integer(1, MAX_COUNT),
         trials=integer(1, MAX_COUNT), sample=integer(2, MAX_COUNT),
         pool=optional(integer(1, MAX_COUNT)), paired=flag,
         criterion=optional(instance(KillCriterion)), seed=seed, name=optional(text),
         report=optional(function))
def repeated_tests(healthy: Population, studied: Population, *, repetitions: int = 50,
                   trials: int = 100, sample: int = 20, pool: int | None = None,
                   paired: bool = False, criterion: KillCriterion | None = None,
                   seed=None, name: str | None = None, report=None) -> RepeatResult:
    """Pass rate of ``trials`` kill tests with fresh sound/unknown pools, repeated.

    ``pool`` is the size of the sound pool (default: half the healthy instances). Paired
    populations must hold the same instance ids (see :func:`probmut.population.pair`);
    a paired criterion (``paired-t``, ``wilcoxon``) needs ``paired=True``. ``report`` is
    called with the number of kill tests run, as they run (a progress bar's ``update``).

    Returns
    -------
    RepeatResult

    Raises
    ------
    ProbmutError
        For arguments of the wrong type or counts under their minimum (one repetition is
        allowed: its ``sd`` is NaN), paired populations with other instance ids, fewer
        than 2k healthy instances, a sound pool outside k to (instances - k), or a studied
        population with fewer than k instances in the unknown pool.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h = Population.from_values(rng.normal(0.99, 0.002, 200).clip(0, 1))
    >>> res = repeated_tests(h, h, repetitions=5, seed=1)
    >>> 0 <= res.mean < 0.2
    True
    """
    criterion = criterion or KillCriterion()
    criterion.require_pairing(paired)
    ids = np.sort(healthy.ids)
    if paired and not np.array_equal(ids, np.sort(studied.ids)):
        raise ProbmutError(f"{studied.where}: paired populations must hold the same instance "
                           f"ids as {healthy.where}")
    if ids.size < 2 * sample:
        raise ProbmutError(
            f"{healthy.where}: {ids.size} instance(s); the sound and unknown pools need "
            f"{sample} each for k = {sample} (at least {2 * sample} instances)", option="sample")
    pool = pool or ids.size // 2
    if not sample <= pool <= ids.size - sample:
        raise ProbmutError(f"the sound pool must hold between k = {sample} and "
                           f"{ids.size - sample} of the {ids.size} healthy instances, got {pool}",
                           option="pool")
    _warn_if_pools_near_sample(healthy, pool, ids.size - pool, sample)
    healthy_by_id = dict(zip(healthy.ids.tolist(), healthy.values.tolist(), strict=True))
    studied_by_id = dict(zip(studied.ids.tolist(), studied.values.tolist(), strict=True))
    root = seeds.seed_sequence(seed)
    rates = np.empty(repetitions)
    for r in range(repetitions):
        rng = seeds.generator(root, "repeat", r)
        order = rng.permutation(ids)
        sound = np.array([healthy_by_id[i] for i in order[:pool]])
        unknown_ids = [i for i in order[pool:] if i in studied_by_id]
        if len(unknown_ids) < sample:
            raise ProbmutError(
                f"{studied.where}: only {len(unknown_ids)} of its instances fall in the unknown "
                f"pool of {ids.size - pool} healthy ids, fewer than k = {sample}; its ids "
                "should be those of the healthy population", option="sample")
        unknown = np.array([studied_by_id[i] for i in unknown_ids])
        unknown_healthy = np.array([healthy_by_id[i] for i in unknown_ids]) if paired else None
        kills = 0
        for start in range(0, trials, _BATCH):
            count = min(_BATCH, trials - start)
            pick_u = np.argsort(rng.random((count, unknown.size)), axis=1)[:, :sample]
            if paired:
                x = unknown_healthy[pick_u]
            else:
                x = sound[np.argsort(rng.random((count, sound.size)), axis=1)[:, :sample]]
            kills += int(kill_test_batch(x, unknown[pick_u], criterion)[2].sum())
            if report is not None:
                report(count)
        rates[r] = kills / trials
    return RepeatResult(name or studied.name, rates, trials, sample)
