"""rounds.json and rounds.txt: written whole, read back, and a file that is not one
refused in one line."""

import json

import pytest

from probmut.errors import ProbmutError
from probmut.io.rounds import read_rounds, write_rounds

ROUNDS = [{"round": 1, "instances": {"healthy": 10, "x_1": 10}},
          {"round": 2, "instances": {"healthy": 20, "x_1": 20}}]


def test_rounds_written_are_read_back(tmp_path):
    write_rounds(tmp_path, {"max_instances": 40, "rounds": ROUNDS, "final": {}}, "a table")
    assert read_rounds(tmp_path / "rounds.json") == ROUNDS
    assert json.loads((tmp_path / "rounds.json").read_text())["max_instances"] == 40
    assert (tmp_path / "rounds.txt").read_text() == "a table\n"
    # rewritten whole after each round
    write_rounds(tmp_path, {"rounds": ROUNDS[:1], "final": {}}, "shorter")
    assert read_rounds(tmp_path / "rounds.json") == ROUNDS[:1]
    assert (tmp_path / "rounds.txt").read_text() == "shorter\n"


def test_a_run_without_rounds_has_none(tmp_path):
    assert read_rounds(tmp_path / "rounds.json") is None


@pytest.mark.parametrize("text", ["{not json", "[]", '{"final": {}}', '{"rounds": {}}',
                                  '{"rounds": [{"round": 1}]}',
                                  '{"rounds": [{"instances": [10]}]}'])
def test_a_file_that_is_not_a_rounds_file_is_refused(tmp_path, text):
    path = tmp_path / "rounds.json"
    path.write_text(text)
    with pytest.raises(ProbmutError, match="not the rounds file of a run trained in "
                                           "rounds") as error:
        read_rounds(path)
    assert "\n" not in str(error.value)
