"""Score saved models (``.keras``, or legacy ``.h5`` where Keras reads it; torch's ``.pt``
state dicts: :mod:`probmut.train.torch.saved`) into population files: ``probmut
evaluate``.

Each model file is one instance. Its id is the number at the end of its name
(``mnist_original_7.h5`` is instance 7, ``models/healthy/00003.keras`` instance 3)
when every file has a distinct one, else its position in the list. Scoring uses the
trainer's own :func:`probmut.train.fitting.score`, so a model saved by ``probmut train
--save-models`` gets exactly the accuracy and outcomes the trainer wrote.

A file that cannot be loaded or run is an instance with status ``crashed`` (and its
one-line error); non-finite weights or outputs make it ``diverged``. Training
symptoms (seconds, losses) are unknown for a saved model and left empty.

Groups of model files (:func:`group_models`) follow one of two layouts:

* DeepCrime's: ``{model}_original_{i}.h5`` (healthy) and
  ``{model}_{operator}_mutated0_MP_{magnitude}_{i}.h5`` (mutants);
* probmut's (``--save-models``): ``models/{population}/{i}.keras`` (torch: ``.pt``), the
  population ``healthy`` or ``{operator}_{magnitude}``.

Examples
--------
>>> instance_ids(["m_original_10.h5", "m_original_2.h5"])
[10, 2]
>>> instance_ids(["a.keras", "b.keras"])
[0, 1]
>>> model, groups = group_models(["mnist_original_0.h5", "mnist_original_1.h5",
...     "mnist_delete_training_data_mutated0_MP_3.1_0.h5"])
>>> model, sorted(groups)
('mnist', [('delete_training_data', '3.1'), ('healthy', None)])
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.records import InstanceRecord, one_line
from probmut.results import Result, counted

MODEL_SUFFIXES = (".keras", ".h5")
#: The suffix of a torch model's file: its ``state_dict`` (``probmut train --framework torch``).
TORCH_SUFFIX = ".pt"
_DEEPCRIME_HEALTHY = re.compile(r"^(?P<model>.+?)_original_(?P<i>\d+)$")
_DEEPCRIME_MUTANT = re.compile(r"^(?P<prefix>.+?)_mutated\d+_MP_(?P<magnitude>.+)_(?P<i>\d+)$")
_TRAILING_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True, eq=False)
class Evaluation:
    """One model's record and outcomes (None when it could not be scored)."""

    record: InstanceRecord
    correct: np.ndarray | None

    @classmethod
    def failed(cls, instance: int, error: str) -> Evaluation:
        """The model file ``instance`` could not be scored: a crashed instance."""
        return cls(InstanceRecord(instance, math.nan, status="crashed", error=error), None)

    @classmethod
    def scored(cls, instance: int, scored, finite: bool) -> Evaluation:
        """The model file ``instance`` scored (``scored``: its test set's outcomes),
        diverged where ``finite`` is false."""
        return cls(InstanceRecord(instance, float(scored.correct.mean()),
                                  status="ok" if finite else "diverged",
                                  constant=scored.constant), scored.correct)


def model_files(paths, framework: str = "keras") -> list[Path]:
    """The model files named on the command line; a directory gives its ``.keras`` and
    ``.h5`` files (``framework`` torch: ``.pt``) (recursively), sorted. A file named twice
    (also through a directory or a link) is an error: each file is one instance."""
    suffixes = (TORCH_SUFFIX,) if framework == "torch" else MODEL_SUFFIXES
    kinds = " or ".join(suffixes)
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in suffixes)
        elif path.suffix == TORCH_SUFFIX and framework != "torch":
            raise ProbmutError(f"{path}: a torch model's state dict; give --framework torch "
                               "and the --architecture it is the state of")
        elif path.suffix not in suffixes:
            raise ProbmutError(f"{path}: not a model file ({kinds})")
        elif not path.exists():
            raise ProbmutError(f"{path}: no such file")
        else:
            files.append(path)
    if not files:
        torch_files = framework != "torch" and any(
            Path(p).is_dir() and next(Path(p).rglob(f"*{TORCH_SUFFIX}"), None) for p in paths)
        hint = " (it holds torch models, .pt: give --framework torch and the --architecture)" \
            if torch_files else ""
        raise ProbmutError(f"no {kinds} model files in {', '.join(map(str, paths))}{hint}")
    seen: dict[Path, Path] = {}
    for path in files:
        if (first := seen.setdefault(path.resolve(), path)) is not path:
            same = "" if first == path else f" (as {first})"
            raise ProbmutError(f"{path}: given twice{same}; each model file is one instance, "
                               "name it once")
    return files


