"""Training until the mutation score is settled (probmut.train.until_score,
`train --until-score`), and the parts of the score's variance it plans with
(probmut.campaign.score_shares).

The loop runs on a synthetic backend (accuracies drawn per population, no TensorFlow):
which populations a round trains, the stop at the width and at the cap, the round
records, and resuming after an interruption. The end-to-end run through the real
trainer and command is the docs' example (docs/score.md, tests/test_docs.py).
"""

import json
import math

import numpy as np
import pytest

from probmut.bagging import PosteriorSettings, summarize
from probmut.campaign import posterior_draws, score_shares, summarize_campaign
from probmut.errors import ProbmutError
from probmut.report import render_html
from probmut.train.operators import parse_mutations
from probmut.train.options import UntilScore
from probmut.train.until_score import (
    LEAST_BLOCKS,
    MARGIN,
    PILOT,
    pilot_targets,
    train_until_score,
    width_error,
)
from probmut.train.work import HEALTHY, InstanceResult, instance_seed

from .test_rounds import SyntheticBackend, job

LABELS = np.arange(2000) % 10
#: Mean accuracy of each population (spread 0.01): a clear mutant, two near the kill
#: test's boundary (at k = 5), and a paired one derived from its healthy instance.
MEANS = {HEALTHY: 0.90, "delete_training_data_90": 0.85, "change_label_20": 0.8915,
         "change_label_40": 0.889}
CLEAR, PAIRED = "delete_training_data_90", "neurons_freezing_0.5"
UNPAIRED = {"change_label_20", "change_label_40"}
MUTATIONS = [m for text in ("delete_training_data:90", "change_label:20,40",
                            "neurons_freezing:0.5") for m in parse_mutations(text)]
ANALYSIS = PosteriorSettings(bootstraps=40, trials=40, sample=5)


class Backend(SyntheticBackend):
    """The campaign of MEANS; the paired mutant is its healthy instance's accuracy minus a
    drop of 0.009 with a spread of its own."""

    def _result(self, assignment):
        seed = instance_seed(0, assignment.instance, assignment.population)
        draw = lambda population: np.random.default_rng(  # noqa: E731
            instance_seed(0, assignment.instance, population)).normal(MEANS[population], 0.01)
        if assignment.population in MEANS:
            accuracy = draw(assignment.population)
        else:
            accuracy = draw(HEALTHY) - 0.009 + np.random.default_rng(seed).normal(0, 0.006)
        correct = np.zeros(LABELS.size, dtype=bool)
        right = np.random.default_rng(seed).permutation(LABELS.size)[:round(accuracy * 2000)]
        correct[right] = True
        self.trained.append((assignment.population, assignment.instance))
        return InstanceResult(assignment.population, assignment.instance, seed,
                              float(correct.mean()), correct, 0.0)


class Data:
    task = "classification"
    y_test = LABELS
    y_train = LABELS

    def provenance(self):
        return {"name": "synthetic", "train": 0, "validation": 0, "test": LABELS.size,
                "fingerprint": "none", "source": "synthetic"}


@pytest.fixture(autouse=True)
def fewer_blocks(monkeypatch, request):
    """The runs here decide their stops on at most 4 times B resamples, not 16: what they
    check does not depend on it, and their rounds are cheaper (the decision's own test
    keeps 16)."""
    if "monte_carlo_error" not in request.node.name:
        monkeypatch.setattr("probmut.train.until_score.MOST_BLOCKS", 4)


def _run(out, backend, width=0.28, max_instances=80):
    return train_until_score(job(out, backend, Data()), MUTATIONS, UntilScore(
        analysis=ANALYSIS, width=width, round_size=5, max_instances=max_instances))


def _ids(path):
    return [int(line.split(",")[0]) for line in path.read_text().splitlines()[1:]]


