"""Populations: read and validate accuracy files, write tidy CSV, pair by instance id.

Two formats are read, told apart by their header:

- **DeepCrime's** (the paper's data): ``;``-separated, a header
  ``true_label;pred_label_model_0;...`` (or ``true_labels``), and a last row holding an
  empty first cell then one accuracy per instance, in instance order.
- **tidy CSV**: one row per instance with columns ``instance`` and ``accuracy``
  (comma-separated; other columns are allowed and ignored). The trainer and ``probmut
  evaluate`` add the symptom columns of :mod:`probmut.io.records` (:data:`COLUMNS`).

Every value must be an accuracy in [0, 1]. A missing accuracy (empty cell, NaN) is
dropped with a :class:`MissingAccuracyWarning` naming the file and the instance, or is
an error with ``strict=True``. So is a failed instance (``status`` crashed, timed out or
diverged), with a :class:`~probmut.io.records.FailedInstanceWarning`:
:func:`read_population` returns only the instances an analysis may count, and
:func:`read_instances` every record.

A file from a run that stopped early holds fewer instances than the run's target
(recorded in its manifest: :meth:`~probmut.io.manifest.Manifest.target`): every reader
says so with an :class:`IncompleteRunWarning`, or refuses with ``strict=True``, and
refuses a population with none of them (:func:`check_complete`).
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write_text
from probmut.io.manifest import population_target
from probmut.io.records import STATUSES, AllFailedError, FailedInstanceWarning, InstanceRecord

_DEEPCRIME_HEADERS = ("true_label", "true_labels")
#: Instance ids are stored as 64-bit integers.
_LARGEST_ID = 2**63 - 1

#: The tidy CSV's columns as the trainer writes them (see :func:`write_instances`).
COLUMNS = ("instance", "accuracy", "seed", "status", "seconds", "loss", "constant",
           "initial_loss", "loss_history", "error")


class MissingAccuracyWarning(UserWarning):
    """An instance without an accuracy was dropped from a population."""


class IncompleteRunWarning(UserWarning):
    """A population holds fewer instances than the run that wrote it aims at."""


@dataclass(frozen=True)
class Completeness:
    """A population file's instances against the target of the run that wrote it.

    >>> short = Completeness("rs3", "rs3/delete_training_data_50.csv", instances=3, target=20)
    >>> short.complete
    False
    >>> print(short.message())
    rs3: delete_training_data_50 has 3 of 20 instances (the run stopped early: rerun the same `probmut train` command to finish it)
    """

    model: str
    file: str
    instances: int  # records in the file, failed ones included
    target: int

    @property
    def population(self) -> str:
        return Path(self.file).stem

    @property
    def complete(self) -> bool:
        return self.instances >= self.target

    def message(self) -> str:
        return (f"{self.model}: {self.population} has {self.instances} of {self.target} "
                "instances (the run stopped early: rerun the same `probmut train` command to "
                "finish it)")

    def to_dict(self) -> dict:
        return {"population": self.population, "file": self.file, "instances": self.instances,
                "target": self.target, "complete": self.complete}


#: The completeness of every population read inside :func:`noting_completeness`.
_NOTED: ContextVar[list | None] = ContextVar("probmut_completeness", default=None)


@contextmanager
def noting_completeness():
    """Note the :class:`Completeness` of every population read inside the block, one per
    file; yields their list, which :func:`noted_completeness` also returns. The command
    line runs each command inside one and adds what was noted to its JSON output.

    >>> with noting_completeness() as noted:
    ...     _ = check_complete("nowhere/x.csv", 3)  # no run manifest there: nothing noted
    >>> noted
    []
    """
    token = _NOTED.set([])
    try:
        yield _NOTED.get()
    finally:
        _NOTED.reset(token)


def noted_completeness() -> list[Completeness]:
    """What the innermost :func:`noting_completeness` block has noted so far."""
    return list(_NOTED.get() or ())


def check_complete(path, instances: int, strict: bool = False,
                   manifest=None) -> Completeness | None:
    """Compare the ``instances`` read from the population file ``path`` with the target
    of the run that wrote it (:func:`~probmut.io.manifest.population_target`): None when
    no run manifest records one. A population short of it is an
    :class:`IncompleteRunWarning` (one line with the counts), an error when ``strict``;
    one with no instance at all is always an error."""
    found = population_target(path, manifest)
    if found is None:
        return None
    completeness = Completeness(found[0], str(path), int(instances), found[1])
    noted = _NOTED.get()
    if noted is not None:  # a file read again replaces its earlier note
        noted[:] = [c for c in noted if c.file != completeness.file] + [completeness]
    if not completeness.complete:
        if instances == 0:
            raise ProbmutError(completeness.message())
        if strict:
            raise ProbmutError(completeness.message(), option="strict")
        warnings.warn(completeness.message(), IncompleteRunWarning, stacklevel=3)
    return completeness


@dataclass(frozen=True, eq=False)
class Population:
    """Accuracies of independently trained instances, one per instance id.

    Examples
    --------
    >>> pop = Population.from_values([0.91, 0.93, 0.92], name="healthy")
    >>> pop
    Population('healthy', 3 instances, mean 0.92)
    >>> pop.ids.tolist()
    [0, 1, 2]
    """

    values: np.ndarray
    ids: np.ndarray
    name: str = "population"
    source: str | None = None

    @classmethod
    def from_values(cls, values, ids=None, name: str = "population",
                    source: str | None = None) -> Population:
        """A validated population, its instances in the order of their ids (so that
        results never depend on the order in which rows were given)."""
        where = source or name
        try:
            values = np.asarray(values, dtype=np.float64)
            ids = np.arange(values.size) if ids is None else np.asarray(ids, dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as error:
            raise ProbmutError(f"{where}: accuracies must be numbers and instance ids "
                               f"integers ({error})") from None
        _validate(values, ids, where)
        order = np.argsort(ids, kind="stable")
        return cls(values=values[order], ids=ids[order], name=name, source=source)

    def __len__(self) -> int:
        return self.values.size

    def __repr__(self) -> str:
        return f"Population({self.name!r}, {len(self)} instances, mean {self.values.mean():.4g})"

    def subset(self, ids) -> Population:
        """The instances with the given ids, in that order."""
        position = {int(i): k for k, i in enumerate(self.ids)}
        try:
            rows = [position[int(i)] for i in ids]
        except KeyError as missing:
            raise ProbmutError(f"{self.where}: no instance with id {missing}") from None
        return Population(self.values[rows], self.ids[rows], self.name, self.source)

    @property
    def where(self) -> str:
        return self.source or self.name


def _validate(values: np.ndarray, ids: np.ndarray, where: str) -> None:
    if values.ndim != 1 or ids.shape != values.shape:
        raise ProbmutError(f"{where}: accuracies and instance ids must be 1-D and of equal length")
    if values.size == 0:
        raise ProbmutError(f"{where}: no accuracies found")
    if not np.all(np.isfinite(values)):
        bad = ids[~np.isfinite(values)]
        raise ProbmutError(f"{where}: NaN or infinite accuracy for instance(s) {bad.tolist()[:10]}")
    outside = (values < 0) | (values > 1)
    if outside.any():
        raise ProbmutError(
            f"{where}: {int(outside.sum())} value(s) outside [0, 1] (e.g. instance "
            f"{int(ids[outside][0])}: {values[outside][0]:g}, largest {values.max():g}); "
            "probmut needs accuracies (shares of correct test inputs), not losses or errors")
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ProbmutError(f"{where}: duplicate instance id(s) {unique[counts > 1].tolist()[:10]}")


def _parse_float(cell: str, where: str, instance) -> float:
    try:
        return float(cell)
    except ValueError:
        raise ProbmutError(
            f"{where}: instance {instance}: {cell.strip()!r} is not a number") from None


def _drop_missing(values: list[float], ids: list[int], where: str, strict: bool):
    missing = [i for i, v in zip(ids, values, strict=True) if math.isnan(v)]
    if not missing:
        return values, ids
    if strict:
        raise ProbmutError(f"{where}: no accuracy for instance(s) {missing}", option="strict")
    warnings.warn(f"{where}: no accuracy for instance(s) {missing}; dropped (a strict "
                  "reading makes this an error)", MissingAccuracyWarning, stacklevel=3)
    kept = [k for k, v in enumerate(values) if not math.isnan(v)]
    return [values[k] for k in kept], [ids[k] for k in kept]


def _cells(count: int) -> str:
    return f"{count} cell" + ("" if count == 1 else "s")


def _read_deepcrime(lines: list[str], where: str):
    header = lines[0].split(";")
    rows = [line for line in lines[1:] if line.strip()]
    if not rows:
        raise ProbmutError(f"{where}: DeepCrime header found but no accuracy row")
    cells = rows[-1].split(";")[1:]
    names = header[1:]
    if len(cells) != len(names):
        raise ProbmutError(
            f"{where}: the header names {len(names)} instances but the last row holds "
            f"{len(cells)} values")
    for number, line in enumerate(lines[1:], start=2):
        if line.count(";") != len(names):
            raise ProbmutError(f"{where}: line {number} holds {_cells(line.count(';') + 1)}, "
                               f"the header {len(header)} (a ragged row)")
    ids = []
    for k, name in enumerate(names):
        match = re.search(r"(\d+)\s*$", name)
        ids.append(int(match.group(1)) if match else k)
    values = [math.nan if not c.strip() else _parse_float(c, where, i)
              for c, i in zip(cells, ids, strict=True)]
    return values, ids


def _drop_failed(values, ids, statuses, where: str, strict: bool):
    failed = [(i, s) for i, s in zip(ids, statuses, strict=True) if s not in ("", "ok")]
    if not failed:
        return values, ids
    named = ", ".join(f"{i} ({s})" for i, s in failed[:10]) + (" ..." if len(failed) > 10 else "")
    if strict:
        raise ProbmutError(f"{where}: failed instance(s) {named}", option="strict")
    kept = [k for k, s in enumerate(statuses) if s in ("", "ok")]
    if not kept:
        raise AllFailedError(f"{where}: every instance failed ({named}); nothing to analyse "
                           "(see probmut symptoms)")
    warnings.warn(f"{where}: failed instance(s) {named} dropped: crashed, timed-out and "
                  "diverged instances are not counted (see probmut symptoms; a strict reading "
                  "makes this an error)", FailedInstanceWarning, stacklevel=4)
    return [values[k] for k in kept], [ids[k] for k in kept]


def _tidy_rows(lines: list[str], where: str):
    """The rows of a tidy CSV as dicts with stripped keys and cells, and line numbers."""
    reader = csv.DictReader(lines)
    fields = [f.strip() for f in (reader.fieldnames or [])]
    if "accuracy" not in fields or "instance" not in fields:
        raise ProbmutError(
            f"{where}: unknown format; expected DeepCrime's (header 'true_label;...') or a "
            f"tidy CSV with columns 'instance,accuracy' (found columns {fields})")
    twice = [f for f in COLUMNS if fields.count(f) > 1]
    if twice:
        raise ProbmutError(f"{where}: the header has {fields.count(twice[0])} columns named "
                           f"{twice[0]!r}; keep one")
    reader.fieldnames = fields
    for line_number, row in enumerate(reader, start=2):
        if None in row or None in row.values():  # more cells than columns, or fewer
            count = len(fields) + len(row.get(None, [])) - list(row.values()).count(None)
            raise ProbmutError(f"{where}: line {line_number} holds {_cells(count)}, the header "
                               f"{len(fields)} (a ragged row)")
        cells = {k: v.strip() for k, v in row.items()}
        try:
            cells["instance"] = int(cells.get("instance", ""))
        except ValueError:
            raise ProbmutError(f"{where}: line {line_number}: instance id "
                               f"{row.get('instance')!r} is not an integer") from None
        status = cells.get("status", "")
        if status and status not in STATUSES:
            raise ProbmutError(f"{where}: line {line_number}: unknown status {status!r} "
                               f"(one of {', '.join(STATUSES)})")
        yield cells


def _read_tidy(lines: list[str], where: str):
    values, ids, statuses = [], [], []
    for cells in _tidy_rows(lines, where):
        ids.append(cells["instance"])
        cell = cells.get("accuracy", "")
        values.append(math.nan if cell == "" else _parse_float(cell, where, ids[-1]))
        statuses.append(cells.get("status", ""))
    return values, ids, statuses


def _lines(path: Path) -> list[str]:
    if not path.exists():
        raise ProbmutError(f"{path}: no such file")
    if path.is_dir():
        raise ProbmutError(f"{path}: is a directory, expected a population CSV file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ProbmutError(f"{path}: cannot read it as text ({error})") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ProbmutError(f"{path}: the file is empty")
    return lines


def _run_lines(path: Path, strict: bool, manifest) -> list[str]:
    """:func:`_lines`, with a missing file that a run manifest lists named as a
    population of a run that stopped before writing it."""
    if not path.exists():
        check_complete(path, 0, strict, manifest)
    return _lines(path)


def _is_deepcrime(lines: list[str]) -> bool:
    return lines[0].split(";")[0].strip().lower() in _DEEPCRIME_HEADERS


def read_population(path, name: str | None = None, strict: bool = False,
                    manifest=None) -> Population:
    """Read one population file (DeepCrime's format or tidy CSV) and validate it.

    Parameters
    ----------
    path : the file.
    name : a display name; default the file's stem.
    strict : a missing accuracy, a failed instance, or fewer instances than the run that
        wrote the file aims at (:func:`check_complete`) is an error instead of a warning.
    manifest : the :class:`~probmut.io.manifest.Manifest` that names the file, if any:
        where its run's target is looked up first.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "healthy.csv")
    >>> _ = open(path, "w").write("instance,accuracy\\n0,0.91\\n1,0.93\\n")
    >>> read_population(path).values.tolist()
    [0.91, 0.93]
    """
    path = Path(path)
    where = str(path)
    lines = _run_lines(path, strict, manifest)
    try:
        if _is_deepcrime(lines):
            values, ids = _read_deepcrime(lines, where)
            statuses = [""] * len(ids)
        else:
            values, ids, statuses = _read_tidy(lines, where)
    except csv.Error as error:
        raise ProbmutError(f"{where}: not a readable CSV file ({error})") from None
    check_complete(path, len(ids), strict, manifest)
    values, ids = _drop_failed(values, ids, statuses, where, strict)
    values, ids = _drop_missing(values, ids, where, strict)
    too_large = [i for i in ids if not 0 <= i <= _LARGEST_ID]
    if too_large:
        raise ProbmutError(f"{where}: instance id {too_large[0]} is outside 0..{_LARGEST_ID}")
    return Population.from_values(values, ids, name=name or path.stem, source=where)


def write_tidy(population: Population, path) -> None:
    """Write a population as tidy CSV (``instance,accuracy``), atomically.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "pop.csv")
    >>> write_tidy(Population.from_values([0.5, 0.75]), path)
    >>> open(path).read()
    'instance,accuracy\\n0,0.5\\n1,0.75\\n'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = ["instance,accuracy"] + [f"{int(i)},{float(v)!r}"
                                    for i, v in zip(population.ids, population.values, strict=True)]
    atomic_write_text(path, "\n".join(rows) + "\n")


