"""A run's working files (.work): settings, instance records and kept weights written
and read back exactly; damaged records and weights read as missing with a warning (the
instance is trained again), never as wrong numbers; damaged settings one clear error."""

import math
import shutil

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.io.checked import write_checked
from probmut.io.records import InstanceRecord
from probmut.io.workdir import (
    DamagedRecordWarning,
    finished_ids,
    read_record,
    read_settings,
    read_weights,
    record_key,
    record_path,
    settings_path,
    write_record,
    write_settings,
    write_weights,
)

CORRECT = np.array([True, False, True, True, False, False, True, False, True])  # 9: 2 bytes


@pytest.mark.parametrize("record, correct, match", [
    (InstanceRecord(3, 5 / 9, seed=11, seconds=2.25, loss_history=(2.3, 0.4), initial_loss=2.5,
                    constant=False), CORRECT, None),
    (InstanceRecord(4, 5 / 9, seed=12, seconds=0.5, constant=True), CORRECT, "weights"),
    (InstanceRecord(5, 1 / 9, seed=13, status="diverged", loss_history=(2.3, math.inf),
                    initial_loss=2.3), ~CORRECT | (np.arange(9) > 0), None),
    (InstanceRecord(6, math.nan, seed=14, status="crashed", error="ValueError: bad"), None, None),
    (InstanceRecord(7, math.nan, seed=15, status="timed out", seconds=60.0), None, None),
])
def test_a_record_reads_back_as_written(tmp_path, record, correct, match):
    write_record(tmp_path, "pop", record, correct, match)
    stored = read_record(tmp_path, "pop", record.instance)
    assert repr(stored.record) == repr(record)  # every field, NaN for NaN
    expected = np.zeros(0, bool) if correct is None else correct
    assert stored.correct.dtype == bool and stored.correct.tolist() == expected.tolist()
    assert stored.match == match
    assert finished_ids(tmp_path, "pop") == [record.instance]


def test_missing_records_and_weights_read_as_none(tmp_path):
    assert read_record(tmp_path, "pop", 0) is None and read_weights(tmp_path, 0) is None
    assert finished_ids(tmp_path, "pop") == []


def test_weights_read_back_in_order(tmp_path):
    weights = [np.arange(6.0).reshape(2, 3), np.array([0.5]), np.zeros((0,))] + \
        [np.full(2, k) for k in range(10)]  # more than 10: arr_10 after arr_9
    write_weights(tmp_path, 2, weights)
    back = read_weights(tmp_path, 2)
    assert len(back) == len(weights)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(back, weights,
                                                                              strict=True))


def test_a_record_of_probmut_0_1_is_trained_again(tmp_path):
    """0.1 recorded no symptoms (and "equivalent" where 0.2 records the match): such a
    record is not guessed at but read as missing, with the fields it lacks said."""
    write_checked(record_path(tmp_path, "old", 0), record_key("old", 0),
                  accuracy=np.float64(2 / 3), seed=np.int64(5), seconds=np.float64(0.1),
                  correct=np.packbits(CORRECT[:3]), n_inputs=np.int64(3),
                  equivalent=np.bool_(True))
    with pytest.warns(DamagedRecordWarning, match="damaged record .no status, error, "
                                                  "loss_history, initial_loss, constant."):
        assert read_record(tmp_path, "old", 0) is None


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("damage", ["truncated", "other instance's record", "bad status",
                                    "bits not fitting", "accuracy of a crash"])
def test_a_damaged_record_reads_as_missing_with_a_warning(tmp_path, damage):
    path = record_path(tmp_path, "pop", 1)
    if damage == "truncated":
        write_record(tmp_path, "pop", InstanceRecord(1, 5 / 9, seed=1), CORRECT)
        _truncate(path)
    elif damage == "other instance's record":  # renamed: its checksum is bound to its key
        write_record(tmp_path, "pop", InstanceRecord(0, 5 / 9, seed=1), CORRECT)
        shutil.move(record_path(tmp_path, "pop", 0), path)
    else:
        fields = dict(accuracy=np.float64(5 / 9), seed=np.int64(1), seconds=np.float64(1),
                      correct=np.packbits(CORRECT), n_inputs=np.int64(9),
                      status=np.array("ok"), error=np.array(""), loss_history=np.zeros(0),
                      initial_loss=np.float64(2.3), constant=np.int8(0))
        fields |= {"bad status": {"status": np.array("exploded")},
                   "bits not fitting": {"n_inputs": np.int64(30)},
                   "accuracy of a crash": {"status": np.array("crashed"),
                                           "correct": np.packbits(CORRECT[:0])}}[damage]
        write_checked(path, record_key("pop", 1), **fields)
    says = {"bad status": "unknown status", "bits not fitting": "outcome bits do not fit",
            "accuracy of a crash": "accuracy 0.5555"}.get(damage, "")
    with pytest.warns(DamagedRecordWarning,
                      match=f"00001.npz: damaged record .{says}.*trained again"):
        assert read_record(tmp_path, "pop", 1) is None


def test_damaged_weights_read_as_missing_with_a_warning(tmp_path):
    write_weights(tmp_path, 0, [np.arange(100.0)])
    _truncate(tmp_path / ".work" / "weights" / "healthy" / "00000.npz")
    with pytest.warns(DamagedRecordWarning, match="damaged weights .*trained again"):
        assert read_weights(tmp_path, 0) is None


def test_settings_read_back_as_written(tmp_path):
    settings = {"dataset": "digits", "architecture": "digits_cnn", "seed": 42, "stack": 1,
                "config": {"epochs": 2}, "data": {"fingerprint": "ab12", "train": 1211}}
    assert read_settings(tmp_path) is None
    write_settings(tmp_path, settings)
    assert read_settings(tmp_path) == settings
    assert settings_path(tmp_path) == tmp_path / ".work" / "settings.json"


@pytest.mark.parametrize("settings, lacks", [
    ({"dataset": "digits", "model": "digits_cnn", "seed": 42}, "architecture, data, stack"),
    ({"architecture": "digits_cnn", "data": {}}, "stack")])
def test_a_run_of_probmut_0_1_is_one_clear_error(tmp_path, settings, lacks):
    """0.1 called the architecture "model" and ran without --stack or a record of the
    data: 0.2 does not resume such a run, and says so instead of guessing."""
    write_settings(tmp_path, settings)
    with pytest.raises(ProbmutError, match=f"a run started by probmut 0.1 .its settings have "
                                           f"no {lacks}.; probmut 0.2 does not resume it"):
        read_settings(tmp_path)


@pytest.mark.parametrize("text, says", [("{not json", "cannot be read"),
                                        ("[1, 2]", "are not a JSON object")])
def test_damaged_settings_are_one_clear_error(tmp_path, text, says):
    settings_path(tmp_path).parent.mkdir()
    settings_path(tmp_path).write_text(text)
    with pytest.raises(ProbmutError, match=f"settings.json: the run's settings {says}") as error:
        read_settings(tmp_path)
    assert "\n" not in str(error.value)
