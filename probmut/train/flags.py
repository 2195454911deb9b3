"""After training: is a population *equivalent* to the healthy one, or *broken*?

Flags are data, not drops: the run summary, the manifest (a ``flags`` table per
mutation: magnitude -> list) and ``probmut kill/posterior`` show them, and the user
decides (``--exclude-flagged``). Both come from what the run already has, the
per-input outcomes (:mod:`probmut.io.outcomes`) and the instance records:

* ``equivalent``: known before training (:mod:`probmut.train.legality`: the mutation
  changes no data, setting or layer, or is equivalent by design), or, for a model-level
  mutation, every instance predicts exactly what its healthy instance predicts on every
  test input (or kept its weights);
* ``broken``: at least half of the instances learnt nothing: they are right on exactly
  one class's inputs, as a constant prediction is (classifiers), or their accuracy is
  not above chance, the accuracy of the best constant prediction (:mod:`probmut.train.tasks`),
  by more than 3 binomial standard deviations.

Examples
--------
>>> import numpy as np
>>> labels = np.repeat([0, 1, 2], 20)
>>> correct = np.array([labels == 1,               # right on class 1 only: constant
...                     np.arange(60) % 10 != 0,   # right on 54 of 60
...                     np.arange(60) % 2 == 0])   # 30 of 60: not clearly above 1/3
>>> broken_instances(correct, labels, chance=1 / 3, task="classification").tolist()
[True, False, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EQUIVALENT, BROKEN = "equivalent", "broken"


def broken_instances(correct: np.ndarray, labels: np.ndarray, chance: float,
                     task: str) -> np.ndarray:
    """Which instances (rows of the instances x inputs ``correct`` matrix) learnt nothing."""
    correct = np.asarray(correct, dtype=bool)
    n = correct.shape[1]
    at_chance = correct.mean(axis=1) <= chance + 3 * math.sqrt(chance * (1 - chance) / n)
    if task != "classification":
        return at_chance
    one_class = np.array([
        row.any() and np.array_equal(row, labels == labels[np.argmax(row)]) for row in correct])
    return at_chance | one_class


@dataclass(frozen=True)
class Flags:
    """A population's flags and, for people, why."""

    flags: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "; ".join(f"{f}: {r}" for f, r in zip(self.flags, self.reasons, strict=True))


def population_flags(correct: np.ndarray, labels: np.ndarray, chance: float, task: str, *,
                     equivalent_before: str = "", equivalent_instances=()) -> Flags:
    """The flags of one population from its outcomes (instances x inputs), the test
    labels, chance accuracy, what was known before training, and the model-level
    per-instance equivalence records (None for source-level instances).

    >>> labels = np.repeat([0, 1], 5)
    >>> str(population_flags(np.ones((2, 10), bool), labels, 0.5, "classification",
    ...                      equivalent_instances=[True, True]))
    'equivalent: all 2 instances predict what their healthy instances predict'
    """
    flags, reasons = [], []
    records = [e for e in equivalent_instances if e is not None]
    if equivalent_before:
        flags.append(EQUIVALENT)
        reasons.append(equivalent_before)
    elif records and all(records):
        flags.append(EQUIVALENT)
        reasons.append(f"all {len(records)} instances predict what their healthy instances "
                       "predict")
    if len(correct):
        broken = broken_instances(correct, labels, chance, task)
        if 2 * broken.sum() >= len(broken):
            flags.append(BROKEN)
            reasons.append(f"{broken.sum()} of {len(broken)} instances predict one class or "
                           f"are at chance accuracy ({chance:.3f})")
    return Flags(tuple(flags), tuple(reasons))
