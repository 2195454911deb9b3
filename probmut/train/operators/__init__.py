"""Mutation operators: small pure functions of (data | training settings | model, magnitude).

One registry, :data:`OPERATORS`: each :class:`Operator` has its level, magnitude syntax
and meaning, documented default magnitude, default target, source and the names its
references give it (DeepMutation's short names, DeepCrime's where they differ:
:data:`ALIASES`). The operators live in one module per level:

* :mod:`~probmut.train.operators.data` (source level, before training):
  ``apply(x, y, n_classes, params, rng, task) -> (x, y)``
* :mod:`~probmut.train.operators.training` (source level, model and training
  settings): ``apply(config, params) -> config``
* :mod:`~probmut.train.operators.model` (model level, on a trained healthy instance,
  paired): ``apply(model, params, rng) -> model``

A magnitude is written ``VALUE[@TARGET]`` (:mod:`~probmut.train.operators.magnitudes`):
``3.1``, ``elu@1`` (layer 1), ``0.05_1`` (ratio 0.05, scale 1), ``12.5@all``, ``10@3+7``
(classes 3 and 7), ``0.01@network`` (every weighted layer), ``elu@each`` (one mutant
per layer that fits). Without magnitudes (``--mutation data_shuffle``) the operator's
documented default is used. Every operator follows its reference by default
(docs/operators.md says how, and where probmut deliberately differs). Bad magnitudes
raise :class:`ProbmutError` from :func:`parse_mutations`/:func:`bind` before training.

Examples
--------
>>> [m.population for m in parse_mutations("delete_training_data:3.1,9.29")]
['delete_training_data_3.1', 'delete_training_data_9.29']
>>> [m.population for m in parse_mutations("LE:10")]   # DeepMutation's label error: all labels
['change_label_10@all']
>>> [m.population for m in parse_mutations("LE") + parse_mutations("DR")]  # the paper's 1%
['change_label_1@all', 'data_repetition_1']
>>> parse_mutations("change_gradient_clip")[0].population    # DeepCrime's name
'change_gradient_clipping_0.5'
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from probmut.errors import ProbmutError
from probmut.train.graph import graph
from probmut.train.layer_traits import is_input
from probmut.train.operators import data, magnitudes, model, training
from probmut.train.operators.layers import LAYER_KIND, fitting, unfit
from probmut.train.operators.magnitudes import EACH, NETWORK, count

__all__ = ["ALIASES", "DEEPMUTATION_DATA_PERCENT", "OPERATORS", "Mutation", "Operator", "bind",
           "check_keras_name", "count", "parse_mutations", "population_config"]

ALL_TASKS = ("classification", "regression", "recommendation")
IMAGE_TASKS = ("classification", "regression")
CLASS_TASKS = ("classification", "recommendation")


@dataclass(frozen=True)
class Operator:
    """One mutation operator. ``magnitude`` says what ``VALUE[@TARGET]`` means,
    ``default`` is the documented default magnitude, ``target`` the default target in
    words; ``layer_kind`` the layers it may target (:data:`LAYER_KIND`) and ``scope``
    ``"network"`` when, without ``@LAYER``, it acts on every such layer at once.
    ``requires(config, params)`` says why the healthy model's settings do not allow it
    (or None); ``counts`` what a model-level dry run counts per layer ("weights",
    "units" or "neurons"); ``note`` what a user should know before choosing it."""

    name: str
    level: str  # "data", "training" or "model"
    parse: Callable[[str, str | None], dict]
    apply: Callable
    magnitude: str
    default: str
    source: str
    target: str = ""
    aliases: tuple[str, ...] = ()
    layer_kind: str | None = None
    scope: str = "layer"
    tasks: tuple[str, ...] = ALL_TASKS
    needs_validation: bool = False
    requires: Callable | None = None
    counts: str | None = None
    note: str = ""
    keras_kind: str | None = None  # "activations", ...: params["name"] is Keras'

    @property
    def paired(self) -> bool:
        return self.level == "model"

    def __reduce__(self):
        """Pickled as its name in :data:`OPERATORS` (its functions are closures): a
        mutation can go to a worker process and back."""
        return _registered, (self.name,)

    @property
    def rebuilds(self) -> bool:
        """Whether its mutant is the model rebuilt through its graph (a layer changed,
        removed, inserted or replaced), not the model with other weights."""
        return self.layer_kind is not None and (self.level == "training" or self.counts is None)

    @property
    def network_target(self) -> str:
        return "the whole network: every " + LAYER_KIND[self.layer_kind][0][2:]

    @property
    def default_target(self) -> str:
        if self.target:
            return self.target
        if self.scope == NETWORK:
            return self.network_target
        return "first hidden " + LAYER_KIND[self.layer_kind][0][2:]

    def describe(self) -> dict:
        """The operator as ``--list-operators --json`` prints it."""
        return {"name": self.name, "aliases": list(self.aliases), "level": self.level,
                "magnitude": self.magnitude, "default": self.default,
                "default_target": self.default_target, "source": self.source,
                "tasks": list(self.tasks),
                "note": self.note}


_DC, _DM, _PMT = "DeepCrime", "DeepMutation", "PMT"
#: DeepMutation's data-level operators mutate 1% of the training data: "we configure our
#: data-level mutation operators to automatically mutate 1% of original training data"
#: (Ma et al., ASE 2018, section V-B). The default of DR, DF and NP, and of the names
#: LE and DM for DeepCrime's change_label and delete_training_data (whose own default
#: stays 10: DeepCrime searches the percentage).
DEEPMUTATION_DATA_PERCENT = "1"
_RETRAINED = "(retrained)"

OPERATORS = {op.name: op for op in [
    # -- data (source level)
    Operator(name="change_label", level="data", parse=magnitudes.change_label,
             apply=data.change_label,
             magnitude="P[@C|@all]: P% of the most frequent class's labels (class C's, all "
                       "labels') get another class (recommender: another rating); regression: N(0,"
                       " (P% x sd)^2) label noise, one sd for all targets",
             default="10", source=f"{_DC}, {_DM}",
             target="the most frequent class (regression: every target)", aliases=("LE",),
             note=f"LE (DeepMutation's): {DEEPMUTATION_DATA_PERCENT}@all by default"),
    Operator(name="delete_training_data", level="data", parse=magnitudes.local_percent,
             apply=data.delete_training_data,
             magnitude="P[@C1+C2]: remove P% of every class (of classes C1, C2)", default="10",
             source=f"{_DC}, {_DM}", target="every class", aliases=("DM",),
             note=f"DM (DeepMutation's): {DEEPMUTATION_DATA_PERCENT} by default"),
    Operator(name="unbalance_train_data", level="data", parse=magnitudes.percent,
             apply=data.unbalance_train_data,
             magnitude="P: remove P% of each class with fewer samples than the average",
             default="50", source=_DC, target="the classes below the average size"),
    Operator(name="make_output_classes_overlap", level="data", parse=magnitudes.overlap,
             apply=data.make_output_classes_overlap,
             magnitude="P[@A-B]: copies of P% of class A's samples are added labelled B (default: "
                       "the two most frequent classes)",
             default="10", source=_DC, target="the two most frequent classes", tasks=CLASS_TASKS),
    Operator(name="add_noise", level="data", parse=magnitudes.percent, apply=data.add_noise,
             magnitude="P: P% of the inputs get Gaussian noise of sd P% x the input's own sd",
             default="10", source=_DC, target="the (image) inputs", tasks=IMAGE_TASKS),
    Operator(name="data_repetition", level="data", parse=magnitudes.local_percent,
             apply=data.data_repetition,
             magnitude="P[@C1+C2]: append copies of P% of the samples (of classes C1, C2)",
             default=DEEPMUTATION_DATA_PERCENT, source=_DM, target="all samples", aliases=("DR",)),
    Operator(name="noise_perturbation", level="data", parse=magnitudes.noise,
             apply=data.noise_perturbation,
             magnitude="P[_SD][@C1+C2]: P% of the inputs (of classes C1, C2) get N(0, SD^2) noise "
                       "(SD 0.1)",
             default=DEEPMUTATION_DATA_PERCENT, source=_DM, target="all samples", aliases=("NP",),
             tasks=IMAGE_TASKS),
    Operator(name="data_shuffle", level="data", parse=magnitudes.percent, apply=data.data_shuffle,
             magnitude="P: permute the order of P% of the samples",
             default=DEEPMUTATION_DATA_PERCENT, source=_DM, target="all samples", aliases=("DF",),
             note="equivalent: training draws a new order of the samples every epoch"),
    # -- training (source level)
    Operator(name="change_activation_function", level="training", parse=magnitudes.keras_name(True),
             apply=training.layer_change("activation"),
             magnitude="NAME[@LAYER|@each]: the layer's activation becomes NAME", default="elu",
             source=_DC, layer_kind="activation", keras_kind="activations"),
    Operator(name="add_activation_function", level="training", parse=magnitudes.keras_name(True),
             apply=training.layer_change("activation"),
             magnitude="NAME[@LAYER|@each]: a layer without activation (linear) gets NAME",
             default="relu", source=_DC, layer_kind="linear_activation", keras_kind="activations"),
    Operator(name="remove_activation_function", level="training", parse=magnitudes.layer_only,
             apply=training.layer_change("activation", "linear"),
             magnitude=f"[LAYER|each]: the layer's activation becomes linear {_RETRAINED}",
             default="", source=f"{_DC}, {_DM}", aliases=("AFRs",),
             layer_kind="nonlinear_activation"),
    Operator(name="change_weights_initialisation", level="training",
             parse=magnitudes.keras_name(True), apply=training.layer_change("kernel_initializer"),
             magnitude="NAME[@LAYER|@each]: the layer's kernel initializer becomes NAME",
             default="he_normal", source=_DC, layer_kind="kernel_initializer",
             keras_kind="initializers"),
    Operator(name="add_weights_regularisation", level="training", parse=magnitudes.regulariser_name,
             apply=training.layer_change("kernel_regularizer"),
             magnitude="l1|l2|l1_l2[@LAYER|@each]: a layer without one gets a kernel regulariser "
                       "(factor 0.01)",
             default="l2", source=_DC, layer_kind="no_regulariser"),
    Operator(name="change_weights_regularisation", level="training",
             parse=magnitudes.regulariser_name, apply=training.layer_change("kernel_regularizer"),
             magnitude="l1|l2|l1_l2[@LAYER|@each]: the layer's kernel regulariser becomes another",
             default="l1", source=_DC, layer_kind="regulariser"),
    Operator(name="remove_weights_regularisation", level="training", parse=magnitudes.layer_only,
             apply=training.layer_change("kernel_regularizer", None),
             magnitude="[LAYER|each]: the layer loses its kernel regulariser", default="",
             source=_DC, layer_kind="regulariser"),
    Operator(name="change_dropout_rate", level="training", parse=magnitudes.rate,
             apply=training.layer_change("rate", key="value"),
             magnitude="RATE[@LAYER|@each]: a Dropout layer's rate becomes RATE (in [0, 1])",
             default="0.75", source=_DC, layer_kind="dropout"),
    Operator(name="add_bias", level="training", parse=magnitudes.layer_only,
             apply=training.layer_change("use_bias", True),
             magnitude="[LAYER|each]: a layer without a bias gets one", default="", source=_DC,
             layer_kind="no_bias"),
    Operator(name="remove_bias", level="training", parse=magnitudes.layer_only,
             apply=training.layer_change("use_bias", False),
             magnitude="[LAYER|each]: the layer loses its bias", default="", source=_DC,
             layer_kind="bias"),
    Operator(name="change_loss_function", level="training", parse=magnitudes.keras_name(False),
             apply=training.setting("loss", "name"), magnitude="NAME: a Keras loss",
             default="mean_squared_error", source=_DC, target="the model's loss",
             keras_kind="losses"),
    Operator(name="change_optimisation_function", level="training",
             parse=magnitudes.keras_name(False), apply=training.change_optimisation_function,
             magnitude="NAME: a Keras optimizer, with its default learning rate", default="rmsprop",
             source=_DC, target="the model's optimizer", keras_kind="optimizers"),
    Operator(name="change_learning_rate", level="training",
             parse=magnitudes.positive("learning rate", False),
             apply=training.setting("learning_rate"), magnitude="RATE: the learning rate",
             default="0.01", source=_DC, target="the optimizer"),
    Operator(name="change_epochs", level="training", parse=magnitudes.positive("epochs", True),
             apply=training.setting("epochs"), magnitude="N: the number of epochs", default="1",
             source=_DC, target="training"),
    Operator(name="change_batch_size", level="training",
             parse=magnitudes.positive("batch size", True), apply=training.setting("batch_size"),
             magnitude="N: the batch size", default="64", source=_DC, target="training"),
    Operator(name="disable_batching", level="training", parse=magnitudes.switch_only,
             apply=training.fixed(full_batch=True),
             magnitude="(none): one batch of the whole training set per epoch", default="on",
             source=_DC, target="training"),
    Operator(name="change_gradient_clipping", level="training", parse=magnitudes.clip,
             apply=training.change_gradient_clipping,
             magnitude="T|value_T|norm_T: the healthy optimizer's gradient clipping threshold "
                       "becomes T (refused if it does not clip)",
             default="0.5", source=_DC, target="the optimizer's clipping",
             aliases=("change_gradient_clip",), requires=training.needs_clipping),
    Operator(name="change_patience", level="training",
             parse=magnitudes.positive("patience", True, low=0), apply=training.setting("patience"),
             magnitude="P: the healthy model's early stopping gets patience P epochs (refused "
                       "without --patience)",
             default="1", source=_DC, target="the early stopping",
             aliases=("change_earlystopping_patience",), requires=training.needs_early_stopping),
    Operator(name="remove_validation_set", level="training", parse=magnitudes.switch_only,
             apply=training.fixed(validation=False, patience=None),
             magnitude="(none): the validation set is trained on with the rest, and no early "
                       "stopping (needs a validation split)",
             default="on", source=_DC, target="training", needs_validation=True),
    Operator(name="remove_layer", level="training", parse=magnitudes.layer_only,
             apply=training.remove_layer,
             magnitude=f"[LAYER|each]: the layer is removed {_RETRAINED}", default="", source=_DM,
             aliases=("LR",), layer_kind="removable"),
    Operator(name="add_layer", level="training", parse=magnitudes.inserted_layer,
             apply=training.add_layer,
             magnitude=f"batch_normalization|ACTIVATION[@LAYER|@each]: a BatchNormalization or an "
                       f"Activation(ACTIVATION) layer is inserted after the layer {_RETRAINED}",
             default="batch_normalization", source=_DM, aliases=("LAs",),
             layer_kind="insertion_point", keras_kind="activations"),
    # -- model level
    Operator(name="weights_fuzzing", level="model", parse=magnitudes.ratio_scale,
             apply=model.weights_fuzzing,
             magnitude="RATIO_SCALE[@LAYER|@network]: RATIO of the connection weights w get "
                       "N(0, (SCALE |w|)^2) noise",
             default="0.05_1", source=_PMT, layer_kind="weights", counts="weights"),
    Operator(name="gaussian_fuzzing", level="model", parse=magnitudes.gaussian,
             apply=model.gaussian_fuzzing,
             magnitude="RATIO_sdSD|RATIO_SCALE[@LAYER|@network]: RATIO of the connection "
                       "weights w become N(w, SD^2) (or SD = SCALE x the sd of w's array)",
             default="0.01_sd0.1", source=_DM, aliases=("GF",), layer_kind="weights",
             scope=NETWORK, counts="weights"),
    Operator(name="neurons_freezing", level="model", parse=magnitudes.ratio,
             apply=model.per_unit(model.freeze, "pre_activation"),
             magnitude="RATIO[@LAYER|@network]: RATIO of the units get their incoming weights "
                       "and bias zeroed",
             default="0.1", source=_PMT, layer_kind="pre_activation", counts="units"),
    Operator(name="weight_shuffling", level="model", parse=magnitudes.ratio,
             apply=model.per_unit(model.shuffle_weights, "units"),
             magnitude="RATIO[@LAYER|@network]: the incoming weights of RATIO of the units are "
                       "shuffled",
             default="0.01", source=_DM, aliases=("WS",), layer_kind="units", scope=NETWORK,
             counts="units"),
    Operator(name="neuron_effect_blocking", level="model", parse=magnitudes.ratio,
             apply=model.neuron_effect_blocking,
             magnitude="RATIO[@LAYER|@network]: the weights from RATIO of the neurons into the "
                       "layers they feed are zeroed",
             default="0.01", source=_DM, aliases=("NEB",), layer_kind="neurons", scope=NETWORK,
             counts="neurons"),
    Operator(name="neuron_activation_inverse", level="model", parse=magnitudes.ratio,
             apply=model.per_unit(model.invert, "pre_activation"),
             magnitude="RATIO[@LAYER|@network]: the incoming weights and bias of RATIO of the "
                       "units negated (their pre-activation)",
             default="0.01", source=_DM, aliases=("NAI",), layer_kind="pre_activation",
             scope=NETWORK, counts="units"),
    Operator(name="neuron_switch", level="model", parse=magnitudes.ratio,
             apply=model.per_unit(model.switch, "switchable"),
             magnitude="RATIO[@LAYER|@network]: RATIO of the units trade weights cyclically within"
                       " their layer (a unit alone with another of its layer)",
             default="0.01", source=_DM, aliases=("NS",), layer_kind="switchable", scope=NETWORK,
             counts="units"),
    Operator(name="layer_deactivation", level="model", parse=magnitudes.layer_only,
             apply=model.layer_deactivation,
             magnitude="[LAYER|each]: the layer becomes the identity", default="", source=_DM,
             aliases=("LD",), layer_kind="active_same_shape"),
    Operator(name="duplicate_layer", level="model", parse=magnitudes.layer_only,
             apply=model.duplicate_layer,
             magnitude="[LAYER|each]: a copy of the trained layer is inserted after it", default="",
             source=_DM, aliases=("LAm",), layer_kind="active_same_shape"),
    Operator(name="remove_activation_trained", level="model", parse=magnitudes.layer_only,
             apply=model.remove_activation_trained,
             magnitude="[LAYER|each]: the trained layer's activation becomes linear", default="",
             source=_DM, aliases=("AFRm",), layer_kind="nonlinear_activation"),
]}

def _registered(name: str) -> Operator:
    return OPERATORS[name]


def population_config(config, operator: Operator | None, params: dict | None):
    """The training settings (:class:`~probmut.train.models.TrainConfig`) of a population:
    a training-level ``operator``'s change of ``config``, else ``config`` itself."""
    if operator is not None and operator.level == "training":
        return operator.apply(config, params)
    return config


