"""Saved NumPy arrays: the paper's Monte-Carlo kill rates (``.npy``, read as kill counts)
and :func:`text_start`, which names a text file given where an array was expected (also
for the per-input outcome files of :mod:`probmut.io.outcomes`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.files import checked_input, numpy_input
from probmut.validation import MAX_COUNT, checked, integer, path

#: The largest file of kill rates read: 2^28 resamples' counts (2 GiB), twice what the
#: engine computes in one call.
MAX_FILE_BYTES = 2**31


def text_start(path, length: int = 40) -> str | None:
    """The start of the file's first line if the file is text (e.g. a CSV given where a
    NumPy file was expected), else None: for messages that say what a file is.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "h.csv")
    >>> _ = open(path, "w").write("instance,accuracy\\n0,0.9\\n")
    >>> text_start(path)
    'instance,accuracy'
    """
    with open(path, "rb") as file:
        head = file.read(4 * length)
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    line = text.splitlines()[0] if text.strip() else ""
    return line[:length] if line.isprintable() and line.strip() else None


@checked(path=path, trials=integer(1, MAX_COUNT))
def load_kill_rates(path, trials: int) -> np.ndarray:
    """Saved Monte-Carlo kill rates (s_b / N, as the paper saves them) as kill counts.

    Parameters
    ----------
    path : path-like
        A ``.npy`` array of float rates in [0, 1] or of integer counts in [0, N].
    trials : int
        N, the kill tests behind each rate.

    Returns
    -------
    numpy.ndarray
        The kill counts (int64), of the array's shape.

    Raises
    ------
    ProbmutError
        A missing, text or ``.npz`` file; non-numeric, empty, NaN or infinite values;
        rates that are not multiples of 1/N in [0, 1]; ``trials`` that is not a positive
        integer.
    """
    path = Path(path)
    what = "a NumPy .npy array of kill rates"
    checked_input(path, what, MAX_FILE_BYTES)
    text = text_start(path)
    if text is not None:
        raise ProbmutError(f"{path}: a text file ({text!r}...), not a NumPy .npy array of kill "
                           "rates; population files are given without --kill-rates")
    try:
        with numpy_input(path, what, MAX_FILE_BYTES) as array:
            if not isinstance(array, np.ndarray):
                raise ProbmutError(f"{path}: an .npz archive; give the .npy array of kill rates")
    except ProbmutError:
        raise
    except (OSError, ValueError, EOFError) as error:
        raise ProbmutError(f"{path}: not a NumPy .npy array ({error})") from None
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ProbmutError(f"{path}: holds {array.dtype} values, not kill rates (numbers)")
    is_counts = np.issubdtype(array.dtype, np.integer)
    array = np.asarray(array, dtype=np.float64)
    if array.size == 0 or not np.all(np.isfinite(array)):
        raise ProbmutError(f"{path}: empty, or holds NaN/infinite values")
    counts = array if is_counts else array * trials
    rounded = np.rint(counts)
    if np.abs(counts - rounded).max() > 1e-6 or rounded.min() < 0 or rounded.max() > trials:
        raise ProbmutError(
            f"{path}: values are not kill rates of {trials} trials (multiples of 1/{trials} in "
            "[0, 1]); check the number of trials", option="trials")
    return rounded.astype(np.int64)
