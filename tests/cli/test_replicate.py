"""`probmut replicate`: every listed file written; an unknown part is an error."""


import pandas as pd
import pytest

from ..conftest import check_replicate_files, replicate_files


@pytest.mark.slow
def test_replicate_quick_cli_writes_every_file(cli, tmp_path):
    report = cli.json("replicate", "--quick", "--out", tmp_path)
    expected = replicate_files(tmp_path, ["figure3", "deepcrime", "motivating", "sample-size"])
    assert sorted(report["files"]) == sorted(map(str, expected))
    check_replicate_files(expected)
    ratios = pd.read_csv(tmp_path / "ratio_table.csv")
    assert {"h_sound", "h_mutant", "ratio", "killed"} <= set(ratios.columns)
    mnist = ratios[(ratios.model == "mnist") & (ratios.mutation == "delete_training_data")]
    killed = mnist.set_index("name").killed
    assert not killed["healthy"] and killed["30.93"]


def test_unknown_part_is_an_error(tmp_path, cli):
    cli.refused("replicate", "--quick", "--out", str(tmp_path), "--only", "figure9",
                says="unknown part")
