"""Per-input outcome files (probmut.io.outcomes): bits, ids, labels and symptoms read back
as written; failed instances dropped by name unless kept; a population of failures
refused."""

import math

import numpy as np
import pytest

from probmut.io.outcomes import load_outcome_records, load_outcomes, save_outcomes
from probmut.io.records import AllFailedError, FailedInstanceWarning, InstanceRecord

CORRECT = np.array([[True, False, True, True, False, True, True, True, False],
                    [False, False, True, True, True, True, False, True, True],
                    [False] * 9])
RECORDS = [InstanceRecord(4, 6 / 9, seed=1, loss_history=(2.0, 0.5), initial_loss=2.3),
           InstanceRecord(7, 6 / 9, seed=2, status="diverged", loss_history=(2.0, math.inf),
                          initial_loss=2.3, constant=True),
           InstanceRecord(9, math.nan, seed=3, status="crashed", error="ValueError: x")]


def test_outcomes_read_back_as_written(tmp_path):
    path = tmp_path / "m.outcomes.npz"
    save_outcomes(path, [4, 7, 9], CORRECT, np.arange(9) % 3, RECORDS)
    ids, correct, labels = load_outcomes(path, keep_failed=True)
    assert ids.tolist() == [4, 7, 9] and np.array_equal(correct, CORRECT)
    assert labels.tolist() == (np.arange(9) % 3).tolist()
    back = load_outcome_records(path)
    assert [(r.instance, r.status, r.error) for r in back] == [
        (r.instance, r.status, r.error) for r in RECORDS]  # seeds are the CSV's
    assert back[1].constant is True and back[1].loss_history == (2.0, math.inf)


def test_failed_instances_are_dropped_by_name_and_all_failed_is_refused(tmp_path):
    path = tmp_path / "m.outcomes.npz"
    save_outcomes(path, [4, 7, 9], CORRECT, np.arange(9) % 3, RECORDS)
    with pytest.warns(FailedInstanceWarning, match=r"7 \(diverged\), 9 \(crashed\) dropped"):
        ids, correct, _ = load_outcomes(path)
    assert ids.tolist() == [4] and np.array_equal(correct, CORRECT[:1])
    failed = [RECORDS[2], InstanceRecord(10, math.nan, status="timed out")]
    save_outcomes(path, [9, 10], np.zeros((2, 9), bool), np.arange(9), failed)
    with pytest.raises(AllFailedError, match="every instance failed"):
        load_outcomes(path)


def test_rows_and_records_must_match_the_ids(tmp_path):
    with pytest.raises(ValueError, match="correct must be"):
        save_outcomes(tmp_path / "x.outcomes.npz", [0, 1], CORRECT, np.arange(9))
    with pytest.raises(ValueError, match="records must follow the instance ids"):
        save_outcomes(tmp_path / "x.outcomes.npz", [4, 9, 7], CORRECT, np.arange(9), RECORDS)
    assert not list(tmp_path.iterdir())  # nothing half-written
