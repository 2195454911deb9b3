"""The bundled data set: scikit-learn's 8x8 digits, offline (the trainer's default)."""

from __future__ import annotations

from pathlib import Path

from probmut.train.datasets.dataset import Dataset, normalised, sha256_file


def load_digits() -> Dataset:
    """scikit-learn's bundled 8x8 digits, one fixed stratified quarter held out for testing."""
    import sklearn
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    x, y = datasets.load_digits(return_X_y=True)
    # One fixed stratified split, so every instance is evaluated on the same 450 inputs.
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, stratify=y, random_state=0)
    bundled = Path(sklearn.__file__).parent / "datasets" / "data" / "digits.csv.gz"
    return normalised("digits", x_train.reshape(-1, 8, 8), y_train,
                      x_test.reshape(-1, 8, 8), y_test, scale=16.0,
                      source=f"sklearn.datasets.load_digits (scikit-learn {sklearn.__version__})",
                      files={"sklearn/datasets/data/digits.csv.gz": sha256_file(bundled)},
                      split="test: 0.25 stratified (scikit-learn train_test_split, random_state 0)")
