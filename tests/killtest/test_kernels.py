"""The compiled tests and their maths (probmut.killtest.kernels) against SciPy, on real
draws of the bundled populations, and against exact rational arithmetic; degenerate
samples (constants, tiny spreads) judged relative to the data's scale (issue 8)."""

import math

import numpy as np
import pytest
from scipy import special, stats

from probmut.killtest import KillCriterion, kill_test, kill_test_batch
from probmut.killtest.kernels import betainc, normal_tail_bounds

from .conftest import (
    a12_by_definition,
    glm_p,
    pooled_d,
    rank_biserial,
    scipy_wilcoxon,
    scipy_wilcoxon_batched,
    uses_exact_distribution,
)

# SciPy warns about nearly identical samples (accuracies equal to 4 decimals); the
# comparisons below hold regardless.
pytestmark = pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")


def test_betainc_matches_scipy():
    rng = np.random.default_rng(0)
    a = 10 ** rng.uniform(-1, 3, 4000)
    b = 10 ** rng.uniform(-1, 3, 4000)
    x = rng.uniform(0, 1, 4000)
    ours = np.array([betainc(*args) for args in zip(a, b, x, strict=True)])
    # Below 1e-250 (far below any p-value that matters) both lose digits to underflow.
    np.testing.assert_allclose(ours, special.betainc(a, b, x), rtol=1e-11, atol=1e-250)
    assert betainc(2.0, 3.0, 0.0) == 0.0 and betainc(2.0, 3.0, 1.0) == 1.0


def test_betainc_on_the_student_t_range_is_near_machine_precision():
    # What Welch's test needs: a = df/2 in [0.5, 200], b = 1/2.
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 200, 4000)
    x = rng.uniform(0, 1, 4000)
    ours = np.array([betainc(ai, 0.5, xi) for ai, xi in zip(a, x, strict=True)])
    np.testing.assert_allclose(ours, special.betainc(a, 0.5, x), rtol=1e-12, atol=1e-300)


