"""The report's page (probmut.report.sections, which renders a campaign's sections):
what it must say where a campaign is most informative (an unfinished or interrupted
run, a paired mutant's baseline, a symptom from another test, disagreements, next
steps, per-operator scores, the seed), that it is self-contained and escapes the text
of files; the page, the JSON and the text say the same. Runs come from the project's
own writers (tests/conftest.py: a synthetic run, an interrupted one). The page in a real
browser: tests/report/test_page_in_a_browser.py; the campaign's numbers:
tests/campaign/."""

import base64
import html
import html.parser
import json
import re
import shlex
from dataclasses import replace

import numpy as np
import pytest

from probmut.bagging import bagged_posteriors
from probmut.beta import prob_greater
from probmut.campaign import summarize_campaign
from probmut.io.populations import read_population
from probmut.report import draw_figures, figure_keys, render_html

from ..conftest import (
    CLI,
    FAST,
    FULL_RUN,
    RUN_LABELS,
    RUN_SETTINGS,
    interrupted_run,
    report_json,
    write_run,
    write_settings,
)


@pytest.fixture(scope="module")
def page_of(synthetic):
    """The page of the synthetic campaign, or of a variant of it with the same posteriors
    (its figures drawn once)."""
    figures = draw_figures(synthetic[1])
    return lambda campaign=synthetic[1]: render_html(campaign, figures=figures)


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
    assert (section.index("<th>verdict</th>") < section.index("<th>remarks</th>")
            < section.index(said))
    crashed = by_name["delete_training_data_30"]
    dropped = next(n for n in crashed.notes if "failed instance(s) 0 (crashed) dropped" in n)
    assert dropped in found.notes
    assert _row(page, "delete_training_data_30")[11] == "failed instance(s) 0 (crashed) dropped"
    section = _section(page, "delete_training_data_30")
    assert section.index("<th>verdict</th>") < section.index(html.escape(dropped))


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


def test_a_run_is_analysed_with_the_seed_it_recorded(tmp_path):
    """Issue 56: `probmut report RUN` uses the run's seed (train --seed, in
    .work/settings.json), not 42, so its score is the one a `--until-score` round computed
    on the same instances (probmut.train.until_score.assess, the rounds' own reading); the
    page and the text say whose seed it is. A seed given wins; no run: 42."""
    from probmut.train.until_score import assess

    folder = write_run(tmp_path / "run", FULL_RUN)
    write_settings(folder, RUN_SETTINGS)
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


def test_a_hand_written_manifests_unfinished_box_does_not_say_rerun_train(tmp_path):
    """Issue 56: targets in a manifest written by hand (no probmut train run here): the
    UNFINISHED box says to train the missing instances with the tool that wrote them."""
    folder = write_run(tmp_path / "run", FULL_RUN, targets=dict.fromkeys(FULL_RUN, 20))
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.status_lines()[0].startswith("UNFINISHED: 6 population(s) short")
    assert "train the missing instances with the tool that wrote them" in found.status_lines()[0]
    assert "rerun the same probmut train" not in render_html(found)
