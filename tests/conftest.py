"""Shared fixtures: the bundled paper data and the reference data beside the project
(or where $PROBMUT_REFERENCE points, e.g. from a git worktree)."""

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from probmut.io.manifest import Manifest
from probmut.io.populations import pair, read_population
from probmut.train.backends import configure_tensorflow, set_tensorflow_environment

set_tensorflow_environment()  # before any test module imports TensorFlow: the kernels of a run


_tensorflow_configured = False


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """Once a test module has imported TensorFlow, size its thread pools as `probmut
    train` does (one thread) before any test runs it: whichever test a worker runs
    first, the pools are those of a run."""
    global _tensorflow_configured
    if not _tensorflow_configured and "tensorflow" in sys.modules:
        configure_tensorflow(1)
        _tensorflow_configured = True

ROOT = Path(__file__).resolve().parent.parent


def interruptible():
    """``preexec_fn`` of a command a test stops with SIGINT: Ctrl-C as a terminal delivers
    it (a shell's background job, or a test runner, may hand children SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


RAW = ROOT / "raw_data"
REFERENCE = Path(os.environ.get("PROBMUT_REFERENCE",
                                ROOT.parent / "shared" / "reference" / "pmt"))


@pytest.fixture(scope="session")
def manifest():
    return Manifest.load(RAW / "manifest.toml")


@pytest.fixture(scope="session")
def mnist_delete(manifest):
    """MNIST delete_training_data: (healthy, [mutants]) with magnitudes as names."""
    mutation = manifest.mutation("mnist", "delete_training_data")
    healthy = read_population(mutation.healthy, name="healthy")
    mutants = [read_population(f, name=m) for m, f in zip(mutation.magnitudes, mutation.files,
                                                                  strict=True)]
    return healthy, mutants


def real_draws(manifest, count: int, seed: int, healthy_pairs: bool = False):
    """``count`` random 20-vs-20 draws of the bundled populations (rows of two arrays):
    healthy against each mnist/movie/lenet mutant in turn, and against itself too with
    ``healthy_pairs`` (where p spreads over [0, 1])."""
    rng = np.random.default_rng(seed)
    pairs = []
    for mutation in manifest.mutations():
        if mutation.model.endswith("_dc"):
            continue
        healthy = read_population(mutation.healthy).values
        if healthy_pairs:
            pairs.append((healthy, healthy))
        pairs += [(healthy, read_population(path).values) for path in mutation.files]
    xs, ys = [], []
    for t in range(count):
        h, m = pairs[t % len(pairs)]
        xs.append(rng.choice(h, 20, replace=False))
        ys.append(rng.choice(m, 20, replace=False))
    return np.array(xs), np.array(ys)


def real_paired_draws(manifest, count: int, seed: int, sample: int = 20):
    """``count`` random paired draws of ``sample`` instance ids from the bundled model-level
    mutations (mnist and lenet weights_fuzzing and neurons_freezing, every magnitude in
    turn), paired by instance id: rows of healthy and mutant accuracies of the same ids."""
    rng = np.random.default_rng(seed)
    pairs = []
    for model in ("mnist", "lenet"):
        for name in ("weights_fuzzing", "neurons_freezing"):
            mutation = manifest.mutation(model, name)
            healthy = read_population(mutation.healthy)
            pairs += [pair(healthy, read_population(path)) for path in mutation.files]
    xs, ys = [], []
    for t in range(count):
        h, m = pairs[t % len(pairs)]
        ids = rng.choice(len(h), sample, replace=False)
        xs.append(h.values[ids])
        ys.append(m.values[ids])
    return np.array(xs), np.array(ys)


@pytest.fixture(scope="session")
def reference():
    if not REFERENCE.exists():
        pytest.skip("the reference data (../shared/reference/pmt) is not beside the project")
    return REFERENCE
