"""The campaign report (probmut.campaign, probmut.report, `probmut report`): its numbers
and its page's HTML. The page in a real browser: tests/test_report_page.py.

The numbers are checked against independent references: the score of one mutant against
its bagged mixture's quantiles (SciPy), the joint draws' correlation against its exact
value, the monotone fit against SciPy's isotonic regression, the report's posteriors
against `probmut posterior`'s, a paired mutant's baseline and P(above the baseline)
against a computation of their own. Runs come from the project's own writers (a
synthetic run: population files, outcomes, manifest, rounds; an interrupted one) and
from the bundled data. The figures' texts are checked where matplotlib draws them: none
covers another, none is smaller than 9 CSS px at the page's size.
"""

import base64
import html.parser
import itertools
import json
import re
import shlex
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from probmut.bagging import PosteriorSettings, bagged_posteriors
from probmut.beta import prob_greater
from probmut.campaign import (
    summarize_campaign,
)
from probmut.io.populations import read_population
from probmut.report import draw_figures, figure_keys, render_html

from .conftest import (
    CLI,
    FULL_RUN,
    RUN_LABELS,
    interrupted_run,
    report_json,
    write_run,
)

FAST = PosteriorSettings(bootstraps=30, trials=30, sample=5)




@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A complete synthetic run and its campaign (with verdicts)."""
    folder = write_run(tmp_path_factory.mktemp("run"), FULL_RUN, crashed=("delete_training_data_30",))
    return folder, summarize_campaign(folder / "manifest.toml", settings=FAST, seed=3)


@pytest.fixture(scope="module")
def page_of(synthetic):
    """The page of the synthetic campaign, or of a variant of it with the same posteriors
    (its figures drawn once)."""
    figures = draw_figures(synthetic[1])
    return lambda campaign=synthetic[1]: render_html(campaign, figures=figures)


def test_a_complete_run_reports_everything_it_has(synthetic):
    folder, found = synthetic
    assert found.complete is None and not found.short   # the manifest records no targets
    assert found.status_lines()[0].startswith("completeness unknown: the manifest records no")
    by_name = {m.name: m for m in found.mutants}
    shuffle = by_name["data_shuffle_10"]
    assert shuffle.flags == ("equivalent",) and shuffle.outcome == "flagged"
    assert found.score.mutants == 4                      # the flagged mutant is left out
    assert [m.name for m in found.flagged] == ["data_shuffle_10"]
    assert found.curves[2].excluded == ("10",) and not found.curves[2].magnitudes
    strong = by_name["delete_training_data_50"]
    assert strong.verdict["verdict"] == "killed" and strong.outcome == "killed"
    crashed = by_name["delete_training_data_30"]
    assert (crashed.count.instances, crashed.usable, crashed.symptoms.crashed) == (12, 11, 1)
    assert by_name["neurons_freezing_0.1"].paired and strong.inputs is not None
    assert strong.symptoms.symptom == "significant accuracy change"
    assert found.data["name"] == "synthetic" and found.inputs is not None
    assert any("failed instance(s) 0 (crashed) dropped" in note for note in found.notes)


def test_an_unfinished_run_is_reported_unfinished(tmp_path):
    """A run whose manifest records its targets (probmut train, before training), stopped
    with one population short and one not written yet: unfinished on the page, in the
    text and in the JSON, the missing mutant not analysed."""
    sizes = FULL_RUN | {"delete_training_data_50": 7}
    del sizes["neurons_freezing_0.1"]
    folder = write_run(tmp_path, sizes, targets=dict.fromkeys(FULL_RUN, 12))
    out = tmp_path / "report.html"
    document = report_json(folder, out, "--sample", "5", "--bootstraps", "30", "--trials",
                            "30", "--no-verdicts")
    assert document["complete"] is False
    short = {p["name"]: p for p in document["populations"] if not p["complete"]}
    assert set(short) == {"delete_training_data_50", "neurons_freezing_0.1"}
    assert (short["delete_training_data_50"]["instances"],
            short["delete_training_data_50"]["target"]) == (7, 12)
    missing = next(m for m in document["mutants"] if m["name"] == "neurons_freezing_0.1")
    assert (missing["status"], missing["outcome"], missing["instances"]) == (
        "missing", "not analysed", 0)
    assert document["counts"]["not analysed"] == 1
    page = out.read_text()
    assert 'class="status unfinished"' in page and "UNFINISHED" in page
    assert "delete_training_data_50: 7 of 12 instances" in page
    text = CLI.ok("report", folder, "--sample", "5", "--bootstraps", "30", "--trials", "30",
                  "--no-verdicts", "--out", out, "--quiet")
    assert "UNFINISHED: 2 population(s) short" in text and "complete:" not in text



def test_a_coverage_result_beside_the_run_is_shown(tmp_path):
    """`probmut coverage RUN --json > RUN/coverage.json`: its numbers on the page."""
    from probmut.coverage import CoverageStudy, LayerValues, instance_coverage

    rng = np.random.default_rng(1)
    train = np.maximum(rng.normal(0.5, 1, (200, 3)), 0)
    test = np.maximum(rng.normal(0.5, 1, (RUN_LABELS.size, 3)), 0)

    def layer(values):
        return [LayerValues(values, values.min(1), values.max(1))]

    coverage = CoverageStudy("dense (layer 4, 3 neurons)", (2,), (instance_coverage(
        "0", rng.normal(0, 1, (200, 3)), train, test, layer(train), layer(test), 2),),
        RUN_LABELS.size, {"seed": 0})
    folder = write_run(tmp_path, FULL_RUN)
    (folder / "coverage.json").write_text(coverage.to_json())
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.coverage["idc"]["mean"] == coverage.idc(2).mean()
    page = render_html(found)
    assert '<section id="coverage">' in page and "IDC (m = 2)" in page
    assert f"mean {coverage.idc(2).mean():.4f}" in page


def test_too_few_instances_for_the_sample_size_is_said_not_hidden(tmp_path):
    folder = write_run(tmp_path, FULL_RUN)
    found = summarize_campaign(folder / "manifest.toml", verdicts=False)     # k = 20 > 12 instances
    assert found.score is None and found.counts["not analysed"] == 4   # and 1 flagged
    assert any("fewer than the sample size k = 20" in n for n in found.notes)
    assert "no mutant could be analysed" in render_html(found)


# --- the page ---------------------------------------------------------------------------------

class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.references = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        for key in ("src", "href", "action", "data", "poster"):
            if key in attrs:
                self.references.append((tag, key, attrs[key]))


def test_the_page_is_self_contained(synthetic, page_of):
    """Nothing to fetch: images are SVG data URIs, links point into the page, no
    stylesheet or script files; every link has its target; every id is unique."""
    folder, found = synthetic
    page = page_of()
    links = _Links()
    links.feed(page)
    assert "link" not in links.tags and "iframe" not in links.tags
    for tag, key, value in links.references:
        assert (tag, key) in {("img", "src"), ("a", "href")}, (tag, key)
        assert value.startswith("data:image/svg+xml;base64," if tag == "img" else "#"), value
        if tag == "img":  # an SVG that fetches nothing either
            svg = base64.b64decode(value.partition(",")[2]).decode()
            assert not re.search(r'(href|src)="(?!#)', svg), svg[:200]
    assert len(links.ids) == len(set(links.ids))
    assert {v[1:] for _, k, v in links.references if k == "href"} <= set(links.ids)
    images = sum(1 for tag, _, _ in links.references if tag == "img")
    assert images == len(figure_keys(found))       # the operators' curves and the overview
    # each analysed mutant's figure: drawn by the page's script from the data it embeds
    data = json.loads(re.search(r'<script type="application/json" id="probmut-data">(.*?)'
                                r"</script>", page, re.S)[1])
    analysed = [str(i) for i, m in enumerate(found.mutants) if m.posterior is not None]
    assert sorted(data["figures"]) == sorted(analysed)
    assert len(re.findall(r'<div class="posterior" data-figure="', page)) == len(analysed)
    assert data["campaign"] == json.loads(json.dumps(found.record()))


def test_text_from_files_is_escaped(tmp_path):
    folder = write_run(tmp_path, FULL_RUN)
    manifest = (folder / "manifest.toml").read_text().replace(
        'description = "a synthetic run"', 'description = "<script>alert(1)</script>"')
    (folder / "manifest.toml").write_text(manifest)
    page = render_html(summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False))
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page



# --- what the page must say where a campaign is most informative -----------------------------

def _section(page: str, name: str) -> str:
    """The HTML of a mutant's section."""
    start = page.index(f'<h3>{name} <span class="tag')
    return page[start:page.index("</section>", start)]


