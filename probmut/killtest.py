"""Kill tests: one decision from a healthy and a mutant sample.

Every kill criterion is a significance test plus an effect size, listed once in the
registry :data:`CRITERIA` (name, test, effect size and its named thresholds, direction
vocabulary, compiled kernel, description, whether it needs paired data). Everything
else reads that table: :class:`KillCriterion`, the compiled dispatch :func:`decide`
(used by the scalar and batched API here and by the Monte-Carlo engine,
:mod:`probmut.engine`), the command line's ``--criterion`` choices and help, the table
headers and the plots.

- ``deepcrime`` (default): DeepCrime's GLM z-test and Cohen's d (METHOD.md section 1);
- ``welch``: Welch's unequal-variance t-test and Cohen's d;
- ``mannwhitney``: the Mann-Whitney U test (normal approximation with tie and continuity
  correction, as ``scipy.stats.mannwhitneyu`` computes it for samples larger than 8) and
  the Vargha-Delaney A12 effect size;
- ``paired-t`` (paired data): Student's t-test on the per-instance differences and
  Cohen's d_z;
- ``wilcoxon`` (paired data): the Wilcoxon signed-rank test and the matched-pairs
  rank-biserial correlation.

Adding a criterion is one :class:`Criterion` entry in :data:`CRITERIA` plus its compiled
kernel ``(x, y) -> (p, effect, effect in the mutant-better sense)``.

Notes
-----
With pooled variance ``s_p^2 = ((k_x-1) var(x) + (k_y-1) var(y)) / (k_x + k_y - 2)``,
DeepCrime's Gaussian GLM ``Acc ~ Mod`` gives the coefficient ``mean(y) - mean(x)`` with
standard error ``sqrt(s_p^2 (1/k_x + 1/k_y))`` and a two-sided *z* test,
``p = erfc(|z| / sqrt(2))``. Cohen's d is ``(mean(x) - mean(y)) / s_p``. A mutant is
killed when ``p < alpha`` and the effect passes the threshold in the chosen direction.

Welch: ``t = (mean(x) - mean(y)) / sqrt(var(x)/k_x + var(y)/k_y)`` with the
Welch-Satterthwaite degrees of freedom and ``p = I_{df/(df+t^2)}(df/2, 1/2)`` (two-sided
Student t tail, via the regularized incomplete beta function :func:`betainc`). The
effect size is the same pooled Cohen's d (for equal sample sizes it equals the
average-variance d often paired with Welch's test).

Mann-Whitney: ``U`` counts healthy-mutant pairs with the healthy value larger (ties
count 1/2); ``A12 = U / (k_x k_y)`` is the probability that a healthy instance beats a
mutant one (0.5: no effect; above 0.5: mutant worse). ``z = (max(U, k_x k_y - U) -
k_x k_y / 2 - 1/2) / s`` with the tie-corrected ``s``; ``p = min(1, erfc(z / sqrt(2)))``.
All values tied: ``p = 1, A12 = 0.5``. The effect threshold is on A12 itself: the
mutant is killed when ``max(A12, 1 - A12)`` (two-sided), ``A12`` (mutant-worse) or
``1 - A12`` (mutant-better) reaches it; Vargha and Delaney's small, medium and large
effects are 0.56, 0.64 and 0.71.

Paired t: with the differences ``d_i = x_i - y_i`` (healthy minus mutant) of the k
pairs, ``t = mean(d) / (sd(d) / sqrt(k))``, ``df = k - 1``, the same Student tail as
Welch's, and ``d_z = mean(d) / sd(d)`` (Cohen 1988, section 2.3.5; Lakens 2013). As
``scipy.stats.ttest_rel``.

Wilcoxon signed-rank, as ``scipy.stats.wilcoxon`` with its defaults
(``zero_method="wilcox"``, no continuity correction, ``method="auto"``): zero
differences are dropped (they carry no sign); the other ``n`` are ranked by ``|d_i|``
with average ranks for ties; ``T+`` sums the ranks of positive differences (healthy
better). The p-value uses the exact null distribution of ``T+`` (all ``2^n`` sign
assignments of the observed ranks, counted by dynamic programming) exactly where SciPy
does: no ties and no zeros among ``k <= 50`` pairs, or any ``k <= 13`` pairs (SciPy's
exhaustive permutation test, which with ties is the same distribution over the
observed average ranks); otherwise the normal approximation
``z = (T+ - n(n+1)/4) / sqrt((n(n+1)(2n+1) - sum(t^3 - t)/2) / 24)`` with the tie
correction over groups of ``t`` tied ``|d_i|``. Ties and zeros are exact equalities of
the float differences, as in SciPy. The effect size is the matched-pairs rank-biserial
correlation ``r_rb = (T+ - T-) / (T+ + T-)`` over the same nonzero pairs (Kerby 2014), in
[-1, 1], positive when the mutant is worse. No nonzero difference: ``p = 1, r_rb = 0``.

Degenerate samples. The mean of ``k`` floats near ``m``, summed in order, is within
``k u |m|`` of the exact mean (``u = eps / 2``; Higham 2002, section 4.2), so two equal
constant samples can get means one ulp apart and a sum of squared deviations of about
1e-33 instead of 0 (``[0.7] * 7`` against ``[0.7] * 3`` once gave p = 0.0095, d = 1.79).
The mean-based tests therefore judge a sample constant when the root mean square of its
deviations is at most ``k eps |mean|`` (twice that worst-case rounding bound), and two
means equal when they differ by at most ``eps (k_x |mean x| + k_y |mean y|)``; the
paired t-test applies the same bounds to the differences, on the scale of the data
(``max(|mean x|, |mean y|)``). Both samples (or the differences) constant: equal means
give ``p = 1`` and no effect; different means give ``p = 0`` and an infinite effect, then
the direction rule applies. For k = 20 accuracies near 1 the floor is 4.4e-15: real
accuracies (4 to 16 significant digits, spreads of 1e-4 and more) lie eleven orders of
magnitude above it and are untouched; spreads within a few times the floor are at the
resolution of double precision, where any implementation (statsmodels' too) returns
rounding noise. The rank tests compare values exactly and need no tolerance.

References
----------
Humbatova, Jahangirova, Tonella. DeepCrime: mutation testing of deep learning systems
based on real faults. ISSTA 2021.

Vargha, Delaney. A critique and improvement of the CL common language effect size
statistics of McGraw and Wong. Journal of Educational and Behavioral Statistics, 2000.

Arcuri, Briand. A practical guide for using statistical tests to assess randomized
algorithms in software engineering. ICSE 2011.

Cohen. Statistical power analysis for the behavioral sciences, 2nd ed., 1988
(d, d_z and r conventions: sections 2.2.3, 2.3.5 and 3.2).

Lakens. Calculating and reporting effect sizes to facilitate cumulative science.
Frontiers in Psychology 4:863, 2013.

Kerby. The simple difference formula: an approach to teaching nonparametric
correlation. Comprehensive Psychology 3, 2014.

Wilcoxon. Individual comparisons by ranking methods. Biometrics Bulletin, 1945.

Higham. Accuracy and stability of numerical algorithms, 2nd ed., 2002.

Press, Teukolsky, Vetterling, Flannery. Numerical Recipes, 3rd ed., section 6.4
(incomplete beta function by continued fraction).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numba
import numpy as np

from probmut.errors import ProbmutError
from probmut.results import Result, listing

#: Kill directions: which sign of the effect (healthy minus mutant) counts as an effect.
DIRECTIONS = ("two-sided", "mutant-worse", "mutant-better")

_EPS = float(np.finfo(np.float64).eps)


# --- degenerate samples, relative to the data's scale (see the module notes) ----------------

@numba.njit(cache=True, nogil=True, inline="always")
def _rounding_floor(k, mean):
    # Twice the worst-case rounding error of the mean of k floats near `mean`.
    return k * _EPS * abs(mean)


@numba.njit(cache=True, nogil=True, inline="always")
def _is_constant(squares, k, scale):
    # A sum of squared deviations of k values whose root mean square is within rounding.
    floor = _rounding_floor(k, scale)
    return squares <= k * floor * floor


@numba.njit(cache=True, nogil=True, inline="always")
def _degenerate(diff, scale_x, squares_x, k_x, scale_y, squares_y, k_y):
    # (True, p, effect) when both spreads are within rounding, else (False, ...).
    if not (_is_constant(squares_x, k_x, scale_x) and _is_constant(squares_y, k_y, scale_y)):
        return False, 0.0, 0.0
    if abs(diff) <= _rounding_floor(k_x, scale_x) + _rounding_floor(k_y, scale_y):
        return True, 1.0, 0.0
    return True, 0.0, math.copysign(math.inf, diff)


# --- compiled kernels: (x, y) -> (p, effect, effect in the mutant-better sense) ------------

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
    """DeepCrime's test for two 1-D float arrays (compiled): p-value, Cohen's d, -d."""
    kx = x.shape[0]
    ky = y.shape[0]
    mx, ssx, my, ssy = _moments(x, y)
    diff = mx - my
    degenerate, p, d = _degenerate(diff, mx, ssx, kx, my, ssy, ky)
    if degenerate:
        return p, d, -d
    sp = math.sqrt((ssx + ssy) / (kx + ky - 2))
    z = diff / (sp * math.sqrt(1.0 / kx + 1.0 / ky))
    return math.erfc(abs(z) / math.sqrt(2.0)), diff / sp, -diff / sp


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


@numba.njit(cache=True, nogil=True, inline="always")
def _student_t_two_sided(t2, df):
    # Two-sided Student t tail for t^2 and df: I_{df/(df+t^2)}(df/2, 1/2).
    return _betainc_complement(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2))


@numba.njit(cache=True, nogil=True)
def welch_test(x, y):
    """Welch's t-test for two 1-D float arrays (compiled): p-value, pooled Cohen's d, -d."""
    kx = x.shape[0]
    ky = y.shape[0]
    mx, ssx, my, ssy = _moments(x, y)
    diff = mx - my
    degenerate, p, d = _degenerate(diff, mx, ssx, kx, my, ssy, ky)
    if degenerate:
        return p, d, -d
    vx = ssx / (kx - 1) / kx
    vy = ssy / (ky - 1) / ky
    se2 = vx + vy
    if not se2 > 0.0:  # variances below the smallest float: no evidence either way
        return 1.0, 0.0, 0.0
    # Welch-Satterthwaite df from the shares of se2 (the squares of tiny variances would
    # underflow to 0 and divide by zero: e.g. [0, 0] against [0, 4.5e-122]).
    a = vx / se2
    b = vy / se2
    df = 1.0 / (a * a / (kx - 1) + b * b / (ky - 1))
    d = diff / math.sqrt((ssx + ssy) / (kx + ky - 2))
    return _student_t_two_sided(diff * diff / se2, df), d, -d


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


@numba.njit(cache=True, nogil=True)
def paired_t_test(x, y):
    """Paired t-test on ``x[i] - y[i]`` (compiled): p-value, Cohen's d_z, -d_z."""
    k = x.shape[0]
    mx = 0.0
    my = 0.0
    md = 0.0
    for i in range(k):
        mx += x[i]
        my += y[i]
        md += x[i] - y[i]
    mx /= k
    my /= k
    md /= k
    ss = 0.0
    for i in range(k):
        dev = x[i] - y[i] - md
        ss += dev * dev
    scale = max(abs(mx), abs(my))
    degenerate, p, dz = _degenerate(md, scale, ss, k, scale, 0.0, k)
    if degenerate:
        return p, dz, -dz
    sd = math.sqrt(ss / (k - 1))
    t = md / sd * math.sqrt(k)
    return _student_t_two_sided(t * t, k - 1.0), md / sd, -md / sd


