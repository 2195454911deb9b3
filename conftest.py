"""Run the docstring examples of probmut's modules as tests (``--doctest-modules``),
skipping modules whose optional extra (TensorFlow, PyMC, PyTorch) is not installed (CI
sets PROBMUT_REQUIRE_TORCH: PyTorch's then fail); set
TensorFlow up as `probmut train` does before any test or example runs it; and keep
every temporary file of the session in one folder that is removed at its end."""

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from probmut.train.tf_setup import configure_tensorflow, set_tensorflow_environment

set_tensorflow_environment()  # before any test module imports TensorFlow: the kernels of a run

collect_ignore_glob = []
if importlib.util.find_spec("tensorflow") is None:
    collect_ignore_glob.append("probmut/train/*")
if importlib.util.find_spec("pymc") is None:
    collect_ignore_glob.append("probmut/bayes/*.py")
if importlib.util.find_spec("torch") is None and not os.environ.get("PROBMUT_REQUIRE_TORCH"):
    collect_ignore_glob.append("probmut/train/torch/*.py")  # CI requires them (.ci/run)


_FOLDER = pytest.StashKey[str]()


def pytest_configure(config):
    """Temporary files go to one folder of this process (pytest's own, the doctests'
    ``tempfile.mkdtemp()``, TensorFlow's autograph files, the documents' commands): the
    tests leave nothing behind in the system's temporary folder. Each xdist worker
    makes its own inside the controller's."""
    folder = tempfile.mkdtemp(prefix="pm-")
    config.stash[_FOLDER] = folder
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # read TMPDIR again


def pytest_unconfigure(config):
    shutil.rmtree(config.stash.get(_FOLDER, ""), ignore_errors=True)



_TRAIN_PACKAGE = Path(__file__).resolve().parent / "probmut" / "train"
_tensorflow_configured = False


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """Size TensorFlow's thread pools as `probmut train` does (one thread) before the
    first test that may run it: one whose module imported TensorFlow, or a docstring
    example of probmut.train. Whichever test a process runs first, the pools are those
    of a run, and a command run in the test's process does not warn that they differ."""
    global _tensorflow_configured
    if _tensorflow_configured:
        return
    if "tensorflow" in sys.modules or _TRAIN_PACKAGE in Path(item.path).resolve().parents:
        configure_tensorflow(1)
        _tensorflow_configured = True
