"""What a run keeps of each finished instance (probmut.train.finished): records written
from an instance's result and read back, the models' documented paths. The record
format itself: tests/io/test_workdir.py."""

from pathlib import Path

import numpy as np

from probmut.train.finished import load_record, model_path, save_record
from probmut.train.flags import SAME_TEST_PREDICTIONS
from probmut.train.work import InstanceResult

from .commands import REPO


def test_instance_records_keep_the_match(tmp_path):
    """A derived instance's match survives its record; an instance that was not derived
    has none."""
    correct = np.array([True, False, True])
    save_record(tmp_path, InstanceResult("wf", 0, 5, 2 / 3, correct, 0.1,
                                         match=SAME_TEST_PREDICTIONS))
    assert load_record(tmp_path, "wf", 0)[2] == SAME_TEST_PREDICTIONS
    save_record(tmp_path, InstanceResult("healthy", 0, 5, 2 / 3, correct, 0.1))
    assert load_record(tmp_path, "healthy", 0)[2] is None


def test_the_documented_model_files_are_named_as_they_are_written():
    """docs/training.md named them models/{population}/{id}.keras; they are zero-padded."""
    written = model_path(Path("runs/digits"), "healthy", 0).as_posix()
    assert written == "runs/digits/models/healthy/00000.keras"
    documented = (REPO / "docs" / "training.md").read_text()
    assert "runs/digits/models/{population}/00000.keras" in documented
    assert f"`{written.removeprefix('runs/digits/')}`" in documented
