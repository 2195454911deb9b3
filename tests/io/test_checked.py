"""Checked archives (probmut.io.checked), the format of records, weights and cache
entries: what is written is read back; a file renamed, altered, incomplete or holding
NaN is a DamagedFile saying which."""

import numpy as np
import pytest

from probmut.io.checked import DamagedFile, read_checked, write_checked


def test_arrays_read_back_as_written(tmp_path):
    path = tmp_path / "a.npz"
    write_checked(path, "pop/3", accuracy=np.float64(0.5), bits=np.packbits([1, 0, 1]),
                  status=np.array("ok"))
    got = read_checked(path, "pop/3", {"accuracy": (), "bits": (1,)})
    assert float(got["accuracy"]) == 0.5 and str(got["status"]) == "ok"
    assert np.unpackbits(got["bits"], count=3).tolist() == [1, 0, 1]


@pytest.mark.parametrize("damage, says", [
    ("other key", "written for another key"),
    ("altered", "checksum mismatch"),
    ("missing array", "expected array 'accuracy'"),
    ("wrong shape", "expected array 'bits' of shape"),
    ("NaN", "holds NaN or infinite values"),
    ("not an archive", "BadZipFile|ValueError|OSError|EOFError"),
])
def test_a_damaged_archive_says_what_is_wrong(tmp_path, damage, says):
    path, key = tmp_path / "a.npz", "pop/3"
    arrays = {"accuracy": np.float64(0.5), "bits": np.packbits([1, 0, 1])}
    if damage == "missing array":
        arrays.pop("accuracy")
    if damage == "NaN":
        arrays["accuracy"] = np.float64(np.nan)
    write_checked(path, "pop/4" if damage == "other key" else key, **arrays)
    if damage == "altered":  # the same archive with one value changed, its checksum kept
        with np.load(path) as stored:
            changed = {name: stored[name] for name in stored.files} | {"accuracy": np.float64(0.6)}
        np.savez(path, **changed)
    if damage == "not an archive":
        path.write_bytes(b"not a zip file at all")
    shapes = {"accuracy": (), "bits": (2,) if damage == "wrong shape" else (1,)}
    with pytest.raises(DamagedFile, match=says):
        read_checked(path, key, shapes)
