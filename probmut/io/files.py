"""What every reader checks before it reads a file, and how it reads: one place.

An input file must be a regular file (not a folder, a device such as ``/dev/zero``, a
pipe or a socket, which could be read forever) no larger than its format can be: each
reader gives its own limit. The checks look at the file's metadata only, so a wrong
file is refused at once, with its own reason (a broken link, a symlink loop, no
permission); text is read in blocks, so Ctrl-C stops a long read.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from contextlib import contextmanager
from pathlib import Path

from probmut.errors import ProbmutError

#: Bytes read at a time: Ctrl-C is heard between blocks.
_BLOCK = 1 << 20

#: How ``os.stat``'s failures read in a message (the others: the system's own words).
_REASONS = {errno.ENOENT: "no such file",
            errno.ELOOP: "a symbolic link that leads back to itself (a symlink loop)"}


def checked_input(path, what: str, limit: int | None = None) -> int:
    """The size of ``path``, after checking that it is a regular file of at most
    ``limit`` bytes (None: any size); else a one-line :class:`ProbmutError` that says
    what it is. ``what`` names the file expected ("a population file").

    >>> checked_input("/dev/zero", "a population file")
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: /dev/zero: a device, not a regular file; give a population file
    """
    try:
        status = os.stat(path)
    except OSError as error:
        reason = _REASONS.get(error.errno, error.strerror or str(error))
        raise ProbmutError(f"{path}: {reason}") from None
    if stat.S_ISDIR(status.st_mode):
        raise ProbmutError(f"{path}: is a directory; give {what}")
    if not stat.S_ISREG(status.st_mode):
        kind = ("a pipe" if stat.S_ISFIFO(status.st_mode) else
                "a socket" if stat.S_ISSOCK(status.st_mode) else "a device")
        raise ProbmutError(f"{path}: {kind}, not a regular file; give {what}")
    if limit is not None and status.st_size > limit:
        raise _too_large(path, status.st_size, what, limit)
    return status.st_size


def _too_large(path, size: int, what: str, limit: int) -> ProbmutError:
    return ProbmutError(f"{path}: {size:,} bytes, more than {what} can hold ({limit:,} bytes "
                        "at most); is it the right file?")


def read_input_text(path, what: str, limit: int) -> str:
    """The text of ``path`` (UTF-8, a byte-order mark dropped), checked as
    :func:`checked_input` does and read in blocks (interruptible, and never more than
    ``limit`` bytes, also if the file grows meanwhile).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.toml")
    >>> _ = open(path, "wb").write(b"\\xef\\xbb\\xbfa = 1\\n")
    >>> read_input_text(path, "a manifest", 100)
    'a = 1\\n'
    """
    checked_input(path, what, limit)
    blocks, size = [], 0
    try:
        with open(path, "rb") as handle:
            while block := handle.read(_BLOCK):
                size += len(block)
                if size > limit:
                    raise _too_large(path, size, what, limit)
                blocks.append(block)
        return b"".join(blocks).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ProbmutError(f"{path}: cannot read it as text ({error})") from None


@contextmanager
def numpy_input(path, what: str, limit: int | None = None):
    """``np.load`` of ``path`` (no pickles), checked as :func:`checked_input` does, in a
    block that closes the file however loading ends: an archive that fails to open
    leaves no file open behind it (numpy's own ``np.load(path)`` does). Errors of
    ``np.load`` propagate for the caller to name.
    """
    import numpy as np

    size = checked_input(path, what, limit)
    with open(Path(path), "rb") as handle:
        _check_array_header(handle, path, size, what)
        try:
            loaded = np.load(handle, allow_pickle=False)
        except MemoryError:
            raise ProbmutError(f"{path}: too large to load into memory; is it {what}?") from None
        try:
            yield loaded
        finally:
            if hasattr(loaded, "close"):  # an .npz archive
                loaded.close()


def _check_array_header(handle, path, size: int, what: str) -> None:
    """An ``.npy`` file's header against its size: a header that claims more values than
    the file holds (a cut or damaged array, or one written to make a reader allocate
    terabytes) is refused, naming the file, before anything is allocated. Other files
    (an ``.npz`` archive, not NumPy at all) are left for ``np.load`` to tell; the handle
    is back at the start either way.

    >>> import io, numpy as np
    >>> header = io.BytesIO()
    >>> np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
    ...                                               "shape": (2**40,)})
    >>> _check_array_header(io.BytesIO(header.getvalue()), "big.npy", 128,
    ...                     "kill rates")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: big.npy: its header claims 1,099,511,627,776 values of float64
    (8,796,093,022,208 bytes), but the file holds 0 bytes of data: a cut or damaged array, not kill
    rates
    """
    import numpy as np

    readers = {(1, 0): np.lib.format.read_array_header_1_0,
               (2, 0): np.lib.format.read_array_header_2_0}
    try:
        version = np.lib.format.read_magic(handle)
        shape, _, dtype = readers[version](handle)
    except (ValueError, KeyError, EOFError):
        handle.seek(0)
        return
    values = math.prod(shape)
    claimed = values * dtype.itemsize
    available = size - handle.tell()
    handle.seek(0)
    if not dtype.hasobject and claimed > available:
        raise ProbmutError(f"{path}: its header claims {values:,} values of {dtype} "
                           f"({claimed:,} bytes), but the file holds {available:,} bytes of "
                           f"data: a cut or damaged array, not {what}")
