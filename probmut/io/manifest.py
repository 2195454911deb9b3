"""Experiment manifests (TOML): which population file is which model, mutation, magnitude.

A manifest describes models; each has a healthy population and mutations, each mutation
its magnitudes, a file ``pattern`` with ``{magnitude}``, and ``paired`` (model-level).
Paths are relative to the manifest. The bundled one is ``raw_data/manifest.toml``::

    [models.mnist]
    healthy = "mnist/results_mnist_original.csv"

    [models.mnist.mutations.delete_training_data]
    paired = false
    pattern = "mnist/results_mnist_delete_training_data_mutated0_MP_{magnitude}.csv"
    magnitudes = ["3.1", "9.29", "12.38", "18.57", "30.93"]

The trainer (``probmut train``) writes one of these for each run
(:func:`add_to_manifest`), before its first instance trains, with a ``targets`` table:
each population file and the instances the run trains for it. A population file holding
fewer is from a run that stopped early (:meth:`Manifest.target`, read by
:func:`probmut.io.completeness.check_complete`); a manifest without targets (the bundled
data, one written by hand) says nothing about it::

    [models.rs3.targets]
    "healthy.csv" = 20
    "delete_training_data_50.csv" = 20
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write_text
from probmut.io.files import read_input_text
from probmut.validation import checked, instance, optional, path, refusal, shown

#: The repository's bundled data (the paper's populations).
BUNDLED_DATA = Path(__file__).resolve().parents[2] / "raw_data"


def default_manifest() -> Path:
    """``$PROBMUT_MANIFEST`` if set, else the bundled ``raw_data/manifest.toml``."""
    return Path(os.environ.get("PROBMUT_MANIFEST", BUNDLED_DATA / "manifest.toml"))


@dataclass(frozen=True)
class MutationEntry:
    """A manifest's entry for one mutation of one model (an operator at all its
    magnitudes), resolved to files. Not :class:`probmut.train.operators.Mutation`, which
    is one operator at one magnitude (one mutant) as the trainer builds it.

    What ``probmut train`` found, magnitude -> ...: ``flags`` (``equivalent``,
    ``broken``), ``survivors`` (why the test set cannot tell the mutant apart) and
    ``removed`` (why DeepMutation's quality control removed it). Removed magnitudes are
    not among ``magnitudes``: every reader of the manifest leaves them out.
    """

    model: str
    name: str
    healthy: Path
    magnitudes: tuple[str, ...]
    files: tuple[Path, ...]
    paired: bool
    flags: dict[str, tuple[str, ...]] = field(default_factory=dict)
    survivors: dict[str, str] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.model} {self.name}"

    def file_for(self, magnitude: str) -> Path:
        magnitude = str(magnitude)
        if magnitude in self.removed:
            raise ProbmutError(f"{self.label} {magnitude}: removed by probmut train's quality "
                               f"control ({self.removed[magnitude]})", option="magnitudes")
        try:
            return self.files[self.magnitudes.index(magnitude)]
        except ValueError:
            raise ProbmutError(
                f"{self.label}: no magnitude {magnitude!r}; the manifest lists "
                f"{', '.join(self.magnitudes)}", option="magnitudes") from None

    def require_magnitudes(self) -> None:
        """Refuse a mutation whose every magnitude the quality control removed."""
        if not self.magnitudes:
            raise ProbmutError(f"{self.label}: every magnitude was removed by probmut train's "
                               "quality control: " + "; ".join(
                                   f"{m}: {why}" for m, why in self.removed.items()))


#: A number in a magnitude, in the forms docs/operators.md lists: ASCII decimal digits
#: with an optional point and fraction and an optional exponent (``10``, ``010``, ``3.1``,
#: ``.5``, ``1e-3``), an optional sign; nothing else (no digit-group underscores, which
#: Python's ``float`` reads as ``"1_0" == 10``, no spaces, other digits, inf or nan).
MAGNITUDE_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: An integer in a magnitude (a layer index, a count): ASCII digits, an optional sign.
MAGNITUDE_INTEGER = re.compile(r"[+-]?[0-9]+")


def magnitude_key(magnitude) -> tuple:
    """What makes two magnitudes the same: the value before any ``@TARGET``, its parts
    between ``_`` (``0.05_1``: a ratio and a scale) each as a number when it is written as
    one (:data:`MAGNITUDE_NUMBER`), else as text (``elu``, ``sd0.1``), and the target.

    >>> magnitude_key("010") == magnitude_key(10) == magnitude_key("10.0")
    True
    >>> magnitude_key("0.05_1") == magnitude_key("0.050_1.0"), magnitude_key(" elu@2")
    (True, (('elu',), '2'))
    >>> magnitude_key("1_0") == magnitude_key("10")  # a pair, not 10: not the same
    False
    """
    value, _, target = str(magnitude).strip().partition("@")
    return tuple(_part_key(part) for part in value.split("_")), target


def _part_key(part: str):
    if MAGNITUDE_NUMBER.fullmatch(part) and math.isfinite(number := float(part)):
        return number
    return part


def repeated_magnitudes(magnitudes) -> str | None:
    """What is repeated among ``magnitudes`` (one text, or numbers spelled differently),
    said in words; None when each is there once.

    >>> repeated_magnitudes(["weak", "strong", "strong"])
    "'strong' is given 2 times"
    >>> repeated_magnitudes(["10", "3.1", "010"])
    "'10' and '010' are the same number"
    >>> repeated_magnitudes(["0.05_1", "0.05_1.0"])
    "'0.05_1' and '0.05_1.0' are the same magnitude"
    >>> repeated_magnitudes(["3.1", "9.29", "1_0", "10"]) is None
    True
    """
    groups: dict = {}
    for magnitude in magnitudes:
        groups.setdefault(magnitude_key(magnitude), []).append(str(magnitude))
    for (parts, _), same in groups.items():
        if len(same) > 1:
            if len(set(same)) == 1:
                return f"{same[0]!r} is given {len(same)} times"
            kind = "number" if len(parts) == 1 else "magnitude"
            return " and ".join(map(repr, dict.fromkeys(same))) + f" are the same {kind}"
    return None


def _check_model(path: Path, model: str, entry) -> None:
    """The structure a model's table must have; a clear error naming what is wrong."""
    where = f"{path}: [models.{model}]"
    if not isinstance(entry, dict):
        raise ProbmutError(f"{where} must be a table, got {type(entry).__name__}")
    if not isinstance(entry.get("healthy"), str) or not entry["healthy"].strip():
        raise ProbmutError(f"{where}: 'healthy' must be the healthy population's file name")
    mutations = entry.get("mutations", {})
    if not isinstance(mutations, dict):
        raise ProbmutError(f"{where}: 'mutations' must be a table of [models.{model}."
                           "mutations.NAME] tables")
    for name, spec in mutations.items():
        here = f"{path}: [models.{model}.mutations.{name}]"
        if not isinstance(spec, dict):
            raise ProbmutError(f"{here} must be a table, got {type(spec).__name__}")
        for key in ("pattern", "magnitudes"):
            if key not in spec:
                raise ProbmutError(f"{here} lacks the key {key!r}")
        pattern, magnitudes = spec["pattern"], spec["magnitudes"]
        if not isinstance(pattern, str) or "{magnitude}" not in pattern:
            raise ProbmutError(f"{here}: 'pattern' must be a file name with {{magnitude}} in it, "
                               f"got {pattern!r}")
        try:
            pattern.format(magnitude="1")
        except (KeyError, IndexError, ValueError) as error:
            raise ProbmutError(f"{here}: 'pattern' {pattern!r} is not a valid file pattern "
                               f"({type(error).__name__}: {error}); {{magnitude}} must be its "
                               "only placeholder (write a literal brace twice: {{ }})") from None
        if (not isinstance(magnitudes, list) or not magnitudes
                or not all(isinstance(m, str | int | float) and not isinstance(m, bool)
                           for m in magnitudes)):
            raise ProbmutError(f"{here}: 'magnitudes' must be a non-empty list of magnitudes "
                               f"(strings or numbers), got {magnitudes!r}")
        if (repeated := repeated_magnitudes(magnitudes)) is not None:
            raise ProbmutError(f"{here}: magnitude {repeated}; list each magnitude once")
        if not isinstance(spec.get("paired", False), bool):
            raise ProbmutError(f"{here}: 'paired' must be true or false")
        for key, kind in (("flags", list), ("survivors", str), ("removed", str)):
            table = spec.get(key, {})
            if not isinstance(table, dict) or not all(isinstance(v, kind)
                                                      for v in table.values()):
                raise ProbmutError(f"{here}: '{key}' must be a table of magnitude = "
                                   + ("[flags]" if kind is list else '"reason"'))
    targets = entry.get("targets", {})
    if not isinstance(targets, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in targets.values()):
        raise ProbmutError(f"{path}: [models.{model}.targets] must map population files to "
                           f"whole numbers of instances, got {targets!r}")


@dataclass(frozen=True)
class Manifest:
    path: Path
    models: dict

    @classmethod
    @checked(path=optional(path))
    def load(cls, path=None) -> Manifest:
        """Read a manifest (default: :func:`default_manifest`)."""
        path = Path(path) if path else default_manifest()
        if not os.path.lexists(path):
            raise ProbmutError(f"{path}: manifest not found; give the manifest's TOML file",
                               option="manifest")
        content = _read_toml(path)
        models = content.get("models")
        if not isinstance(models, dict) or not models:
            raise ProbmutError(f"{path}: no [models.NAME] tables")
        for model, entry in models.items():
            _check_model(path, model, entry)
        return cls(path=path, models=models)

    def model_names(self) -> list[str]:
        return list(self.models)

    def _model(self, model: str) -> dict:
        if model not in self.models:
            raise ProbmutError(f"{self.path}: no model {model!r}; it has "
                               f"{', '.join(self.models)}", option="model")
        return self.models[model]

    def healthy(self, model: str) -> Path:
        return self.path.parent / self._model(model)["healthy"]

    def mutation_names(self, model: str) -> list[str]:
        return list(self._model(model).get("mutations", {}))

    def mutation(self, model: str, name: str) -> MutationEntry:
        """Resolve one mutation of one model to its files.

        >>> m = Manifest.load().mutation("mnist", "delete_training_data")
        >>> m.magnitudes[0], m.files[0].name, m.paired
        ('3.1', 'results_mnist_delete_training_data_mutated0_MP_3.1.csv', False)
        """
        entry = self._model(model)
        mutations = entry.get("mutations", {})
        if name not in mutations:
            raise ProbmutError(f"{self.path}: model {model!r} has no mutation {name!r}; it has "
                               f"{', '.join(mutations) or 'none'}", option="mutation")
        spec = mutations[name]
        removed = {str(m): why for m, why in spec.get("removed", {}).items()}
        magnitudes = tuple(str(m) for m in spec["magnitudes"] if str(m) not in removed)
        pattern = spec["pattern"]
        files = tuple(self.path.parent / pattern.format(magnitude=m) for m in magnitudes)
        flags = {str(m): tuple(f) for m, f in spec.get("flags", {}).items()}
        survivors = {str(m): why for m, why in spec.get("survivors", {}).items()}
        return MutationEntry(model=model, name=name, healthy=self.healthy(model),
                             magnitudes=magnitudes, files=files,
                             paired=bool(spec.get("paired", False)), flags=flags,
                             survivors=survivors, removed=removed)

    def target(self, path) -> tuple[str, int] | None:
        """``(model, instances)``: the target of the run that wrote the population file
        ``path`` (its ``targets`` table), or None when the manifest records none for it.

        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> add_to_manifest(os.path.join(folder, "manifest.toml"), "m", "healthy.csv", "a run",
        ...                 [("x", "1", False)], targets={"healthy.csv": 20, "x_1.csv": 20})
        >>> Manifest.load(os.path.join(folder, "manifest.toml")).target(
        ...     os.path.join(folder, "x_1.csv"))
        ('m', 20)
        """
        return self._targets.get(os.path.realpath(path))  # never raises, a loop included

    @functools.cached_property
    def _targets(self) -> dict[str, tuple[str, int]]:
        """Every recorded target by its file's real path (the first model's where two
        name one file): a campaign of hundreds of populations looks each up once."""
        found: dict[str, tuple[str, int]] = {}
        for model, entry in self.models.items():
            for file, instances in entry.get("targets", {}).items():
                found.setdefault(os.path.realpath(self.path.parent / file), (model, instances))
        return found

    def mutations(self, model: str | None = None):
        """Every mutation of one model (or of all models), in manifest order."""
        for m in [model] if model else self.model_names():
            for name in self.mutation_names(m):
                yield self.mutation(m, name)


#: The largest manifest read: thousands of mutations take a few megabytes.
MAX_FILE_BYTES = 64 * 2**20


def _read_toml(path: Path) -> dict:
    """A manifest's TOML document (a byte-order mark allowed); a population file or any
    other text given instead is refused, saying what it is."""
    text = read_input_text(path, "a manifest's TOML file", MAX_FILE_BYTES)
    try:
        return tomllib.loads(text)
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ProbmutError(f"{path}: not a valid TOML manifest (arrays or tables nested too "
                           "deeply to read)") from None
    except tomllib.TOMLDecodeError as error:
        first = text.split("\n", 1)[0].strip().lower()
        if first.split(";")[0] in ("true_label", "true_labels") or {
                "instance", "accuracy"} <= {cell.strip() for cell in first.split(",")}:
            raise ProbmutError(f"{path}: a population file, not a manifest; give a run's "
                               "folder or its manifest.toml") from None
        raise ProbmutError(f"{path}: not a valid TOML manifest ({error})") from None


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a manifest")


def _toml_key(key: str) -> str:
    """A bare key when TOML allows one (letters, digits, ``_``, ``-``), else a quoted one."""
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else json.dumps(key)


def _toml_lines(table: dict, prefix: str) -> list[str]:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    lines = [f"[{prefix}]"] if prefix and (scalars or not table) else []
    lines += [f"{_toml_key(key)} = {_toml_value(value)}" for key, value in scalars.items()]
    for key, value in table.items():
        if isinstance(value, dict):
            sub = _toml_lines(value, f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key))
            lines += ([""] if lines else []) + sub
    return lines