@numba.njit(cache=True, nogil=True)
def _wilcoxon_exact_p(x, y, lower):
    # P-value from the exact distribution of the doubled statistic 2 T+ over the 2^n sign
    # assignments of the observed (doubled, average) ranks: 2 P(2 T+ <= lower), with
    # `lower` = min(2 T+, n(n+1) - 2 T+) (the distribution is symmetric).
    k = x.shape[0]
    ways = np.zeros(lower + 1)
    ways[0] = 1.0
    nonzero = 0
    for i in range(k):
        di = x[i] - y[i]
        if di == 0.0:
            continue
        nonzero += 1
        rank2 = 1
        for j in range(k):
            dj = x[j] - y[j]
            if dj != 0.0:
                rank2 += (abs(dj) < abs(di)) + (abs(dj) <= abs(di))
        for total in range(lower, rank2 - 1, -1):
            ways[total] += ways[total - rank2]
    # Counts are integers below 2^50 (k <= 50): exact in float64, as is the division.
    return min(1.0, 2.0 * ways.sum() / 2.0**nonzero)


@numba.njit(cache=True, nogil=True)
def wilcoxon_test(x, y):
    """Wilcoxon signed-rank test on ``x[i] - y[i]`` (compiled): p-value, matched-pairs
    rank-biserial r_rb and -r_rb (see the module notes for zeros, ties and which p)."""
    # Doubled average ranks by pair counts (no sorting, no allocation): rank2 of |d_i| =
    # 2 #{|d_j| < |d_i|} + #{|d_j| = |d_i|} + 1 over the nonzero differences.
    k = x.shape[0]
    nonzero = 0
    plus2 = 0
    ties = 0.0
    tied = False
    for i in range(k):
        di = x[i] - y[i]
        if di == 0.0:
            continue
        nonzero += 1
        less = 0
        equal = 0
        for j in range(k):
            dj = x[j] - y[j]
            if dj != 0.0:
                less += abs(dj) < abs(di)
                equal += abs(dj) == abs(di)
        if di > 0.0:
            plus2 += 2 * less + equal + 1
        ties += equal * equal - 1
        tied = tied or equal > 1
    if nonzero == 0:
        return 1.0, 0.0, 0.0
    total2 = nonzero * (nonzero + 1)
    r_rb = (2 * plus2 - total2) / total2
    if (k <= 50 and not tied and nonzero == k) or k <= 13:
        p = _wilcoxon_exact_p(x, y, min(plus2, total2 - plus2))
    else:
        n = float(nonzero)
        se = math.sqrt((n * (n + 1.0) * (2.0 * n + 1.0) - ties / 2.0) / 24.0)
        z = (0.5 * plus2 - n * (n + 1.0) / 4.0) / se
        p = math.erfc(abs(z) / math.sqrt(2.0))
    return p, r_rb, -r_rb


