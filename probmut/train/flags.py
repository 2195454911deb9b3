"""After training: is a population *equivalent* to the healthy one, *broken*, or a
*survivor* of the test set; and DeepMutation's quality control.

Flags are data, not drops: the run summary, the manifest (a ``flags`` table per
mutation: magnitude -> list) and ``probmut kill/posterior`` show them, and the user
decides (``--exclude-flagged`` leaves flagged populations out). They come from what the
run already has, the per-input outcomes (:mod:`probmut.io.outcomes`) and the instance
records:

* ``equivalent``: provably the same mutant as the healthy model, never merely one that
  the inputs at hand cannot tell apart. Known before training
  (:mod:`probmut.train.legality`, :func:`data_equivalence`): the mutation changes no
  training sample, setting or layer, or only the order of the training samples, which
  training draws anew every epoch. Model-level, after deriving the mutants
  (:data:`MATCHES`): every instance kept its healthy instance's weights;
* ``broken``: at least half of the instances learnt nothing: they are right on exactly
  one class's inputs, as a constant prediction is (classifiers), or their accuracy is
  not above chance, the accuracy of the best constant prediction (:mod:`probmut.train.tasks`),
  by more than 3 binomial standard deviations;
* ``not applied`` (a user's training code, :mod:`probmut.train.user_code`): an instance
  never read a hyperparameter the mutation changes: the mutation did not reach the
  code, and its instances are healthy ones under another name, not mutants;
* ``unverified`` (a user's program that does not say what it read): whether the
  mutation reached the code is unknown.

A *survivor* is not a flag: a model-level mutant whose every instance predicts on the
test inputs exactly what its healthy instance predicts, though not every one kept its
weights. This test set cannot kill it (the accuracies are the healthy ones, instance by
instance), and saying so is what mutation testing is for: it is reported
(:attr:`Flags.survivor`, which also says how many predict otherwise on some training
input, inputs beyond the test set; DeepCrime too judges whether a mutant can be killed
on the training data) and never dropped. Changed weights that give the same predictions
on every input at hand are still another model: a survivor, not an equivalent mutant.

Quality control (DeepMutation, Ma et al. 2018; DeepMutation++'s ``threshold``):
:func:`error_rates` measures how much of what the original model gets right a mutant
gets wrong, and :func:`quality_control` removes a mutant population whose mean error
rate exceeds a maximum.

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

import hashlib
import math
from dataclasses import dataclass

import numpy as np

EQUIVALENT, BROKEN, NOT_APPLIED, UNVERIFIED = "equivalent", "broken", "not applied", "unverified"


class UnappliedMutationWarning(UserWarning):
    """A mutation did not reach a user's training code (or whether it did is unknown)."""
SURVIVOR = "survivor"

#: How closely a model-level mutant instance matches the healthy instance it derives
#: from, strongest first (one per instance record): its weights (the only match that
#: makes it equivalent); its predictions on every training and test input; its
#: predictions on every test input only; none of these.
SAME_WEIGHTS, SAME_PREDICTIONS, SAME_TEST_PREDICTIONS, DIFFERENT = (
    "weights", "training and test predictions", "test predictions", "different")
MATCHES = (SAME_WEIGHTS, SAME_PREDICTIONS, SAME_TEST_PREDICTIONS, DIFFERENT)


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
    """A population's flags and, for people, why; and why it is a survivor ("" if not)."""

    flags: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    survivor: str = ""

    def items(self) -> list[tuple[str, str]]:
        """``(word, reason)`` for each flag, then for the survivor."""
        pairs = list(zip(self.flags, self.reasons, strict=True))
        return pairs + ([(SURVIVOR, self.survivor)] if self.survivor else [])

    def __str__(self) -> str:
        return "; ".join(f"{word}: {reason}" for word, reason in self.items())


