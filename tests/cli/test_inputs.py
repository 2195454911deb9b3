"""`probmut inputs`: both analyses as text and JSON; bad files exit 2 with a message."""

import json

import numpy as np

from ..conftest import synthetic_outcomes, write_outcomes


def test_cli_prints_both_analyses_and_json(tmp_path, cli):
    labels, healthy, broken, same = synthetic_outcomes(np.random.default_rng(4))
    files = [write_outcomes(tmp_path / "healthy.outcomes.npz", healthy, labels),
             write_outcomes(tmp_path / "broken.outcomes.npz", broken, labels),
             write_outcomes(tmp_path / "same.outcomes.npz", same, labels)]
    text = cli.ok("inputs", *files)
    assert "DeepMutation mutation score: 0.1000" in text
    assert "statistical mutation score: 0.5000" in text
    document = json.loads(cli.ok("inputs", *files, "--json", "--inputs", "0:200"))
    assert document["test_inputs"] == 200 and document["candidate_pool"] == 400
    assert document["mutants"][0]["statistical"]["killed"]
    assert max(document["mutants"][0]["deepmutation"]["killing_inputs"]) < 200


def test_bad_input_exits_2_with_a_message(tmp_path, cli):
    labels, healthy, broken, _ = synthetic_outcomes(np.random.default_rng(5))
    h = write_outcomes(tmp_path / "healthy.outcomes.npz", healthy, labels)
    short = write_outcomes(tmp_path / "short.outcomes.npz", broken[:, :100], labels[:100])
    cli.refused("inputs", h, short, says="same test inputs")
    cli.refused("inputs", h)
    cli.refused("inputs", h, str(tmp_path / "missing.outcomes.npz"))
    same = write_outcomes(tmp_path / "same.outcomes.npz", healthy, labels)
    cli.refused("inputs", h, same, "--inputs", "500:600", says="selects none of the")
    cli.refused("inputs", h, h, says="is given twice")
