"""Training data: Keras' cache and downloads (offline, timeout), image folders, splits,
provenance in the manifest, and the refused resume with other data.

Nothing here touches the network: Keras' ``urlretrieve`` is replaced by a function that
fails as an offline machine does (or hangs, for the timeout), and the Keras cache is a
temporary ``KERAS_HOME``.
"""

import hashlib
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train import datasets
from probmut.train.datasets import KERAS_DATASETS, load_dataset

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """An empty Keras home, seen by probmut (``$KERAS_HOME``) and by an already imported
    Keras (which read ``$KERAS_HOME`` when it was imported)."""
    pytest.importorskip("tensorflow")
    from keras.src.backend import config

    home = tmp_path / "keras_home"
    home.mkdir()
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.setattr(config, "_KERAS_DIR", str(home))
    load_dataset.cache_clear()
    yield home
    load_dataset.cache_clear()


def _offline(calls):
    """What ``urlretrieve`` does without network (as measured on this machine)."""
    def urlretrieve(url, filename, reporthook=None):
        calls.append((url, filename))
        raise urllib.error.URLError(OSError(-2, "Name or service not known"))
    return urlretrieve


@pytest.fixture
def offline(monkeypatch):
    from keras.src.utils import file_utils

    calls = []
    monkeypatch.setattr(file_utils, "urlretrieve", _offline(calls))
    return calls


@pytest.mark.train
@pytest.mark.parametrize("name", list(KERAS_DATASETS))
def test_offline_download_is_one_clear_line(keras_home, offline, name):
    with pytest.raises(ProbmutError) as error:
        load_dataset(name)
    message = str(error.value)
    first = KERAS_DATASETS[name][0]
    cache = keras_home / "datasets"
    # Keras asked for exactly the file our registry names, at the place we name
    assert offline == [(first.origin, str(cache / first.path))]
    assert "\n" not in message
    assert f"{first.path} is not in the Keras cache ({cache})" in message
    assert "URL fetch failure" in message and "Name or service not known" in message
    assert f"download {first.origin} to {cache / first.path}" in message
    assert "or train on a file FILE.npz or an image folder DIR" in message
    assert error.value.option == "dataset"  # the command adds (--dataset)


@pytest.mark.train
@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_the_command_stops_with_exit_2_before_training(keras_home, offline, tmp_path, cli,
                                                       command):
    out = tmp_path / "out"
    (tmp_path / "m.keras").write_bytes(b"")
    models = [tmp_path / "m.keras"] if command == "evaluate" else []
    ran = cli(command, *models, "--dataset", "fashion_mnist", "--out", out)
    assert ran.code == 2 and ran.out == ""
    err = ran.err.strip().splitlines()
    assert err[-1].startswith(f"probmut {command}: error: dataset 'fashion_mnist': "
                              "fashion-mnist/train-labels-idx1-ubyte.gz is not in the Keras cache")
    assert "and the other 3 files of fashion_mnist" in err[-1]
    # the note before Keras' download names no command (evaluate's said "probmut train:")
    assert err[0].startswith("probmut: fashion_mnist: fashion-mnist/train-labels-idx1-ubyte.gz "
                             "is not in the Keras cache")
    assert not out.exists()


@pytest.mark.train
def test_a_download_that_does_not_start_is_given_up(keras_home, monkeypatch):
    import socket

    from keras.src.utils import file_utils

    release = threading.Event()

    def hanging(url, filename, reporthook=None):  # a DNS or proxy that never answers
        release.wait(30)
        raise urllib.error.URLError("released by the test")

    monkeypatch.setattr(file_utils, "urlretrieve", hanging)
    default = socket.getdefaulttimeout()
    start = time.monotonic()
    try:
        with pytest.raises(ProbmutError, match=r"the download of mnist.npz did not start within "
                                               r"0.3 s; download https") as refused:
            load_dataset("mnist", download_timeout=0.3)
        assert refused.value.option == "download_timeout"
        assert time.monotonic() - start < 5
        assert socket.getdefaulttimeout() == default  # the socket timeout is restored
    finally:
        release.set()


