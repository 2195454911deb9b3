"""Completeness: a population file's instances against the target of the run that wrote
it (recorded in its manifest: :meth:`~probmut.io.manifest.Manifest.target`). Every reader
of population and outcome files calls :func:`check_complete`: a population short of its
target is an :class:`IncompleteRunWarning` (an error with ``strict``), one with no
instance at all an error; the command line notes every check of a command
(:func:`noting_completeness`) and adds them to its JSON output.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.manifest import population_target


class IncompleteRunWarning(UserWarning):
    """A population holds fewer instances than the run that wrote it aims at."""


@dataclass(frozen=True)
class Completeness:
    """A population file's instances against the target of the run that wrote it.

    >>> short = Completeness("rs3", "rs3/delete_training_data_50.csv", instances=3, target=20)
    >>> short.complete
    False
    >>> print(short.message())  # doctest: +NORMALIZE_WHITESPACE
    rs3: delete_training_data_50 has 3 of 20 instances (the run stopped early: rerun the same
    `probmut train` command to finish it)
    """

    model: str
    file: str
    instances: int  # records in the file, failed ones included
    target: int

    @property
    def population(self) -> str:
        return Path(self.file).stem

    @property
    def complete(self) -> bool:
        return self.instances >= self.target

    def message(self) -> str:
        return (f"{self.model}: {self.population} has {self.instances} of {self.target} "
                "instances (the run stopped early: rerun the same `probmut train` command to "
                "finish it)")

    def to_dict(self) -> dict:
        return {"population": self.population, "file": self.file, "instances": self.instances,
                "target": self.target, "complete": self.complete}

#: The completeness of every population read inside :func:`noting_completeness`.
_NOTED: ContextVar[list | None] = ContextVar("probmut_completeness", default=None)


@contextmanager
def noting_completeness():
    """Note the :class:`Completeness` of every population read inside the block, one per
    file; yields their list, which :func:`noted_completeness` also returns. The command
    line runs each command inside one and adds what was noted to its JSON output.

    >>> with noting_completeness() as noted:
    ...     _ = check_complete("nowhere/x.csv", 3)  # no run manifest there: nothing noted
    >>> noted
    []
    """
    token = _NOTED.set([])
    try:
        yield _NOTED.get()
    finally:
        _NOTED.reset(token)


def noted_completeness() -> list[Completeness]:
    """What the innermost :func:`noting_completeness` block has noted so far."""
    return list(_NOTED.get() or ())


def check_complete(path, instances: int, strict: bool = False,
                   manifest=None) -> Completeness | None:
    """Compare the ``instances`` read from the population file ``path`` with the target
    of the run that wrote it (:func:`~probmut.io.manifest.population_target`): None when
    no run manifest records one. A population short of it is an
    :class:`IncompleteRunWarning` (one line with the counts), an error when ``strict``;
    one with no instance at all is always an error."""
    found = population_target(path, manifest)
    if found is None:
        return None
    completeness = Completeness(found[0], str(path), int(instances), found[1])
    noted = _NOTED.get()
    if noted is not None:  # a file read again replaces its earlier note
        noted[:] = [c for c in noted if c.file != completeness.file] + [completeness]
    if not completeness.complete:
        if instances == 0:
            raise ProbmutError(completeness.message())
        if strict:
            raise ProbmutError(completeness.message(), option="strict")
        warnings.warn(completeness.message(), IncompleteRunWarning, stacklevel=3)
    return completeness
