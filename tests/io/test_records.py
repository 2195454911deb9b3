"""Instance records (probmut.io.records): what a failed instance is, the divergence rule,
an error in one line, a record read back as written from both files that carry it (a
population's CSV and its outcomes)."""

import math

import numpy as np
import pytest

from probmut.io.outcomes import load_outcome_records, load_outcomes, save_outcomes
from probmut.io.populations import read_instances, write_instances
from probmut.io.records import (
    FAILED,
    FailedInstanceWarning,
    InstanceRecord,
    loss_diverged,
    one_line,
)


@pytest.mark.parametrize("status, failed", [("ok", False), ("diverged", True),
                                            ("crashed", True), ("timed out", True)])
def test_failed_is_every_status_but_ok(status, failed):
    accuracy = 0.1 if status in ("ok", "diverged") else math.nan
    assert InstanceRecord(0, accuracy, status=status).failed is failed
    assert (status in FAILED) is failed


@pytest.mark.parametrize("initial, losses, diverged", [
    (2.3, [1.2, 0.5], False),
    (2.3, [1.0, 0.4], False),
    (2.3, [1.2, 4.6], False),      # at twice the initial loss: not above it
    (2.3, [2.3, 4.5], False),
    (2.3, [1.2, 4.61], True),
    (2.3, [2.3, 4.7], True),
    (2.3, [5e15, 486.0], True),    # exploded, then came down: above twice at its peak
    (2.3, [1.0, math.inf], True),
    (-1.0, [-0.5], False),         # a negative initial loss: up to 0
    (-0.3, [-0.5, -0.9], False),
    (-1.0, [0.1], True),
    (-0.3, [-0.2, 0.1], True),
    (math.nan, [9.0], False),      # no initial loss: only a non-finite loss diverges
    (math.nan, [1.0], False),
    (2.3, [], False),
])
def test_the_divergence_rule(initial, losses, diverged):
    assert loss_diverged(initial, losses) is diverged


def test_an_error_is_one_line_of_at_most_300_characters():
    assert one_line(KeyError()) == "KeyError"
    assert one_line(RuntimeError("first\nsecond")) == "RuntimeError: first"
    assert len(one_line(ValueError("x" * 1000))) == 300


def test_records_round_trip_through_csv_and_outcomes(tmp_path):
    records = [InstanceRecord(0, 2 / 3, 11, seconds=1.25, loss_history=(2.5, float("nan")),
                              initial_loss=2.3, constant=True, status="diverged"),
               InstanceRecord(1, math.nan, 12, status="crashed", error="RuntimeError: boom"),
               InstanceRecord(2, 1 / 3, 13, seconds=2.0, loss_history=(0.5,), initial_loss=2.1,
                              constant=False)]
    write_instances(tmp_path / "p.csv", records)
    back = read_instances(tmp_path / "p.csv")
    assert [r.accuracy for r in back][::2] == [2 / 3, 1 / 3]  # accuracies exactly
    assert math.isnan(back[0].loss_history[1]) and back[2].loss_history == (0.5,)
    assert [r.status for r in back] == ["diverged", "crashed", "ok"]
    correct = np.array([[True, True, False], [False, False, False], [True, False, False]])
    save_outcomes(tmp_path / "p.outcomes.npz", [0, 1, 2], correct, [1, 2, 3], records)
    stored = load_outcome_records(tmp_path / "p.outcomes.npz")
    assert [(r.status, r.constant, r.error) for r in stored] == [
        ("diverged", True, ""), ("crashed", None, "RuntimeError: boom"), ("ok", False, "")]
    assert stored[0].loss_history[0] == 2.5 and math.isnan(stored[0].loss_history[1])
    with pytest.warns(FailedInstanceWarning, match=r"0 \(diverged\), 1 \(crashed\)"):
        ids, matrix, _ = load_outcomes(tmp_path / "p.outcomes.npz")
    assert ids.tolist() == [2] and matrix.tolist() == [[True, False, False]]
    assert load_outcomes(tmp_path / "p.outcomes.npz", keep_failed=True)[0].tolist() == [0, 1, 2]
