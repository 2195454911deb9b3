"""How probmut compiles its kernels: :func:`compiled` is ``numba.njit`` with an on-disk
cache whose key covers the sources the kernels are built from.

Numba's own cache (``cache=True``) is keyed on the file that defines a function. A
kernel that inlines code from other files (the dispatch of the kill criteria, built from
the registry in ``probmut/killtest/criteria.py`` and the tests in ``kernels.py``; the
engine's kernel, which inlines the dispatch) would then be loaded stale after a change
in those files: a criterion added as docs/map.md describes could run the old dispatch.
Here a cached kernel is fresh only while every source of the analysis core
(:data:`SOURCE_FOLDERS`) is unchanged: its stamp is their SHA-256 beside numba's own.

Where no folder can hold the cache (the package folder and the home folder read-only,
no ``NUMBA_CACHE_DIR``), the kernels compile in each process without it, with one
warning, instead of failing.

Examples
--------
>>> import numpy as np
>>> @compiled(nogil=True)
... def total(x):
...     return x.sum()
>>> float(total(np.arange(4.0)))
6.0
>>> len(sources_digest())
64
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import warnings
from pathlib import Path

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, _CacheLocator

_PACKAGE = Path(__file__).resolve().parent

#: The folders (relative to the package) whose Python sources compiled kernels are built
#: from, their own files included: the package's top level (the engine and the modules
#: it imports), the kill criteria and the model-based posterior's density.
SOURCE_FOLDERS = (".", "killtest", "bayes")


@functools.cache
def sources_digest() -> str:
    """The SHA-256 of the sources of :data:`SOURCE_FOLDERS`, file names included."""
    digest = hashlib.sha256()
    for folder in SOURCE_FOLDERS:
        for path in sorted((_PACKAGE / folder).glob("*.py")):
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


class _SourcesLocator(_CacheLocator):
    """Numba's usual place for a function's cache (the first of its own locators that
    works), with a stamp that also covers :func:`sources_digest`."""

    def __init__(self, usual: _CacheLocator):
        self._usual = usual

    def ensure_cache_path(self):
        self._usual.ensure_cache_path()

    def get_cache_path(self):
        return self._usual.get_cache_path()

    def get_source_stamp(self):
        return self._usual.get_source_stamp(), sources_digest()

    def get_disambiguator(self):
        return self._usual.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):
        for usual in CompileResultCacheImpl._locator_classes:
            locator = usual.from_function(py_func, py_file)
            if locator is not None:
                return cls(locator)
        return None


class _SourcesCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_SourcesLocator]


class _SourcesCache(FunctionCache):
    _impl_class = _SourcesCacheImpl


def compiled(**options):
    """``numba.njit(**options)`` with the on-disk cache of this module (see its notes).

    Parameters
    ----------
    **options
        numba's options (``nogil``, ``inline``, ``parallel``, ...); not ``cache``.
    """
    def decorate(function):
        dispatcher = numba.njit(**options)(function)
        if not Path(inspect.getfile(function)).is_file():  # typed in, nothing to key on
            return dispatcher
        try:
            dispatcher._cache = _SourcesCache(function)
        except RuntimeError:  # numba: no locator available, no writable folder
            _warn_uncached()
        return dispatcher
    return decorate


@functools.cache
def _warn_uncached() -> None:
    warnings.warn("probmut: no writable folder for numba's cache of compiled kernels (the "
                  "package folder and the home folder are read-only); kernels compile in "
                  "every process: set NUMBA_CACHE_DIR to a writable folder to keep them",
                  RuntimeWarning, stacklevel=4)
