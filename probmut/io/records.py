"""The symptom record of one instance: how its training ended, and what it cost.

Every instance of a population has one record, written by the trainer (``probmut
train``) and by ``probmut evaluate`` into the tidy population CSV (one row per
instance) and the outcomes file. ``status`` is one of :data:`STATUSES`:

- ``ok``: trained and scored;
- ``crashed``: an exception ended it (``error`` holds its one-line text);
- ``timed out``: it ran past ``--timeout`` and was stopped;
- ``diverged``: its training loss became NaN or infinite, or grew to more than twice
  the loss of the untrained model (``loss > initial_loss + |initial_loss|``); it is
  still scored, so its accuracy is known (typically chance: a one-class predictor).

Crashed, timed-out and diverged instances are *failed* (:data:`FAILED`): the kill
analyses drop them with a :class:`FailedInstanceWarning` naming them, never counting
them silently; ``probmut symptoms`` classifies populations by them.

Examples
--------
>>> record = InstanceRecord(3, 0.95, seed=7, seconds=2.5, loss_history=(0.9, 0.4))
>>> record.final_loss, record.failed
(0.4, False)
>>> InstanceRecord(4, math.nan, status="crashed", error="ValueError: bad shape").failed
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from probmut.errors import ProbmutError

STATUSES = ("ok", "crashed", "timed out", "diverged")
FAILED = frozenset({"crashed", "timed out", "diverged"})
#: Failed instances that a new run trains again when asked to (``--retry-failed``);
#: a diverged instance is a deterministic result of its mutation, not an accident.
RETRYABLE = frozenset({"crashed", "timed out"})


class FailedInstanceWarning(UserWarning):
    """Crashed, timed-out or diverged instances were dropped from a population."""


class AllFailedError(ProbmutError):
    """Every instance of a population failed: there is nothing to analyse."""


@dataclass(frozen=True)
class InstanceRecord:
    """One instance's row: accuracy, seed and symptoms (see the module notes).

    ``accuracy`` is NaN when there is none (crashed, timed out); ``seconds`` is the
    wall time of training (NaN when unknown, e.g. for models scored by ``probmut
    evaluate``); ``constant`` says whether it predicted the same class for every test
    input (None when unknown); ``initial_loss`` is the training loss of the untrained
    model (the first batch's), the reference of the divergence rule.
    """

    instance: int
    accuracy: float
    seed: int | None = None
    status: str = "ok"
    seconds: float = math.nan
    loss_history: tuple[float, ...] = ()
    initial_loss: float = math.nan
    constant: bool | None = None
    error: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; one of {', '.join(STATUSES)}")

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    @property
    def final_loss(self) -> float:
        return self.loss_history[-1] if self.loss_history else math.nan


def loss_diverged(initial_loss: float, losses) -> bool:
    """The divergence rule: a NaN/infinite loss, or a final loss above
    ``initial_loss + |initial_loss|`` (more than twice a positive initial loss).

    >>> loss_diverged(2.3, [1.2, 0.5]), loss_diverged(2.3, [5e15, 486.0])
    (False, True)
    >>> loss_diverged(2.3, [1.0, float("nan")])
    True
    """
    losses = [float(v) for v in losses]
    if not all(math.isfinite(v) for v in losses):
        return True
    if not losses or not math.isfinite(initial_loss):
        return False
    return losses[-1] > initial_loss + abs(initial_loss)


def one_line(error: BaseException) -> str:
    """``Type: first line of the message``, at most 300 characters.

    >>> one_line(ValueError("bad shape\\nmore detail"))
    'ValueError: bad shape'
    """
    text = str(error).strip().splitlines()
    message = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return message[:300]
