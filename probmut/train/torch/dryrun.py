"""What each mutation of a torch model changes, without training: the torch counterpart of
``probmut train --dry-run`` (:mod:`probmut.train.dryrun`), giving the same
:class:`~probmut.train.dryrun.DryRun` (its text and its dict).

For every mutation: is it legal (:mod:`probmut.train.torch.legality`, and why not), its
target, and what it changes, found by applying it as instance 0 of the run would and
comparing with the healthy model: data level, the samples changed, added or removed
(the Keras dry run's own count); training level, the settings and layers that differ
between the healthy and the mutant model, both built as the run builds them; model
level, the operator applied to healthy instance 0's initial weights with the mutant's
instance 0 seed: per layer in scope, the kernel weights, units or neurons that changed,
of how many (selections depend on the seed and the layer shapes only, not on trained
weights), or for a layer operator the layers that differ.

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from probmut.train.torch.architectures import ARCHITECTURES
>>> spec = ARCHITECTURES["digits_cnn"]
>>> report = dry_run(["neurons_freezing:0.05"], spec, load_dataset("digits"), spec.config,
...                  seed=42)
>>> report.to_dict()["mutations"][0]["changes"]["layers"]   # int(16 x 0.05), at least 1
[{'index': 0, 'name': '0', 'changed': 1, 'of': 16, 'weights': ['weight', 'bias']}]
"""

from __future__ import annotations

import dataclasses
import difflib

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets import n_rows
from probmut.train.dryrun import (
    DryRun,
    LayerCount,
    Preview,
    Skipped,
    _data_changes,
    _samples,
    _setting_value,
)
from probmut.train.operators import Mutation, parse_mutations
from probmut.train.operators.magnitudes import NETWORK
from probmut.train.torch.architectures import torch_dims
from probmut.train.torch.build import Built, build
from probmut.train.torch.legality import check, healthy_model, layer_config, layer_settings
from probmut.train.torch.operators import LAYER_KIND, TORCH_OPERATORS, kernel_of, scope
from probmut.train.work import HEALTHY, instance_seed


def dry_run(mutations, spec, data, config, *, seed: int, architecture: str = "") -> DryRun:
    """Dry-run ``mutations`` (:class:`~probmut.train.operators.Mutation` objects or
    ``--mutation`` texts) for ``spec``'s torch model on ``data`` trained per ``config``,
    with the run's base ``seed``."""
    parsed = [m for text in mutations
              for m in ([text] if isinstance(text, Mutation) else parse_mutations(text))]
    healthy = healthy_model(spec, data, config)
    previews = []
    for mutation in parsed:
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
                fresh = build(spec, torch_dims(data.dims), config,
                              instance_seed(seed, 0, HEALTHY))
                found = model_level_changes(m, fresh, rng)
            previews.append(Preview(m.population, m.operator.name, m.magnitude, m.operator.level,
                                    True, None, _target(m, healthy), equivalent=m.equivalent,
                                    **found))
    return DryRun(architecture or spec.description, seed, tuple(previews))


def _target(mutation: Mutation, healthy: Built) -> str:
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
        found = healthy.graph.layers[layer]
        return f"layer {layer} {found.name} ({found.kind})"
    if layer == NETWORK:
        return "the whole network: every " + LAYER_KIND[mutation.operator.layer_kind][0][2:]
    return mutation.operator.default_target


def _training_changes(mutation, spec, data, config, healthy: Built) -> dict:
    mutated = mutation.operator.apply(config, mutation.params)
    settings = {f.name: [_setting_value(f.name, getattr(config, f.name)),
                         _setting_value(f.name, getattr(mutated, f.name))]
                for f in dataclasses.fields(config)
                if f.name not in ("layer_changes", "structure")
                and getattr(config, f.name) != getattr(mutated, f.name)}
    found = {"settings": settings | model_changes(healthy, healthy_model(spec, data, mutated))}
    if not mutated.validation and config.validation and data.validation is not None:
        found["samples"] = _samples(n_rows(data.x_train), added=n_rows(data.x_val))
    return found


