"""The work a run hands its workers and gets back: the bottom layer of training.

A run (:mod:`probmut.train.run`) turns its populations into :class:`Assignment` objects,
one instance of one population each; a worker trains an assignment alone
(:mod:`probmut.train.instance`) or several of one population as a stack
(:mod:`probmut.train.stack`) and returns one :class:`InstanceResult` per assignment.
Everything here is plain, picklable data, and imports nothing of the trainer above it.

Each instance gets its own seed, ``instance_seed(base_seed, instance_id, population)``,
so its result does not depend on which worker runs it, in what order, or how many
workers there are.

Examples
--------
>>> instance_seed(0, 3, "healthy") == instance_seed(0, 3, "healthy")
True
>>> instance_seed(0, 3, "healthy") != instance_seed(0, 4, "healthy")
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from probmut import seeds
from probmut.train.models import TrainConfig

HEALTHY = "healthy"


def instance_seed(base_seed: int, instance: int, population: str) -> int:
    """A 32-bit seed from the base seed, the instance id and the population's name (the
    ``"instance"`` role of :mod:`probmut.seeds`)."""
    return seeds.seed_of(base_seed, "instance", instance, population)


@dataclass(frozen=True)
class RunSettings:
    """What every population of a run shares: data, architecture, base training settings,
    seed, and ``stack``: instances of a population trained at once (1: one at a time with
    ``model.fit``; see :mod:`probmut.train.stack`)."""

    dataset: str
    architecture: str
    config: TrainConfig
    seed: int = 0
    stack: int = 1


@dataclass(frozen=True)
class Assignment:
    """One instance of one population, as a worker gets it. ``operator`` None is the
    healthy population; ``params`` are the mutation's parsed, layer-bound parameters
    (plain data). ``timeout`` (seconds) stops its training at the next batch end past
    it; ``save_model`` returns the trained (or mutated) model as ``.keras`` bytes."""

    settings: RunSettings
    population: str
    instance: int
    operator: str | None = None
    params: dict | None = None
    keep_weights: bool = False
    timeout: float | None = None
    save_model: bool = False

    @property
    def seed(self) -> int:
        """This instance's own seed (:func:`instance_seed`)."""
        return instance_seed(self.settings.seed, self.instance, self.population)


@dataclass(frozen=True, eq=False)
class InstanceResult:
    """One instance's outcome and symptoms (see :mod:`probmut.io.records`).

    ``correct`` (one bool per test input) is None when the instance was not scored
    (crashed, timed out); ``loss_history`` is empty for model-level mutants (not
    trained). A stack of members fills one result per member.
    """

    population: str
    instance: int
    seed: int
    accuracy: float
    correct: np.ndarray | None
    seconds: float
    weights: list | None = None  # trained healthy weights, when the assignment asked for them
    # model-level mutants: how closely it matches its healthy instance (flags.MATCHES)
    match: str | None = None
    status: str = "ok"
    error: str = ""
    loss_history: tuple[float, ...] = ()
    initial_loss: float = math.nan
    constant: bool | None = None
    model_bytes: bytes | None = None  # the .keras file, when the assignment asked for it
