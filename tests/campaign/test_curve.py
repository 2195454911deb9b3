"""The kill curve (probmut.campaign.curve): the monotone fit against SciPy's isotonic
regression, the smallest killed magnitude of the bundled populations."""


import math

import numpy as np
import pytest
from scipy import optimize

from probmut.bagging import PosteriorSettings, bagged_posteriors, summarize
from probmut.campaign import (
    crossing,
    isotonic,
    kill_curve,
    magnitude_values,
)

FAST = PosteriorSettings(bootstraps=30, trials=30, sample=5)


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


def test_a_decreasing_curve_gives_the_largest_killed_magnitude():
    posts = _posteriors({"1": 95, "2": 70, "3": 30, "4": 10})
    curve = kill_curve("op", posts, seed=0)
    means = np.array([p.mean for p in posts.values()])
    weights = 1 / np.array([p.var for p in posts.values()])
    fit = optimize.isotonic_regression(means, weights=weights, increasing=False).x
    assert curve.direction == "decreasing"
    assert np.allclose(curve.fitted, fit)
    assert curve.threshold == pytest.approx(2 + (fit[1] - 0.5) / (fit[1] - fit[2]))
    assert curve.threshold_low <= curve.threshold <= curve.threshold_high
    assert "largest killed magnitude" in curve.describe_threshold()


def test_thresholds_beyond_the_tested_magnitudes_are_said_so():
    assert crossing([1.0, 2.0], [[0.6, 0.9], [0.1, 0.2]]).tolist() == [-math.inf, math.inf]
    every = kill_curve("op", _posteriors({"1": 98, "2": 99}), seed=0)
    assert every.threshold == -math.inf and every.p_every > 0.95
    assert every.to_dict()["threshold"]["estimate"] == "below"
    assert "below 1" in every.describe_threshold()
    categories = kill_curve("op", _posteriors({"elu": 90, "tanh": 10}), seed=0)
    assert categories.fitted is None and "categorical" in categories.describe_threshold()


def test_the_smallest_killed_magnitude_of_mnist_delete_training_data(mnist_delete):
    """The bundled populations: the fit crosses 1/2 between 12.38 and 18.57, where an
    independent computation (SciPy's isotonic regression, linear interpolation) puts it."""
    healthy, mutants = mnist_delete
    study = bagged_posteriors(healthy, mutants, seed=42)
    posts = {p.name: p for p in study.populations[1:]}
    curve = kill_curve("delete_training_data", posts, seed=42)
    means = np.array([p.mean for p in posts.values()])
    fit = optimize.isotonic_regression(means, weights=[1 / p.var for p in posts.values()]).x
    x = np.array([3.1, 9.29, 12.38, 18.57, 30.93])
    upper = int(np.argmax(fit >= 0.5))
    expected = x[upper - 1] + (0.5 - fit[upper - 1]) / (fit[upper] - fit[upper - 1]) * (
        x[upper] - x[upper - 1])
    assert curve.threshold == pytest.approx(expected) and 12.38 < expected < 18.57
    assert curve.threshold_low < curve.threshold < curve.threshold_high
