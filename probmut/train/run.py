"""Resumable population runs: plan the missing instances, run them, assemble the files.

Layout of an output directory ``OUT``::

    OUT/manifest.toml                      run manifest read by the analysis commands
    OUT/healthy.csv                        instance,accuracy,seed (one row per instance)
    OUT/healthy.outcomes.npz               per-input outcomes (probmut.io.outcomes)
    OUT/{operator}_{magnitude}.csv         one file per mutant population (+ .outcomes.npz)
    OUT/.work/settings.json                the shared settings and the data's provenance;
                                           a resume must match them
    OUT/.work/{population}/{id}.npz        one record per finished instance
    OUT/.work/weights/healthy/{id}.npz     trained healthy weights (model-level runs)

Every file is written to a temporary name and renamed, so a run killed at any moment
leaves only whole files; running the same command again trains only what is missing.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.atomic import LockedError, atomic_write, exclusive, remove_orphans
from probmut.io.checked import DamagedFile, read_checked, write_checked
from probmut.io.manifest import add_to_manifest
from probmut.io.outcomes import load_outcomes, save_outcomes
from probmut.train.flags import Flags
from probmut.train.flags import population_flags as flags_of
from probmut.train.instance import (
    HEALTHY,
    InstanceResult,
    RunSettings,
    Task,
    stacked,
    train_instance,
)
from probmut.train.operators import Mutation
from probmut.train.tasks import TASKS, strata


def _record_path(out: Path, population: str, instance: int) -> Path:
    return out / ".work" / population / f"{instance:05d}.npz"


def _weights_path(out: Path, instance: int) -> Path:
    return out / ".work" / "weights" / HEALTHY / f"{instance:05d}.npz"


class DamagedRecordWarning(UserWarning):
    """A finished instance's record failed its checks; the instance is trained again."""


def _record_key(population: str, instance: int) -> str:
    return f"record {population} {instance}"


def _save_record(out: Path, result: InstanceResult) -> None:
    equivalent = {} if result.equivalent is None else {"equivalent": np.bool_(result.equivalent)}
    write_checked(_record_path(out, result.population, result.instance),
                  _record_key(result.population, result.instance),
                  accuracy=np.float64(result.accuracy), seed=np.int64(result.seed),
                  seconds=np.float64(result.seconds), correct=np.packbits(result.correct),
                  n_inputs=np.int64(result.correct.size), **equivalent)
    if result.weights is not None:
        write_checked(_weights_path(out, result.instance), _record_key("weights", result.instance),
                      **{f"arr_{k}": w for k, w in enumerate(result.weights)})


def _load_record(out: Path, population: str, instance: int) -> dict | None:
    """A finished instance's record, or None if it is missing or damaged (warned)."""
    path = _record_path(out, population, instance)
    if not path.exists():
        return None
    try:
        record = read_checked(path, _record_key(population, instance),
                              {"accuracy": (), "seed": (), "n_inputs": (), "correct": None})
        if record["correct"].size != (int(record["n_inputs"]) + 7) // 8:
            raise DamagedFile("outcome bits do not fit n_inputs")
        return record
    except DamagedFile as problem:
        warnings.warn(f"{path}: damaged record ({problem}); the instance is trained again",
                      DamagedRecordWarning, stacklevel=2)
        return None


def _load_weights(out: Path, instance: int):
    """Kept healthy weights of one instance, or None (missing or damaged: retrained)."""
    path = _weights_path(out, instance)
    if not path.exists():
        return None
    try:
        data = read_checked(path, _record_key("weights", instance))
    except DamagedFile as problem:
        warnings.warn(f"{path}: damaged weights ({problem}); the healthy instance is trained "
                      "again for its mutants", DamagedRecordWarning, stacklevel=2)
        return None
    return [data[f"arr_{k}"] for k in range(len(data))]


def _check_settings(out: Path, settings: RunSettings, data: dict) -> None:
    """Refuse to resume into ``out`` with settings, or data, other than those it was
    started with. ``data`` is the data set's provenance; its fingerprint and split sizes
    decide (not, say, the version of the library that loaded it)."""
    path = out / ".work" / "settings.json"
    identity = {key: data[key] for key in ("name", "train", "validation", "test", "fingerprint")}
    current = json.loads(json.dumps({**dataclasses.asdict(settings), "data": identity}))
    if path.exists():
        # runs from before --stack, or from before the data was recorded (not checked)
        previous = {"stack": 1, "data": identity} | json.loads(path.read_text())
        if previous != current:
            changed = sorted(k for k in current if previous.get(k) != current[k])
            before = [previous.get(k) for k in changed if k != "data"]
            if "data" in changed:
                old = previous.get("data") or {}
                before.append(f"data {old.get('name')} with {old.get('train')} training and "
                              f"{old.get('test')} test samples, fingerprint "
                              f"{str(old.get('fingerprint'))[:12]}")
            raise ProbmutError(f"{out} holds a run with other settings ({', '.join(changed)} "
                               f"differ: {before} before); use the same settings and data to "
                               "resume, or a new --out")
    else:
        atomic_write(path, lambda handle: handle.write(json.dumps(current, indent=1).encode()))


