"""One test, a batch (probmut.killtest.api): the DeepCrime test against its oracle,
statsmodels' GLM, on 10,000 draws of the paper's populations; bad samples refused."""

import numpy as np
import pytest

from probmut import paper
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion, kill_test, kill_test_batch

from .conftest import glm_p


def _paper_cohen_d(x, y):
    # The paper's utils.cohen_d, without its abs().
    nx, ny = len(x), len(y)
    pooled = np.sqrt(((nx - 1) * np.std(x, ddof=1) ** 2 + (ny - 1) * np.std(y, ddof=1) ** 2)
                     / (nx + ny - 2))
    return (np.mean(x) - np.mean(y)) / pooled


@pytest.fixture(scope="module")
def oracle_p(random_draws):
    return np.array([glm_p(a, b) for a, b in zip(*random_draws, strict=True)])


def test_batched_p_equals_statsmodels_glm_on_10000_real_draws(random_draws, oracle_p):
    x, y = random_draws
    p, d, _ = kill_test_batch(x, y)
    np.testing.assert_allclose(p, oracle_p, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(d, [_paper_cohen_d(a, b) for a, b in zip(x, y, strict=True)],
                               rtol=1e-9, atol=1e-10)


def test_paper_decisions_agree_with_deepcrime_rounding_on_10000_draws(random_draws, oracle_p):
    x, y = random_draws
    _, _, killed = kill_test_batch(x, y, paper.criterion())
    expected = [float(f"{p:.3f}") < 0.05 and abs(_paper_cohen_d(a, b)) >= 0.5
                for p, a, b in zip(oracle_p, x, y, strict=True)]
    assert killed.tolist() == expected
    assert 1000 < killed.sum() < 9000  # both outcomes well represented


def test_bad_samples_are_clear_errors():
    with pytest.raises(ProbmutError, match="at least 2"):
        kill_test([0.9], [0.8, 0.7])
    with pytest.raises(ProbmutError, match="NaN"):
        kill_test([0.9, np.nan], [0.8, 0.7])


def test_batch_refuses_rows_with_nan_or_inf():
    x, y = np.full((5, 20), 0.9), np.full((5, 20), 0.8)
    x[3, 4], y[4, 0] = np.nan, np.inf
    with pytest.raises(ProbmutError, match=r"^healthy holds NaN .* \(row 3; 1 such rows\)"):
        kill_test_batch(x, y)
    x[3, 4] = 0.9
    with pytest.raises(ProbmutError, match=r"^mutant holds NaN .* \(row 4; 1 such rows\)"):
        kill_test_batch(x, y, KillCriterion(kind="wilcoxon"))
