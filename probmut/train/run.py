"""Resumable population runs: plan the missing instances, run them, assemble the files.

Layout of an output directory ``OUT``::

    OUT/manifest.toml                      run manifest read by the analysis commands
    OUT/healthy.csv                        one row per instance: accuracy, seed, symptoms
    OUT/healthy.outcomes.npz               per-input outcomes (probmut.io.outcomes)
    OUT/{operator}_{magnitude}.csv         one file per mutant population (+ .outcomes.npz)
    OUT/models/{population}/{id}.keras     each instance's model (save_models), the id
                                           in 5 digits: 00000.keras
    OUT/.work/settings.json                the shared settings and the data's provenance;
                                           a resume must match them
    OUT/.work/{population}/{id}.npz        one record per finished instance
    OUT/.work/weights/healthy/{id}.npz     trained healthy weights (model-level runs)
                                           (.work: probmut.io.workdir)

Every file is written to a temporary name and renamed, so a run killed at any moment,
or stopped by a full disk, leaves only whole files; running the same command again
trains only what is missing.
An instance that crashed or timed out is recorded like any other (its symptom record,
:mod:`probmut.io.records`) and is not trained again unless ``retry_failed``; a rerun
lists them. One whose Ray worker or node was lost (:class:`~probmut.train.backends.TaskLost`)
did not fail: nothing is recorded, and the next run trains it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.atomic import (
    DiskFullError,
    LockedError,
    exclusive,
    remove_orphans,
    together,
)
from probmut.io.manifest import add_to_manifest
from probmut.io.outcomes import save_outcomes
from probmut.io.populations import write_deepcrime, write_instances
from probmut.io.records import RETRYABLE, one_line
from probmut.io.workdir import (
    StoredInstance,
    finished_ids,
    read_settings,
    read_weights,
    write_settings,
)
from probmut.results import Result, counted, listing
from probmut.train.backends import InstanceTimeout, TaskLost
from probmut.train.datasets import DATASETS
from probmut.train.finished import load_record, save_record, saved_model
from probmut.train.flags import NOT_APPLIED, UNVERIFIED, Flags, UnappliedMutationWarning
from probmut.train.interrupts import Interrupts
from probmut.train.operators import OPERATORS, Mutation, population_config
from probmut.train.quality import assembled_flags, removed_by_quality_control
from probmut.train.tasks import strata
from probmut.train.trainers import Trainer, trainer_of
from probmut.train.work import HEALTHY, Assignment, InstanceResult, RunSettings


def _failure(assignment: Assignment, error: BaseException, seconds: float) -> InstanceResult:
    """The record of an instance whose call failed outside the instance's own code: its
    worker was killed at the hard time limit, died, or could not run it."""
    status = "timed out" if isinstance(error, InstanceTimeout) else "crashed"
    return InstanceResult(assignment.population, assignment.instance, assignment.seed, math.nan,
                          None, seconds, status=status, error=one_line(error))


def recorded_stack(out: Path) -> int | None:
    """The stack size of the run already in ``out``, or None when there is none to
    resume: ``--stack auto`` resumes with it."""
    try:
        settings = read_settings(out)
        return None if settings is None else int(settings["stack"])
    except (ProbmutError, ValueError, TypeError):
        return None


def setting_changes(before: dict, now: dict) -> list[str]:
    """Each setting that differs, ``NAME BEFORE before, NOW now``, nested settings named
    with dots (a data fingerprint shortened to 12 characters).

    >>> setting_changes({"seed": 1, "config": {"epochs": 1, "loss": "mse"}},
    ...                 {"seed": 1, "config": {"epochs": 3, "loss": "mse"}})
    ['config.epochs 1 before, 3 now']
    """
    def flat(settings, prefix=""):
        return {key: value for name, entry in settings.items()
                for key, value in (flat(entry, f"{prefix}{name}.").items()
                                   if isinstance(entry, dict) else [(prefix + name, entry)])}

    def shown(key, value):
        text = "none" if value is None else json.dumps(value) if isinstance(value, list) \
            else str(value).lower() if isinstance(value, bool) else str(value)
        return text[:12] if key.endswith("fingerprint") else text

    old, new = flat(before), flat(now)
    return [f"{key} {shown(key, old.get(key))} before, {shown(key, new.get(key))} now"
            for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key)]


def _match_recorded_settings(out: Path, settings: RunSettings, data: dict,
                             rounds: dict | None = None, threads: int = 1) -> None:
    """Record the settings of a new run in ``out``; refuse to resume into ``out`` with
    settings, or data, other than those it was started with. ``data`` is the data set's
    provenance; its fingerprint and split sizes decide (not, say, the version of the
    library that loaded it). The settings also say which option named the data
    (``option``: ``dataset`` or ``data``), so that a report can write the command that
    trains the run on. ``rounds`` is the plan of a run trained in
    rounds (None: a number of instances, or a search), checked by :func:`_check_rounds`.
    ``threads`` are the threads per instance (TensorFlow's for the Keras trainer): the
    order of its float sums, and so every trained instance, depends on them
    (docs/training.md)."""
    identity = {key: data[key] for key in ("name", "train", "validation", "test", "fingerprint")}
    identity["option"] = "dataset" if settings.dataset in DATASETS else "data"
    current = json.loads(json.dumps({**dataclasses.asdict(settings), "data": identity,
                                     "rounds": rounds, "threads": threads}))
    recorded = read_settings(out)
    if recorded is None:
        write_settings(out, current)
        return
    # what probmut 0.2.0 did not record: its plan and threads (a resume records them) and
    # its trainer; it was trained in rounds where it left its rounds.json
    plan = (current["rounds"] or {"mode": "probmut 0.2.0"} if (out / "rounds.json").is_file()
            else None)
    legacy = {key: value for key, value in (_KERAS_ONLY | {"rounds": plan, "threads": current[
        "threads"]}).items() if key not in recorded}
    recorded = {**recorded, **legacy}
    if _check_rounds(out, recorded["rounds"], current["rounds"]):  # a larger cap
        legacy["rounds"] = recorded["rounds"] = current["rounds"]
    if recorded != current:
        raise ProbmutError(f"{out} holds a run with other settings: "
                           f"{'; '.join(setting_changes(recorded, current))}; use the "
                           "same settings and data to resume, or another output "
                           "directory", option="out")
    if legacy:
        write_settings(out, current)


#: The trainer of a run of probmut 0.2.0, which recorded none: it trained with Keras only.
_KERAS_ONLY = {"trainer": "keras", "code": None}


def _check_rounds(out: Path, before: dict | None, now: dict | None) -> bool:
    """Refuse to go on with a run of another plan: rounds with other decisions (another
    certainty, k, round size, ...) would not follow from the rounds done, a smaller cap
    would end below the instances done, and a run of a number of instances continued in
    rounds would start from rounds smaller than what is done. A larger cap
    (``max_instances``) goes on: its next rounds are planned to it. Returns whether the
    plan is a new one to record (a larger cap)."""
    if before == now:
        return False
    if before is None:
        raise ProbmutError(f"{out} holds a run of a number of instances, not trained in "
                           "rounds: train in rounds into another output directory (or give "
                           "--instances to extend this run)", option="out")
    if now is None:
        raise ProbmutError(f"{out} holds a run trained in rounds ({before['mode']}): resume "
                           "it with the same options, or train into another output "
                           "directory", option="out")
    if ({**before, "max_instances": now["max_instances"]} == now
            and now["max_instances"] > before["max_instances"]):
        return True
    raise ProbmutError(f"{out} holds a run trained in rounds with other options: "
                       f"{'; '.join(setting_changes(before, now))}; they decide which "
                       "instances each round trains: resume with the same options (a larger "
                       "--max-instances goes on), or train into another output directory",
                       option="out")


def write_population(path: Path, records, rows, labels) -> None:
    """Write a population's tidy CSV (``path``) and its outcomes file beside it
    (``{path.stem}.outcomes.npz``): one record and one outcome row (None when the instance was
    not scored) per instance. A population with a scored instance without outcomes (a
    user's training code that returned no ``correct``) has no outcomes file (one written
    before is removed): the per-input analyses cannot read it."""
    path = Path(path)
    write_instances(path, records)
    if any(row is None and record.status not in RETRYABLE
           for record, row in zip(records, rows, strict=True)):
        path.with_name(f"{path.stem}.outcomes.npz").unlink(missing_ok=True)
        return
    matrix = np.array([np.zeros(len(labels), bool) if row is None else row for row in rows],
                      dtype=bool).reshape(len(records), len(labels))
    save_outcomes(path.with_name(f"{path.stem}.outcomes.npz"), [r.instance for r in records],
                  matrix, labels, records)


def assemble(out: Path, population: str, instances: int, labels,
             write_deepcrime_csv: bool = False) -> list[StoredInstance]:
    """(Re)write ``{population}.csv`` and ``.outcomes.npz`` from the finished records with
    ids below ``instances``; returns them (:func:`probmut.train.finished.load_record`:
    each instance's match with its healthy instance and the hyperparameters its code
    read), which the population's flags read. ``write_deepcrime_csv`` also writes
    ``{population}.deepcrime.csv`` in DeepCrime's ``;``-separated format
    (:func:`probmut.io.populations.write_deepcrime`)."""
    stored = [loaded for instance in range(instances)
              if (loaded := load_record(out, population, instance)) is not None]
    records = [s.record for s in stored]
    write_population(out / f"{population}.csv", records,
                     [s.correct if s.correct.size else None for s in stored], labels)
    if write_deepcrime_csv:
        write_deepcrime(out / f"{population}.deepcrime.csv", records)
    return stored


def _units(assignments: list[Assignment], settings: RunSettings, dataset, say,
           unstackable: dict[str, str] | None, trainer: Trainer) -> list[tuple]:
    """Group ``assignments`` (not model-level) into the calls of the ``trainer``'s
    ``train_unit``: with ``settings.stack`` K > 1, instances ``[jK, (j+1)K)`` of a
    stackable population form stack j (its missing ones only, on a resume); other
    assignments run one by one, and ``say`` tells why once per population.
    ``unstackable`` (population -> why) says which populations cannot be stacked,
    when that was decided before the run; None: decided here (the trainer's
    ``stack_problem``)."""
    def why_alone(population: str, config) -> str | None:
        if unstackable is not None:
            return unstackable.get(population)
        return trainer.stack_problem(settings, config, dataset)

    units, stacks, told = [], {}, set()
    for assignment in assignments:
        population = assignment.population
        operator = OPERATORS[assignment.operator] if assignment.operator else None
        config = population_config(settings.config, operator, assignment.params)
        why = why_alone(population, config) if settings.stack > 1 else None
        if settings.stack > 1 and why is None:
            stacks.setdefault((population, assignment.instance // settings.stack),
                              []).append(assignment)
            continue
        if settings.stack > 1 and population not in told:
            told.add(population)
            say(f"probmut train: {population}: training one instance at a time: {why}")
        units.append(([assignment], False, None))
    return [(group, True, None) for group in stacks.values()] + units


def idle_workers(units: list[tuple], jobs: int) -> str | None:
    """What to say when ``jobs`` workers get fewer ``units`` (from :func:`_units`) than
    there are workers and a smaller stack would feed them, or None. The stack size does
    not follow the number of workers on its own: it changes results by float rounding,
    and the same seed must give the same files whatever the number of workers.

    >>> stack = lambda n: ([None] * n, True, None)  # a unit stacking n instances
    >>> print(idle_workers([stack(20)], jobs=2))  # doctest: +NORMALIZE_WHITESPACE
    1 stack of 20 instances for --jobs 2 leaves 1 worker idle; --stack 10 keeps 2 busy (the stack
    size changes results by float rounding, so it does not follow --jobs)
    >>> idle_workers([stack(20)] * 4, jobs=2) is None
    True
    """
    sizes = [len(assignments) for assignments, is_stack, _ in units if is_stack]
    if not sizes or len(units) >= jobs:
        return None
    smaller = math.ceil(max(sizes) / math.ceil(jobs / len(units)))
    if smaller == max(sizes):  # stacks of one cannot be split further
        return None
    busy = min(jobs, len(units) - len(sizes) + sum(math.ceil(n / smaller) for n in sizes))
    idle = jobs - len(units)
    return (f"{len(sizes)} stack{'s' * (len(sizes) > 1)} of {'up to ' * (min(sizes) < max(sizes))}"
            f"{max(sizes)} instances for --jobs {jobs} leave{'s' * (len(sizes) == 1)} {idle} "
            f"worker{'s' * (idle > 1)} idle; --stack {smaller} keeps {busy} busy (the stack "
            "size changes results by float rounding, so it does not follow --jobs)")


def _per_assignment(outcome, count: int) -> list:
    """A unit's results, or its one exception for each of its ``count`` assignments."""
    return [outcome] * count if isinstance(outcome, BaseException) else outcome


@dataclass(frozen=True)
class RunReport(Result):
    """What a run did: instances trained now, found already done, the ones that failed
    now (crashed or timed out), that an earlier run recorded as failed
    (``failed_before``), that were lost with their Ray worker or node and left for the
    next run (``lost``), or that diverged, as ``population instance i: why``, each
    population's instances on disk and flags, the mutant populations DeepMutation's
    quality control removed, with why; where (``out``) and under which model ``name``
    its manifest holds them; and, for a killable-magnitude search, the search's result
    (:class:`probmut.train.search.SearchResult`).

    ``str()`` is the summary ``probmut train`` prints; ``to_dict()`` its JSON;
    ``to_frame()`` one row per population.
    """

    trained: int = 0
    resumed: int = 0
    failures: list[str] = field(default_factory=list)
    failed_before: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)  # population -> instances on disk
    flags: dict[str, Flags] = field(default_factory=dict)
    trained_per_population: dict[str, int] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)
    out: Path = Path(".")
    name: str = ""
    search: Result | None = None

    @classmethod
    def of_runs(cls, runs: list[RunReport], **fields):
        """One report for several runs into the same directory (rounds, or a search's
        magnitudes): their sums, the last run's view of each population, and as resumed
        every instance on disk that none of them trained; where (``out``) and under which
        ``name`` the last run wrote. ``fields`` set the others."""
        counts, flags, removed, per_population = {}, {}, {}, {}
        for run in runs:
            counts |= run.counts
            flags |= run.flags
            removed |= run.removed
            for population, n in run.trained_per_population.items():
                per_population[population] = per_population.get(population, 0) + n
        failures = [failure for run in runs for failure in run.failures]
        now = {failure.split(":")[0] for failure in failures}
        failed_before = [failure for failure in (runs[-1].failed_before if runs else [])
                         if failure.split(":")[0] not in now]
        trained = sum(run.trained for run in runs)
        where = {"out": runs[-1].out, "name": runs[-1].name} if runs else {}
        return cls(**fields | where, trained=trained, resumed=sum(counts.values()) - trained,
                   failures=failures, failed_before=failed_before,
                   lost=[lost for run in runs for lost in run.lost],
                   diverged=[diverged for run in runs for diverged in run.diverged],
                   seconds=sum((run.seconds for run in runs), 0.0), counts=counts, flags=flags,
                   trained_per_population=per_population, removed=removed)

    @property
    def manifest(self) -> Path:
        return self.out / "manifest.toml"

    def rows(self) -> list[dict]:
        """One row per population: its file, instances, flags, why it is a survivor and
        why the quality control removed it (None when it is not)."""
        rows = []
        for population, n in self.counts.items():
            found = self.flags.get(population, Flags())
            rows.append({"name": population, "file": str(self.out / f"{population}.csv"),
                         "instances": n, "flags": list(found.flags),
                         "reasons": list(found.reasons), "survivor": found.survivor or None,
                         "removed": self.removed.get(population)})
        return rows

    def to_dict(self) -> dict:
        search = {} if self.search is None else {"search": self.search.to_dict()}
        return {"trained": self.trained, "resumed": self.resumed, "seconds": self.seconds,
                "failures": self.failures, "failed_before": self.failed_before,
                "lost": self.lost, "diverged": self.diverged, "model": self.name,
                "manifest": str(self.manifest), **listing(self.rows()), **search}

    def __str__(self) -> str:
        if self.search is not None:
            return f"{self.search}\npopulations and manifest: {self.out} (model {self.name!r})"
        rate = self.trained / self.seconds * 60 if self.seconds else 0.0
        lines = [f"trained {counted(self.trained, 'instance')} in {self.seconds:.1f} s "
                 f"({rate:.1f}/min); {self.resumed} {'was' if self.resumed == 1 else 'were'} "
                 "already done"]
        for row in self.rows():
            removed = [("removed", row["removed"])] if row["removed"] else []
            flagged = "".join(f"  [{word}: {reason}]" for word, reason
                              in self.flags.get(row["name"], Flags()).items() + removed)
            lines.append(f"  {row['file']}: {counted(row['instances'], 'instance')}{flagged}")
        lines.append(f"  manifest: {self.manifest} (model {self.name!r})")
        return "\n".join(lines)


