"""The DeepCrime test against its oracle, statsmodels' GLM, on the paper's populations."""

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from probmut import paper
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion, kill_test, kill_test_batch, round_p_value

from .conftest import real_draws


def _glm_p(x, y):
    design = sm.add_constant(np.r_[np.zeros(len(x)), np.ones(len(y))])
    return sm.GLM(np.r_[x, y], design).fit().pvalues[1]


def _paper_cohen_d(x, y):
    # The paper's utils.cohen_d, without its abs().
    nx, ny = len(x), len(y)
    pooled = np.sqrt(((nx - 1) * np.std(x, ddof=1) ** 2 + (ny - 1) * np.std(y, ddof=1) ** 2)
                     / (nx + ny - 2))
    return (np.mean(x) - np.mean(y)) / pooled


@pytest.fixture(scope="module")
def random_draws(manifest):
    """10,000 random 20-vs-20 draws: healthy against every mnist/movie/lenet mutant."""
    return real_draws(manifest, 10000, seed=2024)


@pytest.fixture(scope="module")
def oracle_p(random_draws):
    return np.array([_glm_p(a, b) for a, b in zip(*random_draws, strict=True)])


def test_batched_p_equals_statsmodels_glm_on_10000_real_draws(random_draws, oracle_p):
    x, y = random_draws
    p, d, _ = kill_test_batch(x, y)
    np.testing.assert_allclose(p, oracle_p, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(d, [_paper_cohen_d(a, b) for a, b in zip(x, y, strict=True)], rtol=1e-9,
                               atol=1e-10)


def test_paper_decisions_agree_with_deepcrime_rounding_on_10000_draws(random_draws, oracle_p):
    x, y = random_draws
    _, _, killed = kill_test_batch(x, y, paper.criterion())
    expected = [float(f"{p:.3f}") < 0.05 and abs(_paper_cohen_d(a, b)) >= 0.5
                for p, a, b in zip(oracle_p, x, y, strict=True)]
    assert killed.tolist() == expected
    assert 1000 < killed.sum() < 9000  # both outcomes well represented


def test_rounding_reads_p_as_the_printed_summary_table(random_draws):
    # DeepCrime parses the p out of glm.summary(); our rounding must give the same number.
    x, y = random_draws
    for a, b in zip(x[:150], y[:150], strict=True):
        design = sm.add_constant(np.r_[np.zeros(20), np.ones(20)])
        fit = sm.GLM(np.r_[a, b], design).fit()
        printed = float(str(fit.summary().tables[1][2][4]))
        assert round_p_value(kill_test(a, b).p_value_exact, 3) == printed


def test_rounding_boundary_changes_the_decision():
    criterion = KillCriterion(round_p=3)
    assert f"{criterion.p_max():.3f}" == "0.049"
    assert f"{math.nextafter(criterion.p_max(), 1):.3f}" == "0.050"
    exact = KillCriterion()
    # p = 0.0496 is significant exactly, not when printed as 0.050.
    assert 0.0496 <= exact.p_max() and 0.0496 > criterion.p_max()


def test_directions():
    healthy, worse = [0.90, 0.91, 0.92, 0.91], [0.85, 0.86, 0.84, 0.86]
    assert kill_test(healthy, worse, KillCriterion(direction="mutant-worse")).killed
    assert not kill_test(healthy, worse, KillCriterion(direction="mutant-better")).killed
    assert kill_test(worse, healthy, KillCriterion(direction="mutant-better")).killed
    assert kill_test(worse, healthy).killed  # two-sided


def test_degenerate_samples_never_nan():
    same = kill_test([0.9] * 5, [0.9] * 5)
    assert (same.p_value, same.effect_size, same.killed) == (1.0, 0.0, False)
    apart = kill_test([0.9] * 5, [0.8] * 5)
    assert apart.p_value == 0.0 and apart.effect_size == math.inf and apart.killed
    better = kill_test([0.8] * 5, [0.9] * 5, KillCriterion(direction="mutant-worse"))
    assert better.effect_size == -math.inf and not better.killed


def test_bad_criterion_and_samples_are_clear_errors():
    with pytest.raises(ProbmutError, match="direction"):
        KillCriterion(direction="up")
    with pytest.raises(ProbmutError, match="alpha"):
        KillCriterion(alpha=1.5)
    with pytest.raises(ProbmutError, match="at least 2"):
        kill_test([0.9], [0.8, 0.7])
    with pytest.raises(ProbmutError, match="NaN"):
        kill_test([0.9, np.nan], [0.8, 0.7])


# --- degenerate samples, relative to the data's scale (issue 8) ----------------------------

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
        return _glm_p(x, y)
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


def test_batch_refuses_rows_with_nan_or_inf():
    x, y = np.full((5, 20), 0.9), np.full((5, 20), 0.8)
    x[3, 4], y[4, 0] = np.nan, np.inf
    with pytest.raises(ProbmutError, match=r"^healthy holds NaN .* \(row 3; 1 such rows\)"):
        kill_test_batch(x, y)
    x[3, 4] = 0.9
    with pytest.raises(ProbmutError, match=r"^mutant holds NaN .* \(row 4; 1 such rows\)"):
        kill_test_batch(x, y, KillCriterion(kind="wilcoxon"))


@pytest.mark.parametrize("kind", ["welch", "deepcrime", "mannwhitney"])
def test_tiny_values_give_scipys_answer_not_a_division_by_zero(kind):
    # One constant sample against one whose spread is tiny in absolute terms: Welch's df
    # once squared variances of about 1e-244 and divided by an underflowed zero.
    x, y = np.array([0.0, 0.0]), np.array([0.0, 4.5e-122])
    result = kill_test(x, y, KillCriterion(kind=kind))
    if kind == "welch":
        assert result.p_value == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)
    assert 0 < result.p_value <= 1 and not result.killed
