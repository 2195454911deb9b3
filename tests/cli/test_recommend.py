"""`probmut recommend`: JSON and text, planned looks; bad input is one line and exit 2."""


import numpy as np
import pytest

from probmut.sequential import CERTAINTY, settle_threshold


def test_cli_json_and_text(cli):
    document = cli.json("recommend", "--model", "mnist", "--mutation", "delete_training_data",
                        "--magnitudes", "30.93,3.1", "--pilot", "25", "--sizes", "25,50",
                        "--simulations", "20", "--bootstraps", "20", "--trials", "30",
                        "--no-cache")
    first, second = document["results"]
    assert first["name"] == "30.93" and first["verdict"] == "killed"
    assert first["pilot"] == [25, 25] and first["needed"] == 25
    assert [row["n"] for row in first["per_size"]] == [25, 50]
    assert {"n", "mean_band", "agreement", "killed_share"} <= set(first["per_size"][0])
    assert second["verdict"] in ("not killed", "not settled")
    for advice in (first, second):  # one look: the level, with p_killed's error
        assert advice["threshold"] == CERTAINTY and advice["looks"] == 1
        assert advice["simulations_used"] in (20, 40, 80, 160)
        p = advice["p_killed"]
        assert advice["p_killed_se"] == pytest.approx(
            np.sqrt(p * (1 - p) / advice["simulations_used"]))
    looked = cli.json("recommend", "--model", "mnist", "--mutation", "delete_training_data",
                      "--magnitudes", "30.93", "--pilot", "25", "--sizes", "25", "--simulations",
                      "20", "--bootstraps", "20", "--trials", "30", "--no-cache",
                      "--looks", "25,50,75,100")
    assert looked["looks"] == 4
    assert looked["threshold"] == settle_threshold(25, [25, 50, 75, 100]) > CERTAINTY
    text = cli.ok("recommend", "--model", "mnist", "--mutation", "delete_training_data",
                  "--magnitudes", "30.93", "--pilot", "25", "--sizes", "25", "--simulations",
                  "20", "--bootstraps", "20", "--trials", "30", "--no-cache")
    assert "verdict: KILLED: a large population" in text
    assert "posterior mean [95% band]" in text



@pytest.mark.parametrize("argv, message", [
    (["--pilot", "10"], "fewer than the sample size k = 20"),
    (["--pilot", "500"], "holds only 200 instances"),
    (["--pilot", "0"], "argument --pilot: must be at least 1"),
    (["--pilot", "25", "--sizes", "25,x"],
     "argument --sizes: expected comma-separated population sizes"),
    (["--pilot", "25", "--sizes", "10,50"], "at least the sample size k = 20"),
    (["--pilot", "25", "--certainty", "1.5"], "argument --certainty: must be"),
    (["--pilot", "25", "--simulations", "3"], "argument --simulations: must be at least 10"),
    # --draws: its name before 0.2.0
    (["--pilot", "25", "--draws", "30"], "unrecognized arguments: --draws"),
    (["--pilot", "25", "--looks", "25,x"], "argument --looks: expected comma-separated "
                                           "instance counts, got '25,x'"),
    (["--pilot", "25", "--looks", "10,25"], "the planned looks must be at least the sample "
                                            "size k = 20"),
    (["--pilot", "25", "--simulations", "30000"], "120,000 simulated populations of 200 instances "
                                            "per side exceed the limit"),
    # issue 44: the hint names the option that made the request too large
    (["--pilot", "25", "--simulations", "100000"],
     "lower the sizes or the simulations (--simulations)"),
    (["--pilot", "25", "--simulations", "100", "--reference", "200000"], "(--reference)"),
    # issue 44: a plan without the pilot's size, unsorted or repeated, is refused
    (["--pilot", "40", "--looks", "50,60"], "the planned looks [50, 60] leave out this pilot's 40 "
                                            "instances per side"),
    (["--pilot", "25", "--looks", "50,25"], "in increasing order, each once; got [50, 25]"),
    (["--pilot", "25", "--looks", "25,25,50"], "in increasing order, each once; got [25, 25, 50]"),
    (["--pilot", "25", "--certainty", "0.999"], "threshold 0.999 is out of reach of 800 simulated "
                                            "populations"),
    # issue 57: 2,000 looks took super-linear time without a word
    (["--pilot", "25", "--looks", ",".join(map(str, range(25, 2025)))],
     "a plan of 2,000 looks up to 2,024 instances per side is too fine to integrate"),
])
def test_bad_input_is_one_line_and_exit_2(cli, argv, message):
    err = cli.refused("recommend", "--model", "mnist", "--mutation", "delete_training_data",
               "--magnitudes", "30.93", "--no-cache", *argv)
    assert message in err


def test_unpaired_ids_in_paired_mode(cli, tmp_path):
    (tmp_path / "h.csv").write_text("instance,accuracy\n" + "".join(
        f"{i},{0.9 + i / 1000}\n" for i in range(25)))
    (tmp_path / "m.csv").write_text("instance,accuracy\n" + "".join(
        f"{i + 5},{0.8 + i / 1000}\n" for i in range(25)))
    err = cli.refused("recommend", tmp_path / "h.csv", tmp_path / "m.csv", "--paired", "--no-cache")
    assert "same instance ids" in err


def test_a_paired_pilot_of_two_is_refused(cli, tmp_path):
    """Found by the property test of test_bad_input: the pairs' covariance needs P >= 3."""
    for name in ("h.csv", "m.csv"):
        (tmp_path / name).write_text("instance,accuracy\n0,0.0\n1,0.0\n")
    err = cli.refused("recommend", tmp_path / "h.csv", tmp_path / "m.csv", "--paired",
                      "--sample", "2", "--sizes", "2", "--reference", "4", "--no-cache")
    assert "a paired pilot needs at least 3 instances" in err


def test_cli_bad_sizes_exit_2(cli):
    cli.refused("recommend", "--model", "mnist", "--mutation", "delete_training_data",
                "--magnitudes", "30.93", "--sizes", "25,x", "--no-cache", says="--sizes")