def _row(page: str, name: str) -> list[str]:
    """The cells of a mutant's row of the table, as text."""
    start = page.index('<table id="mutant-table"')
    row = page[page.index(f">{name.replace('_', '_<wbr>')}</a>", start):]
    row = row[:row.index("</tr>")]
    return [html.unescape(re.sub(r"<[^>]+>", "", cell))
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", "<td>" + row)]


def test_an_interrupted_run_is_reported_with_its_header_only_population(tmp_path):
    """Ctrl-C leaves populations holding only their header row: "0 of 12" in the status,
    never an error; the rest of the campaign is analysed, the crashed instance counted."""
    folder = interrupted_run(tmp_path / "run")
    out = tmp_path / "report.html"
    document = report_json(folder, out, "--sample", "5", "--bootstraps", "30", "--trials",
                           "30", "--no-verdicts")
    assert document["complete"] is False
    by_name = {m["name"]: m for m in document["mutants"]}
    empty = by_name["delete_training_data_50"]
    assert (empty["status"], empty["outcome"], empty["instances"], empty["target"]) == (
        "empty", "not analysed", 0, 12)
    assert by_name["neurons_freezing_0.1"]["status"] == "missing"
    assert by_name["delete_training_data_10"]["posterior"] is not None
    crashed = next(p for p in document["populations"] if p["name"] == "delete_training_data_30")
    assert crashed["failures"] == {"crashed": 1}
    page = out.read_text()
    assert "delete_training_data_50: 0 of 12 instances (no instance yet)" in page
    assert "neurons_freezing_0.1: 0 of 12 instances (no file yet)" in page
    assert "delete_training_data_30: 1 crashed" in page
    assert "no instance yet (the file holds only its header" in _section(
        page, "delete_training_data_50")
    # A healthy population with no instance yet: a page, every mutant not analysed.
    folder = write_run(tmp_path / "early", dict.fromkeys(FULL_RUN, 0),
                       targets=dict.fromkeys(FULL_RUN, 12))
    document = report_json(folder, tmp_path / "early.html", "--no-verdicts")
    assert document["counts"]["not analysed"] == 4 and document["mutation_score"] is None
    assert any("healthy.csv: no instance yet" in note for note in document["notes"])


def test_a_paired_mutant_shows_the_baseline_it_uses(synthetic, page_of):
    """A model-level mutant is compared with the healthy instances it derives from, and
    so is its baseline (healthy against itself, paired: the same instances on both
    sides): the page and the JSON show that one beside P(above the baseline), which
    is computed against it; the summary shows both baselines."""
    folder, found = synthetic
    healthy = read_population(folder / "healthy.csv", name="healthy")
    paired = bagged_posteriors(healthy, [], FAST, paired=True, seed=3).baseline
    unpaired = bagged_posteriors(healthy, [], FAST, seed=3).baseline
    assert paired.mean != unpaired.mean
    mutant = next(m for m in found.mutants if m.name == "neurons_freezing_0.1")
    p = mutant.posterior
    assert mutant.baseline.mean == paired.mean == found.paired_baseline.mean
    assert found.baseline.mean == unpaired.mean
    assert p.p_above_baseline == pytest.approx(prob_greater(p.alpha, p.beta, paired.alpha,
                                                            paired.beta), abs=1e-12)
    curve = next(c for c in found.curves if c.mutation == "neurons_freezing")
    assert curve.baseline == paired.mean
    document = json.loads(found.to_json())
    row = next(m for m in document["mutants"] if m["name"] == "neurons_freezing_0.1")
    assert row["baseline"]["mean"] == document["paired_baseline"]["mean"] == paired.mean
    page = page_of()
    assert (f"P(above the baseline) {p.p_above_baseline:.3f} (the baseline: healthy vs "
            f"healthy, paired by instance id, mean {paired.mean:.4f})") in page
    assert f"posterior mean {unpaired.mean:.4f}" in page
    assert f"posterior mean {paired.mean:.4f}" in page
    # issue 56: the paired baseline is the same for every campaign, and the page says why
    assert not paired.kill_counts.any() and paired.mean == pytest.approx(1 / (FAST.trials + 2))
    assert (f"which the test never kills: Beta(1, N + 1), mean 1/(N + 2) for N = {FAST.trials} "
            "trials, the same for every campaign") in html.unescape(page)


def test_a_symptom_from_another_test_than_the_kill_test_is_said_so(synthetic, page_of):
    """Issue 56: neurons_freezing_0.1 read "not killed" (the kill test, p 0.051) beside
    "significant accuracy change" (a paired t-test, p 0.016) with no word that these are
    two tests. The row's symptom names its test, and where the two disagree the remarks
    say which two they are."""
    folder, found = synthetic
    m = next(m for m in found.mutants if m.name == "neurons_freezing_0.1")
    change = m.symptoms.accuracy_change
    assert change.test == "paired t-test"
    differs = replace(m, symptoms=replace(m.symptoms, accuracy_change=replace(
        change, significant=True, p_value=0.016)), test=replace(m.test, killed=False,
                                                               p_value=0.051))
    said = ("two tests: the symptom's paired t-test (p 0.016) is significant, the kill "
            "test's (DeepCrime test, p 0.051) does not kill")
    assert said in differs.remarks
    page = page_of(replace(found, mutants=tuple(differs if x is m else x
                                                for x in found.mutants)))
    row = _row(page, "neurons_freezing_0.1")
    assert said in row[11] and row[12].endswith("(paired t-test p 0.016)")
    assert "paired t-test p 0.016: the symptom's test, not the kill test" in html.unescape(
        _section(page, "neurons_freezing_0.1"))
    agreeing = replace(differs, test=replace(differs.test, killed=True))
    assert agreeing.two_tests is None


def test_disagreements_and_warnings_sit_beside_the_verdict(synthetic, page_of):
    """Where the single test on the whole populations, the bagged decision and a settled
    verdict do not say the same, the row and the section say so; a mutant's own
    warnings (here: its crashed instance dropped) are there too, not only in the notes."""
    folder, found = synthetic
    by_name = {m.name: m for m in found.mutants}
    weak = by_name["delete_training_data_10"]
    assert weak.decision == "not killed"
    conflicted = replace(weak, test=replace(weak.test, killed=True),
                         verdict=weak.verdict | {"verdict": "not settled"})
    assert conflicted.conflict == "test killed, decision not killed, verdict not settled"
    contradicted = replace(weak, test=replace(weak.test, killed=False),
                           verdict=weak.verdict | {"verdict": "killed"})
    assert contradicted.conflict == "test not killed, decision not killed, verdict killed"
    unsettled = replace(weak, test=replace(weak.test, killed=False),
                        verdict=weak.verdict | {"verdict": "not settled"})
    assert unsettled.conflict is None      # the outcome says "not settled" already
    mutants = tuple(conflicted if m is weak else m for m in found.mutants)
    page = page_of(replace(found, mutants=mutants))
    said = "disagree: test killed, decision not killed, verdict not settled"
    assert said in _row(page, "delete_training_data_10")[11]
    section = _section(page, "delete_training_data_10")
    assert section.index("<th>verdict</th>") < section.index("<th>remarks</th>") < section.index(said)
    crashed = by_name["delete_training_data_30"]
    dropped = next(n for n in crashed.notes if "failed instance(s) 0 (crashed) dropped" in n)
    assert dropped in found.notes
    assert _row(page, "delete_training_data_30")[11] == "failed instance(s) 0 (crashed) dropped"
    section = _section(page, "delete_training_data_30")
    assert section.index("<th>verdict</th>") < section.index(html.escape(dropped))


def test_each_mutants_warning_of_too_few_instances_is_its_own(mnist_dc):
    """DeepCrime's 20 vs 20 with k = 20: every mutant's own remarks carry the warning."""
    for m in mnist_dc.mutants:
        assert any("20 instances for samples of k = 20" in note for note in m.notes), m.notes


def test_an_underflowing_p_value_reads_below_1e_300(synthetic, page_of):
    folder, found = synthetic
    strong = next(m for m in found.mutants if m.name == "delete_training_data_50")
    tiny = replace(strong, test=replace(strong.test, p_value=0.0))
    page = page_of(replace(found, mutants=tuple(tiny if m is strong else m
                                                    for m in found.mutants)))
    assert _row(page, "delete_training_data_50")[6] == "< 1e-300"
    assert "p &lt; 1e-300, effect" in _section(page, "delete_training_data_50")


def test_each_operator_has_its_counts_and_its_score(synthetic, page_of):
    """Per operator (PIT's per-package view): the mutants' outcomes and the score of its
    own analysed, unflagged mutants, whose mean is exactly the average of their
    mixtures' means; page, JSON and text say the same."""
    folder, found = synthetic
    rows = found.operators()
    assert [r["mutation"] for r in rows] == ["delete_training_data", "neurons_freezing",
                                             "data_shuffle"]
    document = json.loads(found.to_json())
    page = page_of()
    table = page[page.index('id="operator-table"'):]
    text = str(found)
    for row, shown in zip(rows, document["operators"], strict=True):
        mine = [m for m in found.mutants if m.mutation == row["mutation"]]
        assert row["counts"] == {o: sum(m.outcome == o for m in mine) for o in row["counts"]}
        assert row["mutants"] == len(mine) == sum(row["counts"].values())
        scored = [m.posterior for m in mine if m.posterior is not None and not m.flags]
        score = row["score"]
        if not scored:
            assert score is None and shown["score"] is None
            continue
        exact = np.mean([(p.kill_counts.mean() + 1) / (p.trials + 2) for p in scored])
        assert score.mean == pytest.approx(exact, abs=1e-14)
        assert score.ci_low < score.mean < score.ci_high
        assert shown["score"]["mean"] == score.mean and shown["counts"] == row["counts"]
        numbers = f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]"
        assert numbers in table and numbers in text
    assert "data_shuffle" in table and "none analysed" in table


