"""Manifests (probmut.io.manifest): a run's manifest read back with its files, flags,
removed populations and targets; what a run adds keeps what earlier runs wrote; unknown
names and repeated magnitudes are one clear error (a manifest's malformed tables through
the commands: tests/cli/test_bad_input.py)."""

import pytest

from probmut.errors import ProbmutError
from probmut.io.manifest import Manifest, add_to_manifest, population_target, write_manifest


def test_a_runs_manifest_reads_back_with_its_files_flags_and_targets(tmp_path):
    path = tmp_path / "manifest.toml"
    add_to_manifest(path, "digits", "healthy.csv", "a run", [
        ("delete_training_data", "10", False, []),
        ("neurons_freezing", "0.5", True, ["equivalent"], "the same weights")],
        targets={"healthy.csv": 20, "delete_training_data_10.csv": 20})
    add_to_manifest(path, "digits", "healthy.csv", "a run", [
        ("delete_training_data", "50", False, [], "", "too many crashed")],
        targets={"delete_training_data_50.csv": 40})
    manifest = Manifest.load(path)
    dtd = manifest.mutation("digits", "delete_training_data")
    assert dtd.magnitudes == ("10",) and dtd.removed == {"50": "too many crashed"}
    assert dtd.files == (tmp_path / "delete_training_data_10.csv",)
    assert dtd.healthy == tmp_path / "healthy.csv" and not dtd.paired
    nf = manifest.mutation("digits", "neurons_freezing")
    assert nf.paired and nf.flags == {"0.5": ("equivalent",)}
    assert nf.survivors == {"0.5": "the same weights"}
    assert population_target(tmp_path / "delete_training_data_50.csv") == ("digits", 40)
    assert manifest.target(tmp_path / "healthy.csv") == ("digits", 20)
    assert manifest.target(tmp_path / "other.csv") is None
    assert [m.name for m in manifest.mutations()] == ["delete_training_data", "neurons_freezing"]


def test_unknown_names_say_what_there_is(tmp_path):
    path = tmp_path / "manifest.toml"
    write_manifest(path, {"models": {"m": {"healthy": "h.csv", "mutations": {
        "x": {"paired": False, "pattern": "x_{magnitude}.csv", "magnitudes": ["1"]}}}}})
    manifest = Manifest.load(path)
    with pytest.raises(ProbmutError, match="no model 'n'; it has m"):
        manifest.healthy("n")
    with pytest.raises(ProbmutError, match="model 'm' has no mutation 'y'; it has x"):
        manifest.mutation("m", "y")
    with pytest.raises(ProbmutError, match="manifest not found"):
        Manifest.load(tmp_path / "missing.toml")


def test_a_magnitude_spelled_another_way_is_refused(tmp_path):
    path = tmp_path / "manifest.toml"
    add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "10", False)])
    with pytest.raises(ProbmutError, match="holds the magnitude '10', the same as '010'"):
        add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "010", False)])
    assert Manifest.load(path).mutation("m", "x").magnitudes == ("10",)  # unchanged


@pytest.mark.usefixtures("default_recursion_limit")
def test_arrays_nested_too_deeply_for_the_toml_reader_are_one_error(tmp_path):
    """Issue 57: 2000 nested arrays ended in tomllib's RecursionError."""
    path = tmp_path / "deep.toml"
    path.write_text('[models.m]\nhealthy = "h.csv"\nx = ' + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(ProbmutError, match=r"deep.toml: not a valid TOML manifest \(arrays "
                                           "or tables nested too deeply to read\\)"):
        Manifest.load(path)
