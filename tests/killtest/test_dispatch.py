"""The compiled decision (probmut.killtest.dispatch): each criterion's verdict equals the
kill rule written out on SciPy's values, in every direction, with and without DeepCrime's
rounding; every registry row is reached, one more kernel is one more entry; the engine's
DeepCrime shortcut gives the rule's verdict."""

import numpy as np
import pytest
from scipy import stats

from probmut.killtest import DIRECTIONS, KillCriterion, kill_test, kill_test_batch
from probmut.killtest.dispatch import (
    decide,
    deepcrime_killed,
    deepcrime_killed_across,
    deepcrime_killed_of,
)
from probmut.killtest.kernels import normal_tail_bounds, pooled_z_of_moments, pooled_z_test

from .conftest import a12_by_definition, pooled_d, rank_biserial, scipy_wilcoxon_batched

# SciPy warns about nearly identical samples (accuracies equal to 4 decimals); the
# comparisons below hold regardless.
pytestmark = pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")


def _expected_kills(p, up, down, criterion):
    # The kill rule written out independently of the compiled one.
    shown = np.array([float(f"{v:.{criterion.round_p}f}") for v in p]) \
        if criterion.round_p is not None else p
    size = {"two-sided": np.maximum(up, down), "mutant-worse": up,
            "mutant-better": down}[criterion.direction]
    return (shown < criterion.alpha) & (size >= criterion.effect)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("round_p", [None, 3])
def test_decisions_equal_the_rule_on_scipy_values(draws, direction, round_p):
    x, y = draws
    welch = KillCriterion(kind="welch", direction=direction, round_p=round_p)
    p = stats.ttest_ind(x, y, axis=1, equal_var=False).pvalue
    d = pooled_d(x, y)
    killed = kill_test_batch(x, y, welch)[2]
    np.testing.assert_array_equal(killed, _expected_kills(p, d, -d, welch))
    assert 100 < killed.sum() < 5900

    for effect in ("small", "medium", "large"):
        mw = KillCriterion(kind="mannwhitney", direction=direction, round_p=round_p,
                           effect=effect)
        p = stats.mannwhitneyu(x, y, axis=1).pvalue
        a12 = a12_by_definition(x, y)
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


def test_directions():
    healthy, worse = [0.90, 0.91, 0.92, 0.91], [0.85, 0.86, 0.84, 0.86]
    assert kill_test(healthy, worse, KillCriterion(direction="mutant-worse")).killed
    assert not kill_test(healthy, worse, KillCriterion(direction="mutant-better")).killed
    assert kill_test(worse, healthy, KillCriterion(direction="mutant-better")).killed
    assert kill_test(worse, healthy).killed  # two-sided


@pytest.fixture(scope="module")
def both_ways(paired_draws):
    """The paired draws in both orientations (so that mutant-better kills occur too), with
    SciPy's p-values and the effect sizes computed independently."""
    x, y = paired_draws
    x, y = np.r_[x, y], np.r_[y, x]
    d = x - y
    dz = d.mean(axis=1) / d.std(axis=1, ddof=1)
    return (x, y, stats.ttest_rel(x, y, axis=1).pvalue, dz, scipy_wilcoxon_batched(x, y),
            rank_biserial(x, y))


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


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_verdicts_side_by_side_equal_them_one_at_a_time(direction):
    """deepcrime_killed_across (the engine's pairs side by side) gives every pair the
    verdict of deepcrime_killed_of alone: on random moments, on pairs whose |z| lies
    inside the tail bounds (where only erfc decides: both verdicts occur there), on
    constant samples whose means differ by a rounding error (not killed, though the
    side-by-side arithmetic sees an infinite z) or by more (killed), and on NaN."""
    rng = np.random.default_rng(3)
    criterion = KillCriterion(direction=direction)
    _, p_max, effect, code = criterion.kernel_args()
    tail = normal_tail_bounds(p_max)
    k, count = 20, 400
    mx, my = rng.normal(0.9, 0.01, count), rng.normal(0.9, 0.01, count)
    ssx, ssy = rng.uniform(1e-4, 4e-3, count), rng.uniform(1e-4, 4e-3, count)
    # |z| / sqrt(2) spread across [low, high]: the mutant worse, or better, by that much
    band = slice(0, 100)
    ssy[band] = ssx[band]
    sign = np.where(np.arange(100) % 2, 1.0, -1.0)
    a = np.linspace(tail[0], tail[1], 100)
    my[band] = mx[band] - sign * a * np.sqrt(2) * np.sqrt(2 * ssx[band] / (2 * k - 2)) \
        * np.sqrt(2 / k)
    constant = slice(100, 110)  # degenerate: equal up to rounding (p = 1) or not (p = 0)
    ssx[constant], ssy[constant] = 0.0, 0.0
    my[constant] = np.nextafter(mx[constant], 0) - np.repeat([0.0, 0.01], 5)
    mx[110] = np.nan
    kills = np.zeros(count, np.int64)
    deepcrime_killed_across(mx, ssx, my, ssy, k, p_max, effect, code, tail,
                            np.zeros(count, np.bool_), kills)
    alone = np.array([deepcrime_killed_of(*pooled_z_of_moments(mx[q], ssx[q], k, my[q], ssy[q],
                                                               k), p_max, effect, code, tail)
                      for q in range(count)])
    np.testing.assert_array_equal(kills, alone)
    if direction == "two-sided":
        assert 0 < alone[band].sum() < 100  # erfc decides both ways inside the bounds
    worse = direction != "mutant-better"  # the constant mutants are the worse ones
    assert alone[constant].tolist() == [False] * 5 + [worse] * 5 and alone[110:].any()


def _in_order(values) -> float:
    total = 0.0
    for value in values:
        total += value
    return total