def test_next_steps_name_the_instances_that_settle_and_the_command(synthetic, page_of):
    """Every unsettled or unanalysed mutant with the instances per side that would
    settle it (recommend's `needed`), and the `probmut train` command that trains them
    on with the settings the run recorded, which probmut train's parser takes as such:
    `--instances` for a run of a number of instances (train refuses to go on in rounds
    from one), the run's own rounds with a larger `--max-instances` for a run in rounds."""
    from probmut.cli.main import build_parser

    folder, found = synthetic
    steps = found.next_steps()
    assert steps.command is None and "no .work/settings.json" in steps.no_command
    unsettled = [m for m in found.mutants if m.outcome == "not settled"]
    assert unsettled and [s.name for s in steps.steps] == [m.name for m in unsettled]
    for step, m in zip(steps.steps, unsettled, strict=True):
        assert step.needed == m.verdict["needed"]
    run = {"dataset": "digits", "architecture": "digits_cnn", "seed": 7, "stack": 1,
           "config": {"epochs": 3, "batch_size": 16, "learning_rate": 0.01, "patience": None},
           "data": {"option": "dataset"}}
    with_settings = replace(found, run_settings=run, mutants=tuple(
        replace(m, status="missing", study=None, verdict=None)
        if m.name == "delete_training_data_50" else m for m in found.mutants))
    steps = with_settings.next_steps()
    missing = next(s for s in steps.steps if s.name == "delete_training_data_50")
    assert (missing.outcome, missing.needed) == ("not analysed", 5)   # k: no target recorded
    args = build_parser().parse_args(shlex.split(steps.command)[1:])
    assert (args.command, args.dataset, args.architecture, args.seed, args.epochs,
            args.batch_size, args.learning_rate, args.until_settled) == (
        "train", "digits", "digits_cnn", 7, 3, 16, 0.01, False)
    assert sorted(args.mutation) == sorted(
        f"{m}:{','.join(s.magnitude for s in steps.steps if s.mutation == m and s.needed)}"
        for m in {s.mutation for s in steps.steps if s.needed})
    assert args.instances >= max(s.needed for s in steps.steps if s.needed)
    from probmut.train.rounds import rounds_plan

    plan = rounds_plan("--until-settled", FAST, round=4, max_instances=12, certainty=0.9)
    in_rounds = replace(with_settings, run_settings=run | {"rounds": plan})
    again = build_parser().parse_args(shlex.split(in_rounds.next_steps().command)[1:])
    assert (again.until_settled, again.round_size, again.certainty, again.sample,
            again.bootstraps, again.trials, again.instances) == (True, 4, 0.9, 5, 30, 30, None)
    assert again.max_instances > 12 and again.max_instances % 4 == 0
    assert again.max_instances >= max(s.needed for s in steps.steps if s.needed)
    # the run's folder by its full path: the command works from any folder
    assert args.name == "syn" and args.out == folder.resolve() and steps.run_from is None
    page = page_of(with_settings)
    assert html.escape(steps.command) in page and 'id="next-steps"' in page
    assert "run it from any folder" in page
    assert steps.command in str(with_settings)
    # data from files: the option the run recorded, even for a path spelled like a data set;
    # a relative path resumes only as given, so from the folder it is relative to (a cd)
    from_files = replace(with_settings, run_settings=run | {"dataset": "./digits",
                                                            "data": {"option": "data"}})
    steps = from_files.next_steps()
    args = build_parser().parse_args(shlex.split(steps.command)[1:])
    assert (args.data, args.dataset, args.threads) == ("./digits", None, 1)
    # the threads a run recorded, without which a resume is refused (results depend on them)
    threaded = replace(with_settings, run_settings=run | {"threads": 4})
    assert build_parser().parse_args(shlex.split(threaded.next_steps().command)[1:]).threads == 4
    assert steps.run_from is None and "the folder the run was started in" in steps.note
    (folder.parent / "digits").mkdir(exist_ok=True)
    steps = from_files.next_steps()
    assert steps.run_from == str(folder.parent.resolve()) and steps.note is None
    assert steps.shell == f"cd {shlex.quote(steps.run_from)} && {steps.command}"
    assert html.escape(steps.shell) in page_of(from_files)


