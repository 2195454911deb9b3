"""The Beta maths of the bagged posterior (fits, intervals, Hellinger distance, the
similarity ratio, P(X > Y)) against SciPy, quadrature and Monte Carlo."""

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from probmut.bagging import PosteriorSettings, study_from_kill_counts, summarize
from probmut.beta import (
    _LOG_BETA_ERROR,
    Z95,
    credible_interval,
    fit_moments,
    hellinger,
    mixture_pdf,
    prob_greater,
    ratio_of,
    ratios_of,
)


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
    # The paper's 1.96, as in the MCE intervals (one constant for both).
    assert high == stats.beta.mean(1.5, 40) + Z95 * stats.beta.std(1.5, 40)
    assert Z95 == 1.96
    low, high = credible_interval(30, 70, "normal", mass=0.9)
    assert high - low == pytest.approx(2 * stats.norm.ppf(0.95) * stats.beta.std(30, 70),
                                       rel=1e-12)


def test_mce_intervals_use_the_same_constant():
    from probmut.mce import mce_from_kill_counts

    rng = np.random.default_rng(0)
    result = mce_from_kill_counts(rng.binomial(100, 0.3, (20, 50)))
    assert result.mean_interval[1] - result.mean == pytest.approx(Z95 * result.mean_se,
                                                                  rel=1e-12)


@pytest.mark.parametrize("a, b", [(0.5, 0.3), (0.3, 0.5), (0.5, 0.5), (0.9, 0.95),
                                  (0.2, 0.9)])
def test_hdi_of_a_u_shaped_beta_is_the_shortest_single_interval(a, b):
    low, high = credible_interval(a, b, "hdi")
    assert stats.beta.cdf(high, a, b) - stats.beta.cdf(low, a, b) == pytest.approx(0.95,
                                                                                  abs=1e-9)
    assert low == 0.0 or high == 1.0
    # No interval [Q(q), Q(q + 0.95)] is shorter (brute force over q).
    q = np.linspace(0, 0.05, 20001)
    widths = stats.beta.ppf(q + 0.95, a, b) - stats.beta.ppf(q, a, b)
    assert high - low <= widths.min() + 1e-12


def _closed_form_greater(a1, b1, a2, b2):
    """P(X > Y) for integer a2, b2: cdf_Y(t) = P(Binomial(n, t) >= a2), n = a2 + b2 - 1, so
    P(X > Y) = sum_j C(n, j) B(a1 + j, b1 + n - j) / B(a1, b1) over j = a2..n."""
    n = a2 + b2 - 1
    return sum(math.comb(n, j) * math.exp(special.betaln(a1 + j, b1 + n - j)
                                          - special.betaln(a1, b1)) for j in range(a2, n + 1))


def test_prob_greater_matches_the_closed_form_for_shapes_below_one_too():
    # Shapes of X from 0.03 to 1000 (U- and J-shaped included), Y with integer shapes; and
    # the same pairs the other way round. The former quadrature was off by up to 4e-6
    # for shapes below 1 (and returned 1.0 for Beta(0.12, 0.17) against Beta(122, 52),
    # whose answer is 0.354).
    rng = np.random.default_rng(4)
    for _ in range(200):
        a1, b1 = 10 ** rng.uniform(-1.5, 3, 2)
        a2, b2 = (int(v) for v in rng.integers(1, 300, 2))
        exact = _closed_form_greater(a1, b1, a2, b2)
        assert prob_greater(a1, b1, a2, b2) == pytest.approx(exact, abs=1e-10)
        assert prob_greater(a2, b2, a1, b1) == pytest.approx(1 - exact, abs=1e-10)
    assert prob_greater(0.11719518739569487, 0.17165426849767382, 122, 52) == pytest.approx(
        0.3542686096217053, abs=1e-10)


def _beta_cdf(t, a, b):
    return special.betainc(a, b, t)


