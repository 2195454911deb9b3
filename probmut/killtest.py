"""The DeepCrime kill test: one decision from a healthy and a mutant sample.

The test statistic lives in one compiled function, :func:`pooled_z_test`, used both by
the scalar/batched API here and by the Monte-Carlo engine (:mod:`probmut.engine`).

Notes
-----
With pooled variance ``s_p^2 = ((k_x-1) var(x) + (k_y-1) var(y)) / (k_x + k_y - 2)``,
DeepCrime's Gaussian GLM ``Acc ~ Mod`` gives the coefficient ``mean(y) - mean(x)`` with
standard error ``sqrt(s_p^2 (1/k_x + 1/k_y))`` and a two-sided *z* test,
``p = erfc(|z| / sqrt(2))``. Cohen's d is ``(mean(x) - mean(y)) / s_p``. A mutant is
killed when ``p < alpha`` and the effect passes the threshold in the chosen direction.
If ``s_p = 0``: equal means give ``p = 1, d = 0``; different means give ``p = 0`` and
``d = +-inf``.

References
----------
Humbatova, Jahangirova, Tonella. DeepCrime: mutation testing of deep learning systems
based on real faults. ISSTA 2021.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba
import numpy as np

from probmut.errors import ProbmutError

#: Kill directions: which sign of Cohen's d (healthy minus mutant) counts as an effect.
DIRECTIONS = ("two-sided", "mutant-worse", "mutant-better")


@dataclass(frozen=True)
class KillCriterion:
    """Settings of the DeepCrime kill decision.

    Parameters
    ----------
    alpha : significance level; killed needs ``p < alpha``.
    effect : Cohen's d threshold; killed needs ``|d| >= effect`` (two-sided, the
        paper's rule), ``d >= effect`` (mutant-worse, DeepCrime's classifier rule) or
        ``d <= -effect`` (mutant-better, DeepCrime's regression rule).
    round_p : decimals to round p to before comparing (DeepCrime reads p from the
        printed GLM summary, i.e. 3 decimals); None compares the exact p.

    Examples
    --------
    >>> KillCriterion.paper()
    KillCriterion(alpha=0.05, effect=0.5, direction='two-sided', round_p=3)
    """

    alpha: float = 0.05
    effect: float = 0.5
    direction: str = "two-sided"
    round_p: int | None = None

    def __post_init__(self):
        if not 0 < self.alpha < 1:
            raise ProbmutError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.effect < 0:
            raise ProbmutError(f"the effect-size threshold must be >= 0, got {self.effect}")
        if self.direction not in DIRECTIONS:
            raise ProbmutError(
                f"unknown direction {self.direction!r}; choose one of {', '.join(DIRECTIONS)}")
        if self.round_p is not None and not 0 <= self.round_p <= 15:
            raise ProbmutError(f"round_p must be between 0 and 15 decimals, got {self.round_p}")

    @classmethod
    def paper(cls) -> KillCriterion:
        """The PMT paper's choices: alpha 0.05, |d| >= 0.5, p rounded to 3 decimals."""
        return cls(alpha=0.05, effect=0.5, direction="two-sided", round_p=3)

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

    def direction_code(self) -> int:
        return DIRECTIONS.index(self.direction)

    def kernel_args(self) -> tuple[float, float, int]:
        """The criterion as plain numbers for the compiled kernels."""
        return self.p_max(), float(self.effect), self.direction_code()

    def describe(self) -> str:
        sign = {"two-sided": "|d|", "mutant-worse": "d", "mutant-better": "-d"}[self.direction]
        p = "p" if self.round_p is None else f"p rounded to {self.round_p} decimals"
        return f"{p} < {self.alpha} and {sign} >= {self.effect}"


def round_p_value(p: float, decimals: int) -> float:
    """p as DeepCrime reads it from statsmodels' summary table (``'%.3f'``).

    >>> round_p_value(0.0496, 3), round_p_value(0.04949, 3)
    (0.05, 0.049)
    """
    return float(f"{p:.{decimals}f}")


@numba.njit(cache=True, nogil=True)
def pooled_z_test(x, y):
    """p-value and Cohen's d of DeepCrime's test for two 1-D float arrays (compiled)."""
    kx = x.shape[0]
    ky = y.shape[0]
    mx = 0.0
    for i in range(kx):
        mx += x[i]
    mx /= kx
    my = 0.0
    for i in range(ky):
        my += y[i]
    my /= ky
    ssx = 0.0
    for i in range(kx):
        ssx += (x[i] - mx) * (x[i] - mx)
    ssy = 0.0
    for i in range(ky):
        ssy += (y[i] - my) * (y[i] - my)
    sp2 = (ssx + ssy) / (kx + ky - 2)
    diff = mx - my
    if sp2 <= 0.0:
        if diff == 0.0:
            return 1.0, 0.0
        return 0.0, math.copysign(math.inf, diff)
    sp = math.sqrt(sp2)
    z = diff / (sp * math.sqrt(1.0 / kx + 1.0 / ky))
    return math.erfc(abs(z) / math.sqrt(2.0)), diff / sp


@numba.njit(cache=True, nogil=True)
def is_killed(p, d, p_max, effect, direction):
    """The kill rule on a p-value and Cohen's d (compiled; direction as a code)."""
    if p > p_max:
        return False
    if direction == 0:
        return abs(d) >= effect
    if direction == 1:
        return d >= effect
    return -d >= effect


@numba.njit(cache=True)
def _batch(x, y, p_max, effect, direction, p_out, d_out, killed_out):
    for t in range(x.shape[0]):
        p, d = pooled_z_test(x[t], y[t])
        p_out[t] = p
        d_out[t] = d
        killed_out[t] = is_killed(p, d, p_max, effect, direction)


@dataclass(frozen=True)
class KillTestResult:
    """The whole answer of one DeepCrime test, as one tidy row.

    ``p_value`` is the p the decision used (rounded when the criterion rounds);
    ``p_value_exact`` the unrounded one. ``effect_size`` is Cohen's d, healthy minus mutant.
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

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        verdict = "KILLED" if self.killed else "not killed"
        return (f"DeepCrime test, {self.n_healthy} healthy vs {self.n_mutant} mutant instances\n"
                f"  mean accuracy  healthy {self.mean_healthy:.6g}  mutant {self.mean_mutant:.6g}\n"
                f"  p-value {self.p_value:.6g}  Cohen's d {self.effect_size:.4f}  -> {verdict}\n"
                f"  (killed iff {self.criterion})")


def _as_sample(values, name: str) -> np.ndarray:
    array = np.asarray(getattr(values, "values", values), dtype=np.float64)
    if array.ndim != 1:
        raise ProbmutError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size < 2:
        raise ProbmutError(f"{name} needs at least 2 values, got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ProbmutError(f"{name} holds NaN or infinite values")
    return array


def deepcrime_test(healthy, mutant, criterion: KillCriterion | None = None) -> KillTestResult:
    """DeepCrime's statistical kill test on one healthy and one mutant sample.

    Parameters
    ----------
    healthy, mutant : array-like of accuracies, or :class:`probmut.data.Population`.
    criterion : the kill rule; default ``KillCriterion()`` (exact p, two-sided |d|).

    Examples
    --------
    >>> res = deepcrime_test([0.90, 0.91, 0.92, 0.91], [0.85, 0.86, 0.84, 0.86])
    >>> round(res.effect_size, 3), res.killed
    (6.462, True)

    Compare with statsmodels' GLM, which DeepCrime fits:

    >>> import statsmodels.api as sm
    >>> x, y = [0.90, 0.91, 0.92, 0.91], [0.89, 0.92, 0.90, 0.91]
    >>> design = sm.add_constant(np.r_[np.zeros(4), np.ones(4)])
    >>> glm = sm.GLM(np.r_[x, y], design).fit()
    >>> bool(np.isclose(glm.pvalues[1], deepcrime_test(x, y).p_value_exact))
    True
    """
    criterion = criterion or KillCriterion()
    x = _as_sample(healthy, "the healthy sample")
    y = _as_sample(mutant, "the mutant sample")
    p_exact, d = pooled_z_test(x, y)
    p_max, effect, direction = criterion.kernel_args()
    killed = bool(is_killed(p_exact, d, p_max, effect, direction))
    p_shown = p_exact if criterion.round_p is None else round_p_value(p_exact, criterion.round_p)
    return KillTestResult(
        p_value=p_shown, p_value_exact=float(p_exact), effect_size=float(d), killed=killed,
        n_healthy=x.size, n_mutant=y.size, mean_healthy=float(x.mean()),
        mean_mutant=float(y.mean()), criterion=criterion.describe())


def deepcrime_test_batch(healthy, mutant, criterion: KillCriterion | None = None):
    """Many DeepCrime tests at once: row t of ``healthy`` against row t of ``mutant``.

    Returns ``(p_value, effect_size, killed)`` arrays of shape ``(T,)``; p is exact
    (the decision applies the criterion's rounding).

    >>> rng = np.random.default_rng(0)
    >>> p, d, killed = deepcrime_test_batch(rng.normal(0.9, 0.01, (3, 20)),
    ...                                     rng.normal(0.89, 0.01, (3, 20)))
    >>> p.shape, killed.dtype
    ((3,), dtype('bool'))
    """
    criterion = criterion or KillCriterion()
    x = np.ascontiguousarray(healthy, dtype=np.float64)
    y = np.ascontiguousarray(mutant, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ProbmutError(
            f"batched samples must be 2-D with the same number of rows, got {x.shape} and {y.shape}")
    if x.shape[1] < 2 or y.shape[1] < 2:
        raise ProbmutError("each sample needs at least 2 values")
    p = np.empty(x.shape[0])
    d = np.empty(x.shape[0])
    killed = np.empty(x.shape[0], dtype=np.bool_)
    _batch(x, y, *criterion.kernel_args(), p, d, killed)
    return p, d, killed
