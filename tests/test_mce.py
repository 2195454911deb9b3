"""Monte-Carlo error (METHOD.md section 5): the paper's figures, fresh randomness, fits."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, special, stats

from probmut import paper
from probmut.beta import fit_beta_batch, fit_least_squares, fit_moments
from probmut.io.arrays import load_kill_rates
from probmut.io.populations import read_population
from probmut.mce import jackknife_se, mce_from_kill_counts, monte_carlo_error

from .conftest import KILL_RATES, MCE_LABEL_312

RAW = Path(__file__).resolve().parents[1] / "raw_data" / "mnist"


def _paper_jack_estimate(rates, trials=100):
    """The paper's MCE code (utils.jack_estimate), written out independently as the oracle."""
    x = np.arange(1e-8, 1, 0.01)

    def beta_func(x, a, b):
        return (1 / np.exp(special.gammaln(a) + special.gammaln(b) - special.gammaln(a + b))
                * x ** (a - 1) * (1 - x) ** (b - 1))

    means, variances = [], []
    for row in rates:
        target = np.mean([stats.beta.pdf(x, p * trials + 1, trials - p * trials + 1)
                          for p in row], 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (a, b), _ = optimize.curve_fit(beta_func, x, target,
                                           p0=[np.mean(row * trials + 1),
                                               np.mean(trials - row * trials + 1)],
                                           method="trf", bounds=[0, np.inf], maxfev=2000)
        means.append(stats.beta.mean(a, b))
        variances.append(stats.beta.var(a, b))
    out = []
    for values in (np.array(means), np.array(variances)):
        r = len(values)
        loo = np.array([np.sum(np.delete(values, k)) / r for k in range(r)])
        out.append((values.mean(), np.sqrt((r - 1) / r * np.sum((loo - loo.mean()) ** 2))))
    return out


def test_paper_mce_reproduced_to_1e6():
    result = mce_from_kill_counts(load_kill_rates(MCE_LABEL_312, 100), paper.mce_settings())
    (mean, mean_se), (var, var_se) = _paper_jack_estimate(np.load(MCE_LABEL_312))
    for ours, oracle in ((result.mean, mean), (result.mean_se, mean_se), (result.var, var),
                         (result.var_se, var_se),
                         (result.mean_interval[0], mean - 1.96 * mean_se),
                         (result.mean_interval[1], mean + 1.96 * mean_se),
                         (result.var_interval[0], var - 1.96 * var_se),
                         (result.var_interval[1], var + 1.96 * var_se)):
        assert ours == pytest.approx(oracle, rel=1e-6)
    # METHOD.md's published figures, to the digits printed there.
    assert result.mean == pytest.approx(0.368834, abs=5e-7)
    assert result.var == pytest.approx(0.0170877, abs=5e-8)
    assert result.mean_interval == pytest.approx((0.36579, 0.37187), abs=5e-6)
    assert result.var_interval == pytest.approx((0.016613, 0.017562), abs=5e-7)


def test_fresh_randomness_within_standard_errors():
    healthy = read_population(RAW / "results_mnist_original.csv")
    mutant = read_population(RAW / "results_mnist_change_label_mutated0_MP_3.12.csv")
    result = monte_carlo_error(healthy, mutant, paper.mce_settings(), repetitions=100, seed=7)
    # Paper: mean 0.36883 with MCE se 0.00155 (from its 95% interval).
    combined = np.hypot(result.mean_se, (0.37187 - 0.36579) / (2 * 1.96))
    assert abs(result.mean - 0.36883) < 4 * combined
    assert 0.0005 < result.mean_se < 0.005
    assert not result.killed


def test_same_numbers_for_any_threads_and_seed_matters():
    rng = np.random.default_rng(3)
    h, m = rng.normal(0.99, 0.002, 80), rng.normal(0.989, 0.002, 80)
    one = monte_carlo_error(h, m, repetitions=20, seed=11, threads=1)
    two = monte_carlo_error(h, m, repetitions=20, seed=11, threads=2)
    other = monte_carlo_error(h, m, repetitions=20, seed=12, threads=2)
    assert np.array_equal(one.means, two.means) and np.array_equal(one.variances, two.variances)
    assert not np.array_equal(one.means, other.means)


def test_paired_mce_uses_the_same_ids():
    rng = np.random.default_rng(5)
    h = rng.normal(0.99, 0.003, 60)
    m = h - 0.0005  # a tiny shift: only a paired analysis sees it as consistent
    paired = monte_carlo_error(h, m, repetitions=10, paired=True, seed=1)
    unpaired = monte_carlo_error(h, m, repetitions=10, paired=False, seed=1)
    assert paired.paired and not unpaired.paired
    assert paired.means.shape == (10,)


def test_jackknife_forms():
    values = np.random.default_rng(0).normal(size=40)
    standard = jackknife_se(values)
    assert standard == pytest.approx(values.std(ddof=1) / np.sqrt(40))
    assert jackknife_se(values, "paper") == pytest.approx(standard * 39 / 40)


def test_batched_least_squares_matches_curve_fit():
    # every row of the paper's saved kill counts (one per magnitude of each mutation of
    # the three models: kill levels from none to all)
    rows = np.concatenate([load_kill_rates(f, 100)
                           for f in sorted(KILL_RATES.glob("*/*_list_mut.npy"))])
    x = np.arange(1e-8, 1, 0.01)
    a, b = fit_beta_batch(rows, 100, "lsq", 0.01)
    for i, row in enumerate(rows):
        ref = fit_least_squares(row, 100, 0.01)
        # curve_fit stops at a relative cost change of 1e-8: agreement to ~1e-5 ...
        assert (a[i], b[i]) == pytest.approx(ref, rel=1e-4)
        # ... and the batched fit is never worse on the paper's objective.
        target = np.mean([stats.beta.pdf(x, c + 1, 101 - c) for c in row], 0)

        def cost(p, target=target):
            return np.sum((stats.beta.pdf(x, *p) - target) ** 2)

        assert cost((a[i], b[i])) <= cost(ref) * (1 + 1e-9) + 1e-20
    moments = fit_beta_batch(rows, 100)
    assert np.allclose(np.column_stack(moments), [fit_moments(r, 100) for r in rows], rtol=1e-12)


def test_a_cached_mce_is_not_tested_again_and_gives_the_same_numbers(tmp_path, monkeypatch):
    """README: the MCE's results are cached on disk so runs resume (issue 44: they were
    not); the kill counts of each mutant are kept, keyed by what they depend on."""
    import probmut.engine
    from probmut.io.cache import Cache

    rng = np.random.default_rng(5)
    healthy, mutant = rng.normal(0.99, 0.002, 60), rng.normal(0.988, 0.002, 60)
    run = dict(repetitions=5, seed=3, cache=Cache(tmp_path))
    first = monte_carlo_error(healthy, mutant, **run)
    assert first.means.tolist() == monte_carlo_error(healthy, mutant, repetitions=5,
                                                     seed=3).means.tolist()  # no cache
    def computed(*args, **kwargs):
        raise RuntimeError("tested again")

    monkeypatch.setattr(probmut.engine, "kill_counts", computed)
    again = monte_carlo_error(healthy, mutant, **run)
    assert again.means.tolist() == first.means.tolist()
    with pytest.raises(RuntimeError, match="tested again"):  # another seed: computed
        monte_carlo_error(healthy, mutant, **(run | {"seed": 4}))
