"""Saved kill rates (probmut.io.arrays): the paper's rates as counts, integer counts as
they are, anything else refused with its reason."""

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.io.arrays import load_kill_rates

from ..conftest import KILL_RATES


def test_kill_rates_become_counts(tmp_path):
    counts = load_kill_rates(KILL_RATES / "mnist_orig.npy", 100)
    assert counts.dtype == np.int64 and counts.shape == (100,) and counts[0] == 7
    np.save(tmp_path / "odd.npy", np.array([0.123, 0.5]))
    with pytest.raises(ProbmutError, match="not kill rates of 100 trials"):
        load_kill_rates(tmp_path / "odd.npy", 100)


def test_counts_are_read_as_counts_and_bad_arrays_are_refused(tmp_path):
    np.save(tmp_path / "counts.npy", np.array([[0, 3], [100, 57]]))
    counts = load_kill_rates(tmp_path / "counts.npy", 100)
    assert counts.dtype == np.int64 and counts.tolist() == [[0, 3], [100, 57]]
    for name, array, says in [("over.npy", np.array([101]), "not kill rates of 100 trials"),
                              ("nan.npy", np.array([0.5, np.nan]), "NaN/infinite"),
                              ("empty.npy", np.zeros(0), "empty"),
                              ("text.npy", np.array(["a"]), r"not kill rates \(numbers\)")]:
        np.save(tmp_path / name, array)
        with pytest.raises(ProbmutError, match=says):
            load_kill_rates(tmp_path / name, 100)
    np.savez(tmp_path / "archive.npz", rates=np.zeros(3))
    with pytest.raises(ProbmutError, match="an .npz archive"):
        load_kill_rates(tmp_path / "archive.npz", 100)


def test_a_header_claiming_more_than_the_file_holds_names_the_file(tmp_path):
    """Issue 57: a 128-byte .npy whose header claims 8 TiB ended in "not enough memory",
    naming no file."""
    path = tmp_path / "huge.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False,
                                                      "shape": (2**40,)})
    with pytest.raises(ProbmutError, match=r"huge.npy: its header claims 1,099,511,627,776 "
                                           r"values of float64 \(8,796,093,022,208 bytes\), but "
                                           "the file holds 0 bytes of data"):
        load_kill_rates(path, 100)
    np.save(path, np.full(10, 0.5))
    with open(path, "r+b") as handle:  # cut short: the header promises 10 values
        handle.truncate(path.stat().st_size - 8)
    with pytest.raises(ProbmutError, match="claims 10 values of float64 .80 bytes., but the "
                                           "file holds 72 bytes"):
        load_kill_rates(path, 100)
