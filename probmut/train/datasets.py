"""Datasets for the trainer: images as float32 in [0, 1] with shape (n, h, w, c).

Four sources:

* ``digits`` (scikit-learn's bundled 8x8 digits): offline, the default;
* ``mnist``, ``fashion_mnist``, ``cifar10``, ``cifar100``: Keras' own loaders, which
  read the Keras cache (``$KERAS_HOME/datasets``, default ``~/.keras/datasets``) and
  download into it on first use. A download that fails, or that does not start within
  ``download_timeout`` seconds, is a :class:`ProbmutError` naming the missing file, where
  to put it, and the ``--data`` alternative;
* an ``.npz`` file with ``x_train, y_train, x_test, y_test``;
* an image folder: one sub-folder per class, either inside ``train/`` and ``test/``
  sub-folders or in the folder itself with a ``test_split`` share held out as the test
  set; read by Keras' ``image_dataset_from_directory`` and resized to ``image_size``.

``validation_split`` holds out a share of every training class as a validation set
(for early stopping and the operators that need one). Both splits are stratified and
fixed (seed 0): every instance of a run sees the same data.

For the regression and recommendation models (:mod:`probmut.train.tasks`) the data
comes from an ``.npz`` file with the arrays each needs (:data:`TASK_ARRAYS`); inputs
may then be a tuple of arrays (the model's inputs, in order).

Every dataset carries its provenance (:meth:`Dataset.provenance`: name, source, file
hashes, split sizes and a fingerprint of the arrays), which the run records.

Examples
--------
>>> data = load_dataset("digits")
>>> data.x_train.shape, data.x_test.shape, data.n_classes
((1347, 8, 8, 1), (450, 8, 8, 1), 10)
>>> data = load_dataset("digits", validation_split=0.1)
>>> len(data.x_train), len(data.x_val), len(data.x_test)
(1211, 136, 450)
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError

#: Seconds a download may take to start before it is reported (``--download-timeout``).
DOWNLOAD_TIMEOUT = 30.0
#: The image files Keras' ``image_dataset_from_directory`` reads.
IMAGE_SUFFIXES = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_SPLIT_SEED = 0


@dataclass(frozen=True)
class CacheFile:
    """A file a Keras loader keeps in its cache (``path`` relative to ``$KERAS_HOME/datasets``)
    and the address it downloads it from."""

    path: str
    origin: str


_KERAS_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
#: What each Keras loader reads from (or downloads into) the cache, as Keras 3 names it.
KERAS_DATASETS = {
    "mnist": [CacheFile("mnist.npz", _KERAS_URL + "mnist.npz")],
    "fashion_mnist": [CacheFile(f"fashion-mnist/{name}", _KERAS_URL + name) for name in (
        "train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")],
    "cifar10": [CacheFile("cifar-10-batches-py-target_archive",
                          "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz")],
    "cifar100": [CacheFile("cifar-100-python-target_archive",
                           "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz")],
}
DATASETS = ["digits", *KERAS_DATASETS]

#: The arrays an ``.npz`` file holds for each task (each also with ``_test``).
TASK_ARRAYS = {
    "classification": "x_train (inputs), y_train (class ids 0, 1, ...)",
    "regression": "x_train (eye images, n x H x W [x 1]), pose_train (head pose: pitch, yaw "
                  "in radians, n x 2), y_train (gaze: pitch, yaw in radians, n x 2)",
    "recommendation": "x_train (user id, item id: integers, n x 2), y_train (ratings scaled "
                      "to [0, 1], n)",
}

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


def keras_cache_dir() -> Path:
    """Where Keras' loaders keep data sets, decided as Keras decides it:
    ``$KERAS_HOME/datasets``, else ``~/.keras/datasets`` (``/tmp/.keras/datasets`` when
    the home directory or an existing Keras home is not writable)."""
    if "KERAS_HOME" in os.environ:
        home = Path(os.environ["KERAS_HOME"])
    else:
        base = Path.home() if os.access(Path.home(), os.W_OK) else Path("/tmp")
        home = base / ".keras"
    if home.exists() and not os.access(home, os.W_OK):
        home = Path("/tmp/.keras")
    return home / "datasets"


# ---------------------------------------------------------------- argument checks

def _share(value, flag):
    if value is not None and not 0 < value < 1:
        raise ProbmutError(f"{flag} must be a share between 0 and 1 (exclusive), got {value:g}")


def _class_folders(folder: Path) -> dict[str, list[Path]]:
    """Class name -> its image files (searched recursively, as Keras does), sorted."""
    classes = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        classes[sub.name] = sorted(p for p in sub.rglob("*")
                                   if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if len(classes) < 2:
        raise ProbmutError(f"--data {folder}: an image folder needs one sub-folder per class "
                           f"(at least two), found {len(classes)}")
    empty = [name for name, files in classes.items() if not files]
    if empty:
        raise ProbmutError(f"--data {folder}: class folder {empty[0]!r} holds no images "
                           f"({', '.join(IMAGE_SUFFIXES)})")
    return classes


def image_folder_layout(folder: Path, test_split: float | None) -> dict[str, dict]:
    """The ``train``/``test`` class folders of an image folder, checked (no TensorFlow).

    Either ``folder/train/CLASS/`` and ``folder/test/CLASS/`` (same classes), or
    ``folder/CLASS/`` and a ``test_split`` share (returned as ``{"all": ...}``).
    """
    split = (folder / "train").is_dir() and (folder / "test").is_dir()
    if split:
        if test_split is not None:
            raise ProbmutError(f"--data {folder} has train/ and test/ sub-folders; "
                               "--test-split is for a folder of class folders only")
        layout = {"train": _class_folders(folder / "train"),
                  "test": _class_folders(folder / "test")}
        if list(layout["train"]) != list(layout["test"]):
            raise ProbmutError(f"--data {folder}: train/ and test/ must hold the same class "
                               f"folders, got {list(layout['train'])} and {list(layout['test'])}")
        return layout
    if test_split is None:
        raise ProbmutError(f"--data {folder} has no train/ and test/ sub-folders: give "
                           "--test-split SHARE to hold out a share of each class as the test set")
    return {"all": _class_folders(folder)}


def _image_size(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    parts = text.lower().split("x")
    try:
        size = tuple(int(p) for p in parts)
    except ValueError:
        size = ()
    if len(size) == 1:
        size = size * 2
    if len(size) != 2 or min(size) < 1:
        raise ProbmutError(f"--image-size must be HEIGHTxWIDTH or SIZE in pixels, e.g. 28x28 "
                           f"or 32, got {text!r}")
    return size


def check_data_arguments(source: str, *, image_size: str | None = None,
                         test_split: float | None = None,
                         validation_split: float | None = None) -> None:
    """Check what can be checked without loading anything heavy (before TensorFlow).

    >>> check_data_arguments("digits", validation_split=1.5)
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: --validation-split must be a share between 0 and 1 (exclusive), got 1.5
    """
    _share(test_split, "--test-split")
    _share(validation_split, "--validation-split")
    _image_size(image_size)
    path = Path(source)
    folder = source not in DATASETS and path.is_dir()
    if not folder and (image_size is not None or test_split is not None):
        raise ProbmutError("--image-size and --test-split are for an image folder "
                           "(--data DIR)")
    if source in DATASETS:
        return
    if folder:
        image_folder_layout(path, test_split)
    elif not (source.endswith(".npz") or os.path.sep in source):
        raise ProbmutError(f"unknown dataset {source!r}; use one of {', '.join(DATASETS)}, "
                           "--data FILE.npz (x_train, y_train, x_test, y_test) or --data DIR "
                           "(an image folder)")
    elif not path.is_file():
        raise ProbmutError(f"--data {source}: no such file or folder")


# ---------------------------------------------------------------- loading

@functools.lru_cache(maxsize=4)
def load_dataset(source: str, *, task: str = "classification", image_size: str | None = None,
                 test_split: float | None = None, validation_split: float | None = None,
                 download_timeout: float = DOWNLOAD_TIMEOUT) -> Dataset:
    """Load a dataset by name (see ``DATASETS``), from an ``.npz`` file or an image folder,
    for a model of ``task`` (the named data sets and image folders are classification).

    Raises :class:`ProbmutError` for bad arguments, a data set Keras cannot load or
    download, or a malformed file. Results are cached per process.
    """
    check_data_arguments(source, image_size=image_size, test_split=test_split,
                         validation_split=validation_split)
    if task != "classification":
        if source in DATASETS or Path(source).is_dir():
            raise ProbmutError(f"a {task} model trains on --data FILE.npz with "
                               f"{TASK_ARRAYS[task]} and the same _test arrays")
        data = _task_npz(Path(source), task)
    elif source == "digits":
        data = _digits()
    elif source in KERAS_DATASETS:
        data = _keras_dataset(source, download_timeout)
    elif Path(source).is_dir():
        data = _image_folder(Path(source), _image_size(image_size), test_split)
    else:
        data = _npz(Path(source))
    if validation_split is not None:
        from probmut.train.tasks import strata

        train, val = stratified_split(strata(data.y_train, task), validation_split)
        split = (data.split + "; " if data.split else "") + (
            f"validation: {validation_split:g} of each training class (seed {_SPLIT_SEED})")
        data = dataclasses.replace(data, x_train=take(data.x_train, train),
                                   y_train=data.y_train[train], x_val=take(data.x_train, val),
                                   y_val=data.y_train[val], split=split)
    where = f"dataset {source!r}" if source in DATASETS else f"--data {source}"
    check_training_set(where, data.x_train, data.y_train, task)
    for part, x in (("validation", data.x_val), ("test", data.x_test)):
        if x is not None and n_rows(x) == 0:
            raise ProbmutError(f"{where}: the {part} set holds no samples")
    return data


def check_training_set(where: str, x: Inputs, y: np.ndarray, task: str,
                       what: str = "training set") -> None:
    """Training data a model can learn from: samples, finite inputs and targets, and for
    a classifier at least two classes; else a one-line error naming ``where``.

    >>> check_training_set("--mutation delete_training_data:100", np.zeros((0, 8)),
    ...                    np.zeros(0, int), "classification", "mutated training set")
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: --mutation delete_training_data:100: the mutated training set holds no samples
    """
    if n_rows(x) == 0:
        raise ProbmutError(f"{where}: the {what} holds no samples")
    for array in (*(x if isinstance(x, tuple) else (x,)), y):
        if np.issubdtype(array.dtype, np.inexact) and not np.all(np.isfinite(array)):
            sample = int(np.argwhere(~np.isfinite(array))[0][0])
            raise ProbmutError(f"{where}: the {what} holds NaN or infinite values (the first "
                               f"in sample {sample})")
    if task == "classification" and np.unique(y).size < 2:
        raise ProbmutError(f"{where}: the {what} holds a single class ({int(y[0])}); a "
                           "classifier needs samples of at least two")


def stratified_split(y: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(kept, held_out)``: ``round(share x n_c)`` (half up) random samples of each
    class c held out, the same every time (seed 0); both sorted.

    >>> kept, held = stratified_split(np.repeat([0, 1], [10, 30]), 0.2)
    >>> len(kept), len(held), np.bincount(np.repeat([0, 1], [10, 30])[held]).tolist()
    (32, 8, [2, 6])
    """
    rng = np.random.default_rng(_SPLIT_SEED)
    held = [rng.choice(members, size=int(np.floor(share * len(members) + 0.5)), replace=False)
            for members in (np.flatnonzero(y == c) for c in np.unique(y))]
    held = np.sort(np.concatenate(held))
    return np.setdiff1d(np.arange(len(y)), held), held