def instance_ids(paths) -> list[int]:
    """The number at the end of each file's stem, if every stem has a distinct one;
    else the positions 0, 1, 2, ..."""
    numbers = [_TRAILING_NUMBER.search(Path(p).stem) for p in paths]
    if all(numbers) and len({int(m.group(1)) for m in numbers}) == len(numbers):
        return [int(m.group(1)) for m in numbers]
    return list(range(len(paths)))


def operator_and_magnitude(name: str):
    """``(operator, magnitude)`` of a population folder's name, DeepCrime's operator names
    read as ours (None when no operator starts it).

    >>> operator_and_magnitude("change_gradient_clip_0.1")
    ('change_gradient_clipping', '0.1')
    """
    from probmut.train.operators import ALIASES, OPERATORS

    for operator in sorted([*OPERATORS, *ALIASES], key=len, reverse=True):
        if name.startswith(operator + "_"):
            return _canonical(operator), name[len(operator) + 1:]
    return None


def _deepcrime_operator(prefix: str, model: str | None) -> str:
    """The operator of DeepCrime's ``{model}_{operator}`` file prefix, as we name it: what
    follows the model's name, or without a healthy file to name the model, the longest
    known operator name the prefix ends with (else the whole prefix).

    >>> _deepcrime_operator("mnist_change_earlystopping_patience", None)
    'change_patience'
    """
    from probmut.train.operators import ALIASES, OPERATORS

    if model and prefix.startswith(model + "_"):
        return _canonical(prefix[len(model) + 1:])
    known = sorted((name for name in [*OPERATORS, *ALIASES]
                    if prefix == name or prefix.endswith("_" + name)), key=len)
    return _canonical(known[-1] if known else prefix)


def _canonical(operator: str) -> str:
    """Our name of an operator (DeepCrime's names, e.g. ``change_earlystopping_patience``,
    are aliases of ours); other names unchanged."""
    from probmut.train.operators import ALIASES

    return ALIASES[operator][0] if operator in ALIASES else operator


def group_models(paths) -> tuple[str | None, dict]:
    """Group model files into populations: ``(model name, {(operator, magnitude):
    [(instance, path), ...]})`` with ``("healthy", None)`` for the healthy population
    (see the module notes for the two layouts). Raises :class:`ProbmutError` for a file
    that fits neither."""
    groups: dict = {}
    model = None
    models_seen = set()
    unknown = []
    for path in map(Path, paths):
        stem = path.stem
        healthy = _DEEPCRIME_HEALTHY.match(stem)
        mutant = _DEEPCRIME_MUTANT.match(stem)
        if healthy:
            models_seen.add(healthy.group("model"))
            groups.setdefault(("healthy", None), []).append((int(healthy.group("i")), path))
        elif mutant:
            groups.setdefault(("deepcrime", mutant.group("prefix"), mutant.group("magnitude")),
                              []).append((int(mutant.group("i")), path))
        elif stem.isdigit() and path.parent.name == "healthy":
            groups.setdefault(("healthy", None), []).append((int(stem), path))
        elif stem.isdigit() and operator_and_magnitude(path.parent.name):
            key = operator_and_magnitude(path.parent.name)
            groups.setdefault(key, []).append((int(stem), path))
        else:
            unknown.append(str(path))
    if unknown:
        raise ProbmutError(f"cannot tell the population of {unknown[0]}"
                           + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
                           + ": expected DeepCrime's {model}_original_{i}.h5 / {model}_{operator}"
                           "_mutated0_MP_{magnitude}_{i}.h5 or probmut's models/{population}/"
                           "{i}.keras (.pt)")
    if len(models_seen) > 1:
        raise ProbmutError(f"the files hold several models ({', '.join(sorted(models_seen))}); "
                           "evaluate one at a time")
    model = next(iter(models_seen), None)
    resolved = {}
    for key, members in groups.items():
        if key[0] == "deepcrime":  # {model}_{operator}: the operator is what follows the model
            prefix = key[1]
            key = (_deepcrime_operator(prefix, model), key[2])
        resolved.setdefault(key, []).extend(members)
    for key, members in resolved.items():
        ids = [i for i, _ in members]
        if len(set(ids)) != len(ids):
            raise ProbmutError(f"population {key[0]} {key[1] or ''}: instance ids repeat")
        members.sort()
    return model, resolved


