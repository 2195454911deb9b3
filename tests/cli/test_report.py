"""`probmut report`: the page's header names the command that produced it, the page goes
into the run's folder and replaces only its own campaign's, `--compare` says what
changed; bad input is one line and exit 2. The page itself is tested in tests/report/
(test_sections.py; in a browser, test_page_in_a_browser.py)."""

import html
import json
import re
import shlex

import pytest

from probmut import __version__
from probmut.io.manifest import write_manifest

from ..conftest import FULL_RUN, write_run


def test_the_header_says_what_produced_the_report(tmp_path, cli):
    folder = write_run(tmp_path / "run", FULL_RUN, crashed=("delete_training_data_30",))
    out = tmp_path / "r.html"
    document = cli.json("report", folder, "--sample", "5", "--bootstraps", "30", "--trials",
                        "30", "--seed", "3", "--out", out, "--quiet")
    assert document["report"] == str(out)
    produced = re.search(r'<p class="produced" id="produced">(.*?)</p>', out.read_text())[1]
    command = f"probmut report {folder} --bootstraps 30 --trials 30 --sample 5 --seed 3"
    assert produced.startswith(f"probmut {__version__} · <code>{command}</code> · 20")
    assert produced.endswith("UTC · seed 3")


def test_the_headers_command_runs_and_says_the_same(tmp_path, cli, monkeypatch):
    """Issue 56: with --no-verdicts the header showed `--resumes False`, which probmut
    refuses. The command shown is the one given (but where and how the page is written),
    and run as shown it gives the same numbers."""
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "run", FULL_RUN)
    given = ["report", "run", "--no-verdicts", "--sample", "5", "--bootstraps", "30",
             "--trials", "30", "--quiet", "--jobs", "1", "--threads", "1",
             "--out", "first.html"]
    first = cli.json(*given)
    produced = re.search(r'<p class="produced" id="produced">.*?<code>(.*?)</code>',
                         (tmp_path / "first.html").read_text())[1]
    shown = shlex.split(html.unescape(produced))
    assert shown == ["probmut", "report", "run", "--no-verdicts", "--bootstraps", "30",
                     "--trials", "30", "--sample", "5"]
    again = cli.json(*shown[1:])
    for key in ("mutation_score", "counts", "seed", "analysis"):
        assert again[key] == first[key], key
    assert [m["posterior"] for m in again["mutants"]] == [m["posterior"] for m in first["mutants"]]


@pytest.mark.usefixtures("default_recursion_limit")
def test_a_file_that_is_not_a_coverage_result_is_refused(tmp_path, cli):
    folder = write_run(tmp_path, FULL_RUN)
    (folder / "other.json").write_text('{"tau": 0.1}')
    cli.refused("report", folder, "--coverage", folder / "other.json", "--out",
                tmp_path / "r.html", says="not a coverage result")
    # issue 57: 2000-deep arrays in the run's own coverage.json (a RecursionError before)
    (folder / "coverage.json").write_text("[" * 2000 + "]" * 2000)
    cli.refused("report", folder, "--out", tmp_path / "r.html",
                says="coverage.json: not a JSON document (nested too deeply)")


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
def test_bad_input_is_one_line_and_exit_2(cli, case, says, tmp_path, monkeypatch):
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
    line = cli.refused("report", *argv, says=says)
    assert line.startswith("probmut report: error: ")
    assert not (tmp_path / "report.html").exists()


FAST = ["--sample", "5", "--bootstraps", "30", "--trials", "30", "--no-verdicts", "--quiet"]


