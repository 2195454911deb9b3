"""Training populations as a library (``probmut train``): with TensorFlow and Keras, or
with a user's own training code in any framework.

:func:`train_populations` is the one entry: it does everything ``probmut train`` does
and returns a :class:`RunReport` (:class:`SettleReport` for a run until settled,
:class:`ScoreReport` for one until the score is settled);
:func:`preview_mutations` is ``--dry-run``. The rooms below it, bottom up:
:mod:`~probmut.train.tasks` (how an instance is scored), :mod:`~probmut.train.datasets`
(a registry of data sources), :mod:`~probmut.train.hyperparameters` (how a population
trains, whatever the framework), :mod:`~probmut.train.training_set` (what an instance
trains on), :mod:`~probmut.train.models`,
:mod:`~probmut.train.fitting` (one model trained and scored),
:mod:`~probmut.train.layer_traits` (what is known of Keras layers),
:mod:`~probmut.train.graph` (a model's layers and what feeds what, read from its graph),
:mod:`~probmut.train.operators` (the mutation operators' registry),
:mod:`~probmut.train.work` (the work a run hands its workers),
:mod:`~probmut.train.trainers` (the trainer seam every run, mode and backend uses),
:mod:`~probmut.train.keras_trainer` (probmut's own), :mod:`~probmut.train.user_code`,
:mod:`~probmut.train.function_trainer` and :mod:`~probmut.train.command_trainer` (a
user's training function or program),
:mod:`~probmut.train.legality` (checks before training), :mod:`~probmut.train.dryrun`,
:mod:`~probmut.train.flags` (equivalent, broken, not applied and surviving populations;
DeepMutation's quality control), :mod:`~probmut.train.instance` (one instance),
:mod:`~probmut.train.stack` (instances trained as one stack),
:mod:`~probmut.train.preflight` (the checks that need Keras, done where Keras is),
:mod:`~probmut.train.tf_setup` (TensorFlow set up for training),
:mod:`~probmut.train.backends` (serial, local processes, Ray),
:mod:`~probmut.train.finished` (what a run keeps of an instance),
:mod:`~probmut.train.quality` (flags and quality control of assembled populations),
:mod:`~probmut.train.interrupts` (Ctrl-C), :mod:`~probmut.train.run` (resumable
population runs), :mod:`~probmut.train.options` (what a run is asked for, its modes),
:mod:`~probmut.train.rounds` (until settled), :mod:`~probmut.train.until_score` (until
the score is settled), :mod:`~probmut.train.search` (the killable magnitude) and
:mod:`~probmut.train.trainer` (the entry). Importing this package does not import
TensorFlow, nor the trainer: its names load on first use, so that a command that only
reads a model or a data set starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_HOMES = {"RunReport": "probmut.train.run", "SettleReport": "probmut.train.rounds",
          "ScoreReport": "probmut.train.until_score",
          "preview_mutations": "probmut.train.trainer",
          "train_populations": "probmut.train.trainer"}
__all__ = ["RunReport", "ScoreReport", "SettleReport", "preview_mutations",
           "train_populations"]

if TYPE_CHECKING:
    from probmut.train.rounds import SettleReport
    from probmut.train.run import RunReport
    from probmut.train.trainer import preview_mutations, train_populations
    from probmut.train.until_score import ScoreReport


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'probmut.train' has no attribute {name!r}")
