"""Datasets for the trainer: images as float32 in [0, 1] with shape (n, h, w, c).

``digits`` (scikit-learn's bundled 8x8 digits) works offline and is the default.
``mnist``, ``fashion_mnist`` and ``cifar10`` are read through Keras' loaders only
when their files are already in the Keras cache (``$KERAS_HOME/datasets``, default
``~/.keras/datasets``); nothing is ever downloaded. Any other data comes as an
``.npz`` file with ``x_train, y_train, x_test, y_test``.

Examples
--------
>>> data = load_dataset("digits")
>>> data.x_train.shape, data.x_test.shape, data.n_classes
((1347, 8, 8, 1), (450, 8, 8, 1), 10)
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError

# The files each Keras loader reads from the cache, relative to $KERAS_HOME/datasets.
KERAS_CACHED = {
    "mnist": ["mnist.npz"],
    "fashion_mnist": [f"fashion-mnist/{name}" for name in (
        "train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")],
    "cifar10": ["cifar-10-batches-py-target/cifar-10-batches-py/test_batch"],
}
DATASETS = ["digits", *KERAS_CACHED]


@dataclass(frozen=True, eq=False)
class Dataset:
    """Train and test split of a classification dataset; labels are int64 class ids."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def keras_cache_dir() -> Path:
    """Where Keras keeps downloaded datasets (``$KERAS_HOME/datasets``)."""
    return Path(os.environ.get("KERAS_HOME", Path.home() / ".keras")) / "datasets"


@functools.lru_cache(maxsize=4)
def load_dataset(source: str) -> Dataset:
    """Load a dataset by name (see ``DATASETS``) or from an ``.npz`` file path.

    Raises :class:`ProbmutError` for an unknown name, a dataset missing from the Keras
    cache, or a malformed file. Results are cached per process (workers reuse them).
    """
    if source == "digits":
        return _digits()
    if source in KERAS_CACHED:
        return _keras_cached(source)
    if source.endswith(".npz") or os.path.sep in source:
        return _npz(Path(source))
    raise ProbmutError(f"unknown dataset {source!r}; use one of {', '.join(DATASETS)} "
                       "or --data FILE.npz with x_train, y_train, x_test, y_test")


def _digits() -> Dataset:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    # One fixed stratified split, so every instance is evaluated on the same 450 inputs.
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, stratify=y, random_state=0)
    return _normalised("digits", x_train.reshape(-1, 8, 8), y_train,
                       x_test.reshape(-1, 8, 8), y_test, scale=16.0)


def _keras_cached(name: str) -> Dataset:
    missing = [f for f in KERAS_CACHED[name] if not (keras_cache_dir() / f).exists()]
    if missing:
        raise ProbmutError(
            f"dataset {name!r} is not in the Keras cache ({keras_cache_dir()} lacks "
            f"{missing[0]}); probmut never downloads. On a machine with internet run "
            f"`python -c \"import keras; keras.datasets.{name}.load_data()\"` (and copy "
            "~/.keras/datasets here), or pass --data FILE.npz")
    import keras

    (x_train, y_train), (x_test, y_test) = getattr(keras.datasets, name).load_data()
    return _normalised(name, x_train, y_train, x_test, y_test, scale=255.0)


def _npz(path: Path) -> Dataset:
    if not path.is_file():
        raise ProbmutError(f"--data {path}: no such file")
    try:
        with np.load(path) as data:
            arrays = {key: data[key] for key in ("x_train", "y_train", "x_test", "y_test")}
    except KeyError as error:
        raise ProbmutError(f"--data {path}: missing array {error}; the file needs "
                           "x_train, y_train, x_test, y_test") from None
    except (ValueError, OSError) as error:
        raise ProbmutError(f"--data {path}: not a readable .npz file ({error})") from None
    scale = 255.0 if arrays["x_train"].max() > 1.0 else 1.0
    return _normalised(path.stem, **arrays, scale=scale)


def _normalised(name, x_train, y_train, x_test, y_test, scale) -> Dataset:
    """Scale inputs to [0, 1], add a channel axis to 2-D images, flatten label arrays."""
    def inputs(x):
        x = np.asarray(x, dtype=np.float32) / np.float32(scale)
        return x[..., None] if x.ndim == 3 else x

    def labels(y, which):
        y = np.asarray(y).reshape(-1)
        if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            raise ProbmutError(f"{name}: {which} must hold class ids 0, 1, 2, ... "
                               "(non-negative integers, not one-hot)")
        return y.astype(np.int64)

    data = Dataset(name, inputs(x_train), labels(y_train, "y_train"),
                   inputs(x_test), labels(y_test, "y_test"))
    if len(data.x_train) != len(data.y_train) or len(data.x_test) != len(data.y_test):
        raise ProbmutError(f"{name}: x and y lengths differ (train {len(data.x_train)} vs "
                           f"{len(data.y_train)}, test {len(data.x_test)} vs {len(data.y_test)})")
    if data.x_train.shape[1:] != data.x_test.shape[1:]:
        raise ProbmutError(f"{name}: train inputs {data.x_train.shape[1:]} and test inputs "
                           f"{data.x_test.shape[1:]} have different shapes")
    return data