def test_rounds_train_what_weighs_on_the_score_and_stop_at_the_width(tmp_path, capsys):
    backend = Backend()
    report = _run(tmp_path, backend)
    document = json.loads((tmp_path / "rounds.json").read_text())
    rounds = document["rounds"]
    assert document["rounds"] == json.loads(json.dumps(report.rounds))
    assert report.to_dict()["final"] == document["final"]
    assert rounds[0]["instances"] == pilot_targets([m.population for m in MUTATIONS], 5, 80)
    # It stops at the first round whose interval is at most the width beyond its
    # Monte-Carlo error (decided on at least twice B resamples, more where the width is
    # within its margin of standard errors of it).
    decided = [r["decision"] for r in rounds]
    margins = [d["width"] + MARGIN * d["width_se"] for d in decided]
    assert margins[-1] <= 0.28 < min(margins[:-1]) and document["final"]["reached"]
    assert all(d["width_se"] > 0 and d["resamples"] % ANALYSIS.bootstraps == 0 for d in decided)
    assert min(d["resamples"] for d in decided) >= LEAST_BLOCKS * ANALYSIS.bootstraps
    assert max(d["resamples"] for d in decided) > LEAST_BLOCKS * ANALYSIS.bootstraps
    assert len(rounds) >= 3 and rounds[-1]["next"] == {}
    for before, after in zip(rounds, rounds[1:], strict=False):
        # Each round trains what the one before planned, each population at most doubled:
        # first the populations whose next instances reduce the score's variance most per
        # instance (an unpaired mutant's part v reduced by 5 more: v / (n + 5) each). The
        # clear mutant (no variance to reduce) is never among them.
        assert after["instances"] == before["instances"] | before["next"]
        assert all(n <= 2 * before["instances"][p] for p, n in before["next"].items())
        assert CLEAR not in before["next"] and before["shares"][CLEAR] == 0
        gain = {p: before["shares"][p] / (n + 5) for p, n in before["instances"].items()
                if p not in (HEALTHY, PAIRED) and n < 80}
        trained = [gain[p] for p in gain if p in before["next"]]
        assert all(v <= min(trained, default=1) for p, v in gain.items()
                   if p not in before["next"])
    assert len(_ids(tmp_path / f"{CLEAR}.csv")) == PILOT * ANALYSIS.sample
    assert any(UNPAIRED & set(r["next"]) for r in rounds)
    # The healthy population holds every instance a paired mutant derives from.
    assert all(r["instances"][HEALTHY] >= r["instances"][PAIRED] for r in rounds)
    assert set(_ids(tmp_path / f"{PAIRED}.csv")) <= set(_ids(tmp_path / "healthy.csv"))
    # Each round's record: the instances in all, the score and its interval.
    for r in rounds:
        assert r["spent"] == sum(r["instances"].values())
        s = r["score"]
        assert s["ci_low"] < s["mean"] < s["ci_high"] and s["width"] == s["ci_high"] - s["ci_low"]
        assert s["mutants"] == len(MUTATIONS) and sum(r["shares"].values()) == pytest.approx(1)
    table = (tmp_path / "rounds.txt").read_text().splitlines()
    assert table[0].split()[:4] == ["round", "healthy", "instances", "score"]
    assert len(table) == len(rounds) + 3 and table[-1] == document["final"]["message"]
    err = capsys.readouterr().err
    first = rounds[0]["instances"]
    assert f"round 1: {sum(first.values())} instances (healthy {first[HEALTHY]}); score" in err
    assert err.rstrip().endswith(" resamples) settled at 0.28; stops")
    # The manifest's targets are the last round's; the report reads the same score.
    campaign = summarize_campaign(tmp_path / "manifest.toml", settings=ANALYSIS, seed=1,
                                  verdicts=False)
    assert campaign.complete is True
    assert campaign.score.ci_low == rounds[-1]["score"]["ci_low"]
    assert campaign.score.mean == rounds[-1]["score"]["mean"]
    assert campaign.score_rounds == tuple(rounds)
    assert f"trained until the score was settled (train --until-score): {len(rounds)} rounds" \
        in str(campaign)
    page = render_html(campaign)
    assert f"trained until the score was settled: {len(rounds)} rounds" in page
    section = page[page.index('id="score-rounds"'):]
    assert section[:section.index("</details>")].count("<tr><td>") == len(rounds)
    assert len(backend.trained) == len(set(backend.trained)) == report.trained
    assert report.trained == rounds[-1]["spent"]


