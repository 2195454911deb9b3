"""`probmut kill`: DeepCrime's published results on its own populations, the documented
fields, paired ids, missing accuracies; the --criterion choices, their help and their
refusals come from the registry of kill criteria."""

import json

import pytest

from probmut.killtest import CRITERIA

from ..conftest import RAW

DC = RAW / "deepcrime_comp"

# METHOD.md: DeepCrime's own 20 vs 20 instances, MNIST delete_training_data.
DEEPCRIME_PUBLISHED = {"3.1": (0.907, 0.0369, False), "9.29": (0.048, 0.6242, True),
                       "12.38": (0.387, 0.2735, False), "18.57": (0.001, 1.0074, True),
                       "30.93": (0.0, 1.6321, True)}


def test_kill_paper_reproduces_deepcrimes_published_results(cli):
    doc = cli.json("kill", "--model", "mnist_dc", "--mutation", "delete_training_data",
                   "--paper")
    assert [t["name"] for t in doc["results"]] == list(DEEPCRIME_PUBLISHED)
    for test in doc["results"]:
        p, d, killed = DEEPCRIME_PUBLISHED[test["name"]]
        assert test["p_value"] == p
        assert test["effect_size"] == pytest.approx(d, abs=5e-5)
        assert test["killed"] is killed
        assert test["n_healthy"] == test["n_mutant"] == 20

def test_kill_on_two_files_gives_the_documented_fields(cli):
    doc = cli.json("kill", DC / "results_mnist_original_dc.csv",
                   DC / "results_mnist_delete_training_data_mutated0_MP_9.29_dc.csv", "--paper")
    assert {"p_value", "effect_size", "killed", "n_healthy", "n_mutant"} <= set(doc)
    assert doc["killed"] is True and doc["p_value"] == 0.048

def test_paired_mode_refuses_unpaired_ids(cli, tmp_path):
    (tmp_path / "h.csv").write_text("instance,accuracy\n0,0.9\n1,0.91\n2,0.92\n")
    (tmp_path / "m.csv").write_text("instance,accuracy\n0,0.8\n1,0.81\n7,0.82\n")
    err = cli.refused("kill", tmp_path / "h.csv", tmp_path / "m.csv", "--paired")
    assert "ids only in" in err and "[2]" in err and "[7]" in err
    (tmp_path / "short.csv").write_text("instance,accuracy\n0,0.8\n1,0.81\n")
    assert "ids only in" in cli.refused("kill", tmp_path / "h.csv", tmp_path / "short.csv",
                                 "--paired")

def test_missing_accuracy_warns_on_stderr_or_fails_with_strict(cli):
    healthy = DC / "results_lenet_original_dc.csv"
    mutant = DC / "results_lenet_change_label_mutated0_MP_3.12_dc.csv"
    code, out, err = cli("kill", healthy, mutant, "--json")
    assert code == 0 and json.loads(out)["n_mutant"] == 19
    assert "warning" in err and "results_lenet_change_label_mutated0_MP_3.12_dc.csv" in err
    assert "[15]" in err
    assert "(--strict)" in cli.refused("kill", healthy, mutant, "--strict")


def test_command_line_reads_the_registry(cli):
    out = cli.ok("kill", "--model", "mnist", "--mutation", "weights_fuzzing", "--criterion",
                 "wilcoxon")
    assert out.startswith("Wilcoxon signed-rank test on whole populations (kill iff Wilcoxon p")
    assert out.splitlines()[1].split()[-2] == "r_rb"
    assert cli.ok("repeat", "--model", "mnist", "--mutation", "weights_fuzzing", "--magnitudes",
                  "0.05_1", "--criterion", "paired-t", "--repetitions", "2", "--trials",
                  "10").startswith("Paired t-test repeated: 2 x 10")
    # Independent populations: one line, exit 2.
    cli.refused("kill", "--model", "mnist", "--mutation", "delete_training_data",
                "--criterion", "paired-t", says="needs paired populations")
    help_text = " ".join(cli.ok("kill", "--help").split()).replace("- ", "-")  # unwrapped
    for spec in CRITERIA.values():
        assert spec.name in help_text and spec.description in help_text
