"""Train until the decision is settled: rounds of instances, a pilot verdict after each.

Each round adds ``round_size`` instances to every mutant population still in training
(up to ``max_instances``), and the healthy population follows the largest of them: it
goes on while any mutant needs it. After the round, :func:`probmut.recommend.recommend`
judges every mutant in training on the instances trained so far (model-level mutants
against the healthy instances they derive from); a mutant stops when its verdict is
settled (killed or not killed), when it reaches ``max_instances``, or when settling at
``max_instances`` is out of reach: the verdict's ``reach``, the chance that its
instances grown to ``max_instances`` settle it there (the plan's last look), its
uncertainty included, is under ``FUTILITY``. Stopping without a verdict never makes one
wrong; it saves the instances of mutants at the decision boundary. Verdicts need at least k
instances per side; rounds before that only train.

Looking again after every round gives a verdict more chances to settle by luck, so the
verdicts are told the whole plan: the looks are at round_size, 2 round_size, ... (from
k on) up to ``max_instances``, and :mod:`probmut.sequential` sets the certainty p_killed must
clear at each look so that, for any true effect, a mutant ends with a wrong settled
verdict on at most ``1 - certainty`` of the runs (docs/recommend.md).

The output directory gains ``rounds.json`` and ``rounds.txt`` (one row per round: the
instances of each population and each verdict, with p_killed, its Monte-Carlo standard
error and the threshold it had to clear), rewritten after every round. A resumed run
goes on from the last round ``rounds.json`` holds (:func:`recorded_rounds`): its files
never go back to a smaller round, and what the rounds decide is recorded with the run's
settings (:func:`rounds_plan`), so that a resume with other options (another certainty,
k, round size, ...) is refused rather than ending at other targets than the instances
done. Without ``rounds.json`` (a run stopped in its first round) the rounds start again
from the records on disk: finished instances are not retrained and the verdicts, cached
under ``.work/verdicts``, are the same.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from probmut import seeds
from probmut.errors import ProbmutError
from probmut.io.rounds import read_rounds_document, write_rounds
from probmut.train.run import RunReport
from probmut.train.work import HEALTHY

#: Verdict of a population that has fewer than k instances so far.
TOO_FEW = "too few instances"

#: A mutant stops training, not settled, when the chance that it settles at
#: ``max_instances`` (the plan's last look; the chance by any look up to it is a little
#: more) is under this: it gives up about this share of the settlements of the mutants it
#: stops, and never makes a verdict wrong. How it was chosen (on the synthetic grid of
#: scripts/validation/sequential_validation.py) and checked (on the bundled magnitudes),
#: with the measurements: docs/recommend.md, *The futility stop at 0.05*.
FUTILITY = 0.05


@dataclass(frozen=True)
class RoundsReport(RunReport):
    """What a run in rounds did: its training (a :class:`RunReport` of all its rounds),
    every round's record (``rounds``), how it ended (``final``) and its plan
    (:meth:`plan`); ``document()`` is its ``rounds.json``, :meth:`table` its
    ``rounds.txt``."""

    rounds: list[dict] = field(default_factory=list)
    final: dict = field(default_factory=dict)
    max_instances: int = 0

    def plan(self) -> dict:
        return {"max_instances": self.max_instances}

    def document(self) -> dict:
        return self.plan() | {"rounds": self.rounds, "final": self.final}

    def to_dict(self) -> dict:
        return super().to_dict() | self.document()

    @abstractmethod
    def endings(self) -> list[str]:
        """How the run ended, in lines."""

    @abstractmethod
    def table(self) -> str:
        """The rounds as a readable table (``rounds.txt``)."""

    def __str__(self) -> str:
        return "\n".join([super().__str__(), f"  rounds: {self.out / 'rounds.txt'} and "
                                             f"rounds.json ({len(self.rounds)} rounds)",
                          *(f"  {line}" for line in self.endings())])

    def write(self) -> None:
        """``rounds.json`` and ``rounds.txt`` in the output directory, rewritten whole
        (:func:`probmut.io.rounds.write_rounds`)."""
        write_rounds(self.out, self.document(), self.table())


@dataclass(frozen=True)
class SettleReport(RoundsReport):
    """A run until settled (:class:`RoundsReport`): every round's instances and verdicts
    (``rounds``) and each mutant's last verdict (``final``: population -> verdict)."""

    looks: list[int] = field(default_factory=list)  # instances per side of the planned looks

    def plan(self) -> dict:
        return {"looks": self.looks} | super().plan()

    def endings(self) -> list[str]:
        return [f"{population}: {v['verdict']} with {v['instances']} instances: {v['message']}"
                for population, v in self.final.items()]

    def table(self) -> str:
        """The rounds as a readable table: instances and verdict per population."""
        populations = list(self.final)
        cells = [[("-" if (v := record["verdicts"].get(population)) is None else
                   _short(v, record["instances"][population], self.max_instances))
                  for population in populations]
                 for record in self.rounds]
        widths = [max([len(population)] + [len(row[j]) for row in cells])
                  for j, population in enumerate(populations)]
        lines = [f"{'round':>5}{HEALTHY:>9}  "
                 + "  ".join(f"{s:<{w}}" for s, w in zip(populations, widths, strict=True))]
        for record, row in zip(self.rounds, cells, strict=True):
            lines.append(f"{record['round']:>5}{record['instances'][HEALTHY]:>9}  "
                         + "  ".join(f"{c:<{w}}" for c, w in zip(row, widths, strict=True)))
        lines += ["", *self.endings()]
        return "\n".join(line.rstrip() for line in lines)


