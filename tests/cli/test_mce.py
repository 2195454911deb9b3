"""`probmut mce`: the paper's MCE from its saved kill rates as JSON; bad kill rates exit 2."""


import numpy as np
import pytest

from ..conftest import MCE_LABEL_312, RAW


def test_cli_kill_rates_paper_json(cli):
    document = cli.json("mce", "--kill-rates", MCE_LABEL_312, "--paper")
    assert {"mean", "mean_se", "var", "var_se", "repetitions"} <= document.keys()
    assert document["repetitions"] == 100
    assert document["mean"] == pytest.approx(0.3688340049, rel=1e-6)
    assert document["jackknife"] == "paper" and document["grid_step"] == 0.01


def test_bad_kill_rates_exit_2(tmp_path, cli):
    path = tmp_path / "reps.npy"
    np.save(path, np.full(100, 0.5))
    cli.refused("mce", "--kill-rates", str(path), says="R x B")


def test_mce_keeps_each_mutants_kill_counts_and_says_so_when_stopped(cli, tmp_path, monkeypatch):
    """`probmut mce` had no --cache and on Ctrl-C said only "interrupted" (issue 44)."""
    import probmut.mce

    healthy, mutant = (RAW / "mnist" / f"results_mnist_{name}.csv" for name in (
        "original", "delete_training_data_mutated0_MP_9.29"))
    argv = ["mce", str(healthy), str(mutant), "--repetitions", "2", "--bootstraps", "5",
            "--trials", "5", "--cache", str(tmp_path)]
    cli.ok(*argv)
    assert len(list(tmp_path.rglob("*.npz"))) == 1

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(probmut.mce, "monte_carlo_error", stopped)
    assert cli(*argv)[::2] == (130, "probmut mce: interrupted; completed work is kept, run "
                                    "the same command again to resume\n")
