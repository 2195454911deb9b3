"""Training until the decision is settled (probmut.train.rounds, `train --until-settled`).

The loop's logic runs on a synthetic backend (accuracies drawn per population, no
TensorFlow): rounds, stopping, the healthy population following the mutants, paired
mutants following healthy ids, the round records, and resuming after an interruption.
One end-to-end run on digits goes through the real trainer and command.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from probmut.bagging import PosteriorSettings
from probmut.seeds import seed_of
from probmut.sequential import CERTAINTY, settle_threshold
from probmut.train.models import TrainConfig
from probmut.train.operators import parse_mutations
from probmut.train.options import UntilSettled
from probmut.train.rounds import FUTILITY, train_until_settled
from probmut.train.run import Job, RunOptions
from probmut.train.work import HEALTHY, InstanceResult, RunSettings, instance_seed

LABELS = np.zeros(2000, dtype=np.int64)
#: Mean accuracy per population: a clear mutant, an ambiguous one, a paired one.
MEANS = {HEALTHY: 0.90, "delete_training_data_90": 0.85, "change_label_20": 0.8876}
SPREAD = 0.01


class SyntheticBackend:
    """Instances whose accuracy is drawn from each population's normal distribution
    (paired mutants: their healthy instance's accuracy minus a small drop)."""

    def __init__(self, interrupt_after: int | None = None):
        self.interrupt_after = interrupt_after
        self.trained = []

    def map_unordered(self, fn, calls):
        for index, (assignments, _, _) in enumerate(calls):
            results = []
            for assignment in assignments:
                if self.interrupt_after is not None and len(self.trained) == self.interrupt_after:
                    raise KeyboardInterrupt
                results.append(self._result(assignment))
            yield index, results

    def _result(self, assignment):
        seed = instance_seed(0, assignment.instance, assignment.population)
        if assignment.population in MEANS:
            accuracy = np.random.default_rng(seed).normal(MEANS[assignment.population], SPREAD)
        else:  # model-level: derived from healthy instance i
            healthy = np.random.default_rng(instance_seed(0, assignment.instance, HEALTHY))
            accuracy = healthy.normal(MEANS[HEALTHY], SPREAD) - 0.02
        correct = np.zeros(LABELS.size, dtype=bool)
        correct[:round(accuracy * LABELS.size)] = True
        self.trained.append((assignment.population, assignment.instance))
        return InstanceResult(assignment.population, assignment.instance, seed,
                              float(correct.mean()), correct, 0.0)


class SyntheticData:
    """What the run needs of a data set, without data."""

    task = "classification"
    y_test = LABELS
    y_train = np.arange(2000) % 10

    def provenance(self):
        return {"name": "synthetic", "train": 0, "validation": 0, "test": LABELS.size,
                "fingerprint": "none", "source": "synthetic"}


SETTINGS = RunSettings("synthetic", "none", TrainConfig(epochs=1, batch_size=1))
MUTATIONS = [m for text in ("delete_training_data:90", "change_label:20",
                            "neurons_freezing:0.5")
             for m in parse_mutations(text)]
ANALYSIS = PosteriorSettings(bootstraps=30, trials=30, sample=5)


def job(out, backend, data=None) -> Job:
    """A run of SETTINGS into ``out`` on ``backend``, its verdicts seeded with 1."""
    return Job(dataclasses.replace(SETTINGS, seed=1), Path(out), backend,
               data or SyntheticData(), "synthetic", RunOptions(progress=False))


def _run(out, backend, capsys=None, mutations=MUTATIONS, **options):
    mode = UntilSettled(analysis=ANALYSIS, round_size=5, max_instances=20) if not options \
        else UntilSettled(**options)
    return train_until_settled(job(out, backend), mutations, mode)


def _ids(path):
    return [int(line.split(",")[0]) for line in Path(path).read_text().splitlines()[1:]]


def test_rounds_stop_settled_mutants_and_healthy_follows(tmp_path, capsys):
    backend = SyntheticBackend()
    report = _run(tmp_path, backend)
    rounds = json.loads((tmp_path / "rounds.json").read_text())
    assert rounds == json.loads(json.dumps({"looks": report.looks, "max_instances": 20,
                                            "rounds": report.rounds, "final": report.final}))
    assert report.to_dict()["rounds"] == report.rounds  # the command's JSON: the run's and these
    first = rounds["rounds"][0]
    assert first["instances"][HEALTHY] == 5
    # Every verdict is told the plan (looks at 5, 10, 15 and 20 instances per side) and
    # records p_killed with its Monte-Carlo error and the threshold it had to clear.
    assert rounds["looks"] == [5, 10, 15, 20]
    thresholds = {n: settle_threshold(n, [5, 10, 15, 20]) for n in (5, 10, 15, 20)}
    assert thresholds[5] == thresholds[20] > CERTAINTY  # one threshold over the plan's looks
    for record in rounds["rounds"]:
        for verdict in record["verdicts"].values():
            assert verdict["threshold"] == thresholds[verdict["instances"]]
            assert verdict["simulations"] >= 100
            p = verdict["p_killed"]
            assert verdict["p_killed_se"] == pytest.approx(
                np.sqrt(p * (1 - p) / verdict["simulations"]))
    # The clear mutant is settled killed within two rounds and trains no more.
    settled = [r["round"] for r in rounds["rounds"]
               if r["verdicts"].get("delete_training_data_90", {}).get("verdict") == "killed"]
    assert settled and settled[0] <= 2
    assert len(_ids(tmp_path / "delete_training_data_90.csv")) == 5 * settled[0]
    assert all("delete_training_data_90" not in r["verdicts"]
               for r in rounds["rounds"][settled[0]:])
    # The ambiguous one stops, not settled, before the cap once settling by the cap is out
    # of reach (a chance under FUTILITY); the healthy population follows the last mutant.
    final = rounds["final"]["change_label_20"]
    assert final["verdict"] == "not settled" and final["instances"] < 20
    assert final["reach"] < FUTILITY and "Training stops: the chance" in final["message"]
    assert all(r["verdicts"]["change_label_20"]["reach"] >= FUTILITY
               for r in rounds["rounds"] if r["round"] * 5 < final["instances"])
    assert "predicted probability" in final["message"]
    assert len(_ids(tmp_path / "healthy.csv")) == 20
    # The paired mutant is derived from healthy instances: never more, the same ids.
    paired = _ids(tmp_path / "neurons_freezing_0.5.csv")
    assert paired == list(range(len(paired))) and len(paired) <= 20
    assert [r["instances"][HEALTHY] for r in rounds["rounds"]] == [5, 10, 15, 20]
    table = (tmp_path / "rounds.txt").read_text()
    assert "KILLED" in table.splitlines()[settled[0]] and "change_label_20: not settled" in table
    assert f"threshold {thresholds[5]:.3g}" in table.splitlines()[1]
    assert "round 1: healthy 5;" in capsys.readouterr().err
    # Each instance was trained once.
    assert len(backend.trained) == len(set(backend.trained)) == report.trained


def test_a_rerun_with_fewer_instances_never_shrinks_a_run(tmp_path):
    """Rerunning a 4-instance run with 2 rewrote healthy.csv to 2 rows and the manifest's
    targets to 2 (issue 44): it is refused, saying how to resume or go elsewhere, and the
    files stay as they were; rounds (whose resume replays smaller rounds) are held to
    their maximum instead."""
    from probmut.errors import ProbmutError
    from probmut.train.run import run_populations

    def run(instances, **options):
        return run_populations(SETTINGS, MUTATIONS[:1], instances, tmp_path, SyntheticBackend(),
                               SyntheticData(), name="synthetic", progress=False, **options)

    run(4)
    files = {p: p.read_bytes() for p in tmp_path.glob("*.*") if p.is_file()}
    with pytest.raises(ProbmutError, match=f"{tmp_path}: healthy holds 4 finished instances, "
                                           "up to id 3, more than the 2 asked for; a rerun keeps "
                                           "what is done: ask for 4 or more"):
        run(2)
    assert {p: p.read_bytes() for p in tmp_path.glob("*.*") if p.is_file()} == files
    run(3, most=4)  # a replayed round
    with pytest.raises(ProbmutError, match="more than the 3 asked for") as refused:
        run(3, most=3)
    assert refused.value.option == "max_instances"
    assert run(4).counts == {HEALTHY: 4, "delete_training_data_90": 4}


class OneDiverges(SyntheticBackend):
    """change_label_20's instance 6 diverges (recorded, not counted): its second round
    has 9 usable instances."""

    def _result(self, assignment):
        result = super()._result(assignment)
        if (assignment.population, assignment.instance) == ("change_label_20", 6):
            result = dataclasses.replace(result, status="diverged")
        return result


def test_a_round_short_of_its_target_is_one_more_look_of_the_plan(tmp_path):
    """A verdict on 9 instances where the plan looks at 10: recommend refuses a plan
    without the pilot's size (issue 44), so the round adds its look, a stricter plan."""
    with pytest.warns(UserWarning, match="failed instance"):
        report = _run(tmp_path, OneDiverges())
    second = report.rounds[1]["verdicts"]["change_label_20"]
    assert second["instances"] == 9 and second["verdict"] != "too few instances"
    assert second["threshold"] == settle_threshold(9, [5, 9, 10, 15, 20])
    assert second["threshold"] > settle_threshold(9, [5, 10, 15, 20])


def test_resume_after_an_interruption_gives_the_same_rounds(tmp_path):
    reference = _run(tmp_path / "whole", SyntheticBackend())
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "cut", SyntheticBackend(interrupt_after=23))
    records = sorted((tmp_path / "cut" / ".work").rglob("*.npz"))
    before = {p: p.stat().st_mtime_ns for p in records}
    resumed_backend = SyntheticBackend()
    resumed = _run(tmp_path / "cut", resumed_backend)
    assert (resumed.rounds, resumed.final) == (reference.rounds, reference.final)
    assert resumed.counts == reference.counts and resumed.resumed == 23
    assert len(resumed_backend.trained) == reference.trained - 23
    assert {p: p.stat().st_mtime_ns for p in records} == before  # not retrained
    for name in ("rounds.json", "rounds.txt", "healthy.csv", "change_label_20.csv"):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()