def unreadable(path) -> str | None:
    """What keeps Keras from reading a model file, said plainly (Keras calls a damaged
    ``.keras`` file "not found"), or None when it looks like a model file (Keras then
    has the last word).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
    >>> _ = open(path, "wb").write(b"not a zip archive")
    >>> print(unreadable(path))  # doctest: +NORMALIZE_WHITESPACE
    not a .keras model (a .keras file is a zip archive; this one is damaged or another kind
    of file)
    """
    import zipfile

    path = Path(path)
    try:
        with open(path, "rb") as handle:
            start = handle.read(8)
    except OSError as error:
        return f"cannot read the file ({error.strerror})"
    if not start:
        return "the file is empty"
    if path.suffix == ".keras" and not zipfile.is_zipfile(path):
        return ("not a .keras model (a .keras file is a zip archive; this one is damaged or "
                "another kind of file)")
    if path.suffix == ".h5" and start != b"\x89HDF\r\n\x1a\n":
        return "not an HDF5 (.h5) model file (damaged or another kind of file)"
    return None


def _saved_config(path) -> str | None:
    """A ``.keras`` file's saved config (its ``config.json``, with the ids that Keras
    gives shared objects numbered in order of appearance: they are addresses in memory
    of the process that saved it) when loading only its weights into a model of that
    config gives the whole model: no assets (a lookup layer's vocabulary is not a
    weight); None otherwise (``.h5`` files, archives with assets)."""
    import json
    import zipfile

    if Path(path).suffix != ".keras":
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "config.json" not in names or any(n.startswith("assets/") for n in names):
                return None
            config = json.loads(archive.read("config.json"))
    except (OSError, ValueError, zipfile.BadZipFile):  # damaged: Keras' full load says how
        return None
    shared: dict = {}

    def numbered(node):
        if isinstance(node, dict):
            return {key: shared.setdefault(value, len(shared)) if key == "shared_object_id"
                    else numbered(value) for key, value in node.items()}
        return [numbered(item) for item in node] if isinstance(node, list) else node

    return json.dumps(numbered(config))


class _LastModel:
    """The last model :func:`load_model` built in this process, with its saved config."""

    config: str | None = None
    model = None


def load_model(path):
    """The model saved in ``path`` (not compiled). A population's files share one
    saved config: a ``.keras`` file whose config is the last loaded one's only
    loads its weights into that model object (Keras' ``load_model`` rebuilds it, about
    ten times as long on a small network, and its first ``predict`` traces again), so
    loading the next file changes the model returned before: use each model before
    loading the next. A file that fails that way is loaded in full, which says what is
    wrong with it."""
    import keras

    config = _saved_config(path)
    if config is not None and config == _LastModel.config:
        try:
            _LastModel.model.load_weights(path)
            return _LastModel.model
        except Exception:  # damaged weights: the full load below gives Keras' own error
            pass
    _LastModel.config = _LastModel.model = None
    keras.backend.clear_session()
    model = keras.saving.load_model(path, compile=False)
    if config is not None:
        _LastModel.config, _LastModel.model = config, model
    return model


def evaluate_file(path, instance: int, *, dataset) -> Evaluation:
    """Load one model file and score it on ``dataset``'s test set."""
    from probmut.train import fitting

    if (problem := unreadable(path)) is not None:
        return Evaluation.failed(instance, problem)
    try:
        model = load_model(path)
        scored = fitting.score(model, dataset.x_test, dataset.y_test, dataset.task)
        finite = scored.finite and all(np.isfinite(w).all() for w in model.get_weights())
    except Exception as error:  # the file is the instance: it failed, not the command
        return Evaluation.failed(instance, one_line(error))
    return Evaluation.scored(instance, scored, finite)


