"""`probmut symptoms`: on a run directory, and on the paper's populations (no records)."""

import json
import warnings

from probmut.io.manifest import write_manifest
from probmut.io.populations import write_instances
from probmut.io.records import InstanceRecord

from ..conftest import RAW, failing_records, healthy_records


def test_symptoms_command_on_a_run_directory(tmp_path, cli):
    write_instances(tmp_path / "healthy.csv", healthy_records())
    write_instances(tmp_path / "change_loss_function_ctc.csv", failing_records(20, "crashed"))
    write_instances(tmp_path / "weights_fuzzing_0_1.csv",
                    [InstanceRecord(r.instance, r.accuracy) for r in healthy_records()])
    write_manifest(tmp_path / "manifest.toml", {"models": {"digits": {
        "healthy": "healthy.csv", "mutations": {
            "change_loss_function": {"paired": False,
                                     "pattern": "change_loss_function_{magnitude}.csv",
                                     "magnitudes": ["ctc"]},
            "weights_fuzzing": {"paired": True, "pattern": "weights_fuzzing_{magnitude}.csv",
                                "magnitudes": ["0_1"]}}}}})
    document = json.loads(cli.ok("symptoms", str(tmp_path), "--json", "--no-plot"))
    assert [(p["name"], p["symptom"]) for p in document["results"]] == [
        ("change_loss_function_ctc", "crash"), ("weights_fuzzing_0_1", "no observable difference")]
    cli.refused("symptoms", "--no-plot", says="run directory")


def test_symptoms_of_the_papers_populations_without_records(cli):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = cli.ok("symptoms", "--manifest", str(RAW / "manifest.toml"), "--model", "mnist_dc",
                     "--paper", "--no-plot")
    assert "delete_training_data_9.29" in text and "significant accuracy change" in text