class Watching(SyntheticBackend):
    """Before every unit it trains, the population files must hold at least as many
    instances as they ever did: a resume never writes fewer than are done."""

    def __init__(self, out, **kwargs):
        super().__init__(**kwargs)
        self.out, self.most = Path(out), {}

    def map_unordered(self, fn, calls):
        for csv in self.out.glob("*.csv"):
            rows = len(_ids(csv))
            assert rows >= self.most.get(csv.name, 0), f"{csv.name} shrank"
            self.most[csv.name] = rows
        yield from super().map_unordered(fn, calls)


def _files(out):
    return {p.name: p.read_bytes() for p in Path(out).iterdir() if p.is_file()}


def test_a_resume_goes_on_from_its_last_round_and_never_shrinks_the_files(tmp_path):
    """Interrupted after its first rounds, the run goes on from rounds.json's last round:
    it neither replays smaller rounds (which rewrote the files with fewer instances,
    issue 57) nor trains a finished instance again, and ends as the uninterrupted run."""
    reference = _run(tmp_path / "whole", SyntheticBackend())
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "cut", SyntheticBackend(interrupt_after=40))
    watching = Watching(tmp_path / "cut")
    watching.most = {p.name: len(_ids(p)) for p in (tmp_path / "cut").glob("*.csv")}
    resumed = _run(tmp_path / "cut", watching)
    assert (resumed.rounds, resumed.final) == (reference.rounds, reference.final)
    assert len(watching.trained) == reference.trained - 40
    assert _files(tmp_path / "cut") == _files(tmp_path / "whole")
    again = Watching(tmp_path / "cut")
    assert _run(tmp_path / "cut", again).trained == 0 and again.trained == []
    assert _files(tmp_path / "cut") == _files(tmp_path / "whole")


