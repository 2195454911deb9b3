"""`probmut posterior`: the paper's reference table from saved kill rates, JSON and figure
from files, a paired model-level mutation, the human table."""

import numpy as np

from ..conftest import KILL_RATES, RAW


def test_posterior_from_saved_kill_rates_reproduces_the_reference_table(cli):
    doc = cli.json("posterior", "--kill-rates", KILL_RATES / "mnist_orig.npy",
                   KILL_RATES / "mnist" / "mnist_delete_training_data_list_mut.npy",
                   "--paper", "--no-plot")
    ratios = [p["ratio"] for p in doc["results"]]
    np.testing.assert_allclose(ratios, [0.756626, 0.913773, 0.999124, 0.999627, 1.047766, 281.44],
                               rtol=1e-4)
    assert [p["killed"] for p in doc["results"]] == [False, False, False, False, True, True]


def test_posterior_on_files_writes_json_and_figure(cli, tmp_path):
    figure = tmp_path / "fig.png"
    doc = cli.json("posterior", RAW / "mnist" / "results_mnist_original.csv",
                   RAW / "mnist" / "results_mnist_delete_training_data_mutated0_MP_30.93.csv",
                   "--bootstraps", "20", "--seed", "3", "--plot", figure)
    first, second = doc["results"]
    assert first["name"] == "results_mnist_original" and first["killed"] is False
    assert second["killed"] is True and second["mean"] > 0.9
    assert {"alpha", "beta", "ci_low", "ci_high", "h_sound", "h_mutant", "ratio"} <= set(second)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_posterior_paired_model_level_mutation(cli, tmp_path):
    doc = cli.json("posterior", "--model", "mnist", "--mutation", "weights_fuzzing",
                   "--magnitudes", "0.05_0.1,0.05_2", "--bootstraps", "20", "--no-plot")
    assert doc["paired"] is True
    baseline, weak, strong = doc["results"]
    assert baseline["kill_rate_mean"] == 0.0  # identical samples on both sides
    assert weak["mean"] < strong["mean"] and strong["killed"] is True


def test_human_output_is_a_table_with_the_settings(cli):
    code, out, _ = cli("posterior", "--model", "mnist", "--mutation",
                       "delete_training_data", "--magnitudes", "30.93", "--bootstraps", "10",
                       "--no-plot")
    assert code == 0
    assert "KILLED" in out and "baseline" in out and "settings: B=10 bootstraps" in out