#: The references' names (DeepMutation's short names, DeepCrime's where they differ) ->
#: (operator, the @target they imply when none is given, their default magnitude when it
#: is not the operator's).
ALIASES = {alias: (op.name, "all" if alias == "LE" else None,
                   DEEPMUTATION_DATA_PERCENT if alias in ("LE", "DM") else None)
           for op in OPERATORS.values() for alias in op.aliases}


def check_keras_name(mutation: Mutation) -> None:
    """Is the mutation's Keras name (activation, initializer, loss, optimizer) known to Keras?"""
    kind, name = mutation.operator.keras_kind, mutation.params.get("name")
    if kind is None or name is None:
        return
    import keras

    try:
        getattr(keras, kind).get(name)
    except (ValueError, TypeError):
        singular = "loss" if kind == "losses" else kind.removesuffix("s")
        raise ProbmutError(f"{mutation.label}: unknown Keras {singular} {name!r} "
                           f"(see keras.{kind})", option="mutation") from None


@dataclass(frozen=True)
class Mutation:
    """One operator at one magnitude: one mutant population, stored as ``{population}.csv``.
    ``equivalent`` says why the mutant is equivalent to the healthy model before any
    training (an unchanged setting or data), if it is."""

    operator: Operator
    magnitude: str
    params: dict[str, Any] = field(hash=False, compare=False)
    equivalent: str = field(default="", compare=False)

    @property
    def population(self) -> str:
        """The name of its population: ``OPERATOR_MAGNITUDE``."""
        return f"{self.operator.name}_{self.magnitude}"

    @property
    def label(self) -> str:
        """How error messages name it: ``OPERATOR:MAGNITUDE``, as a user writes it."""
        return f"{self.operator.name}:{self.magnitude}".rstrip(":")


