"""What every reader checks before reading (issue 44): a regular file of a size its format
can have, named for what it is; and no file left open by a damaged archive."""

import gc
import os
import time
import warnings

import numpy as np
import pytest

import probmut.io.populations
from probmut.errors import ProbmutError
from probmut.io.arrays import load_kill_rates
from probmut.io.files import checked_input
from probmut.io.manifest import Manifest
from probmut.io.outcomes import load_outcomes, save_outcomes
from probmut.io.populations import read_population


def test_a_device_is_refused_at_once_not_read():
    """``probmut kill healthy.csv /dev/zero`` grew to 22 GB before the kernel killed it."""
    start = time.monotonic()
    for read in (read_population, lambda path: load_kill_rates(path, 100),
                 load_outcomes, Manifest.load):
        with pytest.raises(ProbmutError, match="/dev/zero: a device, not a regular file"):
            read("/dev/zero")
    assert time.monotonic() - start < 5  # refused from its metadata, nothing read


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)  # opening it to read would block until someone writes
    with pytest.raises(ProbmutError, match="pipe.csv: a pipe, not a regular file; give a "
                                           "population CSV file"):
        read_population(fifo)


def test_a_population_file_larger_than_any_population_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "big.csv"
    path.write_text("instance,accuracy\n" + "".join(f"{i},0.9\n" for i in range(100)))
    assert len(read_population(path)) == 100
    monkeypatch.setattr(probmut.io.populations, "MAX_FILE_BYTES", 500)
    with pytest.raises(ProbmutError, match=rf"big.csv: {path.stat().st_size} bytes, more than "
                                           r"a population CSV file can hold \(500 bytes at "
                                           r"most\)"):
        read_population(path)


def test_the_real_limit_is_above_any_population_probmut_writes():
    """1 GiB: DeepCrime's format for 1,000 instances on 500,000 test inputs."""
    assert probmut.io.populations.MAX_FILE_BYTES == 2**30
    assert 1000 * 500_000 * 2 <= 2**30


def test_a_symlink_loop_is_named_as_one(tmp_path):
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    with pytest.raises(ProbmutError, match="loop.csv: a symbolic link that leads back to "
                                           "itself"):
        read_population(loop)
    with pytest.raises(ProbmutError, match="missing.csv: no such file"):
        checked_input(tmp_path / "missing.csv", "a population CSV file")


def test_a_damaged_archive_leaves_no_file_open(tmp_path):
    """A truncated outcomes file made numpy leave its file open: the ResourceWarning
    ended up in the report's text and page."""
    path = tmp_path / "healthy.outcomes.npz"
    save_outcomes(path, range(4), np.ones((4, 30), bool), np.arange(30) % 10)
    path.write_bytes(path.read_bytes()[:300])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ProbmutError, match="not a probmut outcomes file"):
            load_outcomes(path)
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], \
        [str(w.message) for w in caught]