# --- the registry -------------------------------------------------------------------------

@dataclass(frozen=True)
class Criterion:
    """One kill criterion: a row of the registry :data:`CRITERIA`.

    ``kernel`` is the compiled ``(x, y) -> (p, effect, effect in the mutant-better
    sense)``; its position in the registry is the id the compiled dispatch uses.
    ``rules`` maps each direction to what must reach the effect threshold; ``bounds`` is
    the range of valid thresholds.
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
    kernel: Callable
    description: str
    paired: bool = False


def _signed_rules(symbol: str) -> dict:
    return {"two-sided": f"|{symbol}|", "mutant-worse": symbol, "mutant-better": f"-{symbol}"}


_COHEN_D = {"small": 0.2, "medium": 0.5, "large": 0.8}

#: The kill criteria, by name (``KillCriterion.kind``); the order gives the kernel ids.
CRITERIA = {c.name: c for c in (
    Criterion("deepcrime", "DeepCrime test", "", "Cohen's d", "d", _COHEN_D, "Cohen (1988)",
              _signed_rules("d"), (0.0, math.inf), pooled_z_test,
              "DeepCrime's GLM z-test (pooled variance, normal tail) + Cohen's d"),
    Criterion("welch", "Welch's t-test", "Welch ", "Cohen's d", "d", _COHEN_D, "Cohen (1988)",
              _signed_rules("d"), (0.0, math.inf), welch_test,
              "Welch's unequal-variance t-test + Cohen's d"),
    Criterion("mannwhitney", "Mann-Whitney U test", "Mann-Whitney ", "Vargha-Delaney A12",
              "A12", {"small": 0.56, "medium": 0.64, "large": 0.71},
              "Vargha and Delaney (2000)",
              {"two-sided": "max(A12, 1-A12)", "mutant-worse": "A12", "mutant-better": "1-A12"},
              (0.5, 1.0), mann_whitney_test, "Mann-Whitney U + Vargha-Delaney A12"),
    Criterion("paired-t", "Paired t-test", "paired t ", "Cohen's d_z", "d_z", _COHEN_D,
              "Cohen (1988), as for d (Lakens 2013)", _signed_rules("d_z"), (0.0, math.inf),
              paired_t_test,
              "Student's t-test on the per-instance differences + Cohen's d_z (paired data)",
              paired=True),
    Criterion("wilcoxon", "Wilcoxon signed-rank test", "Wilcoxon ", "rank-biserial r", "r_rb",
              {"small": 0.1, "medium": 0.3, "large": 0.5}, "Cohen (1988) for correlations",
              _signed_rules("r_rb"), (0.0, 1.0), wilcoxon_test,
              "Wilcoxon signed-rank test + matched-pairs rank-biserial r (paired data)",
              paired=True),
)}

#: Criterion names, in kernel-id order.
KINDS = tuple(CRITERIA)


def _dispatch_chain(kernels, index: int = 0):
    # Compiled `dispatch(kind, x, y)` that runs kernels[kind]: a chain of inlined tests
    # built from the registry, so adding a criterion needs no edit here.
    kernel = kernels[index]
    if index == len(kernels) - 1:
        @numba.njit(nogil=True, inline="always")
        def last(kind, x, y):
            return kernel(x, y)
        return last
    rest = _dispatch_chain(kernels, index + 1)

    @numba.njit(nogil=True, inline="always")
    def step(kind, x, y):
        if kind == index:
            return kernel(x, y)
        return rest(kind, x, y)
    return step


_dispatch = _dispatch_chain([c.kernel for c in CRITERIA.values()])


@dataclass(frozen=True)
class KillCriterion:
    """Settings of a kill decision: which test, its level and its effect-size threshold.

    Parameters
    ----------
    alpha : significance level; killed needs ``p < alpha``.
    effect : effect-size threshold, a number or ``"small"``, ``"medium"``, ``"large"``
        (each criterion's ``thresholds`` in :data:`CRITERIA`); None: medium. For
        ``deepcrime``, ``welch`` and ``paired-t`` it is on Cohen's d (d_z): killed needs
        ``|d| >= effect`` (two-sided, the paper's rule), ``d >= effect`` (mutant-worse,
        DeepCrime's classifier rule) or ``d <= -effect`` (mutant-better, DeepCrime's
        regression rule). For ``mannwhitney`` it is on A12, in [0.5, 1]:
        ``max(A12, 1 - A12)``, ``A12`` or ``1 - A12`` must reach it; for ``wilcoxon`` on
        the rank-biserial r_rb, in [0, 1], signed like d.
    direction : one of :data:`DIRECTIONS`.
    round_p : decimals to round p to before comparing (DeepCrime reads p from the
        printed GLM summary, i.e. 3 decimals); None compares the exact p. Applies to
        every kind.
    kind : a name of :data:`CRITERIA`; ``paired-t`` and ``wilcoxon`` need paired data.

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
        if self.kind not in CRITERIA:
            raise ProbmutError(
                f"unknown kill criterion {self.kind!r}; choose one of {', '.join(KINDS)}")
        spec = self.spec
        object.__setattr__(self, "effect", _effect_threshold(self.effect, spec))
        if not 0 < self.alpha < 1:
            raise ProbmutError(f"alpha must be in (0, 1), got {self.alpha}")
        low, high = spec.bounds
        if not (math.isfinite(self.effect) and self.effect >= 0):
            raise ProbmutError(f"the effect-size threshold must be a number >= 0, got {self.effect}")
        if not low <= self.effect <= high:
            named = ", ".join(f"{k} {v:g}" for k, v in spec.thresholds.items())
            raise ProbmutError(
                f"for the {self.kind} criterion the effect threshold is on {spec.symbol} and "
                f"must be in [{low:g}, {high:g}] ({named}), got {self.effect}")
        if self.direction not in DIRECTIONS:
            raise ProbmutError(
                f"unknown direction {self.direction!r}; choose one of {', '.join(DIRECTIONS)}")
        if self.round_p is not None and not 0 <= self.round_p <= 15:
            raise ProbmutError(f"round_p must be between 0 and 15 decimals, got {self.round_p}")

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
        """The criterion as plain numbers for :func:`decide`: kind, p_max, effect, direction."""
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
def _effect_passes(up, down, effect, direction):
    # up: the effect in the mutant-worse sense; down: in the mutant-better sense.
    if direction == 0:
        return max(up, down) >= effect
    if direction == 1:
        return up >= effect
    return down >= effect


@numba.njit(cache=True, nogil=True, inline="always")
def decide(kind, x, y, p_max, effect, direction):
    """One kill test: ``(p, effect_size, killed)`` for samples ``x`` (healthy), ``y`` (mutant).

    Compiled; ``kind, p_max, effect, direction`` are :meth:`KillCriterion.kernel_args`.
    The effect size is the criterion's (:data:`CRITERIA`): Cohen's d, A12, d_z or r_rb.
    Paired criteria read ``x[i], y[i]`` as a pair.

    >>> x, y = np.array([0.90, 0.91, 0.92, 0.91]), np.array([0.85, 0.86, 0.84, 0.86])
    >>> kind, p_max, effect, direction = KillCriterion(kind="mannwhitney").kernel_args()
    >>> p, a12, killed = decide(kind, x, y, p_max, effect, direction)
    >>> round(p, 4), a12, killed
    (0.0284, 1.0, True)
    """
    p, up, down = _dispatch(kind, x, y)
    return p, up, p <= p_max and _effect_passes(up, down, effect, direction)


@numba.njit(cache=True)
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
                f"  p-value {self.p_value:.6g}  {spec.effect} {self.effect_size:.4f}  -> {verdict}\n"
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


def _require_pairs(criterion: KillCriterion, n_healthy: int, n_mutant: int) -> None:
    if criterion.spec.paired and n_healthy != n_mutant:
        raise ProbmutError(
            f"the {criterion.kind} criterion compares pairs (mutant i derived from healthy i) "
            f"and needs samples of the same size, got {n_healthy} healthy and {n_mutant} "
            "mutant values")


def deepcrime_test(healthy, mutant, criterion: KillCriterion | None = None) -> KillTestResult:
    """The kill test on one healthy and one mutant sample (DeepCrime's unless the
    criterion's ``kind`` says otherwise).

    Parameters
    ----------
    healthy, mutant : array-like of accuracies, or :class:`probmut.io.populations.Population`.
        For a paired criterion, value i of both is a pair: align populations by instance
        id first (:func:`probmut.io.populations.pair`).
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
    >>> paired = deepcrime_test(x, y, KillCriterion(kind="paired-t"))
    >>> bool(np.isclose(paired.p_value, stats.ttest_rel(x, y).pvalue))
    True
    >>> signed_rank = deepcrime_test(x, y, KillCriterion(kind="wilcoxon"))
    >>> bool(signed_rank.p_value == stats.wilcoxon(x, y).pvalue)
    True

    Equal constant samples are no effect, whatever their sizes:

    >>> same = deepcrime_test([0.7] * 7, [0.7] * 3)
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


def deepcrime_test_batch(healthy, mutant, criterion: KillCriterion | None = None):
    """Many kill tests at once: row t of ``healthy`` against row t of ``mutant``.

    Returns ``(p_value, effect_size, killed)`` arrays of shape ``(T,)``; p is exact
    (the decision applies the criterion's rounding); the effect size is the
    criterion's (Cohen's d, A12, d_z or r_rb). A row holding NaN or an infinite value is
    an error naming the first such row.

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
    _require_pairs(criterion, x.shape[1], y.shape[1])
    bad = ~(np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1))
    if bad.any():
        row = int(np.argmax(bad))
        side = "healthy" if not np.isfinite(x[row]).all() else "mutant"
        raise ProbmutError(f"row {row} of the batched samples holds NaN or infinite values "
                           f"({side} side; {int(bad.sum())} such rows)")
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
        return rows[0] if len(rows) == 1 else listing(rows, "tests")

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


def kill_tests(healthy, mutants, criterion: KillCriterion | None = None, *,
               paired: bool = False) -> KillTable:
    """The kill test of each mutant population against ``healthy`` (paired by instance
    id for model-level mutations; the paired criteria need ``paired=True``).

    >>> table = kill_tests([0.90, 0.91, 0.92, 0.91], [[0.89, 0.90, 0.91, 0.90]])
    >>> frame = table.to_frame()
    >>> frame.index.tolist(), frame["effect_size"].round(3).tolist(), frame["killed"].tolist()
    (['mutant 1'], [1.225], [False])
    """
    from probmut.io.populations import aligned, as_population

    criterion = criterion or KillCriterion()
    criterion.require_pairing(paired)
    healthy = as_population(healthy, "healthy")
    mutants = [as_population(m, f"mutant {i}") for i, m in enumerate(mutants, start=1)]
    results = [deepcrime_test(*aligned(healthy, mutant, paired), criterion)
               for mutant in mutants]
    return KillTable([m.name for m in mutants], results)