def test_alike_next_steps_are_one_row(synthetic, page_of):
    """Two mutants with the same outcome, instances, need and reason: one row listing
    both, in the text and on the page (issue 56: 13 alike rows with an empty "needed")."""
    folder, found = synthetic
    missing = ("delete_training_data_10", "delete_training_data_50")
    alike = replace(found, mutants=tuple(
        replace(m, status="missing", study=None, verdict=None, count=replace(m.count, instances=0,
                                                                              exists=False))
        if m.name in missing else m for m in found.mutants))
    steps = alike.next_steps()
    groups = [g for g in steps.groups() if g[0].name in missing]
    assert [[s.name for s in g] for g in groups] == [list(missing)]
    assert f"2 mutants ({', '.join(missing)}): not analysed, 0 instances per side" in str(steps)
    page = page_of(alike)
    start = page.index('id="next-steps"')
    table = page[start:page.index("</table>", start)]
    assert table.count("<tr>") == 1 + len(steps.groups())
    row = _row(page, "delete_training_data_10")
    assert row[1] == "no file yet" and "short" not in row[11]       # no target: not short


def _write_settings(folder, settings: dict):
    (folder / ".work").mkdir(exist_ok=True)
    (folder / ".work" / "settings.json").write_text(json.dumps(settings))


