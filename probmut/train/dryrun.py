"""What each mutation changes, without training: ``probmut train --dry-run``.

For every mutation: is it legal (:mod:`probmut.train.legality`, and why not), its
target, and exactly what it changes, found by applying it as instance 0 of the run
would and comparing with the healthy model:

* data level: the operator applied to the training data with instance 0's seed;
  samples changed (relabelled, noised, moved), removed or added, of the training set;
* training level: the settings and layers that differ between the healthy model and
  the mutant, both built as the run builds them (before -> after), and the samples
  training gains (``remove_validation_set``: the validation set);
* model level: the operator applied to a freshly built healthy model (healthy instance
  0's initial weights) with the mutant's instance 0 seed; per layer in its scope (the
  model's layer table, :func:`probmut.train.graph.graph`), the weights, units or neurons
  (whose outgoing weights are blocked) that changed, of how many; layer operators as
  settings (a layer replaced, inserted, an activation).

The counts are those the run's instance 0 gets: selections depend on the seed and the
layer shapes only, not on trained weights.

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from probmut.train.models import MODELS
>>> spec = MODELS["digits_cnn"]
>>> report = dry_run(["neurons_freezing:0.05"], spec, load_dataset("digits"), spec.config,
...                  seed=42)
>>> report.to_dict()["mutations"][0]["changes"]["layers"]   # int(16 x 0.05), at least 1
[{'index': 0, 'name': 'conv2d', 'changed': 1, 'of': 16}]
"""

from __future__ import annotations

import collections
import dataclasses
import difflib
import json
from dataclasses import dataclass, field

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets import n_rows
from probmut.train.flags import row_digests
from probmut.train.graph import graph, table
from probmut.train.layer_traits import has_kernel, units
from probmut.train.legality import check, healthy_model, needs_keras
from probmut.train.operators import Mutation, parse_mutations
from probmut.train.operators.magnitudes import NETWORK
from probmut.train.operators.model import scope
from probmut.train.work import HEALTHY, instance_seed


@dataclass(frozen=True)
class LayerCount:
    """What changed in one layer: ``changed`` of ``of`` weights, units or neurons."""

    index: int
    name: str
    changed: int
    of: int


@dataclass(frozen=True)
class Preview:
    """One mutation's dry run. ``counted`` names what ``layers`` count ("weights",
    "units" or "neurons"); ``samples`` counts the training samples ``changed`` (in
    place), ``added`` and ``removed``, ``of`` the training set's size; ``settings``
    maps a setting to [before, after]; ``equivalent`` says why the mutant is equivalent
    before training ("" if it is not known to be)."""

    name: str
    operator: str
    magnitude: str
    level: str
    legal: bool
    reason: str | None = None
    target: str = ""
    counted: str | None = None
    layers: tuple[LayerCount, ...] = ()
    samples: dict[str, int] | None = None
    settings: dict = field(default_factory=dict)
    equivalent: str = ""

    @property
    def label(self) -> str:
        """How error messages name it (as :attr:`Mutation.label`)."""
        return f"{self.operator}:{self.magnitude}".rstrip(":")

    def to_dict(self) -> dict:
        return {"name": self.name, "operator": self.operator, "magnitude": self.magnitude,
                "level": self.level, "legal": self.legal, "reason": self.reason,
                "target": self.target or None, "equivalent": self.equivalent or None,
                "changes": {"counted": self.counted,
                            "layers": [dataclasses.asdict(c) for c in self.layers],
                            "samples": self.samples,
                            "settings": {k: list(v) for k, v in self.settings.items()}}}

    def lines(self) -> list[str]:
        head = f"{self.name} ({self.level} level): "
        if not self.legal:
            return [head + f"ILLEGAL: {self.reason}"]
        lines = [head + "legal", f"  target: {self.target}"]
        if self.layers:
            total = [sum(c.changed for c in self.layers), sum(c.of for c in self.layers)]
            per_layer = "; ".join(f"{c.index} {c.name} {c.changed} of {c.of}"
                                  for c in self.layers)
            lines.append(f"  {self.counted} changed: {per_layer}"
                         + (f" ({total[0]} of {total[1]})" if len(self.layers) > 1 else ""))
        if self.samples is not None:
            shown = [how for how in SAMPLE_CHANGES if self.samples[how]] or ["changed"]
            lines += [f"  samples {how}: {self.samples[how]} of {self.samples['of']}"
                      for how in shown]
        lines += [f"  {key}: {_text(before)} -> {_text(after)}"
                  for key, (before, after) in self.settings.items()]
        if self.equivalent:
            lines.append(f"  equivalent before training: {self.equivalent}")
        return lines


#: How a mutation's training samples differ from the healthy model's.
SAMPLE_CHANGES = ("changed", "added", "removed")


def _text(value) -> str:
    return "none" if value is None else json.dumps(value) if isinstance(value, list) else str(value)


