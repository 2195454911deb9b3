"""Per-input outcomes: which test inputs each instance classified correctly.

Stored next to each population CSV as ``{stem}.outcomes.npz`` with keys ``instance``
(int64, one id per row), ``correct`` (uint8, ``np.packbits`` of the boolean
(instances x inputs) matrix along axis 1), ``n_inputs`` and ``labels`` (int64 test
labels; for a regression or recommendation model, the label buckets of
:func:`probmut.train.tasks.strata`). This module needs only NumPy, so analyses can read
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

from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write


def save_outcomes(path, instance_ids, correct, labels) -> None:
    """Write the per-input outcome matrix of a population atomically (see module doc)."""
    correct = np.asarray(correct, dtype=bool)
    ids = np.asarray(instance_ids, dtype=np.int64)
    if correct.ndim != 2 or correct.shape[0] != ids.shape[0]:
        raise ValueError(f"correct must be (instances, inputs); got {correct.shape} for {ids.size} ids")
    arrays = dict(
        instance=ids,
        correct=np.packbits(correct, axis=1),
        n_inputs=np.int64(correct.shape[1]),
        labels=np.asarray(labels, dtype=np.int64),
    )
    atomic_write(path, lambda handle: np.savez_compressed(handle, **arrays))


def load_outcomes(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read ``{stem}.outcomes.npz``: ``(instance_ids, correct, labels)``.

    ``correct[i, j]`` is True when instance ``instance_ids[i]`` classified test input
    ``j`` (true label ``labels[j]``) correctly; its row mean is the instance's accuracy.
    Anything else (another file, a damaged archive, arrays of the wrong kind or shape,
    duplicate instance ids) is a :class:`~probmut.errors.ProbmutError` naming the file.
    """
    import zipfile
    import zlib

    def bad(problem):
        return ProbmutError(f"{path}: not a probmut outcomes file ({problem})")

    if not Path(path).is_file():
        raise ProbmutError(f"{path}: no such outcomes file (the trainer writes it next to "
                           "each population CSV)")
    try:
        data = np.load(path, allow_pickle=False)
        plain = isinstance(data, np.ndarray)
        if not plain:
            with data:
                arrays = {key: data[key] for key in ("instance", "n_inputs", "correct", "labels")}
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
    correct = np.unpackbits(packed, axis=1, count=count).astype(bool)
    return ids.astype(np.int64), correct, labels.astype(np.int64)
