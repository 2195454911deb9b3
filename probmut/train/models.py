"""Model builders, their training settings, and how one model is built (trained and
scored: :mod:`probmut.train.fitting`).

A model is a function ``build(dims) -> keras.Model`` (``dims``: the data's
:class:`~probmut.train.datasets.ModelDims`) with a task (:mod:`probmut.train.tasks`):
the bundled classifiers ``digits_cnn``, ``deepcrime_mnist`` (DeepCrime's MNIST convnet)
and ``mlp``, the regression model ``gaze_lenet`` (DeepCrime's UnityEyes LeNet), the
recommender ``recommender`` (DeepCrime's MovieLens model), or a user classifier given as
``module:function``, a function ``(input_shape, n_classes)`` (it may return a compiled
model; its optimizer, learning rate, gradient clipping and loss then become the
defaults, the loss object itself kept). Everything that says *how* to
train lives in one :class:`~probmut.train.hyperparameters.TrainConfig` (re-exported
here), which source-level mutations change.

Examples
--------
>>> config = MODELS["deepcrime_mnist"].config
>>> config.optimizer, config.learning_rate, config.batch_size, config.epochs
('adadelta', 1.0, 128, 12)
>>> MODELS["gaze_lenet"].task, MODELS["recommender"].task
('regression', 'recommendation')
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.datasets import ModelDims
from probmut.train.hyperparameters import TrainConfig


@dataclass(frozen=True)
class ModelSpec:
    """A model builder, its training settings and task, and ``layers``: the layer each
    operator targets by default in the subject's published configuration (DeepCrime's
    and PMT's ``layer_udp`` / ``current_index``, as indices into the model's layer table,
    :func:`probmut.train.graph.graph`); ``validation_split``: the share of the training
    data its published training holds out for validation (used when a run gives
    none)."""

    build: Callable[[ModelDims], Any]
    config: TrainConfig
    description: str
    task: str = "classification"
    layers: dict[str, int] = dataclasses.field(default_factory=dict)
    validation_split: float | None = None


def _digits_cnn(dims):
    from keras import Sequential, layers

    return Sequential([
        layers.Input(dims.input_shape),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dropout(0.25),
        layers.Dense(dims.n_outputs, activation="softmax"),
    ])


def _deepcrime_mnist(dims):
    """Keras' MNIST convnet example, the model DeepCrime and the PMT paper mutate."""
    from keras import Sequential, layers

    return Sequential([
        layers.Input(dims.input_shape),
        layers.Conv2D(32, 3, activation="relu"),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(dims.n_outputs, activation="softmax"),
    ])


def _mlp(dims):
    from keras import Sequential, layers

    return Sequential([
        layers.Input(dims.input_shape),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.2),
        layers.Dense(dims.n_outputs, activation="softmax"),
    ])