@dataclass(frozen=True)
class DryRun:
    """Every mutation's :class:`Preview`; ``str()`` is the command's text, ``to_dict()``
    its JSON."""

    architecture: str
    seed: int
    mutations: tuple[Preview, ...]

    @property
    def illegal(self) -> list[Preview]:
        return [p for p in self.mutations if not p.legal]

    def to_dict(self) -> dict:
        return {"mutations": [p.to_dict() for p in self.mutations]}

    def __str__(self) -> str:
        lines = [f"dry run of {self.architecture}, seed {self.seed}: nothing is trained; counts are "
                 "those of instance 0"]
        return "\n".join(lines + [line for p in self.mutations for line in p.lines()])


def dry_run(mutations, spec, data, config, *, seed: int, architecture: str = "") -> DryRun:
    """Dry-run ``mutations`` (:class:`~probmut.train.operators.Mutation` objects or
    ``--mutation`` texts) for ``spec``'s model on ``data`` trained per ``config``, with
    the run's base ``seed``. The healthy model is built only for mutations that need
    Keras (:func:`~probmut.train.legality.needs_keras`): data-level ones are previewed on
    the data alone."""
    parsed = [m for text in mutations
              for m in ([text] if isinstance(text, Mutation) else parse_mutations(text))]
    healthy = None
    previews = []
    for mutation in parsed:
        if healthy is None and needs_keras(mutation):
            healthy = healthy_model(spec, data, config)
        try:
            bound = check(mutation, spec, data, config, healthy)
        except ProbmutError as error:
            reason = str(error).removeprefix(f"{mutation.label}: ")
            previews.append(Preview(mutation.population.rstrip("_"), mutation.operator.name,
                                    mutation.magnitude, mutation.operator.level, False, reason))
            continue
        for m in bound:
            rng = np.random.default_rng(instance_seed(seed, 0, m.population))
            if m.operator.level == "data":
                found = _data_changes(m, data, rng)
            elif m.operator.level == "training":
                found = _training_changes(m, spec, data, config, healthy)
            else:
                found = _model_changes(m, spec, data, config, healthy, rng,
                                       instance_seed(seed, 0, HEALTHY))
            previews.append(Preview(m.population, m.operator.name, m.magnitude, m.operator.level,
                                    True, None, _target(m, healthy), equivalent=m.equivalent,
                                    **found))
    return DryRun(architecture or spec.description, seed, tuple(previews))


def _target(mutation: Mutation, healthy) -> str:
    params = mutation.params
    if params.get("all_classes"):
        return "every label"
    if params.get("classes"):
        return ("classes " if len(params["classes"]) > 1 else "class ") + ", ".join(
            map(str, params["classes"]))
    if params.get("pair"):
        return "class {}'s samples, added as class {}".format(*params["pair"])
    layer = params.get("layer")
    if isinstance(layer, int):
        table = graph(healthy)
        return f"layer {layer} {table.names[layer]} ({_kind(table.layers[layer])})"
    return mutation.operator.network_target if layer == NETWORK else \
        mutation.operator.default_target


def _samples(before: int, changed=0, added=0, removed=0) -> dict:
    return {"changed": changed, "added": added, "removed": removed, "of": before}


def _data_changes(mutation, data, rng) -> dict:
    """Samples changed in place (same size), else added and removed: the samples of one
    set that the other does not hold (counted with repeats; a copy with another label is
    a new sample)."""
    x, y = mutation.operator.apply(data.x_train, data.y_train, data.n_classes, mutation.params,
                                   rng, data.task)
    before, after = n_rows(data.x_train), n_rows(x)
    inputs, inputs_before = (x, data.x_train) if isinstance(x, tuple) else \
        ((x,), (data.x_train,))
    if after != before:
        new, old = (collections.Counter(row_digests(a, b).tolist())
                    for a, b in ((inputs, y), (inputs_before, data.y_train)))
        return {"samples": _samples(before, added=(new - old).total(),
                                    removed=(old - new).total())}
    rows = (y != data.y_train).reshape(before, -1).any(axis=1)
    for new, old in zip(inputs, inputs_before, strict=True):
        rows |= (new != old).reshape(before, -1).any(axis=1)
    return {"samples": _samples(before, changed=int(rows.sum()))}


def _setting_value(name, value):
    if name == "clip" and value is not None:
        return f"{value[0]} {value[1]:g}"
    if isinstance(value, dict):  # a user's serialized optimizer
        return value.get("class_name", str(value))
    return value


def _training_changes(mutation, spec, data, config, healthy) -> dict:
    from probmut.train import models

    mutated = mutation.operator.apply(config, mutation.params)
    settings = {f.name: [_setting_value(f.name, getattr(config, f.name)),
                         _setting_value(f.name, getattr(mutated, f.name))]
                for f in dataclasses.fields(config)
                if f.name not in ("layer_changes", "structure")
                and getattr(config, f.name) != getattr(mutated, f.name)}
    mutant = models.build_model(spec, data.dims, mutated)
    found = {"settings": settings | model_changes(healthy, mutant)}
    if not mutated.validation and config.validation and data.validation is not None:
        found["samples"] = _samples(n_rows(data.x_train), added=n_rows(data.x_val))
    return found


