"""A training run's working files (``OUT/.work``): the run's settings, one record per
finished instance and the healthy weights kept for model-level mutants, the last two
each a validated ``.npz`` (:mod:`probmut.io.checked`)::

    OUT/.work/settings.json                the shared settings and the data's provenance
    OUT/.work/{population}/{id}.npz        one record per finished instance, id in 5 digits
    OUT/.work/weights/healthy/{id}.npz     trained healthy weights (model-level runs)

A record holds the instance's symptom record (:class:`~probmut.io.records.InstanceRecord`),
its outcome on each test input (bits; none when it was not scored, or when a user's
training code gave none), for a derived model-level mutant how closely it matches its
healthy instance (:data:`probmut.train.flags.MATCHES`), and, for a user's training code,
the hyperparameters it read (:mod:`probmut.train.user_code`). The trainer
(:mod:`probmut.train.run`) writes them as instances finish and assembles the population
files from them; a damaged record or weights file reads as missing, with a
:class:`DamagedRecordWarning`, so that the instance is trained again.

Examples
--------
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> write_record(out, "healthy", InstanceRecord(3, 0.5, seed=7), np.array([True, False]))
>>> stored = read_record(out, "healthy", 3)
>>> stored.record.accuracy, stored.correct.tolist(), finished_ids(out, "healthy")
(0.5, [True, False], [3])
>>> read_record(out, "healthy", 4) is None
True
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write_text
from probmut.io.checked import DamagedFile, read_checked, write_checked
from probmut.io.records import FAILED, STATUSES, InstanceRecord

#: Settings every run of probmut 0.2 records: 0.1 called the architecture "model" and
#: ran without ``--stack`` or a record of the data.
_SETTINGS_SINCE_0_2 = frozenset({"architecture", "stack", "data"})

#: Fields every record holds since symptoms were recorded (probmut 0.2).
_RECORD_FIELDS = ("status", "error", "loss_history", "initial_loss", "constant")

#: The population whose trained weights are kept for the model-level mutants.
_WEIGHTS_OF = "healthy"


class DamagedRecordWarning(UserWarning):
    """A finished instance's record failed its checks; the instance is trained again."""


class StoredInstance(NamedTuple):
    """A finished instance as its record holds it: the symptom record, the outcome on
    each test input (empty when it was not scored), its ``match`` with its healthy
    instance (None when it was not derived) and the hyperparameters its training code
    ``read`` (None: unknown, or probmut's own code)."""

    record: InstanceRecord
    correct: np.ndarray
    match: str | None = None
    read: tuple[str, ...] | None = None


def settings_path(out) -> Path:
    """Where a run keeps the settings it was started with."""
    return Path(out) / ".work" / "settings.json"


def write_settings(out, settings: dict) -> None:
    """Keep the settings (a JSON object) a run was started with (atomically)."""
    atomic_write_text(settings_path(out), json.dumps(settings, indent=1))


def read_settings(out) -> dict | None:
    """The settings the run in ``out`` was started with; None when there is none.

    Raises
    ------
    ProbmutError
        The settings file cannot be read, is not a JSON object, or was written by
        probmut 0.1 (which 0.2 does not resume: see CHANGELOG.md).
    """
    path = settings_path(out)
    if not path.exists():
        return None
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        why = "nested too deeply" if isinstance(error, RecursionError) else error
        raise ProbmutError(f"{path}: the run's settings cannot be read ({why}); train "
                           "into another output directory") from None
    if not isinstance(settings, dict):
        raise ProbmutError(f"{path}: the run's settings are not a JSON object; train into "
                           "another output directory")
    missing = sorted(_SETTINGS_SINCE_0_2 - settings.keys())
    if missing:
        raise ProbmutError(f"{path}: a run started by probmut 0.1 (its settings have no "
                           f"{', '.join(missing)}); probmut 0.2 does not resume it. "
                           "Its finished population files are read as they are; train more "
                           "instances into another output directory")
    return settings


def record_path(out, population: str, instance: int) -> Path:
    """Where the record of one finished instance is kept."""
    return Path(out) / ".work" / population / f"{instance:05d}.npz"


def weights_path(out, instance: int) -> Path:
    """Where the trained weights of one healthy instance are kept."""
    return Path(out) / ".work" / "weights" / _WEIGHTS_OF / f"{instance:05d}.npz"