RUN_SETTINGS = {"dataset": "digits", "architecture": "digits_cnn", "seed": 7, "stack": 1,
                "config": {"epochs": 3, "batch_size": 16, "learning_rate": 0.01,
                           "patience": None}, "data": {"name": "digits", "option": "dataset"}}


def test_a_run_is_analysed_with_the_seed_it_recorded(tmp_path):
    """Issue 56: `probmut report RUN` uses the run's seed (train --seed, in
    .work/settings.json), not 42, so its score is the one a `--until-score` round computed
    on the same instances (probmut.train.until_score.assess, the rounds' own reading); the
    page and the text say whose seed it is. A seed given wins; no run: 42."""
    from probmut.train.until_score import assess

    folder = write_run(tmp_path / "run", FULL_RUN)
    _write_settings(folder, RUN_SETTINGS)
    out = tmp_path / "r.html"
    document = report_json(folder, out, "--sample", "5", "--bootstraps", "30", "--trials",
                           "30", "--no-verdicts")
    assert (document["seed"], document["seed_source"]) == (7, "the run's")
    healthy = read_population(folder / "healthy.csv", name="healthy")
    scored = {m["name"]: (read_population(folder / m["file"], name=m["name"]), m["paired"])
              for m in document["mutants"] if not m["flags"]}
    rounds = assess(healthy, scored, FAST, seed=7).score
    score = document["mutation_score"]
    assert (score["mean"], score["ci_low"], score["ci_high"]) == (
        rounds.mean, rounds.ci_low, rounds.ci_high)
    assert html.escape("7 (the run's: train --seed") in out.read_text()
    assert "· seed 7 (the run's)</p>" in out.read_text()          # the header says it too
    given = report_json(folder, out, "--sample", "5", "--bootstraps", "30", "--trials",
                        "30", "--no-verdicts", "--seed", "42")
    assert (given["seed"], given["seed_source"]) == (42, "given")
    assert given["mutation_score"] != score
    plain = report_json(write_run(tmp_path / "plain", FULL_RUN), tmp_path / "p.html",
                        "--sample", "5", "--bootstraps", "30", "--trials", "30", "--no-verdicts")
    assert (plain["seed"], plain["seed_source"]) == (42, "the default")


