"""Symptoms, saved models, evaluate and the magnitude search on real digits runs
(TensorFlow; one epoch and three instances per population to stay CPU-cheap)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from probmut.io.outcomes import load_outcome_records, load_outcomes
from probmut.io.populations import read_instances

from ..conftest import CLI

pytestmark = pytest.mark.train
FAST = ["--dataset", "digits", "--architecture", "digits_cnn", "--epochs", "1", "--instances", "3",
        "--quiet"]
# A learning rate that makes the loss explode, and a benign mutation. (Mutations that
# cannot train are refused before training by probmut.train.legality; crashes are
# tested below with a backend whose calls fail, as a lost worker's do.)
DIVERGE, BENIGN = "change_learning_rate:1000", "delete_training_data:10"


@pytest.fixture(scope="module")
def symptoms_run(tmp_path_factory):
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("runs") / "digits"
    # default --stack auto: the three instances of a population train as one stack
    result = CLI.run("train", *FAST, "--save-models", "--mutation", DIVERGE,
                     "--mutation", BENIGN, "--mutation", "neurons_freezing:0.5",
                     "--out", out)
    return out, result


@pytest.mark.slow
def test_symptoms_classifies_divergence_and_a_benign_mutation(symptoms_run, cli):
    out, result = symptoms_run
    assert "3 instances diverged" in result.err
    document = json.loads(cli.run("symptoms", out, "--json", "--no-plot").out)
    symptoms = {p["name"]: p for p in document["results"]}
    assert symptoms["change_learning_rate_1000"]["symptom"] == "nan"
    assert symptoms["change_learning_rate_1000"]["constant"] == 3  # one-class predictors
    assert symptoms["delete_training_data_10"]["symptom"] in (
        "insignificant accuracy change", "significant accuracy change")
    # a stack's members share its time: no per-instance seconds, so no time comparison
    assert symptoms["delete_training_data_10"]["time_change"] is None
    records = read_instances(out / "healthy.csv")
    assert all(r.status == "ok" and math.isnan(r.seconds) and len(r.loss_history) == 1
               and r.initial_loss > r.final_loss for r in records)
    stored = load_outcome_records(out / "change_learning_rate_1000.outcomes.npz")
    assert [r.status for r in stored] == ["diverged"] * 3
    # the kill analyses refuse the diverged population instead of counting it
    refused = cli("kill", out / "healthy.csv", out / "change_learning_rate_1000.csv")
    assert refused.code == 2 and "every instance failed" in refused.err


@pytest.mark.slow
def test_evaluate_reproduces_the_accuracies_and_outcomes_train_wrote(symptoms_run, tmp_path, cli):
    out, _ = symptoms_run
    # the run's saved models (healthy, model-level mutant saved after mutation, diverged)
    # scored again, grouped into populations with a manifest
    manifest = tmp_path / "rescored" / "manifest.toml"
    doc = json.loads(cli.run("evaluate", out / "models", "--dataset", "digits", "--write-manifest",
                             manifest, "--json", "--quiet").out)
    populations = ["healthy", "neurons_freezing_0.5", "change_learning_rate_1000",
                   "delete_training_data_10"]
    assert sorted(Path(p["file"]).stem for p in doc["results"]) == sorted(populations)
    for population in populations:
        trained = {r.instance: r.accuracy for r in read_instances(out / f"{population}.csv")}
        scored = read_instances(manifest.parent / f"{population}.csv")
        assert {r.instance: r.accuracy for r in scored} == trained  # exactly
        ids, correct, labels = load_outcomes(out / f"{population}.outcomes.npz", keep_failed=True)
        ids2, correct2, labels2 = load_outcomes(manifest.parent / f"{population}.outcomes.npz",
                                                keep_failed=True)
        assert np.array_equal(ids, ids2) and np.array_equal(correct, correct2)
        assert np.array_equal(labels, labels2)
    # the saved diverged models have finite weights: evaluate sees one-class predictors
    rescored = read_instances(manifest.parent / "change_learning_rate_1000.csv")
    assert all(r.constant for r in rescored)
    kill = json.loads(cli.run("kill", "--manifest", manifest, "--model", "rescored",
                              "--mutation", "neurons_freezing", "--json").out)
    assert kill["n_healthy"] == kill["n_mutant"] == 3


class _LostMutantWorkers:
    """A backend that runs healthy calls and fails every other call, as a lost worker
    process does (:class:`probmut.train.backends.WorkerDied`)."""

    def __init__(self, backend):
        self.backend = backend

    def map_unordered(self, fn, calls):
        from probmut.train.backends import WorkerDied

        calls = list(calls)
        healthy = [i for i, call in enumerate(calls) if call[0][0].population == "healthy"]
        for index, outcome in self.backend.map_unordered(fn, [calls[i] for i in healthy]):
            yield healthy[index], outcome
        for index in sorted(set(range(len(calls))) - set(healthy)):
            yield index, WorkerDied("the worker process died (exit code -9)")


@pytest.mark.slow
def test_a_crashed_stack_records_each_member_once_and_is_retried_on_request(tmp_path, cli):
    pytest.importorskip("tensorflow")
    from probmut.train.backends import Serial
    from probmut.train.datasets import load_dataset
    from probmut.train.legality import prepare
    from probmut.train.models import MODELS
    from probmut.train.operators import parse_mutations
    from probmut.train.run import run_populations
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import RunSettings

    configure_tensorflow(1)
    data, spec = load_dataset("digits"), MODELS["digits_cnn"]
    config = spec.config.replace(epochs=1)
    settings = RunSettings("digits", "digits_cnn", config, seed=42, stack=3)
    mutations = prepare(parse_mutations(BENIGN), spec, data, config)
    with Serial(1, {"dataset": data}) as serial:
        report = run_populations(settings, mutations, 3, tmp_path, _LostMutantWorkers(serial),
                                 data, name="digits", progress=False)
        assert len(report.failures) == 3 and "crashed" in report.failures[0]
        stored = load_outcome_records(tmp_path / "delete_training_data_10.outcomes.npz")
        assert [r.status for r in stored] == ["crashed"] * 3  # each member of the stack
        assert "exit code -9" in stored[0].error
        document = json.loads(cli.run("symptoms", tmp_path, "--json", "--no-plot").out)
        assert document["results"][0]["symptom"] == "crash"
        healthy = read_instances(tmp_path / "healthy.csv")
        assert all(r.status == "ok" and len(r.loss_history) == 1 for r in healthy)
        record = tmp_path / ".work" / "delete_training_data_10" / "00000.npz"
        before = record.stat().st_mtime_ns
        again = run_populations(settings, mutations, 3, tmp_path, serial, data, name="digits",
                                progress=False)
        assert again.trained == 0 and record.stat().st_mtime_ns == before  # recorded once
        retried = run_populations(settings, mutations, 3, tmp_path, serial, data,
                                  name="digits", progress=False, retry_failed=True)
    assert retried.trained == 3 and not retried.failures
    assert [r.status for r in read_instances(tmp_path / "delete_training_data_10.csv")] == \
        ["ok"] * 3


@pytest.mark.slow
def test_search_brackets_the_killable_magnitude_within_the_bound(symptoms_run, cli):
    out, _ = symptoms_run
    # DeepCrime's bound for the operator: 99 (at 100 no training data is left, refused)
    text = cli.run("train", *FAST, "--search", "delete_training_data:0,99", "--resolution",
                   "50", "--decision", "deepcrime", "--out", out).out
    assert "trained 3 magnitudes (at most 3 = " in text  # ceil(log2(99 / 50)) + 2
    lines = text.splitlines()
    decided = [line.split()[:2] for line in lines[2:5]]
    assert [value for value, _ in decided] == ["99", "0", "49.5"]
    assert all(trained == "yes" for _, trained in decided)
    assert any(line.startswith(("bracket: not killed at", "killed at 0")) for line in lines)

    # searched again from Python (in this process): every magnitude is on disk, nothing
    # is retrained
    from probmut.train import train_populations
    from probmut.train.options import ExecutionOptions, Search, TrainingOptions

    again = train_populations(out, mode=Search(magnitudes="delete_training_data:0,99",
                                               resolution=50, instances=3,
                                               decision="deepcrime"),
                              training=TrainingOptions(epochs=1),
                              execution=ExecutionOptions(progress=False))
    assert again.trained == again.search.trained == 0
    assert [s.value for s in again.search.steps] == [99, 0, 49.5]
    assert str(again.search).splitlines()[-2] in lines
    assert again.to_dict()["search"]["killable_magnitude"] == again.search.bracket[1]
    # a range whose strong end leaves no training data is refused before training
    refused = cli("train", *FAST, "--search", "delete_training_data:0,100",
                      "--out", out)
    assert refused.code == 2 and refused.err.strip().splitlines()[-1] == (
        "probmut train: error: delete_training_data:100: the mutated training set holds no "
        "samples (magnitude 100 of the search delete_training_data:0,100: narrow its range) "
        "(--search)")


def test_an_instance_past_its_timeout_stops_and_is_recorded_as_timed_out():
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.instance import train_instance
    from probmut.train.models import MODELS
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import Assignment, RunSettings

    configure_tensorflow(1)
    settings = RunSettings("digits", "digits_cnn", MODELS["digits_cnn"].config)
    result = train_instance(Assignment(settings, "change_epochs_100000", 0, "change_epochs",
                                 {"value": 100000}, timeout=3.0), dataset=load_dataset("digits"))
    assert result.status == "timed out" and result.correct is None
    assert math.isnan(result.accuracy) and 3.0 <= result.seconds < 60
    assert result.loss_history and result.initial_loss > 0  # what it did before it stopped


@pytest.mark.slow
def test_coverage_on_the_saved_healthy_models_against_the_runs_mutants(symptoms_run, tmp_path, cli):
    out, _ = symptoms_run
    figure = tmp_path / "coverage.png"
    result = cli.run("coverage", out, "--against", out, "--neurons", "2,3", "--subsets", 20,
                     "--sanity", 5, "--json", "--plot", figure, "--quiet")
    doc = json.loads(result.out)
    assert doc["layer"].startswith("dense") and doc["neurons"] == 2 and doc["test_inputs"] == 450
    assert len(doc["idc"]["per_instance"]) == 3 and 0 < doc["idc"]["mean"] <= 1
    assert set(doc["idc_by_neurons"]) == {"2", "3"}
    for baseline in ("nc", "kmnc", "tknc"):
        assert 0 < doc[baseline]["mean"] <= 1
    correlation = doc["correlation"]
    assert correlation["subsets"] == 20 and correlation["subset_size"] == 45
    assert {"tau", "p_value", "ci_low", "ci_high"} <= set(correlation)
    assert doc["sanity"]["draws"] == 5 and len(doc["sanity"]["per_instance"]) == 3
    # the crashed and diverged populations cannot be killed on any subset: left out
    assert "every instance failed; left out" in result.err
    assert figure.read_bytes()[:4] == b"\x89PNG"
