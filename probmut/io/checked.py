"""Checked archives: ``.npz`` files that carry what validates them.

Every file probmut writes to resume long work (the result cache's chunks, the trainer's
per-instance records) is an ``.npz`` archive with two extra entries: the key it was
written for and a SHA-256 of its arrays. :func:`read_checked` returns the arrays only
if the file reads, belongs to that key, matches its checksum and holds the expected
arrays with finite values; otherwise it raises :class:`DamagedFile`, and the caller
recomputes (with a warning), so a truncated, emptied or bit-flipped file is never used
and never fatal.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "chunk.npz")
>>> write_checked(path, "chunk-1", means=np.arange(3.0))
>>> read_checked(path, "chunk-1", shapes={"means": (3,)})["means"].tolist()
[0.0, 1.0, 2.0]
>>> read_checked(path, "chunk-2")
Traceback (most recent call last):
...
probmut.io.checked.DamagedFile: written for another key
"""

from __future__ import annotations

import hashlib
import io

import numpy as np

from probmut.io.atomic import atomic_write_bytes
from probmut.io.files import numpy_input

_KEY, _SUM = "__key__", "__sha256__"


class DamagedFile(Exception):
    """A checked archive failed its checks (the message says which)."""


def _digest(arrays: dict) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def write_checked(path, key: str, **arrays) -> None:
    """Write ``arrays`` with ``key`` and their checksum, atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **{_KEY: np.array(key), _SUM: np.array(_digest(arrays))}, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def read_checked(path, key: str, shapes: dict | None = None) -> dict:
    """The arrays of a checked archive, or :class:`DamagedFile` saying what is wrong.

    ``shapes`` maps arrays that must be there to their shape (None: any shape); floating
    arrays among them must hold finite values.
    """
    try:
        with numpy_input(path, "a checked archive") as stored:
            arrays = {name: stored[name] for name in stored.files}
    except Exception as error:  # noqa: BLE001 - any unreadable file is a damaged one
        raise DamagedFile(f"{type(error).__name__}: {error}") from None
    if str(arrays.pop(_KEY, "")) != key:
        raise DamagedFile("written for another key")
    if str(arrays.pop(_SUM, "")) != _digest(arrays):
        raise DamagedFile("checksum mismatch")
    for name, shape in (shapes or {}).items():
        if name not in arrays or (shape is not None and arrays[name].shape != tuple(shape)):
            raise DamagedFile(f"expected array {name!r}"
                              + (f" of shape {tuple(shape)}" if shape is not None else ""))
        values = arrays[name]
        if np.issubdtype(values.dtype, np.floating) and not np.all(np.isfinite(values)):
            raise DamagedFile(f"array {name!r} holds NaN or infinite values")
    return arrays