def test_prob_greater_matches_quadrature_with_algebraic_weights():
    # X with a smooth cdf, Y any shape from 0.05 to 10: P(X > Y) = 1 - int F_X f_Y, with
    # Y's density as QUADPACK's algebraic end-point weight (QAWS). Both shapes below 1 on
    # both sides: P(X > Y) + P(Y > X) = 1.
    rng = np.random.default_rng(6)
    for _ in range(60):
        a1, b1 = 10 ** rng.uniform(0, 2, 2)
        a2, b2 = 10 ** rng.uniform(-1.3, 1, 2)
        below, _ = integrate.quad(_beta_cdf, 0, 1, args=(a1, b1), weight="alg",
                                  wvar=(a2 - 1, b2 - 1), limit=1000, epsabs=1e-15,
                                  epsrel=1e-13)
        exact = 1 - below / math.exp(special.betaln(a2, b2))
        assert prob_greater(a1, b1, a2, b2) == pytest.approx(exact, abs=1e-10)
        c1, d1, c2, d2 = 10 ** rng.uniform(-1.3, 0, 4)
        assert prob_greater(c1, d1, c2, d2) + prob_greater(c2, d2, c1, d1) == pytest.approx(
            1.0, abs=1e-10)


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


def _log_coefficient_from_trigamma(a1, b1, a2, b2) -> float:
    """An independent computation of the log Bhattacharyya coefficient of two Betas,
    without the large log-gamma values of the log-Beta form: with f = ln B, m the mid-
    point and d half the difference of the parameters, ``L = f(m) - (f(m + d) + f(m -
    d)) / 2 = -1/2 int_0^1 (1 - t) (g''(t) + g''(-t)) dt`` (Taylor's formula with integral
    remainder) for ``g(t) = f(m + t d)``, whose second derivative is a sum of trigamma
    values: ``dx^2 psi'(x) + dy^2 psi'(y) - (dx + dy)^2 psi'(x + y)``. Gauss-Legendre
    quadrature on the smooth integrand."""
    (mx, my), (dx, dy) = ((a1 + a2) / 2, (b1 + b2) / 2), ((a1 - a2) / 2, (b1 - b2) / 2)
    nodes, weights = np.polynomial.legendre.leggauss(60)
    t, w = (nodes + 1) / 2, weights / 2

    def second(t):
        x, y = mx + t * dx, my + t * dy
        return (dx**2 * special.polygamma(1, x) + dy**2 * special.polygamma(1, y)
                - (dx + dy) ** 2 * special.polygamma(1, x + y))

    return float(-0.5 * np.sum(w * (1 - t) * (second(t) + second(-t))))


def _rounding_bound(a1, b1, a2, b2) -> float:
    size = lambda a, b: (abs(special.gammaln(a)) + abs(special.gammaln(b))  # noqa: E731
                         + abs(special.gammaln(a + b)) + 3)
    return _LOG_BETA_ERROR * (size((a1 + a2) / 2, (b1 + b2) / 2) + 0.5 * size(a1, b1)
                              + 0.5 * size(a2, b2))