def test_the_page_goes_into_the_run_and_replaces_only_its_own(cli, tmp_path, monkeypatch):
    """`probmut report RUN` writes RUN/report.html (the page belongs to the run) and says
    where; run again, it replaces that page and says so; it never replaces the page of
    another campaign, nor a file that is not a report, and says why in one line."""
    monkeypatch.chdir(tmp_path)
    first = write_run(tmp_path / "first", FULL_RUN)
    write_run(tmp_path / "second", FULL_RUN)
    assert cli.ok("report", "first", *FAST).splitlines()[-1] == "report: first/report.html"
    assert not (tmp_path / "report.html").exists()
    page = (first / "report.html").read_text()
    assert '<meta name="probmut-campaign" content="syn @ manifest.toml">' in page
    assert cli.ok("report", "first", *FAST).splitlines()[-1] == (
        "report: first/report.html (it replaces the earlier page of this campaign)")
    moved = tmp_path / "moved"
    first.rename(moved)       # a run moved with its page keeps it its own
    cli.ok("report", "moved", *FAST)
    before = (moved / "report.html").read_bytes()
    for argv, says in (
            (["second", "--out", "moved/report.html"],
             "moved/report.html: holds the report of another campaign (syn @ manifest.toml"),
            (["--model", "mnist_dc", "--out", "moved/report.html"],
             "holds the report of another campaign (syn @ manifest.toml)")):  # before analysing
        cli.refused("report", *argv, *FAST, says=says)
    assert (moved / "report.html").read_bytes() == before
    (tmp_path / "notes.html").write_text("<html>my own notes</html>")
    cli.refused("report", "second", "--out", "notes.html", *FAST,
                says="notes.html: holds a file that is not a probmut report")
    assert (tmp_path / "notes.html").read_text() == "<html>my own notes</html>"
    here = cli.ok("report", "--manifest", "second/manifest.toml", "--model", "syn", *FAST)
    assert here.splitlines()[-1] == "report: report.html"          # no run folder: here


def test_a_report_written_again_reads_its_verdicts_from_the_cache(cli, tmp_path,
                                                                  monkeypatch):
    """The verdicts' simulated blocks are kept beside the page (.probmut_cache): written
    again, the report simulates nothing and says the same; --no-cache and --no-verdicts
    keep nothing (--cache with --no-verdicts is refused); --cache DIR puts them there."""
    import probmut.recommend

    folder = write_run(tmp_path / "run", FULL_RUN)
    small = ["--sample", "5", "--bootstraps", "20", "--trials", "20", "--quiet"]
    first = cli.json("report", folder, *small)
    assert any((folder / ".probmut_cache").iterdir())

    def no_simulation(*args, **kwargs):
        raise AssertionError("a cached block was simulated again")

    monkeypatch.setattr(probmut.recommend, "_analyse_together", no_simulation)
    again = cli.json("report", folder, *small)
    assert [m["outcome"] for m in again["mutants"]] == [m["outcome"] for m in first["mutants"]]
    assert again["mutants"] == first["mutants"]
    with pytest.raises(AssertionError, match="simulated again"):
        cli("report", folder, *small, "--no-cache")
    monkeypatch.undo()
    elsewhere = tmp_path / "elsewhere"
    assert cli.json("report", folder, *small, "--cache", elsewhere)["mutants"] == first["mutants"]
    assert any(elsewhere.iterdir())
    cli.ok("report", folder, *small, "--no-verdicts", "--out", tmp_path / "nv" / "r.html")
    assert not (tmp_path / "nv" / ".probmut_cache").exists()
    cli.refused("report", folder, *small, "--no-verdicts", "--cache", elsewhere,
                says="--cache cannot apply with --no-verdicts: only the verdicts are cached")


