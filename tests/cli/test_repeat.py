"""`probmut repeat`: the DeepCrime test repeated over random instance subsets."""


def test_repeat_gives_false_positive_and_pass_rates(cli):
    doc = cli.json("repeat", "--model", "mnist", "--mutation", "delete_training_data",
                   "--magnitudes", "30.93", "--repetitions", "10")
    healthy, strong = doc["results"]
    assert healthy["pass_rate_mean"] < 0.15 and strong["pass_rate_mean"] > 0.95
    assert len(strong["pass_rates"]) == 10
