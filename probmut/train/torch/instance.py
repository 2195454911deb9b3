"""Train (or derive) and score one torch instance, and :func:`train_unit`, the unit of work
the trainer seam hands a worker (the shape of :func:`probmut.train.run.train_unit`).

An :class:`~probmut.train.work.Assignment` names the instance; its own seed gives its
initial weights, data order, dropout masks and mutation draws, so its result does not
depend on which worker runs it, in what order, or how many workers there are.
Model-level mutants derive from healthy instance i: its kept weights, or (if they were
not kept) healthy instance i trained again, alone or in its stack as the run trained
it, which gives the same weights. A derived mutant is scored as Keras' are
(:func:`mutate_paired`: its match with its healthy instance).
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from probmut.io.records import loss_diverged, one_line
from probmut.train import flags
from probmut.train.fitting import score_outputs
from probmut.train.operators import OPERATORS, population_config
from probmut.train.tasks import TASKS
from probmut.train.torch import fitting
from probmut.train.torch.architectures import spec_of, torch_dims
from probmut.train.torch.build import build
from probmut.train.torch.operators import TORCH_OPERATORS
from probmut.train.training_set import training_set
from probmut.train.work import HEALTHY, Assignment, InstanceResult, instance_seed


def trained(settings, dataset, seed: int, operator=None, params=None, deadline=None):
    """One instance built and trained alone: its built model and training report."""
    config = population_config(settings.config, operator, params)
    x, y = training_set(dataset, config, operator, params, seed)
    built = build(spec_of(settings.architecture, dataset.dims), torch_dims(dataset.dims),
                  config, seed)
    report = fitting.fit(built, x, y, dataset.task, dataset.dims.n_outputs, config, seed,
                         dataset.validation, deadline)
    return built, report


def healthy_model(settings, dataset, instance: int, healthy_weights=None, deadline=None):
    """Healthy instance ``instance`` as the run trained it: its kept weights, else
    trained again (alone, or in its stack); the model and its report (None unless
    trained alone)."""
    from probmut.train.torch.stack import stack_problem, stacked_member

    seed = instance_seed(settings.seed, instance, HEALTHY)
    if healthy_weights is not None:
        built = build(spec_of(settings.architecture, dataset.dims), torch_dims(dataset.dims),
                      settings.config, seed)
        fitting.load_weights(built.module, healthy_weights)
        return built, None
    if settings.stack > 1 and stack_problem(settings.architecture, dataset,
                                            settings.config) is None:
        return stacked_member(settings, dataset, instance, HEALTHY), None
    return trained(settings, dataset, seed, deadline=deadline)


def mutate_paired(healthy, operator, params, rng, dataset):
    """Apply a model-level operator to a trained healthy model: the mutant, its outputs
    on the test inputs, and how closely it matches the healthy model
    (:data:`probmut.train.flags.MATCHES`), as :func:`probmut.train.instance._mutate_paired`
    finds it for Keras: the same test predictions and the same weights; else the same
    predictions on the training inputs too; else on the test inputs only; else
    different."""
    weights = fitting.weights_of(healthy.module)
    outputs = fitting.predict(healthy.module, dataset.x_test)
    mutant = TORCH_OPERATORS[operator.name].apply(healthy, params, rng)
    mutant_outputs = fitting.predict(mutant.module, dataset.x_test)
    decisions = TASKS[dataset.task].decisions
    if not np.array_equal(decisions(outputs), decisions(mutant_outputs)):
        return mutant, mutant_outputs, flags.DIFFERENT
    mutated = fitting.weights_of(mutant.module)
    if mutant is healthy and all(np.array_equal(a, b) for a, b in zip(weights, mutated,
                                                                       strict=True)):
        return mutant, mutant_outputs, flags.SAME_WEIGHTS
    on_training = decisions(fitting.predict(mutant.module, dataset.x_train))
    if mutant is healthy:  # mutated in place: predict with the healthy weights, then restore
        fitting.load_weights(healthy.module, weights)
        before = decisions(fitting.predict(healthy.module, dataset.x_train))
        fitting.load_weights(mutant.module, mutated)
    else:
        before = decisions(fitting.predict(healthy.module, dataset.x_train))
    same = np.array_equal(before, on_training)
    return mutant, mutant_outputs, flags.SAME_PREDICTIONS if same else flags.SAME_TEST_PREDICTIONS


def train_instance(assignment: Assignment, healthy_weights=None, *, dataset) -> InstanceResult:
    """Train instance ``assignment.instance`` of its population on ``dataset`` and score it
    (a model-level mutant: derived from healthy instance ``assignment.instance``, from
    ``healthy_weights`` when given, the arrays of :func:`probmut.train.torch.fitting.weights_of`).

    Never raises for a failure of the instance itself: an exception is recorded as
    status ``crashed``, a stop at ``assignment.timeout`` as ``timed out`` (neither is
    scored), a diverged loss or non-finite outputs as ``diverged``, as the Keras trainer
    records them."""
    start = time.perf_counter()
    deadline = None if assignment.timeout is None else time.monotonic() + assignment.timeout
    settings, seed = assignment.settings, assignment.seed
    operator = OPERATORS[assignment.operator] if assignment.operator else None
    result = functools.partial(InstanceResult, assignment.population, assignment.instance, seed)
    report, match = None, None
    try:
        if operator is not None and operator.level == "model":
            healthy, report = healthy_model(settings, dataset, assignment.instance,
                                            healthy_weights, deadline)
            if report is None or not report.timed_out:
                built, outputs, match = mutate_paired(
                    healthy, operator, assignment.params, np.random.default_rng(seed), dataset)
                report = None  # the mutant itself is not trained: no loss of its own
        else:
            built, report = trained(settings, dataset, seed, operator, assignment.params,
                                    deadline)
            if not report.timed_out:
                outputs = fitting.predict(built.module, dataset.x_test)
        if report is not None and report.timed_out:
            return result(math.nan, None, time.perf_counter() - start, status="timed out",
                          error=f"stopped after {assignment.timeout:g} s (--timeout)",
                          loss_history=report.losses, initial_loss=report.initial_loss)
        scored = score_outputs(outputs, dataset.y_test, dataset.task)
    except Exception as error:  # the instance failed, not the run
        losses = () if report is None else report.losses
        return result(math.nan, None, time.perf_counter() - start, status="crashed",
                      error=one_line(error), loss_history=losses)
    return finished(result, built, scored, report, match, assignment,
                    time.perf_counter() - start)


def finished(result, built, scored, report, match, assignment, seconds) -> InstanceResult:
    """The result of a scored instance (``result``: its partial
    :class:`~probmut.train.work.InstanceResult`)."""
    losses = () if report is None else report.losses
    initial = math.nan if report is None else report.initial_loss
    diverged = loss_diverged(initial, losses) or not scored.finite
    return result(
        float(scored.correct.mean()), scored.correct, seconds,
        weights=fitting.weights_of(built.module) if assignment.keep_weights else None,
        match=match, status="diverged" if diverged else "ok", loss_history=losses,
        initial_loss=initial, constant=scored.constant,
        model_bytes=fitting.state_bytes(built.module) if assignment.save_model else None)


def train_unit(assignments: list[Assignment], stack: bool, healthy_weights=None, *,
               dataset) -> list[InstanceResult]:
    """One unit of work: a stack of instances of one population trained together
    (``stack``: :func:`probmut.train.torch.stack.train_stack`) or one instance
    (:func:`train_instance`, with a model-level mutant's ``healthy_weights``); one result
    per assignment, in their order."""
    if stack:
        from probmut.train.torch.stack import train_stack

        return train_stack(assignments, dataset=dataset)
    return [train_instance(assignments[0], healthy_weights, dataset=dataset)]
