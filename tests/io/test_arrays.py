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
