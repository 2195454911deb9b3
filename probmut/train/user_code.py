"""A user's training code, whatever its framework: what it is handed per instance (a
:class:`Spec`), what it hands back (a mapping, :func:`result_of`), and which mutations
it can be given (:func:`check_mutations`). The trainers that run it:
:mod:`probmut.train.function_trainer` (a Python function) and
:mod:`probmut.train.command_trainer` (a program, the spec as JSON).

The contract (docs/training.md, *Your own training code*). A spec holds the instance's
id (``instance``), its seed (``seed``, from probmut's seed scheme: the same for the same
run seed, instance and population, whatever worker runs it), the ``population``'s name,
the ``mutation`` (``operator``, ``magnitude`` and ``parameters``; all None and empty for
the healthy population), the data after probmut applied any data-level mutation
(``x_train``, ``y_train``, ``x_test``, ``y_test``; ``x_val``, ``y_val`` or None;
read-only: the instances a worker trains share them; the
number of classes ``n_classes``), ``hyperparameters``: a mapping of the training
settings the run gives (:func:`probmut.train.hyperparameters.hyperparameters_of`: those
set, the mutated value in place), which records which names the code read, and
``save_model`` (whether the run keeps each instance's model: save it into ``folder``, a
temporary folder of the instance's own, removed afterwards). A spec also reads as a
mapping with the same keys.

The code returns a mapping with ``accuracy`` (on the test set) and optionally
``correct`` (one bool per test input, in order: per-input analyses, DeepMutation's
quality control and the broken flag need it), ``loss_history`` (one loss per epoch:
symptoms), ``model_path`` (a saved model's file, kept with ``save_models``) and, from a
function, ``model``: its trained ``torch.nn.Module``, which probmut then scores itself
and mutates (:mod:`probmut.train.torch.returned`; a ``.pt`` state dict is kept with
``save_models`` when no ``model_path`` is given).

Which mutations apply: every data-level operator (probmut's own code, as for Keras) and
the training-level operators that change a setting of the mapping (learning rate, batch
size, epochs, optimizer, loss, patience, gradient clipping, the validation set, one
batch); to a function, the model-level operators too, applied by probmut to the torch
model each healthy instance returns. Operators that change a model's layers before
training (the training-level ones with a layer target) need a model probmut builds,
and are refused, as are model-level ones for a program (whose model probmut never
holds) and ``@each`` (one mutant per layer: the layers are known only once a model is
trained). A mutation whose setting the code never read did not reach it: it is
flagged ``not applied`` (:mod:`probmut.train.quality`), never counted as a mutant.

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from probmut.train.hyperparameters import user_config
>>> from probmut.train.work import Assignment, RunSettings
>>> settings = RunSettings("digits", None, user_config(epochs=5), trainer="function",
...                        code="m:f")
>>> spec = instance_spec(Assignment(settings, "healthy", 3), load_dataset("digits"), "/tmp")
>>> spec.instance, spec.seed == spec["seed"], spec.mutation.operator, spec.x_train.shape
(3, True, None, (1347, 8, 8, 1))
>>> spec.hyperparameters["epochs"], sorted(spec.hyperparameters.read)
(5, ['epochs'])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.records import loss_diverged, one_line
from probmut.train.hyperparameters import (
    Hyperparameters,
    TrainConfig,
    changed,
    hyperparameters_of,
    user_config,
)
from probmut.train.operators import OPERATORS, Mutation, population_config
from probmut.train.trainers import Checked, CheckRequest
from probmut.train.training_set import training_set
from probmut.train.work import Assignment, InstanceResult


class _Fields(Mapping):
    """A dataclass that also reads as a mapping of its fields."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


@dataclass(frozen=True, eq=False)
class MutationSpec(_Fields):
    """The instance's mutation: its ``operator``'s name, its ``magnitude`` as written and
    its parsed ``parameters`` (None, None and empty for the healthy population)."""

    operator: str | None
    magnitude: str | None
    parameters: dict

    def __repr__(self) -> str:
        return f"MutationSpec({self.operator!r}, {self.magnitude!r}, {self.parameters!r})"