def _short(verdict: dict, instances: int, maximum: int) -> str:
    word = verdict["verdict"]
    if word == TOO_FEW:
        return f"{instances} {word}"
    if word == "killed":
        word = "KILLED"
    detail = (f"P(killed) {verdict['p_killed']:.2f} ± {verdict['p_killed_se']:.2f}, "
              f"threshold {verdict['threshold']:.3g}")
    if verdict["reach"] is not None:
        detail += f", P(settles at {maximum}) {verdict['reach']:.2f}"
    return f"{instances} {word} ({detail})"


def planned_looks(round_size: int, max_instances: int, sample: int) -> list[int]:
    """Instances per side at which the verdicts are planned: after every round, from k on.

    >>> planned_looks(10, 200, 20)[:3], len(planned_looks(10, 200, 20))
    ([20, 30, 40], 19)
    >>> planned_looks(30, 100, 20)
    [30, 60, 90, 100]
    """
    rounds = -(-max_instances // round_size)
    sizes = {min(j * round_size, max_instances) for j in range(1, rounds + 1)}
    return sorted(n for n in sizes if n >= sample)


def _verdict(out: Path, mutation, settings, *, certainty, max_instances, looks, seed,
             cache) -> dict:
    """The pilot verdict of one mutant on the instances trained so far."""
    from probmut.io.populations import read_population
    from probmut.recommend import recommend

    healthy = read_population(out / f"{HEALTHY}.csv", name=HEALTHY)
    mutant = read_population(out / f"{mutation.population}.csv", name=mutation.population)
    paired = mutation.operator.paired
    if paired:
        healthy = healthy.subset(mutant.ids)
    n = min(len(healthy), len(mutant))
    if n < settings.sample:
        return {"verdict": TOO_FEW, "p_killed": None, "p_killed_se": None, "threshold": None,
                "simulations": None, "needed": None, "reach": None, "instances": len(mutant),
                "message": f"verdicts need at least k = {settings.sample} instances per side"}
    # failed instances (dropped) can leave n between two planned looks: it is then one
    # more look of the plan, which only raises every threshold
    looks = looks if n in looks else sorted({*looks, n})
    advice = recommend(healthy, mutant, settings, sizes=(), certainty=certainty,
                       needed_up_to=max_instances, looks=looks, paired=paired,
                       seed=seeds.seed_of(seed, "verdict", mutation.population, n), cache=cache,
                       name=mutation.population)
    reach, message = advice.reach, advice.message  # the plan's last look is max_instances
    if reach is not None and reach < FUTILITY:
        message += (f" Training stops: the chance that {max_instances} instances per side "
                    f"settle it is {reach:.3f}, under {FUTILITY:g}.")
    return {"verdict": advice.verdict, "p_killed": advice.p_killed,
            "p_killed_se": advice.p_killed_se, "threshold": advice.threshold,
            "simulations": advice.simulations_used, "needed": advice.needed, "reach": reach,
            "instances": len(mutant), "message": message}


def rounds_plan(mode: str, analysis, **options) -> dict:
    """What decides a run's rounds, recorded with its settings (a resume with another plan
    is refused: :func:`probmut.train.run.run_populations`): its ``mode`` (the option that
    asks for rounds), the ``options`` of its rounds and the ``analysis`` of its verdicts
    or score, as JSON values.

    >>> from probmut.bagging import PosteriorSettings
    >>> plan = rounds_plan("--until-settled", PosteriorSettings(sample=3), round=2)
    >>> plan["mode"], plan["round"], plan["analysis"]["sample"]
    ('--until-settled', 2, 3)
    """
    return json.loads(json.dumps({"mode": mode, **options,
                                  "analysis": dataclasses.asdict(analysis)}))


def recorded_rounds(out: Path, populations) -> dict | None:
    """The ``rounds.json`` of the run in ``out`` a resume goes on from: its plan, its
    ``rounds`` (at least one) and ``final``; None when it holds no round yet. The plan's
    options are checked with the run's settings; the populations are checked here.

    Raises
    ------
    ProbmutError
        The file holds the rounds of other populations (a mutation added or left out).
    """
    document = read_rounds_document(Path(out) / "rounds.json")
    if document is None or not document["rounds"]:
        return None
    recorded = set(document["rounds"][-1]["instances"])
    if recorded != {HEALTHY, *populations}:
        added, missing = sorted(set(populations) - recorded), sorted(recorded - {HEALTHY,
                                                                                  *populations})
        changes = [f"{', '.join(added)} added"] * bool(added) + \
            [f"{', '.join(missing)} left out"] * bool(missing)
        raise ProbmutError(f"{out} holds the rounds of other mutations ({'; '.join(changes)}): "
                           "resume with the same mutations, or train into another output "
                           "directory", option="mutation")
    return document


def train_round(number: int, runs: list[RunReport], job, mutations, targets: dict, *,
                most: int, rounds: dict) -> RunReport:
    """Round ``number`` of ``job`` (:class:`~probmut.train.run.Job`): every population up
    to its target (population -> instances), at most ``most`` per population, under the plan
    ``rounds`` (:func:`rounds_plan`); its run is appended to ``runs``, the rounds' runs so
    far. A resumed run finds instances done beyond those on disk after the round before;
    stderr says how many.

    Returns
    -------
    RunReport
        The round's run (also appended to ``runs``).
    """
    on_disk = sum(runs[-1].counts.values()) if runs else 0
    run = job.train(mutations, targets, most=most, rounds=rounds, note_resumed=False)
    runs.append(run)
    if run.resumed > on_disk:
        print(f"round {number}: {run.resumed - on_disk} instances were already done in "
              f"{job.out}", file=sys.stderr)
    return run


def _stops(verdict: dict, instances: int, max_instances: int) -> bool:
    """Whether a mutant trains no more after ``verdict`` on ``instances`` instances:
    settled, at the cap, or out of reach of settling at it."""
    return (verdict["verdict"] in ("killed", "not killed") or instances >= max_instances
            or (verdict["reach"] is not None and verdict["reach"] < FUTILITY))


def train_until_settled(job, mutations, mode) -> SettleReport:
    """Train ``job`` (:class:`~probmut.train.run.Job`) in rounds until every mutant's
    verdict is settled or it reaches the mode's ``max_instances`` (see the module notes).
    One line per round (instances and verdicts) goes to stderr, also without progress bars
    (which show the training).

    Parameters
    ----------
    job : Job
        The run's parts; its settings' seed seeds the verdicts: each mutant's verdict at
        each look simulates its populations from a stream of its own derived from it (the
        ``"verdict"`` role of :mod:`probmut.seeds`).
    mutations : list of Mutation
        The bound mutations.
    mode : UntilSettled
        :class:`~probmut.train.options.UntilSettled`: ``round_size`` instances added per
        round to each population still in training, at most ``max_instances`` per
        population, the verdicts' ``analysis`` and ``certainty`` (``1 - certainty`` bounds
        the chance of a wrong settled verdict over all the rounds; default
        :data:`probmut.sequential.CERTAINTY`).

    Returns
    -------
    SettleReport
        The training of all the rounds, every round's verdicts and each mutant's last.

    Raises
    ------
    ProbmutError
        As :meth:`probmut.train.run.Job.train` and :func:`probmut.recommend.recommend`
        (e.g. a certainty outside (0.5, 1)).
    """
    from probmut.io.cache import Cache
    from probmut.sequential import CERTAINTY

    out, seed, analysis = job.out, job.settings.seed, mode.analysis
    round_size, max_instances = mode.round_size, mode.max_instances
    certainty = CERTAINTY if mode.certainty is None else mode.certainty
    cache = Cache(out / ".work" / "verdicts")
    plan = rounds_plan("--until-settled", analysis, round=round_size,
                       max_instances=max_instances, certainty=certainty)
    looks = planned_looks(round_size, max_instances, analysis.sample)
    training = {m.population: m for m in mutations}
    targets = {HEALTHY: 0} | dict.fromkeys(training, 0)
    runs, rounds, final, number = [], [], {}, 0
    if (document := recorded_rounds(out, training)) is not None:
        rounds = document["rounds"]
        for record in rounds:
            final |= record["verdicts"]
        number, targets = rounds[-1]["round"], dict(rounds[-1]["instances"])
        last = {population: v for record in rounds for population, v in record["verdicts"].items()}
        raised = max_instances > document["max_instances"]  # a larger cap: unsettled go on
        training = {population: m for population, m in training.items()
                    if (last[population]["verdict"] not in ("killed", "not killed") if raised
                        else population in rounds[-1]["verdicts"]
                        and not _stops(last[population], targets[population], max_instances))}
        print(f"resuming after round {number} of {out / 'rounds.json'}", file=sys.stderr)
        if not training:  # it had ended: its files, as they are
            train_round(number, runs, job, mutations, targets, most=max_instances, rounds=plan)
    while training:
        number += 1
        for population in training:
            targets[population] = min(targets[population] + round_size, max_instances)
        targets[HEALTHY] = max(targets[HEALTHY], *(targets[s] for s in training))
        run = train_round(number, runs, job, mutations, targets, most=max_instances,
                          rounds=plan)
        if run.failures or run.lost:  # the rounds wait for them: a rerun trains the lost
            break
        verdicts = {}
        for population, mutation in list(training.items()):
            verdicts[population] = verdict = _verdict(out, mutation, analysis, certainty=certainty,
                                                max_instances=max_instances, looks=looks,
                                                seed=seed, cache=cache)
            final[population] = verdict
            if _stops(verdict, targets[population], max_instances):
                del training[population]
        rounds.append({"round": number, "instances": dict(targets), "verdicts": verdicts})
        SettleReport(rounds=rounds, final=final, looks=looks, max_instances=max_instances,
                     out=out).write()
        print(f"round {number}: {HEALTHY} {targets[HEALTHY]}; "
              + "; ".join(f"{population} {_short(v, targets[population], max_instances)}"
                          + ("" if population in training else ", stops")
                          for population, v in verdicts.items()), file=sys.stderr)
    return SettleReport.of_runs(runs, rounds=rounds, final=final, looks=looks,
                                max_instances=max_instances)