def unknown_operator(name: str) -> str:
    """What to say of an operator name that is not known: the closest names, if any is
    close (a typo), else every name.

    >>> unknown_operator("delete_trainig_data").split("; ")[1]
    'did you mean delete_training_data? (every operator: docs/operators.md)'
    """
    close = difflib.get_close_matches(name, [*OPERATORS, *ALIASES], n=2, cutoff=0.75)
    if close:
        return (f"unknown mutation operator {name!r}; did you mean {' or '.join(close)}? "
                "(every operator: docs/operators.md)")
    return (f"unknown mutation operator {name!r}; known: {', '.join(OPERATORS)} (the "
            f"references' names: {', '.join(ALIASES)}; docs/operators.md)")


def parse_mutations(text: str) -> list[Mutation]:
    """``OPERATOR[:MAG1,MAG2,...]`` -> one :class:`Mutation` per magnitude (layers unbound).

    ``OPERATOR`` may be a name its references give it (:data:`ALIASES`); without
    magnitudes the operator's documented default is used (DeepMutation's LE and DM:
    its 1%, :data:`DEEPMUTATION_DATA_PERCENT`).
    """
    name, sep, values = text.partition(":")
    name, implied, default = ALIASES.get(name.strip(), (name.strip(), None, None))
    if name not in OPERATORS:
        raise ProbmutError(unknown_operator(name), option="mutation")
    operator = OPERATORS[name]
    if sep and not values.strip():
        raise ProbmutError(f"{text!r}: give magnitudes as {name}:MAG1,MAG2, or no ':' for the "
                           f"default ({name}:{operator.default})", option="mutation")
    mutations = []
    for magnitude in (m.strip() for m in values.split(",")) if sep else [default or
                                                                          operator.default]:
        if (not magnitude and sep) or any(c in magnitude for c in "/\\ "):
            raise ProbmutError(f"{text!r}: empty magnitude or one with a path separator or "
                               "space", option="mutation")
        value, _, target = magnitude.partition("@")
        if implied and not target:
            target, magnitude = implied, f"{magnitude}@{implied}"
        try:
            params = operator.parse(value, target or None)
        except ValueError as error:
            raise ProbmutError(f"{name}:{magnitude}: {error}", option="mutation") from None
        mutations.append(Mutation(operator, magnitude, params))
    return mutations


