"""A campaign of a manifest (probmut.campaign.analyse): the bundled data's posteriors
equal `probmut posterior`'s, the same numbers for any number of threads, completeness
against the run's targets."""

import json

import numpy as np
import pytest

from probmut.bagging import PosteriorSettings, bagged_posteriors
from probmut.campaign import (
    summarize_campaign,
)

from ..conftest import FULL_RUN, write_run

FAST = PosteriorSettings(bootstraps=30, trials=30, sample=5)


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
    again = summarize_campaign(model="mnist_dc", verdicts=False, jobs=1)
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

    monkeypatch.setattr(probmut.recommend, "_analyse", no_simulation)
    again = summarize_campaign(folder / "manifest.toml", settings=FAST, seed=5, cache=cache)
    assert [m.verdict for m in again.mutants] == [m.verdict for m in first.mutants]
    assert all(m.verdict is not None for m in first.mutants if m.populations is not None)
