"""Before any training: is each mutation legal, and is it equivalent by construction?

Mu et al. (model-mutation testing) find illegal mutations (a shape mismatch after a
layer is removed or added, an activation a layer cannot take, a loss the output cannot
feed) to be the main source of false positives. :func:`prepare` builds every mutant
once, as the run will, and refuses what cannot produce a valid model with one line
(exit 2 on the command line; data-level mutations without Keras, :func:`needs_keras`):

* the target layer fits the operator and the model's task (:func:`~probmut.train.operators.bind`);
* class targets exist in the data; operators that need a validation set have one;
* a "change" operator finds the setting it changes (``change_patience`` early stopping,
  ``change_gradient_clipping`` a clipping optimizer), as DeepCrime requires;
* a data-level mutant leaves training data to learn from: samples, finite values and, for
  a classifier, two classes or more (checked on one draw: how many samples of each class
  an operator keeps does not depend on it);
* a training-level mutant builds and gives a finite loss on a batch of training data;
* a model-level mutant of the untrained healthy model (its weights put back after) gives
  finite outputs.

It also marks mutants that are equivalent before training, found by applying them: a
data operator that leaves the training data unchanged or only reorders it
(:func:`probmut.train.flags.data_equivalence`; ``data_shuffle``), a training operator
that leaves every setting and the architecture as they are (``change_epochs`` to the
model's own number, an activation changed to the one it has, ``change_learning_rate`` to
the rate the optimizer already starts with: :func:`effective_settings`). Model-level
equivalence is only known after the mutants are derived (see :mod:`probmut.train.flags`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets import check_training_set, n_rows, take
from probmut.train.flags import data_equivalence
from probmut.train.graph import table
from probmut.train.operators import Mutation, bind
from probmut.train.tasks import TASKS


def _architecture(model) -> list:
    """Each layer's class and config (of the model's layer table), without names (which
    differ between builds)."""
    return [(type(layer).__name__, {k: v for k, v in layer.get_config().items() if k != "name"})
            for layer in table(model)[0]]


def effective_settings(config):
    """The settings that decide training, besides the layers, with the learning rate the
    optimizer starts with (its own when ``config`` gives none:
    :func:`probmut.train.models.learning_rate_of`)."""
    from probmut.train import models

    return dataclasses.replace(config, layer_changes=(), structure=(),
                               learning_rate=models.learning_rate_of(config))


def _check_classes(label, params, n_classes):
    wanted = list(params.get("classes") or ()) + list(params.get("pair") or ())
    missing = [c for c in wanted if c >= n_classes]
    if missing:
        raise ProbmutError(f"{label}: class {missing[0]} is not a class of the data "
                           f"(0 to {n_classes - 1})", option="mutation")


def _finite(values) -> bool:
    return all(np.all(np.isfinite(np.asarray(v))) for v in np.atleast_1d(values))


def healthy_model(spec, data, config):
    """The healthy model as the run builds it, in a fresh Keras session (layer names in
    messages as in a fresh session: conv2d, ...)."""
    import keras

    from probmut.train import models

    keras.backend.clear_session()
    return models.build_model(spec, data.dims, config)


def check(mutation: Mutation, spec, data, config, healthy) -> list[Mutation]:
    """Bind, check and mark one mutation for ``spec``'s model (``healthy``: built by
    :func:`healthy_model`) on ``data`` trained per ``config``; the bound mutations
    (several for ``@each``), ``equivalent`` set where it is known now. Raises
    :class:`ProbmutError` (one line) for an illegal mutation."""
    return [checked(bound, spec, data, config, healthy)
            for bound in bound_to(mutation, spec, data, healthy)]


def bound_to(mutation: Mutation, spec, data, healthy) -> list[Mutation]:
    """``mutation`` bound to its target layers in ``healthy`` (:func:`probmut.train.operators.bind`,
    the subject's published layers first)."""
    return bind(mutation, healthy, data.task, None if spec is None else spec.layers)


def check_preconditions(mutation: Mutation, data, config) -> None:
    """What a bound ``mutation`` needs of ``data`` and the settings ``config``, whatever
    the framework: its classes among the data's, a validation set where its operator reads
    one, its operator's own requirement; one :class:`ProbmutError` line for the first
    missing."""
    operator, params, label = mutation.operator, mutation.params, mutation.label
    if data.task == "classification":
        _check_classes(label, params, data.n_classes)
    if operator.needs_validation and data.validation is None:
        raise ProbmutError(f"{label}: needs a validation set; give a validation split SHARE "
                           "(for the healthy population too)", option="validation_split")
    problem = operator.requires and operator.requires(config, params)
    if problem:
        raise ProbmutError(f"{label}: {problem}", option="mutation")


def checked(mutation, spec, data, config, healthy) -> Mutation:
    """One bound mutation checked and marked (as :func:`check`)."""
    from probmut.train import fitting, models

    operator, params, label = mutation.operator, mutation.params, mutation.label
    check_preconditions(mutation, data, config)
    equivalent = ""
    sample = take(data.x_train, np.arange(min(16, n_rows(data.x_train))))
    if operator.level == "data":
        x, y = operator.apply(data.x_train, data.y_train, data.n_classes, params,
                              np.random.default_rng(0), data.task)
        check_training_set(label, x, y, data.task, "mutated training set", option="mutation")
        equivalent = data_equivalence(x, y, data.x_train, data.y_train)
    elif operator.level == "training":
        mutated = operator.apply(config, params)
        try:
            mutant = models.build_model(spec, data.dims, mutated)
            inputs = fitting.keras_inputs(sample)  # called eagerly: no training step traced
            loss = float(mutant.compute_loss(
                x=inputs, y=TASKS[data.task].targets(data.y_train[: n_rows(sample)],
                                                     data.dims.n_outputs, mutated.loss),
                y_pred=mutant(inputs, training=False), training=False))
        except Exception as error:  # Keras reports illegal models in many types
            raise ProbmutError(f"{label}: not a valid model ({' '.join(str(error).split())[:300]})"
                               f"; layers: {models.layer_table(healthy)}",
                               option="mutation") from None
        if not _finite(loss):
            raise ProbmutError(f"{label}: the mutant's loss on training data is not finite "
                               f"({loss}); layers: {models.layer_table(healthy)}",
                               option="mutation")
        if effective_settings(mutated) == effective_settings(config) and \
                _architecture(mutant) == _architecture(healthy):
            equivalent = "the same settings and architecture as the healthy model"
    else:
        import keras

        weights = healthy.get_weights()  # a weight operator changes the model in place
        try:  # called eagerly on the few samples: no graph traced for them
            mutant = operator.apply(healthy, params, np.random.default_rng(0))
            outputs = [np.asarray(o) for o in keras.tree.flatten(
                mutant(fitting.keras_inputs(sample), training=False))]
        except Exception as error:
            raise ProbmutError(f"{label}: not a valid model ({' '.join(str(error).split())[:300]})"
                               f"; layers: {models.layer_table(healthy)}",
                               option="mutation") from None
        finally:
            healthy.set_weights(weights)
        if not all(map(_finite, outputs)):
            raise ProbmutError(f"{label}: the mutant's outputs are not finite; layers: "
                               f"{models.layer_table(healthy)}", option="mutation")
    return dataclasses.replace(mutation, equivalent=equivalent)


def needs_keras(mutation: Mutation) -> bool:
    """Whether checking ``mutation`` builds a model: every training- and model-level
    mutation, and one with a layer target or a Keras name. Data-level mutations are
    checked on the data alone, without Keras (and TensorFlow).

    >>> from probmut.train.operators import parse_mutations
    >>> [needs_keras(m) for m in parse_mutations("delete_training_data:10")
    ...  + parse_mutations("change_epochs:1") + parse_mutations("weights_fuzzing")]
    [False, True, True]
    """
    operator = mutation.operator
    return (operator.level != "data" or operator.layer_kind is not None
            or operator.keras_kind is not None)


def prepare(mutations: list[Mutation], spec, data, config) -> list[Mutation]:
    """Bind, check and mark every mutation for ``spec``'s model on ``data`` trained per
    ``config``; returns the bound mutations (``equivalent`` set where it is known now).
    The healthy model is built only if a mutation :func:`needs_keras`; for data-level
    mutations alone ``spec`` and ``config`` may be None."""
    healthy = (healthy_model(spec, data, config) if any(map(needs_keras, mutations))
               else None)
    return [bound for mutation in mutations
            for bound in check(mutation, spec, data, config, healthy)]