def test_a_run_in_rounds_is_analysed_as_its_rounds_were(tmp_path):
    """A run trained in rounds with `--sample 5 --bootstraps 30 --trials 30` read its
    verdicts and score with them; its report, with no analysis option given, reads its
    mutants with them too (recorded in .work/settings.json), and says so; an option given
    sets the analysis itself."""
    from probmut.train.rounds import rounds_plan

    folder = write_run(tmp_path / "run", FULL_RUN)
    plan = rounds_plan("--until-score", FAST, until_score=0.1, round=10, max_instances=200)
    _write_settings(folder, RUN_SETTINGS | {"rounds": plan})
    out = tmp_path / "r.html"
    document = report_json(folder, out, "--no-verdicts")
    assert document["analysis_source"] == "the run's"
    assert (document["analysis"]["sample"], document["analysis"]["bootstraps"]) == (5, 30)
    assert document["analysis"] == report_json(
        folder, out, "--sample", "5", "--bootstraps", "30", "--trials", "30",
        "--no-verdicts")["analysis"]
    given = report_json(folder, out, "--sample", "6", "--no-verdicts")
    assert (given["analysis_source"], given["analysis"]["sample"]) == ("given", 6)
    assert given["analysis"]["bootstraps"] == 100      # the defaults, not the run's
    _write_settings(folder, RUN_SETTINGS)              # not trained in rounds
    plain = report_json(folder, out, "--no-verdicts")
    assert (plain["analysis_source"], plain["analysis"]["sample"]) == ("the default", 20)


