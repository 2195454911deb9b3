"""The one writer (probmut.io.atomic): a full disk is one error naming the file, the old
file kept and nothing half-written left (issue 44); files written together appear
together; a run's lock, taken twice by its own process, does not lock it out."""

import errno
import warnings

import numpy as np
import pytest

from probmut.io.atomic import (
    DiskFullError,
    LockedError,
    atomic_write_text,
    exclusive,
    together,
)
from probmut.io.cache import Cache, CacheNotWrittenWarning, cache_key


def test_a_full_disk_names_the_file_and_keeps_its_old_content(tmp_path, full_disk):
    path = tmp_path / "report.html"
    atomic_write_text(path, "the old page")
    full_disk("report.html")
    with pytest.raises(DiskFullError, match=f"{path}: cannot write it: No space left on "
                                            "device; free some space") as raised:
        atomic_write_text(path, "a new page " * 1000)
    assert raised.value.path == path
    assert path.read_text() == "the old page"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left


def test_files_written_together_appear_together_or_not_at_all(tmp_path, full_disk):
    with together():
        atomic_write_text(tmp_path / "a.npz", "a")
        atomic_write_text(tmp_path / "b.npz", "b")
        assert not (tmp_path / "a.npz").exists()  # its temporary file, not yet renamed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "b.npz"]
    full_disk("d.npz")
    with pytest.raises(DiskFullError), together():
        atomic_write_text(tmp_path / "c.npz", "c")  # written, waiting for the others
        atomic_write_text(tmp_path / "d.npz", "d")  # the disk is full
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "b.npz"]


def test_a_cache_on_a_full_disk_warns_once_and_stops_writing(tmp_path, full_disk):
    cache = Cache(tmp_path)
    full_disk(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(3):
            cache.put(cache_key("chunk", n), counts=np.arange(3))
    assert [w.category for w in caught] == [CacheNotWrittenWarning]
    assert "No space left on device; the cache in" in str(caught[0].message)
    assert cache.get(cache_key("chunk", 0)) is None  # nothing stored, nothing damaged


def test_a_lock_taken_again_by_its_holder_does_not_lock_it_out(tmp_path):
    import subprocess
    import sys

    with exclusive(tmp_path, "lock"):
        with exclusive(tmp_path, "lock"):  # e.g. train_populations, then run_populations
            pass
        other = subprocess.run(  # another process is refused at once
            [sys.executable, "-c", "import sys; from probmut.io.atomic import exclusive\n"
             f"with exclusive({str(tmp_path)!r}, 'lock'): sys.exit(0)"],
            capture_output=True, text=True)
        assert other.returncode == 1 and LockedError.__name__ in other.stderr
    with exclusive(tmp_path, "lock"):  # released by the outer block only
        pass


def test_only_a_full_disk_becomes_a_disk_full_error(tmp_path, monkeypatch):
    import probmut.io.atomic as atomic

    def denied(path, suffix):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(atomic, "_temporary", denied)
    with pytest.raises(PermissionError):
        atomic_write_text(tmp_path / "x", "x")
