"""Per-input outcomes: which test inputs each instance classified correctly.

Stored next to each population CSV as ``{stem}.outcomes.npz`` with keys ``instance``
(int64, one id per row), ``correct`` (uint8, ``np.packbits`` of the boolean
(instances x inputs) matrix along axis 1), ``n_inputs`` and ``labels`` (int64 test
labels). This module needs only NumPy, so analyses can read the files without
TensorFlow.

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
    """
    try:
        with np.load(path) as data:
            ids = data["instance"].astype(np.int64)
            n_inputs = int(data["n_inputs"])
            correct = np.unpackbits(data["correct"], axis=1, count=n_inputs).astype(bool)
            labels = data["labels"].astype(np.int64)
    except FileNotFoundError:
        raise ProbmutError(f"{path}: no such outcomes file (the trainer writes it next to "
                           "each population CSV)") from None
    except (KeyError, ValueError, OSError) as error:
        raise ProbmutError(f"{path}: not a probmut outcomes file ({error})") from None
    return ids, correct, labels
