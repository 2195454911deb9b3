"""Train (or derive) and score one instance: the unit of work every backend runs.

An :class:`~probmut.train.work.Assignment` names the instance; its own seed
(:func:`~probmut.train.work.instance_seed`) makes its result independent of which
worker runs it, in what order, or how many workers there are. TensorFlow runs with
deterministic ops (:func:`probmut.train.tf_setup.configure_tensorflow`), so the same
seed gives the same accuracy.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from probmut.io.records import loss_diverged, one_line
from probmut.train import fitting, flags, models
from probmut.train.operators import OPERATORS, population_config
from probmut.train.stack.eligibility import trains_stacked
from probmut.train.tasks import TASKS
from probmut.train.training_set import training_set
from probmut.train.work import HEALTHY, Assignment, InstanceResult, RunSettings, instance_seed


@functools.lru_cache(maxsize=4)
def _spec(architecture: str, dims) -> models.ModelSpec:
    return models.resolve_model(architecture, dims)


def _trained(settings: RunSettings, data, seed: int, operator=None, params=None,
             deadline: float | None = None):
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    config = population_config(settings.config, operator, params)
    x, y = training_set(data, config, operator, params, seed)
    model = models.build_model(_spec(settings.architecture, data.dims), data.dims, config)
    report = fitting.fit(model, x, y, data.dims, data.task, config, data.validation, deadline)
    return model, report


def _healthy_model(settings: RunSettings, dataset, instance: int, deadline=None):
    """Healthy instance ``instance`` retrained as the run trains it, its weights not kept:
    the model and its training report (None when retrained in a stack)."""
    seed = instance_seed(settings.seed, instance, HEALTHY)
    if trains_stacked(settings, dataset, settings.config):
        from probmut.train.stack.training import stacked_model

        return stacked_model(settings, dataset, instance, HEALTHY), None
    return _trained(settings, dataset, seed, deadline=deadline)


def _mutate_paired(healthy, operator, params, rng, dataset):
    """Apply a model-level operator to a trained healthy model. Returns the mutant, its
    outputs on the test inputs, and how closely it matches the healthy model
    (:data:`probmut.train.flags.MATCHES`): the same predictions on every test input and
    the same weights; else the same predictions on every training input too; else the
    same on the test inputs only; else different. The training inputs are predicted
    only for a mutant the test inputs cannot tell apart."""
    weights, outputs = healthy.get_weights(), fitting.predict(healthy, dataset.x_test)
    mutant = operator.apply(healthy, params, rng)
    mutant_outputs = fitting.predict(mutant, dataset.x_test)
    decisions = TASKS[dataset.task].decisions
    if not np.array_equal(decisions(outputs), decisions(mutant_outputs)):
        return mutant, mutant_outputs, flags.DIFFERENT
    mutated = mutant.get_weights()
    if mutant is healthy and all(np.array_equal(a, b) for a, b in zip(weights, mutated,
                                                                       strict=True)):
        return mutant, mutant_outputs, flags.SAME_WEIGHTS
    on_training = decisions(fitting.predict(mutant, dataset.x_train))
    if mutant is healthy:  # mutated in place: predict with the healthy weights, then restore
        healthy.set_weights(weights)
        before = decisions(fitting.predict(healthy, dataset.x_train))
        mutant.set_weights(mutated)
    else:
        before = decisions(fitting.predict(healthy, dataset.x_train))
    same = np.array_equal(before, on_training)
    return mutant, mutant_outputs, flags.SAME_PREDICTIONS if same else flags.SAME_TEST_PREDICTIONS


def train_instance(assignment: Assignment, healthy_weights=None, *, dataset) -> InstanceResult:
    """Train instance ``assignment.instance`` of its population on ``dataset`` and score it.

    Model-level mutants start from healthy instance ``assignment.instance``: its saved
    ``healthy_weights``, or (if they were not kept) a retraining with the healthy seed,
    which deterministic ops make identical.

    Never raises for a failure of the instance itself: an exception is recorded as
    status ``crashed`` with its one-line text, a stop at ``assignment.timeout`` as ``timed
    out`` (neither is scored), a loss that diverged (see
    :func:`probmut.io.records.loss_diverged`) or non-finite outputs as ``diverged``.
    """
    start = time.perf_counter()
    deadline = None if assignment.timeout is None else time.monotonic() + assignment.timeout
    settings = assignment.settings
    seed = assignment.seed
    operator = OPERATORS[assignment.operator] if assignment.operator else None
    result = functools.partial(InstanceResult, assignment.population, assignment.instance, seed)
    report, match = None, None
    try:
        if operator is not None and operator.level == "model":
            if healthy_weights is None:
                healthy, report = _healthy_model(settings, dataset, assignment.instance, deadline)
            else:
                spec = _spec(settings.architecture, dataset.dims)
                healthy = models.build_model(spec, dataset.dims, settings.config)
                healthy.set_weights(healthy_weights)
            if report is None or not report.timed_out:
                model, outputs, match = _mutate_paired(
                    healthy, operator, assignment.params, np.random.default_rng(seed), dataset)
                report = None  # the mutant itself is not trained: no loss of its own
        else:
            model, report = _trained(settings, dataset, seed, operator, assignment.params, deadline)
            if not report.timed_out:
                outputs = fitting.predict(model, dataset.x_test)
        if report is not None and report.timed_out:
            return result(math.nan, None, time.perf_counter() - start, status="timed out",
                          error=f"stopped after {assignment.timeout:g} s (--timeout)",
                          loss_history=report.losses, initial_loss=report.initial_loss)
        scored = fitting.score_outputs(outputs, dataset.y_test, dataset.task)
    except Exception as error:  # the instance failed, not the run
        losses = () if report is None else report.losses
        return result(math.nan, None, time.perf_counter() - start, status="crashed",
                      error=one_line(error), loss_history=losses)
    seconds = time.perf_counter() - start
    losses = () if report is None else report.losses
    initial = math.nan if report is None else report.initial_loss
    diverged = loss_diverged(initial, losses) or not scored.finite
    return result(
        float(scored.correct.mean()), scored.correct, seconds,
        weights=model.get_weights() if assignment.keep_weights else None, match=match,
        status="diverged" if diverged else "ok", loss_history=losses, initial_loss=initial,
        constant=scored.constant,
        model_bytes=fitting.keras_bytes(model) if assignment.save_model else None)
