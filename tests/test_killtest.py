"""The DeepCrime test against its oracle, statsmodels' GLM, on the paper's populations."""

import math

import numpy as np
import pytest
import statsmodels.api as sm

from probmut import paper
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion, deepcrime_test, deepcrime_test_batch, round_p_value

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
    p, d, _ = deepcrime_test_batch(x, y)
    np.testing.assert_allclose(p, oracle_p, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(d, [_paper_cohen_d(a, b) for a, b in zip(x, y, strict=True)], rtol=1e-9,
                               atol=1e-10)


def test_paper_decisions_agree_with_deepcrime_rounding_on_10000_draws(random_draws, oracle_p):
    x, y = random_draws
    _, _, killed = deepcrime_test_batch(x, y, paper.criterion())
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
        assert round_p_value(deepcrime_test(a, b).p_value_exact, 3) == printed


def test_rounding_boundary_changes_the_decision():
    criterion = KillCriterion(round_p=3)
    assert f"{criterion.p_max():.3f}" == "0.049"
    assert f"{math.nextafter(criterion.p_max(), 1):.3f}" == "0.050"
    exact = KillCriterion()
    # p = 0.0496 is significant exactly, not when printed as 0.050.
    assert 0.0496 <= exact.p_max() and 0.0496 > criterion.p_max()


def test_directions():
    healthy, worse = [0.90, 0.91, 0.92, 0.91], [0.85, 0.86, 0.84, 0.86]
    assert deepcrime_test(healthy, worse, KillCriterion(direction="mutant-worse")).killed
    assert not deepcrime_test(healthy, worse, KillCriterion(direction="mutant-better")).killed
    assert deepcrime_test(worse, healthy, KillCriterion(direction="mutant-better")).killed
    assert deepcrime_test(worse, healthy).killed  # two-sided


def test_degenerate_samples_never_nan():
    same = deepcrime_test([0.9] * 5, [0.9] * 5)
    assert (same.p_value, same.effect_size, same.killed) == (1.0, 0.0, False)
    apart = deepcrime_test([0.9] * 5, [0.8] * 5)
    assert apart.p_value == 0.0 and apart.effect_size == math.inf and apart.killed
    better = deepcrime_test([0.8] * 5, [0.9] * 5, KillCriterion(direction="mutant-worse"))
    assert better.effect_size == -math.inf and not better.killed


def test_bad_criterion_and_samples_are_clear_errors():
    with pytest.raises(ProbmutError, match="direction"):
        KillCriterion(direction="up")
    with pytest.raises(ProbmutError, match="alpha"):
        KillCriterion(alpha=1.5)
    with pytest.raises(ProbmutError, match="at least 2"):
        deepcrime_test([0.9], [0.8, 0.7])
    with pytest.raises(ProbmutError, match="NaN"):
        deepcrime_test([0.9, np.nan], [0.8, 0.7])
