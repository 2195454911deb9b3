"""A result cache on disk, keyed by inputs and settings, written atomically.

Long studies are split into chunks (one population size, one mutation...). Each chunk's
arrays are stored under a key that hashes everything they depend on (the accuracies,
the settings, the seed, the chunk's place in the study), so a rerun reuses completed
chunks, an interrupted run resumes where it stopped, and a change of any input
computes afresh. Files appear whole or not at all (temporary file, then rename).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np

from probmut.io.atomic import atomic_write_bytes

#: Bump when the meaning of cached arrays changes, so old entries are not reused.
CACHE_VERSION = 2


def _canonical(value):
    if is_dataclass(value):
        return {"__type__": type(value).__name__} | _canonical(asdict(value))
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"dtype": str(value.dtype), "shape": value.shape,
                "sha256": hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def cache_key(*parts) -> str:
    """A hex digest of anything JSON-like, dataclasses and arrays included.

    >>> cache_key({"n": 25}, np.arange(3)) == cache_key({"n": 25}, np.arange(3))
    True
    >>> cache_key({"n": 25}) == cache_key({"n": 50})
    False
    """
    text = json.dumps(_canonical([CACHE_VERSION, *parts]), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Cache:
    """Arrays stored as ``.npz`` files under ``directory``, one per key.

    ``Cache(None)`` stores nothing (every lookup misses).

    Examples
    --------
    >>> import tempfile
    >>> cache = Cache(tempfile.mkdtemp())
    >>> key = cache_key("example", 1)
    >>> cache.get(key) is None
    True
    >>> cache.put(key, counts=np.arange(3))
    >>> cache.get(key)["counts"].tolist()
    [0, 1, 2]
    """

    def __init__(self, directory=None):
        self.directory = Path(directory) if directory else None
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.npz"

    def get(self, key: str) -> dict | None:
        """The arrays stored under ``key``, or None."""
        if self.directory is not None:
            path = self._path(key)
            if path.exists():
                try:
                    with np.load(path, allow_pickle=False) as stored:
                        arrays = {name: stored[name] for name in stored.files}
                except (OSError, ValueError):
                    arrays = None  # unreadable entry: recompute and overwrite
                if arrays is not None:
                    self.hits += 1
                    return arrays
        self.misses += 1
        return None

    def put(self, key: str, **arrays) -> None:
        """Store arrays under ``key`` atomically (no-op without a directory)."""
        if self.directory is None:
            return
        path = self._path(key)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        atomic_write_bytes(path, buffer.getvalue())
