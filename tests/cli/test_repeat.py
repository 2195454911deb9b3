"""`probmut repeat`: the DeepCrime test repeated over random instance subsets."""


def test_repeat_gives_false_positive_and_pass_rates(cli):
    doc = cli.json("repeat", "--model", "mnist", "--mutation", "delete_training_data",
                   "--magnitudes", "30.93", "--repetitions", "10")
    healthy, strong = doc["results"]
    assert healthy["pass_rate_mean"] < 0.15 and strong["pass_rate_mean"] > 0.95
    assert len(strong["pass_rates"]) == 10


def test_one_repetition_has_no_sd_and_says_so(cli):
    """Issue 57: one repetition printed sd 0.000, a spread it does not have."""
    argv = ["repeat", "--model", "mnist", "--mutation", "delete_training_data",
            "--magnitudes", "30.93", "--repetitions", "1", "--trials", "20"]
    lines = cli.ok(*argv).splitlines()
    assert lines[2].endswith("(n/a)") and lines[3].endswith("(n/a)"), lines
    assert lines[-1].startswith("sd: n/a, one repetition has no spread"), lines
    doc = cli.json(*argv)
    assert [r["pass_rate_sd"] for r in doc["results"]] == [None, None]
    two = cli.json(*argv[:-4], "--repetitions", "2", "--trials", "20")
    assert all(isinstance(r["pass_rate_sd"], float) for r in two["results"])