def write_manifest(path, content: dict, comment: str | None = None) -> None:
    """Write a manifest (nested tables of strings, numbers, booleans and lists) as TOML,
    atomically.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "manifest.toml")
    >>> write_manifest(path, {"models": {"m": {"healthy": "h.csv", "mutations": {
    ...     "x": {"paired": False, "pattern": "x_{magnitude}.csv", "magnitudes": ["1"]}}}}})
    >>> Manifest.load(path).mutation("m", "x").files[0].name
    'x_1.csv'
    """
    lines = [f"# {comment}", ""] if comment else []
    atomic_write_text(path, "\n".join(lines + _toml_lines(content, "")) + "\n")


def population_target(path, manifest: Manifest | None = None) -> tuple[str, int] | None:
    """``(model, instances)``: the target of the run that wrote the population file
    ``path``, from ``manifest`` if it records one for the file, else from the run
    manifest beside the file (``manifest.toml`` in its folder; ignored if unreadable);
    None when neither does."""
    if manifest is not None and (found := manifest.target(path)) is not None:
        return found
    beside = Path(path).parent / "manifest.toml"
    try:
        found = beside.stat()
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return _manifest_beside(str(beside), found.st_mtime_ns, found.st_size, found.st_ino).target(
        path)


@functools.lru_cache(maxsize=4)
def _manifest_beside(path: str, *version) -> _NoTargets | Manifest:
    """The run manifest at ``path`` as :func:`population_target` reads it, once per
    ``version`` of the file (its modification time, size and inode): a campaign reads
    hundreds of population files beside one manifest."""
    try:
        return Manifest.load(path)
    except ProbmutError:  # not a manifest of ours: it records no target
        return _NoTargets()


