"""`probmut inputs`: both analyses as text and JSON; bad files exit 2 with a message."""

import json

import numpy as np

from probmut.cli import main

from ..conftest import synthetic_outcomes, write_outcomes


def test_cli_prints_both_analyses_and_json(tmp_path, capsys):
    labels, healthy, broken, same = synthetic_outcomes(np.random.default_rng(4))
    files = [write_outcomes(tmp_path / "healthy.outcomes.npz", healthy, labels),
             write_outcomes(tmp_path / "broken.outcomes.npz", broken, labels),
             write_outcomes(tmp_path / "same.outcomes.npz", same, labels)]
    assert main(["inputs", *files]) == 0
    text = capsys.readouterr().out
    assert "DeepMutation mutation score: 0.1000" in text
    assert "statistical mutation score: 0.5000" in text
    assert main(["inputs", *files, "--json", "--inputs", "0:200"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["test_inputs"] == 200 and document["candidate_pool"] == 400
    assert document["mutants"][0]["statistical"]["killed"]
    assert max(document["mutants"][0]["deepmutation"]["killing_inputs"]) < 200


def test_bad_input_exits_2_with_a_message(tmp_path, capsys):
    labels, healthy, broken, _ = synthetic_outcomes(np.random.default_rng(5))
    h = write_outcomes(tmp_path / "healthy.outcomes.npz", healthy, labels)
    short = write_outcomes(tmp_path / "short.outcomes.npz", broken[:, :100], labels[:100])
    assert main(["inputs", h, short]) == 2
    assert "same test inputs" in capsys.readouterr().err
    assert main(["inputs", h]) == 2
    assert main(["inputs", h, str(tmp_path / "missing.outcomes.npz")]) == 2
    same = write_outcomes(tmp_path / "same.outcomes.npz", healthy, labels)
    assert main(["inputs", h, same, "--inputs", "500:600"]) == 2
    assert "selects none of the" in capsys.readouterr().err
    assert main(["inputs", h, h]) == 2
    assert "is given twice" in capsys.readouterr().err