def test_compare_says_which_outcomes_changed(cli, tmp_path):
    """`--compare OLD` (an earlier `probmut report --json`, or the page it wrote): the
    outcomes that changed, the mutants new (with their outcome) and gone, both scores
    with their intervals and mutant counts, in the text, the JSON and the page; the page
    being replaced can be compared with, with no --json saved beforehand. A document
    with a UTF-8 byte-order mark is read (issue 57: refused, while CSV and TOML files
    with one were read)."""
    folder = write_run(tmp_path / "run", FULL_RUN)
    earlier = json.loads(cli.ok("report", str(folder), *FAST, "--json"))
    page, score = folder / "report.html", dict(earlier["mutation_score"])
    earlier["mutants"][0]["outcome"] = "not settled"
    added = earlier["mutants"].pop(1)
    earlier["mutants"].append({"name": "gone_1", "outcome": "killed"})
    earlier["mutation_score"] |= {"mean": 0.25, "ci_low": 0.125, "ci_high": 0.375,
                                  "mutants": 7}
    old = tmp_path / "old.json"     # saved by an editor that writes a byte-order mark
    old.write_bytes(b"\xef\xbb\xbf" + json.dumps(earlier).encode())
    text = cli.ok("report", str(folder), *FAST, "--compare", str(old))
    first = earlier["mutants"][0]
    assert (f"compared with {old} (a report of syn, the same settings): 1 outcome changed, 3 "
            "the same, 1 new, 1 gone; mutation score 0.250 [0.125, 0.375] of 7 mutants then, "
            f"{score['mean']:.3f} [{score['ci_low']:.3f}, {score['ci_high']:.3f}] of 4 mutants "
            "now") in text
    now = next(line for line in text.splitlines() if line.startswith(f"  {first['name']}:"))
    assert now.startswith(f"  {first['name']}: not settled -> ")
    assert f"  {added['name']}: new, {added['outcome']}" in text
    assert "  gone_1: gone (was killed)" in text
    document = cli.json("report", folder, *FAST, "--compare", old)
    assert document["compare"]["changed"][0]["name"] == first["name"]
    assert document["compare"]["removed"] == [{"name": "gone_1", "before": "killed"}]
    assert document["compare"]["added"] == [{"name": added["name"], "now": added["outcome"]}]
    assert document["compare"]["score_before"]["mutants"] == 7
    shown = page.read_text()
    assert 'id="compare"' in shown and "gone_1" in shown and "new, <span" in shown
    # the page it replaces: its own data, nothing changed
    same = cli.ok("report", str(folder), *FAST, "--compare", str(page))
    assert "0 outcomes changed, 5 the same, 0 new, 0 gone" in same


def _compare_refused(cli, folder, old, *options, says):
    """``--compare OLD`` is refused in one line, before any analysis, naming ``says``."""
    return cli.refused("report", folder, *options, "--compare", old, says=says)


def test_compare_refuses_reports_whose_numbers_mean_other_things(cli, tmp_path):
    """Issue 56: against a report with another --sample, with --no-verdicts, of another
    model or another seed, the outcomes and the score differ by definition, not because
    the populations did: refused in one line that says what differs."""
    folder = write_run(tmp_path / "run", FULL_RUN)
    old = tmp_path / "old.json"
    old.write_text(cli.ok("report", str(folder), *FAST, "--json"))
    verdicts = [o for o in FAST if o != "--no-verdicts"]
    for argv, says in (
            ([*FAST, "--sample", "4"], "cannot be compared: --sample 5 then, 4 now"),
            ([*FAST, "--seed", "3"], "--seed 42 then, 3 now"),
            (verdicts, "outcomes from the decisions (--no-verdicts) then, verdicts now"),
            ([*FAST, "--criterion", "welch"], "--criterion deepcrime then, welch now")):
        line = _compare_refused(cli, folder, old, *argv, says=says)
        assert line.endswith("(--compare)")
    mnist = tmp_path / "mnist.json"
    mnist.write_text(json.dumps(json.loads(old.read_text()) | {"model": "mnist"}))
    _compare_refused(cli, folder, mnist, *FAST, says="a report of mnist, not of syn")


@pytest.mark.parametrize("case, says", [
    ("deep", "nested too deeply"),
    ("score of the wrong type", "its mutation_score is not a score with its interval"),
    ("mutants of the wrong type", "no list of mutants with their outcomes"),
    ("page of an older probmut", "a page without its data"),
    ("not JSON", "not a JSON document"),
    ("no file", "no such file"),
])
@pytest.mark.usefixtures("default_recursion_limit")
def test_a_hostile_compare_file_is_one_line(cli, tmp_path, case, says):
    """Issue 57: 2000-deep arrays (a RecursionError before), a mutation_score of the
    wrong type, ... each one line and exit 2, nothing written."""
    folder = write_run(tmp_path / "run", FULL_RUN)
    old = tmp_path / "old.json"
    document = {"model": "syn", "mutants": []}
    text = {"deep": "[" * 2000 + "]" * 2000,
            "score of the wrong type": json.dumps(document | {"mutation_score": "0.5"}),
            "mutants of the wrong type": json.dumps(document | {"mutants": 3}),
            "page of an older probmut": "<!DOCTYPE html><title>probmut report: syn</title>",
            "not JSON": "{", "no file": None}[case]
    if text is not None:
        old.write_text(text)
    _compare_refused(cli, folder, old, *FAST, says=says)
    assert not (folder / "report.html").exists()
