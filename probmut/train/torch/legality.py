"""Before any torch training: is each mutation legal, and is it equivalent by
construction? The torch counterpart of :mod:`probmut.train.legality`, with its rules:

* the target layer fits the operator (:func:`probmut.train.torch.operators.bind`: a
  model that does not trace takes no layer operator, refused with the reason), and the
  names it gives are Keras names torch computes here (activations, initialisers, losses,
  optimizers);
* class targets exist in the data; operators that need a validation set have one; a
  "change" operator finds the setting it changes (patience, gradient clipping);
* a data-level mutant leaves training data to learn from;
* a training-level mutant builds and gives a finite loss on a batch of training data;
* a model-level mutant applied to an untrained copy of the model gives finite outputs.

A data operator that leaves the training data unchanged or only reorders it, or a
training operator that leaves every setting and the architecture as they are, is marked
equivalent before training.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from probmut.errors import ProbmutError
from probmut.train.datasets import check_training_set, n_rows, take
from probmut.train.flags import data_equivalence
from probmut.train.legality import check_preconditions
from probmut.train.operators import Mutation
from probmut.train.torch import fitting
from probmut.train.torch.architectures import torch_dims, torch_inputs
from probmut.train.torch.build import Built, build
from probmut.train.torch.operators import TORCH_OPERATORS, bind
from probmut.train.torch.optimizers import canonical

_ATTRIBUTES = ("in_features", "out_features", "in_channels", "out_channels", "kernel_size",
               "stride", "padding", "dilation", "groups", "p", "negative_slope", "dim",
               "momentum", "epsilon", "start_dim", "end_dim")


def layer_config(built: Built, index: int) -> dict:
    """The settings of layer ``index`` of ``built``'s table that a mutation may change:
    its module's (sizes, rate, ...), its activation, bias, initialiser and penalty."""
    graph = built.graph
    layer = graph.layers[index]
    config = {} if layer.module is None else {
        name: _plain(getattr(layer.module, name)) for name in _ATTRIBUTES
        if hasattr(layer.module, name)}
    if graph.activation(layer) is not None:
        config["activation"] = graph.activation(layer)
    if graph.weighted(layer):
        config["bias"] = layer.module.bias is not None
        config["kernel_initializer"] = built.initializers.get(layer.name, built.initializer)
        config["kernel_regularizer"] = regulariser_text(
            built.penalties.get(f"{layer.name}.weight"))
    return config


def regulariser_text(name: str | None) -> str | None:
    """A penalty as Keras shows its regulariser: ``L2(l2=0.01)``."""
    from probmut.train.torch.settings import REGULARISERS

    if name is None:
        return None
    kind, factors = REGULARISERS[name]
    return f"{kind}({', '.join(f'{k}={v:g}' for k, v in factors.items())})"


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def layer_settings(built: Built) -> list:
    """Each layer's kind and settings (not names, which differ between builds)."""
    return [(layer.kind, layer_config(built, i)) for i, layer in enumerate(built.graph.layers)]


def healthy_model(spec, data, config) -> Built:
    """The healthy model as a run builds it (instance seed 0)."""
    return build(spec, torch_dims(data.dims), config, seed=0)


def effective_settings(config):
    """The settings that decide training, besides the layers, with the learning rate the
    optimizer starts with (Keras' default for it when ``config`` gives none), as
    :func:`probmut.train.legality.effective_settings` compares them."""
    from probmut.train.torch.optimizers import DEFAULTS

    rate = config.learning_rate
    if rate is None:
        rate = DEFAULTS[canonical(config.optimizer)]["learning_rate"]
    return dataclasses.replace(config, layer_changes=(), structure=(), learning_rate=rate)


def _finite(outputs: torch.Tensor) -> bool:
    return bool(torch.isfinite(outputs).all())


def check(mutation: Mutation, spec, data, config, healthy: Built) -> list[Mutation]:
    """Bind, check and mark one mutation for ``spec``'s model (``healthy``: built by
    :func:`healthy_model`) on ``data`` trained per ``config``; the bound mutations
    (several for ``@each``), ``equivalent`` set where it is known now. Raises
    :class:`ProbmutError` (one line) for an illegal mutation."""
    return [_checked(bound, spec, data, config, healthy)
            for bound in bind(mutation, healthy, data.task, spec.layers)]


def _checked(mutation, spec, data, config, healthy: Built) -> Mutation:
    operator, params, label = mutation.operator, mutation.params, mutation.label
    check_preconditions(mutation, data, config)
    equivalent = ""
    sample = torch.from_numpy(torch_inputs(take(data.x_train,
                                                np.arange(min(16, n_rows(data.x_train))))))
    layers = f"; layers: {healthy.graph.describe()}" if healthy.graph is not None else ""
    if operator.level == "data":
        x, y = operator.apply(data.x_train, data.y_train, data.n_classes, params,
                              np.random.default_rng(0), data.task)
        check_training_set(label, x, y, data.task, "mutated training set", option="mutation")
        return dataclasses.replace(mutation, equivalent=data_equivalence(
            x, y, data.x_train, data.y_train))
    try:
        if operator.level == "training":
            mutated = operator.apply(config, params)
            canonical(mutated.optimizer)
            mutant = healthy_model(spec, data, mutated)
            target = fitting.targets(data.y_train[:len(sample)], data.task,
                                     data.dims.n_outputs, mutated.loss)
            mutant.module.eval()
            with torch.no_grad():
                outputs = fitting.loss_of(mutant, sample, target, mutated.loss).reshape(1)
            if effective_settings(mutated) == effective_settings(config) and \
                    layer_settings(mutant) == layer_settings(healthy):
                equivalent = "the same settings and architecture as the healthy model"
        else:
            mutant = TORCH_OPERATORS[operator.name].apply(healthy.copy(), params,
                                                          np.random.default_rng(0))
            mutant.module.eval()
            with torch.no_grad():
                outputs = mutant.module(sample)
    except ProbmutError as error:
        raise ProbmutError(f"{label}: {error}", option="mutation") from None
    except Exception as error:  # noqa: BLE001 - torch reports illegal models in many types
        raise ProbmutError(f"{label}: not a valid model ({' '.join(str(error).split())[:300]})"
                           f"{layers}", option="mutation") from None
    if not _finite(outputs):
        what = "loss on training data" if operator.level == "training" else "outputs"
        raise ProbmutError(f"{label}: the mutant's {what} is not finite{layers}",
                           option="mutation")
    return dataclasses.replace(mutation, equivalent=equivalent)


def prepare(mutations: list[Mutation], spec, data, config) -> list[Mutation]:
    """Bind, check and mark every mutation for ``spec``'s torch model on ``data`` trained
    per ``config``; the bound mutations (``equivalent`` set where it is known now)."""
    if data.task != "classification":
        raise ProbmutError(f"torch models are classifiers here; the data {data.name} is for "
                           f"{data.task}", option="framework")
    healthy = healthy_model(spec, data, config)
    return [bound for mutation in mutations
            for bound in check(mutation, spec, data, config, healthy)]