def test_welch_p_and_d_match_scipy_on_real_draws(draws):
    x, y = draws
    p, d, _ = kill_test_batch(x, y, KillCriterion(kind="welch"))
    reference = stats.ttest_ind(x, y, axis=1, equal_var=False)
    # The sample means differ in the last bits between summation orders; p inherits that.
    np.testing.assert_allclose(p, reference.pvalue, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(d, pooled_d(x, y), rtol=1e-9, atol=1e-9)
    assert p.min() < 1e-6 and p.max() > 0.9  # the draws cover the whole range of p


def test_mann_whitney_p_and_a12_match_scipy_on_real_draws(draws):
    x, y = draws
    p, a12, _ = kill_test_batch(x, y, KillCriterion(kind="mannwhitney"))
    reference = stats.mannwhitneyu(x, y, axis=1)  # SciPy's default method at 20 vs 20 ...
    asymptotic = stats.mannwhitneyu(x, y, axis=1, method="asymptotic")
    np.testing.assert_array_equal(reference.pvalue, asymptotic.pvalue)  # ... is asymptotic
    np.testing.assert_allclose(p, reference.pvalue, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(a12, reference.statistic / 400)
    np.testing.assert_allclose(a12, a12_by_definition(x, y), rtol=0, atol=1e-15)
    ties = np.array([np.unique(np.r_[a, b]).size < 40 for a, b in zip(x, y, strict=True)])
    assert ties.mean() > 0.5  # accuracies tie often: the tie correction is exercised


def test_degenerate_samples_follow_deepcrime_conventions():
    welch = KillCriterion(kind="welch")
    same = kill_test([0.9] * 5, [0.9] * 5, welch)
    assert (same.p_value, same.effect_size, same.killed) == (1.0, 0.0, False)
    apart = kill_test([0.9] * 5, [0.8] * 5, welch)
    assert (apart.p_value, apart.effect_size, apart.killed) == (0.0, math.inf, True)
    # One constant sample only: Welch is well defined (df = k - 1 of the other).
    one = kill_test([0.9] * 5, [0.8, 0.81, 0.79, 0.8, 0.8], welch)
    assert np.isclose(one.p_value, stats.ttest_ind([0.9] * 5, [0.8, 0.81, 0.79, 0.8, 0.8],
                                                   equal_var=False).pvalue)
    mw = kill_test([0.9] * 5, [0.9] * 5, KillCriterion(kind="mannwhitney"))
    assert (mw.p_value, mw.effect_size, mw.killed) == (1.0, 0.5, False)


def test_degenerate_samples_never_nan():
    same = kill_test([0.9] * 5, [0.9] * 5)
    assert (same.p_value, same.effect_size, same.killed) == (1.0, 0.0, False)
    apart = kill_test([0.9] * 5, [0.8] * 5)
    assert apart.p_value == 0.0 and apart.effect_size == math.inf and apart.killed
    better = kill_test([0.8] * 5, [0.9] * 5, KillCriterion(direction="mutant-worse"))
    assert better.effect_size == -math.inf and not better.killed


@pytest.fixture(scope="module")
def paired_scipy_wilcoxon(paired_draws):
    return scipy_wilcoxon(*paired_draws)


def test_paired_t_matches_scipy_on_real_paired_draws(paired_draws):
    x, y = paired_draws
    p, dz, _ = kill_test_batch(x, y, KillCriterion(kind="paired-t"))
    reference = stats.ttest_rel(x, y, axis=1)
    np.testing.assert_allclose(p, reference.pvalue, rtol=1e-9, atol=1e-300)
    d = x - y
    np.testing.assert_allclose(dz, d.mean(axis=1) / d.std(axis=1, ddof=1), rtol=1e-9)
    assert p.min() < 1e-6 and p.max() > 0.9


def test_wilcoxon_matches_scipy_on_real_paired_draws(paired_draws, paired_scipy_wilcoxon):
    x, y = paired_draws
    p, r_rb, _ = kill_test_batch(x, y, KillCriterion(kind="wilcoxon"))
    reference = paired_scipy_wilcoxon
    np.testing.assert_array_equal(scipy_wilcoxon_batched(x, y), reference)
    exact = uses_exact_distribution(x, y)
    # Where SciPy uses the exact null distribution, the p-values are the same numbers.
    np.testing.assert_array_equal(p[exact], reference[exact])
    np.testing.assert_allclose(p[~exact], reference[~exact], rtol=1e-9, atol=0)
    np.testing.assert_allclose(r_rb, rank_biserial(x, y), rtol=0, atol=1e-15)
    # Both branches, zero differences and tied |differences| all occur on these data.
    zeros = np.any(x == y, axis=1)
    assert 300 < exact.sum() < 1700 and zeros.sum() >= 20
    assert (~exact & ~zeros).sum() > 300


# SciPy computes its normal-approximation z as well, dividing by zero where all ranks tie
@pytest.mark.filterwarnings("ignore:invalid value encountered in scalar divide:RuntimeWarning")
def test_wilcoxon_small_samples_use_scipys_exhaustive_distribution():
    # k <= 13 with ties or zeros: SciPy enumerates all 2^k sign flips; so does the kernel,
    # over the observed average ranks. Both give exact multiples of 2^-k. (SciPy's
    # enumeration takes seconds at k = 13, so smaller k here.)
    rng = np.random.default_rng(3)
    tied = 0
    for k in [int(k) for k in rng.integers(2, 9, 100)] + [11]:
        x = np.round(rng.normal(0.9, 0.01, k), 3)
        y = np.round(x - rng.normal(0.002, 0.004, k), 3)
        zeros = int(rng.integers(0, k))
        y[:zeros] = x[:zeros]
        d = np.abs(x - y)[x != y]
        tied += np.unique(d).size < d.size
        ours = kill_test(x, y, KillCriterion(kind="wilcoxon")).p_value
        if zeros == k:
            assert ours == 1.0   # no nonzero difference: no evidence (SciPy: NaN or 1)
            continue
        assert ours == stats.wilcoxon(x, y).pvalue
    assert tied > 20


def test_paired_degenerate_differences():
    healthy = np.array([0.90, 0.91, 0.92, 0.91, 0.93])
    for kind in ("paired-t", "wilcoxon"):
        same = kill_test(healthy, healthy, KillCriterion(kind=kind))
        assert (same.p_value, same.effect_size, same.killed) == (1.0, 0.0, False)
    # Every instance loses exactly 0.05 (up to the rounding of the subtraction): the
    # differences are constant, d_z is infinite.
    shifted = kill_test(healthy, healthy - 0.05, KillCriterion(kind="paired-t"))
    assert shifted.p_value == 0.0 and shifted.effect_size == math.inf and shifted.killed
    constant = np.full(5, 0.9)
    shifted = kill_test(constant, constant - 0.05, KillCriterion(kind="paired-t"))
    assert shifted.p_value == 0.0 and shifted.effect_size == math.inf and shifted.killed
    better = KillCriterion(kind="paired-t", direction="mutant-better")
    assert not kill_test(constant, constant - 0.05, better).killed


MEAN_BASED = ("deepcrime", "welch", "paired-t")


def test_equal_constants_of_unequal_sizes_are_no_effect():
    # The means of 7 and of 3 copies of 0.7 differ by one ulp; the old `s_p <= 0` rule saw
    # a pooled variance of 1e-33 and killed (p = 0.0095, d = 1.79).
    for kind in ("deepcrime", "welch"):
        res = kill_test([0.7] * 7, [0.7] * 3, KillCriterion(kind=kind))
        assert (res.p_value, res.effect_size, res.killed) == (1.0, 0.0, False)


def test_random_equal_constants_are_never_killed():
    rng = np.random.default_rng(8)
    for _ in range(1500):
        kx, ky = (int(k) for k in rng.integers(2, 200, 2))
        c = rng.uniform(0, 1) * 10.0 ** rng.integers(-6, 4)
        for kind in MEAN_BASED:
            sizes = (kx, kx) if kind == "paired-t" else (kx, ky)
            res = kill_test(np.full(sizes[0], c), np.full(sizes[1], c),
                            KillCriterion(kind=kind, alpha=0.999, effect=0.0))
            assert (res.p_value, res.effect_size, res.killed) == (1.0, 0.0, False), (kind, kx, c)


def test_different_constants_are_killed_with_infinite_effect():
    rng = np.random.default_rng(9)
    for _ in range(300):
        kx, ky = (int(k) for k in rng.integers(2, 200, 2))
        c, shift = rng.uniform(0.5, 1), rng.uniform(1e-12, 0.1) * rng.choice([-1, 1])
        for kind in MEAN_BASED:
            sizes = (kx, kx) if kind == "paired-t" else (kx, ky)
            x, y = np.full(sizes[0], c), np.full(sizes[1], c - shift)
            res = kill_test(x, y, KillCriterion(kind=kind))
            assert res.p_value == 0.0 and res.effect_size == math.copysign(math.inf, shift)
            assert res.killed
            against = "mutant-better" if shift > 0 else "mutant-worse"
            assert not kill_test(x, y, KillCriterion(kind=kind, direction=against)).killed


def _exact_statistics(x, y, kind):
    """t (or z) and df in exact rational arithmetic, then float: the reference p."""
    from fractions import Fraction

    from scipy import special

    fx, fy = [Fraction(v) for v in x], [Fraction(v) for v in y]
    if kind == "paired-t":
        diffs = [a - b for a, b in zip(fx, fy, strict=True)]
        mean = sum(diffs) / len(diffs)
        var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
        t2, df = mean * mean / (var / len(diffs)), len(diffs) - 1
        return 2 * special.stdtr(df, -math.sqrt(float(t2)))
    mx, my = sum(fx) / len(fx), sum(fy) / len(fy)
    ssx, ssy = sum((v - mx) ** 2 for v in fx), sum((v - my) ** 2 for v in fy)
    if kind == "deepcrime":
        sp2 = (ssx + ssy) / (len(fx) + len(fy) - 2)
        z2 = (mx - my) ** 2 / (sp2 * (Fraction(1, len(fx)) + Fraction(1, len(fy))))
        return math.erfc(math.sqrt(float(z2)) / math.sqrt(2))
    vx, vy = ssx / (len(fx) - 1) / len(fx), ssy / (len(fy) - 1) / len(fy)
    df = (vx + vy) ** 2 / (vx * vx / (len(fx) - 1) + vy * vy / (len(fy) - 1))
    return 2 * special.stdtr(float(df), -math.sqrt(float((mx - my) ** 2 / (vx + vy))))


def _library_p(x, y, kind):
    from scipy import stats

    if kind == "deepcrime":
        return glm_p(x, y)
    if kind == "welch":
        return stats.ttest_ind(x, y, equal_var=False).pvalue
    return stats.ttest_rel(x, y).pvalue


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.PerfectSeparationWarning")
@pytest.mark.parametrize("kind", MEAN_BASED)
def test_near_constant_data_is_not_degenerate(kind):
    # Accuracies near c with spreads in the 4th to 13th digit are never taken for
    # constants, and p is as exact as double precision allows: the means carry a rounding
    # error of about k eps relative, so z (or t) about k eps / spread, and p about
    # (1 + z^2) times that. statsmodels and SciPy meet the same bound (observed: within a
    # third of it for all three).
    from scipy import special

    rng = np.random.default_rng(10)
    for digit in range(4, 14):
        spread = 10.0 ** -digit
        for _ in range(30):
            c = rng.uniform(0.5, 1)
            x = c + spread * rng.normal(0, 1, 20)
            y = (x if kind == "paired-t" else c) + spread * rng.normal(0.7, 1, 20)
            exact = _exact_statistics(x, y, kind)
            bound = (1 + special.ndtri(exact / 2) ** 2) * 20 * np.finfo(float).eps / spread
            ours = kill_test(x, y, KillCriterion(kind=kind)).p_value
            assert 0 < ours < 1
            assert abs(ours / exact - 1) <= bound, (digit, ours, exact)
            assert abs(_library_p(x, y, kind) / exact - 1) <= bound


@pytest.mark.parametrize("kind", ["welch", "deepcrime", "mannwhitney"])
def test_tiny_values_give_scipys_answer_not_a_division_by_zero(kind):
    # One constant sample against one whose spread is tiny in absolute terms: Welch's df
    # once squared variances of about 1e-244 and divided by an underflowed zero.
    x, y = np.array([0.0, 0.0]), np.array([0.0, 4.5e-122])
    result = kill_test(x, y, KillCriterion(kind=kind))
    if kind == "welch":
        assert result.p_value == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)
    assert 0 < result.p_value <= 1 and not result.killed


@pytest.mark.parametrize("p_max", [1e-300, 0.0001, 0.0495, 0.05, 0.5, 0.999999])
def test_normal_tail_bounds_bracket_the_p_value_crossing_tightly(p_max):
    """The engine skips DeepCrime's erfc outside these bounds: above ``high`` the p-value
    passes, below ``low`` it fails, and between them is a sliver (the few ``|z|`` whose
    p-value is computed)."""
    low, high = normal_tail_bounds(p_max)
    crossing = special.erfcinv(p_max)
    assert low < crossing < high and high - low < 1e-8 * max(crossing, 1)
    for a in np.linspace(high, 2 * high, 50):
        assert math.erfc(a) <= p_max
    for a in np.linspace(low / 2, low, 50):
        assert math.erfc(a) > p_max


def test_normal_tail_bounds_at_the_ends_keep_every_verdict():
    assert normal_tail_bounds(1.0) == (-1.0, 0.0)  # every p-value passes, erfc(0) = 1 too
    low, high = normal_tail_bounds(-0.5)             # none passes, not even p = 0
    assert math.erfc(low) > -0.5 and high == math.inf
