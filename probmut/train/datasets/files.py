"""Data from an ``.npz`` file: ``x_train, y_train, x_test, y_test`` for a classifier, the
arrays :data:`TASK_ARRAYS` names for the regression and recommendation models (inputs may
then be a tuple of arrays, the model's inputs in order)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets.dataset import Dataset, flat_error, normalised, sha256_file

#: The arrays an ``.npz`` file holds for each task (each also with ``_test``).
TASK_ARRAYS = {
    "classification": "x_train (inputs), y_train (class ids 0, 1, ...)",
    "regression": "x_train (eye images, n x H x W [x 1]), pose_train (head pose: pitch, yaw "
                  "in radians, n x 2), y_train (gaze: pitch, yaw in radians, n x 2)",
    "recommendation": "x_train (user id, item id: integers, n x 2), y_train (ratings scaled "
                      "to [0, 1], n)",
}


def _arrays(path: Path, names: list[str], needs: str) -> dict[str, np.ndarray]:
    """The named arrays of an ``.npz`` file, each holding samples of finite numbers; or a
    one-line error naming the file and what is wrong with it (not an archive, damaged, an
    array missing, empty, not numbers, NaN or infinite values)."""
    import zipfile
    import zlib

    if not zipfile.is_zipfile(path):
        with open(path, "rb") as handle:
            start = handle.read(6)
        kind = ("the file is empty" if not start else
                "a .npy array, not an .npz archive" if start == b"\x93NUMPY" else
                "a damaged or truncated .npz archive (its zip directory is missing)"
                if start.startswith(b"PK") else "not an .npz archive (no zip archive)")
        raise ProbmutError(f"{path}: {kind}; {needs}", option="data")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [name for name in names if name not in data.files]
            if missing:
                raise ProbmutError(f"{path}: missing array {missing[0]!r}; {needs}", option="data")
            arrays = {name: data[name] for name in names}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise ProbmutError(f"{path}: not a readable .npz file ({flat_error(error)})",
                           option="data") from None
    for name, array in arrays.items():
        if array.size == 0:
            raise ProbmutError(f"{path}: {name} is empty (shape {array.shape}); {needs}",
                               option="data")
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise ProbmutError(f"{path}: {name} holds {array.dtype} values, not numbers",
                               option="data")
        if np.issubdtype(array.dtype, np.inexact) and not np.all(np.isfinite(array)):
            sample = int(np.argwhere(~np.isfinite(array))[0][0])
            raise ProbmutError(f"{path}: {name} holds NaN or infinite values (the first in "
                               f"sample {sample}); fix or remove those samples", option="data")
    return arrays


def load_npz(path: Path, task: str = "classification") -> Dataset:
    """The arrays of an ``.npz`` file for a model of ``task`` (:data:`TASK_ARRAYS`)."""
    if task != "classification":
        return _task_npz(path, task)
    arrays = _arrays(path, ["x_train", "y_train", "x_test", "y_test"],
                     "the file needs x_train, y_train, x_test, y_test")
    scale = 255.0 if arrays["x_train"].max() > 1.0 else 1.0
    return normalised(path.stem, **arrays, scale=scale, source=f"file {path}",
                      files={path.name: sha256_file(path)}, split="the file's train and test sets")


def _task_npz(path: Path, task: str) -> Dataset:
    """The arrays of a regression (gaze) or recommendation ``.npz`` (see ``TASK_ARRAYS``)."""
    inputs = ["x", "pose"] if task == "regression" else ["x"]
    names = [f"{k}_{part}" for part in ("train", "test") for k in [*inputs, "y"]]
    arrays = _arrays(path, names, f"a {task} model needs {TASK_ARRAYS[task]} and the same "
                                  "_test arrays")

    def check(ok, what):
        if not ok:
            raise ProbmutError(f"{path}: {what} (a {task} model needs {TASK_ARRAYS[task]})",
                               option="data")

    parts = {}
    for part in ("train", "test"):
        x, y = arrays[f"x_{part}"], np.asarray(arrays[f"y_{part}"], np.float32)
        n = len(y)
        if task == "regression":
            pose = np.asarray(arrays[f"pose_{part}"], np.float32)
            check(x.ndim in (3, 4) and len(x) == n, f"x_{part} must hold {n} images")
            check(pose.shape == (n, 2) and y.shape == (n, 2),
                  f"pose_{part} and y_{part} must be {n} x 2 angles")
            images = np.asarray(x, np.float32) / np.float32(255.0 if x.max() > 1.0 else 1.0)
            parts[part] = ((images[..., None] if images.ndim == 3 else images, pose), y)
        else:
            check(x.shape == (n, 2) and np.issubdtype(x.dtype, np.integer) and x.min() >= 0,
                  f"x_{part} must hold {n} rows of non-negative integer (user, item) ids")
            check(y.ndim == 1 and y.min() >= 0 and y.max() <= 1,
                  f"y_{part} must hold {n} ratings in [0, 1]")
            ids = x.astype(np.int32)
            parts[part] = ((ids[:, :1], ids[:, 1:]), y)
    (x_train, y_train), (x_test, y_test) = parts["train"], parts["test"]
    return Dataset(path.stem, x_train, y_train, x_test, y_test, source=f"file {path}",
                   files={path.name: sha256_file(path)}, split="the file's train and test sets",
                   task=task)
