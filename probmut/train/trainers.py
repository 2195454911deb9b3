"""The trainer seam: what trains a run's instances, behind one protocol.

A run (its modes, :mod:`probmut.train.run`'s loop, records, manifests, quality control and
the backends of :mod:`probmut.train.backends`) asks a trainer for five things only
(:class:`Trainer`): to set up a worker process (``setup(threads)``), to check the
mutations before anything trains (:meth:`Trainer.check`, which also decides how many
instances train at once), to train one unit of assignments into instance results
(:meth:`Trainer.train_unit`, the call every backend runs), why a population cannot be
stacked (:meth:`Trainer.stack_problem`), and the suffix of its saved models. Its identity,
the run's ``trainer`` and ``code`` (:class:`~probmut.train.work.RunSettings`), is recorded
with the run's settings, so that a resume with another trainer is refused.

The trainers (:data:`TRAINERS`, each in its own module, imported when a run uses it):

* ``keras`` (:mod:`probmut.train.keras_trainer`): probmut's own, for the bundled
  architectures and a user's ``module:function`` Keras model; every operator applies;
* ``torch`` (:mod:`probmut.train.torch.trainer`): probmut's own for PyTorch, the bundled
  architectures built in torch and a user's ``module:function`` ``nn.Module``; every
  operator applies (``--framework torch``);
* ``function`` (:mod:`probmut.train.function_trainer`): a user's training function,
  ``FUNCTION(spec)`` per instance in probmut's workers (:mod:`probmut.train.user_code`);
* ``command`` (:mod:`probmut.train.command_trainer`): a user's program, one process per
  instance, the spec in a JSON file.

Adding a trainer: a class with the protocol's members in a module of its own and one
entry here.

Examples
--------
>>> from probmut.train.work import RunSettings
>>> from probmut.train.hyperparameters import TrainConfig
>>> trainer_of(RunSettings("digits", "digits_cnn", TrainConfig(epochs=1, batch_size=32)))
KerasTrainer(architecture='digits_cnn')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from probmut.train.hyperparameters import TrainConfig

#: The trainers by kind: the class implementing :class:`Trainer`, as ``module:class``.
TRAINERS = {"keras": "probmut.train.keras_trainer:KerasTrainer",
            "torch": "probmut.train.torch.trainer:TorchTrainer",
            "function": "probmut.train.function_trainer:FunctionTrainer",
            "command": "probmut.train.command_trainer:CommandTrainer"}


@dataclass(frozen=True)
class CheckRequest:
    """What a run asks a trainer to check before anything trains: the ``mutations`` as
    parsed (:func:`~probmut.train.operators.parse_mutations`), the training settings the
    run overrides (``overrides``: epochs, batch size, learning rate, patience) and the
    ``stack`` size asked for (None: the trainer chooses)."""

    mutations: list
    overrides: dict = field(default_factory=dict)
    stack: int | None = 1


@dataclass(frozen=True)
class Checked:
    """A trainer's answer to a :class:`CheckRequest`: the run's training settings
    (``config``), the mutations bound and checked (``equivalent`` set where known), the
    ``stack`` size it chose (None when one was asked for) and why it chose one at a time
    (``why``, "" when it did not), and ``unstackable``: the populations (by name) that
    train one instance at a time although the stack size is above 1, with why."""

    config: TrainConfig
    mutations: tuple
    stack: int | None = None
    why: str = ""
    unstackable: dict[str, str] = field(default_factory=dict)


class Trainer(Protocol):
    """What trains a run's instances (see the module notes).

    ``kind`` is its key in :data:`TRAINERS`; ``suffix`` its saved models' file suffix
    (None: each result names its own, :attr:`~probmut.train.work.InstanceResult.model_suffix`);
    ``requires``: the modules it needs, with the extra that installs them;
    ``user_code``: True when the training code is the user's, so that which
    hyperparameters it read is checked (:mod:`probmut.train.user_code`). It is plain,
    picklable data: its methods run in the backends' workers.
    """

    kind: str
    suffix: str | None
    requires: tuple[tuple[str, str], ...]
    user_code: bool

    def describe(self) -> str:
        """What trains, in a few words, for the manifest's description."""

    def setup(self, threads: int) -> None:
        """Set up a worker process before its first call (``threads`` per instance)."""

    def check(self, request: CheckRequest, *, dataset, call: Callable) -> Checked:
        """Bind and check ``request``'s mutations on ``dataset``; ``call(fn, *args)`` runs
        ``fn(*args, dataset=...)`` as a backend call, where the workers' set-up is done.

        Raises
        ------
        ProbmutError
            One line naming the first mutation or setting that cannot train.
        """

    def train_unit(self, assignments: list, stack: bool, healthy_weights=None, *,
                   dataset) -> list:
        """One unit of work: ``assignments`` trained as a stack (``stack``) or one
        assignment alone (a model-level mutant from ``healthy_weights``, its healthy
        instance's kept weights, or None); one
        :class:`~probmut.train.work.InstanceResult` per assignment. An instance's own
        failure is its result (crashed, timed out), never an exception."""

    def stack_problem(self, settings, config: TrainConfig, dataset) -> str | None:
        """Why a population trained with ``config`` cannot be stacked, or None."""


def trainer_of(settings) -> Trainer:
    """The trainer of a run's :class:`~probmut.train.work.RunSettings` (its kind's class,
    imported now, built from the settings)."""
    module, _, name = TRAINERS[settings.trainer].partition(":")
    return getattr(importlib.import_module(module), name).of(settings)
