"""The population: the accuracies of independently trained instances, one per instance
id; the core data type every analysis takes. :func:`as_population` turns what a user
passes (arrays, pandas Series or DataFrames) into one; :func:`pair` and :func:`aligned`
align a model-level mutation's populations by instance id. Files of populations are
read and written by :mod:`probmut.io.populations`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from probmut.errors import ProbmutError
from probmut.validation import (
    check_fields,
    checked,
    is_frame,
    optional,
    refusal,
    sequence,
    shown,
    text,
)


@dataclass(frozen=True, eq=False)
class Population:
    """Accuracies of independently trained instances, one per instance id.

    Examples
    --------
    >>> pop = Population.from_values([0.91, 0.93, 0.92], name="healthy")
    >>> pop
    Population('healthy', 3 instances, mean 0.92)
    >>> pop.ids.tolist()
    [0, 1, 2]
    """

    values: np.ndarray
    ids: np.ndarray
    name: str = "population"
    source: str | None = None

    def __post_init__(self):
        check_fields(self, name=text, source=optional(text))
        values, ids = _arrays(self.values, self.ids, self.where)
        _validate(values, ids, self.where)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "ids", ids)

    @classmethod
    def from_values(cls, values, ids=None, name: str = "population",
                    source: str | None = None) -> Population:
        """A validated population, its instances in the order of their ids (so that
        results never depend on the order in which rows were given)."""
        values, ids = _arrays(values, ids, source or name)
        order = np.argsort(ids, kind="stable")
        return cls(values=values[order], ids=ids[order], name=name, source=source)

    def __len__(self) -> int:
        return self.values.size

    def __repr__(self) -> str:
        return f"Population({self.name!r}, {len(self)} instances, mean {self.values.mean():.4g})"

    def subset(self, ids) -> Population:
        """The instances with the given ids, in that order."""
        position = {int(i): k for k, i in enumerate(self.ids)}
        try:
            rows = [position[int(i)] for i in ids]
        except KeyError as missing:
            raise ProbmutError(f"{self.where}: no instance with id {missing}") from None
        return Population(self.values[rows], self.ids[rows], self.name, self.source)

    @property
    def where(self) -> str:
        return self.source or self.name


def _arrays(values, ids, where) -> tuple[np.ndarray, np.ndarray]:
    """Accuracies as floats and instance ids as integers (0, 1, ... when None)."""
    try:
        values = np.asarray(values, dtype=np.float64)
        given = np.arange(values.size) if ids is None else np.asarray(ids)
        ids = given.astype(np.int64)
        if given.dtype.kind not in "iu" and not np.array_equal(ids, given.astype(np.float64)):
            raise ValueError(f"instance ids that are not whole numbers: {given[:5].tolist()}")
    except (TypeError, ValueError, OverflowError) as error:
        raise ProbmutError(f"{where}: accuracies must be numbers and instance ids "
                           f"integers ({error})") from None
    if values.ndim != 1 or ids.shape != values.shape:
        raise ProbmutError(f"{where}: accuracies and instance ids must be 1-D and of equal length")
    return values, ids


def _validate(values: np.ndarray, ids: np.ndarray, where: str) -> None:
    if values.size == 0:
        raise ProbmutError(f"{where}: no accuracies found")
    if not np.all(np.isfinite(values)):
        bad = ids[~np.isfinite(values)]
        raise ProbmutError(f"{where}: NaN or infinite accuracy for instance(s) {bad.tolist()[:10]}")
    outside = (values < 0) | (values > 1)
    if outside.any():
        raise ProbmutError(
            f"{where}: {int(outside.sum())} value(s) outside [0, 1] (e.g. instance "
            f"{int(ids[outside][0])}: {values[outside][0]:g}, largest {values.max():g}); "
            "probmut needs accuracies (shares of correct test inputs), not losses or errors"
            + ("; these look like percentages: divide them by 100" if values.min() >= 0
               and 1 < values.max() <= 100 and np.median(values) > 1 else ""))
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ProbmutError(f"{where}: duplicate instance id(s) {unique[counts > 1].tolist()[:10]}")


@checked(name=text)
def as_population(data, name: str = "population") -> Population:
    """The one way probmut turns what a user passes into a validated :class:`Population`.

    ``data`` is a Population (returned as is), a pandas Series (its index gives the
    instance ids when it holds integers), a DataFrame with ``instance`` and ``accuracy``
    columns, or any array-like of accuracies (ids 0, 1, ...).

    Returns
    -------
    Population

    Raises
    ------
    ProbmutError
        For a DataFrame without ``instance`` and ``accuracy`` columns, or data that are not
        a valid population: no accuracies, non-numeric, NaN or infinite values, duplicate
        instance ids.

    Examples
    --------
    >>> import pandas as pd
    >>> as_population(pd.Series([0.9, 0.8], index=[4, 7]), "h").ids.tolist()
    [4, 7]
    >>> as_population(pd.DataFrame({"instance": [1, 0], "accuracy": [0.8, 0.9]})).values.tolist()
    [0.9, 0.8]
    """
    if isinstance(data, Population):
        return data
    columns = getattr(data, "columns", None)
    if columns is not None:
        if "accuracy" not in columns or "instance" not in columns:
            raise ProbmutError(f"{name}: a DataFrame needs 'instance' and 'accuracy' columns, "
                               f"got {list(columns)}")
        return Population.from_values(data["accuracy"].to_numpy(), data["instance"].to_numpy(),
                                      name=name)
    index = getattr(data, "index", None)
    if index is not None and np.issubdtype(np.asarray(index).dtype, np.integer):
        return Population.from_values(np.asarray(data), np.asarray(index), name=name)
    return Population.from_values(data, name=name)


def population_like(value, name):
    """Something :func:`as_population` may take (a check of :func:`probmut.validation.checked`):
    a Population, a pandas Series or DataFrame, or an array-like of accuracies (not a
    string, a dict or a single number); returned as given."""
    if isinstance(value, Population) or is_frame(value):
        return value
    if isinstance(value, str | bytes | Mapping) or value is None or np.ndim(value) == 0:
        raise refusal(name, "must be a population (a Population, accuracies as an array or a "
                            f"pandas Series, or a DataFrame), got {shown(value)}")
    return value


def population(value, name):
    """A population, as :func:`as_population` makes it (named ``name`` unless it is a
    Population already): a check of :func:`probmut.validation.checked`."""
    return as_population(population_like(value, name), name)


#: A list of populations (the mutants), each left for the function to name and read.
populations = sequence(population_like, what="populations")


def aligned(healthy, mutant, paired: bool = False) -> tuple[Population, Population]:
    """Both populations (see :func:`as_population`), paired by instance id if ``paired``.

    Returns
    -------
    tuple of Population
        ``(healthy, mutant)``; when paired, both in the order of their instance ids.

    Raises
    ------
    ProbmutError
        For data :func:`as_population` refuses, or paired populations whose ids differ.

    Examples
    --------
    >>> h, m = aligned([0.9, 0.8], Population.from_values([0.7, 0.6], ids=[1, 0]), True)
    >>> m.values.tolist()
    [0.6, 0.7]
    """
    healthy = as_population(healthy, "healthy")
    mutant = as_population(mutant, "mutant")
    return pair(healthy, mutant) if paired else (healthy, mutant)


@checked(healthy=population, mutant=population)
def pair(healthy: Population, mutant: Population) -> tuple[Population, Population]:
    """Align two populations of a model-level mutation by instance id.

    Mutant instance i is derived from healthy instance i, so both must hold the same
    ids; an id on one side only is an error naming it.

    Returns
    -------
    tuple of Population
        ``(healthy, mutant)``, both in the order of their instance ids.

    Raises
    ------
    ProbmutError
        When an instance id is on one side only (the message names them), or for data
        that are not a population (see :func:`as_population`).

    Examples
    --------
    >>> h = Population.from_values([0.9, 0.8], ids=[3, 5], name="h")
    >>> m = Population.from_values([0.7, 0.6], ids=[5, 3], name="m")
    >>> pair(h, m)[1].values.tolist()
    [0.6, 0.7]
    """
    only_healthy = sorted(set(healthy.ids.tolist()) - set(mutant.ids.tolist()))
    only_mutant = sorted(set(mutant.ids.tolist()) - set(healthy.ids.tolist()))
    if only_healthy or only_mutant:
        details = []
        if only_healthy:
            details.append(f"ids only in {healthy.where}: {only_healthy[:10]}")
        if only_mutant:
            details.append(f"ids only in {mutant.where}: {only_mutant[:10]}")
        raise ProbmutError(
            "paired mode needs the same instance ids on both sides (mutant i is derived from "
            "healthy i); " + "; ".join(details))
    order = np.sort(healthy.ids)
    return healthy.subset(order), mutant.subset(order)
