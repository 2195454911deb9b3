"""probmut's own trainer (:class:`KerasTrainer`): Keras models it builds, one of the
bundled architectures (:data:`probmut.train.models.MODELS`) or a user's
``module:function``, trained one at a time (:mod:`probmut.train.instance`) or in stacks
(:mod:`probmut.train.stack`), every operator applied by probmut's code; the
:class:`~probmut.train.trainers.Trainer` of a run whose ``trainer`` is ``keras``.

Where TensorFlow is imported: in a process that trains (a worker, set up by
:meth:`KerasTrainer.setup`) or that checks what needs Keras. :meth:`KerasTrainer.check`
checks the data-level mutations here, on the data alone, and hands the checks that build
models (the legality of training- and model-level mutations, ``--stack auto``'s size,
which populations can be stacked) to a backend call (:mod:`probmut.train.preflight`):
with worker processes, the process driving the run never imports TensorFlow.

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from probmut.train.operators import parse_mutations
>>> from probmut.train.trainers import CheckRequest
>>> checked = KerasTrainer("digits_cnn").check(
...     CheckRequest(parse_mutations("data_shuffle"), {"epochs": 2}),
...     dataset=load_dataset("digits"), call=None)   # nothing here needs Keras
>>> checked.config.epochs, checked.mutations[0].equivalent[:22]
(2, 'it only reorders the t')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from probmut.train.legality import needs_keras, prepare
from probmut.train.models import MODELS
from probmut.train.tf_setup import configure_tensorflow
from probmut.train.trainers import Checked, CheckRequest


@dataclass(frozen=True)
class KerasTrainer:
    """Train Keras models of ``architecture`` (see the module notes)."""

    architecture: str
    kind: ClassVar[str] = "keras"
    suffix: ClassVar[str] = ".keras"
    requires: ClassVar[tuple] = (("tensorflow", "train"), ("sklearn", "train"))
    user_code: ClassVar[bool] = False

    @classmethod
    def of(cls, settings) -> KerasTrainer:
        return cls(settings.architecture)

    def describe(self) -> str:
        return self.architecture

    def setup(self, threads: int) -> None:
        """TensorFlow's kernels, thread pools and deterministic ops
        (:func:`probmut.train.tf_setup.configure_tensorflow`)."""
        configure_tensorflow(threads)

    def check(self, request: CheckRequest, *, dataset, call) -> Checked:
        """The leading data-level mutations checked here, on the data alone
        (:func:`~probmut.train.legality.needs_keras`); the others, the stack size and which
        populations stack by :func:`probmut.train.preflight.preflight`, as ``call`` (where
        Keras is), unless nothing needs Keras: a bundled model, every mutation checked, one
        instance at a time. The split keeps the order of the checks, so the first illegal
        mutation is the one reported.

        Raises
        ------
        ProbmutError
            For the first illegal mutation, an architecture that cannot be built.
        """
        from probmut.train.preflight import preflight

        mutations = request.mutations
        split = next((i for i, m in enumerate(mutations) if needs_keras(m)), len(mutations))
        checked, unchecked = prepare(mutations[:split], None, dataset, None), mutations[split:]
        if not unchecked and request.stack == 1 and self.architecture in MODELS:
            config = MODELS[self.architecture].config.replace(**request.overrides)
            return Checked(config, tuple(checked))
        found = call(preflight, self.architecture, request.overrides, checked, unchecked,
                     request.stack)
        choice = found.choice
        return Checked(found.config, found.mutations, None if choice is None else choice.size,
                       "" if choice is None else choice.why, found.unstackable)

    def train_unit(self, assignments, stack: bool, healthy_weights=None, *,
                   dataset) -> list:
        """A stack of instances of one population (:func:`probmut.train.stack.train_stack`)
        or one instance (:func:`probmut.train.instance.train_instance`)."""
        if stack:
            from probmut.train.stack.training import train_stack

            return train_stack(assignments, dataset=dataset)
        from probmut.train.instance import train_instance

        return [train_instance(assignments[0], healthy_weights, dataset=dataset)]

    def stack_problem(self, settings, config, dataset) -> str | None:
        """:func:`probmut.train.stack.eligibility.population_problem` of the architecture."""
        from probmut.train.stack.eligibility import population_problem

        return population_problem(self.architecture, dataset, config)
