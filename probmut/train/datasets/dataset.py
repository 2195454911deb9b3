"""The data a trainer works on: :class:`Dataset` (train, validation and test splits with
their provenance), the model's view of it (:class:`ModelDims`), and what every source
shares: normalising, the fixed stratified split, the checks on a training set.

Inputs are one array or a tuple of arrays (one per model input); :func:`n_rows`,
:func:`take` and :func:`concat` treat both alike.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

import numpy as np

from probmut.errors import ProbmutError

#: The seed of every split probmut makes (test and validation): fixed, so that every
#: instance of a run sees the same data.
SPLIT_SEED = 0

Inputs = np.ndarray | tuple  # one array, or one array per model input


def n_rows(x: Inputs) -> int:
    """Number of samples in inputs that are one array or a tuple of arrays."""
    return len(x[0]) if isinstance(x, tuple) else len(x)


def take(x: Inputs, index) -> Inputs:
    """Rows ``index`` of every input array."""
    return tuple(a[index] for a in x) if isinstance(x, tuple) else x[index]


def concat(a: Inputs, b: Inputs) -> Inputs:
    """Inputs ``a`` followed by ``b``."""
    if isinstance(a, tuple):
        return tuple(np.concatenate([u, v]) for u, v in zip(a, b, strict=True))
    return np.concatenate([a, b])


@dataclass(frozen=True)
class ModelDims:
    """What a model builder needs to know about the data: input shape(s), number of
    outputs (classes for a classifier) and, for integer-id inputs, each id's count."""

    input_shape: tuple
    n_outputs: int
    vocabulary: tuple[int, ...] | None = None


