"""What a run's assembled populations say about their mutants: each population's flags
(:mod:`probmut.train.flags`: equivalent, broken, survivor) and DeepMutation's quality
control, read from the population files a run writes (their outcomes,
:mod:`probmut.io.outcomes`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from probmut.io.completeness import IncompleteRunWarning
from probmut.io.outcomes import load_outcome_records, load_outcomes
from probmut.io.records import RETRYABLE
from probmut.train.flags import Flags, error_rates, population_flags, quality_control
from probmut.train.operators import Mutation
from probmut.train.tasks import TASKS
from probmut.train.work import HEALTHY


def assembled_flags(out: Path, population: str, dataset, mutation: Mutation | None,
                    matches: list[str | None], not_applied: str = "",
                    unverified: str = "") -> Flags:
    """The flags of one assembled population (see :mod:`probmut.train.flags`);
    ``matches`` are its instances' matches with their healthy ones, as
    :func:`~probmut.train.run.assemble` returns them (not read again: a fifth of a second
    per 200 records); ``not_applied`` and ``unverified``: why the mutation did not reach
    a user's training code, or may not have ("": it did). A population without outcomes
    (a user's code that returned none) cannot be found broken."""
    # crashed and timed-out instances were never scored: not counted either way
    path = out / f"{population}.outcomes.npz"
    correct, labels = np.zeros((0, 0), bool), np.zeros(0, int)
    if path.exists():
        with warnings.catch_warnings():  # an interrupted run is short: the analyses say so
            warnings.simplefilter("ignore", IncompleteRunWarning)
            _, correct, labels = load_outcomes(path, keep_failed=True)
        correct = correct[np.array([r.status not in RETRYABLE
                                    for r in load_outcome_records(path)], dtype=bool)]
    chance = TASKS[dataset.task].chance(dataset.y_train, dataset.y_test)
    return population_flags(correct, labels, chance, dataset.task,
                            equivalent_before=mutation.equivalent if mutation else "",
                            matches=matches, training_inputs=len(dataset.y_train),
                            not_applied=not_applied, unverified=unverified)


def _usable_outcomes(out: Path, population: str) -> tuple[np.ndarray, np.ndarray]:
    """Ids and outcome rows of the instances the analyses use (not failed)."""
    path = out / f"{population}.outcomes.npz"
    ids, correct, _ = load_outcomes(path, keep_failed=True)
    usable = np.array([not r.failed for r in load_outcome_records(path)], dtype=bool)
    return ids[usable], correct[usable]


def removed_by_quality_control(out: Path, mutations: list[Mutation], maximum: float,
                               counts: dict[str, int]) -> dict[str, str]:
    """DeepMutation's quality control on the assembled populations: mutant population
    population -> why it is removed, for those whose mean error rate on the passed tests
    (:func:`probmut.train.flags.error_rates`; model-level against the healthy instance
    each derives from) exceeds ``maximum``. A population without outcomes (a user's
    training code that returned none) cannot be judged: a warning says so."""
    def without_outcomes(population: str) -> bool:
        if (out / f"{population}.outcomes.npz").exists():
            return False
        warnings.warn(f"{population}: no per-input outcomes (the training code returned no "
                      "'correct'): DeepMutation's quality control cannot judge "
                      + ("the mutants" if population == HEALTHY else "it"), stacklevel=3)
        return True

    if not counts.get(HEALTHY) or without_outcomes(HEALTHY):
        return {}
    healthy_ids, healthy = _usable_outcomes(out, HEALTHY)
    if not len(healthy):  # no original: nothing to measure against
        return {}
    removed = {}
    for mutation in mutations:
        if not counts.get(mutation.population) or without_outcomes(mutation.population):
            continue
        ids, correct = _usable_outcomes(out, mutation.population)
        if mutation.operator.paired:  # each against the healthy instance it derives from
            originals = dict(zip(healthy_ids.tolist(), healthy, strict=True))
            pairs = [(originals[i], row) for i, row in zip(ids.tolist(), correct, strict=True)
                     if i in originals]
            rates = error_rates(np.array([h for h, _ in pairs]), np.array([m for _, m in pairs]),
                                True) if pairs else np.empty(0)
        else:
            rates = error_rates(healthy, correct, False)
        if reason := quality_control(rates, maximum):
            removed[mutation.population] = reason
    return removed
