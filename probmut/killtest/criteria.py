"""The kill criteria: one registry row per criterion (:data:`CRITERIA`) and the settings of
a kill decision (:class:`KillCriterion`). Plain Python: the command line reads them
without importing numba. The compiled tests, and their maths, are in
:mod:`probmut.killtest.kernels`; the compiled dispatch that runs them, :func:`decide`, in
:mod:`probmut.killtest.dispatch`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

from probmut.errors import ProbmutError
from probmut.validation import check_fields, choice, integer, number, optional

#: Kill directions: which sign of the effect (healthy minus mutant) counts as an effect.
DIRECTIONS = ("two-sided", "mutant-worse", "mutant-better")


@dataclass(frozen=True, kw_only=True)
class Criterion:
    """One kill criterion: a row of the registry :data:`CRITERIA`.

    ``kernel_name`` names the compiled ``(x, y) -> (p, effect, effect in the
    mutant-better sense)`` in :mod:`probmut.killtest.kernels` (:attr:`kernel`, imported
    on first use); its position in the registry is the id the compiled dispatch uses.
    ``rules`` maps each direction to what must reach the effect threshold; ``bounds`` is
    the range of valid thresholds. Rows are built with keywords (docs/criteria.md).
    """

    name: str
    test: str
    label: str
    effect: str
    symbol: str
    thresholds: dict
    sources: str
    rules: dict
    bounds: tuple
    kernel_name: str
    description: str
    paired: bool = False

    @property
    def kernel(self) -> Callable:
        """The compiled test (importing numba on first use)."""
        return getattr(importlib.import_module("probmut.killtest.kernels"), self.kernel_name)


def _signed_rules(symbol: str) -> dict:
    return {"two-sided": f"|{symbol}|", "mutant-worse": symbol, "mutant-better": f"-{symbol}"}


_COHEN_D = {"small": 0.2, "medium": 0.5, "large": 0.8}

#: The kill criteria, by name (``KillCriterion.kind``); the order gives the kernel ids.
CRITERIA = {c.name: c for c in (
    Criterion(name="deepcrime", test="DeepCrime test", label="", effect="Cohen's d",
              symbol="d", thresholds=_COHEN_D, sources="Cohen (1988)",
              rules=_signed_rules("d"), bounds=(0.0, math.inf), kernel_name="pooled_z_test",
              description="DeepCrime's GLM z-test (pooled variance, normal tail) + Cohen's d"),
    Criterion(name="welch", test="Welch's t-test", label="Welch ", effect="Cohen's d",
              symbol="d", thresholds=_COHEN_D, sources="Cohen (1988)",
              rules=_signed_rules("d"), bounds=(0.0, math.inf), kernel_name="welch_test",
              description="Welch's unequal-variance t-test + Cohen's d"),
    Criterion(name="mannwhitney", test="Mann-Whitney U test", label="Mann-Whitney ",
              effect="Vargha-Delaney A12", symbol="A12",
              thresholds={"small": 0.56, "medium": 0.64, "large": 0.71},
              sources="Vargha and Delaney (2000)",
              rules={"two-sided": "max(A12, 1-A12)", "mutant-worse": "A12",
                     "mutant-better": "1-A12"},
              bounds=(0.5, 1.0), kernel_name="mann_whitney_test",
              description="Mann-Whitney U + Vargha-Delaney A12"),
    Criterion(name="paired-t", test="Paired t-test", label="paired t ", effect="Cohen's d_z",
              symbol="d_z", thresholds=_COHEN_D,
              sources="Cohen (1988), as for d (Lakens 2013)", rules=_signed_rules("d_z"),
              bounds=(0.0, math.inf), kernel_name="paired_t_test",
              description="Student's t-test on the per-instance differences + Cohen's d_z "
                          "(paired data)",
              paired=True),
    Criterion(name="wilcoxon", test="Wilcoxon signed-rank test", label="Wilcoxon ",
              effect="rank-biserial r", symbol="r_rb",
              thresholds={"small": 0.1, "medium": 0.3, "large": 0.5},
              sources="Cohen (1988) for correlations", rules=_signed_rules("r_rb"),
              bounds=(0.0, 1.0), kernel_name="wilcoxon_test",
              description="Wilcoxon signed-rank test + matched-pairs rank-biserial r "
                          "(paired data)",
              paired=True),
)}

#: Criterion names, in kernel-id order.
KINDS = tuple(CRITERIA)


@dataclass(frozen=True)
class KillCriterion:
    """Settings of a kill decision: which test, its significance threshold (alpha) and its
    effect-size threshold.

    Parameters
    ----------
    alpha : float
        The significance threshold: killed needs ``p < alpha``.
    effect : float or {"small", "medium", "large"} or None
        The effect-size threshold, a number or a named size (each criterion's
        ``thresholds`` in :data:`CRITERIA`); None: medium. For ``deepcrime``, ``welch``
        and ``paired-t`` it is on Cohen's d (d_z): killed needs ``|d| >= effect``
        (two-sided, the paper's rule), ``d >= effect`` (mutant-worse, DeepCrime's
        classifier rule) or ``d <= -effect`` (mutant-better, DeepCrime's regression
        rule). For ``mannwhitney`` it is on A12, in [0.5, 1]: ``max(A12, 1 - A12)``,
        ``A12`` or ``1 - A12`` must reach it; for ``wilcoxon`` on the rank-biserial r_rb,
        in [0, 1], signed like d.
    direction : str
        One of :data:`DIRECTIONS`.
    round_p : int or None
        The decimals to round p to before comparing (DeepCrime reads p from the printed
        GLM summary, i.e. 3 decimals); None compares the exact p. Applies to every kind.
    kind : str
        A name of :data:`CRITERIA`; ``paired-t`` and ``wilcoxon`` need paired data.

    Raises
    ------
    ProbmutError
        For an unknown kind or direction, an alpha outside (0, 1), an effect threshold
        that is not a number or name of the criterion's or lies outside its bounds, or a
        ``round_p`` outside 0 to 15.

    Examples
    --------
    >>> KillCriterion(round_p=3)
    KillCriterion(alpha=0.05, effect=0.5, direction='two-sided', round_p=3, kind='deepcrime')
    >>> KillCriterion(kind="mannwhitney", effect="large").describe()
    'Mann-Whitney p < 0.05 and max(A12, 1-A12) >= 0.71'
    >>> KillCriterion(kind="wilcoxon", direction="mutant-worse").describe()
    'Wilcoxon p < 0.05 and r_rb >= 0.3'
    """

    alpha: float = 0.05
    effect: float | str | None = None
    direction: str = "two-sided"
    round_p: int | None = None
    kind: str = "deepcrime"

    def __post_init__(self):
        check_fields(self, kind=choice(KINDS),
                     alpha=number(0, 1, low_open=True, high_open=True),
                     direction=choice(DIRECTIONS), round_p=optional(integer(0, 15)))
        spec = self.spec
        object.__setattr__(self, "effect", _effect_threshold(self.effect, spec))
        low, high = spec.bounds
        if not low <= self.effect <= high:
            named = ", ".join(f"{k} {v:g}" for k, v in spec.thresholds.items())
            raise ProbmutError(
                f"for the {self.kind} criterion the effect threshold is on {spec.symbol} and "
                f"must be in [{low:g}, {high:g}] ({named}), got {self.effect}")

    @property
    def spec(self) -> Criterion:
        """This criterion's row of :data:`CRITERIA`."""
        return CRITERIA[self.kind]

    def require_pairing(self, paired: bool) -> None:
        """Refuse a paired criterion (``paired-t``, ``wilcoxon``) on unpaired populations.

        >>> KillCriterion(kind="paired-t").require_pairing(False)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        probmut.errors.ProbmutError: the paired-t criterion needs paired populations ...
        """
        if self.spec.paired and not paired:
            independent = ", ".join(c.name for c in CRITERIA.values() if not c.paired)
            raise ProbmutError(
                f"the {self.kind} criterion needs paired populations (a model-level mutation: "
                "mutant i derived from healthy i, aligned by instance id), but these are "
                f"independent; choose a criterion for independent samples ({independent})",
                option="criterion")

    def p_max(self) -> float:
        """Largest p-value that still counts as significant (kill needs ``p <= p_max``).

        Without rounding this is the float just below alpha. With rounding it is the
        largest float whose printed form (``'%.*f'``, as statsmodels prints it) is below
        alpha, so the compiled kernels need no string formatting.

        >>> KillCriterion(round_p=3).p_max() < 0.0495 < KillCriterion(round_p=3).p_max() + 1e-15
        True
        """
        if self.round_p is None:
            return math.nextafter(self.alpha, 0.0)
        def shown_below_alpha(p):
            return round_p_value(p, self.round_p) < self.alpha
        cutoff = self.alpha - 0.5 * 10.0 ** (-self.round_p)
        while shown_below_alpha(math.nextafter(cutoff, 1.0)):
            cutoff = math.nextafter(cutoff, 1.0)
        while not shown_below_alpha(cutoff):
            cutoff = math.nextafter(cutoff, 0.0)
        return cutoff

    def kernel_args(self) -> tuple[int, float, float, int]:
        """The criterion as plain numbers for the compiled
        :func:`~probmut.killtest.dispatch.decide`: kind, p_max, effect, direction."""
        return (KINDS.index(self.kind), self.p_max(), float(self.effect),
                DIRECTIONS.index(self.direction))

    def describe(self) -> str:
        spec = self.spec
        p = "p" if self.round_p is None else f"p rounded to {self.round_p} decimals"
        return f"{spec.label}{p} < {self.alpha} and {spec.rules[self.direction]} >= {self.effect}"


def _effect_threshold(effect, spec: Criterion) -> float:
    named = spec.thresholds
    if effect is None:
        return named["medium"]
    if isinstance(effect, str):
        if effect in named:
            return named[effect]
        try:
            effect = float(effect)
        except ValueError:
            raise ProbmutError(f"unknown effect size {effect!r}; give a number or one of "
                               f"{', '.join(named)}", option="effect") from None
    return number(0)(effect, "effect")


def round_p_value(p: float, decimals: int) -> float:
    """p as DeepCrime reads it from statsmodels' summary table (``'%.3f'``).

    >>> round_p_value(0.0496, 3), round_p_value(0.04949, 3)
    (0.05, 0.049)
    """
    return float(f"{p:.{decimals}f}")
