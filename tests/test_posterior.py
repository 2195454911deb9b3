"""Bagged posterior, Beta summaries and distances against METHOD.md and the paper's data."""

import numpy as np
import pytest
from scipy import integrate, stats

from probmut import paper
from probmut.io.populations import load_kill_rates
from probmut.posterior import (
    PosteriorSettings,
    bagged_posteriors,
    credible_interval,
    fit_moments,
    hellinger,
    mixture_pdf,
    prob_greater,
    study_from_kill_counts,
)

# METHOD.md, "Reference values": (H_s, H_m, ratio) for healthy and each magnitude.
REFERENCE_TABLE = {
    "healthy": (0.75663, 1.00000, 0.756626),
    "3.1": (0.91377, 1.00000, 0.913773),
    "9.29": (0.99836, 0.99924, 0.999124),
    "12.38": (0.99942, 0.99979, 0.999627),
    "18.57": (1.00000, 0.95441, 1.047766),
    "30.93": (1.00000, 0.00355, 281.44),
}


def test_paper_kill_rates_reproduce_the_reference_table(reference):
    baseline = load_kill_rates(reference / "kill_rates" / "mnist_orig.npy", 100)
    mutants = load_kill_rates(
        reference / "kill_rates" / "mnist" / "mnist_delete_training_data_list_mut.npy", 100)
    study = study_from_kill_counts(baseline, list(mutants), list(REFERENCE_TABLE),
                                   paper.posterior_settings())
    for row in study.populations:
        h_s, h_m, ratio = REFERENCE_TABLE[row.name]
        # The table prints 5 decimals for H and 6 significant digits for the ratio.
        assert row.h_sound == pytest.approx(h_s, abs=5e-6)
        assert row.h_mutant == pytest.approx(h_m, abs=5e-6)
        assert row.ratio == pytest.approx(ratio, rel=1e-4)
    assert [r.killed for r in study.populations[1:]] == [False, False, False, True, True]


def test_fresh_monte_carlo_agrees_with_the_paper(mnist_delete):
    healthy, mutants = mnist_delete
    study = bagged_posteriors(healthy, mutants, paper.posterior_settings(), seed=2023)
    means = [p.mean for p in study.populations]
    published = [0.06, 0.14, 0.48, 0.47, 0.80, 0.99]
    # Monte-Carlo error of a B = N = 100 bagged mean is about 0.01-0.02 (METHOD.md section 5).
    np.testing.assert_allclose(means, published, atol=0.05)
    decisions = {p.name: p.killed for p in study.populations}
    assert decisions["3.1"] is False and decisions["30.93"] is True


def test_same_seed_same_study_any_jobs(mnist_delete):
    healthy, mutants = mnist_delete
    one = bagged_posteriors(healthy, mutants[:2], seed=9, jobs=1).to_dict()
    two = bagged_posteriors(healthy, mutants[:2], seed=9, jobs=2).to_dict()
    assert one == two


def test_moment_fit_matches_the_mixture_moments_numerically():
    counts = np.array([3, 8, 15, 22, 40, 41, 60])
    a, b = fit_moments(counts, 100)
    x = np.linspace(0, 1, 200_001)
    density = mixture_pdf(counts, 100, x)
    mean = integrate.trapezoid(x * density, x)
    var = integrate.trapezoid((x - mean) ** 2 * density, x)
    assert stats.beta.mean(a, b) == pytest.approx(mean, rel=1e-6)
    assert stats.beta.var(a, b) == pytest.approx(var, rel=1e-5)


@pytest.mark.parametrize("a, b", [(3.0, 9.0), (40.0, 2.5), (1.0, 30.0), (50.0, 1.0)])
def test_hdi_holds_the_mass_and_is_narrowest(a, b):
    low, high = credible_interval(a, b, "hdi")
    assert stats.beta.cdf(high, a, b) - stats.beta.cdf(low, a, b) == pytest.approx(0.95, abs=1e-6)
    tail_low, tail_high = credible_interval(a, b, "equal-tailed")
    assert high - low <= tail_high - tail_low + 1e-9


def test_normal_interval_is_the_papers_clipped_form():
    low, high = credible_interval(1.5, 40, "normal")
    assert low == 0.0
    assert high == pytest.approx(stats.beta.mean(1.5, 40) + 1.96 * stats.beta.std(1.5, 40),
                                 rel=1e-3)


@pytest.mark.parametrize("p, q", [((2.0, 5.0), (3.0, 4.0)), ((1.0, 101.0), (12.0, 80.0)),
                                  ((30.5, 70.5), (31.0, 70.0))])
def test_hellinger_matches_numerical_integration(p, q):
    affinity, _ = integrate.quad(
        lambda t: np.sqrt(stats.beta.pdf(t, *p) * stats.beta.pdf(t, *q)), 0, 1, limit=400)
    assert hellinger(*p, *q) == pytest.approx(np.sqrt(max(1 - affinity, 0)), abs=1e-6)


def test_hellinger_does_not_underflow_for_extreme_betas():
    # The raw Beta function underflows here; the log-space form does not.
    assert hellinger(1, 101, 101, 1) == pytest.approx(1.0)
    assert hellinger(5000, 2, 5000, 2) == 0.0


@pytest.mark.parametrize("p, q", [((5.0, 3.0), (2.0, 6.0)), ((20.5, 80.2), (18.0, 82.0)),
                                  ((101.0, 1.0), (1.0, 101.0))])
def test_probability_greater_matches_monte_carlo(p, q):
    rng = np.random.default_rng(0)
    draws = rng.beta(*p, 400_000) > rng.beta(*q, 400_000)
    assert prob_greater(*p, *q) == pytest.approx(draws.mean(), abs=4e-3)


def test_a_mutants_numbers_do_not_depend_on_the_other_mutants(mnist_delete):
    healthy, mutants = mnist_delete
    together = bagged_posteriors(healthy, mutants[:3], seed=5).populations[3]
    alone = bagged_posteriors(healthy, [mutants[2]], seed=5).populations[1]
    assert together.name == alone.name == "12.38"
    np.testing.assert_array_equal(together.kill_counts, alone.kill_counts)


def test_warns_when_the_sample_is_most_of_the_population():
    from probmut.posterior import SmallPopulationWarning

    rng = np.random.default_rng(0)
    small = rng.normal(0.9, 0.01, 30).clip(0, 1)
    with pytest.warns(SmallPopulationWarning, match="30 instances for samples of k = 20"):
        bagged_posteriors(small, [small], PosteriorSettings(bootstraps=5), seed=1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bagged_posteriors(small, [small], PosteriorSettings(bootstraps=5, sample=10), seed=1)