def _gaze_lenet(dims):
    """DeepCrime's UnityEyes gaze model: a LeNet on the eye image, the head pose joined
    before the linear output (pitch, yaw)."""
    import keras
    from keras import layers

    image_shape, pose_shape = dims.input_shape
    image, pose = keras.Input(image_shape, name="eye"), keras.Input(pose_shape, name="pose")
    normal = {"kernel_initializer": keras.initializers.RandomNormal(stddev=0.1),
              "bias_initializer": "zeros"}
    x = layers.Conv2D(20, 5, activation="relu", **normal)(image)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(50, 5, activation="relu", **normal)(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(500, activation="relu", kernel_initializer="glorot_normal")(x)
    x = layers.Concatenate()([pose, x])
    return keras.Model([image, pose], layers.Dense(dims.n_outputs)(x), name="gaze_lenet")


def _recommender(dims):
    """DeepCrime's MovieLens recommender: user and item embeddings (50, L2 1e-6) and
    biases; the rating is sigmoid(user . item + biases), one dot product per rating."""
    import keras
    from keras import layers

    def embedded(ids, count, size, **options):
        return layers.Flatten()(layers.Embedding(count, size, **options)(ids))

    users, items = (keras.Input((1,), dtype="int32", name=n) for n in ("user", "item"))
    vectors = {"embeddings_initializer": "he_normal",
               "embeddings_regularizer": keras.regularizers.l2(1e-6)}
    n_users, n_items = dims.vocabulary
    dot = layers.Dot(axes=1)([embedded(users, n_users, 50, **vectors),
                              embedded(items, n_items, 50, **vectors)])
    score = layers.Add()([dot, embedded(users, n_users, 1), embedded(items, n_items, 1)])
    return keras.Model([users, items], layers.Activation("sigmoid")(score), name="recommender")


MODELS = {
    "digits_cnn": ModelSpec(_digits_cnn, TrainConfig(epochs=15, batch_size=32, optimizer="adam",
                                                     learning_rate=1e-3),
                            "small CNN for 8x8 digits (2 conv, dense 64)"),
    "deepcrime_mnist": ModelSpec(_deepcrime_mnist, TrainConfig(epochs=12, batch_size=128,
                                                               optimizer="adadelta",
                                                               learning_rate=1.0),
                                 "DeepCrime's MNIST convnet (2 conv, max pool, dropout, dense 128)",
                                 layers={"change_activation_function": 5}),
    "mlp": ModelSpec(_mlp, TrainConfig(epochs=10, batch_size=32, optimizer="adam",
                                       learning_rate=1e-3),
                     "MLP (dense 128, dropout 0.2)"),
    "gaze_lenet": ModelSpec(_gaze_lenet, TrainConfig(epochs=50, batch_size=128, optimizer="sgd",
                                                     learning_rate=0.01, loss="angular_error"),
                            "DeepCrime's UnityEyes LeNet: eye image + head pose -> gaze angles",
                            task="regression",
                            layers={"change_activation_function": 3,
                                    "add_activation_function": 9},
                            validation_split=0.1),  # DeepCrime's lenet: fit(validation_split=0.1)
    "recommender": ModelSpec(_recommender, TrainConfig(epochs=5, batch_size=64, optimizer="adam",
                                                       learning_rate=1e-3,
                                                       loss="binary_crossentropy"),
                             "DeepCrime's MovieLens recommender: user/item embeddings 50",
                             task="recommendation"),
}


def angular_error(y_true, y_pred):
    """Mean angle (radians) between true and predicted gaze directions, from (pitch,
    yaw): DeepCrime's lenet loss, in Keras ops (see :func:`probmut.train.tasks.gaze_vectors`)."""
    from keras import ops

    def vectors(angles):
        pitch, yaw = angles[:, 0], angles[:, 1]
        return ops.stack([ops.sin(pitch) * ops.cos(yaw), ops.sin(pitch) * ops.sin(yaw),
                          ops.cos(pitch)], axis=1)

    p, t = vectors(y_pred), vectors(ops.cast(y_true, y_pred.dtype))
    cosine = ops.sum(p * t, axis=1) / (ops.norm(p, axis=1) * ops.norm(t, axis=1))
    return ops.mean(ops.arccos(ops.clip(cosine, -0.99999, 0.99999)))


#: Losses known by name besides Keras' own.
LOSSES = {"angular_error": angular_error}


def resolve_model(name: str, dims: ModelDims) -> ModelSpec:
    """The :class:`ModelSpec` for a bundled name or a user ``module:function``.

    A user function is called once here, so a broken one fails before training.
    """
    if name in MODELS:
        return MODELS[name]
    if ":" not in name:
        raise ProbmutError(f"unknown architecture {name!r}; use one of {', '.join(MODELS)} or "
                           "module:function (a function (input_shape, n_classes) -> keras.Model)",
                           option="architecture")
    import keras

    from probmut.io.records import one_line

    module_name, _, function_name = name.partition(":")
    wanted = "a function (input_shape, n_classes) -> keras.Model"
    try:
        with running_user_model(name):
            function = getattr(importlib.import_module(module_name), function_name)
    except Exception as error:  # noqa: BLE001 - whatever the user's module raises on import
        raise ProbmutError(f"{name}: cannot import {function_name} from {module_name} "
                           f"({one_line(error)}); the module must be importable (on every "
                           "worker, for the ray backend)", option="architecture") from None
    if not callable(function):
        raise ProbmutError(f"{name}: {function_name} is of type {type(function).__name__}, "
                           f"not {wanted}", option="architecture")

    def build(dims):
        with running_user_model(name):
            model = function(tuple(dims.input_shape), dims.n_outputs)
        if isinstance(model, keras.Sequential) and not model.built:
            # a Sequential without keras.Input: built on the data's shape, as fit would
            model.build((None, *dims.input_shape))
        return model

    try:
        model = build(dims)
    except Exception as error:  # noqa: BLE001 - the user's function, called as every instance will
        raise ProbmutError(f"{name}: {function_name}({tuple(dims.input_shape)}, "
                           f"{dims.n_outputs}) failed ({one_line(error)}); it must be "
                           f"{wanted}", option="architecture") from None
    if not isinstance(model, keras.Model):
        raise ProbmutError(f"{name}: {function_name} returned an object of type "
                           f"{type(model).__name__}, not a keras.Model; it must be {wanted}",
                           option="architecture")
    config = TrainConfig(epochs=10, batch_size=32)
    own = _own_loss(model)
    if own is not None:  # compiled: keep the user's choices
        optimizer = keras.optimizers.serialize(model.optimizer)
        clips = [(kind, optimizer["config"].get("clip" + kind)) for kind in ("value", "norm")]
        rate = optimizer["config"].get("learning_rate")  # a dict for a schedule: kept in it
        if isinstance(rate, int | float):  # a float32: the shortest decimal that is it
            rate = float(str(np.float32(rate)))
        config = config.replace(optimizer=optimizer, loss=loss_name(own),
                                learning_rate=rate if isinstance(rate, float) else None,
                                clip=next(((k, v) for k, v in clips if v is not None), None))
    return ModelSpec(build, config, f"user model {name}")


@contextlib.contextmanager
def running_user_model(name: str):
    """Run a user's model code (its module's import, its function): what it prints goes
    to stderr, since stdout carries probmut's own output (``--json``), and a
    ``sys.exit()`` in it is that code's error (:class:`UserCodeExit`), not the end of the
    run.

    >>> with running_user_model("mine:build"):
    ...     sys.exit(0)
    Traceback (most recent call last):
    probmut.train.models.UserCodeExit: mine:build called sys.exit(0)
    """
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except SystemExit as stop:
        raise UserCodeExit(f"{name} called sys.exit({stop.code!r})") from None


class UserCodeExit(RuntimeError):
    """A user's model code called ``sys.exit()``."""


def loss_name(loss) -> str:
    """How :class:`TrainConfig` names a compiled model's loss: a name as given, a
    function's name, a loss object's name.

    >>> def smoothed(y_true, y_pred): ...
    >>> loss_name("mse"), loss_name(smoothed)
    ('mse', 'smoothed')
    """
    if isinstance(loss, str):
        return loss
    return getattr(loss, "__name__", None) or getattr(loss, "name", None) or type(loss).__name__


def _own_loss(model):
    """The loss a user's model function compiled its model with (None if it did not)."""
    if getattr(model, "optimizer", None) is None:
        return None
    return getattr(model, "loss", None)


def validation_split_of(architecture: str, given: float | None) -> float | None:
    """A run's validation split: the one ``given``, else the bundled model's published
    one (``gaze_lenet``: DeepCrime's lenet holds out 0.1).

    >>> validation_split_of("gaze_lenet", None), validation_split_of("gaze_lenet", 0.2)
    (0.1, 0.2)
    >>> validation_split_of("digits_cnn", None) is None
    True
    """
    if given is not None or architecture not in MODELS:
        return given
    return MODELS[architecture].validation_split


def task_of(architecture: str) -> str:
    """The task of a bundled architecture; a user's (``module:function``) is a classifier."""
    return MODELS[architecture].task if architecture in MODELS else "classification"


def layer_table(model) -> str:
    """One line per layer of the model's layer table (:func:`probmut.train.graph.graph`:
    nested models' layers in their place), ``index name (Class)``, for error messages
    and docs."""
    from probmut.train.graph import table

    layers, names = table(model)
    return "; ".join(f"{i} {name} ({type(layer).__name__})"
                     for i, (layer, name) in enumerate(zip(layers, names, strict=True)))


#: Weight regularisers by DeepCrime's names, with the factor 0.01 that Keras 2's
#: ``l1``, ``l2`` and ``l1_l2`` had (Keras 3's ``L1L2()`` defaults to zero factors).
REGULARISERS = {"l1": ("L1", {"l1": 0.01}), "l2": ("L2", {"l2": 0.01}),
                "l1_l2": ("L1L2", {"l1": 0.01, "l2": 0.01})}


def regulariser(name: str | None):
    """A Keras regulariser (serialized) for one of ``REGULARISERS``, or None."""
    if name is None:
        return None
    import keras

    class_name, factors = REGULARISERS[name]
    return keras.regularizers.serialize(getattr(keras.regularizers, class_name)(**factors))


def _rebuilt(model, config: TrainConfig):
    """``model`` rebuilt (fresh weights, not compiled) with ``config``'s layer changes and
    structure, through its graph (:func:`probmut.train.graph.rebuild`)."""
    from probmut.train.graph import fresh_copy, graph, rebuild

    changes: dict[int, dict] = {}
    for index, attribute, value in config.layer_changes:
        changes.setdefault(index, {})[attribute] = value
    removed = {i for kind, i, _ in config.structure if kind == "remove"}
    added = {i: what for kind, i, what in config.structure if kind == "add"}
    position = {id(layer): i for i, layer in enumerate(graph(model).layers)}

    def replace(layer):
        index = position[id(layer)]
        if index in removed:
            return []
        layer_config = {attribute: regulariser(value) if attribute == "kernel_regularizer"
                        else value for attribute, value in changes.get(index, {}).items()}
        fresh = fresh_copy(layer, **layer_config)
        return [fresh, inserted_layer(added[index], layer.name + "_added")] if index in added \
            else [fresh]

    return rebuild(model, replace)[0]


def inserted_layer(what: str, name: str):
    """The layer ``add_layer`` inserts: a BatchNormalization, or an Activation layer."""
    import keras

    if what == "batch_normalization":
        return keras.layers.BatchNormalization(name=name)
    return keras.layers.Activation(what, name=name)


def build_model(spec: ModelSpec, dims: ModelDims, config: TrainConfig, *, compile=True):
    """Build ``spec``'s model with ``config``'s layer changes and structure, compiled per
    ``config`` (optimizer, learning rate, gradient clipping, loss) unless ``compile`` is
    False. A user model compiled by its own function keeps its own loss object (a
    function Keras does not know by name too), unless ``config`` names another loss. A
    model Keras has not built yet (a subclassed one) is called once on zeros of the
    data's shape, so that it has its weights (created in the order training's first call
    would create them) before training or a mutation."""
    model = spec.build(dims)
    if not model.built:
        shapes = dims.input_shape
        several = bool(shapes) and isinstance(shapes[0], tuple | list)
        model(tuple(np.zeros((1, *s), "float32") for s in shapes) if several
              else np.zeros((1, *shapes), "float32"), training=False)
    own = _own_loss(model)
    if config.layer_changes or config.structure:
        model = _rebuilt(model, config)
    if compile:
        loss = own if own is not None and loss_name(own) == config.loss else \
            LOSSES.get(config.loss, config.loss)
        model.compile(optimizer=make_optimizer(config), loss=loss)
    return model


def learning_rate_of(config: TrainConfig) -> float | dict:
    """The learning rate a model trained per ``config`` starts with: ``config``'s, else its
    optimizer's own (Keras' default for a name; a compiled user model's is in its
    serialized optimizer), as the shortest decimal that is that float32 (a schedule: its
    serialized config).

    >>> learning_rate_of(TrainConfig(epochs=1, batch_size=8, optimizer="adam"))
    0.001
    """
    if config.learning_rate is not None:
        return config.learning_rate
    import keras

    rate = keras.optimizers.serialize(keras.optimizers.get(config.optimizer))["config"][
        "learning_rate"]
    return float(str(np.float32(rate))) if isinstance(rate, int | float) else rate


def make_optimizer(config: TrainConfig):
    """A fresh Keras optimizer per ``config``: its name or config, learning rate and
    gradient clipping."""
    import keras

    optimizer = keras.optimizers.get(config.optimizer)
    if config.learning_rate is not None:
        optimizer.learning_rate = config.learning_rate
    if config.clip is not None:
        serialized = keras.optimizers.serialize(optimizer)
        serialized["config"].update(clipnorm=None, clipvalue=None, global_clipnorm=None)
        serialized["config"]["clip" + config.clip[0]] = config.clip[1]
        optimizer = keras.optimizers.deserialize(serialized)
    return optimizer
