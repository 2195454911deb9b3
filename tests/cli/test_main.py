"""The command line: documented JSON, the paper's published numbers, bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

from probmut.cli import main

from ..conftest import RAW, interruptible

DC = RAW / "deepcrime_comp"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# METHOD.md: DeepCrime's own 20 vs 20 instances, MNIST delete_training_data.
DEEPCRIME_PUBLISHED = {"3.1": (0.907, 0.0369, False), "9.29": (0.048, 0.6242, True),
                       "12.38": (0.387, 0.2735, False), "18.57": (0.001, 1.0074, True),
                       "30.93": (0.0, 1.6321, True)}


def test_kill_paper_reproduces_deepcrimes_published_results(capsys):
    doc = run_json(capsys, "kill", "--model", "mnist_dc", "--mutation", "delete_training_data",
                   "--paper")
    assert [t["name"] for t in doc["results"]] == list(DEEPCRIME_PUBLISHED)
    for test in doc["results"]:
        p, d, killed = DEEPCRIME_PUBLISHED[test["name"]]
        assert test["p_value"] == p
        assert test["effect_size"] == pytest.approx(d, abs=5e-5)
        assert test["killed"] is killed
        assert test["n_healthy"] == test["n_mutant"] == 20


def test_kill_on_two_files_gives_the_documented_fields(capsys):
    doc = run_json(capsys, "kill", DC / "results_mnist_original_dc.csv",
                   DC / "results_mnist_delete_training_data_mutated0_MP_9.29_dc.csv", "--paper")
    assert {"p_value", "effect_size", "killed", "n_healthy", "n_mutant"} <= set(doc)
    assert doc["killed"] is True and doc["p_value"] == 0.048


def test_posterior_from_saved_kill_rates_reproduces_the_reference_table(capsys, reference):
    doc = run_json(capsys, "posterior", "--kill-rates", reference / "kill_rates" / "mnist_orig.npy",
                   reference / "kill_rates" / "mnist" / "mnist_delete_training_data_list_mut.npy",
                   "--paper", "--no-plot")
    ratios = [p["ratio"] for p in doc["results"]]
    np.testing.assert_allclose(ratios, [0.756626, 0.913773, 0.999124, 0.999627, 1.047766, 281.44],
                               rtol=1e-4)
    assert [p["killed"] for p in doc["results"]] == [False, False, False, False, True, True]


def test_posterior_on_files_writes_json_and_figure(capsys, tmp_path):
    figure = tmp_path / "fig.png"
    doc = run_json(capsys, "posterior", RAW / "mnist" / "results_mnist_original.csv",
                   RAW / "mnist" / "results_mnist_delete_training_data_mutated0_MP_30.93.csv",
                   "--bootstraps", "20", "--seed", "3", "--plot", figure)
    first, second = doc["results"]
    assert first["name"] == "results_mnist_original" and first["killed"] is False
    assert second["killed"] is True and second["mean"] > 0.9
    assert {"alpha", "beta", "ci_low", "ci_high", "h_sound", "h_mutant", "ratio"} <= set(second)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_posterior_paired_model_level_mutation(capsys, tmp_path):
    doc = run_json(capsys, "posterior", "--model", "mnist", "--mutation", "weights_fuzzing",
                   "--magnitudes", "0.05_0.1,0.05_2", "--bootstraps", "20", "--no-plot")
    assert doc["paired"] is True
    baseline, weak, strong = doc["results"]
    assert baseline["kill_rate_mean"] == 0.0  # identical samples on both sides
    assert weak["mean"] < strong["mean"] and strong["killed"] is True


def test_human_output_is_a_table_with_the_settings(capsys):
    code, out, _ = run(capsys, "posterior", "--model", "mnist", "--mutation",
                       "delete_training_data", "--magnitudes", "30.93", "--bootstraps", "10",
                       "--no-plot")
    assert code == 0
    assert "KILLED" in out and "baseline" in out and "settings: B=10 bootstraps" in out


def test_repeat_gives_false_positive_and_pass_rates(capsys):
    doc = run_json(capsys, "repeat", "--model", "mnist", "--mutation", "delete_training_data",
                   "--magnitudes", "30.93", "--repetitions", "10")
    healthy, strong = doc["results"]
    assert healthy["pass_rate_mean"] < 0.15 and strong["pass_rate_mean"] > 0.95
    assert len(strong["pass_rates"]) == 10


def _bad(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and "Traceback" not in err and out == ""
    return err


def test_bad_input_exits_2_with_a_message_naming_the_problem(capsys, tmp_path):
    healthy = RAW / "mnist" / "results_mnist_original.csv"
    err = _bad(capsys, "kill", healthy, tmp_path / "missing.csv")
    assert "missing.csv: no such file" in err
    (tmp_path / "empty.csv").write_text("")
    assert "empty.csv: the file is empty" in _bad(capsys, "kill", healthy, tmp_path / "empty.csv")
    (tmp_path / "text.csv").write_text("instance,accuracy\n0,0.9\n1,high\n")
    assert "'high' is not a number" in _bad(capsys, "kill", healthy, tmp_path / "text.csv")
    angles = RAW / "lenet" / "results_lenet_change_loss_function_mutated0_MP_categorical_crossentropy.csv"
    assert "outside [0, 1]" in _bad(capsys, "kill", healthy, angles)
    small = DC / "results_mnist_original_dc.csv"
    copy = tmp_path / "copy.csv"  # one file twice is refused first
    copy.write_bytes(small.read_bytes())
    err = _bad(capsys, "posterior", small, copy, "--sample", "25", "--no-plot")
    assert "results_mnist_original_dc.csv: 20 instance(s), fewer than the sample size k = 25" \
        in err and "(--sample)" in err


def test_paired_mode_refuses_unpaired_ids(capsys, tmp_path):
    (tmp_path / "h.csv").write_text("instance,accuracy\n0,0.9\n1,0.91\n2,0.92\n")
    (tmp_path / "m.csv").write_text("instance,accuracy\n0,0.8\n1,0.81\n7,0.82\n")
    err = _bad(capsys, "kill", tmp_path / "h.csv", tmp_path / "m.csv", "--paired")
    assert "ids only in" in err and "[2]" in err and "[7]" in err
    (tmp_path / "short.csv").write_text("instance,accuracy\n0,0.8\n1,0.81\n")
    assert "ids only in" in _bad(capsys, "kill", tmp_path / "h.csv", tmp_path / "short.csv",
                                 "--paired")


def test_missing_accuracy_warns_on_stderr_or_fails_with_strict(capsys):
    healthy = DC / "results_lenet_original_dc.csv"
    mutant = DC / "results_lenet_change_label_mutated0_MP_3.12_dc.csv"
    code, out, err = run(capsys, "kill", healthy, mutant, "--json")
    assert code == 0 and json.loads(out)["n_mutant"] == 19
    assert "warning" in err and "results_lenet_change_label_mutated0_MP_3.12_dc.csv" in err
    assert "[15]" in err
    assert "(--strict)" in _bad(capsys, "kill", healthy, mutant, "--strict")


def test_entry_point_runs_as_a_program():
    # One real process: the installed console script, exit code and clean stderr.
    result = subprocess.run([sys.executable, "-m", "probmut", "kill", "nothere.csv",
                             "alsonot.csv"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == "probmut kill: error: nothere.csv: no such file"


def test_ctrl_c_stops_a_long_analysis_within_seconds():
    """Issue 32: a long posterior shows its progress on stderr, and SIGINT stops it within
    a second or two (the engine returns to Python between calls of about 0.1 s of work),
    with one line and exit code 130, no traceback and nothing on stdout."""
    import select
    import signal
    import time

    from probmut.engine import kill_counts

    kill_counts(np.linspace(0.9, 0.95, 4), np.linspace(0.9, 0.95, 4), bootstraps=1, trials=1,
                sample=2)  # the compiled kernel is in numba's cache for the process below
    process = subprocess.Popen(
        [sys.executable, "-m", "probmut", "posterior", RAW / "mnist" / "results_mnist_original.csv",
         RAW / "mnist" / "results_mnist_delete_training_data_mutated0_MP_9.29.csv", "--no-plot",
         "--trials", "100000", "--bootstraps", "3000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    try:
        assert select.select([process.stderr], [], [], 120)[0], "no progress in 120 s"
        progress = process.stderr.readline()
        # (no time left yet on the first line: it is paced after the first step, issue 44)
        assert progress.startswith("posterior: ") and "/600,000,000 (" in progress, progress
        process.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, err = process.communicate(timeout=60)
        stopped = time.monotonic() - start
    finally:
        process.kill()
    assert process.returncode == 130 and stopped < 5, (process.returncode, stopped, err)
    assert "Traceback" not in err and out == ""
    assert err.splitlines()[-1] == "probmut posterior: interrupted"


def test_building_the_command_line_imports_no_heavy_module():
    # Start-up time: every command pays for what registration imports (numba and
    # scipy.special were 0.5 s of it: the kill criteria's registry and the Beta maths).
    code = ("import sys, probmut.cli; probmut.cli.build_parser(); "
            "print([m for m in ('scipy', 'numba', 'matplotlib', 'pandas', 'tensorflow', "
            "'pymc', 'arviz', 'nutpie', 'ray') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_train_without_its_extra_is_a_clear_error(capsys, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else real(name, *a))
    err = _bad(capsys, "train", "--out", tmp_path / "run", "--instances", "2")
    assert "needs tensorflow" in err and "probmut[train]" in err


@pytest.mark.parametrize("command, alias", [
    (["kill"], "tests"),
    (["posterior", "--bootstraps", "5", "--trials", "5", "--no-plot"], "populations"),
    (["repeat", "--repetitions", "2", "--trials", "5"], "populations"),
    (["sample-size", "--sizes", "20", "--repetitions", "2", "--bootstraps", "5",
      "--trials", "5", "--no-plot", "--no-cache"], "studies"),
    (["mce", "--repetitions", "2", "--bootstraps", "5", "--trials", "5", "--no-cache"],
     "results"),
    (["recommend", "--populations", "10", "--sizes", "25", "--pilot", "25", "--bootstraps", "10",
      "--trials", "10", "--no-cache"], "mutants")])
def test_several_results_are_listed_under_results_and_the_old_key(capsys, command, alias):
    """One JSON key for a command's list of results, whatever the command; the key it
    used before stays one release (README, JSON section)."""
    document = run_json(capsys, *command, "--model", "mnist", "--mutation",
                        "delete_training_data", "--magnitudes", "3.1,30.93")
    assert len(document["results"]) >= 2 and document[alias] == document["results"]
