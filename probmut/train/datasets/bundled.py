"""The bundled data set: scikit-learn's 8x8 digits, offline (the trainer's default).

The digits are read from the file scikit-learn ships, ``sklearn/datasets/data/
digits.csv.gz``, without importing scikit-learn (over a second of every command's
start-up). The fixed split, scikit-learn's ``train_test_split(x, y, test_size=0.25,
stratify=y, random_state=0)``, is stored as its rows in ``digits_split.txt`` beside this
module; tests/train/test_datasets.py checks it against scikit-learn.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets.dataset import Dataset, normalised, sha256_file

SPLIT_FILE = Path(__file__).with_name("digits_split.txt")


def digits_file() -> Path:
    """scikit-learn's digits file, found without importing scikit-learn."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ProbmutError("the bundled digits come with scikit-learn, which is not installed: "
                           "install probmut[train], e.g. pip install 'probmut[train]'")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    if not path.is_file():
        raise ProbmutError(f"scikit-learn's digits file is missing: {path}")
    return path


def split_rows() -> dict[str, np.ndarray]:
    """The fixed split's rows: ``{"train": ..., "test": ...}`` in scikit-learn's order.

    >>> {part: len(rows) for part, rows in split_rows().items()}
    {'train': 1347, 'test': 450}
    """
    parts: dict[str, list[int]] = {}
    part = None
    for line in SPLIT_FILE.read_text().splitlines():
        if line.startswith("["):
            part = parts.setdefault(line.strip("[]"), [])
        elif line and not line.startswith("#"):
            part.extend(int(row) for row in line.split())
    return {name: np.asarray(rows) for name, rows in parts.items()}


def load_digits() -> Dataset:
    """scikit-learn's bundled 8x8 digits, one fixed stratified quarter held out for testing
    (every instance is evaluated on the same 450 inputs)."""
    bundled = digits_file()
    table = np.loadtxt(bundled, delimiter=",")
    x, y = table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(int)
    rows = split_rows()
    return normalised("digits", x[rows["train"]], y[rows["train"]], x[rows["test"]],
                      y[rows["test"]], scale=16.0,
                      source="sklearn.datasets.load_digits (scikit-learn "
                             f"{importlib.metadata.version('scikit-learn')})",
                      files={"sklearn/datasets/data/digits.csv.gz": sha256_file(bundled)},
                      split="test: 0.25 stratified (scikit-learn train_test_split, "
                            "random_state 0)")
