"""The pluggable kill criteria (Welch, Mann-Whitney/A12) against SciPy on real draws."""

import math

import numpy as np
import pytest
from scipy import special, stats

from probmut import paper
from probmut.engine import kill_counts
from probmut.errors import ProbmutError
from probmut.killtest import DIRECTIONS, KillCriterion, kill_test, kill_test_batch
from probmut.killtest.dispatch import decide, deepcrime_killed
from probmut.killtest.kernels import betainc, normal_tail_bounds, pooled_z_test

from .conftest import real_draws, real_paired_draws

# SciPy warns about nearly identical samples (accuracies equal to 4 decimals); the
# comparisons below hold regardless.
pytestmark = pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")


@pytest.fixture(scope="module")
def draws(manifest):
    """6,000 random 20-vs-20 draws of the bundled populations: healthy vs each mutant, and
    healthy vs healthy (where p spreads over [0, 1])."""
    return real_draws(manifest, 6000, seed=7, healthy_pairs=True)


def _pooled_d(x, y):
    sp = np.sqrt((19 * x.var(axis=1, ddof=1) + 19 * y.var(axis=1, ddof=1)) / 38)
    return (x.mean(axis=1) - y.mean(axis=1)) / sp


def _a12(x, y):
    """Vargha-Delaney A12 by its definition: P(X > Y) + P(X = Y) / 2 over all pairs."""
    greater = (x[:, :, None] > y[:, None, :]).mean(axis=(1, 2))
    equal = (x[:, :, None] == y[:, None, :]).mean(axis=(1, 2))
    return greater + 0.5 * equal


def _expected_kills(p, up, down, criterion):
    # The kill rule written out independently of the compiled one.
    shown = np.array([float(f"{v:.{criterion.round_p}f}") for v in p]) \
        if criterion.round_p is not None else p
    size = {"two-sided": np.maximum(up, down), "mutant-worse": up,
            "mutant-better": down}[criterion.direction]
    return (shown < criterion.alpha) & (size >= criterion.effect)


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
    np.testing.assert_allclose(d, _pooled_d(x, y), rtol=1e-9, atol=1e-9)
    assert p.min() < 1e-6 and p.max() > 0.9  # the draws cover the whole range of p