def model_level_changes(mutation, fresh: Built, rng) -> dict:
    """What a model-level ``mutation`` changes in ``fresh`` (healthy instance 0's initial
    weights), drawing from ``rng``: per layer in scope, the changed weights, units or
    neurons (:attr:`~probmut.train.operators.Operator.counts`), or the layers that differ."""
    operator = mutation.operator
    before = {layer.name: _state(layer.module) for layer in fresh.graph.layers
              if fresh.graph.weighted(layer)}
    mutant = TORCH_OPERATORS[operator.name].apply(fresh, mutation.params, rng)
    if operator.counts is None:  # a layer operator
        return {"settings": model_changes(fresh, mutant)}
    graph = fresh.graph
    in_scope = scope(fresh, mutation.params, operator.layer_kind)
    layers = tuple(LayerCount(i, graph.layers[i].name,
                              _changed(fresh, before, graph.layers[i], operator.counts),
                              _of(fresh, graph.layers[i], operator.counts),
                              _weights(fresh, graph.layers[i], operator))
                   for i in in_scope)
    why = ("its neurons meet an addition, a layer that mixes them or a model output before "
           "a weighted layer" if operator.layer_kind == "neurons"
           else f"not {LAYER_KIND[operator.layer_kind][0]}")
    skipped = () if mutation.params["layer"] != NETWORK else tuple(
        Skipped(i, layer.name, why)
        for i, layer in enumerate(graph.layers) if graph.weighted(layer) and i not in in_scope)
    return {"counted": operator.counts, "layers": layers, "skipped": skipped}


def _weights(built: Built, layer, operator) -> tuple[str, ...]:
    """The layer's weights the operator changes, by their torch names (a blocked neuron's:
    ``LAYER/weight`` of the layers it feeds)."""
    if operator.counts == "neurons":
        return tuple(f"{consumer.name}/weight" for consumer, _ in
                     built.graph.neuron_routes(layer))
    if operator.counts == "weights" or operator.layer_kind == "units":
        return ("weight",)
    return ("weight", "bias") if layer.module.bias is not None else ("weight",)


def _state(module) -> tuple:
    bias = None if module.bias is None else module.bias.detach().numpy().copy()
    return kernel_of(module), bias


def _of(built: Built, layer, counts: str) -> int:
    return int(layer.module.weight.numel()) if counts == "weights" else built.graph.units(layer)


def _changed(built: Built, before: dict, layer, counts: str) -> int:
    """Weights of ``layer``'s kernel, its units (kernel column or bias), or its neurons
    (weights into the layers they feed) that differ from ``before``."""
    if counts == "neurons":
        blocked = set()
        for consumer, carried in built.graph.neuron_routes(layer):
            old, new = before[consumer.name][0], kernel_of(consumer.module)
            rows = np.moveaxis(old != new, -2, 0).reshape(old.shape[-2], -1).any(axis=1)
            blocked |= set(carried[rows & (carried >= 0)].tolist())
        return len(blocked)
    (old, old_bias), (new, new_bias) = before[layer.name], _state(layer.module)
    if counts == "weights":
        return int(np.sum(old != new))
    differs = (old != new).reshape(-1, old.shape[-1]).any(axis=0)
    if old_bias is not None:
        differs |= old_bias != new_bias
    return int(differs.sum())


def model_changes(before: Built, after: Built) -> dict:
    """The layer settings that differ between two built torch models, named by
    ``before``'s layers, as :func:`probmut.train.dryrun.model_changes` names them:
    ``{"layer I NAME: KEY": [before, after]}``, ``{"layer I NAME": [kind, other kind or
    None]}`` for a layer replaced or removed, ``{"new layer J (after layer I NAME)":
    [None, kind]}`` for one inserted; layers matched by kind and settings."""
    a, b = layer_settings(before), layer_settings(after)
    names = before.graph.names
    keys_b = [(kind, repr(config)) for kind, config in b]
    matcher = difflib.SequenceMatcher(a=[(kind, repr(config)) for kind, config in a],
                                      b=keys_b, autojunk=False)
    changes = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        while tag == "insert" and j2 < len(b) and keys_b[j1] == keys_b[j2]:
            i1, i2, j1, j2 = i1 + 1, i2 + 1, j1 + 1, j2 + 1  # a copy: after its original
        paired = min(i2 - i1, j2 - j1)
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            if k < paired and a[i][0] == b[j][0]:  # the same layer, its settings
                old, new = a[i][1], b[j][1]
                changes |= {f"layer {i} {names[i]}: {key}": [old.get(key), new.get(key)]
                            for key in sorted(old.keys() | new.keys())
                            if old.get(key) != new.get(key)}
            elif k < i2 - i1:
                changes[f"layer {i} {names[i]}"] = [a[i][0], b[j][0] if k < paired else None]
            else:
                where = f"after layer {i1 - 1} {names[i1 - 1]}" if i1 else "first"
                changes[f"new layer {j} ({where})"] = [None, b[j][0]]
    return changes


__all__ = ["dry_run", "layer_config", "model_changes", "model_level_changes"]