@dataclass(frozen=True)
class EvaluatedPopulation(Result):
    """What ``evaluate`` wrote for one population: its ``file``, instances, their mean
    accuracy over the ``scored`` ones that did not fail (NaN when none) on the
    ``test_inputs`` inputs of ``dataset``, the models that failed, and how they failed
    (``failed``: status -> count).

    >>> print(EvaluatedPopulation(Path("p.csv"), 5, 0.9, ("m1.keras: crashed",) * 4,
    ...                           "digits", 450, scored=1, failed={"crashed": 4}))
    ... # doctest: +NORMALIZE_WHITESPACE
    p.csv: 5 instances, 4 failed (4 crashed), mean accuracy 0.9 over the 1 scored, on 450 test
    inputs of digits
    """

    index = "file"
    file: Path
    instances: int
    accuracy_mean: float
    failures: tuple[str, ...]
    dataset: str = ""
    test_inputs: int = 0
    scored: int | None = None  # None: all instances
    failed: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"instances": self.instances, "scored": self._scored,
                "accuracy_mean": None if math.isnan(self.accuracy_mean) else self.accuracy_mean,
                "file": str(self.file), "failures": list(self.failures)}

    @property
    def _scored(self) -> int:
        return self.instances if self.scored is None else self.scored

    def __str__(self) -> str:
        where = f"on {self.test_inputs} test inputs of {self.dataset}"
        if self._scored == self.instances:
            return (f"{self.file}: {counted(self.instances, 'instance')}, mean accuracy "
                    f"{self.accuracy_mean:.6g} {where}")
        how = ", ".join(f"{n} {status}" for status, n in self.failed.items())
        failed = self.instances - self._scored
        if not self._scored:
            return (f"{self.file}: {counted(self.instances, 'instance')}, all failed ({how}): "
                    f"no accuracy to average, {where}")
        return (f"{self.file}: {counted(self.instances, 'instance')}, {failed} failed ({how}), "
                f"mean accuracy {self.accuracy_mean:.6g} over the {self._scored} scored, {where}")


def evaluate_population(files, ids, out: Path, backend, dataset, progress: bool = True,
                        label: str = "evaluate", evaluate=evaluate_file,
                        arguments: tuple = ()) -> EvaluatedPopulation:
    """Score ``files`` (instance ``ids``) with ``backend`` and write ``out`` (the tidy
    CSV) and its ``.outcomes.npz`` beside it; ``evaluate(path, instance, *arguments,
    dataset=...)`` scores one file (:func:`evaluate_file`; torch:
    :func:`probmut.train.torch.saved.evaluate_state`, the architecture its argument)."""
    from probmut.progress import progress as progress_bar
    from probmut.train.run import write_population
    from probmut.train.tasks import strata

    results = {}
    calls = [(path, instance, *arguments) for path, instance in zip(files, ids, strict=True)]
    with progress_bar(len(calls), label, enabled=progress, unit="model") as bar:
        for index, outcome in backend.map_unordered(evaluate, calls):
            instance = ids[index]
            if isinstance(outcome, BaseException):
                outcome = Evaluation.failed(instance, one_line(outcome))
            results[instance] = outcome
            bar.update()
    order = sorted(results)
    records = [results[i].record for i in order]
    rows = [results[i].correct for i in order]
    write_population(out, records, rows, strata(dataset.y_test, dataset.task))
    usable = [r.accuracy for r in records if not r.failed]
    failures = tuple(f"{files[ids.index(r.instance)]}: {r.status}"
                     + (f": {r.error}" if r.error else "") for r in records if r.failed)
    failed = Counter(r.status for r in records if r.failed)
    return EvaluatedPopulation(out, len(records),
                               float(np.mean(usable)) if usable else math.nan, failures,
                               dataset.name, len(dataset.y_test), len(usable), dict(failed))