@dataclass(frozen=True, eq=False)
class Spec(_Fields):
    """What a user's training code gets for one instance (see the module notes)."""

    instance: int
    seed: int
    population: str
    mutation: MutationSpec
    x_train: Any
    y_train: np.ndarray
    x_test: Any
    y_test: np.ndarray
    x_val: Any
    y_val: np.ndarray | None
    n_classes: int
    hyperparameters: Hyperparameters
    save_model: bool
    folder: str

    def __repr__(self) -> str:
        return (f"Spec(instance={self.instance}, seed={self.seed}, "
                f"population={self.population!r}, mutation={self.mutation!r}, "
                f"hyperparameters={self.hyperparameters!r}, {len(self.y_train)} training and "
                f"{len(self.y_test)} test samples)")


def instance_spec(assignment: Assignment, dataset, folder: str) -> Spec:
    """The :class:`Spec` of one assignment: its population's settings and, for a
    data-level mutation, its training set drawn with the instance's seed
    (:func:`probmut.train.training_set.training_set`), its arrays read-only; ``folder``:
    the instance's own temporary folder."""
    operator = OPERATORS[assignment.operator] if assignment.operator else None
    params = dict(assignment.params or {})
    config = population_config(assignment.settings.config, operator, params)
    x, y = training_set(dataset, config, operator, params, assignment.seed)
    validation = dataset.validation if config.validation else None
    magnitude = assignment.population.removeprefix(f"{assignment.operator}_") \
        if operator else None
    arrays = map(_read_only, (x, y, dataset.x_test, dataset.y_test,
                              *(validation or (None, None))))
    return Spec(assignment.instance, assignment.seed, assignment.population,
                MutationSpec(assignment.operator, magnitude, params), *arrays,
                dataset.n_classes, Hyperparameters(hyperparameters_of(config)),
                assignment.save_model, folder)


def _read_only(x):
    """A view of an array (or of each of a tuple's) that cannot be written: the data
    set is shared by the instances a worker trains, so that a change in place would
    reach the next one."""
    if x is None:
        return None
    if isinstance(x, tuple):
        return tuple(map(_read_only, x))
    view = x.view()
    view.flags.writeable = False
    return view


#: What a result of a user's training code holds besides ``accuracy``.
OPTIONAL = ("correct", "loss_history", "model_path", "model")


def result_of(returned, assignment: Assignment, dataset, *, seconds: float,
              read: tuple[str, ...] | None) -> InstanceResult:
    """The :class:`~probmut.train.work.InstanceResult` of what the user's code
    ``returned`` for ``assignment`` (the module notes' contract; ``read``: the
    hyperparameters it read, None when unknown). A loss that diverged (a NaN or an
    infinity in ``loss_history``) makes it ``diverged``. A returned torch ``model`` is
    scored by probmut (:func:`probmut.train.torch.returned.score_returned`, which must
    agree with ``accuracy`` and ``correct``), kept whole when ``assignment`` keeps its
    weights (its model-level mutants derive from it) and saved as a ``.pt`` state dict
    when the run keeps models and no ``model_path`` is given.

    Raises
    ------
    ValueError
        One line saying what in the result breaks the contract (the instance is then
        recorded as crashed).
    """
    if not isinstance(returned, Mapping) or "accuracy" not in returned:
        raise ValueError(f"the training code returned {_shown(returned)}, not a mapping "
                         "with 'accuracy' (and optionally " + ", ".join(OPTIONAL) + ")")
    accuracy = _number(returned["accuracy"], "accuracy")
    if not 0 <= accuracy <= 1:
        raise ValueError(f"accuracy {accuracy} is not a share of the test set in [0, 1]")
    correct = returned.get("correct")
    if correct is not None:
        correct = np.asarray(correct)
        if correct.shape != (len(dataset.y_test),) or correct.dtype.kind not in "biu" \
                or not np.isin(correct, (0, 1)).all():
            raise ValueError(f"correct must hold one bool per test input ({len(dataset.y_test)}"
                             f"), got an array of shape {correct.shape} and type {correct.dtype}")
        correct = correct.astype(bool)
        if abs(correct.mean() - accuracy) > 1e-6:
            raise ValueError(f"accuracy {accuracy} is not the share of correct test inputs "
                             f"({correct.mean()})")
    history = returned.get("loss_history")
    losses = () if history is None else tuple(_number(v, "loss_history", finite=False)
                                               for v in history)
    module, constant, finite = returned.get("model"), None, True
    # kept for model-level mutants: the module whole; none returned: nothing (an empty
    # list, so that its mutants fail at once instead of training it again)
    weights = [] if assignment.keep_weights else None
    if module is not None:
        if not is_torch_module(module):
            raise ValueError(f"model must be the trained torch.nn.Module (which probmut "
                             f"scores and mutates), got {_shown(module)}")
        from probmut.train.torch.returned import kept, score_returned

        scored = score_returned(module, accuracy, dataset, correct)
        correct, accuracy = scored.correct, float(scored.correct.mean())
        constant, finite = scored.constant, scored.finite
        if assignment.keep_weights:
            weights = kept(module)
    model = _model_bytes(returned.get("model_path"), assignment.save_model, module)
    return InstanceResult(assignment.population, assignment.instance, assignment.seed,
                          accuracy, correct, seconds, weights=weights,
                          status="diverged" if loss_diverged(math.nan, losses) or not finite
                          else "ok", loss_history=losses, constant=constant,
                          model_bytes=model and model[1], model_suffix=model and model[0],
                          read=read)