def test_mann_whitney_p_and_a12_match_scipy_on_real_draws(draws):
    x, y = draws
    p, a12, _ = kill_test_batch(x, y, KillCriterion(kind="mannwhitney"))
    reference = stats.mannwhitneyu(x, y, axis=1)  # SciPy's default method at 20 vs 20 ...
    asymptotic = stats.mannwhitneyu(x, y, axis=1, method="asymptotic")
    np.testing.assert_array_equal(reference.pvalue, asymptotic.pvalue)  # ... is asymptotic
    np.testing.assert_allclose(p, reference.pvalue, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(a12, reference.statistic / 400)
    np.testing.assert_allclose(a12, _a12(x, y), rtol=0, atol=1e-15)
    ties = np.array([np.unique(np.r_[a, b]).size < 40 for a, b in zip(x, y, strict=True)])
    assert ties.mean() > 0.5  # accuracies tie often: the tie correction is exercised


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("round_p", [None, 3])
def test_decisions_equal_the_rule_on_scipy_values(draws, direction, round_p):
    x, y = draws
    welch = KillCriterion(kind="welch", direction=direction, round_p=round_p)
    p = stats.ttest_ind(x, y, axis=1, equal_var=False).pvalue
    d = _pooled_d(x, y)
    killed = kill_test_batch(x, y, welch)[2]
    np.testing.assert_array_equal(killed, _expected_kills(p, d, -d, welch))
    assert 100 < killed.sum() < 5900

    for effect in ("small", "medium", "large"):
        mw = KillCriterion(kind="mannwhitney", direction=direction, round_p=round_p,
                           effect=effect)
        p = stats.mannwhitneyu(x, y, axis=1).pvalue
        a12 = _a12(x, y)
        killed = kill_test_batch(x, y, mw)[2]
        np.testing.assert_array_equal(killed, _expected_kills(p, a12, 1 - a12, mw))
        assert 100 < killed.sum() < 5900


def test_a12_thresholds_are_inclusive():
    # x = 0..19 against y = 8.5 (16 times) and 7.5 (4 times): 16 * 11 + 4 * 12 = 224 of
    # the 400 pairs have x > y, so A12 = 0.56 exactly, Vargha and Delaney's "small".
    x = np.arange(20, dtype=float)
    y = np.r_[np.full(16, 8.5), np.full(4, 7.5)]
    worse = KillCriterion(kind="mannwhitney", effect="small", alpha=0.999,
                          direction="mutant-worse")
    result = kill_test(x, y, worse)
    assert result.effect_size == 0.56 and result.killed
    assert not kill_test(y, x, worse).killed
    better = KillCriterion(kind="mannwhitney", effect="small", alpha=0.999,
                           direction="mutant-better")
    assert kill_test(y, x, better).killed  # 1 - A12 = 0.56 exactly, too
    assert not kill_test(x, y, KillCriterion(kind="mannwhitney", effect=0.5601,
                                                  alpha=0.999)).killed


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


def test_criterion_settings_and_errors():
    assert KillCriterion().effect == 0.5 and KillCriterion(kind="mannwhitney").effect == 0.64
    assert KillCriterion(effect="large").effect == 0.8
    assert KillCriterion(kind="mannwhitney", effect="0.7").effect == 0.7
    assert paper.criterion("welch").round_p == 3
    assert KillCriterion(kind="welch").describe() == "Welch p < 0.05 and |d| >= 0.5"
    assert KillCriterion().describe() == "p < 0.05 and |d| >= 0.5"
    assert (KillCriterion(kind="mannwhitney", direction="mutant-better").describe()
            == "Mann-Whitney p < 0.05 and 1-A12 >= 0.64")
    with pytest.raises(ProbmutError, match="kind must be one of deepcrime, .*, got 'ttest'"):
        KillCriterion(kind="ttest")
    with pytest.raises(ProbmutError, match=r"A12 and must be in \[0.5, 1\]"):
        KillCriterion(kind="mannwhitney", effect=0.2)
    with pytest.raises(ProbmutError, match="unknown effect size"):
        KillCriterion(effect="huge")
    with pytest.raises(ProbmutError, match=r"effect must be a finite number in \[0, inf\), got nan"):
        KillCriterion(effect=float("nan"))


@pytest.mark.parametrize("kind", ["welch", "mannwhitney"])
def test_engine_is_reproducible_by_seed_for_each_criterion(mnist_delete, kind):
    healthy, mutants = mnist_delete
    criterion = KillCriterion(kind=kind)
    one = kill_counts(healthy, mutants[1], repetitions=2, seed=11, jobs=1, criterion=criterion)
    two = kill_counts(healthy, mutants[1], repetitions=2, seed=11, jobs=2, criterion=criterion)
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, kill_counts(healthy, mutants[1], repetitions=2, seed=12,
                                               criterion=criterion))
    # Same random draws, another test: the counts differ but stay close.
    deepcrime = kill_counts(healthy, mutants[1], repetitions=2, seed=11)
    assert not np.array_equal(one, deepcrime)
    assert abs(one.mean() - deepcrime.mean()) < 15


def _scipy_kill_rate(healthy, mutant, rng, kind, bootstraps=20, trials=50):
    """METHOD.md section 3 with SciPy's tests (an independent oracle for the engine)."""
    kills = 0
    for _ in range(bootstraps):
        h_boot = healthy[rng.integers(0, healthy.size, healthy.size)]
        m_boot = mutant[rng.integers(0, mutant.size, mutant.size)]
        for _ in range(trials):
            x = h_boot[rng.choice(healthy.size, 20, replace=False)]
            y = m_boot[rng.choice(mutant.size, 20, replace=False)]
            if kind == "welch":
                p = stats.ttest_ind(x, y, equal_var=False).pvalue
                sp = np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2)
                kills += p < 0.05 and abs(x.mean() - y.mean()) / sp >= 0.5
            else:
                res = stats.mannwhitneyu(x, y)
                a12 = res.statistic / 400
                kills += res.pvalue < 0.05 and max(a12, 1 - a12) >= 0.64
    return kills / (bootstraps * trials)


@pytest.mark.parametrize("kind", ["welch", "mannwhitney"])
def test_engine_kill_rate_matches_scipy_implementation(mnist_delete, kind):
    healthy, mutants = mnist_delete
    h, m = healthy.values, mutants[1].values
    reference = _scipy_kill_rate(h, m, np.random.default_rng(5), kind)
    engine = kill_counts(h, m, repetitions=10, seed=5,
                         criterion=KillCriterion(kind=kind)).mean() / 100
    se = np.sqrt(reference * (1 - reference) / 1000) + 0.02
    assert abs(engine - reference) < 3 * se, (engine, reference)


# --- the paired criteria (model-level mutations) -------------------------------------------

@pytest.fixture(scope="module")
def paired_draws(manifest):
    """2,000 real paired 20-vs-20 draws of mnist/lenet weights_fuzzing and neurons_freezing."""
    return real_paired_draws(manifest, 2000, seed=12)