def population_flags(correct: np.ndarray, labels: np.ndarray, chance: float, task: str, *,
                     equivalent_before: str = "", matches=(), training_inputs: int = 0,
                     not_applied: str = "", unverified: str = "") -> Flags:
    """The flags of one population from its outcomes (instances x inputs; none: no
    broken flag), the test labels, chance accuracy, what was known before training,
    model-level, each instance's match with its healthy instance (:data:`MATCHES`; None
    for an instance that was not derived) on the run's ``training_inputs`` training
    inputs, and, for a user's training code, why its mutation is ``not_applied`` or
    ``unverified`` ("": it is not).

    >>> labels = np.repeat([0, 1], 5)
    >>> ok = np.ones((2, 10), bool)
    >>> print(population_flags(ok, labels, 0.5, "classification", training_inputs=40,
    ...                        matches=[SAME_WEIGHTS, SAME_WEIGHTS]))
    equivalent: all 2 instances keep their healthy instances' weights
    >>> found = population_flags(ok, labels, 0.5, "classification", training_inputs=40,
    ...                          matches=[SAME_TEST_PREDICTIONS, SAME_WEIGHTS])
    >>> print(found.survivor)  # doctest: +NORMALIZE_WHITESPACE
    all 2 instances predict on the 10 test inputs what their healthy instances predict, but 1
    predicts otherwise on some of the 40 training inputs: the test set cannot tell this mutant apart
    >>> found = population_flags(ok, labels, 0.5, "classification", training_inputs=40,
    ...                          matches=[SAME_PREDICTIONS, SAME_WEIGHTS])
    >>> print(found.survivor)  # doctest: +NORMALIZE_WHITESPACE
    all 2 instances predict on the 10 test inputs what their healthy instances predict, and on the
    40 training inputs too, though 1 has other weights: the test set cannot tell this mutant apart
    """
    flags, reasons, survivor = [], [], ""
    matched = [m for m in matches if m is not None]
    n, tests = len(matched), len(labels)
    same = sum(m in (SAME_WEIGHTS, SAME_PREDICTIONS) for m in matched)
    kept = matched.count(SAME_WEIGHTS)
    every, s, theirs, possessive = (
        ("the one instance", "s", "its healthy instance", "'s") if n == 1 else
        (f"all {n} instances", "", "their healthy instances", "'"))
    if equivalent_before:
        flags.append(EQUIVALENT)
        reasons.append(equivalent_before)
    elif n and kept == n:
        flags.append(EQUIVALENT)
        reasons.append(f"{every} keep{s} {theirs}{possessive} weights")
    elif n and DIFFERENT not in matched:
        apart, changed = n - same, n - kept
        survivor = (f"{every} predict{s} on the {tests} test inputs what {theirs} predict{s}, "
                    + (f"but {apart} predict{'s' * (apart == 1)} otherwise on some of the "
                       f"{training_inputs} training inputs" if apart else
                       f"and on the {training_inputs} training inputs too, though {changed} "
                       f"ha{'s' if changed == 1 else 've'} other weights")
                    + ": the test set cannot tell this mutant apart")
    for word, reason in ((NOT_APPLIED, not_applied), (UNVERIFIED, unverified)):
        if reason:
            flags.append(word)
            reasons.append(reason)
    if len(correct):
        broken = broken_instances(correct, labels, chance, task)
        if 2 * broken.sum() >= len(broken):
            flags.append(BROKEN)
            one = broken.sum() == 1
            reasons.append(f"{broken.sum()} of {len(broken)} instance{'s' * (len(broken) != 1)} "
                           f"{'predicts one class or is' if one else 'predict one class or are'} "
                           f"at chance accuracy ({chance:.3f})")
    return Flags(tuple(flags), tuple(reasons), survivor)


# ---------------------------------------------------------------- equivalent data

def row_digests(x: tuple, y: np.ndarray) -> np.ndarray:
    """One 16-byte digest per sample, of its inputs and its target together."""
    arrays = [np.ascontiguousarray(a).reshape(len(y), -1) for a in (*x, y)]
    return np.array([hashlib.blake2b(b"".join(a[i].tobytes() for a in arrays),
                                     digest_size=16).digest() for i in range(len(y))])


