"""`probmut train`: the run's mode and its settings come from the flags (the training
itself: tests/train/); flags of another mode are refused in one line before anything
loads."""

import pytest

from probmut.cli.main import _parse, build_parser
from probmut.cli.train import _mode
from probmut.train.options import Instances, Search, UntilScore, UntilSettled


def _mode_of(*argv):
    return _mode(_parse(build_parser(), ["train", "--out", "run", *argv]))


def test_the_mode_and_its_settings_come_from_the_flags():
    assert _mode_of() == Instances(count=20)
    assert _mode_of("--instances", "5", "--max-error-rate", "0.2") == Instances(
        count=5, max_error_rate=0.2)
    search = _mode_of("--search", "delete_training_data:0,99", "--decision", "deepcrime")
    assert search == Search(magnitudes="delete_training_data:0,99", decision="deepcrime")
    settled = _mode_of("--until-settled", "--max-instances", "60", "--certainty", "0.9",
                       "--criterion", "welch", "--bootstraps", "50", "--trials", "40",
                       "--sample", "10")
    assert isinstance(settled, UntilSettled) and settled.certainty == 0.9
    assert (settled.max_instances, settled.round_size) == (60, 10)
    analysis = settled.analysis
    assert (analysis.criterion.kind, analysis.bootstraps, analysis.trials, analysis.sample) == (
        "welch", 50, 40, 10)
    score = _mode_of("--until-score", "0.2", "--criterion", "mannwhitney")
    assert isinstance(score, UntilScore) and score.width == 0.2
    assert score.analysis.criterion.kind == "mannwhitney" and score.analysis.bootstraps == 100


@pytest.mark.parametrize("argv, says", [
    (["--until-settled", "--until-score"], "either until each mutant's verdict is settled"),
    (["--until-settled", "--instances", "5"], "either a number of instances or until settled"),
    (["--until-score", "--search", "delete_training_data:0,9"],
     "either a search or training until the score is settled"),
    (["--search", "delete_training_data:0,9", "--max-error-rate", "0.1"],
     "the quality control applies to a run of a number of instances"),
    (["--certainty", "0.9"], "--certainty is for training until settled"),
    (["--resolution", "2"], "a resolution and a decision are for a search"),
    (["--criterion", "welch"], "--criterion: the verdicts' and the score's settings are for "
                               "training until settled"),
    (["--trials", "30", "--bootstraps", "20"], "--bootstraps, --trials: the verdicts'"),
    (["--round", "5"], "--round: the rounds' settings are for training until settled"),
    (["--instances", "5", "--max-instances", "50", "--sample", "5"],
     "--max-instances, --sample: the rounds' settings are for training until settled or "
     "until the score is (--until-settled, --until-score) (--max-instances)"),
    (["--search", "delete_training_data:0,9", "--sample", "10"],
     "--sample: the rounds' settings"),
])
def test_flags_of_another_mode_are_refused(cli, tmp_path, argv, says):
    cli.refused("train", "--out", tmp_path / "run", *argv, says=says)
    assert not (tmp_path / "run").exists()


@pytest.mark.train
def test_a_run_of_probmut_0_1_is_not_resumed(cli, tmp_path):
    """0.2 does not guess at a 0.1 run's settings (CHANGELOG.md): one line, exit 2,
    nothing trained."""
    pytest.importorskip("tensorflow")
    from probmut.io.workdir import write_settings

    write_settings(tmp_path, {"dataset": "digits", "model": "digits_cnn", "seed": 42})
    cli.refused("train", "--out", tmp_path, "--instances", "1", "--epochs", "1", "--quiet",
                says="a run started by probmut 0.1 (its settings have no architecture, "
                     "data, stack); probmut 0.2 does not resume it")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".work"]
