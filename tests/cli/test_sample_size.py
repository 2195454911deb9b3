"""`probmut sample-size`: the JSON's shape and the figure; what it refuses."""


def test_cli_json_shape_and_plot(cli, tmp_path):
    figure = tmp_path / "fig.png"
    document = cli.json("sample-size", "--model", "mnist", "--mutation", "delete_training_data",
                        "--magnitudes", "30.93", "--sizes", "25,50", "--subpopulations", "4",
                        "--repetitions", "3", "--bootstraps", "10", "--trials", "20",
                        "--seed", "1", "--no-cache", "--plot", figure)
    assert [s["n"] for s in document["sizes"]] == [25, 50]
    for quantity in ("mean", "var", "mean_lower", "mean_upper", "var_lower", "var_upper"):
        assert set(document["sizes"][0][quantity]) == {"median", "low", "high"}
    assert [s["overlap"] for s in document["sizes"]] == [False, False]
    assert "recommendation" not in document and document["overlap_note"] is None
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_subpopulation_and_a_study_beyond_the_engine_are_refused(cli):
    """Issue 57: one sub-population drew a zero-width band; a million sub-populations of a
    million repetitions started 10^16 tests."""
    argv = ["sample-size", "--model", "mnist", "--mutation", "change_label",
            "--magnitudes", "3.12", "--no-cache", "--no-plot"]
    cli.refused(*argv, "--subpopulations", "1",
                says="--subpopulations: must be at least 2, got 1")
    cli.refused(*argv, "--subpopulations", "1000000", "--repetitions", "1000000",
                says="800,000,000,000,000 bootstrap resamples (sizes x sub-populations x "
                     "repetitions x bootstraps) exceed the limit of 134,217,728")
