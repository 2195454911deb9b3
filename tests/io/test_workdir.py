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
    assert stored.match == match and stored.equivalent is None
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


def test_old_records_keep_what_they_knew(tmp_path):
    """A record from before symptoms: ok, symptoms unknown; from before the training
    inputs were compared: whether the test predictions matched."""
    write_checked(record_path(tmp_path, "old", 0), record_key("old", 0),
                  accuracy=np.float64(2 / 3), seed=np.int64(5), seconds=np.float64(0.1),
                  correct=np.packbits(CORRECT[:3]), n_inputs=np.int64(3),
                  equivalent=np.bool_(True))
    stored = read_record(tmp_path, "old", 0)
    assert stored.record.status == "ok" and stored.record.constant is None
    assert math.isnan(stored.record.initial_loss) and stored.record.loss_history == ()
    assert stored.correct.tolist() == [True, False, True]
    assert stored.match is None and stored.equivalent is True


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
                      correct=np.packbits(CORRECT), n_inputs=np.int64(9))
        fields |= {"bad status": {"status": np.array("exploded")},
                   "bits not fitting": {"n_inputs": np.int64(30)},
                   "accuracy of a crash": {"status": np.array("crashed")}}[damage]
        write_checked(path, record_key("pop", 1), **fields)
    with pytest.warns(DamagedRecordWarning, match="00001.npz: damaged record .*trained again"):
        assert read_record(tmp_path, "pop", 1) is None


def test_damaged_weights_read_as_missing_with_a_warning(tmp_path):
    write_weights(tmp_path, 0, [np.arange(100.0)])
    _truncate(tmp_path / ".work" / "weights" / "healthy" / "00000.npz")
    with pytest.warns(DamagedRecordWarning, match="damaged weights .*trained again"):
        assert read_weights(tmp_path, 0) is None


def test_settings_read_back_as_written(tmp_path):
    settings = {"dataset": "digits", "seed": 42, "stack": 1, "config": {"epochs": 2},
                "data": {"fingerprint": "ab12", "train": 1211}}
    assert read_settings(tmp_path) is None
    write_settings(tmp_path, settings)
    assert read_settings(tmp_path) == settings
    assert settings_path(tmp_path) == tmp_path / ".work" / "settings.json"


def test_the_settings_of_a_run_from_before_0_2_name_its_architecture(tmp_path):
    """Runs of 0.1 recorded the architecture as "model": read as "architecture", so that
    they resume and report their next steps."""
    write_settings(tmp_path, {"dataset": "digits", "model": "digits_cnn", "seed": 42})
    assert read_settings(tmp_path) == {"dataset": "digits", "architecture": "digits_cnn",
                                       "seed": 42}


@pytest.mark.parametrize("text, says", [("{not json", "cannot be read"),
                                        ("[1, 2]", "are not a JSON object")])
def test_damaged_settings_are_one_clear_error(tmp_path, text, says):
    settings_path(tmp_path).parent.mkdir()
    settings_path(tmp_path).write_text(text)
    with pytest.raises(ProbmutError, match=f"settings.json: the run's settings {says}") as error:
        read_settings(tmp_path)
    assert "\n" not in str(error.value)
