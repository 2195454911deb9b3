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
  (whose outgoing weights are blocked) that changed, of how many, and which of its
  weights the operator changes (:mod:`probmut.train.layer_weights`); over the network,
  each layer with connection weights the operator cannot change, and why; layer
  operators as settings (a layer replaced, inserted, an activation).

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
[{'index': 0, 'name': 'conv2d', 'changed': 1, 'of': 16, 'weights': ['kernel', 'bias']}]
"""

from __future__ import annotations

import collections
import dataclasses
import json
from dataclasses import dataclass, field

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets import n_rows
from probmut.train.flags import row_digests
from probmut.train.graph import graph, table
from probmut.train.layer_traits import is_input
from probmut.train.layer_weights import connections, weight_name
from probmut.train.legality import (
    bound_to,
    checked,
    effective_settings,
    healthy_model,
    needs_keras,
)
from probmut.train.operators import Mutation, parse_mutations
from probmut.train.operators.layers import unfit
from probmut.train.operators.magnitudes import NETWORK
from probmut.train.operators.model import neurons, scope
from probmut.train.work import HEALTHY, instance_seed


@dataclass(frozen=True)
class LayerCount:
    """What changed in one layer: ``changed`` of ``of`` weights, units or neurons, in
    ``weights`` (the layer's weights the operator changes; for blocked neurons, those of
    the layers they feed, ``LAYER/WEIGHT``)."""

    index: int
    name: str
    changed: int
    of: int
    weights: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A layer with connection weights that an operator over the network cannot change,
    and ``why``."""

    index: int
    name: str
    why: str


@dataclass(frozen=True)
class Preview:
    """One mutation's dry run. ``counted`` names what ``layers`` count ("weights",
    "units" or "neurons"); ``samples`` counts the training samples ``changed`` (in
    place), ``added`` and ``removed``, ``of`` the training set's size; ``settings``
    maps a setting to [before, after]; ``equivalent`` says why the mutant is equivalent
    before training ("" if it is not known to be); ``skipped`` the layers an operator over
    the network cannot change (:class:`Skipped`)."""

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
    skipped: tuple[Skipped, ...] = ()

    @property
    def label(self) -> str:
        """How error messages name it (as :attr:`Mutation.label`)."""
        return f"{self.operator}:{self.magnitude}".rstrip(":")

    def to_dict(self) -> dict:
        return {"name": self.name, "operator": self.operator, "magnitude": self.magnitude,
                "level": self.level, "legal": self.legal, "reason": self.reason,
                "target": self.target or None, "equivalent": self.equivalent or None,
                "changes": {"counted": self.counted,
                            "layers": [{**dataclasses.asdict(c), "weights": list(c.weights)}
                                       for c in self.layers],
                            "samples": self.samples,
                            "settings": {k: list(v) for k, v in self.settings.items()},
                            "skipped": [dataclasses.asdict(c) for c in self.skipped]}}

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
            lines.append(f"  weights: {_weights_text(self.layers)}")
        if self.skipped:
            lines.append("  not in scope: " + "; ".join(f"{c.index} {c.name} ({c.why})"
                                                         for c in self.skipped))
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


def _weights_text(layers) -> str:
    """Which weights an operator changes, each list once with its layers:
    ``kernel, bias (0 conv2d, 2 conv2d_1)``."""
    grouped: dict[tuple, list[str]] = {}
    for c in layers:
        grouped.setdefault(c.weights, []).append(f"{c.index} {c.name}")
    return "; ".join(f"{', '.join(weights) or 'none'} ({', '.join(names)})"
                     for weights, names in grouped.items())


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
        lines = [f"dry run of {self.architecture}, seed {self.seed}: nothing is trained; counts "
                 "are those of instance 0"]
        return "\n".join(lines + [line for p in self.mutations for line in p.lines()])