def _model_changes(mutation, spec, data, config, healthy, rng, healthy_seed) -> dict:
    import keras

    from probmut.train import models

    operator = mutation.operator
    keras.utils.set_random_seed(healthy_seed)  # healthy instance 0's initial weights
    fresh = models.build_model(spec, data.dims, config)
    table = graph(fresh)
    before = {id(layer): layer.get_weights() for layer in table.layers if has_kernel(layer)}
    mutant = operator.apply(fresh, mutation.params, rng)
    if operator.counts is None:  # a layer operator
        return {"settings": model_changes(healthy, mutant)}
    layers = tuple(LayerCount(i, graph(healthy).names[i],
                              _changed(table, before, table.layers[i], operator.counts),
                              _of(table.layers[i], operator))
                   for i in scope(fresh, mutation.params, operator.layer_kind))
    return {"counted": operator.counts, "layers": layers}


def _of(layer, operator) -> int:
    return int(np.prod(layer.kernel.shape)) if operator.counts == "weights" else units(layer)


def _changed(table, before, layer, counts) -> int:
    """Weights of ``layer``'s kernel, its units (kernel column or bias), or its neurons
    (weights into the layers they feed) that differ from ``before``."""
    if counts == "neurons":
        blocked = set()
        for consumer, carried in table.neuron_routes(layer):
            old, new = before[id(consumer)][0], consumer.get_weights()[0]
            rows = np.moveaxis(old != new, -2, 0).reshape(old.shape[-2], -1).any(axis=1)
            blocked |= set(carried[rows & (carried >= 0)].tolist())
        return len(blocked)
    old, new = before[id(layer)], layer.get_weights()
    if counts == "weights":
        return int(np.sum(old[0] != new[0]))
    differs = (old[0] != new[0]).reshape(-1, old[0].shape[-1]).any(axis=0)
    if len(old) > 1:
        differs |= old[1] != new[1]
    return int(differs.sum())


def _short(value):
    """A layer setting as a short, JSON-able value: a Keras object as ``Class(args)``."""
    if isinstance(value, dict) and "class_name" in value:
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in (value.get("config") or {}).items()
                         if v is not None and not isinstance(v, dict | list))
        return f"{value['class_name']}({args})"
    if isinstance(value, list | tuple):
        return [_short(v) for v in value]
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def _kind(layer) -> str:
    """A layer's class, with its activation for an Activation layer."""
    name = type(layer).__name__
    return f"{name}({layer.activation.__name__})" if name == "Activation" else name


def _config(layer) -> dict:
    return {k: _short(v) for k, v in layer.get_config().items() if k != "name"}


def model_changes(before, after) -> dict:
    """The layer settings that differ between two built models, named by ``before``'s
    layers: ``{"layer I NAME: KEY": [before, after]}`` for a changed setting,
    ``{"layer I NAME": [Class, other Class or None]}`` for a layer replaced or removed,
    ``{"new layer J (after layer I NAME)": [None, Class]}`` for a layer inserted (layers
    of the models' layer tables, :func:`probmut.train.graph.graph`). Layers are matched
    by class and settings (not names, which differ between builds), so that a changed
    layer is told apart from its unchanged neighbours of the same class."""
    (a, names), (b, _) = table(before), table(after)
    configs_a, configs_b = [_config(x) for x in a], [_config(x) for x in b]
    keys_b = [(type(x).__name__, repr(c)) for x, c in zip(b, configs_b, strict=True)]
    matcher = difflib.SequenceMatcher(
        a=[(type(x).__name__, repr(c)) for x, c in zip(a, configs_a, strict=True)], b=keys_b,
        autojunk=False)
    changes = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        while tag == "insert" and j2 < len(b) and keys_b[j1] == keys_b[j2]:
            i1, i2, j1, j2 = i1 + 1, i2 + 1, j1 + 1, j2 + 1  # a copy: after its original
        paired = min(i2 - i1, j2 - j1)
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            if k < paired and type(a[i]) is type(b[j]):  # the same layer, its settings
                old, new = configs_a[i], configs_b[j]
                changes |= {f"layer {i} {names[i]}: {key}": [old.get(key), new.get(key)]
                            for key in sorted(old.keys() | new.keys())
                            if old.get(key) != new.get(key)}
            elif k < i2 - i1:
                changes[f"layer {i} {names[i]}"] = [_kind(a[i]),
                                                    _kind(b[j]) if k < paired else None]
            else:
                where = f"after layer {i1 - 1} {names[i1 - 1]}" if i1 else "first"
                changes[f"new layer {j} ({where})"] = [None, _kind(b[j])]
    return changes