def _unfit(model_graph, operator: Operator) -> str:
    """`` (I NAME: why; ...)``: why the layers with connection weights do not fit a unit
    or neuron operator (empty when none say)."""
    reasons = [f"{model_graph.name(layer)}: {why}" for layer in model_graph.layers
               if (why := unfit(layer, operator.layer_kind, model_graph))]
    return f" ({'; '.join(reasons)})" if reasons else ""


def _at_layer(mutation: Mutation, index: int) -> Mutation:
    """``mutation`` bound to layer ``index``; a default or ``each`` target is written into
    its magnitude (the layer index itself for operators whose magnitude is a layer)."""
    operator, value = mutation.operator, mutation.magnitude.partition("@")[0]
    if operator.parse is magnitudes.layer_only:
        magnitude = str(index)
    elif mutation.params["layer"] is None:
        magnitude = mutation.magnitude
    else:
        magnitude = f"{value}@{index}"
    return Mutation(operator, magnitude, {**mutation.params, "layer": index},
                    mutation.equivalent)


def bind(mutation: Mutation, model, task: str = "classification",
         published: dict[str, int] | None = None) -> list[Mutation]:
    """Check (and default) the target layer of ``mutation`` against a built ``model`` of
    ``task``; one bound mutation per target layer (several for ``@each``).

    Without ``@LAYER`` an operator with a network scope acts on every layer that fits;
    the others act on the layer ``published`` names for them (the subject's published
    configuration, :attr:`probmut.train.models.ModelSpec.layers`), else on the first
    hidden layer that fits; a layer operator written without a magnitude gets the index
    as its magnitude. An operator that rebuilds the model is refused on a model that
    cannot be rebuilt (subclassed). Raises :class:`ProbmutError` if impossible, saying
    why the layers with connection weights do not fit a unit or neuron operator.
    """
    from probmut.train.models import layer_table

    operator, label = mutation.operator, mutation.label
    check_keras_name(mutation)
    if task not in operator.tasks:
        raise ProbmutError(f"{label}: {operator.name} is only for "
                           f"{' and '.join(operator.tasks)} models; this is a {task} model",
                           option="mutation")
    if task != "classification" and mutation.params.get("classes"):
        raise ProbmutError(f"{label}: class targets (@C) are for classifiers; this is a {task} "
                           "model", option="mutation")
    if operator.layer_kind is None:
        return [mutation]
    what, fits = LAYER_KIND[operator.layer_kind]
    try:
        model_graph = graph(model)
    except ProbmutError as error:
        raise ProbmutError(f"{label}: {error}", option="mutation") from None
    if operator.rebuilds and model_graph.rebuild_problem:
        raise ProbmutError(f"{label}: {model_graph.rebuild_problem}", option="mutation")
    layers, index = model_graph.layers, mutation.params["layer"]
    if index is None and operator.scope == NETWORK:
        index = NETWORK
    elif index is None and operator.name in (published or {}):
        index = published[operator.name]
    candidates = fitting(model, operator.layer_kind, hidden_only=index is None)
    if index is None:
        index = next(iter(candidates), None)
        problem = None if index is not None else \
            f"the model has no hidden layer that is {what}{_unfit(model_graph, operator)}"
    elif index in (NETWORK, EACH):
        problem = None if candidates else \
            f"the model has no layer that is {what}{_unfit(model_graph, operator)}"
    elif index >= len(layers):
        problem = f"layer {index} is out of range (the model has {len(layers)} layers)"
    elif is_input(layers[index]) or not fits(layers[index], model_graph):
        why = unfit(layers[index], operator.layer_kind, model_graph)
        problem = f"layer {index} ({layers[index].name}) is not {what}" + (f": {why}" if why
                                                                           else "")
    else:
        problem = None
    if problem:
        raise ProbmutError(f"{label}: {problem}; layers: {layer_table(model)}",
                           option="mutation")
    if index == NETWORK:
        return [Mutation(operator, mutation.magnitude, {**mutation.params, "layer": NETWORK},
                         mutation.equivalent)]
    return [_at_layer(mutation, i) for i in (candidates if index == EACH else [index])]

