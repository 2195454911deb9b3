"""`probmut sample-size`: the JSON's shape and the figure."""




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
