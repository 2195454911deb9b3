"""Run the docstring examples of probmut's modules as tests (``--doctest-modules``),
skipping modules whose optional extra (TensorFlow, PyMC) is not installed; and keep
every temporary file of the session in one folder that is removed at its end."""

import importlib.util
import os
import shutil
import tempfile

import pytest

collect_ignore_glob = []
if importlib.util.find_spec("tensorflow") is None:
    collect_ignore_glob.append("probmut/train/*")
if importlib.util.find_spec("pymc") is None:
    collect_ignore_glob.append("probmut/bayes*.py")


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