@dataclass(frozen=True, eq=False)
class Dataset:
    """Train, validation and test split of a dataset for one ``task``; a classifier's
    labels are int64 class ids, other targets float32; inputs are one array or a tuple
    of arrays. ``x_val``/``y_val`` are None without a validation split. ``source``,
    ``files`` (path -> SHA-256) and ``split`` say where the arrays came from;
    ``class_names`` (an image folder's class folders) names class id i."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    x_val: np.ndarray | None = None
    y_val: np.ndarray | None = None
    source: str = ""
    files: dict[str, str] = field(default_factory=dict)
    split: str = ""
    class_names: tuple[str, ...] = ()
    task: str = "classification"

    @property
    def n_classes(self) -> int:
        """Classes of a classifier (1 + the largest label); 0 for other tasks."""
        if self.task != "classification":
            return 0
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def input_shape(self) -> tuple:
        """One input's shape, or a tuple of shapes (one per input)."""
        if isinstance(self.x_train, tuple):
            return tuple(tuple(a.shape[1:]) for a in self.x_train)
        return tuple(self.x_train.shape[1:])

    @property
    def dims(self) -> ModelDims:
        if self.task == "classification":
            return ModelDims(self.input_shape, self.n_classes)
        if self.task == "regression":
            return ModelDims(self.input_shape, int(self.y_train.shape[1]))
        parts = [x for x in (self.x_train, self.x_val, self.x_test) if x is not None]
        vocabulary = tuple(int(max(x[k].max() for x in parts)) + 1 for k in range(2))
        return ModelDims(self.input_shape, 1, vocabulary)

    @property
    def validation(self) -> tuple[np.ndarray, np.ndarray] | None:
        return None if self.x_val is None else (self.x_val, self.y_val)

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 of every array (shapes, dtypes and bytes): equal iff the data is."""
        digest = hashlib.sha256()
        parts = (self.x_train, self.y_train, self.x_val, self.y_val, self.x_test, self.y_test)
        for array in (a for part in parts for a in (part if isinstance(part, tuple) else (part,))):
            array = np.zeros(0) if array is None else np.ascontiguousarray(array)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(memoryview(array).cast("B"))
        return digest.hexdigest()

    def provenance(self) -> dict:
        """What the run's manifest records about the data (plain, TOML-writable values).

        >>> from probmut.train.datasets import load_dataset
        >>> p = load_dataset("digits").provenance()
        >>> p["name"], p["train"], p["validation"], p["test"], p["classes"]
        ('digits', 1347, 0, 450, 10)
        """
        names = {"class_names": list(self.class_names)} if self.class_names else {}
        classes = {"classes": self.n_classes} if self.task == "classification" else {}
        shape = self.input_shape
        return {"name": self.name, "task": self.task, "source": self.source,
                "split": self.split, "train": len(self.y_train),
                "validation": 0 if self.y_val is None else len(self.y_val),
                "test": len(self.y_test), **classes, **names,
                "input_shape": [list(s) for s in shape] if isinstance(self.x_train, tuple)
                else list(shape),
                "fingerprint": self.fingerprint, "files": dict(self.files)}


def sha256_file(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def flat_error(error: BaseException) -> str:
    """``Type: message`` on one line (a loader's error, whole)."""
    return " ".join(f"{type(error).__name__}: {error}".split())


def check_training_set(where: str, x: Inputs, y: np.ndarray, task: str,
                       what: str = "training set", option: str | None = None) -> None:
    """Training data a model can learn from: samples, finite inputs and targets, and for
    a classifier at least two classes; else a one-line error naming ``where`` (and the
    ``option`` at fault).

    >>> check_training_set("delete_training_data:100", np.zeros((0, 8)), np.zeros(0, int),
    ...                    "classification", "mutated training set")
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: delete_training_data:100: the mutated training set holds no samples
    """
    if n_rows(x) == 0:
        raise ProbmutError(f"{where}: the {what} holds no samples", option=option)
    for array in (*(x if isinstance(x, tuple) else (x,)), y):
        if np.issubdtype(array.dtype, np.inexact) and not np.all(np.isfinite(array)):
            sample = int(np.argwhere(~np.isfinite(array))[0][0])
            raise ProbmutError(f"{where}: the {what} holds NaN or infinite values (the first "
                               f"in sample {sample})", option=option)
    if task == "classification" and np.unique(y).size < 2:
        raise ProbmutError(f"{where}: the {what} holds a single class ({int(y[0])}); a "
                           "classifier needs samples of at least two", option=option)


def stratified_split(y: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(kept, held_out)``: ``round(share x n_c)`` (half up) random samples of each
    class c held out, the same every time (seed 0); both sorted.

    >>> kept, held = stratified_split(np.repeat([0, 1], [10, 30]), 0.2)
    >>> len(kept), len(held), np.bincount(np.repeat([0, 1], [10, 30])[held]).tolist()
    (32, 8, [2, 6])
    """
    rng = np.random.default_rng(SPLIT_SEED)
    held = [rng.choice(members, size=int(np.floor(share * len(members) + 0.5)), replace=False)
            for members in (np.flatnonzero(y == c) for c in np.unique(y))]
    held = np.sort(np.concatenate(held))
    return np.setdiff1d(np.arange(len(y)), held), held


def normalised(name, x_train, y_train, x_test, y_test, scale, *, source, files,
                split) -> Dataset:
    """Scale inputs to [0, 1], add a channel axis to 2-D images, flatten label arrays."""
    def inputs(x):
        x = np.asarray(x, dtype=np.float32) / np.float32(scale)
        return x[..., None] if x.ndim == 3 else x

    def labels(y, which):
        y = np.asarray(y).reshape(-1)
        if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            raise ProbmutError(f"{name}: {which} must hold class ids 0, 1, 2, ... "
                               "(non-negative integers, not one-hot)", option="data")
        return y.astype(np.int64)

    data = Dataset(name, inputs(x_train), labels(y_train, "y_train"),
                   inputs(x_test), labels(y_test, "y_test"), source=source, files=files,
                   split=split)
    if len(data.x_train) != len(data.y_train) or len(data.x_test) != len(data.y_test):
        raise ProbmutError(f"{name}: x and y lengths differ (train {len(data.x_train)} vs "
                           f"{len(data.y_train)}, test {len(data.x_test)} vs {len(data.y_test)})",
                           option="data")
    if data.x_train.shape[1:] != data.x_test.shape[1:]:
        raise ProbmutError(f"{name}: train inputs {data.x_train.shape[1:]} and test inputs "
                           f"{data.x_test.shape[1:]} have different shapes", option="data")
    return data
