"""Datasets for the trainer: images as float32 in [0, 1] with shape (n, h, w, c).

One registry of data sources, :data:`SOURCES`, each in its own module:

* ``digits`` (scikit-learn's bundled 8x8 digits, :mod:`~probmut.train.datasets.bundled`):
  offline, the default;
* ``mnist``, ``fashion_mnist``, ``cifar10``, ``cifar100``
  (:mod:`~probmut.train.datasets.keras_sets`): Keras' own loaders, which read the Keras
  cache and download into it on first use; a download that fails, or that does not
  start within ``download_timeout`` seconds (:mod:`~probmut.train.datasets.download`), is
  a :class:`ProbmutError` naming the missing file, where to put it, and the alternatives;
* an image folder (:mod:`~probmut.train.datasets.images`): one sub-folder per class,
  either inside ``train/`` and ``test/`` sub-folders or in the folder itself with a
  ``test_split`` share held out as the test set, resized to ``image_size``;
* an ``.npz`` file (:mod:`~probmut.train.datasets.files`) with ``x_train, y_train,
  x_test, y_test``, or for the regression and recommendation models
  (:mod:`probmut.train.tasks`) the arrays each needs (:data:`TASK_ARRAYS`).

A source is named (``DATASETS``) or a path; :func:`check_data_arguments` checks what can
be checked before anything heavy is loaded, and :func:`load_dataset` loads.
``validation_split`` holds out a share of every training class as a validation set (for
early stopping and the operators that need one). Both splits are stratified and fixed
(seed 0): every instance of a run sees the same data. Every dataset carries its
provenance (:meth:`Dataset.provenance`: name, source, file hashes, split sizes and a
fingerprint of the arrays), which the run records.

Examples
--------
>>> data = load_dataset("digits")
>>> data.x_train.shape, data.x_test.shape, data.n_classes
((1347, 8, 8, 1), (450, 8, 8, 1), 10)
>>> data = load_dataset("digits", validation_split=0.1)
>>> len(data.x_train), len(data.x_val), len(data.x_test)
(1211, 136, 450)
>>> data_source("digits").keras, data_source("mnist").keras
(False, True)
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.train.datasets.bundled import load_digits
from probmut.train.datasets.dataset import (
    SPLIT_SEED,
    Dataset,
    ModelDims,
    check_training_set,
    concat,
    n_rows,
    stratified_split,
    take,
)
from probmut.train.datasets.download import DOWNLOAD_TIMEOUT
from probmut.train.datasets.files import TASK_ARRAYS, load_npz
from probmut.train.datasets.images import (
    IMAGE_SUFFIXES,
    image_folder_layout,
    load_image_folder,
    parse_image_size,
)
from probmut.train.datasets.keras_sets import KERAS_DATASETS, keras_cache_dir, load_keras_dataset

__all__ = ["DATASETS", "DOWNLOAD_TIMEOUT", "IMAGE_SUFFIXES", "KERAS_DATASETS", "SOURCES",
           "TASK_ARRAYS", "DataSource", "Dataset", "ModelDims", "check_data_arguments",
           "check_training_set", "concat", "data_source", "image_folder_layout",
           "keras_cache_dir", "load_dataset", "n_rows", "source_of", "stratified_split", "take"]


@dataclass(frozen=True)
class DataSource:
    """One kind of data source: which source strings it ``claims``, how it loads them
    (``load(source, task, image_size, test_split, download_timeout) -> Dataset``), what
    it ``check``\\ s before loading (``check(source, test_split)``, nothing heavy), the
    tasks it serves, whether loading imports Keras (``keras``, and with it TensorFlow)
    and whether its sources are names (``named``) rather than paths."""

    kind: str
    claims: Callable[[str], bool]
    load: Callable[..., Dataset]
    check: Callable[[str, float | None], object] = lambda source, test_split: None
    tasks: tuple[str, ...] = ("classification",)
    keras: bool = False
    named: bool = False


def _existing_file(source: str, test_split: float | None) -> None:
    if not Path(source).is_file():
        raise ProbmutError(f"{source}: no such file or folder", option="data")


#: Every data source, in the order they claim a source string: names before paths.
SOURCES = [
    DataSource("bundled", lambda source: source == "digits",
               lambda source, task, **_: load_digits(), named=True),
    DataSource("keras", lambda source: source in KERAS_DATASETS,
               lambda source, task, download_timeout, **_: load_keras_dataset(
                   source, download_timeout), keras=True, named=True),
    DataSource("image folder", lambda source: Path(source).is_dir(),
               lambda source, task, image_size, test_split, **_: load_image_folder(
                   Path(source), image_size, test_split),
               check=lambda source, test_split: image_folder_layout(Path(source), test_split),
               keras=True),
    DataSource("npz file", lambda source: source.endswith(".npz") or os.path.sep in source,
               lambda source, task, **_: load_npz(Path(source), task), check=_existing_file,
               tasks=tuple(TASK_ARRAYS)),
]
#: The named data sets.
DATASETS = ["digits", *KERAS_DATASETS]


def data_source(source: str) -> DataSource:
    """The :class:`DataSource` that reads ``source``; a one-line error if none does."""
    for candidate in SOURCES:
        if candidate.claims(source):
            return candidate
    raise ProbmutError(f"unknown dataset {source!r}; use one of {', '.join(DATASETS)}, a file "
                       "FILE.npz (x_train, y_train, x_test, y_test) or an image folder DIR",
                       option="data")


def source_of(dataset: str | None = None, data: str | os.PathLike | None = None,
              default: str | None = "digits") -> str | None:
    """The source :func:`load_dataset` reads: the named data set ``dataset``, or the path
    ``data`` (a file or an image folder), even one spelled like a data set's name;
    ``default`` when neither is given.

    >>> source_of(), source_of("mnist"), source_of(data="mnist")
    ('digits', 'mnist', './mnist')
    """
    if dataset is not None and data is not None:
        raise ProbmutError("give either a named dataset or data (a file or folder), not both",
                           option="data")
    if data is not None:
        data = os.fspath(data)
        return os.path.join(".", data) if data in DATASETS else data
    if dataset is not None and dataset not in DATASETS:
        raise ProbmutError(f"unknown dataset {dataset!r}; use one of {', '.join(DATASETS)} (or "
                           "data: a file or an image folder)", option="dataset")
    return default if dataset is None else dataset


def _share(value, what: str, option: str) -> None:
    if value is not None and not 0 < value < 1:
        raise ProbmutError(f"the {what} must be a share between 0 and 1 (exclusive), got "
                           f"{value:g}", option=option)


def check_data_arguments(source: str, *, image_size: str | None = None,
                         test_split: float | None = None,
                         validation_split: float | None = None) -> DataSource:
    """Check what can be checked without loading anything heavy (before TensorFlow);
    the source's :class:`DataSource`.

    >>> check_data_arguments("digits", validation_split=1.5)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: the validation split must be a share between 0 and 1 (exclusive),
    got 1.5
    """
    _share(test_split, "test split", "test_split")
    _share(validation_split, "validation split", "validation_split")
    parse_image_size(image_size)
    claimed = next((candidate for candidate in SOURCES if candidate.claims(source)), None)
    if (claimed is None or claimed.kind != "image folder") and (
            image_size is not None or test_split is not None):
        raise ProbmutError("an image size and a test split are for an image folder",
                           option="image_size" if image_size is not None else "test_split")
    kind = data_source(source)
    kind.check(source, test_split)
    return kind


@functools.lru_cache(maxsize=4)
def load_dataset(source: str, *, task: str = "classification", image_size: str | None = None,
                 test_split: float | None = None, validation_split: float | None = None,
                 download_timeout: float = DOWNLOAD_TIMEOUT) -> Dataset:
    """Load a dataset by name (see ``DATASETS``), from an ``.npz`` file or an image folder,
    for a model of ``task`` (the named data sets and image folders are classification).

    Raises :class:`ProbmutError` for bad arguments, a data set Keras cannot load or
    download, or a malformed file. Results are cached per process.
    """
    kind = check_data_arguments(source, image_size=image_size, test_split=test_split,
                                validation_split=validation_split)
    option = "dataset" if kind.named else "data"
    if task not in kind.tasks:
        raise ProbmutError(f"a {task} model trains on a file FILE.npz with {TASK_ARRAYS[task]} "
                           "and the same _test arrays", option=option)
    data = kind.load(source, task, image_size=parse_image_size(image_size),
                     test_split=test_split, download_timeout=download_timeout)
    if validation_split is not None:
        from probmut.train.tasks import strata

        train, val = stratified_split(strata(data.y_train, task), validation_split)
        split = (data.split + "; " if data.split else "") + (
            f"validation: {validation_split:g} of each training class (seed {SPLIT_SEED})")
        data = dataclasses.replace(data, x_train=take(data.x_train, train),
                                   y_train=data.y_train[train], x_val=take(data.x_train, val),
                                   y_val=data.y_train[val], split=split)
    where = f"dataset {source!r}" if kind.named else source
    check_training_set(where, data.x_train, data.y_train, task, option=option)
    for part, x in (("validation", data.x_val), ("test", data.x_test)):
        if x is not None and n_rows(x) == 0:
            raise ProbmutError(f"{where}: the {part} set holds no samples", option=option)
    return data
