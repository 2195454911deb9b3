"""Shared by the tests of probmut.killtest: real draws of the bundled populations, and
independent reference implementations (statsmodels, SciPy, the definitions written out)
of the tests' p-values and effect sizes."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from ..conftest import real_draws, real_paired_draws


@pytest.fixture(scope="module")
def random_draws(manifest):
    """10,000 random 20-vs-20 draws: healthy against every mnist/movie/lenet mutant."""
    return real_draws(manifest, 10000, seed=2024)


@pytest.fixture(scope="module")
def draws(manifest):
    """6,000 random 20-vs-20 draws of the bundled populations: healthy vs each mutant, and
    healthy vs healthy (where p spreads over [0, 1])."""
    return real_draws(manifest, 6000, seed=7, healthy_pairs=True)


@pytest.fixture(scope="module")
def paired_draws(manifest):
    """2,000 real paired 20-vs-20 draws of mnist/lenet weights_fuzzing and neurons_freezing."""
    return real_paired_draws(manifest, 2000, seed=12)


def glm_p(x, y):
    """DeepCrime's p: statsmodels' Gaussian GLM of the accuracies on the group."""
    design = sm.add_constant(np.r_[np.zeros(len(x)), np.ones(len(y))])
    return sm.GLM(np.r_[x, y], design).fit().pvalues[1]


def pooled_d(x, y):
    """Cohen's d with the pooled standard deviation, row by row of 20 vs 20."""
    sp = np.sqrt((19 * x.var(axis=1, ddof=1) + 19 * y.var(axis=1, ddof=1)) / 38)
    return (x.mean(axis=1) - y.mean(axis=1)) / sp


def a12_by_definition(x, y):
    """Vargha-Delaney A12 by its definition: P(X > Y) + P(X = Y) / 2 over all pairs."""
    greater = (x[:, :, None] > y[:, None, :]).mean(axis=(1, 2))
    equal = (x[:, :, None] == y[:, None, :]).mean(axis=(1, 2))
    return greater + 0.5 * equal


def scipy_wilcoxon(x, y):
    """SciPy's defaults, row by row (batched, SciPy picks one method for the whole batch)."""
    return np.array([stats.wilcoxon(a, b).pvalue for a, b in zip(x, y, strict=True)])


def scipy_wilcoxon_batched(x, y):
    """The same p-values in two batched calls, with the method SciPy's default picks for
    each row (checked row by row in test_wilcoxon_matches_scipy_on_real_paired_draws)."""
    exact = uses_exact_distribution(x, y)
    p = np.empty(len(x))
    p[exact] = stats.wilcoxon(x[exact], y[exact], axis=1, method="exact").pvalue
    p[~exact] = stats.wilcoxon(x[~exact], y[~exact], axis=1, method="asymptotic").pvalue
    return p


def rank_biserial(x, y):
    """Kerby's matched-pairs rank-biserial correlation over the nonzero differences."""
    out = []
    for d in x - y:
        d = d[d != 0]
        ranks = stats.rankdata(np.abs(d))
        out.append((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())
    return np.array(out)


def uses_exact_distribution(x, y):
    # SciPy's method="auto": exact without ties and zeros (n <= 50), else asymptotic (n > 13).
    d = x - y
    return np.array([np.all(row != 0) and np.unique(np.abs(row)).size == row.size
                     for row in d])
