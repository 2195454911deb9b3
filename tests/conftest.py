"""Shared fixtures: the bundled paper data and the reference data beside the project."""

from pathlib import Path

import pytest

from probmut.data import read_population
from probmut.experiments import Manifest

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "raw_data"
REFERENCE = ROOT.parent / "shared" / "reference" / "pmt"


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


@pytest.fixture(scope="session")
def reference():
    if not REFERENCE.exists():
        pytest.skip("the reference data (../shared/reference/pmt) is not beside the project")
    return REFERENCE
