"""The motivating experiment (METHOD.md section 2): how often one k-vs-k test kills.

Split the healthy instance ids at random into a *sound* pool and a disjoint *unknown*
pool. Run ``tests`` DeepCrime tests, each on ``sample`` random sound-pool healthy
accuracies against ``sample`` random unknown-pool accuracies of the population under
study (for paired data, the healthy sample is the same unknown ids' healthy values).
The pass rate is kills / tests; repeat with fresh pools and report mean (sd). Healthy
against healthy gives the false-positive rate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.populations import Population
from probmut.killtest import TEST_NAMES, KillCriterion, deepcrime_test_batch


@dataclass(frozen=True)
class RepeatResult:
    """Pass rates of repeated DeepCrime tests for one population."""

    name: str
    pass_rates: np.ndarray
    tests: int
    sample: int

    @property
    def mean(self) -> float:
        return float(self.pass_rates.mean())

    @property
    def sd(self) -> float:
        return float(self.pass_rates.std(ddof=1)) if self.pass_rates.size > 1 else 0.0

    def to_dict(self) -> dict:
        return {"name": self.name, "pass_rate_mean": self.mean, "pass_rate_sd": self.sd,
                "repetitions": int(self.pass_rates.size), "tests": self.tests,
                "sample": self.sample, "pass_rates": self.pass_rates.tolist()}


@dataclass(frozen=True)
class RepeatStudy:
    results: tuple[RepeatResult, ...]
    criterion: KillCriterion
    paired: bool
    seed: int | None

    def to_dict(self) -> dict:
        return {"populations": [r.to_dict() for r in self.results], "paired": self.paired,
                "seed": self.seed, "criterion": self.criterion.describe()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        first = self.results[0]
        lines = [f"{TEST_NAMES[self.criterion.kind]} repeated: {first.pass_rates.size} x {first.tests} tests of "
                 f"{first.sample} vs {first.sample} instances (kill iff "
                 f"{self.criterion.describe()})",
                 f"{'population':<24}{'pass rate':>10}  {'(sd)':<8}"]
        lines += [f"{r.name:<24}{r.mean:>10.3f}  ({r.sd:.3f})" for r in self.results]
        return "\n".join(lines)


def repeated_tests(healthy: Population, studied: Population, *, repetitions: int = 50,
                   tests: int = 100, sample: int = 20, pool: int | None = None,
                   paired: bool = False, criterion: KillCriterion | None = None,
                   seed=None, name: str | None = None) -> RepeatResult:
    """Pass rate of ``tests`` DeepCrime tests with fresh sound/unknown pools, repeated.

    ``pool`` is the size of the sound pool (default: half the healthy instances).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h = Population.from_values(rng.normal(0.99, 0.002, 200).clip(0, 1))
    >>> res = repeated_tests(h, h, repetitions=5, seed=1)
    >>> 0 <= res.mean < 0.2
    True
    """
    criterion = criterion or KillCriterion()
    ids = np.sort(healthy.ids)
    pool = pool or ids.size // 2
    if not 0 < pool < ids.size:
        raise ProbmutError(f"the sound pool must hold between 1 and {ids.size - 1} instances")
    healthy_by_id = dict(zip(healthy.ids.tolist(), healthy.values.tolist(), strict=True))
    studied_by_id = dict(zip(studied.ids.tolist(), studied.values.tolist(), strict=True))
    streams = np.random.SeedSequence(seed).spawn(repetitions)
    rates = np.empty(repetitions)
    for r, stream in enumerate(streams):
        rng = np.random.default_rng(stream)
        order = rng.permutation(ids)
        sound = np.array([healthy_by_id[i] for i in order[:pool]])
        unknown_ids = [i for i in order[pool:] if i in studied_by_id]
        if paired:
            unknown_ids = [i for i in unknown_ids if i in healthy_by_id]
        if min(sound.size, len(unknown_ids)) < sample:
            raise ProbmutError(
                f"{studied.where}: a pool of {min(sound.size, len(unknown_ids))} instances is too "
                f"small to draw {sample}; use --sample <= {min(sound.size, len(unknown_ids))}")
        unknown = np.array([studied_by_id[i] for i in unknown_ids])
        pick_u = np.argsort(rng.random((tests, unknown.size)), axis=1)[:, :sample]
        if paired:
            unknown_healthy = np.array([healthy_by_id[i] for i in unknown_ids])
            x = unknown_healthy[pick_u]
        else:
            pick_s = np.argsort(rng.random((tests, sound.size)), axis=1)[:, :sample]
            x = sound[pick_s]
        _, _, killed = deepcrime_test_batch(x, unknown[pick_u], criterion)
        rates[r] = killed.mean()
    return RepeatResult(name or studied.name, rates, tests, sample)
