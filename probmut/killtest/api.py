"""The kill tests as a library: one test (:func:`kill_test`), many at once
(:func:`kill_test_batch`) and a table of mutants against one healthy population
(:func:`kill_tests`), each with the criterion of :class:`~probmut.killtest.criteria.KillCriterion`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from probmut.compiled import compiled
from probmut.errors import ProbmutError
from probmut.killtest.criteria import CRITERIA, KillCriterion, round_p_value
from probmut.killtest.dispatch import decide
from probmut.population import population, populations
from probmut.results import Result, listing
from probmut.validation import accuracies, checked, flag, instance, optional

#: A kill criterion argument: a KillCriterion, or None for the default.
criterion_check = optional(instance(KillCriterion))


@compiled()
def _batch(x, y, kind, p_max, effect, direction, p_out, effect_out, killed_out):
    for t in range(x.shape[0]):
        p_out[t], effect_out[t], killed_out[t] = decide(kind, x[t], y[t], p_max, effect,
                                                        direction)


@dataclass(frozen=True)
class KillTestResult(Result):
    """The whole answer of one kill test, as one tidy row.

    ``p_value`` is the p the decision used (rounded when the criterion rounds);
    ``p_value_exact`` the unrounded one. ``effect_size`` is the criterion's (healthy
    minus mutant): Cohen's d for ``deepcrime`` and ``welch``, A12 (P(healthy > mutant))
    for ``mannwhitney``, d_z for ``paired-t``, r_rb for ``wilcoxon``.
    """

    p_value: float
    p_value_exact: float
    effect_size: float
    killed: bool
    n_healthy: int
    n_mutant: int
    mean_healthy: float
    mean_mutant: float
    criterion: str
    kind: str = "deepcrime"

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        spec = CRITERIA[self.kind]
        verdict = "KILLED" if self.killed else "not killed"
        instances = (f"{self.n_healthy} pairs of healthy and mutant instances" if spec.paired
                     else f"{self.n_healthy} healthy vs {self.n_mutant} mutant instances")
        return (f"{spec.test}, {instances}\n"
                f"  mean accuracy  healthy {self.mean_healthy:.6g}  mutant {self.mean_mutant:.6g}\n"
                f"  p-value {self.p_value:.6g}  {spec.effect} {self.effect_size:.4f}"
                f"  -> {verdict}\n"
                f"  (killed iff {self.criterion})")


def _as_sample(array: np.ndarray, name: str) -> np.ndarray:
    if array.ndim != 1:
        raise ProbmutError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size < 2:
        raise ProbmutError(f"{name} needs at least 2 values, got {array.size}")
    return array


def _require_pairs(criterion: KillCriterion, n_healthy: int, n_mutant: int) -> None:
    if criterion.spec.paired and n_healthy != n_mutant:
        raise ProbmutError(
            f"the {criterion.kind} criterion compares pairs (mutant i derived from healthy i) "
            f"and needs samples of the same size, got {n_healthy} healthy and {n_mutant} "
            "mutant values")


@checked(healthy=accuracies, mutant=accuracies, criterion=criterion_check)
def kill_test(healthy, mutant, criterion: KillCriterion | None = None) -> KillTestResult:
    """The kill test on one healthy and one mutant sample (DeepCrime's unless the
    criterion's ``kind`` says otherwise).

    Parameters
    ----------
    healthy, mutant : array_like or Population
        The two samples' accuracies, or :class:`probmut.population.Population`. For a
        paired criterion, value i of both is a pair: align populations by instance id
        first (:func:`probmut.population.pair`).
    criterion : KillCriterion, optional
        The kill rule (default ``KillCriterion()``: DeepCrime, exact p, |d| >= 0.5).

    Returns
    -------
    KillTestResult
        The p-value (rounded as the criterion says, and exact), the effect size, the
        decision, the sizes and means of both samples.

    Raises
    ------
    ProbmutError
        For a sample with fewer than 2 values or a non-finite one, or a paired criterion
        on samples of different sizes; an argument of the wrong type.

    Examples
    --------
    >>> res = kill_test([0.90, 0.91, 0.92, 0.91], [0.85, 0.86, 0.84, 0.86])
    >>> round(res.effect_size, 3), res.killed
    (6.462, True)

    Compare with statsmodels' GLM, which DeepCrime fits:

    >>> import statsmodels.api as sm
    >>> x, y = [0.90, 0.91, 0.92, 0.91], [0.89, 0.92, 0.90, 0.91]
    >>> design = sm.add_constant(np.r_[np.zeros(4), np.ones(4)])
    >>> glm = sm.GLM(np.r_[x, y], design).fit()
    >>> bool(np.isclose(glm.pvalues[1], kill_test(x, y).p_value_exact))
    True

    The other criteria agree with SciPy:

    >>> from scipy import stats
    >>> welch = kill_test(x, y, KillCriterion(kind="welch"))
    >>> bool(np.isclose(welch.p_value, stats.ttest_ind(x, y, equal_var=False).pvalue))
    True
    >>> mw = kill_test(x, y, KillCriterion(kind="mannwhitney"))
    >>> bool(np.isclose(mw.p_value, stats.mannwhitneyu(x, y, method="asymptotic").pvalue))
    True
    >>> paired = kill_test(x, y, KillCriterion(kind="paired-t"))
    >>> bool(np.isclose(paired.p_value, stats.ttest_rel(x, y).pvalue))
    True
    >>> signed_rank = kill_test(x, y, KillCriterion(kind="wilcoxon"))
    >>> bool(signed_rank.p_value == stats.wilcoxon(x, y).pvalue)
    True

    Equal constant samples are no effect, whatever their sizes:

    >>> same = kill_test([0.7] * 7, [0.7] * 3)
    >>> same.p_value, same.effect_size, same.killed
    (1.0, 0.0, False)
    """
    criterion = criterion or KillCriterion()
    x = _as_sample(healthy, "the healthy sample")
    y = _as_sample(mutant, "the mutant sample")
    _require_pairs(criterion, x.size, y.size)
    kind, p_max, effect, direction = criterion.kernel_args()
    p_exact, size, killed = decide(kind, x, y, p_max, effect, direction)
    p_shown = p_exact if criterion.round_p is None else round_p_value(p_exact, criterion.round_p)
    return KillTestResult(
        p_value=p_shown, p_value_exact=float(p_exact), effect_size=float(size),
        killed=bool(killed), n_healthy=x.size, n_mutant=y.size, mean_healthy=float(x.mean()),
        mean_mutant=float(y.mean()), criterion=criterion.describe(), kind=criterion.kind)


@checked(healthy=accuracies, mutant=accuracies, criterion=criterion_check)
def kill_test_batch(healthy, mutant, criterion: KillCriterion | None = None):
    """Many kill tests at once: row t of ``healthy`` against row t of ``mutant``.

    Returns
    -------
    p_value, effect_size, killed : numpy.ndarray
        Arrays of shape ``(T,)``; p is exact (the decision applies the criterion's
        rounding); the effect size is the criterion's (Cohen's d, A12, d_z or r_rb).

    Raises
    ------
    ProbmutError
        Samples that are not 2-D with as many rows, or hold fewer than 2 values per row,
        or unequal rows for a paired criterion; a row holding NaN or an infinite value
        (the first such row is named).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p, d, killed = kill_test_batch(rng.normal(0.9, 0.01, (3, 20)),
    ...                                     rng.normal(0.89, 0.01, (3, 20)))
    >>> p.shape, killed.dtype
    ((3,), dtype('bool'))
    """
    criterion = criterion or KillCriterion()
    x, y = np.ascontiguousarray(healthy), np.ascontiguousarray(mutant)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ProbmutError(
            "batched samples must be 2-D with the same number of rows, got "
            f"{x.shape} and {y.shape}")
    if x.shape[1] < 2 or y.shape[1] < 2:
        raise ProbmutError("each sample needs at least 2 values")
    _require_pairs(criterion, x.shape[1], y.shape[1])
    p = np.empty(x.shape[0])
    size = np.empty(x.shape[0])
    killed = np.empty(x.shape[0], dtype=np.bool_)
    _batch(x, y, *criterion.kernel_args(), p, size, killed)
    return p, size, killed


@dataclass(frozen=True)
class KillTable(Result):
    """Kill tests of several mutants against one healthy population, one row each
    (``to_frame()``: one row per mutant)."""

    names: list
    results: list

    def rows(self) -> list[dict]:
        return [r.to_dict() | {"name": n} for n, r in zip(self.names, self.results, strict=True)]

    def to_dict(self) -> dict:
        rows = self.rows()
        return rows[0] if len(rows) == 1 else listing(rows)

    def __str__(self) -> str:
        if len(self.results) == 1:
            return f"{self.names[0]}: {self.results[0]}"
        spec = CRITERIA[self.results[0].kind]
        lines = [f"{spec.test} on whole populations (kill iff {self.results[0].criterion})",
                 f"{'population':<24}{'n_h':>5}{'n_m':>5}{'p-value':>10}{spec.symbol:>9}  decision"]
        lines += [f"{n:<24}{r.n_healthy:>5}{r.n_mutant:>5}{r.p_value:>10.4g}"
                  f"{r.effect_size:>9.4f}  {'KILLED' if r.killed else 'not killed'}"
                  for n, r in zip(self.names, self.results, strict=True)]
        return "\n".join(lines)


@checked(healthy=population, mutants=populations, criterion=criterion_check, paired=flag)
def kill_tests(healthy, mutants, criterion: KillCriterion | None = None, *,
               paired: bool = False) -> KillTable:
    """The kill test of each mutant population against ``healthy`` (paired by instance
    id for model-level mutations; the paired criteria need ``paired=True``).

    Returns
    -------
    KillTable
        One :class:`KillTestResult` per mutant, in order (``to_frame()``: one row each).

    Raises
    ------
    ProbmutError
        As :func:`kill_test`, and for unpaired instance ids when ``paired``, or mutants
        that are not a list of populations.

    >>> table = kill_tests([0.90, 0.91, 0.92, 0.91], [[0.89, 0.90, 0.91, 0.90]])
    >>> frame = table.to_frame()
    >>> frame.index.tolist(), frame["effect_size"].round(3).tolist(), frame["killed"].tolist()
    (['mutant 1'], [1.225], [False])
    """
    from probmut.population import aligned, as_population

    criterion = criterion or KillCriterion()
    criterion.require_pairing(paired)
    mutants = [as_population(m, f"mutant {i}") for i, m in enumerate(mutants, start=1)]
    results = [kill_test(*aligned(healthy, mutant, paired), criterion)
               for mutant in mutants]
    return KillTable([m.name for m in mutants], results)
