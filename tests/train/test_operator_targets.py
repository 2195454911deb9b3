"""Issue 10's targets: every operator at its documented default magnitude on digits_cnn
gives a mutant that is neither equivalent nor broken unless the docs say so, the
operators with no legal target on digits_cnn say so before training, and the README's
operator table lists every operator with its test."""

import re
from pathlib import Path

import pytest

from probmut.train.operators import ALIASES, OPERATORS

REPO = Path(__file__).resolve().parents[2]
#: Operators with no legal target on digits_cnn (documented in docs/training.md): it has
#: no hidden layer without activation, regulariser or bias, and no layer that keeps its
#: shape and acts at inference (its only such layer is a Dropout).
NOT_ON_DIGITS_CNN = {"add_activation_function", "change_weights_regularisation",
                     "remove_weights_regularisation", "add_bias", "layer_deactivation",
                     "duplicate_layer"}
#: DeepCrime's "change" operators, refused without the setting they change: digits_cnn
#: has no gradient clipping, and early stopping only with --patience.
NEEDS_A_SETTING = {"change_gradient_clipping": "does not clip gradients",
                   "change_patience": "no early stopping to change"}


@pytest.mark.train
@pytest.mark.parametrize("name", sorted(NOT_ON_DIGITS_CNN))
def test_operators_without_a_target_on_digits_cnn_stop_before_training(name, tmp_path, cli):
    pytest.importorskip("tensorflow")
    error = cli.refused("train", "--mutation", name, "--out", tmp_path / "x",
                        says="the model has no hidden layer that is")
    assert "layers: 0 conv2d" in error
    assert not (tmp_path / "x").exists()


@pytest.mark.train
@pytest.mark.parametrize("name", sorted(NEEDS_A_SETTING))
def test_change_operators_without_their_setting_stop_before_training(name, tmp_path, cli):
    pytest.importorskip("tensorflow")
    cli.refused("train", "--mutation", name, "--validation-split", "0.1", "--out",
                tmp_path / "x", says=NEEDS_A_SETTING[name])
    assert not (tmp_path / "x").exists()


@pytest.mark.train
@pytest.mark.slow
def test_every_operator_at_its_default_is_a_real_mutant_on_digits_cnn(tmp_path, cli):
    """2 instances x 2 epochs per population (one run, and one with a validation split
    and early stopping for the operators that need them); flags must be exactly the
    documented ones."""
    pytest.importorskip("tensorflow")
    applicable = [op for op in OPERATORS.values()
                  if op.name not in NOT_ON_DIGITS_CNN | {"change_gradient_clipping"}]
    flags = {}
    for validation in (False, True):
        chosen = [op.name for op in applicable
                  if (op.needs_validation or op.name == "change_patience") == validation]
        args = ["train", "--instances", "2", "--epochs", "2", "--jobs", "2", "--quiet",
                "--out", tmp_path / f"run{validation}"]
        args += ["--validation-split", "0.1", "--patience", "0"] if validation else []
        summary = cli.json(*args, *(a for name in chosen for a in ("--mutation", name)))
        for population in summary["results"]:
            flags[population["name"]] = population["flags"]
    assert len(flags) == len(applicable) + 1  # + healthy (twice, same name)
    expected = {name: [] for name in flags}
    expected["data_shuffle_1"] = ["equivalent"]  # it only reorders (docs/training.md)
    assert flags == expected


def test_readme_operator_table_is_complete():
    """Every operator and every name its references give it is in the README's table,
    with a test that exists."""
    readme = (REPO / "README.md").read_text()
    table = readme.split("<!-- operator table -->")[1]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| `")]
    names = [row[0].strip().strip("`") for row in rows]
    assert sorted(names) == sorted(OPERATORS)
    aliases = {a.strip() for row in rows for a in row[1].split(",") if a.strip() != "-"}
    assert aliases == set(ALIASES)
    tests = "".join(path.read_text() for path in (REPO / "tests" / "train").glob("test_*.py"))
    for row in rows:
        for test in re.findall(r"`(test_\w+)`", row[-1]):
            assert f"def {test}(" in tests, test
        assert re.search(r"`test_\w+`", row[-1]), row[0]