def record_key(population: str, instance: int) -> str:
    """The key a record's (or, with ``population="weights"``, a weights file's) checksum
    is bound to, so that a file renamed to another instance fails its checks."""
    return f"record {population} {instance}"


def finished_ids(out, population: str) -> list[int]:
    """The ids of the instances of ``population`` with a record, in order (not read)."""
    return sorted(int(p.stem) for p in (Path(out) / ".work" / population).glob("*.npz")
                  if p.stem.isdigit())


def write_record(out, population: str, record: InstanceRecord, correct: np.ndarray | None,
                 match: str | None = None, read: tuple[str, ...] | None = None) -> None:
    """Write one finished instance's record (atomically): ``correct`` holds its outcome
    on each test input (None when it was not scored), ``match`` its match with its
    healthy instance (None when it was not derived), ``read`` the hyperparameters its
    training code read (None: unknown)."""
    correct = np.zeros(0, bool) if correct is None else np.asarray(correct, bool)
    matched = {} if match is None else {"match": np.array(match)}
    if read is not None:
        matched["read"] = np.array(sorted(read), dtype=str)
    write_checked(record_path(out, population, record.instance),
                  record_key(population, record.instance),
                  accuracy=np.float64(record.accuracy), seed=np.int64(record.seed),
                  seconds=np.float64(record.seconds), correct=np.packbits(correct),
                  n_inputs=np.int64(correct.size), status=np.array(record.status),
                  error=np.array(record.error),
                  loss_history=np.array(record.loss_history, dtype=np.float64),
                  initial_loss=np.float64(record.initial_loss),
                  constant=np.int8(-1 if record.constant is None else int(record.constant)),
                  **matched)


def read_record(out, population: str, instance: int) -> StoredInstance | None:
    """A finished instance's record; None if it is missing or damaged (warned with a
    :class:`DamagedRecordWarning`: the instance is trained again)."""
    path = record_path(out, population, instance)
    if not path.exists():
        return None
    try:
        record = read_checked(path, record_key(population, instance),
                              {"seed": (), "n_inputs": (), "correct": None})
        missing = [field for field in _RECORD_FIELDS if field not in record]
        if missing:
            raise DamagedFile(f"no {', '.join(missing)}")
        status = str(record["status"])
        if status not in STATUSES:
            raise DamagedFile(f"unknown status {status!r}")
        scored = status not in FAILED or status == "diverged"
        n_inputs = int(record["n_inputs"]) if scored else 0
        if record["correct"].size != (n_inputs + 7) // 8:
            raise DamagedFile("outcome bits do not fit n_inputs")
        accuracy = float(record["accuracy"])
        if scored != math.isfinite(accuracy):
            raise DamagedFile(f"accuracy {accuracy} for an instance that is {status}")
    except (DamagedFile, KeyError, ValueError) as problem:
        warnings.warn(f"{path}: damaged record ({problem}); the instance is trained again",
                      DamagedRecordWarning, stacklevel=3)
        return None
    constant = int(record["constant"])
    return StoredInstance(
        InstanceRecord(instance=instance, accuracy=accuracy, seed=int(record["seed"]),
                       status=status, seconds=float(record["seconds"]),
                       loss_history=tuple(float(v) for v in record["loss_history"]),
                       initial_loss=float(record["initial_loss"]),
                       constant=None if constant < 0 else bool(constant),
                       error=str(record["error"])),
        np.unpackbits(record["correct"], count=n_inputs).astype(bool),
        str(record["match"]) if "match" in record else None,
        tuple(str(name) for name in record["read"]) if "read" in record else None)


def write_weights(out, instance: int, weights: list) -> None:
    """Keep the trained weights (a list of arrays) of one healthy instance (atomically)."""
    write_checked(weights_path(out, instance), record_key("weights", instance),
                  **{f"arr_{k}": w for k, w in enumerate(weights)})


def read_weights(out, instance: int) -> list | None:
    """The kept weights of one healthy instance; None if they are missing or damaged
    (warned with a :class:`DamagedRecordWarning`: the healthy instance is trained again
    for its mutants)."""
    path = weights_path(out, instance)
    if not path.exists():
        return None
    try:
        data = read_checked(path, record_key("weights", instance))
    except DamagedFile as problem:
        warnings.warn(f"{path}: damaged weights ({problem}); the healthy instance is trained "
                      "again for its mutants", DamagedRecordWarning, stacklevel=2)
        return None
    return [data[f"arr_{k}"] for k in range(len(data))]
