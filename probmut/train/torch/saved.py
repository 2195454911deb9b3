"""Saved torch models scored again: the ``.pt`` state dicts of ``probmut train --framework
torch --save-models``, for ``probmut evaluate --framework torch``
(:func:`evaluate_state`).

A state dict holds weights, not the network: each file is loaded into the model its
population trained (:func:`model_for`), built from the architecture (bundled, or a
user's ``module:function``) and, for a file in probmut's layout
``models/POPULATION/ID.pt``, its population's mutation: a training-level mutant's layer
changes and structure (:func:`probmut.train.torch.build.build`), a model-level
mutant's structure (its operator applied to the healthy model: a layer removed,
duplicated or changed). The mutation's target layer is bound as the run bound it, by
the same rules on the same architecture (:func:`probmut.train.torch.operators.bind`). A
file outside that layout is loaded into the architecture itself. Scoring is the
trainer's (:func:`probmut.train.torch.fitting.predict`,
:func:`probmut.train.fitting.score_outputs`), so a saved model gets the accuracy and
outcomes its run recorded. A file that cannot be read, or whose state does not fit its
model (other layers or shapes), is a crashed instance with its one line.

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from pathlib import Path
>>> module = model_for("digits_cnn", Path("models/add_layer_batch_normalization@4/00000.pt"),
...                    load_dataset("digits"))
>>> called = [type(module.get_submodule(node.target)).__name__
...           for node in module.graph.nodes if node.op == "call_module"]
>>> called[3:7]                        # a BatchNormalization after layer 4, the second ReLU
['Conv2d', 'ReLU', 'BatchNormalization', 'Flatten']
"""

from __future__ import annotations

import functools
import pickle
import re
from pathlib import Path

import numpy as np
import torch

from probmut.io.records import one_line
from probmut.train.fitting import score_outputs
from probmut.train.operators import OPERATORS, parse_mutations, population_config
from probmut.train.torch import fitting
from probmut.train.torch.architectures import spec_of, torch_dims
from probmut.train.torch.build import build
from probmut.train.torch.operators import TORCH_OPERATORS, bind
from probmut.train.work import HEALTHY


def model_for(architecture: str, path: Path, dataset) -> torch.nn.Module:
    """The model the state dict at ``path`` belongs to (see the module notes): a fresh
    one, its weights to be loaded."""
    from probmut.train.evaluate import operator_and_magnitude

    found = None if path.parent.name == HEALTHY else operator_and_magnitude(path.parent.name)
    return _model(architecture, found, dataset).module


@functools.lru_cache(maxsize=8)
def _blueprint(architecture: str, found: tuple | None, dims):
    """What :func:`_model` builds from: the spec, the torch dims, the training settings
    of the population ``found`` (``(operator, magnitude)``; None: the architecture's
    own) and, for a model-level mutant, its operator and bound parameters."""
    spec = spec_of(architecture, dims)
    shape = torch_dims(dims)
    if found is None or OPERATORS[found[0]].level == "data":
        return spec, shape, spec.config, None
    (mutation,) = parse_mutations(f"{found[0]}:{found[1]}")
    healthy = build(spec, shape, spec.config, seed=0)
    (bound,) = bind(mutation, healthy, "classification", spec.layers)
    if mutation.operator.level == "training":
        return spec, shape, population_config(spec.config, mutation.operator, bound.params), None
    return spec, shape, spec.config, (mutation.operator.name, bound.params)


def _model(architecture: str, found, dataset):
    spec, shape, config, model_level = _blueprint(architecture, found, dataset.dims)
    built = build(spec, shape, config, seed=0)
    if model_level is not None:
        name, params = model_level
        built = TORCH_OPERATORS[name].apply(built, params, np.random.default_rng(0))
    return built


def _load_state(path: Path) -> dict:
    """The state dict of tensors in ``path``; else one line: torch's own refusal spreads
    over many lines about its ``weights_only`` loads, which probmut always uses (a saved
    file is data, never code to run)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        pickled = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
        raise ValueError("not a state dict saved by torch.save(module.state_dict())"
                         + (f": it pickles a {pickled.group(1)}" if pickled else "")) from None
    if not isinstance(state, dict):
        raise ValueError(f"holds a {type(state).__name__}, not a state dict saved by "
                         "torch.save(module.state_dict())")
    return state


def _check_fits(state: dict, own: dict, architecture: str) -> None:
    """A state dict fits the model's: the same names and shapes; else one line saying
    which differ (torch's own error spreads over many lines)."""
    missing = [key for key in own if key not in state]
    unexpected = [key for key in state if key not in own]
    shapes = [f"{key} {tuple(state[key].shape)} for {tuple(own[key].shape)}" for key in own
              if key in state and state[key].shape != own[key].shape]
    if missing or unexpected or shapes:
        found = [f"{what}: {', '.join(keys[:3])}{' ...' * (len(keys) > 3)}"
                 for what, keys in (("missing", missing), ("unexpected", unexpected),
                                    ("other shapes", shapes)) if keys]
        raise ValueError(f"not the state of {architecture}'s model ({'; '.join(found)})")


def evaluate_state(path, instance: int, architecture: str, *, dataset):
    """Load the state dict at ``path`` into its model (:func:`model_for`) and score it on
    ``dataset``'s test set: an :class:`~probmut.train.evaluate.Evaluation`, never an
    exception."""
    from probmut.train.evaluate import Evaluation

    path = Path(path)
    try:
        module = model_for(architecture, path, dataset)
        state = _load_state(path)
        _check_fits(state, module.state_dict(), architecture)
        module.load_state_dict(state)
        scored = score_outputs(fitting.predict(module, dataset.x_test), dataset.y_test,
                               dataset.task)
        finite = scored.finite and all(bool(torch.isfinite(v).all())
                                       for v in module.state_dict().values()
                                       if v.is_floating_point())
    except Exception as error:  # the file is the instance: it failed, not the command
        return Evaluation.failed(instance, one_line(error))
    return Evaluation.scored(instance, scored, finite)