def dry_run(mutations, spec, data, config, *, seed: int, architecture: str = "") -> DryRun:
    """Dry-run ``mutations`` (:class:`~probmut.train.operators.Mutation` objects or
    ``--mutation`` texts) for ``spec``'s model on ``data`` trained per ``config``, with
    the run's base ``seed``. The healthy model is built only for mutations that need
    Keras (:func:`~probmut.train.legality.needs_keras`): data-level ones are previewed on
    the data alone."""
    parsed = [m for text in mutations
              for m in ([text] if isinstance(text, Mutation) else parse_mutations(text))]
    healthy, fresh = None, {}
    previews = []
    for mutation in parsed:
        if healthy is None and needs_keras(mutation):
            healthy = healthy_model(spec, data, config)
        try:
            bound = bound_to(mutation, spec, data, healthy)
        except ProbmutError as error:
            previews.append(_refused(mutation, error))
            continue
        for m in bound:
            try:
                m = checked(m, spec, data, config, healthy)
            except ProbmutError as error:
                previews.append(_refused(m, error))
                continue
            rng = np.random.default_rng(instance_seed(seed, 0, m.population))
            if m.operator.level == "data":
                found = _data_changes(m, data, rng)
            elif m.operator.level == "training":
                found = _training_changes(m, spec, data, config, healthy)
            else:
                found = _model_changes(m, healthy, rng,
                                       _fresh(fresh, spec, data, config, seed))
            previews.append(Preview(m.population, m.operator.name, m.magnitude, m.operator.level,
                                    True, None, _target(m, healthy), equivalent=m.equivalent,
                                    **found))
    return DryRun(architecture or spec.description, seed, tuple(previews))


def _refused(mutation: Mutation, error: ProbmutError) -> Preview:
    """The preview of a refused mutation (bound to its layer when the layer was known):
    its reason without its label, which the preview's label says."""
    reason = str(error).removeprefix(f"{mutation.label}: ")
    return Preview(mutation.population.rstrip("_"), mutation.operator.name, mutation.magnitude,
                   mutation.operator.level, False, reason)


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
    """The settings (the learning rate as the optimizer starts with it) and layers that
    differ; the mutant built in a fresh Keras session, as the healthy model was, so that
    Keras names their layers alike."""
    import keras

    from probmut.train import models

    mutated = mutation.operator.apply(config, mutation.params)
    before, after = effective_settings(config), effective_settings(mutated)
    settings = {f.name: [_setting_value(f.name, getattr(before, f.name)),
                         _setting_value(f.name, getattr(after, f.name))]
                for f in dataclasses.fields(config)
                if f.name not in ("layer_changes", "structure")
                and getattr(before, f.name) != getattr(after, f.name)}
    keras.backend.clear_session(free_memory=False)
    mutant = models.build_model(spec, data.dims, mutated)
    found = {"settings": settings | model_changes(healthy, mutant)}
    if not mutated.validation and config.validation and data.validation is not None:
        found["samples"] = _samples(n_rows(data.x_train), added=n_rows(data.x_val))
    return found


def _fresh(kept: dict, spec, data, config, seed):
    """Healthy instance 0 before training, built once per dry run in a fresh Keras session
    with its seed, as the run builds it (kept in ``kept``), with its initial weights put
    back: each model-level mutation starts from them."""
    import keras

    from probmut.train import models

    if not kept:
        keras.backend.clear_session(free_memory=False)
        keras.utils.set_random_seed(instance_seed(seed, 0, HEALTHY))
        kept["model"] = models.build_model(spec, data.dims, config)
        kept["weights"] = kept["model"].get_weights()
    kept["model"].set_weights(kept["weights"])
    return kept["model"]


def _model_changes(mutation, healthy, rng, fresh) -> dict:
    """The mutant of healthy instance 0's initial weights (``fresh``): per layer in scope,
    what changed of what, and over the network the layers with connection weights out of
    scope, with why."""
    operator, params = mutation.operator, mutation.params
    table = graph(fresh)
    before = {id(layer): layer.get_weights() for layer in table.layers if connections(layer)}
    in_scope = scope(fresh, params, operator.layer_kind) if operator.counts else []
    mutant = operator.apply(fresh, params, rng)
    if operator.counts is None:  # a layer operator
        return {"settings": model_changes(healthy, mutant)}
    names = graph(healthy).names
    layers = tuple(LayerCount(i, names[i], *_counted(table, before, table.layers[i], operator))
                   for i in in_scope)
    skipped = () if params["layer"] != NETWORK else tuple(
        Skipped(i, names[i], unfit(layer, operator.layer_kind, table))
        for i, layer in enumerate(table.layers) if connections(layer) and i not in in_scope)
    return {"counted": operator.counts, "layers": layers, "skipped": skipped}