def assemble(out: Path, population: str, instances: int, labels, deepcrime: bool = False) -> int:
    """(Re)write ``{population}.csv`` and ``.outcomes.npz`` from the finished records with
    ids below ``instances``; returns how many there are. ``deepcrime`` also writes
    ``{population}.deepcrime.csv`` in DeepCrime's ``;``-separated format."""
    ids, accuracies, seeds, rows = [], [], [], []
    for instance in range(instances):
        record = _load_record(out, population, instance)
        if record is not None:
            ids.append(instance)
            accuracies.append(float(record["accuracy"]))
            seeds.append(int(record["seed"]))
            rows.append(np.unpackbits(record["correct"], count=int(record["n_inputs"])))
    lines = ["instance,accuracy,seed"]
    lines += [f"{i},{a!r},{s}" for i, a, s in zip(ids, accuracies, seeds, strict=True)]
    atomic_write(out / f"{population}.csv", lambda h: h.write(("\n".join(lines) + "\n").encode()))
    matrix = np.array(rows, dtype=bool).reshape(len(ids), len(labels))
    save_outcomes(out / f"{population}.outcomes.npz", ids, matrix, labels)
    if deepcrime:
        header = ";".join(["true_label", *(f"pred_label_model_{i}" for i in ids)])
        values = ";".join(["", *(repr(a) for a in accuracies)])
        atomic_write(out / f"{population}.deepcrime.csv",
                     lambda h: h.write(f"{header}\n{values}\n".encode()))
    return len(ids)


def train_unit(tasks: list[Task], stack: bool, healthy_weights=None, *, dataset) -> list:
    """One unit of work for a backend: a stack of instances of one population (``stack``)
    or one instance; returns one result per task."""
    if stack:
        from probmut.train.stack import train_stack

        return train_stack(tasks, dataset=dataset)
    return [train_instance(tasks[0], healthy_weights, dataset=dataset)]