def _same_rows(x: tuple, y, x_before: tuple, y_before, chunk: int = 4096) -> bool:
    """Whether ``(x, y)`` holds exactly the samples of ``(x_before, y_before)`` in some
    order: digests find the candidate order, an exact comparison confirms it."""
    digests, digests_before = row_digests(x, y), row_digests(x_before, y_before)
    order, order_before = np.argsort(digests), np.argsort(digests_before)
    if not np.array_equal(digests[order], digests_before[order_before]):
        return False
    for start in range(0, len(y), chunk):
        rows, rows_before = order[start:start + chunk], order_before[start:start + chunk]
        if not all(np.array_equal(a[rows], b[rows_before])
                   for a, b in zip((*x, y), (*x_before, y_before), strict=True)):
            return False
    return True


def data_equivalence(x, y, x_before, y_before) -> str:
    """Why a data mutation that turned ``(x_before, y_before)`` into ``(x, y)`` is
    equivalent, or "". The same samples in the same order change nothing; in another
    order, nothing either: training draws a new uniform order of the samples every
    epoch (Keras' ``shuffle=True``, the stack's per-epoch permutations), and a uniform
    permutation of a permuted set is again uniform, so the trained models have the
    healthy population's distribution.

    >>> x, y = np.arange(12.0).reshape(6, 2), np.array([0, 1, 0, 1, 1, 0])
    >>> data_equivalence(x[::-1], y[::-1], x, y)
    'it only reorders the training samples, and training draws a new order every epoch'
    >>> data_equivalence(x[::-1], y, x, y)   # the labels do not follow their inputs
    ''
    """
    x, x_before = (x, x_before) if isinstance(x, tuple) else ((x,), (x_before,))
    if len(y) != len(y_before) or any(a.shape != b.shape for a, b in zip(x, x_before,
                                                                         strict=True)):
        return ""
    if np.array_equal(y, y_before) and all(np.array_equal(a, b)
                                           for a, b in zip(x, x_before, strict=True)):
        return "it leaves the training data unchanged"
    if np.array_equal(np.sort(y, axis=0), np.sort(y_before, axis=0)) and \
            _same_rows(x, y, x_before, y_before):
        return "it only reorders the training samples, and training draws a new order every epoch"
    return ""


# ---------------------------------------------------------------- quality control

def error_rates(healthy: np.ndarray, mutant: np.ndarray, paired: bool) -> np.ndarray:
    """Each mutant instance's error rate on the passed tests (DeepMutation): the share of
    the test inputs its original model classifies correctly that the mutant does not.

    ``healthy`` and ``mutant`` are instances x inputs ``correct`` matrices. Paired
    (model-level): mutant row i derives from healthy row i, its original. Otherwise no
    healthy instance is a mutant's original: the rate is the mean over the healthy
    instances as originals, the expected rate against an original drawn at random.
    Originals that pass no test are left out.

    >>> healthy = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], bool)
    >>> mutant = np.array([[1, 0, 0, 1, 1], [1, 1, 1, 1, 1]], bool)
    >>> error_rates(healthy, mutant, paired=True).tolist()    # 2 of 4, 0 of 2
    [0.5, 0.0]
    >>> error_rates(healthy, mutant, paired=False).tolist()   # (2/4 + 1/2) / 2, 0
    [0.5, 0.0]
    """
    healthy, mutant = np.asarray(healthy, bool), np.asarray(mutant, bool)
    passed = healthy.sum(axis=1)
    if paired:
        keep = passed > 0
        return (healthy[keep] & ~mutant[keep]).sum(axis=1) / passed[keep]
    originals = healthy[passed > 0].astype(np.float64)
    lost = originals @ (~mutant).astype(np.float64).T  # originals x mutants
    return (lost / originals.sum(axis=1, keepdims=True)).mean(axis=0)


def quality_control(rates: np.ndarray, maximum: float) -> str:
    """Why a mutant population with these instance error rates (:func:`error_rates`) is
    removed by DeepMutation's quality control with this maximum, or "" if it is kept
    (or has no rate: no usable instance).

    >>> quality_control(np.array([0.1, 0.5]), 0.2)
    'mean error rate 0.300 on the passed tests (2 instances), above the maximum 0.2'
    >>> quality_control(np.array([0.1, 0.2]), 0.2)
    ''
    """
    if not len(rates) or rates.mean() <= maximum:
        return ""
    return (f"mean error rate {rates.mean():.3f} on the passed tests ({len(rates)} instances), "
            f"above the maximum {maximum:g}")