def _counted(table, before, layer, operator) -> tuple[int, int, tuple[str, ...]]:
    """``(changed, of, weights)`` of one layer: of its connection weights ("weights"), its
    units (an entry of theirs changed), or its neurons (the weights from them into the
    layers they feed, each route's ``LAYER/WEIGHT``), compared with ``before``."""
    old, new = before.get(id(layer)), layer.get_weights()
    if operator.counts == "weights":
        arrays = connections(layer)
        return (int(sum(np.sum(old[i] != new[i]) for i in arrays)),
                int(sum(old[i].size for i in arrays)),
                tuple(weight_name(layer, i) for i in arrays))
    if operator.counts == "units":
        units = table.units(layer)
        return units.changed(old, new), units.count, tuple(units.names(operator.layer_kind))
    blocked, weights = set(), []
    for route in table.neuron_routes(layer):
        was = before[id(route.consumer)][route.weight]
        now = route.consumer.get_weights()[route.weight]
        rows = np.moveaxis(was != now, route.axis, 0).reshape(was.shape[route.axis], -1)
        carried = route.carried
        blocked |= set(carried[rows.any(axis=1) & (carried >= 0)].tolist())
        weights.append(f"{table.names[table.index(route.consumer)]}/"
                       f"{weight_name(route.consumer, route.weight)}")
    return len(blocked), neurons(table, layer), tuple(weights)


def _short(value):
    """A layer setting as a short, JSON-able value: a Keras object as ``Class(args)``, a
    function Keras stores by name (a custom activation) as its name."""
    if isinstance(value, dict) and "class_name" in value:
        config = value.get("config")
        if not isinstance(config, dict | None):
            return str(config)
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in (config or {}).items()
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
    ``{"new layer J (after layer I NAME)": [None, Class]}`` for a layer inserted, after the
    layer whose output it reads (layers of the models' layer tables,
    :func:`probmut.train.graph.graph`). Layers are matched by their names in the tables:
    the two models are built alike, each in a fresh Keras session (as :func:`dry_run`
    builds them), so that Keras names their layers alike; a copy of a model keeps its
    layers' names."""
    (a, names_a), (b, names_b) = table(before), table(after)
    where = {name: j for j, name in enumerate(names_b)}
    changes = {}
    for i, (layer, name) in enumerate(zip(a, names_a, strict=True)):
        j = where.get(name)
        if j is None or type(b[j]) is not type(layer):
            changes[f"layer {i} {name}"] = [_kind(layer), None if j is None else _kind(b[j])]
            continue
        old, new = _config(layer), _config(b[j])
        changes |= {f"layer {i} {name}: {key}": [old.get(key), new.get(key)]
                    for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key)}
    known = {name: i for i, name in enumerate(names_a)}
    for j, name in enumerate(names_b):
        if name not in known:
            source = _reads(after, b[j])
            place = f"after layer {known[source]} {source}" if source in known else \
                f"after {source}"
            changes[f"new layer {j} ({place})"] = [None, _kind(b[j])]
    return changes


def _reads(model, layer) -> str:
    """The table name of the layer whose output ``layer`` reads (its first input)."""
    model_graph = graph(model)
    source = model_graph.calls_of(layer)[0].inputs[0]
    producer = next((call.layer for call in model_graph.calls if source in call.outputs), None)
    if producer is None:  # a model input
        return next((name for candidate, name in zip(model_graph.layers, model_graph.names,
                                                      strict=True)
                     if is_input(candidate)), "the input")
    return model_graph.names[model_graph.index(producer)]
