"""Keras' own data sets (``mnist``, ``fashion_mnist``, ``cifar10``, ``cifar100``): read from
the Keras cache (``$KERAS_HOME/datasets``, default ``~/.keras/datasets``), downloaded into
it on first use under a watchdog (:mod:`probmut.train.datasets.download`)."""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.train.datasets.dataset import Dataset, flat_error, normalised, sha256_file
from probmut.train.datasets.download import DownloadTimeout, watched


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


def _placement(name: str, missing: list[CacheFile], cache: Path) -> str:
    first = missing[0]
    more = (f" (and the other {len(missing) - 1} files of {name} from the same address into "
            f"{(cache / first.path).parent})" if len(missing) > 1 else "")
    return (f"download {first.origin} to {cache / first.path}{more}, or copy "
            "~/.keras/datasets from a machine where "
            f"`python -c \"import keras; keras.datasets.{name}.load_data()\"` ran; "
            "or train on a file FILE.npz or an image folder DIR")


def load_keras_dataset(name: str, timeout: float) -> Dataset:
    """Keras' data set ``name`` from its cache, downloaded into it on first use; a
    download that does not start within ``timeout`` seconds is given up (a one-line
    error naming the missing file, where to put it, and the alternatives)."""
    cache = keras_cache_dir()
    files = KERAS_DATASETS[name]
    missing = [f for f in files if not (cache / f.path).is_file()]
    if missing:
        print(f"probmut: {name}: {missing[0].path} is not in the Keras cache ({cache}); "
              f"Keras downloads it (a download that does not start within {timeout:g} s is "
              "given up)", file=sys.stderr)
    import keras

    loader = getattr(keras.datasets, name).load_data
    try:
        with contextlib.redirect_stdout(sys.stderr):  # Keras' download progress: stderr
            (x_train, y_train), (x_test, y_test) = watched(
                loader, timeout, [cache / f.path for f in files])
    except DownloadTimeout:
        raise ProbmutError(f"dataset {name!r}: the download of {(missing or files)[0].path} did "
                           f"not start within {timeout:g} s; "
                           + _placement(name, missing or files, cache),
                           option="download_timeout") from None
    except Exception as error:
        if missing:
            problem = (f"{missing[0].path} is not in the Keras cache ({cache}) and Keras "
                       f"could not download it ({flat_error(error)})")
        else:
            problem = (f"Keras could not load it from its cache ({cache}): {flat_error(error)}; "
                       "a cached file that fails Keras' checksum is downloaded again, so "
                       "remove a damaged file or replace it")
        raise ProbmutError(f"dataset {name!r}: {problem}; "
                           + _placement(name, missing or files, cache), option="dataset") from None
    origins = ", ".join(sorted({f.origin.rsplit("/", 1)[0] for f in files}))
    return normalised(name, x_train, y_train, x_test, y_test, scale=255.0,
                      source=f"keras.datasets.{name} ({origins})",
                      files={f.path: sha256_file(cache / f.path) for f in files},
                      split="Keras' train and test sets")