def _digits() -> Dataset:
    import sklearn
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    # One fixed stratified split, so every instance is evaluated on the same 450 inputs.
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, stratify=y, random_state=0)
    bundled = Path(sklearn.__file__).parent / "datasets" / "data" / "digits.csv.gz"
    return _normalised("digits", x_train.reshape(-1, 8, 8), y_train,
                       x_test.reshape(-1, 8, 8), y_test, scale=16.0,
                       source=f"sklearn.datasets.load_digits (scikit-learn {sklearn.__version__})",
                       files={"sklearn/datasets/data/digits.csv.gz": sha256_file(bundled)},
                       split="test: 0.25 stratified (scikit-learn train_test_split, random_state 0)")


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


def _placement(name: str, missing: list[CacheFile], cache: Path) -> str:
    first = missing[0]
    more = (f" (and the other {len(missing) - 1} files of {name} from the same address into "
            f"{(cache / first.path).parent})" if len(missing) > 1 else "")
    return (f"download {first.origin} to {cache / first.path}{more}, or copy "
            "~/.keras/datasets from a machine where "
            f"`python -c \"import keras; keras.datasets.{name}.load_data()\"` ran; "
            "or pass --data FILE.npz or --data DIR (an image folder)")


def _keras_dataset(name: str, timeout: float) -> Dataset:
    cache = keras_cache_dir()
    files = KERAS_DATASETS[name]
    missing = [f for f in files if not (cache / f.path).is_file()]
    if missing:
        print(f"probmut train: {name}: {missing[0].path} is not in the Keras cache ({cache}); "
              f"Keras downloads it (a download that does not start within {timeout:g} s is "
              "given up)", file=sys.stderr)
    import keras

    loader = getattr(keras.datasets, name).load_data
    try:
        with contextlib.redirect_stdout(sys.stderr):  # Keras' download progress: stderr
            (x_train, y_train), (x_test, y_test) = _watched(
                loader, timeout, [cache / f.path for f in files])
    except DownloadTimeout:
        raise ProbmutError(f"dataset {name!r}: the download of {(missing or files)[0].path} did "
                           f"not start within {timeout:g} s (--download-timeout); "
                           + _placement(name, missing or files, cache)) from None
    except Exception as error:
        if missing:
            problem = (f"{missing[0].path} is not in the Keras cache ({cache}) and Keras "
                       f"could not download it ({_one_line(error)})")
        else:
            problem = (f"Keras could not load it from its cache ({cache}): {_one_line(error)}; "
                       "a cached file that fails Keras' checksum is downloaded again, so "
                       "remove a damaged file or replace it")
        raise ProbmutError(f"dataset {name!r}: {problem}; "
                           + _placement(name, missing or files, cache)) from None
    return _normalised(name, x_train, y_train, x_test, y_test, scale=255.0,
                       source=f"keras.datasets.{name} ({', '.join(sorted({f.origin.rsplit('/', 1)[0] for f in files}))})",
                       files={f.path: sha256_file(cache / f.path) for f in files},
                       split="Keras' train and test sets")


