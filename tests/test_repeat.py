"""The motivating experiment (probmut.repeat): pools too small for k warn as the bagged
posterior does (issue 44)."""

import warnings

import numpy as np
import pytest

from probmut.bagging import SmallPopulationWarning
from probmut.population import Population
from probmut.repeat import repeated_tests


def _population(n, seed, name):
    rng = np.random.default_rng(seed)
    return Population.from_values(rng.normal(0.9, 0.01, n), name=name)


def test_pools_of_k_are_one_test_repeated_and_say_so():
    healthy, mutant = _population(40, 0, "h"), _population(40, 1, "m")
    with pytest.warns(SmallPopulationWarning, match="pools of 20 sound and 20 unknown instances "
                                                    "for samples of k = 20: every test of a "
                                                    "repetition draws the same instances"):
        result = repeated_tests(healthy, mutant, repetitions=5, trials=20, seed=1)
    assert set(result.pass_rates) <= {0.0, 1.0}  # what the warning says
    with pytest.warns(SmallPopulationWarning, match="share most instances"):
        repeated_tests(healthy, mutant, repetitions=2, trials=5, sample=15, seed=1)


def test_pools_of_2k_or_more_do_not_warn():
    healthy, mutant = _population(80, 0, "h"), _population(80, 1, "m")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallPopulationWarning)
        repeated_tests(healthy, mutant, repetitions=2, trials=5, seed=1)