def as_population(data, name: str = "population") -> Population:
    """The one way probmut turns what a user passes into a validated :class:`Population`.

    ``data`` is a Population (returned as is), a pandas Series (its index gives the
    instance ids when it holds integers), a DataFrame with ``instance`` and ``accuracy``
    columns, or any array-like of accuracies (ids 0, 1, ...).

    >>> import pandas as pd
    >>> as_population(pd.Series([0.9, 0.8], index=[4, 7]), "h").ids.tolist()
    [4, 7]
    >>> as_population(pd.DataFrame({"instance": [1, 0], "accuracy": [0.8, 0.9]})).values.tolist()
    [0.9, 0.8]
    """
    if isinstance(data, Population):
        return data
    columns = getattr(data, "columns", None)
    if columns is not None:
        if "accuracy" not in columns or "instance" not in columns:
            raise ProbmutError(f"{name}: a DataFrame needs 'instance' and 'accuracy' columns, "
                               f"got {list(columns)}")
        return Population.from_values(data["accuracy"].to_numpy(), data["instance"].to_numpy(),
                                      name=name)
    index = getattr(data, "index", None)
    if index is not None and np.issubdtype(np.asarray(index).dtype, np.integer):
        return Population.from_values(np.asarray(data), np.asarray(index), name=name)
    return Population.from_values(np.asarray(data, dtype=np.float64), name=name)


