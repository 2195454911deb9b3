"""The checks at the public API's boundary: what each argument of a public function or
settings class may be, checked once before any work, with one
:class:`~probmut.errors.ProbmutError` naming the argument (its ``option``), as the command
line refuses a bad option.

A check is a function ``check(value, name) -> value`` that returns the value as the code
below uses it (an ``int`` for an integer, a ``float`` for a number, a :class:`Population`
for a population) or raises. :func:`checked` applies checks to a function's arguments,
:func:`check_fields` to a dataclass's fields. The bounds' words are the command line's
(``probmut/cli/args.py`` parses its options with :func:`integer_problem` and
:func:`number_problem`), so both refuse the same values in the same words.

Examples
--------
>>> @checked(sample=integer(2), mass=number(0, 1, low_open=True, high_open=True))
... def study(sample=20, mass=0.95):
...     return sample, mass
>>> study(10)
(10, 0.95)
>>> study("20")
Traceback (most recent call last):
...
probmut.errors.ProbmutError: sample must be an integer, got '20' (str)
>>> study(mass=float("nan"))
Traceback (most recent call last):
...
probmut.errors.ProbmutError: mass must be a finite number in (0, 1), got nan
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import warnings
from collections.abc import Callable, Mapping

import numpy as np

from probmut.errors import ProbmutError

#: The largest count an option takes: more bootstraps, trials or tests than this could
#: not finish anyway, and it keeps every index within 64-bit arithmetic.
MAX_COUNT = 10**9

Check = Callable[[object, str], object]


def refusal(name: str, problem: str) -> ProbmutError:
    """The error of argument ``name`` (``mutants[2]``: an item of ``mutants``)."""
    return ProbmutError(f"{name} {problem}", option=name.split("[")[0])


def shown(value) -> str:
    """A wrong value in a message: its repr (shortened) and, unless obvious, its type."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return text if isinstance(value, numbers.Number) else f"{text} ({type(value).__name__})"


# --- the bounds, in the command line's words --------------------------------------------

def integer_problem(value: int, minimum: int | None, maximum: int | None) -> str | None:
    """What is wrong with the integer ``value`` for the bounds, or None.

    >>> integer_problem(1, 2, None), integer_problem(5, 2, 10)
    ('must be at least 2, got 1', None)
    """
    if minimum is not None and value < minimum:
        return f"must be at least {minimum}, got {value}"
    if maximum is not None and value > maximum:
        return f"must be at most {maximum:,}, got {value}"
    return None


def number_problem(value: float, low: float, high: float, *, low_open: bool = False,
                   high_open: bool = False) -> str | None:
    """What is wrong with the number ``value`` for the interval from ``low`` to ``high``
    (a finite number is always required), or None.

    >>> number_problem(0.0, 0, math.inf, low_open=True)
    'must be a finite number in (0, inf), got 0'
    """
    inside = ((value > low if low_open else value >= low)
              and (value < high if high_open else value <= high))
    if math.isfinite(value) and inside:
        return None
    interval = (("(" if low_open else "[") + ("-inf" if math.isinf(low) else f"{low:g}")
                + ", " + ("inf" if math.isinf(high) else f"{high:g}")
                + (")" if high_open or math.isinf(high) else "]"))
    shown = f"{value:g}" if float(f"{value:g}") == value else repr(value)
    return f"must be a finite number in {interval}, got {shown}"


# --- checks -------------------------------------------------------------------------------

def integer(minimum: int | None = None, maximum: int | None = MAX_COUNT) -> Check:
    """An integer (a Python or NumPy integer, not a bool) within the bounds."""
    def check(value, name):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise refusal(name, f"must be an integer, got {shown(value)}")
        problem = integer_problem(int(value), minimum, maximum)
        if problem:
            raise refusal(name, problem)
        return int(value)
    return check


def number(low: float = -math.inf, high: float = math.inf, *, low_open: bool = False,
           high_open: bool = False) -> Check:
    """A finite real number (not a bool) in the interval from ``low`` to ``high``."""
    def check(value, name):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise refusal(name, f"must be a number, got {shown(value)}")
        problem = number_problem(float(value), low, high, low_open=low_open,
                                 high_open=high_open)
        if problem:
            raise refusal(name, problem)
        return float(value)
    return check


def choice(options) -> Check:
    """One of ``options`` (strings)."""
    def check(value, name):
        if not isinstance(value, str) or value not in options:
            raise refusal(name, f"must be one of {', '.join(options)}, got {shown(value)}")
        return value
    return check


def instance(kind: type, what: str | None = None) -> Check:
    """An instance of ``kind`` (``what`` names it in the message)."""
    def check(value, name):
        if not isinstance(value, kind):
            raise refusal(name, f"must be {what or 'a ' + kind.__name__}, got {shown(value)}")
        return value
    return check


def optional(inner: Check) -> Check:
    """None, or what ``inner`` accepts."""
    def check(value, name):
        return None if value is None else inner(value, name)
    return check


def flag(value, name):
    """True or False (a NumPy bool too)."""
    if not isinstance(value, bool | np.bool_):
        raise refusal(name, f"must be True or False, got {shown(value)}")
    return bool(value)


def text(value, name):
    """A string."""
    if not isinstance(value, str):
        raise refusal(name, f"must be a string, got {shown(value)}")
    return value


def path(value, name):
    """A file's path: a string or a path-like object."""
    if not isinstance(value, str | os.PathLike):
        raise refusal(name, f"must be a file's path (a string or a Path), got {shown(value)}")
    return value


