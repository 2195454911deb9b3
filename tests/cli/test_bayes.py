"""`probmut bayes`: the parser builds and the command runs to the point of use without
the `bayes` extra (then one line saying what to install); JSON and figure with it."""

import json
import subprocess
import sys

import pytest

from ..conftest import normal_accuracies


def test_core_and_parser_import_without_pymc():
    # The parser takes the bayes command's choices from probmut.bayes, which must import
    # without the extra; running the command then says what to install, in one line. A
    # fresh interpreter, not the cli fixture: in this one the extra may be imported already.
    code = ("import sys\n"
            "for name in ('pymc', 'arviz', 'nutpie'): sys.modules[name] = None\n"
            "import probmut.cli, probmut.bagging\n"
            "probmut.cli.build_parser()\n"
            "print(probmut.cli.main(['bayes', '--model', 'mnist', '--mutation',\n"
            "                        'delete_training_data', '--no-plot']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.stdout.strip() == "2", run.stderr
    assert "needs ArviZ (not installed): install probmut[bayes]" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr  # before any progress line


@pytest.mark.bayes
def test_cli_prints_json_and_draws_the_figure(tmp_path, cli):
    pytest.importorskip("pymc")
    pytest.importorskip("arviz")
    h, m = normal_accuracies(4)
    for name, values in (("healthy", h), ("mutant", m)):
        rows = "\n".join(f"{i},{float(v)!r}" for i, v in enumerate(values))
        (tmp_path / f"{name}.csv").write_text("instance,accuracy\n" + rows + "\n")
    figure = tmp_path / "bayes.png"
    document = json.loads(cli.ok("bayes", str(tmp_path / "healthy.csv"),
                                 str(tmp_path / "mutant.csv"), "--draws", "300", "--tune", "300",
                                 "--threads", "1", "--seed", "7", "--json", "--plot", str(figure)))
    assert document["seed"] == 7 and document["figure"] == str(figure)
    assert figure.stat().st_size > 10_000
    cli.refused("bayes", str(tmp_path / "healthy.csv"), str(tmp_path / "mutant.csv"),
                 "--chains", "1", "--no-plot", says="--chains: must be at least 2")