def test_stops_at_the_cap_and_resumes_to_the_same_rounds(tmp_path):
    run = lambda out, backend: _run(out, backend, width=0.05, max_instances=40)  # noqa: E731
    reference = run(tmp_path / "whole", Backend())
    final, last = reference.final, reference.rounds[-1]
    assert not final["reached"] and last["next"] == {} and last["score"]["width"] > 0.05
    assert "not settled at 0.05 (decided on " in final["message"]
    assert "resamples): no population below 40 instances would narrow it" in final["message"]
    needed = last["healthy_for_width"]
    assert (f"about {needed} healthy instances would bring it to 0.05" if needed else
            "no number of healthy instances would") in final["message"]
    # Every population whose instances weigh on the score is at the cap; the clear one
    # (no variance to reduce) was not trained past its pilot.
    assert all(n == 40 for p, n in last["instances"].items()
               if p != CLEAR and last["shares"][p] > 0)
    assert last["instances"][CLEAR] == PILOT * ANALYSIS.sample
    # Interrupted in the middle of a round, the same command trains only what is missing
    # and replays the same rounds.
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "cut", Backend(interrupt_after=77))
    resumed_backend = Backend()
    resumed = run(tmp_path / "cut", resumed_backend)
    assert resumed.rounds == reference.rounds and resumed.final == reference.final
    assert resumed.resumed == 77 and len(resumed_backend.trained) == reference.trained - 77
    for name in ("rounds.json", "rounds.txt", "healthy.csv", "change_label_20.csv"):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()


class Crashing(Backend):
    """change_label_20's first 8 instances crash."""

    def _result(self, assignment):
        if assignment.population == "change_label_20" and assignment.instance < 8:
            self.trained.append((assignment.population, assignment.instance))
            return InstanceResult(assignment.population, assignment.instance, 0, math.nan, None,
                                  0.0, status="crashed", error="RuntimeError: boom")
        return super()._result(assignment)


@pytest.mark.filterwarnings("ignore:.*failed instance")
def test_failed_instances_stop_the_rounds_with_a_clear_error(tmp_path):
    report = _run(tmp_path, Crashing())
    assert len(report.failures) == 8 and report.rounds == []  # stops before reading a score
    with pytest.raises(ProbmutError, match=r"^change_label_20: 2 usable instances, fewer than "
                       r"k = 5: its failed instances leave no score to read \(--retry-failed"):
        _run(tmp_path, Backend())  # resumed: the crashes are recorded, not retried


def test_score_shares_add_up_to_the_variance_of_the_score_draws():
    """The parts add up to the variance of the score's joint draws (what its interval is
    made of), and the N trials' binomial noise goes to the fixed part, not to instances."""
    rng = np.random.default_rng(5)
    settings = PosteriorSettings(bootstraps=2000, trials=50)
    healthy_effect = rng.normal(0, 0.08, 2000)  # resample b's healthy resample, shared
    rates = [np.clip(p + slope * healthy_effect + rng.normal(0, 0.05, 2000), 0, 1)
             for p, slope in ((0.3, 1.0), (0.6, 1.5), (0.8, 0.5))]
    rows = [summarize(f"m{i}", rng.binomial(50, r), settings) for i, r in enumerate(rates)]
    values = rng.normal(0, 1, 60)  # every population's spread and size alike: halves
    shares = score_shares(rows, values, [values] * 3, [False] * 3)
    draws = posterior_draws(rows, 200_000, seed=1).mean(axis=1)
    # the variance of a variance from 2000 resamples: about 3% standard error
    assert shares.variance() == pytest.approx(draws.var(), rel=0.1)
    assert shares.healthy > 2 * sum(shares.mutants) > 0
    # a paired mutant carries all of its own variance (a pair is one instance of each)
    paired = score_shares(rows, values, [values] * 3, [False, True, False])
    assert paired.mutants[1] == pytest.approx(2 * shares.mutants[1])
    assert paired.variance() == pytest.approx(shares.variance())
    # kill rates that no resample moves: only the trials' noise, which no instance reduces
    flat = [summarize(f"f{i}", rng.binomial(50, p, 2000), settings) for i, p in
            enumerate((0.3, 0.6))]
    still = score_shares(flat, values, [values] * 2, [False, False])
    noise = posterior_draws(flat, 200_000, seed=2).mean(axis=1).var()
    assert still.fixed == pytest.approx(noise, rel=0.1)
    assert still.healthy + sum(still.mutants) < 0.1 * noise


