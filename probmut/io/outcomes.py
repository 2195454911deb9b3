"""Per-input outcomes: which test inputs each instance classified correctly.

Stored next to each population CSV as ``{stem}.outcomes.npz`` with keys ``instance``
(int64, one id per row), ``correct`` (uint8, ``np.packbits`` of the boolean
(instances x inputs) matrix along axis 1), ``n_inputs`` and ``labels`` (int64 test
labels; for a regression or recommendation model, the label buckets of
:func:`probmut.train.tasks.strata`). The trainer and ``probmut evaluate`` add each
instance's symptom record (:mod:`probmut.io.records`): ``status``, ``error`` (strings),
``seconds``, ``initial_loss``, ``constant`` (1, 0, or -1 for unknown), ``loss_history``
(one row per instance, NaN-padded to the longest) and ``loss_epochs`` (its length per
row). A crashed or timed-out instance has a row of False outcomes there and is never
returned as if it had been scored. This module needs only NumPy, so analyses can read
the files without TensorFlow.

Examples
--------
>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "healthy.outcomes.npz")
>>> correct = np.array([[True, False, True], [True, True, True]])
>>> save_outcomes(path, [0, 1], correct, labels=[3, 1, 4])
>>> ids, matrix, labels = load_outcomes(path)
>>> ids.tolist(), matrix.tolist(), labels.tolist()
([0, 1], [[True, False, True], [True, True, True]], [3, 1, 4])
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.arrays import text_start
from probmut.io.atomic import atomic_write
from probmut.io.completeness import check_complete
from probmut.io.files import checked_input, numpy_input
from probmut.io.records import FAILED, AllFailedError, FailedInstanceWarning, InstanceRecord

_SYMPTOM_KEYS = ("status", "error", "seconds", "initial_loss", "constant", "loss_history",
                 "loss_epochs")


def _symptom_arrays(records) -> dict:
    longest = max((len(r.loss_history) for r in records), default=0)
    history = np.full((len(records), longest), np.nan)
    for row, record in zip(history, records, strict=True):
        row[:len(record.loss_history)] = record.loss_history
    return dict(
        status=np.array([r.status for r in records], dtype=str),
        error=np.array([r.error for r in records], dtype=str),
        seconds=np.array([r.seconds for r in records], dtype=np.float64),
        initial_loss=np.array([r.initial_loss for r in records], dtype=np.float64),
        constant=np.array([-1 if r.constant is None else int(r.constant) for r in records],
                          dtype=np.int8),
        loss_history=history,
        loss_epochs=np.array([len(r.loss_history) for r in records], dtype=np.int64))


def save_outcomes(path, instance_ids, correct, labels, records=None) -> None:
    """Write the per-input outcome matrix of a population atomically (see module doc).

    ``records``, one :class:`~probmut.io.records.InstanceRecord` per row, adds the
    instances' symptoms.
    """
    correct = np.asarray(correct, dtype=bool)
    ids = np.asarray(instance_ids, dtype=np.int64)
    if correct.ndim != 2 or correct.shape[0] != ids.shape[0]:
        raise ValueError(
            f"correct must be (instances, inputs); got {correct.shape} for {ids.size} ids")
    arrays = dict(
        instance=ids,
        correct=np.packbits(correct, axis=1),
        n_inputs=np.int64(correct.shape[1]),
        labels=np.asarray(labels, dtype=np.int64),
    )
    if records is not None:
        if [r.instance for r in records] != ids.tolist():
            raise ValueError("records must follow the instance ids, one per row")
        arrays |= _symptom_arrays(records)
    atomic_write(path, lambda handle: np.savez_compressed(handle, **arrays))


def _read(path) -> dict:
    """Every array of an outcomes file, ``correct`` unpacked; anything that is not a
    probmut outcomes file (another file, a damaged archive, arrays of the wrong kind or
    shape, duplicate instance ids) is a :class:`~probmut.errors.ProbmutError` naming it."""
    import zipfile
    import zlib

    def bad(problem):
        return ProbmutError(f"{path}: not a probmut outcomes file ({problem})")

    what = "an outcomes file (.outcomes.npz)"
    if not os.path.lexists(path):
        raise ProbmutError(f"{path}: no such outcomes file (the trainer writes it next to "
                           "each population CSV)")
    checked_input(path, what)
    text = text_start(path)
    if text is not None:
        raise bad(f"a text file: {text!r}...; the outcome files are the .outcomes.npz that "
                  "probmut train writes beside each population CSV")
    try:
        with numpy_input(path, what) as data:
            plain = isinstance(data, np.ndarray)
            if not plain:
                arrays = {key: data[key] for key in data.files}
                for key in ("instance", "n_inputs", "correct", "labels"):
                    if key not in arrays:
                        raise KeyError(key)
    except KeyError as error:
        raise bad(f"the array {error} is missing") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise bad(f"{type(error).__name__}: {error}") from None
    if plain:
        raise bad("a plain .npy array, not an .npz archive")
    ids, n_inputs, packed, labels = (arrays[k] for k in ("instance", "n_inputs", "correct",
                                                          "labels"))
    integer = all(np.issubdtype(a.dtype, np.integer) for a in (ids, n_inputs, labels))
    if not integer or packed.dtype != np.uint8:
        raise bad("instance, n_inputs and labels must be integers, correct packed bits "
                  "(uint8)")
    if ids.ndim != 1 or n_inputs.ndim != 0 or labels.ndim != 1 or packed.ndim != 2:
        raise bad("wrong array shapes")
    count = int(n_inputs)
    if count < 1 or labels.size != count or packed.shape != (ids.size, (count + 7) // 8):
        raise bad(f"{ids.size} instance ids, {labels.size} labels and correct bits of shape "
                  f"{packed.shape} do not fit {count} inputs")
    unique, repeats = np.unique(ids, return_counts=True)
    if (repeats > 1).any():
        raise bad(f"duplicate instance id(s) {unique[repeats > 1].tolist()[:10]}")
    symptoms = [key for key in _SYMPTOM_KEYS if key in arrays]
    if symptoms and (len(symptoms) != len(_SYMPTOM_KEYS)
                     or any(len(arrays[key]) != ids.size for key in symptoms)):
        raise bad("symptom arrays missing or not one per instance")
    arrays["correct"] = np.unpackbits(packed, axis=1, count=count).astype(bool)
    arrays["instance"] = ids.astype(np.int64)
    arrays["labels"] = labels.astype(np.int64)
    return arrays


def load_outcomes(path, keep_failed: bool = False,
                  strict: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read ``{stem}.outcomes.npz``: ``(instance_ids, correct, labels)``.

    ``correct[i, j]`` is True when instance ``instance_ids[i]`` classified test input
    ``j`` (true label ``labels[j]``) correctly; its row mean is the instance's accuracy.
    Failed instances (crashed, timed out, diverged) are dropped with a
    :class:`~probmut.io.records.FailedInstanceWarning` naming them, unless
    ``keep_failed`` (a crashed or timed-out row is all False: it was never scored).
    Fewer instances than the run that wrote the population ``{stem}.csv`` aims at is
    a warning, or an error when ``strict`` (:func:`~probmut.io.completeness.check_complete`).
    """
    population = Path(path).with_name(Path(path).name.removesuffix(".outcomes.npz") + ".csv")
    if not Path(path).exists():
        check_complete(population, 0, strict)
    arrays = _read(path)
    ids, correct, labels = arrays["instance"], arrays["correct"], arrays["labels"]
    check_complete(population, ids.size, strict)
    if "status" in arrays and not keep_failed:
        failed = np.isin(arrays["status"], sorted(FAILED))
        if failed.any():
            named = ", ".join(f"{i} ({s})" for i, s in zip(ids[failed], arrays["status"][failed],
                                                           strict=True))
            if failed.all():
                raise AllFailedError(f"{path}: every instance failed ({named}); nothing to "
                                   "analyse (see probmut symptoms)")
            warnings.warn(f"{path}: failed instance(s) {named} dropped: crashed, timed-out and "
                          "diverged instances are not counted (see probmut symptoms)",
                          FailedInstanceWarning, stacklevel=2)
            ids, correct = ids[~failed], correct[~failed]
    return ids, correct, labels


def load_outcome_records(path) -> list[InstanceRecord]:
    """Every instance's symptom record stored in an outcomes file (accuracies from the
    outcomes; status ``ok`` and unknown symptoms for files written before records)."""
    arrays = _read(path)
    records = []
    for row, instance in enumerate(arrays["instance"].tolist()):
        status = str(arrays["status"][row]) if "status" in arrays else "ok"
        scored = status in ("ok", "diverged")
        if "status" not in arrays:
            records.append(InstanceRecord(instance, float(arrays["correct"][row].mean())))
            continue
        history = arrays["loss_history"][row, :int(arrays["loss_epochs"][row])]
        constant = int(arrays["constant"][row])
        records.append(InstanceRecord(
            instance=instance,
            accuracy=float(arrays["correct"][row].mean()) if scored else math.nan,
            status=status, seconds=float(arrays["seconds"][row]),
            loss_history=tuple(float(v) for v in history),
            initial_loss=float(arrays["initial_loss"][row]),
            constant=None if constant < 0 else bool(constant), error=str(arrays["error"][row])))
    return records
