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
from probmut.train.hyperparameters import TrainConfig

HEALTHY = "healthy"


def instance_seed(base_seed: int, instance: int, population: str) -> int:
    """A 32-bit seed from the base seed, the instance id and the population's name (the
    ``"instance"`` role of :mod:`probmut.seeds`)."""
    return seeds.seed_of(base_seed, "instance", instance, population)


@dataclass(frozen=True)
class RunSettings:
    """What every population of a run shares: data, architecture (the network a framework
    trainer builds; None for a user's training code, which builds its own), base training
    settings, seed, ``stack``: instances of a population trained at once (1: one at a
    time; see :mod:`probmut.train.stack`), and the trainer: its kind (a key of
    :data:`probmut.train.trainers.TRAINERS`) and ``code``, the user's training code it
    runs (``MODULE:FUNCTION``, a command line; None for a framework trainer). A resume
    must match them all."""

    dataset: str
    architecture: str | None
    config: TrainConfig
    seed: int = seeds.DEFAULT_SEED
    stack: int = 1
    trainer: str = "keras"
    code: str | None = None


@dataclass(frozen=True)
class Assignment:
    """One instance of one population, as a worker gets it. ``operator`` None is the
    healthy population; ``params`` are the mutation's parsed, layer-bound parameters
    (plain data). ``timeout`` (seconds) stops its training (a framework trainer at the
    next batch end past it); ``save_model`` returns the trained (or mutated) model's
    file as bytes."""

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
    model_bytes: bytes | None = None  # the saved model, when the assignment asked for it
    model_suffix: str | None = None  # its file's suffix, when not the trainer's own
    # the hyperparameters a user's training code read (None: unknown, or probmut's own code)
    read: tuple[str, ...] | None = None
