"""`probmut mce`: the paper's MCE from its saved kill rates as JSON; bad kill rates exit 2."""

import contextlib
import io
import json

import numpy as np
import pytest

from probmut.cli import main

from ..conftest import MCE_LABEL_312, RAW, needs_mce_reference


@needs_mce_reference
def test_cli_kill_rates_paper_json():
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["mce", "--kill-rates", str(MCE_LABEL_312), "--paper", "--json"]) == 0
    document = json.loads(buffer.getvalue())
    assert {"mean", "mean_se", "var", "var_se", "repetitions"} <= document.keys()
    assert document["repetitions"] == 100
    assert document["mean"] == pytest.approx(0.3688340049, rel=1e-6)
    assert document["jackknife"] == "paper" and document["grid_step"] == 0.01


def test_bad_kill_rates_exit_2(tmp_path, capsys):
    path = tmp_path / "reps.npy"
    np.save(path, np.full(100, 0.5))
    assert main(["mce", "--kill-rates", str(path)]) == 2
    assert "R x B" in capsys.readouterr().err


def test_mce_keeps_each_mutants_kill_counts_and_says_so_when_stopped(capsys, tmp_path,
                                                                     monkeypatch):
    """`probmut mce` had no --cache and on Ctrl-C said only "interrupted" (issue 44)."""
    import probmut.mce

    healthy, mutant = (RAW / "mnist" / f"results_mnist_{name}.csv" for name in (
        "original", "delete_training_data_mutated0_MP_9.29"))
    argv = ["mce", str(healthy), str(mutant), "--repetitions", "2", "--bootstraps", "5",
            "--trials", "5", "--cache", str(tmp_path)]
    assert main(argv) == 0
    assert len(list(tmp_path.rglob("*.npz"))) == 1
    capsys.readouterr()

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(probmut.mce, "monte_carlo_error", stopped)
    assert main(argv) == 130
    assert capsys.readouterr().err == ("probmut mce: interrupted; completed work is kept, run "
                                       "the same command again to resume\n")
