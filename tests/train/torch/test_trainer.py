"""The torch trainer behind the trainer seam's protocol: a whole run through probmut's
run loop (records, populations, manifest, a resume), from Python."""

import numpy as np
import pytest


@pytest.fixture
def torch_run(tmp_path, digits):
    """``train_populations`` with the torch trainer (``framework="torch"``), in this
    process (one job)."""
    from probmut.train import trainer as entry
    from probmut.train.options import ExecutionOptions, Instances, TrainingOptions

    def run(*mutations, stack=1):
        return entry.train_populations(
            tmp_path / "run", list(mutations), mode=Instances(count=3), architecture="mlp",
            framework="torch", training=TrainingOptions(epochs=1),
            execution=ExecutionOptions(stack=stack, progress=False), save_models=True)
    return run


@pytest.mark.filterwarnings("ignore:3 instances per population")
def test_a_run_trains_populations_through_the_seam(torch_run, tmp_path):
    """A stacked healthy population, a data mutant and a model-level mutant derived from
    the kept healthy weights; each instance's model saved as ``.pt``; a rerun resumes
    (nothing trained again) with the same files."""
    report = torch_run("delete_training_data:20", "neurons_freezing:0.5", stack=3)
    assert report.trained == 9 and not report.failures, report.failures
    out = tmp_path / "run"
    healthy = np.loadtxt(out / "healthy.csv", delimiter=",", skiprows=1, usecols=1)
    assert healthy.shape == (3,) and np.all(healthy > 0.3)
    assert sorted(p.name for p in (out / "models" / "neurons_freezing_0.5").iterdir()) == [
        "00000.pt", "00001.pt", "00002.pt"]
    assert "neurons_freezing" in (out / "manifest.toml").read_text()
    before = (out / "healthy.csv").read_bytes()
    again = torch_run("delete_training_data:20", "neurons_freezing:0.5", stack=3)
    assert again.trained == 0 and (out / "healthy.csv").read_bytes() == before
