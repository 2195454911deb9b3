"""The kill curve (probmut.campaign.curve): the monotone fit against SciPy's isotonic
regression, the smallest killed magnitude of the bundled populations, and its interval,
which holds wherever between two tested magnitudes the curve crosses."""

import math

import numpy as np
from scipy import optimize

from probmut.bagging import PosteriorSettings, bagged_posteriors, summarize
from probmut.campaign import first_killed, isotonic, kill_curve, magnitude_values

# --- the monotone fit -------------------------------------------------------------------

def test_isotonic_regression_agrees_with_scipy():
    rng = np.random.default_rng(0)
    y, w = rng.random((200, 7)), rng.random((200, 7)) + 0.1
    ours = isotonic(y, w)
    for row in range(200):
        reference = optimize.isotonic_regression(y[row], weights=w[row]).x
        assert np.allclose(ours[row], reference, atol=1e-12)


def test_magnitudes_are_ordered_by_the_part_that_varies():
    assert magnitude_values(["0.05_2@3", "0.05_0.5@3"])[0].tolist() == [2.0, 0.5]
    assert magnitude_values(["1_2", "2_3"])[0] is None           # two parts vary
    assert magnitude_values(["10@3", "10@4"])[0] is None        # other targets


def _posteriors(counts_by_magnitude, bootstraps=40):
    settings = PosteriorSettings(bootstraps=bootstraps)
    return {m: summarize(m, np.full(bootstraps, c) if np.isscalar(c) else np.asarray(c),
                         settings) for m, c in counts_by_magnitude.items()}


def test_where_the_fit_of_each_draw_first_reaches_one_half_is_scipys():
    """first_killed (two running minima, no fit) against SciPy's isotonic regression of
    each row, with values on a grid of quarters (ties at exactly 1/2) and without."""
    rng = np.random.default_rng(1)
    for size in (2, 3, 5, 8):
        for rows in (rng.random((300, size)), np.round(rng.random((300, size)) * 4) / 4):
            fits = np.array([optimize.isotonic_regression(row).x for row in rows])
            reached = fits >= 0.5 - 1e-12
            expected = np.where(reached.any(axis=1), reached.argmax(axis=1), size)
            assert first_killed(rows).tolist() == expected.tolist()


def _gap_of(x, fit):
    """The tested magnitudes around the crossing of an increasing fit (SciPy's)."""
    upper = int(np.argmax(fit >= 0.5))
    return x[upper - 1], x[upper]


def test_a_decreasing_curve_gives_the_largest_killed_magnitude():
    posts = _posteriors({"1": 95, "2": 70, "3": 30, "4": 10})
    curve = kill_curve("op", posts, seed=0)
    means = np.array([p.mean for p in posts.values()])
    weights = 1 / np.array([p.var for p in posts.values()])
    fit = optimize.isotonic_regression(means, weights=weights, increasing=False).x
    assert curve.direction == "decreasing"
    assert np.allclose(curve.fitted, fit)
    assert fit[1] >= 0.5 > fit[2] and curve.gap == (2.0, 3.0)     # killed at 2, not at 3
    assert curve.threshold_low <= 2.0 and curve.threshold_high >= 3.0
    assert "largest killed magnitude: between 2 and 3" in curve.describe_threshold()


def test_thresholds_beyond_the_tested_magnitudes_are_said_so():
    assert first_killed([[0.6, 0.9], [0.1, 0.2]]).tolist() == [0, 2]
    every = kill_curve("op", _posteriors({"1": 98, "2": 99}), seed=0)
    assert every.gap == (-math.inf, 1.0) and every.p_every > 0.95
    assert every.to_dict()["threshold"]["gap_low"] == "below"
    assert "magnitude: below 1, 95% interval [below 1, " in every.describe_threshold()
    categories = kill_curve("op", _posteriors({"elu": 90, "tanh": 10}), seed=0)
    assert categories.fitted is None and "categorical" in categories.describe_threshold()


def test_the_interval_holds_wherever_between_tested_magnitudes_the_curve_crosses():
    """A steep true curve tested at 1, 2, 3, 4 and 5, crossing 1/2 at 2.3: the kill
    probability is 0.02 at 2 and 0.99 at 3, nothing in between is known. The interval is
    not the narrow one around the straight line between them (2.49), which would miss
    2.3: it spans the whole gap [2, 3] (issue 56: lenet's weights_fuzzing read "0.3013
    [0.2952, 0.3112]" with nothing trained between 0.1 and 0.5)."""
    rng = np.random.default_rng(3)
    truth = {"1": 0.001, "2": 0.02, "3": 0.99, "4": 0.999, "5": 0.999}
    curve = kill_curve("op", _posteriors({m: rng.binomial(100, p, 100)
                                          for m, p in truth.items()}, bootstraps=100), seed=4)
    assert curve.gap == (2.0, 3.0) and curve.describe_gap() == "between 2 and 3"
    assert curve.threshold_low <= 2.0 and curve.threshold_high >= 3.0


def test_the_smallest_killed_magnitude_of_mnist_delete_training_data(mnist_delete):
    """The bundled populations: the fit crosses 1/2 between 12.38 and 18.57, where an
    independent computation (SciPy's isotonic regression) puts it; the interval holds
    that whole gap."""
    healthy, mutants = mnist_delete
    study = bagged_posteriors(healthy, mutants, seed=42)
    posts = {p.name: p for p in study.populations[1:]}
    curve = kill_curve("delete_training_data", posts, seed=42)
    means = np.array([p.mean for p in posts.values()])
    fit = optimize.isotonic_regression(means, weights=[1 / p.var for p in posts.values()]).x
    x = np.array([3.1, 9.29, 12.38, 18.57, 30.93])
    assert curve.gap == _gap_of(x, fit) == (12.38, 18.57)
    assert curve.threshold_low <= 12.38 and curve.threshold_high >= 18.57


def test_lenets_weights_fuzzing_is_known_only_between_0_1_and_0_5(manifest):
    """The issue's case: nothing was trained between 0.05_0.1 (kill probability about
    0.01) and 0.05_0.5 (0.98), so the gap and the interval span it."""
    from probmut.io.populations import read_population
    from probmut.population import pair

    mutation = manifest.mutation("lenet", "weights_fuzzing")
    healthy = read_population(mutation.healthy)
    posts = {}
    for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
        h, m = pair(healthy, read_population(path, name=magnitude))
        posts[magnitude] = bagged_posteriors(h, [m], paired=True, seed=42).populations[1]
    curve = kill_curve("weights_fuzzing", posts, seed=42)
    assert posts["0.05_0.1"].mean < 0.1 and posts["0.05_0.5"].mean > 0.9
    assert curve.gap == (0.1, 0.5)
    assert curve.threshold_low <= 0.1 and curve.threshold_high >= 0.5
    assert curve.describe_gap() == "between 0.05_0.1 and 0.05_0.5"
