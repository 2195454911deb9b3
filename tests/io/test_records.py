"""Instance records (probmut.io.records): what a failed instance is, the divergence rule,
an error in one line."""

import math

import pytest

from probmut.io.records import FAILED, InstanceRecord, loss_diverged, one_line


@pytest.mark.parametrize("status, failed", [("ok", False), ("diverged", True),
                                            ("crashed", True), ("timed out", True)])
def test_failed_is_every_status_but_ok(status, failed):
    accuracy = 0.1 if status in ("ok", "diverged") else math.nan
    assert InstanceRecord(0, accuracy, status=status).failed is failed
    assert (status in FAILED) is failed


@pytest.mark.parametrize("initial, losses, diverged", [
    (2.3, [1.2, 0.5], False),
    (2.3, [1.2, 4.6], False),      # at twice the initial loss: not above it
    (2.3, [1.2, 4.61], True),
    (2.3, [1.0, math.inf], True),
    (-1.0, [-0.5], False),         # a negative initial loss: up to 0
    (-1.0, [0.1], True),
    (math.nan, [9.0], False),      # no initial loss: only a non-finite loss diverges
    (2.3, [], False),
])
def test_the_divergence_rule(initial, losses, diverged):
    assert loss_diverged(initial, losses) is diverged


def test_an_error_is_one_line_of_at_most_300_characters():
    assert one_line(KeyError()) == "KeyError"
    assert one_line(RuntimeError("first\nsecond")) == "RuntimeError: first"
    assert len(one_line(ValueError("x" * 1000))) == 300