class DownloadTimeout(Exception):
    """A download did not start within the timeout."""


def _watched(load, timeout: float, targets: list[Path]):
    """Run ``load()`` with a watchdog: if none of ``targets`` has been (re)written within
    ``timeout`` seconds while ``load`` still runs, raise :class:`DownloadTimeout` (the
    download never started: no route, a DNS or proxy hang). Sockets opened meanwhile
    time out after ``timeout`` seconds without data, so a stalled download fails too."""
    def stamp(path):
        try:
            status = path.stat()
            return status.st_mtime_ns, status.st_size
        except FileNotFoundError:
            return None

    before = [stamp(p) for p in targets]
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = load()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        worker = threading.Thread(target=run, name="probmut-download", daemon=True)
        worker.start()
        deadline = time.monotonic() + timeout
        while worker.is_alive():
            worker.join(0.05)
            started = any(stamp(p) != b for p, b in zip(targets, before, strict=True))
            if worker.is_alive() and not started and time.monotonic() > deadline:
                raise DownloadTimeout
    finally:
        socket.setdefaulttimeout(previous)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


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
        raise ProbmutError(f"--data {path}: {kind}; {needs}")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [name for name in names if name not in data.files]
            if missing:
                raise ProbmutError(f"--data {path}: missing array {missing[0]!r}; {needs}")
            arrays = {name: data[name] for name in names}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise ProbmutError(f"--data {path}: not a readable .npz file "
                           f"({_one_line(error)})") from None
    for name, array in arrays.items():
        if array.size == 0:
            raise ProbmutError(f"--data {path}: {name} is empty (shape {array.shape}); {needs}")
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise ProbmutError(f"--data {path}: {name} holds {array.dtype} values, not numbers")
        if np.issubdtype(array.dtype, np.inexact) and not np.all(np.isfinite(array)):
            sample = int(np.argwhere(~np.isfinite(array))[0][0])
            raise ProbmutError(f"--data {path}: {name} holds NaN or infinite values (the first "
                               f"in sample {sample}); fix or remove those samples")
    return arrays


