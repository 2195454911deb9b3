"""probmut coverage: what it refuses before any model is scored (its run on a trained
run's saved models: tests/train/test_instance.py, which trains that run once)."""

import pytest

pytestmark = pytest.mark.train


def test_coverage_needs_saved_models(tmp_path, cli):
    pytest.importorskip("tensorflow")
    (tmp_path / "manifest.toml").write_text('[models.x]\nhealthy = "healthy.csv"\n')
    cli.refused("coverage", tmp_path, "--no-plot", says="--save-models")


def test_coverage_says_a_truncated_model_file_is_damaged(tmp_path, cli):
    """Keras called a truncated .keras file "File not found" (issue 44)."""
    pytest.importorskip("tensorflow")
    (tmp_path / "manifest.toml").write_text('[models.x]\nhealthy = "healthy.csv"\n')
    models = tmp_path / "models" / "healthy"
    models.mkdir(parents=True)
    (models / "00000.keras").write_bytes(b"PK\x03\x04" + bytes(200))  # a zip cut short
    error = cli.refused("coverage", tmp_path, "--dataset", "digits", "--no-plot", "--quiet")
    assert error == (f"probmut coverage: error: {models / '00000.keras'}: cannot load the model: "
                     "not a .keras model (a .keras file is a zip archive; this one is damaged or "
                     "another kind of file)")