def refuse_shrinking(out: Path, most: dict[str, int], option: str = "instances") -> None:
    """Refuse a run of ``most`` instances per population (population -> count) where ``out``
    holds finished instances beyond: its files would drop them (a population's CSV and
    the manifest's targets hold the instances below the target only)."""
    for population, count in most.items():
        ids = finished_ids(out, population)
        if ids and ids[-1] >= count:
            raise ProbmutError(
                f"{out}: {population} holds {len(ids)} finished instances, up to id "
                f"{ids[-1]}, more than the {count} asked for; a rerun keeps what is done: ask for "
                f"{ids[-1] + 1} or more to resume or extend this run, or train a smaller run "
                "into another directory", option=option)


def instance_targets(instances, mutation_of: dict) -> dict[str, int]:
    """Instances per population: ``instances`` is one number for all, or a mapping from
    population to its own number (missing: 0), for each population of ``mutation_of``
    (population -> its mutation; None: the healthy one). A model-level mutant derives from
    healthy instances: it cannot have more of them than the healthy population.

    >>> instance_targets(3, {HEALTHY: None, "x_1": None})
    {'healthy': 3, 'x_1': 3}
    """
    if isinstance(instances, dict):
        targets = {population: int(instances.get(population, 0)) for population in mutation_of}
    else:
        targets = dict.fromkeys(mutation_of, int(instances))
    for population, mutation in mutation_of.items():
        if mutation is not None and mutation.operator.level == "model" \
                and targets[population] > targets[HEALTHY]:
            raise ProbmutError(f"{population} derives from healthy instances: it cannot have "
                               f"more instances ({targets[population]}) than the healthy "
                               f"population ({targets[HEALTHY]})")
    return targets


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How a run trains and writes, whatever its mode: DeepCrime's ``;``-separated files
    too (``write_deepcrime_csv``), progress bars on stderr (``progress``), each instance's
    model kept (``save_models``: ``models/{population}/{id:05d}`` and the trainer's suffix; an
    instance done without one is trained again to get it), a time limit per instance in
    seconds (``timeout``: recorded as timed out; not with stacks), crashed and timed-out
    instances trained again (``retry_failed``)."""

    write_deepcrime_csv: bool = False
    progress: bool = True
    save_models: bool = False
    timeout: float | None = None
    retry_failed: bool = False


@dataclass(frozen=True)
class Job:
    """A run's fixed parts, which its mode and every round or magnitude share: its
    :class:`~probmut.train.work.RunSettings` (the seed of every random decision among
    them), the output directory, the backend (entered by the caller), the dataset, the
    model's ``name`` in the manifest, its :class:`RunOptions`, ``unstackable``
    (population -> why it trains one instance at a time although the stack size is above
    1, when decided before the run; None: decided as it runs) and ``check``: how a
    mutation found as the run goes (a search's magnitudes) is bound and checked,
    ``check(mutations) -> (bound mutations, unstackable)``."""

    settings: RunSettings
    out: Path
    backend: Any
    dataset: Any
    name: str
    options: RunOptions = RunOptions()
    unstackable: dict[str, str] | None = None
    check: Callable | None = None

    def train(self, mutations: list[Mutation], instances, *, most: int | None = None,
              rounds: dict | None = None, note_resumed: bool = True,
              max_error_rate: float | None = None, warn_small: bool = False) -> RunReport:
        """Train the healthy population and every mutant population up to ``instances``
        each, skipping finished ones, and write populations and manifest; see
        :func:`run_populations`, which this is with the job's parts.

        Returns
        -------
        RunReport
            What this call trained, found done, and wrote.

        Raises
        ------
        ProbmutError
            For a time limit with stacks, a maximum error rate out of [0, 1), another run
            writing to ``out``, or settings other than those ``out`` was started with.
        """
        if self.options.timeout is not None and self.settings.stack > 1:
            raise ProbmutError("a time limit applies to one instance at a time; it cannot be "
                               "combined with stacked training", option="timeout")
        if max_error_rate is not None and not 0 <= max_error_rate < 1:
            raise ProbmutError(f"the maximum error rate is a share in [0, 1), got "
                               f"{max_error_rate}", option="max_error_rate")
        with run_lock(self.out):
            return _PopulationRun(self, mutations, instances, most, rounds,
                                  max_error_rate, warn_small).run(note_resumed)


def run_populations(settings: RunSettings, mutations: list[Mutation], instances,
                    out: Path, backend, dataset, *, name: str, write_deepcrime_csv: bool = False,
                    progress: bool = True, save_models: bool = False,
                    timeout: float | None = None, retry_failed: bool = False,
                    note_resumed: bool = True, max_error_rate: float | None = None,
                    unstackable: dict[str, str] | None = None,
                    most: int | None = None, rounds: dict | None = None,
                    warn_small: bool = False) -> RunReport:
    """Train the healthy population and every mutant population up to ``instances``
    instances each, skipping finished ones; write populations and manifest into ``out``.
    A population with finished instances beyond its target is refused (a rerun never
    drops them from its files): ``most`` instances per population are allowed instead
    when the run grows in steps (the rounds of :mod:`probmut.train.rounds`, whose
    resume replays rounds of fewer instances than are done).

    ``instances`` is one number for every population or a mapping from population
    to its own (:func:`instance_targets`; the rounds of :mod:`probmut.train.rounds`).
    ``backend`` is one of :mod:`probmut.train.backends` (entered by the caller);
    ``mutations`` must be bound (:func:`probmut.train.operators.bind`). ``write_deepcrime_csv``,
    ``progress``, ``save_models``, ``timeout`` and ``retry_failed`` are the run's
    :class:`RunOptions`. ``max_error_rate`` applies DeepMutation's quality control
    (:func:`probmut.train.quality.removed_by_quality_control`): a removed mutant
    keeps its files and is left out of the manifest's magnitudes (listed in its
    ``removed`` table). ``note_resumed``: say on stderr how many instances were already
    done. ``unstackable`` (population -> why) names the populations that train one
    instance at a time although ``settings.stack`` is above 1, when that was decided
    before the run (by the trainer's check, :func:`probmut.train.trainer.train_populations`);
    by default it is decided here. ``rounds`` is the plan of a run in rounds (its mode and
    the options that decide its rounds), recorded with the run's settings: a resume with
    another plan is refused. The run's trainer is its settings' (:func:`~probmut.train.
    trainers.trainer_of`). ``warn_small``: warn as training starts when ``instances`` is
    fewer than the k the analyses sample by default (they would analyse nothing).

    Returns
    -------
    RunReport
        What this call trained, found done, and wrote.

    Raises
    ------
    ProbmutError
        As :meth:`Job.train`.
    """
    options = RunOptions(write_deepcrime_csv=write_deepcrime_csv, progress=progress,
                         save_models=save_models, timeout=timeout, retry_failed=retry_failed)
    job = Job(settings, Path(out), backend, dataset, name, options, unstackable)
    return job.train(mutations, instances, most=most, rounds=rounds,
                     note_resumed=note_resumed, max_error_rate=max_error_rate,
                     warn_small=warn_small)


@contextlib.contextmanager
def run_lock(out: Path):
    """Hold the lock of the run in ``out`` for the block: another process training into
    it is refused at once (one line, with its process id). Taken again inside the block,
    it just runs (:func:`probmut.io.atomic.exclusive`)."""
    try:
        with exclusive(Path(out) / ".work", "lock"):
            yield
    except LockedError as error:
        raise ProbmutError(f"{out}: another probmut train is writing to this directory "
                           f"({error}); wait for it to finish or write elsewhere",
                           option="out") from None


def _needs_training(out: Path, assignment: Assignment, retry_failed: bool,
                    failed_before: list[str]) -> bool:
    """No usable record, a crash/timeout to retry, or a model to keep that is not there.
    A crash or timeout kept is added to ``failed_before``."""
    loaded = load_record(out, assignment.population, assignment.instance)
    if loaded is None:
        return True
    record = loaded.record
    if record.status in RETRYABLE:
        if retry_failed:
            return True
        failed_before.append(f"{assignment.population} instance {assignment.instance}: "
                             f"{record.status}: {record.error}")
        return False
    return (assignment.save_model
            and saved_model(out, assignment.population, assignment.instance) is None)


def _warn_small(targets: dict[str, int]) -> None:
    """Warn when the populations are smaller than the k per side the kill analyses
    sample by default: without a smaller ``--sample`` they would analyse nothing."""
    from probmut.bagging import PosteriorSettings

    k, fewest = PosteriorSettings().sample, min(targets.values())
    if fewest < k:
        smaller = f"give them --sample {fewest} or less, or" if fewest >= 2 else "k is at least 2:"
        warnings.warn(f"{counted(fewest, 'instance')} per population: fewer than the k = {k} "
                      "per side that the kill analyses (report, posterior, recommend, ...) "
                      f"sample by default, so they would analyse nothing; {smaller} train "
                      f"--instances {k} or more", stacklevel=4)


@dataclass
class _Tally:
    """What a call of :meth:`Job.train` has trained so far, as its :class:`RunReport` will
    say it: instances trained (in all and per population), failed, lost and diverged."""

    trained: int = 0
    per_population: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)

    def count(self, assignment: Assignment, result) -> None:
        """Add one instance's outcome (a result, or :class:`TaskLost`)."""
        where = f"{assignment.population} instance {assignment.instance}"
        if isinstance(result, TaskLost):
            self.lost.append(f"{where}: {result}")
            return
        self.trained += 1
        self.per_population[assignment.population] = \
            self.per_population.get(assignment.population, 0) + 1
        if result.status in RETRYABLE:
            self.failures.append(f"{where}: {result.status}: {result.error}")
        elif result.status == "diverged":
            self.diverged.append(where)


class _PopulationRun:
    """One call of :meth:`Job.train`: its plan (the assignments, healthy and source-level
    first, then the model-level mutants derived from them), its loop over the units the
    backend runs, and the files it writes as populations finish and when it stops."""

    def __init__(self, job: Job, mutations, instances, most, rounds, max_error_rate,
                 warn_small=False):
        self.job, self.mutations, self.max_error_rate = job, mutations, max_error_rate
        self.trainer = trainer_of(job.settings)
        self.provenance = job.dataset.provenance()
        _match_recorded_settings(job.out, job.settings, self.provenance, rounds,
                                 getattr(job.backend, "threads", 1))
        remove_orphans(job.out)  # left by a killed run; the lock keeps other runs out
        # each population's mutation (None: the healthy one), and their names
        self.mutation_of = {HEALTHY: None} | {m.population: m for m in mutations}
        self.populations = list(self.mutation_of)
        self.targets = instance_targets(instances, self.mutation_of)
        refuse_shrinking(job.out, self.targets if most is None
                         else dict.fromkeys(self.targets, most),
                         "instances" if most is None else "max_instances")
        if warn_small:
            _warn_small(self.targets)
        self.labels = strata(job.dataset.y_test, job.dataset.task)  # regression: buckets
        self.stored: dict[str, list] = {}  # per assembled population (see assemble)

    def _plan(self) -> tuple[list[Assignment], list[Assignment]]:
        """The assignments, instance by instance across the populations, so that a change
        of machine load during the run slows every population alike (their training
        seconds are compared): those trained first, and the model-level mutants derived
        from healthy instances after them."""
        settings, options = self.job.settings, self.job.options
        model_level = [m for m in self.mutations if m.operator.level == "model"]
        keep = bool(model_level) or settings.stack > 1  # healthy weights, for later mutants
        common = dict(timeout=options.timeout, save_model=options.save_models)
        most = max(self.targets.values())
        first = [Assignment(settings, population, i, m and m.operator.name, m and m.params,
                            keep_weights=population == HEALTHY and keep, **common)
                 for i in range(most) for population, m in self.mutation_of.items()
                 if (m is None or m.operator.level != "model") and i < self.targets[population]]
        derived = [Assignment(settings, m.population, i, m.operator.name, m.params, **common)
                   for i in range(most) for m in model_level if i < self.targets[m.population]]
        return first, derived

    def run(self, note_resumed: bool) -> RunReport:
        from probmut.progress import progress as progress_bar

        job = self.job
        first, derived = self._plan()
        failed_before: list[str] = []
        todo = [t for t in first + derived
                if _needs_training(job.out, t, job.options.retry_failed, failed_before)]
        self.left = {population: sum(t.population == population for t in todo)
                     for population in self.populations}
        self.tally, self.resumed = _Tally(), len(first) + len(derived) - len(todo)
        # the targets first: a run stopped at any moment from here on is known as unfinished
        self._write_manifest()
        self.bar = progress_bar(len(todo), f"train {job.name}", enabled=job.options.progress,
                                unit="instance")
        if self.resumed and note_resumed:
            self.bar.write(f"resuming: {self.resumed} instances already done in {job.out}",
                           file=sys.stderr)
        waiting = {(t.population, t.instance) for t in todo}
        start = time.perf_counter()
        interrupts = Interrupts()
        disk_full = False  # the run stopped on a full disk: what follows may meet it again
        try:
            for phase in (first, derived):
                units = self._units([t for t in phase if (t.population, t.instance) in waiting],
                                    derived=phase is derived)
                for index, outcome in job.backend.map_unordered(self.trainer.train_unit, units):
                    self._keep(units[index][0], outcome)
                    if interrupts.requested:
                        raise KeyboardInterrupt
        except DiskFullError:
            disk_full = True
            raise
        finally:
            interrupts.restore()
            self.bar.close()
            seconds = time.perf_counter() - start
            try:  # the files of what is done; on a full disk, the resume writes them
                counts, flags, removed = self._finish()
            except DiskFullError:
                if not disk_full:
                    raise
        tally = self.tally
        return RunReport(trained=tally.trained, resumed=self.resumed, failures=tally.failures,
                         failed_before=failed_before, lost=tally.lost, diverged=tally.diverged,
                         seconds=seconds, counts=counts, flags=flags,
                         trained_per_population=tally.per_population, removed=removed,
                         out=job.out, name=job.name)

    def _units(self, todo: list[Assignment], derived: bool) -> list[tuple]:
        """The phase's calls of the trainer's ``train_unit``; a model-level mutant with its
        healthy instance's kept weights."""
        job = self.job
        if derived:
            return [([t], False, read_weights(job.out, t.instance)) for t in todo]
        units = _units(todo, job.settings, job.dataset,
                       lambda text: self.bar.write(text, sys.stderr), job.unstackable,
                       self.trainer)
        idle = idle_workers(units, getattr(job.backend, "jobs", 1))
        if idle and not self.resumed:  # advice for a run's start, not its resume
            self.bar.write(f"probmut train: {idle}", file=sys.stderr)
        return units

    def _keep(self, assignments: list[Assignment], outcome) -> None:
        """Record a unit's results (a stack's all or none), count them, and assemble each
        population whose last instance this was."""
        tally, out = self.tally, self.job.out
        results = []
        for assignment, result in zip(assignments, _per_assignment(outcome, len(assignments)),
                                      strict=True):
            if isinstance(result, BaseException) and not isinstance(result, TaskLost):
                seconds = self.job.options.timeout if isinstance(result, InstanceTimeout) \
                    else math.nan
                result = _failure(assignment, result, seconds)
            results.append(result)
        with together():  # a stack's records: all or none (a full disk half-way)
            for result in results:
                if not isinstance(result, TaskLost):  # not the instance's doing: no record
                    save_record(out, result, result.model_suffix or self.trainer.suffix)
        for assignment, result in zip(assignments, results, strict=True):
            population = assignment.population
            tally.count(assignment, result)
            self.left[population] -= 1
            if self.left[population] == 0:
                self.stored[population] = assemble(out, population, self.targets[population],
                                                   self.labels,
                                                   self.job.options.write_deepcrime_csv)
        # one update per unit: a stack's members finish together
        self.bar.set_postfix(done=tally.trained, failed=len(tally.failures),
                             left=self.bar.total - self.bar.n - len(assignments), refresh=False)
        self.bar.update(len(assignments))

    def _finish(self) -> tuple[dict[str, int], dict[str, Flags], dict[str, str]]:
        """Assemble the populations not assembled yet, find their flags, apply the quality
        control, and write the manifest with what the run found: each population's
        instances on disk and flags, and the reasons the quality control removed some."""
        job = self.job
        for population in self.populations:
            if population not in self.stored:
                self.stored[population] = assemble(job.out, population,
                                                   self.targets[population], self.labels,
                                                   job.options.write_deepcrime_csv)
        counts = {population: len(self.stored[population]) for population in self.populations}
        flags = {population: self._flags(population, m)
                 for population, m in self.mutation_of.items() if counts[population]}
        removed = {}
        if self.max_error_rate is not None:
            removed = removed_by_quality_control(job.out, self.mutations, self.max_error_rate,
                                                 counts)
        self._write_manifest(flags, removed)
        return counts, flags, removed

    def _flags(self, population: str, mutation: Mutation | None) -> Flags:
        """A population's flags (:func:`probmut.train.quality.assembled_flags`) and, for a
        user's training code, whether its mutation reached the code
        (:func:`probmut.train.user_code.application`), said once per population."""
        stored, job = self.stored[population], self.job
        found = ("", "")
        if self.trainer.user_code:
            from probmut.train.user_code import application

            found = application(mutation, job.settings.config, job.dataset,
                                [s.read for s in stored if s.record.status not in RETRYABLE])
        for word, reason in zip((NOT_APPLIED, UNVERIFIED), found, strict=True):
            if reason:
                warnings.warn(f"{population}: {reason.split(' (')[0]}: flagged {word} (its "
                              "verdicts and the mutation score leave it out)",
                              UnappliedMutationWarning, stacklevel=2)
        return assembled_flags(job.out, population, job.dataset, mutation,
                               [s.match for s in stored], *found)

    def _write_manifest(self, flags: dict[str, Flags] | None = None,
                        removed: dict[str, str] | None = None) -> None:
        """Add the run's populations to ``OUT/manifest.toml`` with their targets (instances
        per population) and, once assembled, what the run found: their ``flags``
        (population -> Flags, with why a population is a survivor) and the reasons the
        quality control ``removed`` some (population -> reason)."""
        settings = self.job.settings
        cfg = settings.config
        none = Flags()
        found = lambda m: [] if flags is None else [  # noqa: E731
            list(flags.get(m.population, none).flags), flags.get(m.population, none).survivor,
            (removed or {}).get(m.population, "")]
        given = [f"{cfg.epochs} epochs"] * (cfg.epochs is not None) \
            + [f"batch {cfg.batch_size}"] * (cfg.batch_size is not None)
        add_to_manifest(self.job.out / "manifest.toml", self.job.name, f"{HEALTHY}.csv",
                        f"{self.trainer.describe()} on {settings.dataset}, "
                        + ", ".join([f"{max(self.targets.values())} instances", *given,
                                     f"seed {settings.seed}"]) + " (probmut train)",
                        [(m.operator.name, m.magnitude, m.operator.paired, *found(m))
                         for m in self.mutations],
                        data=self.provenance,
                        targets={f"{population}.csv": n for population, n in self.targets.items()})