def _units(tasks: list[Task], settings: RunSettings, dataset, say) -> list[tuple]:
    """Group ``tasks`` (not model-level) into the calls of :func:`train_unit`: with
    ``settings.stack`` K > 1, instances ``[jK, (j+1)K)`` of a stackable population form
    stack j (its missing ones only, on a resume); other tasks run one by one, and
    ``say`` tells why once per population."""
    from probmut.train.operators import OPERATORS
    from probmut.train.stack import population_problem

    units, stacks, told = [], {}, set()
    for task in tasks:
        operator = OPERATORS[task.operator] if task.operator else None
        config = settings.config
        if operator is not None and operator.level == "training":
            config = operator.apply(config, task.params)
        if settings.stack > 1 and stacked(settings, dataset, config):
            stacks.setdefault((task.population, task.instance // settings.stack), []).append(task)
            continue
        if settings.stack > 1 and task.population not in told:
            told.add(task.population)
            say(f"probmut train: {task.population}: training one instance at a time: "
                f"{population_problem(settings.model, dataset, config)}")
        units.append(([task], False, None))
    return [(group, True, None) for group in stacks.values()] + units


def _per_task(outcome, count: int) -> list:
    """A unit's results, or its one exception for each of its ``count`` tasks."""
    return [outcome] * count if isinstance(outcome, BaseException) else outcome


def population_flags(out: Path, population: str, instances: int, dataset,
                     mutation: Mutation | None) -> Flags:
    """The flags of one assembled population (see :mod:`probmut.train.flags`)."""
    _, correct, labels = load_outcomes(out / f"{population}.outcomes.npz")
    records = []
    for instance in range(instances):
        record = _load_record(out, population, instance)
        if record is not None:
            records.append(bool(record["equivalent"]) if "equivalent" in record else None)
    task = TASKS[dataset.task]
    return flags_of(correct, labels, task.chance(dataset.y_train, dataset.y_test), dataset.task,
                    equivalent_before=mutation.equivalent if mutation else "",
                    equivalent_instances=records)


@dataclass
class RunReport:
    """What a run did: instances trained now, found already done, failures, and each
    population's instances on disk and flags."""

    trained: int = 0
    resumed: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)  # population -> instances on disk
    flags: dict[str, Flags] = field(default_factory=dict)


def run_populations(settings: RunSettings, mutations: list[Mutation], instances: int,
                    out: Path, backend, dataset, *, name: str, deepcrime: bool = False,
                    progress: bool = True) -> RunReport:
    """Train the healthy population and every mutant population up to ``instances``
    instances each, skipping finished ones; write populations and manifest into ``out``.

    ``backend`` is one of :mod:`probmut.train.backends` (entered by the caller);
    ``mutations`` must be bound (:func:`probmut.train.operators.bind`).
    """
    out = Path(out)
    try:
        with exclusive(out / ".work", "lock"):
            return _run_populations(settings, mutations, instances, out, backend, dataset,
                                    name, deepcrime, progress)
    except LockedError as error:
        raise ProbmutError(f"{out}: another probmut train is writing to this directory "
                           f"({error}); wait for it to finish or give another --out") from None


def _run_populations(settings, mutations, instances, out, backend, dataset, name, deepcrime,
                     progress) -> RunReport:
    from tqdm import tqdm

    provenance = dataset.provenance()
    _check_settings(out, settings, provenance)
    remove_orphans(out)  # left by a killed run; the lock keeps other runs out
    model_level = [m for m in mutations if m.operator.level == "model"]
    populations = {HEALTHY: None} | {m.stem: m for m in mutations}
    trained_first = [Task(settings, stem, i, m and m.operator.name, m and m.params,
                          keep_weights=stem == HEALTHY and (bool(model_level) or settings.stack > 1))
                     for stem, m in populations.items() if m is None or m.operator.level != "model"
                     for i in range(instances)]
    derived = [Task(settings, m.stem, i, m.operator.name, m.params)
               for m in model_level for i in range(instances)]
    done = {(t.population, t.instance) for t in trained_first + derived
            if _load_record(out, t.population, t.instance) is not None}
    is_done = lambda task: (task.population, task.instance) in done  # noqa: E731
    report = RunReport(resumed=len(done))
    left = {stem: sum(not is_done(t) for t in trained_first + derived if t.population == stem)
            for stem in populations}
    bar = tqdm(total=len(trained_first) + len(derived) - report.resumed, unit="inst",
               desc=f"train {name}", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    if report.resumed:
        bar.write(f"resuming: {report.resumed} instances already done in {out}", file=sys.stderr)
    start = time.perf_counter()
    labels = strata(dataset.y_test, dataset.task)  # continuous targets: their label buckets
    try:
        for phase in (trained_first, derived):
            todo = [t for t in phase if not is_done(t)]
            if phase is derived:
                units = [([t], False, _load_weights(out, t.instance)) for t in todo]
            else:
                units = _units(todo, settings, dataset, lambda text: bar.write(text, sys.stderr))
            for index, outcome in backend.map_unordered(train_unit, units):
                tasks = units[index][0]
                for task, result in zip(tasks, _per_task(outcome, len(tasks)), strict=True):
                    if isinstance(result, BaseException):
                        report.failures.append(f"{task.population} instance {task.instance}: "
                                               f"{type(result).__name__}: {result}")
                    else:
                        _save_record(out, result)
                        report.trained += 1
                    left[task.population] -= 1
                    if left[task.population] == 0:
                        report.counts[task.population] = assemble(
                            out, task.population, instances, labels, deepcrime)
                    bar.set_postfix(done=report.trained, failed=len(report.failures),
                                    left=bar.total - bar.n - 1, refresh=False)
                    bar.update()
    finally:
        bar.close()
        report.seconds = time.perf_counter() - start
        for stem in populations:
            if stem not in report.counts:
                report.counts[stem] = assemble(out, stem, instances, labels, deepcrime)
        report.counts = {stem: report.counts[stem] for stem in populations}
        report.flags = {stem: population_flags(out, stem, instances, dataset, m)
                        for stem, m in populations.items() if report.counts[stem]}
        cfg = settings.config
        add_to_manifest(out / "manifest.toml", name, f"{HEALTHY}.csv",
                        f"{settings.model} on {settings.dataset}, {instances} instances, "
                        f"{cfg.epochs} epochs, batch {cfg.batch_size}, seed {settings.seed} "
                        "(probmut train)",
                        [(m.operator.name, m.magnitude, m.operator.paired,
                          list(report.flags[m.stem].flags) if m.stem in report.flags else [])
                         for m in mutations],
                        data=provenance)
    return report
