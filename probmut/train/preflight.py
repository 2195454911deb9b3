"""Before training, what only Keras can tell: the checks of a run that build models.

:func:`preflight` binds and checks the mutations (:func:`probmut.train.legality.prepare`),
chooses ``--stack auto``'s size (:func:`probmut.train.stack.eligibility.choose_stack_size`)
and finds the populations that cannot be stacked. It is a backend call like training an
instance (the dataset comes as the backend's shared argument), so it runs where Keras
already is: in this process for one job, else on the first worker process ready, and the
process driving the run need not import TensorFlow. Its answer is plain data.
"""

from __future__ import annotations

from dataclasses import dataclass

from probmut.train import models
from probmut.train.legality import prepare
from probmut.train.operators import Mutation, population_config
from probmut.train.stack.eligibility import (
    StackChoice,
    choose_stack_size,
    gpu_budget,
    population_problem,
)
from probmut.train.work import HEALTHY


@dataclass(frozen=True)
class Preflight:
    """What :func:`preflight` found: the run's training ``config`` (the architecture's,
    with the caller's overrides), the bound and checked ``mutations``, ``--stack auto``'s
    ``choice`` (None when a size was given) and ``unstackable``: the populations that
    train one instance at a time although the stack size is above 1, with why."""

    config: models.TrainConfig
    mutations: tuple[Mutation, ...]
    choice: StackChoice | None
    unstackable: dict[str, str]

    @property
    def stack(self) -> int | None:
        return None if self.choice is None else self.choice.size


def preflight(architecture: str, overrides: dict, checked: list[Mutation],
              unchecked: list[Mutation], stack: int | None, *, dataset) -> Preflight:
    """The checks of a run of ``architecture`` (a name
    :func:`probmut.train.models.resolve_model` knows) trained with its settings and
    ``overrides`` (epochs, ...) on ``dataset``: the ``unchecked`` mutations bound and
    checked after the ``checked`` ones; the stack size chosen when ``stack`` is None; and,
    for a stack size above 1, which populations (the healthy one, and the mutants not
    derived from it) cannot be stacked."""
    spec = models.resolve_model(architecture, dataset.dims)
    config = spec.config.replace(**overrides)
    bound = [*checked, *prepare(unchecked, spec, dataset, config)]
    choice = None
    if stack is None:
        probe = models.build_model(spec, dataset.dims, config)
        private = any(m.operator.level == "data" for m in bound)
        choice = choose_stack_size(probe, config, dataset, private_data=private,
                                   gpu_bytes=gpu_budget())
        stack = choice.size
    unstackable = {}
    if stack > 1:
        populations = [(HEALTHY, None)] + [(m.population, m) for m in bound
                                           if m.operator.level != "model"]
        for population, mutation in populations:
            trained_with = population_config(config, mutation and mutation.operator,
                                              mutation and mutation.params)
            why = population_problem(architecture, dataset, trained_with)
            if why is not None:
                unstackable[population] = why
    return Preflight(config, tuple(bound), choice, unstackable)