@pytest.mark.parametrize("argv, says", [
    (["--until-score", "--instances", "5", "--mutation", "change_label:20"],
     "train either a number of instances or until the score is settled, not both "
     "(--instances)"),
    (["--until-score", "--until-settled", "--mutation", "change_label:20"],
     "train either until each mutant's verdict is settled or until the mutation score is, "
     "not both (--until-score)"),
    (["--until-score"], "training until the score is settled needs at least one mutation "
                        "(--until-score)"),
    (["--until-score", "1.2", "--mutation", "change_label:20"],
     "argument --until-score: must be a finite number in (0, 1), got 1.2"),
    (["--until-score", "0", "--mutation", "change_label:20"],
     "argument --until-score: must be a finite number in (0, 1), got 0"),
    (["--until-score", "--sample", "30", "--max-instances", "20", "--mutation",
      "change_label:20"], "the sample size k = 30 is more than the maximum of 20 instances: "
                          "no score could be read (--sample)"),
])
def test_until_score_refuses_contradictions(cli, tmp_path, argv, says):
    cli.refused("train", "--out", tmp_path / "x", *argv, says=says)
    assert not (tmp_path / "x").exists()


def test_a_resume_with_another_width_is_refused_and_writes_nothing(tmp_path):
    """Another width plans other rounds: resumed with it, a run rewrote its files with the
    instances of a smaller round (issue 57). Refused, naming the option; the same
    options go on from the last round and train nothing more once it has ended."""
    _run(tmp_path, Backend())
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(ProbmutError, match="other options: until_score 0.28 before, 0.3 now"):
        _run(tmp_path, Backend(), width=0.3)
    again = Backend()
    assert _run(tmp_path, again).trained == 0 and again.trained == []
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == files


def test_the_stop_is_decided_beyond_the_widths_monte_carlo_error():
    """The interval's width moves with the analysis seed (its B resamples): at seeds 0
    and 1 this campaign's widths, 0.315 and 0.401, straddle 0.358, so a stop at the first
    width under it depended on the seed. The decision pools more resamples while the width
    is within its Monte-Carlo margin of the width asked for, and both seeds decide alike,
    on 16 times B."""
    from probmut.population import Population
    from probmut.train.until_score import MOST_BLOCKS, assess, decide

    rng = np.random.default_rng(3)
    healthy = Population.from_values(rng.normal(0.9, 0.01, 25))
    scored = {f"m{i}": (Population.from_values(rng.normal(0.9 - drop, 0.01, 10)), False)
              for i, drop in enumerate((0.0, 0.006, 0.012))}
    found = {seed: assess(healthy, scored, ANALYSIS, seed=seed) for seed in (0, 1)}
    asked = (found[0].width + found[1].width) / 2
    assert found[0].width < asked - 0.04 and found[1].width > asked + 0.04
    decided = {seed: decide(a, healthy, scored, ANALYSIS, seed=seed, asked=asked)
               for seed, a in found.items()}
    assert [d.settles for d in decided.values()] == [False, False]
    assert [d.resamples for d in decided.values()] == [MOST_BLOCKS * ANALYSIS.bootstraps] * 2
    # the pooled widths agree within their errors, and the error shrank with the pool
    assert abs(decided[0].width - decided[1].width) < 2 * np.hypot(
        decided[0].width_se, decided[1].width_se)
    assert all(d.width_se < width_error(list(found[s].posteriors), 0.95, s) / 2
               for s, d in decided.items())