def is_torch_module(value) -> bool:
    """Is ``value`` a ``torch.nn.Module``? (torch is not imported to find out: an object
    of a module not imported is none of its classes.)

    >>> is_torch_module({"weights": []})
    False
    """
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def failed(assignment: Assignment, error: BaseException | str, seconds: float,
           status: str = "crashed") -> InstanceResult:
    """The record of an instance whose code failed (``crashed``, ``timed out``): its
    error's one line (:func:`probmut.io.records.one_line`)."""
    text = error if isinstance(error, str) else one_line(error)
    return InstanceResult(assignment.population, assignment.instance, assignment.seed,
                          math.nan, None, seconds, status=status, error=text)


def _shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' * (len(text) > 60)}"


def _number(value, what: str, finite: bool = True) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, got {_shown(value)}") from None
    if finite and not math.isfinite(number):
        raise ValueError(f"{what} is {number}")
    return number


def _model_bytes(path, wanted: bool, module=None) -> tuple[str, bytes] | None:
    """The saved model's suffix and bytes, when ``save_models`` wants it: the file at
    ``path``, else the returned torch ``module``'s state dict."""
    if not wanted:
        return None
    if path is None and module is not None:
        from probmut.train.torch.fitting import state_bytes

        return ".pt", state_bytes(module)
    if path is None:
        raise ValueError("save_models keeps each instance's model, but the result has no "
                         "model_path")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model_path {path} is not a file")
    return path.suffix, path.read_bytes()


# ---------------------------------------------------------------- the mutations

def check_request(request: CheckRequest, dataset, what: str, models: bool = False) -> Checked:
    """A trainer's check (:meth:`probmut.train.trainers.Trainer.check`) for a user's
    training code (``what``: "a training function", ...): the settings given
    (:func:`~probmut.train.hyperparameters.user_config`), the mutations it can be given
    (:func:`check_mutations`; ``models``: the code can hand probmut its torch model),
    one instance at a time.

    Raises
    ------
    ProbmutError
        A stack size above 1, or a mutation it cannot be given.
    """
    if request.stack not in (None, 1):
        raise ProbmutError(f"{what} trains one instance at a time: leave out the stack size "
                           "(or give 1)", option="stack")
    config = user_config(**request.overrides)
    mutations = check_mutations(request.mutations, config, dataset, what, models)
    return Checked(config, tuple(mutations), 1 if request.stack is None else None)