def _write_mnist(path, n_train=30, n_test=10, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {"x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "y_train": np.arange(n_train, dtype=np.uint8) % 10,
              "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "y_test": np.arange(n_test, dtype=np.uint8) % 10}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return arrays


@pytest.mark.train
def test_a_cached_file_is_read_through_keras_without_downloading(keras_home, offline,
                                                                   monkeypatch):
    from keras.src.utils import file_utils

    path = keras_home / "datasets" / "mnist.npz"
    arrays = _write_mnist(path)
    # our synthetic file stands for the real one: let it pass Keras' checksum
    monkeypatch.setattr(file_utils, "validate_file", lambda *args, **kwargs: True)
    data = load_dataset("mnist", validation_split=0.2)
    assert offline == []  # nothing was downloaded
    # 3 samples per class: round(0.6) = 1 of each of the 10 classes is held out
    assert data.x_train.shape == (20, 28, 28, 1) and data.x_val.shape == (10, 28, 28, 1)
    assert np.array_equal(data.x_test[..., 0], arrays["x_test"] / np.float32(255))
    provenance = data.provenance()
    assert provenance["files"] == {"mnist.npz": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert provenance["source"].startswith("keras.datasets.mnist (https://storage.googleapis")
    assert (provenance["train"], provenance["validation"], provenance["test"]) == (20, 10, 10)


@pytest.mark.train
def test_a_damaged_cached_file_is_named_as_such(keras_home, offline):
    _write_mnist(keras_home / "datasets" / "mnist.npz")  # fails Keras' checksum
    with pytest.raises(ProbmutError, match="Keras could not load it from its cache .*checksum"):
        load_dataset("mnist")
    assert len(offline) == 1  # Keras tried to download it again


# ---------------------------------------------------------------- image folders

def _png(path, image):
    import tensorflow as tf

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tf.io.encode_png(image).numpy())


def _image(value, shape):
    """An image whose every pixel is ``value``: its label can be read back from it."""
    return np.full(shape, value, dtype=np.uint8)


def _image_folder(root, per_class, shape, split=True):
    """3 classes ('cat', 'dog', 'emu'); image k of class c has pixel value 40 c + k + 1."""
    for c, name in enumerate(["cat", "dog", "emu"]):
        for k in range(per_class):
            part = ("train" if k < per_class - 2 else "test") if split else ""
            _png(root / part / name / f"{k}.png", _image(40 * c + k + 1, shape))
    return root


@pytest.mark.train
def test_image_folder_with_train_and_test_sub_folders(tmp_path):
    pytest.importorskip("tensorflow")
    folder = _image_folder(tmp_path / "pets", per_class=6, shape=(10, 12, 1))
    data = load_dataset(str(folder))
    assert data.x_train.shape == (12, 10, 12, 1) and data.x_test.shape == (6, 10, 12, 1)
    assert data.y_train.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    # every image kept its label and its pixels (no resize: the first image's size)
    values = np.round(data.x_train[:, 0, 0, 0] * 255).astype(int)
    assert np.array_equal((values - 1) // 40, data.y_train)
    assert np.all(data.x_train == data.x_train[:, :1, :1, :])
    provenance = data.provenance()
    assert provenance["split"] == "test: the test/ sub-folder"
    assert "18 images, grayscale, resized to 10x12" in provenance["source"]
    assert provenance["class_names"] == ["cat", "dog", "emu"]
    assert list(provenance["files"]) == ["pets/"]


@pytest.mark.train
def test_image_folder_with_a_test_split_and_resizing(tmp_path):
    pytest.importorskip("tensorflow")
    folder = _image_folder(tmp_path / "flat", per_class=8, shape=(9, 9, 3), split=False)
    data = load_dataset(str(folder), test_split=0.25, image_size="4x5")
    assert data.x_train.shape == (18, 4, 5, 3) and data.x_test.shape == (6, 4, 5, 3)
    assert np.bincount(data.y_test).tolist() == [2, 2, 2]
    values = np.round(np.concatenate([data.x_train, data.x_test])[:, 0, 0, 0] * 255).astype(int)
    assert np.array_equal((values - 1) // 40, np.concatenate([data.y_train, data.y_test]))
    # train and test are disjoint: 24 different images
    assert len(np.unique(values)) == 24


@pytest.mark.parametrize("layout, args, message, option", [
    ({"a/x.png": 1}, {"test_split": 0.2}, "at least two", "data"),
    ({"a/x.png": 1, "b/notes.txt": 1}, {"test_split": 0.2}, "class folder 'b' holds no images",
     "data"),
    ({"a/x.png": 1, "b/y.png": 1}, {}, "give a test split SHARE", "test_split"),
    ({"train/a/x.png": 1, "train/b/x.png": 1, "test/a/x.png": 1, "test/c/x.png": 1}, {},
     "the same class folders", "data"),
    ({"train/a/x.png": 1, "train/b/x.png": 1, "test/a/x.png": 1, "test/b/x.png": 1},
     {"test_split": 0.2}, "a test split is for a folder of class folders only", "test_split"),
    ({"a/x.png": 1, "b/y.png": 1}, {"test_split": 1.0}, "the test split must be a share",
     "test_split"),
    ({"a/x.png": 1, "b/y.png": 1}, {"test_split": 0.2, "image_size": "big"},
     "the image size must be", "image_size"),
])
def test_image_folder_problems_are_clear_errors(tmp_path, layout, args, message, option):
    for name in layout:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"not read before the checks")
    with pytest.raises(ProbmutError, match=message) as refused:
        datasets.check_data_arguments(str(tmp_path), **args)
    assert refused.value.option == option  # the setting at fault, not a flag in the words


@pytest.mark.parametrize("source, args, message, option", [
    ("digits", {"test_split": 0.2}, "for an image folder", "test_split"),
    ("digits", {"validation_split": 0}, "the validation split must be a share",
     "validation_split"),
    ("missing.npz", {}, "no such file or folder", "data"),
    ("no_such_set", {}, "unknown dataset 'no_such_set'", "data"),
])
def test_data_argument_problems_are_clear_errors(source, args, message, option):
    with pytest.raises(ProbmutError, match=message) as refused:
        datasets.check_data_arguments(source, **args)
    assert refused.value.option == option


def test_data_arguments_are_checked_before_tensorflow_is_imported(tmp_path):
    # A fresh interpreter, not the cli fixture: this one may have imported TensorFlow.
    code = ("import sys; from probmut.cli.main import main; "
            f"code = main(['train', '--data', {str(tmp_path)!r}, '--out', 'x']); "
            "assert code == 2, code; assert 'tensorflow' not in sys.modules, 'imported'")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "has no train/ and test/ sub-folders: give a test split SHARE" in result.stderr
    assert result.stderr.rstrip().endswith("(--test-split)")


def test_the_bundled_digits_are_scikit_learns_split_read_without_importing_it():
    """load_digits reads scikit-learn's file and its stored split: the arrays, in order,
    of scikit-learn's own load_digits and train_test_split, and no scikit-learn import."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    from probmut.train.datasets.bundled import load_digits

    x, y = datasets.load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, stratify=y,
                                                        random_state=0)
    data = load_digits()
    assert np.array_equal(data.x_train, (x_train.reshape(-1, 8, 8, 1) / 16).astype("float32"))
    assert np.array_equal(data.x_test, (x_test.reshape(-1, 8, 8, 1) / 16).astype("float32"))
    assert np.array_equal(data.y_train, y_train) and np.array_equal(data.y_test, y_test)
    code = ("import sys; from probmut.train.datasets import load_dataset; "
            "load_dataset('digits'); print('sklearn' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_stratified_split_holds_out_the_rounded_share_of_every_class():
    y = np.repeat(np.arange(4), [10, 7, 3, 1])
    kept, held = datasets.stratified_split(y, 0.3)
    assert np.bincount(y[held], minlength=4).tolist() == [3, 2, 1, 0]  # 3.0, 2.1, 0.9, 0.3
    assert np.array_equal(np.sort(np.concatenate([kept, held])), np.arange(len(y)))
    assert np.array_equal(held, datasets.stratified_split(y, 0.3)[1])  # fixed


# ---------------------------------------------------------------- provenance and resume

def _tiny_npz(path, seed):
    rng = np.random.default_rng(seed)
    np.savez(path, x_train=rng.random((40, 4, 4), dtype=np.float32),
             y_train=np.arange(40) % 2, x_test=rng.random((10, 4, 4), dtype=np.float32),
             y_test=np.arange(10) % 2)


@pytest.mark.train
def test_provenance_goes_into_the_manifest_and_other_data_is_refused(tmp_path):
    pytest.importorskip("tensorflow")
    from probmut.train.backends import Serial
    from probmut.train.models import MODELS
    from probmut.train.run import run_populations
    from probmut.train.work import RunSettings

    source = tmp_path / "tiny.npz"
    _tiny_npz(source, seed=0)
    settings = RunSettings(str(source), "mlp", MODELS["mlp"].config.replace(epochs=1))
    out = tmp_path / "run"

    def run():
        load_dataset.cache_clear()
        data = load_dataset(str(source), validation_split=0.25)
        with Serial(1, {"dataset": data}) as backend:
            run_populations(settings, [], 1, out, backend, data, name="tiny", progress=False)
        return data

    data = run()
    recorded = tomllib.loads((out / "manifest.toml").read_text())["models"]["tiny"]["data"]
    assert recorded == {
        "name": "tiny", "task": "classification", "source": f"file {source}", "train": 30,
        "validation": 10, "test": 10,
        "classes": 2, "input_shape": [4, 4, 1], "fingerprint": data.fingerprint,
        "split": "the file's train and test sets; validation: 0.25 of each training class "
                 "(seed 0)",
        "files": {"tiny.npz": hashlib.sha256(source.read_bytes()).hexdigest()}}
    run()  # the same data resumes (nothing to do)
    _tiny_npz(source, seed=1)  # same path and shapes, other numbers
    with pytest.raises(ProbmutError, match=rf"other settings: data.fingerprint "
                                           rf"{data.fingerprint[:12]} before, \w{{12}} now; use "):
        run()


# ---------------------------------------------------------------- data that cannot train

def _digits_arrays():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = x.reshape(-1, 8, 8) / 16
    return {"x_train": x[:300], "y_train": y[:300], "x_test": x[300:400], "y_test": y[300:400]}


def _with(**changes):
    return lambda path: np.savez(path, **(_digits_arrays() | changes))


def _nan_pixel(part):
    def write(path):
        arrays = _digits_arrays()
        arrays[part] = arrays[part].copy()
        arrays[part][5, 3, 3] = np.nan if part == "x_train" else np.inf
        np.savez(path, **arrays)
    return write


def _bytes(content):
    return lambda path: path.write_bytes(content)


def _truncated(path):
    _with()(path)
    path.write_bytes(path.read_bytes()[:1000])


def _plain_npy(path):
    with open(path, "wb") as handle:
        np.save(handle, _digits_arrays()["x_train"])


@pytest.mark.train
@pytest.mark.parametrize("write, says", [
    (_nan_pixel("x_train"), "x_train holds NaN or infinite values (the first in sample 5)"),
    (_nan_pixel("x_test"), "x_test holds NaN or infinite values (the first in sample 5)"),
    (_with(y_train=np.zeros(300, int)),
     "the training set holds a single class (0); a classifier needs samples of at least two"),
    (_with(x_test=np.zeros((0, 8, 8)), y_test=np.zeros(0, int)), "x_test is empty"),
    (_with(x_train=np.array([["a"] * 8] * 8 * 300).reshape(300, 8, 8)),
     "x_train holds <U1 values, not numbers"),
    (_bytes(b""), "the file is empty"),
    (_bytes(bytes(range(256)) * 4), "not an .npz archive (no zip archive)"),
    (_truncated, "a damaged or truncated .npz archive"),
    (_plain_npy, "a .npy array, not an .npz archive"),
], ids=["nan pixel", "inf in x_test", "one class", "empty x_test", "strings", "empty file",
        "random bytes", "truncated", "plain npy"])
def test_data_that_cannot_train_is_refused_in_one_line(tmp_path, cli, write, says):
    pytest.importorskip("tensorflow")
    path = tmp_path / "data.npz"
    write(path)
    load_dataset.cache_clear()
    error = cli.refused("train", "--data", path, "--out", tmp_path / "out", "--instances", 1,
                        "--epochs", 1, says=says)
    assert error.startswith(f"probmut train: error: {path}: ") and error.endswith(" (--data)")
    assert not (tmp_path / "out").exists()  # nothing trained, nothing written


@pytest.mark.train
def test_an_image_folder_with_a_corrupt_image_names_it(tmp_path):
    pytest.importorskip("tensorflow")
    folder = _image_folder(tmp_path / "pets", per_class=6, shape=(10, 12, 1))
    broken = folder / "train" / "dog" / "2.png"
    broken.write_bytes(b"not a png at all")
    with pytest.raises(ProbmutError) as refused:
        load_dataset(str(folder))
    assert refused.value.option == "data"
    assert str(refused.value) == (f"{folder}: cannot read the image {broken} (Unknown "
                                  "image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP "
                                  "required.); remove or replace it")


@pytest.mark.train
@pytest.mark.parametrize("mutation, says", [
    ("delete_training_data:100", "delete_training_data:100: the mutated training set holds no "
                                 "samples (--mutation)"),
    ("delete_training_data:100@0", "delete_training_data:100@0: the mutated training set holds "
                                   "a single class (1); a classifier needs samples of at least "
                                   "two (--mutation)"),
])
def test_a_mutation_that_leaves_nothing_to_learn_is_refused_before_training(
        tmp_path, cli, mutation, says):
    pytest.importorskip("tensorflow")
    path = tmp_path / "two_classes.npz"
    arrays = _digits_arrays()
    keep = arrays["y_train"] < 2
    np.savez(path, x_train=arrays["x_train"][keep], y_train=arrays["y_train"][keep],
             x_test=arrays["x_test"], y_test=arrays["y_test"] % 2)
    load_dataset.cache_clear()
    error = cli.refused("train", "--data", path, "--out", tmp_path / "out", "--instances", 1,
                        "--epochs", 1, "--mutation", mutation)
    assert error == f"probmut train: error: {says}"
    assert not (tmp_path / "out").exists()


def test_mutated_training_data_with_nan_is_refused():
    x = np.ones((4, 3))
    x[2, 1] = np.nan
    with pytest.raises(ProbmutError, match="holds NaN or infinite values .the first in sample 2"):
        datasets.check_training_set("m", x, np.array([0, 1, 0, 1]),
                                    "classification", "mutated training set")