class _NoTargets:
    """A file beside a population that is not a manifest: it records no target."""

    def target(self, path) -> None:
        return None


def add_to_manifest(path, model: str, healthy: str, description: str, populations,
                    data: dict | None = None, written_by: str = "probmut train",
                    targets: dict[str, int] | None = None) -> None:
    """Add populations to the manifest at ``path`` (created if absent), keeping what is
    there: other models, magnitudes written by earlier runs.

    ``populations`` holds ``(mutation, magnitude, paired)`` triples, optionally followed
    by what the run found: the population's flags (``["equivalent"]``, ...; written to
    the mutation's ``flags`` table, magnitude -> list), why it is a survivor and why the
    quality control removed it (its ``survivors`` and ``removed`` tables, magnitude ->
    reason; "" clears an earlier entry). Each mutation's files are
    ``{mutation}_{magnitude}.csv`` beside the manifest. ``data`` (the data set's
    provenance: name, source, file hashes, split sizes) becomes the model's ``data``
    table. ``targets`` (population file -> instances the run trains for it) are added to
    the model's ``targets`` table.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "manifest.toml")
    >>> add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "1", False)],
    ...                 data={"name": "d", "files": {"d.npz": "ab12"}})
    >>> manifest = Manifest.load(path)
    >>> manifest.models["m"]["data"]
    {'name': 'd', 'files': {'d.npz': 'ab12'}}
    >>> add_to_manifest(path, "m", "healthy.csv", "a run", [("x", "2", False, ["broken"]),
    ...                                                     ("x", "3", True, [], "", "too wrong")])
    >>> x = Manifest.load(path).mutation("m", "x")
    >>> x.flags, x.magnitudes, x.removed
    ({'2': ('broken',), '3': ()}, ('1', '2'), {'3': 'too wrong'})
    >>> '"d.npz" = "ab12"' in open(path).read()   # keys TOML cannot take bare are quoted
    True
    """
    path = Path(path)
    content = _read_toml(path) if path.exists() else {}
    entry = content.setdefault("models", {}).setdefault(model, {})
    entry.update(healthy=healthy, description=description)
    if data is not None:
        entry["data"] = data
    if targets:
        entry.setdefault("targets", {}).update(targets)
    known = entry.setdefault("mutations", {})
    for name, magnitude, paired, *found in populations:
        spec = known.setdefault(name, {"paired": bool(paired),
                                       "pattern": f"{name}_{{magnitude}}.csv",
                                       "magnitudes": []})
        if magnitude not in spec["magnitudes"]:
            same = [m for m in spec["magnitudes"]
                    if magnitude_key(m) == magnitude_key(magnitude)]
            if same:
                raise ProbmutError(f"{path}: {name} holds the magnitude {same[0]!r}, the same "
                                   f"as {magnitude!r}: give it as {same[0]} to add to it, or "
                                   "write to another directory", option="mutation")
            spec["magnitudes"].append(magnitude)
        if found:
            spec.setdefault("flags", {})[magnitude] = list(found[0])
        for key, reason in zip(("survivors", "removed"), found[1:], strict=False):
            table = spec.setdefault(key, {})
            if reason:
                table[magnitude] = reason
            else:
                table.pop(magnitude, None)
            if not table:
                del spec[key]
    write_manifest(path, content,
                   f"probmut run manifest, written by `{written_by}`; paths are relative to it.")


def manifest(value, name):
    """A :class:`Manifest` (a check of :func:`probmut.validation.checked`)."""
    return instance(Manifest)(value, name)


def manifest_or_path(value, name):
    """A :class:`Manifest` or the path of its TOML file (a check of
    :func:`probmut.validation.checked`)."""
    if isinstance(value, Manifest):
        return value
    if not isinstance(value, str | os.PathLike):
        raise refusal(name, f"must be a Manifest or its file's path, got {shown(value)}")
    return value