def aligned(healthy, mutant, paired: bool = False) -> tuple[Population, Population]:
    """Both populations (see :func:`as_population`), paired by instance id if ``paired``.

    >>> h, m = aligned([0.9, 0.8], Population.from_values([0.7, 0.6], ids=[1, 0]), True)
    >>> m.values.tolist()
    [0.6, 0.7]
    """
    healthy = as_population(healthy, "healthy")
    mutant = as_population(mutant, "mutant")
    return pair(healthy, mutant) if paired else (healthy, mutant)


def _number(text: str) -> str:
    return "" if not math.isfinite(text) else f"{text:.6g}"


def write_instances(path, records) -> None:
    """Write instance records (:class:`~probmut.io.records.InstanceRecord`) as the tidy
    CSV with every symptom column (:data:`COLUMNS`), atomically.

    Accuracies are written exactly (``repr``); losses to 6 significant digits, the loss
    history ``;``-separated; seconds to milliseconds; ``constant`` as 0/1; missing
    values as empty cells.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "pop.csv")
    >>> write_instances(path, [InstanceRecord(0, 0.75, 11, seconds=1.5, loss_history=(0.9, 0.5)),
    ...                        InstanceRecord(1, math.nan, 12, status="crashed", error="E: x, y")])
    >>> print(open(path).read().strip())
    instance,accuracy,seed,status,seconds,loss,constant,initial_loss,loss_history,error
    0,0.75,11,ok,1.500,0.5,,,0.9;0.5,
    1,,12,crashed,,,,,,"E: x, y"
    >>> [(r.instance, r.status) for r in read_instances(path)]
    [(0, 'ok'), (1, 'crashed')]
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in records:
        writer.writerow([
            r.instance, "" if math.isnan(r.accuracy) else repr(float(r.accuracy)),
            "" if r.seed is None else r.seed, r.status,
            "" if math.isnan(r.seconds) else f"{r.seconds:.3f}", _number(r.final_loss),
            "" if r.constant is None else int(r.constant), _number(r.initial_loss),
            ";".join(f"{v:.6g}" for v in r.loss_history), r.error])
    atomic_write_text(path, buffer.getvalue())


def _cell_float(cells: dict, key: str, where: str, instance: int) -> float:
    cell = cells.get(key, "")
    return math.nan if cell == "" else _parse_float(cell, where, instance)


def read_instances(path, strict: bool = False, manifest=None) -> list[InstanceRecord]:
    """Every instance record of a population file, failed ones included.

    Tidy CSVs without symptom columns (older runs, other tools) and DeepCrime's files
    give records with status ``ok`` and unknown symptoms. ``strict`` and ``manifest``: a
    file short of its run's target, as for :func:`read_population`.
    """
    path = Path(path)
    where = str(path)
    lines = _run_lines(path, strict, manifest)
    if _is_deepcrime(lines):
        values, ids = _read_deepcrime(lines, where)
        check_complete(path, len(ids), strict, manifest)
        values, ids = _drop_missing(values, ids, where, strict=False)
        return [InstanceRecord(int(i), float(v)) for i, v in zip(ids, values, strict=True)]
    records = []
    for cells in _tidy_rows(lines, where):
        instance = cells["instance"]
        history = cells.get("loss_history", "")
        constant = cells.get("constant", "")
        seed = cells.get("seed", "")
        records.append(InstanceRecord(
            instance=instance, accuracy=_cell_float(cells, "accuracy", where, instance),
            seed=int(seed) if seed else None, status=cells.get("status") or "ok",
            seconds=_cell_float(cells, "seconds", where, instance),
            loss_history=tuple(_parse_float(v, where, instance) for v in history.split(";"))
            if history else (),
            initial_loss=_cell_float(cells, "initial_loss", where, instance),
            constant=None if constant == "" else constant in ("1", "True", "true"),
            error=cells.get("error", "")))
    check_complete(path, len(records), strict, manifest)
    return records


def pair(healthy: Population, mutant: Population) -> tuple[Population, Population]:
    """Align two populations of a model-level mutation by instance id.

    Mutant instance i is derived from healthy instance i, so both must hold the same
    ids; an id on one side only is an error naming it.

    >>> h = Population.from_values([0.9, 0.8], ids=[3, 5], name="h")
    >>> m = Population.from_values([0.7, 0.6], ids=[5, 3], name="m")
    >>> pair(h, m)[1].values.tolist()
    [0.6, 0.7]
    """
    only_healthy = sorted(set(healthy.ids.tolist()) - set(mutant.ids.tolist()))
    only_mutant = sorted(set(mutant.ids.tolist()) - set(healthy.ids.tolist()))
    if only_healthy or only_mutant:
        details = []
        if only_healthy:
            details.append(f"ids only in {healthy.where}: {only_healthy[:10]}")
        if only_mutant:
            details.append(f"ids only in {mutant.where}: {only_mutant[:10]}")
        raise ProbmutError(
            "paired mode needs the same instance ids on both sides (mutant i is derived from "
            "healthy i); " + "; ".join(details))
    order = np.sort(healthy.ids)
    return healthy.subset(order), mutant.subset(order)


def text_start(path, length: int = 40) -> str | None:
    """The start of the file's first line if the file is text (e.g. a CSV given where a
    NumPy file was expected), else None: for messages that say what a file is.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "h.csv")
    >>> _ = open(path, "w").write("instance,accuracy\\n0,0.9\\n")
    >>> text_start(path)
    'instance,accuracy'
    """
    with open(path, "rb") as file:
        head = file.read(4 * length)
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    line = text.splitlines()[0] if text.strip() else ""
    return line[:length] if line.isprintable() and line.strip() else None


def load_kill_rates(path, trials: int) -> np.ndarray:
    """Saved Monte-Carlo kill rates (s_b / N, as the paper saves them) as kill counts.

    Accepts ``.npy`` arrays of float rates in [0, 1] or of integer counts in [0, N];
    returns an int array of counts, same shape. Rates that are not multiples of 1/N are
    an error.
    """
    path = Path(path)
    if not path.is_file():
        raise ProbmutError(f"{path}: no such file")
    text = text_start(path)
    if text is not None:
        raise ProbmutError(f"{path}: a text file ({text!r}...), not a NumPy .npy array of kill "
                           "rates; population files are given without --kill-rates")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise ProbmutError(f"{path}: not a NumPy .npy array ({error})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        array.close()
        raise ProbmutError(f"{path}: an .npz archive; give the .npy array of kill rates")
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ProbmutError(f"{path}: holds {array.dtype} values, not kill rates (numbers)")
    is_counts = np.issubdtype(array.dtype, np.integer)
    array = np.asarray(array, dtype=np.float64)
    if array.size == 0 or not np.all(np.isfinite(array)):
        raise ProbmutError(f"{path}: empty, or holds NaN/infinite values")
    counts = array if is_counts else array * trials
    rounded = np.rint(counts)
    if np.abs(counts - rounded).max() > 1e-6 or rounded.min() < 0 or rounded.max() > trials:
        raise ProbmutError(
            f"{path}: values are not kill rates of {trials} trials (multiples of 1/{trials} in "
            "[0, 1]); check the number of trials", option="trials")
    return rounded.astype(np.int64)


def has_symptom_records(path) -> bool:
    """Whether a population file carries its instances' symptom records: a tidy CSV
    with a ``status`` column, as the trainer and ``probmut evaluate`` write.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "pop.csv")
    >>> write_instances(path, [InstanceRecord(0, 0.75)])
    >>> has_symptom_records(path)
    True
    >>> write_tidy(Population.from_values([0.75]), path)
    >>> has_symptom_records(path)
    False
    """
    lines = _lines(Path(path))
    return not _is_deepcrime(lines) and "status" in {f.strip() for f in lines[0].split(",")}