@pytest.mark.usefixtures("default_recursion_limit")
def test_a_run_of_probmut_0_1_is_said_so_not_no_settings(tmp_path):
    """Issue 57: a run of probmut 0.1 has a .work/settings.json (its architecture called
    "model"): the next steps and the status box say it is a 0.1 run, which 0.2 does not
    resume (the words of probmut.io.workdir), never "no .work/settings.json"; its seed
    is read still."""
    folder = write_run(tmp_path / "run", FULL_RUN, targets=dict.fromkeys(FULL_RUN, 20))
    old = {k: v for k, v in RUN_SETTINGS.items() if k not in ("architecture", "stack", "data")}
    _write_settings(folder, old | {"model": "digits_cnn", "seed": 5})
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert (found.seed, found.seed_source) == (5, "the run's")
    assert "a run started by probmut 0.1" in found.next_steps().no_command
    assert "no .work/settings.json" not in found.next_steps().no_command
    assert "probmut 0.2 does not resume a run of probmut 0.1" in found.status_lines()[0]
    _write_settings(folder, RUN_SETTINGS)          # a run of probmut train: rerun it
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.status_lines()[0].endswith("rerun the same probmut train command to finish them")
    (folder / ".work" / "settings.json").write_text("[" * 2000 + "]" * 2000)   # hostile
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert "nested too deeply" in found.next_steps().no_command and found.seed == 42


def test_a_hand_written_manifests_unfinished_box_does_not_say_rerun_train(tmp_path):
    """Issue 56: targets in a manifest written by hand (no probmut train run here): the
    UNFINISHED box says to train the missing instances with the tool that wrote them."""
    folder = write_run(tmp_path / "run", FULL_RUN, targets=dict.fromkeys(FULL_RUN, 20))
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.status_lines()[0].startswith("UNFINISHED: 6 population(s) short")
    assert "train the missing instances with the tool that wrote them" in found.status_lines()[0]
    assert "rerun the same probmut train" not in render_html(found)


# --- the figures --------------------------------------------------------------------------------

