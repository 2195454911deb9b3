"""DeepCrime's killable-magnitude search without training: the bisection and the ranges."""

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train.search import bisect, bracket, max_trained, parse_search


@pytest.mark.parametrize("low, high, resolution", [(0, 100, 5), (0, 100, 25), (0.001, 1, 0.01),
                                                   (100, 0, 10)])
def test_bisection_brackets_the_threshold_within_the_bound(low, high, resolution):
    rng = np.random.default_rng(5)
    for threshold in rng.uniform(min(low, high), max(low, high), 40):
        strong_side = ((lambda v, t=threshold: v >= t) if high > low
                       else (lambda v, t=threshold: v <= t))
        calls = []

        def decide(value, strong_side=strong_side, calls=calls):
            calls.append(value)
            return strong_side(value), ""

        steps = bisect(low, high, resolution, decide, integer=False)
        assert len(calls) == len(set(calls)) <= max_trained(low, high, resolution)
        not_killed, killed = bracket(steps)
        assert not strong_side(not_killed) and strong_side(killed)
        assert abs(killed - not_killed) <= resolution * (1 + 1e-9)


def test_bisection_stops_at_the_ends():
    assert [s.value for s in bisect(0, 100, 5, lambda v: (False, ""), False)] == [100]
    steps = bisect(0, 100, 5, lambda v: (True, ""), False)
    assert [s.value for s in steps] == [100, 0] and bracket(steps) == (None, 0)


def test_integer_bisection_never_repeats_a_magnitude():
    steps = bisect(1, 12, 1, lambda v: (v >= 5, ""), integer=True)
    values = [s.value for s in steps]
    assert len(values) == len(set(values)) and all(v == int(v) for v in values)
    assert bracket(steps) == (4, 5)


@pytest.mark.parametrize("text, message", [
    ("nosuch:0,1", "unknown mutation operator"), ("delete_training_data:0", "LOW,HIGH"),
    ("delete_training_data:5,5", "equal"), ("delete_training_data:0,120", "between 0 and 100"),
    ("weights_fuzzing:0,1", "one number"), ("change_epochs:0.5,3", "integer"),
    # issue 44: advised to "narrow its range" once training had started
    ("change_activation_function:0,1", "change_activation_function takes a Keras activation "
                                       "name, not a number; the search bisects an operator "
                                       "whose magnitude is one number"),
    ("change_loss_function:0,1", "takes a Keras loss name, not a number"),
    ("remove_bias:0,2", "remove_bias takes a layer, not a number")])
def test_search_ranges_are_checked(text, message):
    with pytest.raises(ProbmutError, match=message):
        parse_search(text)


def test_integer_operators_are_recognised():
    assert parse_search("change_epochs:12,1") == ("change_epochs", 12.0, 1.0, True)
    assert parse_search("delete_training_data:0,100")[3] is False
