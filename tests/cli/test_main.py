"""The command line: documented JSON, the paper's published numbers, bad input."""

import subprocess
import sys

import numpy as np
import pytest

from ..conftest import RAW, interruptible

DC = RAW / "deepcrime_comp"


def _options():
    """Every option of every command: (command, option, its action)."""
    import argparse

    from probmut.cli.main import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    return [(name, action.option_strings[-1], action) for name, command in commands.items()
            for action in command._actions
            if action.option_strings and action.help != argparse.SUPPRESS]


def test_help_shows_a_default_one_way_and_an_option_with_one_metavar():
    """Issue 57: the helps showed defaults three ways ("(default: 20)", "(default 20)",
    "(20)") and one option under different metavars in different commands."""
    import re

    metavars: dict = {}
    for command, option, action in _options():
        words = action.help or ""
        assert words.count("default") == words.count("(default: "), (command, option, words)
        assert not re.search(r"\([\d.]+\)$", words), (command, option, words)
        if action.nargs != 0:
            shown = action.metavar or (action.dest.upper() if action.choices is None else
                                       "{" + ",".join(map(str, action.choices)) + "}")
            metavars.setdefault(option, {}).setdefault(shown, []).append(command)
    assert not {o: m for o, m in metavars.items() if len(m) > 1}


@pytest.mark.parametrize("argv, hint", [
    (["train", "--model", "digits_cnn"], "--model, removed in probmut 0.2.0, is --architecture"),
    (["recommend", "--draws=5"], "--draws, removed in probmut 0.2.0, is --simulations"),
])
def test_an_option_of_an_earlier_release_names_the_one_that_replaced_it(cli, argv, hint):
    """Issue 57: `train --model` (removed in 0.2.0) got a plain "unrecognized arguments"."""
    assert hint in cli.refused(*argv, says="unrecognized arguments: ")


def test_a_renamed_option_still_works_with_one_warning_line_naming_the_new(cli):
    """Issue 58: the analyses' --jobs (threads) is --threads; --jobs still sets it, hidden
    from the help, with one warning line on stderr."""
    argv = ["repeat", "--model", "mnist", "--mutation", "delete_training_data",
            "--magnitudes", "3.1", "--repetitions", "2", "--trials", "5", "--json"]
    new, old = cli(*argv, "--threads", "1"), cli(*argv, "--jobs", "1")
    assert new.code == old.code == 0 and new.out == old.out
    assert old.err.splitlines() == ["probmut: warning: --jobs is deprecated: it is --threads"]
    assert "--jobs" not in cli.ok("repeat", "--help") and "--threads" in cli.ok("repeat", "--help")


def test_bad_input_exits_2_with_a_message_naming_the_problem(cli, tmp_path):
    healthy = RAW / "mnist" / "results_mnist_original.csv"
    err = cli.refused("kill", healthy, tmp_path / "missing.csv")
    assert "missing.csv: no such file" in err
    (tmp_path / "empty.csv").write_text("")
    assert "empty.csv: the file is empty" in cli.refused("kill", healthy, tmp_path / "empty.csv")
    (tmp_path / "text.csv").write_text("instance,accuracy\n0,0.9\n1,high\n")
    assert "'high' is not a number" in cli.refused("kill", healthy, tmp_path / "text.csv")
    angles = (RAW / "lenet"
              / "results_lenet_change_loss_function_mutated0_MP_categorical_crossentropy.csv")
    assert "outside [0, 1]" in cli.refused("kill", healthy, angles)
    small = DC / "results_mnist_original_dc.csv"
    copy = tmp_path / "copy.csv"  # one file twice is refused first
    copy.write_bytes(small.read_bytes())
    err = cli.refused("posterior", small, copy, "--sample", "25", "--no-plot")
    assert "results_mnist_original_dc.csv: 20 instance(s), fewer than the sample size k = 25" \
        in err and "(--sample)" in err


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
            "'pymc', 'arviz', 'nutpie', 'ray', 'torch') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_each_command_is_registered_by_the_module_named_for_it():
    """A command given on the command line imports only the module ``_COMMANDS`` names for
    it: every module registers exactly the commands named for it, and every command of
    the full parser is named."""
    from probmut.cli.main import _COMMANDS, build_parser

    def commands(parser):
        return list(next(a for a in parser._actions if a.dest == "command").choices)

    assert commands(build_parser()) == list(_COMMANDS)
    for command, module in _COMMANDS.items():
        assert commands(build_parser(command)) == [c for c, m in _COMMANDS.items()
                                                   if m == module]


def test_a_command_imports_no_other_commands_module():
    # Start-up time: the other commands' registrations imported 0.15 s of modules
    # (training options, Bayes settings, ...) that `probmut report` never used.
    code = ("import contextlib, io, sys\n"
            "from probmut.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['report', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('probmut.cli.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(sorted(["probmut.cli.args", "probmut.cli.main",
                                                "probmut.cli.report"])), result.stdout


def test_train_without_its_extra_is_a_clear_error(cli, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else real(name, *a))
    err = cli.refused("train", "--out", tmp_path / "run", "--instances", "2")
    assert "needs tensorflow" in err and "probmut[train]" in err


@pytest.mark.parametrize("command, before", [
    (["kill"], "tests"),
    (["posterior", "--bootstraps", "5", "--trials", "5", "--no-plot"], "populations"),
    (["repeat", "--repetitions", "2", "--trials", "5"], "populations"),
    (["sample-size", "--sizes", "20", "--repetitions", "2", "--bootstraps", "5",
      "--trials", "5", "--no-plot", "--no-cache"], "studies"),
    (["mce", "--repetitions", "2", "--bootstraps", "5", "--trials", "5", "--no-cache"],
     "results"),
    (["recommend", "--simulations", "10", "--sizes", "25", "--pilot", "25", "--bootstraps", "10",
      "--trials", "10", "--no-cache"], "mutants")])
def test_several_results_are_listed_under_results_only(cli, command, before):
    """One JSON key for a command's list of results, whatever the command; the key each
    used before 0.2.0 is gone (README, JSON section)."""
    document = cli.json(*command, "--model", "mnist", "--mutation", "delete_training_data",
                        "--magnitudes", "3.1,30.93")
    assert len(document["results"]) >= 2
    assert before == "results" or before not in document