@pytest.mark.parametrize("change, says", [
    (dict(certainty=0.6), "certainty 0.95 before, 0.6 now"),
    (dict(analysis=dataclasses.replace(ANALYSIS, sample=4)), "analysis.sample 5 before, 4 now"),
    (dict(round_size=4), "round 5 before, 4 now"),
    (dict(max_instances=15), "max_instances 20 before, 15 now"),
])
def test_a_resume_with_other_round_options_is_refused_and_writes_nothing(tmp_path, change,
                                                                         says):
    """Another certainty, k, round size or a smaller cap decides other rounds: resumed
    with them, a run ended at other targets than its instances done and rewrote its files
    and rounds with fewer (issue 57). It is refused, naming each option that differs."""
    from probmut.errors import ProbmutError

    options = dict(analysis=ANALYSIS, round_size=5, max_instances=20, certainty=CERTAINTY)
    _run(tmp_path, SyntheticBackend())
    files = _files(tmp_path)
    with pytest.raises(ProbmutError, match=f"holds a run trained in rounds with other "
                                           f"options: {says}; they decide") as refused:
        _run(tmp_path, SyntheticBackend(), **(options | change))
    assert refused.value.option == "out" and _files(tmp_path) == files


def test_a_larger_cap_trains_the_unsettled_mutants_on(tmp_path):
    """The next steps of a run stopped at its cap (or by futility) are the same command
    with a larger --max-instances: the mutants not settled go on from where they stopped,
    the settled ones stay as they are, nothing is trained twice, and the plan recorded is
    the new one."""
    from probmut.io.workdir import read_settings

    first = _run(tmp_path, SyntheticBackend())
    unsettled = [stem for stem, v in first.final.items()
                 if v["verdict"] not in ("killed", "not killed")]
    settled = [stem for stem in first.final if stem not in unsettled]
    assert unsettled and settled
    before = {p.name: len(_ids(p)) for p in tmp_path.glob("*.csv")}
    backend = SyntheticBackend()
    more = _run(tmp_path, backend, analysis=ANALYSIS, round_size=5, max_instances=40)
    assert more.rounds[:len(first.rounds)] == first.rounds and len(more.rounds) > len(first.rounds)
    trained = {population for population, _ in backend.trained}
    assert trained and not trained & set(settled)
    assert len(backend.trained) == len(set(backend.trained))
    after = {p.name: len(_ids(p)) for p in tmp_path.glob("*.csv")}
    assert all(after[name] >= n for name, n in before.items())
    assert all(after[f"{stem}.csv"] > before[f"{stem}.csv"] for stem in unsettled)
    assert read_settings(tmp_path)["rounds"]["max_instances"] == 40


