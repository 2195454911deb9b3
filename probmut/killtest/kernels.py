"""The compiled kernels of the kill criteria: ``(x, y) -> (p, effect, effect in the
mutant-better sense)`` for a healthy sample ``x`` and a mutant sample ``y``, one per row of
the registry :data:`probmut.killtest.criteria.CRITERIA`, and the incomplete beta function
:func:`betainc` behind the t tails. Plain numba functions, no Python objects: the
Monte-Carlo engine (:mod:`probmut.engine`) inlines them through
:func:`probmut.killtest.criteria.decide`.

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
1e-33 instead of 0 (an example: docs/validation.md, *Degenerate samples*).
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

import numpy as np

from probmut.compiled import compiled

_EPS = float(np.finfo(np.float64).eps)


# --- degenerate samples, relative to the data's scale (see the module notes) ----------------

@compiled(nogil=True, inline="always")
def _rounding_floor(k, mean):
    # Twice the worst-case rounding error of the mean of k floats near `mean`.
    return k * _EPS * abs(mean)


@compiled(nogil=True, inline="always")
def _is_constant(squares, k, scale):
    # A sum of squared deviations of k values whose root mean square is within rounding.
    floor = _rounding_floor(k, scale)
    return squares <= k * floor * floor


@compiled(nogil=True, inline="always")
def _degenerate(diff, scale_x, squares_x, k_x, scale_y, squares_y, k_y):
    # (True, p, effect) when both spreads are within rounding, else (False, ...).
    if not (_is_constant(squares_x, k_x, scale_x) and _is_constant(squares_y, k_y, scale_y)):
        return False, 0.0, 0.0
    if abs(diff) <= _rounding_floor(k_x, scale_x) + _rounding_floor(k_y, scale_y):
        return True, 1.0, 0.0
    return True, 0.0, math.copysign(math.inf, diff)


# --- compiled kernels: (x, y) -> (p, effect, effect in the mutant-better sense) ------------

@compiled(nogil=True, inline="always")
def _sums(x, y):
    # The sums of both samples, each in index order. The two run in one loop: two
    # independent chains of additions, which the core overlaps (each addition waits for
    # the one before it in its own chain); the sums are those of two loops one after the
    # other, bit for bit (docs/benchmarks.md).
    kx = x.shape[0]
    ky = y.shape[0]
    both = min(kx, ky)
    sx = 0.0
    sy = 0.0
    for i in range(both):
        sx += x[i]
        sy += y[i]
    for i in range(both, kx):
        sx += x[i]
    for i in range(both, ky):
        sy += y[i]
    return sx, sy


@compiled(nogil=True, inline="always")
def _squares(x, y, mx, my):
    # The sums of squared deviations from mx and my, each in index order, in one loop.
    kx = x.shape[0]
    ky = y.shape[0]
    both = min(kx, ky)
    ssx = 0.0
    ssy = 0.0
    for i in range(both):
        ssx += (x[i] - mx) * (x[i] - mx)
        ssy += (y[i] - my) * (y[i] - my)
    for i in range(both, kx):
        ssx += (x[i] - mx) * (x[i] - mx)
    for i in range(both, ky):
        ssy += (y[i] - my) * (y[i] - my)
    return ssx, ssy


@compiled(nogil=True, inline="always")
def _moments(x, y):
    # Means and sums of squared deviations of both samples.
    sx, sy = _sums(x, y)
    mx = sx / x.shape[0]
    my = sy / y.shape[0]
    ssx, ssy = _squares(x, y, mx, my)
    return mx, ssx, my, ssy


# inlined where the dispatch calls it: the engine's default test (docs/benchmarks.md)
@compiled(nogil=True, inline="always")
def pooled_z_test(x, y):
    """DeepCrime's test for two 1-D float arrays (compiled): p-value, Cohen's d, -d."""
    sx, sy = _sums(x, y)
    z, d = pooled_z_of_sums(x, y, sx, sy)
    return math.erfc(abs(z) / math.sqrt(2.0)), d, -d


@compiled(nogil=True, inline="always")
def pooled_z_of_sums(x, y, sum_x, sum_y):
    """DeepCrime's z statistic and Cohen's d given the sums of ``x`` and ``y`` (in index
    order; the engine adds them up while it draws the samples, docs/benchmarks.md). Both
    samples constant: z = d = 0 for equal means (p = 1), else both infinite (p = 0)."""
    kx = x.shape[0]
    ky = y.shape[0]
    mx = sum_x / kx
    my = sum_y / ky
    ssx, ssy = _squares(x, y, mx, my)
    return pooled_z_of_moments(mx, ssx, kx, my, ssy, ky)


@compiled(nogil=True, inline="always")
def pooled_z_of_moments(mx, ssx, kx, my, ssy, ky):
    """DeepCrime's z statistic and Cohen's d from each sample's mean, sum of squared
    deviations and size (:func:`pooled_z_of_sums`' last step)."""
    diff = mx - my
    degenerate, _, d = _degenerate(diff, mx, ssx, kx, my, ssy, ky)
    if degenerate:  # d = 0 (p = 1) or infinite (p = 0): z says the same
        return d, d
    sp = math.sqrt((ssx + ssy) / (kx + ky - 2))
    return diff / (sp * math.sqrt(1.0 / kx + 1.0 / ky)), diff / sp


@compiled(nogil=True)
def normal_tail_bounds(p_max):
    """``(low, high)``: ``erfc(a) <= p_max`` holds for every ``a`` above ``high`` and fails
    for every ``a`` below ``low`` (NaN fails both), so that DeepCrime's p-value
    ``erfc(|z| / sqrt(2))`` need only be computed between them, for the same answer.

    The crossing is found by bisection on ``math.erfc`` itself and widened by 1e-9 of it
    (1e-9 below 1): erfc moves by more than 1e-9 of itself across that margin (its
    logarithm's slope is at least 2 / sqrt(pi) everywhere, and above 2.6 beyond 1), a
    million times its rounding error, so the floats outside cannot disagree with it.

    >>> low, high = normal_tail_bounds(0.05)
    >>> math.erfc(high) <= 0.05 < math.erfc(low), round(high * math.sqrt(2), 4)
    (True, 1.96)
    """
    low, high = 0.0, 40.0  # erfc(40) is 0 in double precision
    if math.erfc(low) <= p_max:
        return -1.0, 0.0  # every a >= 0 passes; a = 0 only by erfc(0) = 1 <= p_max
    if not math.erfc(high) <= p_max:
        return high, math.inf  # none passes beyond 40; below, erfc decides
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        if math.erfc(middle) <= p_max:
            high = middle
        else:
            low = middle
    margin = 1e-9 * max(high, 1.0)
    return low - margin, high + margin


@compiled(nogil=True, inline="always")
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


@compiled(nogil=True)
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


@compiled(nogil=True)
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


@compiled(nogil=True)
def betainc(a, b, x):
    """Regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``.

    Compiled (continued fraction, Numerical Recipes 6.4); agrees with
    :func:`scipy.special.betainc` to about 1e-13 relative.

    >>> from scipy import special
    >>> bool(abs(betainc(2.5, 0.5, 0.3) - special.betainc(2.5, 0.5, 0.3)) < 1e-15)
    True
    """
    return _betainc_complement(a, b, x, 1.0 - x)


@compiled(nogil=True, inline="always")
def _student_t_two_sided(t2, df):
    # Two-sided Student t tail for t^2 and df: I_{df/(df+t^2)}(df/2, 1/2).
    return _betainc_complement(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2))


@compiled(nogil=True)
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


@compiled(nogil=True)
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


@compiled(nogil=True)
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


@compiled(nogil=True)
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


@compiled(nogil=True)
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
