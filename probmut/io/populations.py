"""Population files: read and validate accuracy files; write tidy CSV, instance records
and DeepCrime's format. The population itself (:class:`~probmut.population.Population`,
pairing by instance id) is :mod:`probmut.population`; saved kill rates are
:mod:`probmut.io.arrays`.

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
says so with an :class:`~probmut.io.completeness.IncompleteRunWarning`, or refuses with
``strict=True``, and refuses a population with none of them
(:func:`~probmut.io.completeness.check_complete`).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import warnings
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write_text
from probmut.io.completeness import check_complete
from probmut.io.files import read_input_text
from probmut.io.manifest import manifest
from probmut.io.records import STATUSES, AllFailedError, FailedInstanceWarning, InstanceRecord
from probmut.population import Population, population
from probmut.validation import checked, flag, optional, path, text

_DEEPCRIME_HEADERS = ("true_label", "true_labels")

#: Instance ids are stored as 64-bit integers.
_LARGEST_ID = 2**63 - 1

#: The largest population file read (1 GiB): DeepCrime's format holds a prediction per
#: instance and test input, so this is 1,000 instances on about 500,000 test inputs; a
#: larger file is not a population (a device, a log or an archive given by mistake).
MAX_FILE_BYTES = 2**30

#: The tidy CSV's columns as the trainer writes them (see :func:`write_instances`).
COLUMNS = ("instance", "accuracy", "seed", "status", "seconds", "loss", "constant",
           "initial_loss", "loss_history", "error")


class MissingAccuracyWarning(UserWarning):
    """An instance without an accuracy was dropped from a population."""


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
                  "reading makes this an error)", MissingAccuracyWarning, stacklevel=4)
    kept = [k for k, v in enumerate(values) if not math.isnan(v)]
    return [values[k] for k in kept], [ids[k] for k in kept]


def _cells(count: int) -> str:
    return f"{count} cell" + ("" if count == 1 else "s")


def _read_deepcrime(lines: list[str], where: str):
    header = lines[0].split(";")
    rows = [line for line in lines[1:] if line.strip()]
    if not rows:
        raise ProbmutError(f"{where}: DeepCrime header found but no accuracy row")
    first, *cells = rows[-1].split(";")
    if first.strip():  # a prediction row: its first cell is the input's true label
        raise ProbmutError(
            f"{where}: no accuracy row: DeepCrime's last row starts with an empty cell, then "
            f"one accuracy per instance; this one starts with {first.strip()[:20]!r}, as a "
            "row of predictions does (the file is cut short, or not DeepCrime's)")
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
                  "makes this an error)", FailedInstanceWarning, stacklevel=5)
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
    text = read_input_text(path, "a population CSV file", MAX_FILE_BYTES)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ProbmutError(f"{path}: the file is empty")
    return lines


def _run_lines(path: Path, strict: bool, manifest) -> list[str]:
    """:func:`_lines`, with a missing file that a run manifest lists named as a
    population of a run that stopped before writing it."""
    if not os.path.lexists(path):  # a link, even a loop, is there: _lines names it
        check_complete(path, 0, strict, manifest)
    return _lines(path)


def _is_deepcrime(lines: list[str]) -> bool:
    return lines[0].split(";")[0].strip().lower() in _DEEPCRIME_HEADERS


@checked(path=path, name=optional(text), strict=flag, manifest=optional(manifest))
def read_population(path, name: str | None = None, strict: bool = False,
                    manifest=None) -> Population:
    """Read one population file (DeepCrime's format or tidy CSV) and validate it.

    Parameters
    ----------
    path : path-like
        The file.
    name : str, optional
        A display name (default: the file's stem).
    strict : bool, optional
        A missing accuracy, a failed instance, or fewer instances than the run that wrote
        the file aims at (:func:`check_complete`) is an error instead of a warning.
    manifest : Manifest, optional
        The :class:`~probmut.io.manifest.Manifest` that names the file, if any: where its
        run's target is looked up first.

    Returns
    -------
    Population
        The scored instances (failed and missing ones dropped, with a warning), ids as
        written, ``name`` and the file as ``source``.

    Raises
    ------
    ProbmutError
        A missing, unreadable or malformed file; an accuracy outside [0, 1]; a repeated
        or out-of-range id; with ``strict``, a missing accuracy, a failed instance or an
        unfinished run.

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


@checked(population=population, path=path)
def write_tidy(population: Population, path) -> None:
    """Write a population as tidy CSV (``instance,accuracy``), atomically.

    Raises
    ------
    ProbmutError
        The file cannot be written (:func:`probmut.io.atomic.atomic_write_text`), or
        ``population`` is not a population.

    Examples
    --------
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


def write_deepcrime(path, records) -> None:
    """Write instance records in DeepCrime's ``;``-separated format, atomically: a header
    naming each instance, a last row of their accuracies (written exactly, ``repr``).
    Failed instances are left out: that format has no status.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "pop.deepcrime.csv")
    >>> write_deepcrime(path, [InstanceRecord(0, 0.75),
    ...                        InstanceRecord(1, math.nan, status="crashed"),
    ...                        InstanceRecord(2, 0.5)])
    >>> print(open(path).read().strip())
    true_label;pred_label_model_0;pred_label_model_2
    ;0.75;0.5
    >>> read_population(path).ids.tolist()
    [0, 2]
    """
    kept = [r for r in records if not r.failed]
    header = ";".join(["true_label", *(f"pred_label_model_{r.instance}" for r in kept)])
    values = ";".join(["", *(repr(r.accuracy) for r in kept)])
    atomic_write_text(path, f"{header}\n{values}\n")


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


def instances_so_far(path) -> list[InstanceRecord]:
    """The instance records a population file holds so far (:func:`read_instances`):
    none, without an error, for a file not written yet, an empty one or one holding only
    its header (what a run stopped before any instance of it finished leaves behind).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "pop.csv")
    >>> instances_so_far(path)
    []
    >>> write_instances(path, [])
    >>> open(path).read().startswith("instance,accuracy"), instances_so_far(path)
    (True, [])
    """
    path = Path(path)
    if not path.is_file() or not path.read_bytes().strip() or len(_lines(path)) < 2:
        return []
    return read_instances(path)


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