def test_the_rounding_bound_of_the_hellinger_distance_holds():
    """The log-space H^2 is exact to within hellinger()'s rounding bound (its Notes): the
    log-Beta form computed as hellinger() does against the trigamma integral, for nearby
    Betas (relative differences 1e-12 to 1e-2, where the bound matters) with shapes from
    0.5 to 2e7. Observed errors reach about an eighth of the derived bound (1.5 u S): a
    bound eight times smaller would fail here."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for scale in 10.0 ** np.arange(0, 8):
        for _ in range(300):
            a2 = scale * rng.uniform(0.5, 2)
            b2 = rng.choice([1.0, rng.uniform(0.5, 5), scale * rng.uniform(0.5, 2)])
            change = 10 ** rng.uniform(-12, -2)
            a1, b1 = a2 * (1 + change * rng.normal()), b2 * (1 + change * rng.normal())
            computed = (special.betaln((a1 + a2) / 2, (b1 + b2) / 2)
                        - 0.5 * (special.betaln(a1, b1) + special.betaln(a2, b2)))
            error = abs(computed - _log_coefficient_from_trigamma(a1, b1, a2, b2))
            worst = max(worst, error / _rounding_bound(a1, b1, a2, b2))
    assert 0.05 < worst < 1, worst


@pytest.mark.parametrize("trials", [100, 1_000, 10_000, 100_000])
def test_a_posterior_equal_to_an_ideal_one_is_at_distance_zero(trials):
    """Issue 32: a mutant killed in every trial of every resample has the ideal mutant's
    posterior: its distance to it is 0 and its ratio infinite (null in JSON) at any N,
    not rounding noise (it was 3.4e7 at N = 100, 53,510 at N = 100,000); a population
    never killed is at distance 0 from the ideal sound posterior, ratio 0."""
    settings = PosteriorSettings(trials=trials)
    killed = summarize("killed", np.full(100, trials), settings)
    assert (killed.alpha, killed.beta) == pytest.approx((trials + 1, 1), rel=1e-13)
    assert killed.h_mutant == 0.0 and killed.ratio == math.inf and killed.killed
    never = summarize("never", np.zeros(100, dtype=int), settings)
    assert never.h_sound == 0.0 and never.ratio == 0.0 and not never.killed
    study = study_from_kill_counts(np.zeros(100, dtype=int), [np.full(100, trials)],
                                   ["healthy", "killed"], settings)
    assert '"ratio": null' in study.to_json()


@pytest.mark.parametrize("trials", [100, 1_000, 10_000, 100_000])
@pytest.mark.parametrize("short", [1, 10])
def test_a_nearly_ideal_posterior_keeps_a_finite_accurate_ratio(trials, short):
    """One or ten resamples of 100 with one kill short of N: the distance to the ideal
    mutant is small but far above the rounding bound, and the ratio is the one the
    trigamma integral gives, within the bound's share of H^2."""
    counts = np.full(100, trials)
    counts[:short] = trials - 1
    row = summarize("nearly", counts, PosteriorSettings(trials=trials))
    ideal = (row.alpha, row.beta, trials + 1, 1)
    squared = -math.expm1(_log_coefficient_from_trigamma(*ideal))
    tolerance = _rounding_bound(*ideal) / squared
    assert 0 < tolerance < 1e-3 and math.isfinite(row.ratio)
    assert row.h_mutant == pytest.approx(math.sqrt(squared), rel=tolerance)
    assert row.ratio == pytest.approx(row.h_sound / math.sqrt(squared), rel=tolerance)


@pytest.mark.parametrize("p, q", [((5.0, 3.0), (2.0, 6.0)), ((20.5, 80.2), (18.0, 82.0)),
                                  ((101.0, 1.0), (1.0, 101.0))])
def test_probability_greater_matches_monte_carlo(p, q):
    rng = np.random.default_rng(0)
    draws = rng.beta(*p, 400_000) > rng.beta(*q, 400_000)
    assert prob_greater(*p, *q) == pytest.approx(draws.mean(), abs=4e-3)


@pytest.mark.parametrize("counts", [[3, 8, 15, 22, 40], [90, 95, 99, 100, 97], [50] * 5])
def test_ratio_of_a_mean_and_variance_is_the_posteriors_ratio(counts):
    """The Monte-Carlo error, sample-size and recommend studies judge a posterior from its
    mean and variance (ratio_of); with the moment fit that is the posterior's own ratio."""
    row = summarize("m", np.array(counts), PosteriorSettings())
    assert ratio_of(row.mean, row.var, 100) == pytest.approx(row.ratio, rel=1e-9)


def test_many_ratios_at_once_are_the_same_numbers_bit_for_bit():
    """recommend judges thousands of simulated populations with ratios_of: the same
    numbers as ratio_of one at a time, to the last bit, from clear kills to clear
    survivors, nearly ideal posteriors and U-shaped fits included."""
    from probmut.beta import beta_mean_var

    rng = np.random.default_rng(4)
    a = np.concatenate([rng.uniform(0.01, 3, 300), rng.uniform(1, 120, 300), [101.0, 1.0]])
    b = np.concatenate([rng.uniform(0.01, 3, 300), rng.uniform(1, 120, 300), [1.0, 101.0]])
    means, variances = beta_mean_var(a, b)
    for trials in (30, 100):
        one_by_one = np.array([ratio_of(m, v, trials) for m, v in zip(means, variances,
                                                                      strict=True)])
        assert (one_by_one > 1).any() and (one_by_one < 1).any()
        assert np.array_equal(ratios_of(means, variances, trials), one_by_one)
