"""A campaign of a manifest (probmut.campaign.analyse): the bundled data's posteriors
equal `probmut posterior`'s, the same numbers for any number of threads, completeness
against the run's targets, everything a complete run has, and the settings a run
recorded (its analysis in rounds, a run of probmut 0.1)."""

import json

import numpy as np
import pytest

from probmut.bagging import bagged_posteriors
from probmut.campaign import summarize_campaign

from ..conftest import FAST, FULL_RUN, RUN_SETTINGS, report_json, write_run, write_settings


@pytest.mark.filterwarnings("ignore::probmut.bagging.SmallPopulationWarning")
def test_a_campaign_of_deepcrimes_own_populations(mnist_dc, manifest):
    """DeepCrime's 20 vs 20 MNIST instances: the report's posteriors are `probmut
    posterior`'s (same seed, same kill counts), the score's mean is the average of the
    posterior means (moment-matched fit), the decided share the share killed."""
    posts = [m.posterior for m in mnist_dc.mutants]
    assert len(posts) == 20 and mnist_dc.complete is None and not mnist_dc.flagged
    mutation = manifest.mutation("mnist_dc", "delete_training_data")
    from probmut.io.populations import read_population

    study = bagged_posteriors(read_population(mutation.healthy),
                              [read_population(f) for f in mutation.files], seed=42)
    ours = [m.posterior for m in mnist_dc.mutants if m.mutation == "delete_training_data"]
    for mine, theirs in zip(ours, study.populations[1:], strict=True):
        assert np.array_equal(mine.kill_counts, theirs.kill_counts)
        assert mine.ratio == theirs.ratio
    score = mnist_dc.score
    assert score.mean == pytest.approx(np.mean([p.mean for p in posts]), abs=1e-12)
    assert score.decided == np.mean([p.killed for p in posts]) == score.killed / 20
    assert score.ci_low < score.mean < score.ci_high
    assert mnist_dc.counts["killed"] + mnist_dc.counts["not killed"] == 20
    document = json.loads(mnist_dc.to_json())
    assert {"mean", "ci_low", "ci_high", "decided"} <= set(document["mutation_score"])
    assert document["complete"] is None and len(document["mutants"]) == 20  # no targets


def test_same_seed_same_campaign_for_any_number_of_threads(mnist_dc):
    again = summarize_campaign(model="mnist_dc", verdicts=False, threads=1)
    assert again.to_json() == mnist_dc.to_json()
    other = summarize_campaign(model="mnist_dc", verdicts=False, seed=7)
    assert other.score.ci_low != mnist_dc.score.ci_low


def test_results_display_as_html_tables_in_a_notebook(mnist_dc):
    study = mnist_dc.mutants[0].study
    assert study._repr_html_().startswith("<table") and "healthy" in study._repr_html_()
    page = mnist_dc._repr_html_()
    assert "<table" in page and "change_label_3.12" in page and "mutation score" in page


def test_without_targets_completeness_is_unknown_never_complete(tmp_path):
    """A manifest without targets (the bundled data, one written by hand) cannot say
    whether a population is short: unknown, in the text and the JSON (null)."""
    folder = write_run(tmp_path, FULL_RUN | {"delete_training_data_10": 9})
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.complete is None and not found.short
    assert "the populations hold 9 to 12 instances" in found.status_lines()[0]
    assert json.loads(found.to_json())["complete"] is None


def test_a_run_trained_until_settled_is_complete_at_its_last_rounds_targets(tmp_path):
    """Mutants stop at different sizes when their verdicts settle: each round records its
    targets in the manifest, so a settled mutant is not unfinished."""
    sizes = FULL_RUN | {"delete_training_data_50": 6}
    verdict = {"verdict": "killed", "p_killed": 0.99, "needed": 6, "instances": 6,
               "message": "settled"}
    rounds = [{"round": 1, "instances": dict.fromkeys(FULL_RUN, 6),
               "verdicts": {"delete_training_data_50": verdict}},
              {"round": 2, "instances": FULL_RUN | {"delete_training_data_50": 6}, "verdicts": {}}]
    folder = write_run(tmp_path, sizes, rounds=rounds, targets=rounds[-1]["instances"])
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.complete is True
    strong = next(m for m in found.mutants if m.name == "delete_training_data_50")
    assert strong.rounds == ({"round": 1, "instances": 6} | verdict,)
    write_run(tmp_path, sizes | {"healthy": 10, "neurons_freezing_0.1": 10}, rounds=rounds,
              targets=rounds[-1]["instances"])
    assert not summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False).complete


def test_verdicts_from_a_cache_are_the_verdicts_computed(tmp_path, monkeypatch):
    """summarize_campaign(cache=...): the second campaign reads every verdict's blocks
    (the simulation patched to fail) and gives the same verdicts."""
    import probmut.recommend
    from probmut.io.cache import Cache

    folder = write_run(tmp_path / "run", FULL_RUN)
    cache = Cache(tmp_path / "cache")
    first = summarize_campaign(folder / "manifest.toml", settings=FAST, seed=5, cache=cache)
    assert any((tmp_path / "cache").iterdir())

    def no_simulation(*args, **kwargs):
        raise AssertionError("a cached block was simulated again")

    monkeypatch.setattr(probmut.recommend, "_analyse_together", no_simulation)
    again = summarize_campaign(folder / "manifest.toml", settings=FAST, seed=5, cache=cache)
    assert [m.verdict for m in again.mutants] == [m.verdict for m in first.mutants]
    assert all(m.verdict is not None for m in first.mutants if m.populations is not None)


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


def test_each_mutants_warning_of_too_few_instances_is_its_own(mnist_dc):
    """DeepCrime's 20 vs 20 with k = 20: every mutant's own remarks carry the warning."""
    for m in mnist_dc.mutants:
        assert any("20 instances for samples of k = 20" in note for note in m.notes), m.notes


def test_a_run_in_rounds_is_analysed_as_its_rounds_were(tmp_path):
    """A run trained in rounds with `--sample 5 --bootstraps 30 --trials 30` read its
    verdicts and score with them; its report, with no analysis option given, reads its
    mutants with them too (recorded in .work/settings.json), and says so; an option given
    sets the analysis itself."""
    from probmut.train.rounds import rounds_plan

    folder = write_run(tmp_path / "run", FULL_RUN)
    plan = rounds_plan("--until-score", FAST, until_score=0.1, round=10, max_instances=200)
    write_settings(folder, RUN_SETTINGS | {"rounds": plan})
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
    write_settings(folder, RUN_SETTINGS)              # not trained in rounds
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
    write_settings(folder, old | {"model": "digits_cnn", "seed": 5})
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert (found.seed, found.seed_source) == (5, "the run's")
    assert "a run started by probmut 0.1" in found.next_steps().no_command
    assert "no .work/settings.json" not in found.next_steps().no_command
    assert "probmut 0.2 does not resume a run of probmut 0.1" in found.status_lines()[0]
    write_settings(folder, RUN_SETTINGS)          # a run of probmut train: rerun it
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert found.status_lines()[0].endswith("rerun the same probmut train command to finish them")
    (folder / ".work" / "settings.json").write_text("[" * 2000 + "]" * 2000)   # hostile
    found = summarize_campaign(folder / "manifest.toml", settings=FAST, verdicts=False)
    assert "nested too deeply" in found.next_steps().no_command and found.seed == 42