def function(value, name):
    """Something callable (a progress callback)."""
    if not callable(value):
        raise refusal(name, f"must be a function, got {shown(value)}")
    return value


def mapping(value, name):
    """A dict (or another mapping)."""
    if not isinstance(value, Mapping):
        raise refusal(name, f"must be a dict, got {shown(value)}")
    return value


def seed(value, name):
    """A seed :func:`probmut.seeds.seed_sequence` takes (a non-negative integer, a
    SeedSequence, a Generator or None), returned as given (a Generator is not drawn from
    here)."""
    if isinstance(value, np.random.Generator | np.random.SeedSequence) or value is None:
        return value
    try:
        if isinstance(value, bool):
            raise TypeError
        np.random.SeedSequence(value)
    except (TypeError, ValueError, OverflowError):
        raise refusal(name, "must be a non-negative integer, a SeedSequence, a Generator or "
                            f"None, got {shown(value)}") from None
    return value


def sequence(item: Check, *, at_least: int = 0, what: str = "values") -> Check:
    """A list (a tuple, an array, any iterable that is not a string or a mapping; a
    Population is not iterable) of at least ``at_least`` items, each checked by ``item``
    as ``name[i]``; returned as a list."""
    def check(value, name):
        if isinstance(value, str | bytes | Mapping) or is_frame(value) or not _iterable(value):
            raise refusal(name, f"must be a list of {what}, got {shown(value)}")
        items = [item(v, f"{name}[{i}]") for i, v in enumerate(value)]
        if len(items) < at_least:
            raise refusal(name, f"must hold at least {at_least} {what}, got {len(items)}")
        return items
    return check


def _iterable(value) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def is_frame(value) -> bool:
    """A pandas Series or DataFrame (one population, not a list of them)."""
    return hasattr(value, "index") and hasattr(value, "to_numpy")


def table(value, name):
    """A pandas DataFrame (a long table: one row per instance)."""
    if not (hasattr(value, "columns") and is_frame(value)):
        raise refusal(name, f"must be a pandas DataFrame, got {shown(value)}")
    return value


#: A number of threads, or None for all cores.
threads = optional(integer(1, 4096))
#: A number of worker processes, or None for one per core.
jobs = optional(integer(1, 4096))


def accuracies(value, name) -> np.ndarray:
    """Accuracies as a float array, 1-D (one population: an array-like, a Series or a
    Population) or 2-D (one set per row), finite and not empty."""
    try:
        array = np.asarray(getattr(value, "values", value), dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise refusal(name, f"must be accuracies (numbers), got {shown(value)}: {error}"
                      ) from None
    if array.ndim not in (1, 2) or array.size == 0:
        raise refusal(name, "must be accuracies, 1-D (one population) or 2-D (one per row), "
                            f"got shape {array.shape}")
    finite = np.isfinite(array)
    if not finite.all():
        where = ""
        if array.ndim == 2:
            bad = ~finite.all(axis=1)
            where = f" (row {int(np.argmax(bad))}; {int(bad.sum())} such rows)"
        raise refusal(name, f"holds NaN or infinite values{where}")
    return array


def kill_count_array(value, name) -> np.ndarray:
    """Kill counts: a non-empty 1-D array of non-negative integers (one per resample)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise refusal(name, f"must be kill counts, got {shown(value)}: {error}") from None
    whole = array.dtype.kind in "iu" or (array.dtype.kind == "f" and np.all(np.isfinite(array))
                                         and np.array_equal(array, np.round(array)))
    if array.ndim != 1 or array.size == 0 or not whole or (array < 0).any():
        raise refusal(name, "must be kill counts: a non-empty 1-D array of non-negative "
                            f"integers, got {shown(value)}")
    return array.astype(np.int64)


# --- applying them ------------------------------------------------------------------------

def checked(**checks: Check):
    """Decorator: the named arguments of each call are checked (and normalised) by their
    checks before the function runs. Arguments left at their defaults are not checked.
    The wrapper is one more frame: a warning raised in the function reaches its caller
    with one more ``stacklevel``."""
    def decorate(fn):
        signature = inspect.signature(fn)
        unknown = set(checks) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{fn.__qualname__} has no argument {sorted(unknown)}")

        @functools.wraps(fn)
        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name, value in bound.arguments.items():
                if name in checks:
                    bound.arguments[name] = checks[name](value, name)
            return fn(*bound.args, **bound.kwargs)
        return call
    return decorate


def renamed(**old_to_new: str):
    """Decorator: keyword arguments of an earlier release still accepted under their old
    name, each with one :class:`FutureWarning` naming the new one (CHANGELOG.md,
    *Renamed*).

    >>> @renamed(jobs="threads")
    ... def study(*, threads=None):
    ...     return threads
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     study(jobs=2), str(caught[0].message)
    (2, 'study(jobs=...) is deprecated: it is threads=...')
    >>> study(jobs=2, threads=2)
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: give threads, not jobs (its deprecated name) as well
    """
    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise ProbmutError(f"give {new}, not {old} (its deprecated name) as well",
                                       option=new)
                warnings.warn(f"{fn.__name__}({old}=...) is deprecated: it is {new}=...",
                              FutureWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        return call
    return decorate


def check_fields(obj, **checks: Check) -> None:
    """Check (and normalise) the named fields of a frozen dataclass, in its
    ``__post_init__``."""
    for name, check in checks.items():
        object.__setattr__(obj, name, check(getattr(obj, name), name))