def _scipy_wilcoxon(x, y):
    """SciPy's defaults, row by row (batched, SciPy picks one method for the whole batch)."""
    return np.array([stats.wilcoxon(a, b).pvalue for a, b in zip(x, y, strict=True)])


def _scipy_wilcoxon_batched(x, y):
    """The same p-values in two batched calls, with the method SciPy's default picks for
    each row (checked row by row in test_wilcoxon_matches_scipy_on_real_paired_draws)."""
    exact = _uses_exact_distribution(x, y)
    p = np.empty(len(x))
    p[exact] = stats.wilcoxon(x[exact], y[exact], axis=1, method="exact").pvalue
    p[~exact] = stats.wilcoxon(x[~exact], y[~exact], axis=1, method="asymptotic").pvalue
    return p


@pytest.fixture(scope="module")
def paired_scipy_wilcoxon(paired_draws):
    return _scipy_wilcoxon(*paired_draws)


def _rank_biserial(x, y):
    """Kerby's matched-pairs rank-biserial correlation over the nonzero differences."""
    out = []
    for d in x - y:
        d = d[d != 0]
        ranks = stats.rankdata(np.abs(d))
        out.append((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())
    return np.array(out)


def _uses_exact_distribution(x, y):
    # SciPy's method="auto": exact without ties and zeros (n <= 50), else asymptotic (n > 13).
    d = x - y
    return np.array([np.all(row != 0) and np.unique(np.abs(row)).size == row.size
                     for row in d])


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
    np.testing.assert_array_equal(_scipy_wilcoxon_batched(x, y), reference)
    exact = _uses_exact_distribution(x, y)
    # Where SciPy uses the exact null distribution, the p-values are the same numbers.
    np.testing.assert_array_equal(p[exact], reference[exact])
    np.testing.assert_allclose(p[~exact], reference[~exact], rtol=1e-9, atol=0)
    np.testing.assert_allclose(r_rb, _rank_biserial(x, y), rtol=0, atol=1e-15)
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


@pytest.fixture(scope="module")
def both_ways(paired_draws):
    """The paired draws in both orientations (so that mutant-better kills occur too), with
    SciPy's p-values and the effect sizes computed independently."""
    x, y = paired_draws
    x, y = np.r_[x, y], np.r_[y, x]
    d = x - y
    dz = d.mean(axis=1) / d.std(axis=1, ddof=1)
    return (x, y, stats.ttest_rel(x, y, axis=1).pvalue, dz, _scipy_wilcoxon_batched(x, y),
            _rank_biserial(x, y))


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("round_p", [None, 3])
def test_paired_decisions_equal_the_rule_on_scipy_values(both_ways, direction, round_p):
    x, y, p_t, dz, p_w, r_rb = both_ways
    for effect in ("small", "medium", "large"):
        paired_t = KillCriterion(kind="paired-t", direction=direction, round_p=round_p,
                                 effect=effect)
        killed = kill_test_batch(x, y, paired_t)[2]
        np.testing.assert_array_equal(killed, _expected_kills(p_t, dz, -dz, paired_t))
        assert 100 < killed.sum() < 3900

        signed_rank = KillCriterion(kind="wilcoxon", direction=direction, round_p=round_p,
                                    effect=effect)
        killed = kill_test_batch(x, y, signed_rank)[2]
        np.testing.assert_array_equal(killed, _expected_kills(p_w, r_rb, -r_rb, signed_rank))
        assert 100 < killed.sum() < 3900


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


def test_paired_criteria_refuse_independent_populations(mnist_delete):
    from probmut.repeat import repeated_tests

    healthy, mutants = mnist_delete
    for kind in ("paired-t", "wilcoxon"):
        criterion = KillCriterion(kind=kind)
        with pytest.raises(ProbmutError, match=f"the {kind} criterion needs paired populations"):
            kill_counts(healthy.values, mutants[0].values, bootstraps=2, criterion=criterion)
        with pytest.raises(ProbmutError, match="needs paired populations"):
            repeated_tests(healthy, mutants[0], repetitions=2, criterion=criterion)
    with pytest.raises(ProbmutError, match="same size, got 5 healthy and 4 mutant"):
        kill_test(np.ones(5), np.ones(4), KillCriterion(kind="wilcoxon"))


@pytest.mark.parametrize("kind", ["paired-t", "wilcoxon"])
def test_engine_with_paired_criteria(manifest, kind):
    from probmut.io.populations import read_population
    from probmut.population import pair

    mutation = manifest.mutation("mnist", "weights_fuzzing")
    healthy, mutant = pair(read_population(mutation.healthy), read_population(mutation.files[1]))
    criterion = KillCriterion(kind=kind)
    run = dict(repetitions=10, paired=True, criterion=criterion)
    one = kill_counts(healthy.values, mutant.values, seed=4, jobs=1, **run)
    np.testing.assert_array_equal(one, kill_counts(healthy.values, mutant.values, seed=4,
                                                   jobs=2, **run))
    # Same kill probability as METHOD.md section 3 written plainly with SciPy's tests.
    rng = np.random.default_rng(4)
    h, m = healthy.values, mutant.values
    kills = 0
    for _ in range(20):
        ids = rng.integers(0, h.size, h.size)
        for _ in range(50):
            pick = ids[rng.choice(h.size, 20, replace=False)]
            x, y = h[pick], m[pick]
            if kind == "paired-t":
                p = stats.ttest_rel(x, y).pvalue
                size = abs(np.mean(x - y) / np.std(x - y, ddof=1))
            else:
                p = stats.wilcoxon(x, y).pvalue
                size = abs(_rank_biserial(x[None], y[None])[0])
            kills += p < 0.05 and size >= criterion.effect
    reference = kills / 1000
    engine = one.mean() / 100
    se = np.sqrt(reference * (1 - reference) / 1000) + 0.02
    assert abs(engine - reference) < 3 * se, (engine, reference)
    # The healthy population against itself, paired: every difference is zero.
    assert kill_counts(h, h, bootstraps=5, paired=True, criterion=criterion, seed=1).max() == 0


# --- the registry ---------------------------------------------------------------------------

def test_every_registry_row_is_reached_by_the_compiled_dispatch():
    from probmut.killtest import CRITERIA, KINDS, decide

    rng = np.random.default_rng(5)
    x, y = rng.normal(0.9, 0.01, 20), rng.normal(0.895, 0.01, 20)
    assert KINDS == tuple(CRITERIA) and KINDS[0] == "deepcrime"
    for name, spec in CRITERIA.items():
        criterion = KillCriterion(kind=name)
        kind, p_max, effect, direction = criterion.kernel_args()
        p, size, killed = decide(kind, x, y, p_max, effect, direction)
        expected = spec.kernel(x, y)
        assert (p, size) == expected[:2]
        assert killed == (p < 0.05 and max(expected[1], expected[2]) >= criterion.effect)
        for label, value in spec.thresholds.items():
            assert KillCriterion(kind=name, effect=label).effect == value
        assert KillCriterion(kind=name).effect == spec.thresholds["medium"]
        for direction, rule in spec.rules.items():
            assert rule in KillCriterion(kind=name, direction=direction).describe()


def test_a_new_criterion_is_one_entry_and_its_kernel():
    # The dispatch is built from a list of kernels; one more kernel gets the next id.
    import numba

    from probmut.killtest.criteria import CRITERIA
    from probmut.killtest.dispatch import _dispatch_chain

    @numba.njit
    def median_gap(x, y):   # a toy kernel with the registry's signature
        gap = np.median(x) - np.median(y)
        return 0.0, gap, -gap

    kernels = [c.kernel for c in CRITERIA.values()] + [median_gap]
    dispatch = _dispatch_chain(kernels)
    x, y = np.array([0.9, 0.8, 0.7]), np.array([0.5, 0.6, 0.4])
    assert dispatch(len(CRITERIA), x, y) == (0.0, pytest.approx(0.3), pytest.approx(-0.3))
    assert dispatch(0, x, y) == pooled_z_test(x, y)


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


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_the_engines_deepcrime_shortcut_gives_the_rules_verdict(direction):
    """The engine's DeepCrime verdict (sums taken while drawing, erfc only near the
    crossing) equals ``decide`` on samples crowded around the boundary |z| = 1.96 and the
    effect threshold, constant ones included."""
    rng = np.random.default_rng(7)
    criterion = KillCriterion(direction=direction)
    args = criterion.kernel_args()
    tail = normal_tail_bounds(args[1])
    checked = 0
    for shift in np.linspace(-0.012, 0.012, 241):
        x = rng.normal(0.97, 0.01, 20)
        y = np.round(rng.normal(0.97 + shift, 0.01, 20), 3 if shift > 0.01 else 12)
        for a, b in ((x, y), (np.full(20, 0.9), np.full(20, 0.9)), (np.full(20, 0.9), y)):
            expected = decide(*args[:1], a, b, *args[1:])[2]
            assert deepcrime_killed(a, b, _in_order(a), _in_order(b), *args[1:], tail) \
                == expected
            checked += 1
    assert checked == 3 * 241


def _in_order(values) -> float:
    total = 0.0
    for value in values:
        total += value
    return total