def test_a_run_of_a_number_of_instances_is_not_continued_in_rounds(tmp_path):
    """Its first round would be smaller than the instances done."""
    from probmut.errors import ProbmutError
    from probmut.train.run import run_populations

    run_populations(SETTINGS, MUTATIONS[:1], 8, tmp_path, SyntheticBackend(), SyntheticData(),
                    name="synthetic", progress=False)
    files = _files(tmp_path)
    with pytest.raises(ProbmutError, match="holds a run of a number of instances, not trained "
                                           "in rounds: train in rounds into another"):
        _run(tmp_path, SyntheticBackend())
    with pytest.raises(ProbmutError, match="holds a run trained in rounds "
                                           r"\(--until-settled\): resume it with the same"):
        _run(tmp_path / "rounds", SyntheticBackend())
        run_populations(SETTINGS, MUTATIONS[:1], 20, tmp_path / "rounds", SyntheticBackend(),
                        SyntheticData(), name="synthetic", progress=False)
    assert _files(tmp_path) == files
    # a run of probmut 0.2.0 recorded no plan: without its rounds.json, it was no run in
    # rounds (and with one, it is not continued as a run of a number of instances)
    settings = tmp_path / ".work" / "settings.json"
    recorded = json.loads(settings.read_text())
    settings.write_text(json.dumps({k: v for k, v in recorded.items() if k != "rounds"}))
    with pytest.raises(ProbmutError, match="holds a run of a number of instances"):
        _run(tmp_path, SyntheticBackend())
    (tmp_path / "rounds.json").write_text('{"rounds": [], "final": {}}')
    with pytest.raises(ProbmutError, match=r"holds a run trained in rounds \(probmut 0.2.0\)"):
        run_populations(SETTINGS, MUTATIONS[:1], 8, tmp_path, SyntheticBackend(),
                        SyntheticData(), name="synthetic", progress=False)
    assert json.loads(settings.read_text()) == {k: v for k, v in recorded.items()
                                                if k != "rounds"}


