"""A result cache on disk, keyed by inputs and settings, written atomically.

Long studies are split into chunks (one population size, one mutation...). Each chunk's
arrays are stored under a key that hashes everything they depend on (the accuracies,
the settings, the seed, the chunk's place in the study), so a rerun reuses completed
chunks, an interrupted run resumes where it stopped, and a change of any input
computes afresh. Files appear whole or not at all (temporary file, then rename).
A full disk stops the writing with a warning, never the study.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np

from probmut.io.atomic import DiskFullError
from probmut.io.checked import DamagedFile, read_checked, write_checked

#: Bump when the meaning of cached arrays changes, so old entries are not reused.
CACHE_VERSION = 3


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


class DamagedCacheWarning(UserWarning):
    """A cached result failed its checks; it was ignored and is computed afresh."""


class CacheNotWrittenWarning(UserWarning):
    """The disk is full: results are computed but no longer cached, until space is freed."""


class Cache:
    """Arrays stored as ``.npz`` files under ``directory``, one per key.

    ``Cache(None)`` stores nothing (every lookup misses). Each file carries its key and a
    checksum of its arrays; a file that cannot be read, belongs to another key, fails its
    checksum or does not have the arrays the caller expects is never used: it is reported
    with a :class:`DamagedCacheWarning` and counts as a miss, so the result is computed
    afresh and the file rewritten.

    Examples
    --------
    >>> import tempfile
    >>> cache = Cache(tempfile.mkdtemp())
    >>> key = cache_key("example", 1)
    >>> cache.get(key) is None
    True
    >>> cache.put(key, counts=np.arange(3))
    >>> cache.get(key, shapes={"counts": (3,)})["counts"].tolist()
    [0, 1, 2]
    """

    def __init__(self, directory=None):
        self.directory = Path(directory) if directory else None
        self.hits = 0
        self.misses = 0
        self.full = False  # the disk was full: nothing more is written

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.npz"

    def get(self, key: str, shapes: dict | None = None) -> dict | None:
        """The arrays stored under ``key``, or None.

        ``shapes`` maps each expected array to its shape: an entry without them, or with
        NaN or infinite values in them, is treated as damaged.
        """
        arrays = None
        if self.directory is not None and self._path(key).exists():
            path = self._path(key)
            try:
                arrays = read_checked(path, key, shapes)
            except DamagedFile as problem:
                warnings.warn(f"{path}: damaged cache entry ({problem}); ignored and computed "
                              "afresh", DamagedCacheWarning, stacklevel=2)
        if arrays is None:
            self.misses += 1
            return None
        self.hits += 1
        return arrays

    def put(self, key: str, **arrays) -> None:
        """Store arrays under ``key`` atomically (no-op without a directory). A full disk
        is a warning, once, and no more is written: a cache only saves time."""
        if self.directory is None or self.full:
            return
        try:
            write_checked(self._path(key), key, **arrays)
        except DiskFullError as error:
            self.full = True
            warnings.warn(f"{error.path}: cannot write it: {error.reason}; the cache in "
                          f"{self.directory} is not written from here on (results are computed "
                          "but not kept for a rerun)", CacheNotWrittenWarning, stacklevel=2)


class MemoryCache:
    """A :class:`Cache` with what this process stores kept in memory in front of it: one
    step's results read by the next at once, whether or not ``backing`` has a directory.

    >>> cache = MemoryCache(Cache(None))
    >>> cache.put(cache_key("example"), counts=np.arange(3))
    >>> cache.get(cache_key("example"))["counts"].tolist()
    [0, 1, 2]
    """

    def __init__(self, backing: Cache):
        self.backing = backing
        self.kept: dict[str, dict] = {}

    def get(self, key: str, shapes: dict | None = None) -> dict | None:
        """The arrays kept under ``key``, else :meth:`Cache.get` of the backing cache."""
        return self.kept[key] if key in self.kept else self.backing.get(key, shapes)

    def put(self, key: str, **arrays) -> None:
        """Keep the arrays, and :meth:`Cache.put` them in the backing cache."""
        self.kept[key] = arrays
        self.backing.put(key, **arrays)
