"""`probmut kill` (and `repeat`): the --criterion choices, their help and their refusals
come from the registry of kill criteria."""

from probmut.cli import main
from probmut.killtest import CRITERIA


def test_command_line_reads_the_registry(capsys):
    code = main(["kill", "--model", "mnist", "--mutation", "weights_fuzzing", "--criterion",
                 "wilcoxon"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("Wilcoxon signed-rank test on whole populations (kill iff Wilcoxon p")
    assert out.splitlines()[1].split()[-2] == "r_rb"
    code = main(["repeat", "--model", "mnist", "--mutation", "weights_fuzzing", "--magnitudes",
                 "0.05_1", "--criterion", "paired-t", "--repetitions", "2", "--trials", "10"])
    assert code == 0 and capsys.readouterr().out.startswith("Paired t-test repeated: 2 x 10")
    # Independent populations: one line, exit 2.
    code = main(["kill", "--model", "mnist", "--mutation", "delete_training_data",
                 "--criterion", "paired-t"])
    err = capsys.readouterr().err
    assert code == 2 and "needs paired populations" in err and len(err.splitlines()) == 1
    assert main(["kill", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # unwrapped
    for spec in CRITERIA.values():
        assert spec.name in help_text and spec.description in help_text
