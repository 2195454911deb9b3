"""The one way probmut writes a file: whole or not at all.

Every file (populations, manifests, caches, outcome files, the trainer's records) is
written to a temporary file in the same directory, flushed to disk, then renamed onto
its name. Readers see the old file or the complete new one, never a partial file, also
when the process is killed half-way (the rename is atomic on POSIX and Windows).
Temporary files are named ``.{name}.*.tmp`` (``.tmp{suffix}`` for writers that need the
suffix); a killed writer can leave one behind, which :func:`remove_orphans` clears. A
full disk is a :class:`DiskFullError` naming the file, its temporary file removed.
:func:`writable_file` and :func:`writable_directory` check a place before anything is
computed for it.
"""

from __future__ import annotations

import errno
import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from probmut.errors import ProbmutError

#: The longest part of a file name kept in a temporary name: with mkstemp's random part
#: and the suffix it stays under the usual limit of 255 bytes for any name that fits it.
_TEMPORARY_STEM = 200


#: The errors of a full disk (or a full quota): the place cannot take the file.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFullError(ProbmutError):
    """A file could not be written: no space left on its device (or over a quota).

    The file keeps its former content, if any (the write went to a temporary file, now
    removed), so what was completed before stays whole. The command line adds, for a
    command that resumes, that completed work is kept. ``path`` is the file, ``reason``
    the system's words ("No space left on device").
    """

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: cannot write it: {reason}; free some space and try again, "
                         "or write elsewhere")
        self.path, self.reason = Path(path), reason


@contextmanager
def _space_checked(path: Path):
    """A full disk met while writing ``path`` becomes a :class:`DiskFullError`."""
    try:
        yield
    except OSError as error:
        if error.errno not in _FULL:
            raise
        raise DiskFullError(path, error.strerror or "no space left on device") from None


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
    with _space_checked(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = _temporary(path, ".tmp")
        umask = os.umask(0)
        os.umask(umask)
        try:
            os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; the usual permissions
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            if (pending := getattr(_together, "pending", None)) is not None:
                pending.append((temporary, path))  # renamed at the end of together()
            else:
                _replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


_together = threading.local()


@contextmanager
def together():
    """The files :func:`atomic_write` writes in the block appear together at its end, or
    none of them: each is written whole to its temporary file, and they are renamed once
    all are written, so a full disk (or an error) half-way leaves none. Inside another
    ``together`` block, the outer one renames them.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> with together():
    ...     atomic_write_text(os.path.join(folder, "a"), "1")
    ...     os.path.exists(os.path.join(folder, "a"))
    False
    >>> os.path.exists(os.path.join(folder, "a"))
    True
    """
    if getattr(_together, "pending", None) is not None:
        yield
        return
    _together.pending = pending = []
    try:
        yield
        for temporary, path in pending:
            _replace(temporary, path)
    except BaseException:
        for temporary, _ in pending:
            Path(temporary).unlink(missing_ok=True)
        raise
    finally:
        _together.pending = None


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
    with _space_checked(path):
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
    once, with the first one's process id in its message; within the process that holds
    it, a nested block on the same lock just runs. (POSIX only; elsewhere the block runs
    unlocked.)
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = Path(directory) / name
    held = str(path.resolve())
    if held in _HELD:  # this process holds it already
        yield
        return
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
        _HELD.add(held)
        try:
            yield
        finally:
            _HELD.discard(held)
            fcntl.flock(handle, fcntl.LOCK_UN)


#: The locks this process holds (resolved paths), so that a nested block does not lock
#: itself out.
_HELD: set[str] = set()


def remove_orphans(directory) -> int:
    """Delete the temporary files a killed writer left under ``directory``; returns how
    many. Only safe when no other process writes there (one run per directory)."""
    orphans = [p for p in Path(directory).rglob(".*.tmp*")
               if p.name.endswith(".tmp") or ".tmp." in p.name]
    for orphan in orphans:
        orphan.unlink(missing_ok=True)
    return len(orphans)


def writable_file(path: Path, what: str, option: str | None = None) -> Path:
    """``path`` if a file can be written there (its folder is created); else a clear error."""
    if path.is_dir():
        raise ProbmutError(f"{path}: is a directory; give a file name for the {what}",
                           option=option)
    writable_directory(path.parent, f"{what}'s folder", option)
    return path


def writable_directory(path: Path, what: str, option: str | None = None) -> Path:
    """``path`` as a directory one can write in (created if absent); else a clear error."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except FileExistsError:
        raise ProbmutError(f"{path}: is a file, not a directory (the {what})",
                           option=option) from None
    except OSError as error:
        raise ProbmutError(f"{path}: cannot write there ({error.strerror}); choose another "
                           f"place for the {what}", option=option) from None
    return path
