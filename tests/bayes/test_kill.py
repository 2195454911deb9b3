"""The simulated kill tests of each posterior draw (probmut.bayes.kill)."""

import numpy as np
import pytest

pytest.importorskip("pymc")
pytest.importorskip("arviz")

from probmut.bayes import BayesSettings  # noqa: E402
from probmut.bayes.kill import simulated_kill_rates  # noqa: E402
from probmut.killtest import KillCriterion  # noqa: E402

pytestmark = pytest.mark.bayes


def test_simulated_kill_rate_matches_the_test_s_level_and_power():
    # One posterior "draw" with equal groups: the share killed is the criterion's
    # false-positive rate (about 5% at alpha 0.05, fewer with the |d| >= 0.5 rule);
    # with a shift of 2 sd every test kills.
    settings = BayesSettings(trials=20000, criterion=KillCriterion())
    one = np.ones(1)
    same = [0.99 * one, 0.001 * one, np.inf * one, 0.99 * one, 0.001 * one, np.inf * one]
    rate = simulated_kill_rates(same, False, settings, np.random.SeedSequence(0))[0]
    assert 0.03 < rate < 0.065
    shifted = same[:3] + [0.988 * one, 0.001 * one, 5.0 * one]
    assert simulated_kill_rates(shifted, False, settings, np.random.SeedSequence(0))[0] > 0.99