def test_a_resume_with_other_mutations_is_refused(tmp_path):
    from probmut.errors import ProbmutError

    _run(tmp_path, SyntheticBackend())
    with pytest.raises(ProbmutError, match="holds the rounds of other mutations "
                                           r"\(change_label_20 left out\)"):
        _run(tmp_path, SyntheticBackend(), mutations=[MUTATIONS[0], MUTATIONS[2]])


@pytest.mark.train
@pytest.mark.slow
def test_train_until_settled_on_digits(tmp_path, cli):
    """One round of 4 instances per side (k = 4) through the real trainer and command: 90%
    of the training data deleted is killed at once; 20% of the labels changed is near the
    boundary, stops at the cap, and the output says why it is not settled. (Resuming is
    the synthetic test's; the trainer's own resume is test_run's.)"""
    pytest.importorskip("tensorflow")
    out = tmp_path / "settle"
    result = cli.run("train", "--dataset", "digits", "--architecture", "digits_cnn", "--epochs", 2,
                     "--quiet", "--until-settled", "--round", 4, "--max-instances", 4,
                     "--sample", 4, "--mutation", "delete_training_data:90",
                     "--mutation", "change_label:20", "--out", out)
    rounds = json.loads((out / "rounds.json").read_text())
    (first,) = rounds["rounds"]
    assert first["instances"] == {HEALTHY: 4, "delete_training_data_90": 4,
                                  "change_label_20": 4}
    assert first["verdicts"]["delete_training_data_90"]["verdict"] == "killed"
    assert "round 1: healthy 4; delete_training_data_90 4 KILLED" in result.err
    label = rounds["final"]["change_label_20"]
    assert label["verdict"] == "not settled"
    assert f"change_label_20: not settled with 4 instances: {label['message']}" in result.out
    assert "rounds: " in result.out and (out / "rounds.txt").exists()


@pytest.mark.parametrize("argv, says", [
    (["--instances", "5", "--mutation", "change_label:20"],
     "train either a number of instances or until settled, not both (--instances)"),
    ([], "training until settled needs at least one mutation (--until-settled)"),
    (["--mutation", "change_label:20", "--sample", "30", "--max-instances", "20"],
     "the sample size k = 30 is more than the maximum of 20 instances: no verdict could be "
     "reached (--sample)"),
    (["--mutation", "change_label:20", "--round", "0"], "argument --round: must be at least 1"),
    (["--mutation", "change_label:20", "--certainty", "1.5"], "argument --certainty: must be"),
])
def test_until_settled_refuses_contradictions(cli, tmp_path, argv, says):
    cli.refused("train", "--until-settled", "--out", tmp_path / "x", *argv, says=says)


def test_each_mutant_and_look_draws_its_own_stream(tmp_path, monkeypatch):
    """The verdicts' simulated populations come from a stream of their own per mutant and
    look (derived from the run's seed): no two verdicts of a run share one, so their
    Monte-Carlo errors are independent."""
    import probmut.recommend

    seen = []
    original = probmut.recommend.recommend

    def recording(healthy, mutant, *args, seed, **kwargs):
        seen.append((kwargs["name"], len(mutant), seed))
        return original(healthy, mutant, *args, seed=seed, **kwargs)

    monkeypatch.setattr(probmut.recommend, "recommend", recording)
    _run(tmp_path, SyntheticBackend())
    assert len(seen) > len(MUTATIONS)  # several looks
    assert len({seed for *_, seed in seen}) == len(seen)
    assert all(seed == seed_of(1, "verdict", name, n) for name, n, seed in seen)  # the run's seed 1


def test_a_plan_too_fine_to_integrate_is_refused_before_anything_trains(cli, tmp_path):
    """`--round 1 --max-instances 2000` plans 1,981 looks: the verdicts' thresholds cannot
    be computed for them (probmut.sequential.plan_work), which failed at the first
    verdict, after a round of training; it is refused before."""
    cli.refused("train", "--until-settled", "--round", "1", "--max-instances", "2000",
                "--mutation", "change_label:20", "--out", tmp_path / "x",
                says="--round 1 up to --max-instances 2000 plans 1,981 looks, too many")
    assert not (tmp_path / "x").exists()
