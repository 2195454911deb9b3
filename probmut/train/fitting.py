"""How one Keras model is trained and scored: :func:`fit` (with the watch that stops
a diverging or overdue training), :func:`predict`, :func:`score` (the one scoring
function of the trainer and of ``probmut evaluate``) and the model's ``.keras`` bytes.
The architectures and their settings are :mod:`probmut.train.models`.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import numpy as np

from probmut.train.datasets import ModelDims, n_rows
from probmut.train.models import TrainConfig
from probmut.train.tasks import TASKS
from probmut.train.training_set import training_data  # noqa: F401 - public here too


def keras_inputs(x):
    """Inputs as Keras takes them: one array, or a list of arrays (one per input)."""
    return list(x) if isinstance(x, tuple) else x


@dataclass(frozen=True)
class FitReport:
    """What training showed: the loss of each epoch (the last one partial when training
    stopped early), the loss of the untrained model (its first batch's loss, computed
    before the first update) and whether the deadline stopped it."""

    losses: tuple[float, ...]
    initial_loss: float
    timed_out: bool


@functools.cache
def _watch_class():
    import keras

    class Watch(keras.callbacks.Callback):
        """Stops training at the first non-finite loss or once past the deadline, and
        keeps the first batch's loss. Safe to run off the training thread, so Keras
        keeps dispatching batches asynchronously."""

        async_safe = True

        def __init__(self, deadline: float | None):
            super().__init__()
            self.deadline = deadline
            self.initial_loss = math.nan
            self.first = True
            self.timed_out = False

        def on_train_batch_end(self, batch, logs=None):
            loss = float((logs or {}).get("loss", math.nan))
            if self.first:
                self.initial_loss, self.first = loss, False
            if not math.isfinite(loss):
                self.model.stop_training = True
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.timed_out = True
                self.model.stop_training = True

    return Watch


def fit(model, x, y, dims: ModelDims, task: str, config: TrainConfig, validation=None,
        deadline: float | None = None) -> FitReport:
    """Train ``model`` on ``(x, y)``. ``validation`` is the dataset's ``(x_val, y_val)``
    or None: passed to Keras as validation data (early stopping with
    ``config.patience``), unless ``config.validation`` is False. Training stops at a
    NaN/infinite loss, or at the first batch end past ``deadline`` (a
    ``time.monotonic()`` value)."""
    import keras

    targets = TASKS[task].targets
    if not config.validation:
        validation = None
    watch = _watch_class()(deadline)
    callbacks = [watch]
    if config.patience is not None and validation is not None:
        callbacks.append(keras.callbacks.EarlyStopping(monitor="val_loss",
                                                       patience=config.patience))
    if validation is not None:
        validation = (keras_inputs(validation[0]),
                      targets(validation[1], dims.n_outputs, config.loss))
    history = model.fit(keras_inputs(x), targets(y, dims.n_outputs, config.loss),
                        epochs=config.epochs,
                        batch_size=n_rows(x) if config.full_batch else config.batch_size,
                        shuffle=True, verbose=0, validation_data=validation,
                        callbacks=callbacks)
    losses = tuple(float(v) for v in history.history.get("loss", []))
    return FitReport(losses, watch.initial_loss, watch.timed_out)


def predict(model, x) -> np.ndarray:
    """The model's outputs for inputs ``x`` (one array or a tuple of arrays)."""
    return model.predict(keras_inputs(x), batch_size=1024, verbose=0)


@dataclass(frozen=True, eq=False)
class Score:
    """A model's answers on the test set: which inputs it got right, whether it
    made one decision (class, or value) for all of them, whether its outputs were all
    finite."""

    correct: np.ndarray
    constant: bool
    finite: bool


def score_outputs(outputs: np.ndarray, y_test, task: str) -> Score:
    """Score a model's ``outputs`` on a test set the way ``task`` scores
    (:mod:`probmut.train.tasks`).

    >>> s = score_outputs(np.array([[0.9, 0.1], [0.8, 0.2]]), np.array([0, 1]),
    ...                   "classification")
    >>> s.correct.tolist(), s.constant, s.finite
    ([True, False], True, True)
    """
    decisions = np.asarray(TASKS[task].decisions(outputs))
    return Score(correct=np.asarray(TASKS[task].correct(outputs, y_test), dtype=bool),
                 constant=bool(len(decisions) and np.all(decisions == decisions[:1])),
                 finite=bool(np.isfinite(outputs).all()))


def score(model, x_test, y_test, task: str = "classification") -> Score:
    """Score a model on a test set: the one scoring function of the trainer and of
    ``probmut evaluate``, so both give the same outcomes for the same model."""
    return score_outputs(predict(model, x_test), y_test, task)


def keras_bytes(model) -> bytes:
    """The model as a ``.keras`` file's bytes (architecture, weights, optimizer state), so
    that a worker can hand it to the driver, which writes every file of a run."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="probmut-model-") as folder:
        path = Path(folder) / "model.keras"
        model.save(path)
        return path.read_bytes()
