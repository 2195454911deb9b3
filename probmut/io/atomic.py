"""The one way probmut writes a file: whole or not at all.

Every file (populations, manifests, caches, outcome files, the trainer's records) is
written to a temporary file in the same directory, flushed to disk, then renamed onto
its name. Readers see the old file or the complete new one, never a partial file, also
when the process is killed half-way (the rename is atomic on POSIX and Windows).
Temporary files are named ``.{name}.*.tmp`` (``.tmp{suffix}`` for writers that need the
suffix); a killed writer can leave one behind, which :func:`remove_orphans` clears.
"""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from probmut.errors import ProbmutError

#: The longest part of a file name kept in a temporary name: with mkstemp's random part
#: and the suffix it stays under the usual limit of 255 bytes for any name that fits it.
_TEMPORARY_STEM = 200


def _too_long(path: Path) -> ProbmutError:
    return ProbmutError(f"{path}: the file name or path is too long for the file system (a "
                        f"{len(path.name.encode())}-byte name); choose a shorter one")


def _temporary(path: Path, suffix: str) -> tuple[int, str]:
    """``mkstemp`` beside ``path``, with at most the first bytes of its name in the
    temporary name: never longer than what the file system takes for ``path`` itself."""
    stem = path.name.encode()[:_TEMPORARY_STEM].decode(errors="ignore")
    try:
        return tempfile.mkstemp(dir=path.parent, prefix=f".{stem}.", suffix=suffix)
    except OSError as error:
        if error.errno != errno.ENAMETOOLONG:
            raise
        raise _too_long(path) from None


def _replace(temporary: str, path: Path) -> None:
    try:
        os.replace(temporary, path)
    except OSError as error:
        if error.errno != errno.ENAMETOOLONG:
            raise
        raise _too_long(path) from None


def atomic_write(path, write) -> None:
    """Call ``write(binary_file)`` on a temporary file, then rename it onto ``path``.

    The parent directory is created if needed.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> atomic_write(path, lambda f: f.write(b"done"))
    >>> open(path, "rb").read()
    b'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = _temporary(path, ".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        _replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`)."""
    atomic_write(path, lambda handle: handle.write(data))


@contextmanager
def atomic_target(path):
    """For writers that need a file *name* (netCDF, Keras models): yields a temporary
    path beside ``path``, renamed onto ``path`` when the block succeeds, removed if not.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "model.bin")
    >>> with atomic_target(path) as temporary:
    ...     _ = open(temporary, "wb").write(b"weights")
    >>> open(path, "rb").read()
    b'weights'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = _temporary(path, f".tmp{path.suffix}")
    os.close(fd)
    try:
        yield Path(temporary)
        _replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class LockedError(OSError):
    """Another process holds the lock of a directory."""


@contextmanager
def exclusive(directory, name: str = ".lock"):
    """Hold an exclusive lock on ``directory`` (a ``name`` file in it) for the block.

    The operating system releases the lock when the process ends, however it ends, so a
    killed run never leaves a stale lock. A second holder gets :class:`LockedError` at
    once, with the first one's process id in its message. (POSIX only; elsewhere the
    block runs unlocked.)
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise LockedError(f"locked by process {holder}") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_orphans(directory) -> int:
    """Delete the temporary files a killed writer left under ``directory``; returns how
    many. Only safe when no other process writes there (one run per directory)."""
    orphans = [p for p in Path(directory).rglob(".*.tmp*")
               if p.name.endswith(".tmp") or ".tmp." in p.name]
    for orphan in orphans:
        orphan.unlink(missing_ok=True)
    return len(orphans)
