"""`probmut mce`: the paper's MCE from its saved kill rates as JSON; bad kill rates exit 2."""

import contextlib
import io
import json

import numpy as np
import pytest

from probmut.cli import main

from ..conftest import MCE_LABEL_312, needs_mce_reference


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
