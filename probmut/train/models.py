"""Model builders, their training settings, and how one model is built, trained and scored.

A model is a function ``build(input_shape, n_classes) -> keras.Model``: the bundled
``digits_cnn``, ``deepcrime_mnist`` (DeepCrime's MNIST convnet) and ``mlp``, or a user
function given as ``module:function`` (it may return a compiled model; its optimizer
and loss then become the defaults). Everything that says *how* to train lives in one
:class:`TrainConfig`, which source-level mutations change.

Examples
--------
>>> config = MODELS["deepcrime_mnist"].config
>>> config.optimizer, config.learning_rate, config.batch_size, config.epochs
('adadelta', 1.0, 128, 12)
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from probmut.errors import ProbmutError


@dataclass(frozen=True)
class TrainConfig:
    """How to train: every setting a source-level mutation may change.

    ``optimizer`` is a Keras optimizer name or its serialized config (from a user's
    compiled model); ``learning_rate`` None keeps the optimizer's own. ``layer_changes``
    holds ``(layer index, attribute, value)`` applied to the built model, e.g.
    ``(1, "activation", "elu")``.
    """

    epochs: int
    batch_size: int
    optimizer: str | dict = "adam"
    learning_rate: float | None = None
    loss: str = "categorical_crossentropy"
    layer_changes: tuple[tuple[int, str, str], ...] = ()

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ModelSpec:
    build: Callable[[tuple[int, ...], int], Any]
    config: TrainConfig
    description: str


def _digits_cnn(input_shape, n_classes):
    from keras import Sequential, layers

    return Sequential([
        layers.Input(input_shape),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dropout(0.25),
        layers.Dense(n_classes, activation="softmax"),
    ])


def _deepcrime_mnist(input_shape, n_classes):
    """Keras' MNIST convnet example, the model DeepCrime and the PMT paper mutate."""
    from keras import Sequential, layers

    return Sequential([
        layers.Input(input_shape),
        layers.Conv2D(32, 3, activation="relu"),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(n_classes, activation="softmax"),
    ])


def _mlp(input_shape, n_classes):
    from keras import Sequential, layers

    return Sequential([
        layers.Input(input_shape),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.2),
        layers.Dense(n_classes, activation="softmax"),
    ])


MODELS = {
    "digits_cnn": ModelSpec(_digits_cnn, TrainConfig(epochs=15, batch_size=32, optimizer="adam",
                                                     learning_rate=1e-3),
                            "small CNN for 8x8 digits (2 conv, dense 64)"),
    "deepcrime_mnist": ModelSpec(_deepcrime_mnist, TrainConfig(epochs=12, batch_size=128,
                                                               optimizer="adadelta",
                                                               learning_rate=1.0),
                                 "DeepCrime's MNIST convnet (2 conv, max pool, dropout, dense 128)"),
    "mlp": ModelSpec(_mlp, TrainConfig(epochs=10, batch_size=32, optimizer="adam",
                                       learning_rate=1e-3),
                     "MLP (dense 128, dropout 0.2)"),
}


def resolve_model(name: str, input_shape, n_classes) -> ModelSpec:
    """The :class:`ModelSpec` for a bundled name or a user ``module:function``.

    A user function is called once here, so a broken one fails before training.
    """
    if name in MODELS:
        return MODELS[name]
    if ":" not in name:
        raise ProbmutError(f"unknown model {name!r}; use one of {', '.join(MODELS)} or "
                           "module:function (a function (input_shape, n_classes) -> keras.Model)")
    module_name, _, function_name = name.partition(":")
    try:
        build = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as error:
        raise ProbmutError(f"--model {name}: cannot import {function_name} from "
                           f"{module_name} ({error}); the module must be importable "
                           "(on every worker, for --backend ray)") from None
    model = build(tuple(input_shape), n_classes)
    config = TrainConfig(epochs=10, batch_size=32)
    if getattr(model, "optimizer", None) is not None:  # compiled: keep the user's choices
        import keras

        config = config.replace(optimizer=keras.optimizers.serialize(model.optimizer),
                                loss=model.loss if isinstance(model.loss, str) else config.loss)
    return ModelSpec(build, config, f"user model {name}")


def layer_table(model) -> str:
    """One line per layer, ``index name (Class)``, for error messages and docs."""
    return "; ".join(f"{i} {layer.name} ({type(layer).__name__})"
                     for i, layer in enumerate(model.layers))


def build_model(spec: ModelSpec, input_shape, n_classes, config: TrainConfig):
    """Build ``spec``'s model with ``config.layer_changes`` applied, compiled per ``config``."""
    import keras

    model = spec.build(tuple(input_shape), n_classes)
    if config.layer_changes:
        changes = {}
        for index, attribute, value in config.layer_changes:
            changes.setdefault(id(model.layers[index]), {})[attribute] = value

        def clone(layer):
            layer_config = layer.get_config()
            layer_config.update(changes.get(id(layer), {}))
            return type(layer).from_config(layer_config)

        model = keras.models.clone_model(model, clone_function=clone)
    optimizer = keras.optimizers.get(config.optimizer)
    if config.learning_rate is not None:
        optimizer.learning_rate = config.learning_rate
    model.compile(optimizer=optimizer, loss=config.loss, metrics=["accuracy"])
    return model


def _targets(y, n_classes, loss):
    """Integer labels for sparse losses, one-hot rows for every other loss."""
    if "sparse" in str(loss):
        return y
    return np.eye(n_classes, dtype=np.float32)[y]


def fit(model, x, y, n_classes, config: TrainConfig, validation=None) -> None:
    """Train ``model`` on ``(x, y)``; ``validation`` is the dataset's ``(x_val, y_val)`` or None."""
    if validation is not None:
        validation = (validation[0], _targets(validation[1], n_classes, config.loss))
    model.fit(x, _targets(y, n_classes, config.loss), epochs=config.epochs,
              batch_size=config.batch_size, shuffle=True, verbose=0,
              validation_data=validation)


def evaluate(model, x_test, y_test) -> np.ndarray:
    """Boolean vector: did the model classify each test input correctly."""
    scores = model.predict(x_test, batch_size=1024, verbose=0)
    return np.argmax(scores, axis=1) == y_test
