"""The torch trainer behind the trainer seam's protocol
(:class:`probmut.train.trainers.Trainer`): :class:`TorchTrainer`, for a run whose
``trainer`` is ``torch`` (``probmut train --framework torch``,
``train_populations(..., framework="torch")``; docs/torch.md).

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from probmut.train.operators import parse_mutations
>>> from probmut.train.trainers import CheckRequest
>>> checked = TorchTrainer("digits_cnn").check(
...     CheckRequest(parse_mutations("NEB") + parse_mutations("change_epochs:3"),
...                  {"epochs": 2}, stack=None), dataset=load_dataset("digits"), call=None)
>>> checked.config.epochs, [m.population for m in checked.mutations], checked.stack
(2, ['neuron_effect_blocking_0.01', 'change_epochs_3'], 25)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from probmut.train.operators import population_config
from probmut.train.trainers import Checked, CheckRequest
from probmut.train.work import HEALTHY

#: ``--stack auto``'s size for torch: stacks of 25 trained digits_cnn as fast per instance
#: as stacks of 50 on one thread (docs/benchmarks.md), with half the memory.
AUTO_STACK = 25


@dataclass(frozen=True)
class TorchTrainer:
    """Train torch models of ``architecture`` (a bundled one or a user's
    ``module:function``): probmut's own loop, every operator applied by probmut's code."""

    architecture: str
    kind: ClassVar[str] = "torch"
    suffix: ClassVar[str] = ".pt"
    requires: ClassVar[tuple] = (("torch", "torch"),)
    user_code: ClassVar[bool] = False

    @classmethod
    def of(cls, settings) -> TorchTrainer:
        return cls(settings.architecture)

    def describe(self) -> str:
        return f"{self.architecture} (torch)"

    def setup(self, threads: int) -> None:
        """One thread count, deterministic algorithms
        (:func:`probmut.train.torch.process.configure_torch`)."""
        from probmut.train.torch.process import configure_torch

        configure_torch(threads)

    def check(self, request: CheckRequest, *, dataset, call) -> Checked:
        """Every mutation bound and checked here (:func:`probmut.train.torch.legality.prepare`);
        ``--stack auto`` (``request.stack`` None) is :data:`AUTO_STACK`, and above 1 the
        populations that cannot stack say why. torch needs no worker to check: ``call`` is
        not used.

        Raises
        ------
        ProbmutError
            For the first illegal mutation, an architecture that cannot be built.
        """
        from probmut.train.torch.architectures import resolve
        from probmut.train.torch.legality import prepare

        spec = resolve(self.architecture, dataset.dims)
        config = spec.config.replace(**request.overrides)
        mutations = tuple(prepare(request.mutations, spec, dataset, config))
        stack = AUTO_STACK if request.stack is None else request.stack
        unstackable = {}
        if stack > 1:
            for name, mutation in [(HEALTHY, None)] + [(m.population, m) for m in mutations
                                                       if m.operator.level != "model"]:
                trained_with = population_config(config, mutation and mutation.operator,
                                                 mutation and mutation.params)
                why = self.stack_problem(None, trained_with, dataset)
                if why is not None:
                    unstackable[name] = why
        return Checked(config, mutations, AUTO_STACK if request.stack is None else None, "",
                       unstackable)

    def train_unit(self, assignments, stack: bool, healthy_weights=None, *,
                   dataset) -> list:
        """:func:`probmut.train.torch.instance.train_unit`."""
        from probmut.train.torch.instance import train_unit

        return train_unit(assignments, stack, healthy_weights, dataset=dataset)

    def stack_problem(self, settings, config, dataset) -> str | None:
        """:func:`probmut.train.torch.stack.stack_problem` of the architecture."""
        from probmut.train.torch.stack import stack_problem

        return stack_problem(self.architecture, dataset, config)
