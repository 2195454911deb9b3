"""How a population trains, whatever the framework: :class:`TrainConfig`, the settings a
training-level mutation changes, and :class:`Hyperparameters`, the mapping a user's
training code reads them from, which records what it read.

Every trainer gets its populations' settings as a :class:`TrainConfig`: the Keras trainer
builds and fits its model with them (:mod:`probmut.train.models`); a training function or
program (:mod:`probmut.train.user_code`) reads them by name from
:func:`hyperparameters_of`, the mutated value in place, and probmut records which names it
read, so that a mutation whose setting it never read is known as not applied.

Examples
--------
>>> base = TrainConfig(epochs=None, batch_size=None, optimizer=None, loss=None,
...                    learning_rate=0.01)
>>> hyperparameters_of(base)
{'learning_rate': 0.01, 'validation': True, 'full_batch': False}
>>> changed(base, base.replace(learning_rate=0.1))
('learning_rate',)
>>> read = Hyperparameters(hyperparameters_of(base))
>>> read.get("learning_rate"), read.get("epochs", 20), sorted(read.read)
(0.01, 20, ['epochs', 'learning_rate'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainConfig:
    """How to train: every setting a source-level mutation may change.

    ``optimizer`` is a Keras optimizer name or its serialized config (from a user's
    compiled model); ``learning_rate`` None keeps the optimizer's own; ``clip`` is
    ``("value" | "norm", threshold)`` gradient clipping. ``patience`` turns on early
    stopping on the validation loss; ``validation`` False gives training no validation
    data: the validation set is trained on with the rest and there is no early stopping
    (DeepCrime's ``remove_validation_set``: ``fit(validation_split=0)``);
    ``full_batch`` makes one batch of the whole training set. ``layer_changes`` holds
    ``(layer index, attribute, value)`` applied to the built model's layer configs, e.g.
    ``(1, "activation", "elu")``; ``structure`` holds ``("remove", layer index, None)``
    or ``("add", layer index, "batch_normalization" | activation name)``: a layer left
    out, or a layer inserted after it (Sequential models). For a user's training code
    (:mod:`probmut.train.user_code`) a setting it was not given is None.
    """

    epochs: int | None
    batch_size: int | None
    optimizer: str | dict | None = "adam"
    learning_rate: float | None = None
    loss: str | None = "categorical_crossentropy"
    layer_changes: tuple[tuple[int, str, Any], ...] = ()
    structure: tuple[tuple[str, int, str | None], ...] = ()
    clip: tuple[str, float] | None = None
    patience: int | None = None
    validation: bool = True
    full_batch: bool = False

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)


#: The settings a user's training code reads by name (:class:`TrainConfig`'s fields but
#: the model's layers, which only a trainer that builds the model can change).
KEYS = ("epochs", "batch_size", "optimizer", "learning_rate", "loss", "clip", "patience",
        "validation", "full_batch")


def user_config(**given) -> TrainConfig:
    """The settings of a run of a user's training code: those ``given`` (epochs, batch
    size, learning rate, patience), every other one unset (None), as its code chooses.

    >>> user_config(epochs=3).optimizer is None
    True
    """
    return TrainConfig(**{"epochs": None, "batch_size": None, "optimizer": None,
                          "loss": None, **given})


def hyperparameters_of(config: TrainConfig) -> dict[str, Any]:
    """The settings of ``config`` a user's training code reads (:data:`KEYS`), the unset
    ones (None) left out: the code keeps its own choice for them (``.get(name,
    default)``). Gradient clipping reads as ``[kind, threshold]``."""
    values = {key: getattr(config, key) for key in KEYS}
    if values["clip"] is not None:
        values["clip"] = list(values["clip"])
    return {key: value for key, value in values.items() if value is not None}


def changed(before: TrainConfig, after: TrainConfig) -> tuple[str, ...]:
    """The names (:data:`KEYS`) whose value ``after`` changes, a setting set or unset
    included."""
    old, new = hyperparameters_of(before), hyperparameters_of(after)
    return tuple(key for key in KEYS if old.get(key, _UNSET) != new.get(key, _UNSET))


_UNSET = object()


class Hyperparameters(Mapping):
    """A read-only mapping of training settings that records the names read (``read``):
    an item looked up (``h[name]``, ``h.get(name)``, ``name in h``, ``dict(h)``), present
    or not. Listing the names alone (``list(h)``) reads nothing."""

    def __init__(self, values: Mapping[str, Any]):
        self._values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Hyperparameters({self._values!r})"
