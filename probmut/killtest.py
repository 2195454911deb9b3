"""Kill tests: one decision from a healthy and a mutant sample.

Three criteria (``KillCriterion.kind``), each a significance test plus an effect size:

- ``deepcrime`` (default): DeepCrime's GLM z-test and Cohen's d (METHOD.md section 1);
- ``welch``: Welch's unequal-variance t-test and Cohen's d;
- ``mannwhitney``: the Mann-Whitney U test (normal approximation with tie and continuity
  correction, as ``scipy.stats.mannwhitneyu`` computes it for samples larger than 8) and
  the Vargha-Delaney A12 effect size.

One compiled function, :func:`decide`, dispatches on the kind; the scalar and batched
API here and the Monte-Carlo engine (:mod:`probmut.engine`) all call it.

Notes
-----
With pooled variance ``s_p^2 = ((k_x-1) var(x) + (k_y-1) var(y)) / (k_x + k_y - 2)``,
DeepCrime's Gaussian GLM ``Acc ~ Mod`` gives the coefficient ``mean(y) - mean(x)`` with
standard error ``sqrt(s_p^2 (1/k_x + 1/k_y))`` and a two-sided *z* test,
``p = erfc(|z| / sqrt(2))``. Cohen's d is ``(mean(x) - mean(y)) / s_p``. A mutant is
killed when ``p < alpha`` and the effect passes the threshold in the chosen direction.
If ``s_p = 0``: equal means give ``p = 1, d = 0``; different means give ``p = 0`` and
``d = +-inf``.

Welch: ``t = (mean(x) - mean(y)) / sqrt(var(x)/k_x + var(y)/k_y)`` with the
Welch-Satterthwaite degrees of freedom and ``p = I_{df/(df+t^2)}(df/2, 1/2)`` (two-sided
Student t tail, via the regularized incomplete beta function :func:`betainc`). The
effect size is the same pooled Cohen's d (for equal sample sizes it equals the
average-variance d often paired with Welch's test). Degenerate samples as above.

Mann-Whitney: ``U`` counts healthy-mutant pairs with the healthy value larger (ties
count 1/2); ``A12 = U / (k_x k_y)`` is the probability that a healthy instance beats a
mutant one (0.5: no effect; above 0.5: mutant worse). ``z = (max(U, k_x k_y - U) -
k_x k_y / 2 - 1/2) / s`` with the tie-corrected ``s``; ``p = min(1, erfc(z / sqrt(2)))``.
All values tied: ``p = 1, A12 = 0.5``. The effect threshold is on A12 itself: the
mutant is killed when ``max(A12, 1 - A12)`` (two-sided), ``A12`` (mutant-worse) or
``1 - A12`` (mutant-better) reaches it; Vargha and Delaney's small, medium and large
effects are 0.56, 0.64 and 0.71.

References
----------
Humbatova, Jahangirova, Tonella. DeepCrime: mutation testing of deep learning systems
based on real faults. ISSTA 2021.

Vargha, Delaney. A critique and improvement of the CL common language effect size
statistics of McGraw and Wong. Journal of Educational and Behavioral Statistics, 2000.

Arcuri, Briand. A practical guide for using statistical tests to assess randomized
algorithms in software engineering. ICSE 2011.

Press, Teukolsky, Vetterling, Flannery. Numerical Recipes, 3rd ed., section 6.4
(incomplete beta function by continued fraction).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numba
import numpy as np

from probmut.errors import ProbmutError
from probmut.results import Result

#: Kill directions: which sign of the effect (healthy minus mutant) counts as an effect.
DIRECTIONS = ("two-sided", "mutant-worse", "mutant-better")

#: Kill criteria: which test and effect size decide (see the module notes).
KINDS = ("deepcrime", "welch", "mannwhitney")

#: Named effect-size thresholds: Cohen's d (Cohen 1988) for ``deepcrime`` and ``welch``,
#: Vargha-Delaney A12 for ``mannwhitney``. "medium" is each kind's default.
EFFECT_SIZES = {
    "deepcrime": {"small": 0.2, "medium": 0.5, "large": 0.8},
    "welch": {"small": 0.2, "medium": 0.5, "large": 0.8},
    "mannwhitney": {"small": 0.56, "medium": 0.64, "large": 0.71},
}

TEST_NAMES = {"deepcrime": "DeepCrime test", "welch": "Welch's t-test",
               "mannwhitney": "Mann-Whitney U test"}


@dataclass(frozen=True)
class KillCriterion:
    """Settings of a kill decision: which test, its level and its effect-size threshold.

    Parameters
    ----------
    alpha : significance level; killed needs ``p < alpha``.
    effect : effect-size threshold, a number or ``"small"``, ``"medium"``, ``"large"``
        (see :data:`EFFECT_SIZES`); None: medium (Cohen's d 0.5, A12 0.64). For
        ``deepcrime`` and ``welch`` it is on Cohen's d: killed needs ``|d| >= effect``
        (two-sided, the paper's rule), ``d >= effect`` (mutant-worse, DeepCrime's
        classifier rule) or ``d <= -effect`` (mutant-better, DeepCrime's regression
        rule). For ``mannwhitney`` it is on A12, in [0.5, 1]: ``max(A12, 1 - A12)``,
        ``A12`` or ``1 - A12`` must reach it.
    direction : one of :data:`DIRECTIONS`.
    round_p : decimals to round p to before comparing (DeepCrime reads p from the
        printed GLM summary, i.e. 3 decimals); None compares the exact p. Applies to
        every kind.
    kind : one of :data:`KINDS`.

    Examples
    --------
    >>> KillCriterion(round_p=3)
    KillCriterion(alpha=0.05, effect=0.5, direction='two-sided', round_p=3, kind='deepcrime')
    >>> KillCriterion(kind="mannwhitney", effect="large").describe()
    'Mann-Whitney p < 0.05 and max(A12, 1-A12) >= 0.71'
    """

    alpha: float = 0.05
    effect: float | str | None = None
    direction: str = "two-sided"
    round_p: int | None = None
    kind: str = "deepcrime"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ProbmutError(
                f"unknown kill criterion {self.kind!r}; choose one of {', '.join(KINDS)}")
        object.__setattr__(self, "effect", _effect_threshold(self.effect, self.kind))
        if not 0 < self.alpha < 1:
            raise ProbmutError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.kind == "mannwhitney" and not 0.5 <= self.effect <= 1:
            raise ProbmutError(
                f"for the mannwhitney criterion the effect threshold is on A12 and must be in "
                f"[0.5, 1] (small 0.56, medium 0.64, large 0.71), got {self.effect}")
        if not (math.isfinite(self.effect) and self.effect >= 0):
            raise ProbmutError(f"the effect-size threshold must be a number >= 0, got {self.effect}")
        if self.direction not in DIRECTIONS:
            raise ProbmutError(
                f"unknown direction {self.direction!r}; choose one of {', '.join(DIRECTIONS)}")
        if self.round_p is not None and not 0 <= self.round_p <= 15:
            raise ProbmutError(f"round_p must be between 0 and 15 decimals, got {self.round_p}")

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

    def kind_code(self) -> int:
        return KINDS.index(self.kind)

    def kernel_args(self) -> tuple[int, float, float, int]:
        """The criterion as plain numbers for :func:`decide`: kind, p_max, effect, direction."""
        return self.kind_code(), self.p_max(), float(self.effect), self.direction_code()

    def describe(self) -> str:
        if self.kind == "mannwhitney":
            size = {"two-sided": "max(A12, 1-A12)", "mutant-worse": "A12",
                    "mutant-better": "1-A12"}[self.direction]
        else:
            size = {"two-sided": "|d|", "mutant-worse": "d", "mutant-better": "-d"}[self.direction]
        p = "p" if self.round_p is None else f"p rounded to {self.round_p} decimals"
        test = {"deepcrime": "", "welch": "Welch ", "mannwhitney": "Mann-Whitney "}[self.kind]
        return f"{test}{p} < {self.alpha} and {size} >= {self.effect}"


def _effect_threshold(effect, kind: str) -> float:
    named = EFFECT_SIZES[kind]
    if effect is None:
        return named["medium"]
    if isinstance(effect, str):
        if effect in named:
            return named[effect]
        try:
            return float(effect)
        except ValueError:
            raise ProbmutError(f"unknown effect size {effect!r}; give a number or one of "
                               f"{', '.join(named)}") from None
    return float(effect)


def round_p_value(p: float, decimals: int) -> float:
    """p as DeepCrime reads it from statsmodels' summary table (``'%.3f'``).

    >>> round_p_value(0.0496, 3), round_p_value(0.04949, 3)
    (0.05, 0.049)
    """
    return float(f"{p:.{decimals}f}")


@numba.njit(cache=True, nogil=True, inline="always")
def _moments(x, y):
    # Means and sums of squared deviations of both samples (the order of the loops is
    # the fastest measured for the engine; keep it).
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
    return mx, ssx, my, ssy


@numba.njit(cache=True, nogil=True)
def pooled_z_test(x, y):
    """p-value and Cohen's d of DeepCrime's test for two 1-D float arrays (compiled)."""
    kx = x.shape[0]
    ky = y.shape[0]
    mx, ssx, my, ssy = _moments(x, y)
    sp2 = (ssx + ssy) / (kx + ky - 2)
    diff = mx - my
    if sp2 <= 0.0:
        if diff == 0.0:
            return 1.0, 0.0
        return 0.0, math.copysign(math.inf, diff)
    sp = math.sqrt(sp2)
    z = diff / (sp * math.sqrt(1.0 / kx + 1.0 / ky))
    return math.erfc(abs(z) / math.sqrt(2.0)), diff / sp


@numba.njit(cache=True, nogil=True, inline="always")
def _lentz_step(aa, c, d):
    # One term of the modified Lentz method: returns the new c, d and the factor c * d.
    tiny = 1e-300
    d = 1.0 + aa * d
    if abs(d) < tiny:
        d = tiny
    c = 1.0 + aa / c
    if abs(c) < tiny:
        c = tiny
    d = 1.0 / d
    return c, d, c * d


@numba.njit(cache=True, nogil=True)
def _beta_continued_fraction(a, b, x):
    # Continued fraction of I_x(a, b) by the modified Lentz method (Numerical Recipes 6.4).
    _, d, _ = _lentz_step(-(a + b) * x / (a + 1.0), 1.0, 1.0)
    c, h = 1.0, d
    for m in range(1, 10000):
        m2 = 2 * m
        c, d, step = _lentz_step(m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)), c, d)
        h *= step
        c, d, step = _lentz_step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)), c, d)
        h *= step
        if abs(step - 1.0) < 1e-16:
            break
    return h


@numba.njit(cache=True, nogil=True)
def _betainc_complement(a, b, x, y):
    # I_x(a, b) given x and y = 1 - x separately, so callers keep the small one exact.
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


@numba.njit(cache=True, nogil=True)
def betainc(a, b, x):
    """Regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``.

    Compiled (continued fraction, Numerical Recipes 6.4); agrees with
    :func:`scipy.special.betainc` to about 1e-13 relative.

    >>> from scipy import special
    >>> bool(abs(betainc(2.5, 0.5, 0.3) - special.betainc(2.5, 0.5, 0.3)) < 1e-15)
    True
    """
    return _betainc_complement(a, b, x, 1.0 - x)


@numba.njit(cache=True, nogil=True)
def welch_test(x, y):
    """p-value of Welch's t-test and (pooled) Cohen's d for two 1-D float arrays (compiled)."""
    kx = x.shape[0]
    ky = y.shape[0]
    mx, ssx, my, ssy = _moments(x, y)
    diff = mx - my
    if ssx + ssy <= 0.0:
        if diff == 0.0:
            return 1.0, 0.0
        return 0.0, math.copysign(math.inf, diff)
    vx = ssx / (kx - 1) / kx
    vy = ssy / (ky - 1) / ky
    se2 = vx + vy
    df = se2 * se2 / (vx * vx / (kx - 1) + vy * vy / (ky - 1))
    t2 = diff * diff / se2
    # Two-sided Student t tail: I_{df/(df+t^2)}(df/2, 1/2).
    p = _betainc_complement(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2))
    return p, diff / math.sqrt((ssx + ssy) / (kx + ky - 2))


@numba.njit(cache=True, nogil=True)
def mann_whitney_test(x, y):
    """Two-sided Mann-Whitney p-value, A12 and 1 - A12 for two 1-D float arrays (compiled).

    ``A12`` is the probability that a value of ``x`` (healthy) exceeds one of ``y``
    (mutant), ties counting one half; ``1 - A12`` is returned as computed from the
    complementary count, so thresholds compare exactly.
    """
    # Pair counts instead of ranks: no sorting and no allocation inside the kernels. For
    # each value, c = how many values of both samples equal it; sum(c^2 - 1) over all
    # values is the tie term sum(t^3 - t) over groups of t tied values.
    kx = x.shape[0]
    ky = y.shape[0]
    twice_u = 0
    ties = 0.0
    for i in range(kx):
        greater = 0
        equal = 0
        for j in range(ky):
            greater += x[i] > y[j]
            equal += x[i] == y[j]
        same = 0
        for k in range(kx):
            same += x[i] == x[k]
        twice_u += 2 * greater + equal
        ties += (same + equal) * (same + equal) - 1
    for j in range(ky):
        same = 0
        for k in range(kx):
            same += y[j] == x[k]
        for k in range(ky):
            same += y[j] == y[k]
        ties += same * same - 1
    u = 0.5 * twice_u
    pairs = float(kx * ky)
    n = kx + ky
    a12 = u / pairs
    a21 = (pairs - u) / pairs
    s = math.sqrt(pairs / 12.0 * ((n + 1) - ties / (n * (n - 1))))
    if not s > 0.0:
        return 1.0, a12, a21
    z = (max(u, pairs - u) - pairs / 2.0 - 0.5) / s
    return min(1.0, math.erfc(z / math.sqrt(2.0))), a12, a21


@numba.njit(cache=True, nogil=True, inline="always")
def _effect_passes(up, down, effect, direction):
    # up: the effect in the mutant-worse sense; down: in the mutant-better sense.
    if direction == 0:
        return max(up, down) >= effect
    if direction == 1:
        return up >= effect
    return down >= effect


@numba.njit(cache=True, nogil=True)
def is_killed(p, d, p_max, effect, direction):
    """The kill rule on a p-value and Cohen's d (compiled; direction as a code)."""
    return p <= p_max and _effect_passes(d, -d, effect, direction)


@numba.njit(cache=True, nogil=True, inline="always")
def decide(kind, x, y, p_max, effect, direction):
    """One kill test: ``(p, effect_size, killed)`` for samples ``x`` (healthy), ``y`` (mutant).

    Compiled; ``kind, p_max, effect, direction`` are :meth:`KillCriterion.kernel_args`.
    The effect size is Cohen's d for ``deepcrime`` and ``welch``, A12 for ``mannwhitney``.

    >>> x, y = np.array([0.90, 0.91, 0.92, 0.91]), np.array([0.85, 0.86, 0.84, 0.86])
    >>> kind, p_max, effect, direction = KillCriterion(kind="mannwhitney").kernel_args()
    >>> p, a12, killed = decide(kind, x, y, p_max, effect, direction)
    >>> round(p, 4), a12, killed
    (0.0284, 1.0, True)
    """
    if kind == 2:
        p, a12, a21 = mann_whitney_test(x, y)
        return p, a12, p <= p_max and _effect_passes(a12, a21, effect, direction)
    if kind == 1:
        p, d = welch_test(x, y)
    else:
        p, d = pooled_z_test(x, y)
    return p, d, is_killed(p, d, p_max, effect, direction)


@numba.njit(cache=True)
def _batch(x, y, kind, p_max, effect, direction, p_out, effect_out, killed_out):
    for t in range(x.shape[0]):
        p_out[t], effect_out[t], killed_out[t] = decide(kind, x[t], y[t], p_max, effect,
                                                        direction)


@dataclass(frozen=True)
class KillTestResult(Result):
    """The whole answer of one kill test, as one tidy row.

    ``p_value`` is the p the decision used (rounded when the criterion rounds);
    ``p_value_exact`` the unrounded one. ``effect_size`` is Cohen's d (healthy minus
    mutant) for ``deepcrime`` and ``welch``, A12 (P(healthy > mutant)) for ``mannwhitney``.
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
        verdict = "KILLED" if self.killed else "not killed"
        size = "A12" if self.kind == "mannwhitney" else "Cohen's d"
        return (f"{TEST_NAMES[self.kind]}, {self.n_healthy} healthy vs {self.n_mutant} mutant "
                f"instances\n"
                f"  mean accuracy  healthy {self.mean_healthy:.6g}  mutant {self.mean_mutant:.6g}\n"
                f"  p-value {self.p_value:.6g}  {size} {self.effect_size:.4f}  -> {verdict}\n"
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
    """The kill test on one healthy and one mutant sample (DeepCrime's unless the
    criterion's ``kind`` says otherwise).

    Parameters
    ----------
    healthy, mutant : array-like of accuracies, or :class:`probmut.io.populations.Population`.
    criterion : the kill rule; default ``KillCriterion()`` (DeepCrime, exact p, |d| >= 0.5).

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

    The other criteria agree with SciPy:

    >>> from scipy import stats
    >>> welch = deepcrime_test(x, y, KillCriterion(kind="welch"))
    >>> bool(np.isclose(welch.p_value, stats.ttest_ind(x, y, equal_var=False).pvalue))
    True
    >>> mw = deepcrime_test(x, y, KillCriterion(kind="mannwhitney"))
    >>> bool(np.isclose(mw.p_value, stats.mannwhitneyu(x, y, method="asymptotic").pvalue))
    True
    """
    criterion = criterion or KillCriterion()
    x = _as_sample(healthy, "the healthy sample")
    y = _as_sample(mutant, "the mutant sample")
    kind, p_max, effect, direction = criterion.kernel_args()
    p_exact, size, killed = decide(kind, x, y, p_max, effect, direction)
    p_shown = p_exact if criterion.round_p is None else round_p_value(p_exact, criterion.round_p)
    return KillTestResult(
        p_value=p_shown, p_value_exact=float(p_exact), effect_size=float(size),
        killed=bool(killed), n_healthy=x.size, n_mutant=y.size, mean_healthy=float(x.mean()),
        mean_mutant=float(y.mean()), criterion=criterion.describe(), kind=criterion.kind)


def deepcrime_test_batch(healthy, mutant, criterion: KillCriterion | None = None):
    """Many kill tests at once: row t of ``healthy`` against row t of ``mutant``.

    Returns ``(p_value, effect_size, killed)`` arrays of shape ``(T,)``; p is exact
    (the decision applies the criterion's rounding); the effect size is Cohen's d, or
    A12 for the ``mannwhitney`` criterion.

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
        return rows[0] if len(rows) == 1 else {"tests": rows}

    def __str__(self) -> str:
        if len(self.results) == 1:
            return f"{self.names[0]}: {self.results[0]}"
        first = self.results[0]
        effect = "A12" if first.kind == "mannwhitney" else "d"
        lines = [f"{TEST_NAMES[first.kind]} on whole populations (kill iff {first.criterion})",
                 f"{'population':<24}{'n_h':>5}{'n_m':>5}{'p-value':>10}{effect:>9}  decision"]
        lines += [f"{n:<24}{r.n_healthy:>5}{r.n_mutant:>5}{r.p_value:>10.4g}"
                  f"{r.effect_size:>9.4f}  {'KILLED' if r.killed else 'not killed'}"
                  for n, r in zip(self.names, self.results, strict=True)]
        return "\n".join(lines)


def kill_tests(healthy, mutants, criterion: KillCriterion | None = None, *,
               paired: bool = False) -> KillTable:
    """The kill test of each mutant population against ``healthy`` (paired by instance
    id for model-level mutations).

    >>> table = kill_tests([0.90, 0.91, 0.92, 0.91], [[0.89, 0.90, 0.91, 0.90]])
    >>> frame = table.to_frame()
    >>> frame.index.tolist(), frame["effect_size"].round(3).tolist(), frame["killed"].tolist()
    (['mutant 1'], [1.225], [False])
    """
    from probmut.io.populations import aligned, as_population

    healthy = as_population(healthy, "healthy")
    mutants = [as_population(m, f"mutant {i}") for i, m in enumerate(mutants, start=1)]
    results = [deepcrime_test(*aligned(healthy, mutant, paired), criterion)
               for mutant in mutants]
    return KillTable([m.name for m in mutants], results)