def _npz(path: Path) -> Dataset:
    arrays = _arrays(path, ["x_train", "y_train", "x_test", "y_test"],
                     "the file needs x_train, y_train, x_test, y_test")
    scale = 255.0 if arrays["x_train"].max() > 1.0 else 1.0
    return _normalised(path.stem, **arrays, scale=scale, source=f"file {path}",
                       files={path.name: sha256_file(path)}, split="the file's train and test sets")


def _task_npz(path: Path, task: str) -> Dataset:
    """The arrays of a regression (gaze) or recommendation ``.npz`` (see ``TASK_ARRAYS``)."""
    inputs = ["x", "pose"] if task == "regression" else ["x"]
    names = [f"{k}_{part}" for part in ("train", "test") for k in [*inputs, "y"]]
    arrays = _arrays(path, names, f"a {task} model needs {TASK_ARRAYS[task]} and the same "
                                  "_test arrays")

    def check(ok, what):
        if not ok:
            raise ProbmutError(f"--data {path}: {what} (a {task} model needs "
                               f"{TASK_ARRAYS[task]})")

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


def _image_folder(folder: Path, size: tuple[int, int] | None,
                  test_split: float | None) -> Dataset:
    import keras
    import tensorflow as tf

    layout = image_folder_layout(folder, test_split)
    files = [p for classes in layout.values() for images in classes.values() for p in images]

    def decode(path):
        return tf.io.decode_image(tf.io.read_file(str(path)), expand_animations=False)

    def unreadable(error) -> ProbmutError:
        """The first image that cannot be decoded named (Keras' error names none)."""
        for path in files:
            try:
                decode(path)
            except tf.errors.OpError as problem:
                error = problem
                break
        else:
            path = None
        what = f"cannot read the image {path}" if path else "cannot read its images"
        message = re.sub(r"\{\{.*?\}\}|\[\[.*?\]\]|\[Op:.*", "", error.message)  # TF's op names
        return ProbmutError(f"--data {folder}: {what} ({' '.join(message.split())}); "
                            "remove or replace it")

    try:
        shape = decode(files[0]).shape
    except tf.errors.OpError as error:
        raise unreadable(error) from None
    size = size or (int(shape[0]), int(shape[1]))
    color_mode = {1: "grayscale", 2: "grayscale", 3: "rgb"}.get(int(shape[-1]), "rgba")

    def read(part):
        images = keras.utils.image_dataset_from_directory(
            folder / part if part != "all" else folder, labels="inferred", label_mode="int",
            color_mode=color_mode, batch_size=256, image_size=size, shuffle=False,
            verbose=False)
        try:
            xs, ys = zip(*((x.numpy(), y.numpy()) for x, y in images), strict=True)
        except tf.errors.OpError as error:
            raise unreadable(error) from None
        return np.concatenate(xs), np.concatenate(ys)

    if "all" in layout:
        x, y = read("all")
        train, test = stratified_split(y, test_split)
        arrays = x[train], y[train], x[test], y[test]
        split = f"test: {test_split:g} of each class (seed {_SPLIT_SEED})"
    else:
        arrays = (*read("train"), *read("test"))
        split = "test: the test/ sub-folder"
    tree = hashlib.sha256()
    for path in files:
        tree.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n".encode())
    data = _normalised(folder.name, *arrays, scale=255.0,
                       source=f"image folder {folder} ({len(files)} images, {color_mode}, "
                              f"resized to {size[0]}x{size[1]})",
                       files={f"{folder.name}/": tree.hexdigest()}, split=split)
    return dataclasses.replace(data, class_names=tuple(next(iter(layout.values()))))


def _normalised(name, x_train, y_train, x_test, y_test, scale, *, source, files,
                split) -> Dataset:
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
                   inputs(x_test), labels(y_test, "y_test"), source=source, files=files,
                   split=split)
    if len(data.x_train) != len(data.y_train) or len(data.x_test) != len(data.y_test):
        raise ProbmutError(f"{name}: x and y lengths differ (train {len(data.x_train)} vs "
                           f"{len(data.y_train)}, test {len(data.x_test)} vs {len(data.y_test)})")
    if data.x_train.shape[1:] != data.x_test.shape[1:]:
        raise ProbmutError(f"{name}: train inputs {data.x_train.shape[1:]} and test inputs "
                           f"{data.x_test.shape[1:]} have different shapes")
    return data