def check_mutations(mutations: list[Mutation], config: TrainConfig, dataset,
                    what: str, models: bool = False) -> list[Mutation]:
    """The ``mutations`` a user's training code (``what``: "a training function", ...)
    can be given, bound and checked: data-level ones as for Keras
    (:func:`probmut.train.legality.prepare`, on the data alone), training-level ones on
    the settings (``config``) they change, marked equivalent when they change none;
    with ``models`` (the code hands probmut its torch model), model-level ones
    (:func:`_on_returned_models`), bound to a layer only on each returned model.

    Raises
    ------
    ProbmutError
        For the first that cannot be given to it: one that changes a model's layers
        before training or (without ``models``) mutates a trained one, or one the
        settings or data do not allow.
    """
    from probmut.train.legality import prepare

    checked = []
    for mutation in mutations:
        operator = mutation.operator
        if operator.level == "model" and models:
            checked.append(_on_returned_models(mutation, what))
            continue
        if operator.level == "model":
            raise ProbmutError(f"{mutation.label}: {operator.name} mutates a trained model, "
                               f"which needs a model probmut holds (its Keras or torch trainer, "
                               f"--architecture, or a training function returning its torch "
                               f"model as 'model'); {what} trains a model of its own: give it "
                               "data-level and training-level operators", option="mutation")
        if operator.layer_kind is not None:
            raise ProbmutError(f"{mutation.label}: {operator.name} changes a layer of the "
                               f"model before training, which needs a model probmut builds "
                               f"(the Keras or torch trainer, --architecture); {what} builds "
                               "a model of its own: give it data-level, training-level and "
                               "model-level operators", option="mutation")
        if operator.level == "data":
            checked += prepare([mutation], None, dataset, None)
            continue
        if operator.needs_validation and dataset.validation is None:
            raise ProbmutError(f"{mutation.label}: needs a validation set; give a validation "
                               "split SHARE (for the healthy population too)",
                               option="validation_split")
        problem = operator.requires and operator.requires(config, mutation.params)
        if problem:
            raise ProbmutError(f"{mutation.label}: {problem}", option="mutation")
        same = not changed(config, operator.apply(config, mutation.params))
        checked.append(dataclasses.replace(
            mutation, equivalent="the same hyperparameters as the healthy population"
            if same else ""))
    return checked


def _on_returned_models(mutation: Mutation, what: str) -> Mutation:
    """A model-level ``mutation`` for the torch models a training function returns:
    its names checked as the torch trainer checks them (torch must be installed);
    ``@each`` refused (its mutants, one per fitting layer, are known only once a model
    is), and so is a layer operator without its layer (its population is named by it)."""
    from probmut.train.operators.magnitudes import EACH
    from probmut.train.torch.process import require_torch

    require_torch("model-level operators on a training function's torch model")
    from probmut.train.torch.operators import check_name

    check_name(mutation)
    if mutation.params.get("layer") == EACH:
        raise ProbmutError(f"{mutation.label}: @each makes one mutant per fitting layer, "
                           f"which are known only once {what}'s model is trained: give "
                           "@LAYER, @network or no target", option="mutation")
    if not mutation.magnitude:  # its population would be named by the layer it binds to
        raise ProbmutError(f"{mutation.label}: give the layer ({mutation.operator.name}:LAYER"
                           f"): its default is the model's first fitting layer, known only "
                           f"once {what}'s model is trained", option="mutation")
    return mutation


def application(mutation: Mutation | None, config: TrainConfig, dataset,
                reads: list[tuple[str, ...] | None]) -> tuple[str, str]:
    """Whether a training-level ``mutation`` reached the user's training code, from the
    hyperparameters each of its scored instances ``read`` (None: unknown): why it is
    ``not applied`` (an instance never read a setting it changes), and why whether it
    is applied is unknown (``unverified``: an instance that did not say what it read);
    "" for each that holds no instance. Data-level mutations, and the validation set
    moved into the training set, probmut applies itself.

    >>> from probmut.train.hyperparameters import user_config
    >>> from probmut.train.operators import parse_mutations
    >>> rate = parse_mutations("change_learning_rate:0.1")[0]
    >>> application(rate, user_config(), None, [("epochs",), ("learning_rate",)])[0]
    'the training code never read learning_rate (1 of 2 instances)'
    """
    if mutation is None or mutation.operator.level != "training" or not reads:
        return "", ""
    mutated = population_config(config, mutation.operator, mutation.params)
    if config.validation and not mutated.validation and dataset.validation is not None:
        return "", ""
    names = changed(config, mutated)
    if not names:
        return "", ""
    unread = sum(read is not None and not set(names) & set(read) for read in reads)
    unknown = sum(read is None for read in reads)
    setting = " or ".join(names)
    return ((f"the training code never read {setting} ({unread} of {len(reads)} instances)"
             if unread else ""),
            (f"the training program did not say which hyperparameters it read ({unknown} of "
             f"{len(reads)} instances; its result has no \"read\" list): whether {setting} "
             "reached it is unknown" if unknown else ""))