def _texts(fig) -> list:
    """Every text matplotlib draws in ``fig``: (text, box in pixels, size in points)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = [*fig.texts, *(t for legend in fig.legends for t in legend.get_texts())]
    for ax in fig.axes:
        found += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.get_legend():
            found += ax.get_legend().get_texts()
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            found += [label for place, label in zip(axis.get_majorticklocs(),
                                                    axis.get_majorticklabels(), strict=True)
                      if low - 1e-9 <= place <= high + 1e-9]
    return [(t.get_text(), t.get_window_extent(renderer), t.get_fontsize()) for t in found
            if t.get_visible() and t.get_text().strip()]


def check_texts(fig) -> None:
    """No text of the figure covers another or leaves the figure, and none is under 9 CSS
    px where the page shows the figure at its own size (1 pt = 4/3 px)."""
    texts = _texts(fig)
    assert texts
    frame = fig.bbox
    for text, box, size in texts:
        assert size * 4 / 3 >= 9, (text, size)
        assert (box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1
                and box.y1 <= frame.y1 + 1), (text, box, frame)
    for (a, first, _), (b, second, _) in itertools.combinations(texts, 2):
        across = min(first.x1, second.x1) - max(first.x0, second.x0)
        up = min(first.y1, second.y1) - max(first.y0, second.y0)
        assert across <= 0.5 or up <= 0.5, (a, b, first, second)



def test_no_text_of_a_figure_covers_another(mnist_campaign, mnist_dc, synthetic):
    """Every figure of the report (operators with numbers and with long category names,
    posteriors of every shape, the overview), as matplotlib lays out its texts."""
    import matplotlib.pyplot as plt

    from probmut.plots import plot_campaign, plot_kill_curve, plot_posterior

    drawings = [lambda: plot_campaign(mnist_campaign), lambda: plot_campaign(synthetic[1])]
    drawings += [lambda c=c, legend=legend: plot_kill_curve(c, legend=legend)
                 for c in mnist_campaign.curves for legend in (False, True)]
    posteriors = (*mnist_campaign.mutants[::4], *mnist_dc.mutants[::5],
                  *(m for m in synthetic[1].mutants if m.posterior is not None))
    drawings += [lambda m=m, legend=legend: plot_posterior(m.study, m.posterior.name,
                                                           title="", legend=legend)
                 for m in posteriors for legend in (False, True)]
    for draw in drawings:
        fig = draw()
        check_texts(fig)
        assert fig.get_size_inches()[0] * 96 <= 358   # a phone shows it unshrunk
        plt.close(fig)


def test_a_u_shaped_posterior_keeps_its_curve_and_interval_in_view(mnist_dc):
    """The bundled DeepCrime populations (20 vs 20, k = 20): every resample kills always
    or never, and the Beta summary's density runs to infinity at 0 and 1. The density
    axis is capped at the mixture's height, so the mixture reaches most of it, the capped
    summary is said, and the interval bar spans the interval."""
    import matplotlib.pyplot as plt

    from probmut.plots import plot_posterior

    m = next(m for m in mnist_dc.mutants if m.name == "change_label_3.12")
    p = m.posterior
    assert p.alpha < 0.1 and p.beta < 0.1
    fig = plot_posterior(m.study, p.name, title="")
    ax = fig.axes[0]
    parts = {line.get_gid(): line for line in ax.lines}
    top = ax.get_ylim()[1]
    assert max(parts["bagged-mixture"].get_ydata()) > 0.8 * top
    assert "axis capped" in " ".join(t.get_text() for t in ax.texts)
    assert list(parts["interval"].get_xdata()) == [p.ci_low, p.ci_high]
    # issue 56: the mean's line stops below the "axis capped" label, never across it
    fig.canvas.draw()
    label = next(t for t in ax.texts if "axis capped" in t.get_text()).get_window_extent()
    mean = parts["mean"].get_window_extent(fig.canvas.get_renderer())
    assert label.x0 < mean.x0 < label.x1 and mean.y1 < label.y0
    plt.close(fig)


def test_the_overview_tells_outcomes_by_shape_and_keeps_its_axis_near(synthetic):
    """Issue 56: the overview marked outcomes by colour only, and for 300 mutants was one
    figure 4844 px tall with its axis at the bottom. Each outcome has its own marker, and
    the overview is one figure per operator, 40 mutants at most (each with its axis)."""
    import types

    import matplotlib.pyplot as plt

    from probmut.campaign.summary import OUTCOME_COLORS, OUTCOME_MARKERS
    from probmut.plots import plot_campaign
    from probmut.report.figures import OVERVIEW_ROWS, overview_parts

    folder, found = synthetic
    fig = plot_campaign(found)
    by_colour = {matplotlib_colour(c): o for o, c in OUTCOME_COLORS.items()}
    marked = {(by_colour[matplotlib_colour(line.get_color())], line.get_marker())
              for line in fig.axes[0].lines if line.get_marker() not in ("None", None, "")}
    outcomes = {m.outcome for m in found.mutants if m.posterior is not None}
    assert marked == {(o, OUTCOME_MARKERS[o]) for o in outcomes} and len(outcomes) >= 2
    plt.close(fig)
    assert len(set(OUTCOME_MARKERS.values())) == len(OUTCOME_MARKERS)
    many = types.SimpleNamespace(mutants=[types.SimpleNamespace(mutation=op) for op in
                                          ["a"] * 95 + ["b"] * 3])
    parts = overview_parts(many)
    assert [len(p) for p in parts] == [32, 32, 31, 3]
    assert all(len(p) <= OVERVIEW_ROWS for p in parts)
    assert sorted(i for p in parts for i in p) == list(range(98))


def matplotlib_colour(colour) -> tuple:
    from matplotlib.colors import to_rgb

    return tuple(round(c, 3) for c in to_rgb(colour))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux")
def test_drawing_workers_draw_the_same_figures_as_one_process():
    """In a process with no other Python thread (the command line), the figures are drawn
    by forked workers, started before the campaign is computed (as the command line
    does) or after (the engine's native threads started), and are the figures one
    process draws, byte for byte. (A test runner's process has threads of its own, where
    the page's figures are drawn in-process: this runs in a fresh one.)"""
    script = "\n".join([
        "from probmut.campaign import summarize_campaign",
        "from probmut.report import Drawing, figure_keys",
        "with Drawing(jobs=2) as drawing:",
        "    assert drawing.pool is not None",
        "    campaign = summarize_campaign(model='mnist_dc', verdicts=False)",
        "    drawing.draw(campaign, ('operator',))",
        "    drawing.draw(campaign, ('overview',))",
        "    before = drawing.wait()",
        "with Drawing(jobs=2) as drawing:",
        "    drawing.draw(campaign)",
        "    after = drawing.wait()",
        "with Drawing(jobs=1) as drawing:",
        "    assert drawing.pool is None",
        "    drawing.draw(campaign)",
        "    one = drawing.wait()",
        "print(len(one), len(figure_keys(campaign)), before == one, after == one)"])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.stdout.split() == ["8", "8", "True", "True"], done.stderr
