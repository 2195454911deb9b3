"""What a run keeps of each finished instance (probmut.train.finished): records written
from an instance's result and read back, the models' documented paths. The record
format itself: tests/io/test_workdir.py."""

from pathlib import Path

import numpy as np

from probmut.io.checked import write_checked
from probmut.io.workdir import record_key, record_path
from probmut.train.finished import load_record, model_path, save_record
from probmut.train.flags import DIFFERENT, SAME_TEST_PREDICTIONS
from probmut.train.work import InstanceResult

from .commands import REPO


def test_instance_records_keep_the_match_and_old_records_are_never_equivalent(tmp_path):
    """A derived instance's match survives its record; a record from before the training
    inputs were compared ("equivalent": the test predictions matched) reads as a match on
    the test predictions only, never as the same model."""
    correct = np.array([True, False, True])
    save_record(tmp_path, InstanceResult("wf", 0, 5, 2 / 3, correct, 0.1,
                                         match=SAME_TEST_PREDICTIONS))
    assert load_record(tmp_path, "wf", 0)[2] == SAME_TEST_PREDICTIONS
    for old, read in ((True, SAME_TEST_PREDICTIONS), (False, DIFFERENT)):
        write_checked(record_path(tmp_path, "old", 0), record_key("old", 0),
                      accuracy=np.float64(2 / 3), seed=np.int64(5), seconds=np.float64(0.1),
                      correct=np.packbits(correct), n_inputs=np.int64(3),
                      equivalent=np.bool_(old))
        assert load_record(tmp_path, "old", 0)[2] == read


def test_the_documented_model_files_are_named_as_they_are_written():
    """docs/training.md named them models/{population}/{id}.keras; they are zero-padded."""
    written = model_path(Path("runs/digits"), "healthy", 0).as_posix()
    assert written == "runs/digits/models/healthy/00000.keras"
    documented = (REPO / "docs" / "training.md").read_text()
    assert "runs/digits/models/{population}/00000.keras" in documented
    assert f"`{written.removeprefix('runs/digits/')}`" in documented
