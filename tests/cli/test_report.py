"""`probmut report`: the page's header names the command that produced it; bad input is
one line and exit 2. The page itself is tested in tests/test_report.py."""

import json
import re

import pytest

from probmut import __version__
from probmut.cli import main
from probmut.io.manifest import write_manifest

from ..conftest import FULL_RUN, write_run


def test_the_header_says_what_produced_the_report(tmp_path, capsys):
    folder = write_run(tmp_path / "run", FULL_RUN, crashed=("delete_training_data_30",))
    out = tmp_path / "r.html"
    assert main(["report", str(folder), "--sample", "5", "--bootstraps", "30", "--trials",
                 "30", "--seed", "3", "--out", str(out), "--quiet", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["report"] == str(out)
    produced = re.search(r'<p class="produced" id="produced">(.*?)</p>', out.read_text())[1]
    command = f"probmut report {folder} --bootstraps 30 --trials 30 --sample 5 --seed 3"
    assert produced.startswith(f"probmut {__version__} · <code>{command}</code> · 20")
    assert produced.endswith("UTC · seed 3")


def test_a_file_that_is_not_a_coverage_result_is_refused(tmp_path, capsys):
    folder = write_run(tmp_path, FULL_RUN)
    (folder / "other.json").write_text('{"tau": 0.1}')
    assert main(["report", str(folder), "--coverage", str(folder / "other.json"),
                 "--out", str(tmp_path / "r.html")]) == 2
    assert "not a coverage result" in capsys.readouterr().err


@pytest.mark.parametrize("case, says", [
    ("empty run", "no manifest.toml, so no populations"),
    ("no populations", "has no population files yet (healthy.csv is missing)"),
    ("no such run", "no such directory"),
    ("unknown model", "no model 'nope'; it has mnist"),
    ("out is a directory", "is a directory; give a file name for the report (--out)"),
    ("out under a file", "is a file, not a directory (the report's folder) (--out)"),
    ("run and manifest", "give a run directory or --manifest, not both"),
    ("nothing", "give a run directory, or --model NAME [--manifest FILE]"),
])
def test_bad_input_is_one_line_and_exit_2(case, says, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where report.html would go by default
    empty = tmp_path / "empty"
    empty.mkdir()
    bare = tmp_path / "bare"
    bare.mkdir()
    write_manifest(bare / "manifest.toml", {"models": {"m": {
        "healthy": "healthy.csv", "mutations": {"x": {"pattern": "x_{magnitude}.csv",
                                                      "magnitudes": ["1"]}}}}})
    (tmp_path / "file.txt").write_text("x")
    argv = {"empty run": [str(empty)], "no populations": [str(bare)],
            "no such run": [str(tmp_path / "nope")], "unknown model": ["--model", "nope"],
            "out is a directory": ["--model", "mnist_dc", "--out", str(empty)],
            "out under a file": ["--model", "mnist_dc", "--out",
                                 str(tmp_path / "file.txt" / "r.html")],
            "run and manifest": [str(empty), "--manifest", str(bare / "manifest.toml")],
            "nothing": []}[case]
    assert main(["report", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("probmut report: error: ") and says in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "report.html").exists()
