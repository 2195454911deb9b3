"""A torch model that a user's training function returned (``{"accuracy": ..., "model":
module}``, :mod:`probmut.train.user_code`): scored by probmut, kept, and the healthy
instance that model-level mutants derive from.

probmut scores the returned model itself on the test set, as the torch trainer scores its
own (:func:`probmut.train.torch.fitting.predict`: float32, images channels first, as
torch lays them out, in inference mode), so that a healthy instance and the mutants
derived from it are scored the same way; the function's own accuracy must agree (to
one test input, for float sums in another order), else the instance fails, saying so:
the model takes other inputs than probmut gives it, or is not the model the function
scored. A healthy instance whose mutants derive from it keeps its module whole
(``torch.save`` of the module, its class imported again from the user's module where it
is loaded): a function's model has no architecture probmut could build again.

A model-level mutant (:func:`derive`) is the registry's torch operator
(:data:`probmut.train.torch.operators.TORCH_OPERATORS`) applied to healthy instance i's
model with the mutant's own seed, its target layer bound on that model (the first
fitting hidden layer, ``@LAYER``, ``@network``; a model that ``torch.fx`` cannot trace
takes none), scored, and matched with its healthy instance
(:func:`probmut.train.torch.instance.mutate_paired`), as the torch trainer's mutants are.

Examples
--------
>>> import torch
>>> from probmut.train.datasets import load_dataset
>>> digits = load_dataset("digits")
>>> _ = torch.manual_seed(0)
>>> model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
>>> scored = score_returned(model, None, digits)
>>> scored.correct.shape, bool(abs(scored.correct.mean() - 0.1) < 0.1)   # untrained: chance
((450,), True)
>>> score_returned(model, 0.9, digits)  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
ValueError: the returned model gives accuracy 0.1067 on the 450 test inputs as probmut
feeds them (float32 arrays of shape (n, 1, 8, 8): images channels first), not the returned
accuracy 0.9: return the model that was scored, taking the test inputs in that layout (put
any reshaping into the module)
"""

from __future__ import annotations

import dataclasses
import functools
import io
import time

import numpy as np
import torch

from probmut.train.fitting import Score, score_outputs
from probmut.train.operators import OPERATORS, Mutation
from probmut.train.torch import fitting
from probmut.train.torch.architectures import torch_dims
from probmut.train.torch.build import Built
from probmut.train.torch.graph import TorchGraph, trace
from probmut.train.torch.instance import finished, mutate_paired
from probmut.train.torch.operators import bind
from probmut.train.work import InstanceResult

#: How many test inputs probmut's scoring of a returned model may judge otherwise than the
#: function did: a float sum in another order (another batch size) may flip a near tie.
AGREEMENT = 1


def score_returned(module: torch.nn.Module, accuracy: float | None, dataset,
                   correct: np.ndarray | None = None) -> Score:
    """probmut's score of a returned ``module`` on ``dataset``'s test set (see the module
    notes), checked against the function's ``accuracy`` and ``correct`` (None: not given).

    Raises
    ------
    ValueError
        One line, when they disagree on more than :data:`AGREEMENT` test inputs.
    """
    module.cpu()
    scored = score_outputs(fitting.predict(module, dataset.x_test), dataset.y_test,
                           dataset.task)
    n = len(dataset.y_test)
    if correct is not None:
        differ = int(np.sum(correct != scored.correct))
    else:
        differ = 0 if accuracy is None else round(abs(accuracy - scored.correct.mean()) * n)
    if differ > AGREEMENT:
        shape = (-1, *torch_dims(dataset.dims).input_shape)
        said = f"{accuracy:.4g}" if correct is None else f"{correct.mean():.4g} ({differ} " \
            "inputs judged otherwise)"
        raise ValueError(
            f"the returned model gives accuracy {scored.correct.mean():.4g} on the {n} test "
            f"inputs as probmut feeds them (float32 arrays of shape "
            f"{str(shape).replace('-1', 'n')}: images channels first), not the returned "
            f"accuracy {said}: return the model that was scored, taking the test inputs in "
            "that layout (put any reshaping into the module)")
    return scored


def kept(module: torch.nn.Module) -> list[np.ndarray] | None:
    """The module whole (``torch.save``), as the one array a run keeps of a healthy
    instance (:func:`probmut.io.workdir.write_weights`); None when it cannot be pickled
    (a class defined inside a function, a lambda): its mutants then train it again, and
    :func:`from_kept` says why it cannot be kept."""
    buffer = io.BytesIO()
    try:
        torch.save(module, buffer)
    except Exception:  # noqa: BLE001 - pickle reports what it cannot save in many types
        return None
    return [np.frombuffer(buffer.getvalue(), dtype=np.uint8)]


def from_kept(weights: list, instance: int, module=None) -> torch.nn.Module:
    """The module of healthy instance ``instance``: the one :func:`kept` kept
    (``weights``), or ``module``, the one it returned when trained again.

    Raises
    ------
    ValueError
        It returned no model (``weights`` empty, ``module`` None).
    """
    if module is not None:
        return module
    if not weights:
        raise ValueError(f"healthy instance {instance} returned no model: a model-level "
                         "mutant needs the training function to return its torch model as "
                         "'model'")
    return torch.load(io.BytesIO(np.asarray(weights[0]).tobytes()), weights_only=False)


def built_of(module: torch.nn.Module, dataset) -> Built:
    """A returned module as the torch operators read it: traced, with its layer table
    (or, untraceable, none and why)."""
    shape = tuple(torch_dims(dataset.dims).input_shape)
    try:
        traced = trace(module)
    except Exception as error:  # noqa: BLE001 - ProbmutError: the model does not trace
        return Built(module, None, shape, str(error), initializer=None)
    return Built(traced, TorchGraph(traced, shape), shape, initializer=None)


def derive(assignment, healthy: torch.nn.Module, dataset, start: float) -> InstanceResult:
    """Model-level mutant ``assignment`` of ``healthy``, healthy instance i's returned
    module (see the module notes): scored, matched, its model a ``.pt`` state dict when
    the run keeps models.

    Raises
    ------
    ProbmutError
        The mutation's target does not fit the model (one line, with its layer table).
    """
    operator = OPERATORS[assignment.operator]
    built = built_of(healthy, dataset)
    magnitude = assignment.population.removeprefix(f"{operator.name}_")
    (bound,) = bind(Mutation(operator, magnitude, dict(assignment.params)), built, dataset.task)
    mutant, outputs, match = mutate_paired(built, operator, bound.params,
                                           np.random.default_rng(assignment.seed), dataset)
    scored = score_outputs(outputs, dataset.y_test, dataset.task)
    result = functools.partial(InstanceResult, assignment.population, assignment.instance,
                               assignment.seed)
    done = finished(result, mutant, scored, None, match, assignment, time.perf_counter() - start)
    return dataclasses.replace(done, model_suffix=".pt" if done.model_bytes else None)
