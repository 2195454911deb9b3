"""Long-format entry points, in the pingouin manner: one tidy DataFrame in (one row per
instance), the same result objects out.

``data`` holds a column of accuracies (``dv``), a column naming each row's population
(``between``; the value ``healthy`` marks the healthy population, every other value is a
mutant, in order of first appearance) and, for model-level mutations, a column of
instance ids (``instance``) that pairs mutant i with healthy i.

Examples
--------
>>> import pandas as pd
>>> data = pd.DataFrame({
...     "population": ["healthy"] * 4 + ["fuzzed"] * 4,
...     "instance": [0, 1, 2, 3] * 2,
...     "accuracy": [0.90, 0.91, 0.92, 0.91, 0.85, 0.86, 0.84, 0.86]})
>>> kill_tests_from_table(data, instance="instance", paired=True).to_frame()["killed"].tolist()
[True]
"""

from __future__ import annotations

from probmut.errors import ProbmutError
from probmut.population import Population
from probmut.validation import checked, flag, renamed, table


def split(data, dv: str = "accuracy", between: str = "population",
          healthy: str = "healthy", instance: str | None = None):
    """The healthy :class:`~probmut.population.Population` and the mutant ones of a
    long table (see the module doc).

    Returns
    -------
    tuple
        ``(healthy, mutants)``: the healthy Population and a list of the others, in the
        order they first appear.

    Raises
    ------
    ProbmutError
        When ``dv``, ``between`` or ``instance`` is not a column, or no row is the healthy
        population's; or for accuracies a Population refuses.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"population": ["healthy", "m", "healthy", "m"],
    ...                       "accuracy": [0.9, 0.8, 0.91, 0.81]})
    >>> h, (m,) = split(table)
    >>> h.values.tolist(), m.name
    ([0.9, 0.91], 'm')
    """
    columns = list(getattr(data, "columns", []))
    for role, column in (("dv", dv), ("between", between), ("instance", instance)):
        if column is not None and column not in columns:
            raise ProbmutError(f"{role}={column!r} is not a column of the data (columns: "
                               f"{columns})")
    groups = list(dict.fromkeys(data[between].tolist()))
    if healthy not in groups:
        raise ProbmutError(f"no row has {between} == {healthy!r}; the populations are {groups}")

    def population(name):
        rows = data[data[between] == name]
        ids = rows[instance].to_numpy() if instance else None
        return Population.from_values(rows[dv].to_numpy(), ids, name=str(name))

    return population(healthy), [population(name) for name in groups if name != healthy]


@renamed(subject="instance")
@checked(data=table, paired=flag)
def kill_tests_from_table(data, dv: str = "accuracy", between: str = "population",
                          healthy: str = "healthy", instance: str | None = None,
                          paired: bool = False, criterion=None):
    """The kill test of every mutant population of a long table against the healthy one:
    a :class:`~probmut.killtest.KillTable` (``to_frame()``: one row per mutant).

    ``paired`` pairs instances by ``instance`` (model-level mutations).

    Returns
    -------
    KillTable
        One row per mutant population, in the table's order.

    Raises
    ------
    ProbmutError
        For data that are not a DataFrame, a table :func:`split` refuses, paired without
        ``instance``, no mutant rows, or any error of :func:`~probmut.killtest.kill_tests`.
    """
    from probmut.killtest import kill_tests

    healthy_population, mutants = _checked(data, dv, between, healthy, instance, paired)
    return kill_tests(healthy_population, mutants, criterion, paired=paired)


@renamed(jobs="threads", subject="instance")
@checked(data=table, paired=flag)
def posteriors_from_table(data, dv: str = "accuracy", between: str = "population",
                          healthy: str = "healthy", instance: str | None = None,
                          paired: bool = False, settings=None, seed=None,
                          threads: int | None = None):
    """Bagged posteriors of every mutant population of a long table: a
    :class:`~probmut.bagging.PosteriorStudy` (baseline first; ``to_frame()``).

    Returns
    -------
    PosteriorStudy
        The healthy baseline's posterior first, then each mutant's in the table's order.

    Raises
    ------
    ProbmutError
        For data that are not a DataFrame, a table :func:`split` refuses, paired without
        ``instance``, no mutant rows, or any error of :func:`~probmut.bagging.bagged_posteriors`.
    """
    from probmut.bagging import bagged_posteriors

    healthy_population, mutants = _checked(data, dv, between, healthy, instance, paired)
    return bagged_posteriors(healthy_population, mutants, settings, paired=paired, seed=seed,
                             threads=threads)


def _checked(data, dv, between, healthy, instance, paired):
    if paired and instance is None:
        raise ProbmutError("paired populations need the instance column that holds the "
                           "instance ids (instance=...)")
    healthy_population, mutants = split(data, dv, between, healthy, instance)
    if not mutants:
        raise ProbmutError(f"the data hold only the healthy population ({between} == "
                           f"{healthy!r}); add rows of at least one mutant")
    return healthy_population, mutants
