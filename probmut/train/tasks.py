"""What a model is trained to do, and how one trained instance is scored: the one place.

Three tasks, each with the accuracy the PMT paper's populations hold:

* ``classification``: a test input is correct when the arg-max class is its label;
* ``regression`` (gaze estimation, DeepCrime's UnityEyes ``lenet``): targets are gaze
  angles (pitch, yaw) in radians; a test input is correct when the angle between the
  predicted and the true gaze direction is under ``GAZE_TOLERANCE_DEGREES`` (5, as the
  paper's lenet files);
* ``recommendation`` (DeepCrime's ``movie_recomm``): targets are ratings scaled to
  [0, 1]; a held-out rating is correct when the prediction is within
  ``RATING_TOLERANCE`` (0.12, as the paper's movie_recomm files).

``chance`` is the accuracy of the best *constant* prediction learnt from the training
set (the most frequent class, the mean gaze, the mean rating): an instance that does
not beat it clearly has learnt nothing (see :mod:`probmut.train.flags`).

Examples
--------
>>> import numpy as np
>>> TASKS["classification"].correct(np.array([[0.9, 0.1], [0.8, 0.2]]), np.array([0, 1]))
array([ True, False])
>>> gaze = np.radians([[90.0, 0.0]])
>>> TASKS["regression"].correct(gaze + np.radians([[4.0, 0.0]]), gaze)   # 4 degrees off
array([ True])
>>> TASKS["recommendation"].correct(np.array([[0.5], [0.9]]), np.array([0.6, 0.5]))
array([ True, False])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

GAZE_TOLERANCE_DEGREES = 5.0
RATING_TOLERANCE = 0.12


def gaze_vectors(angles: np.ndarray) -> np.ndarray:
    """Unit 3-D gaze directions from (pitch, yaw) in radians, as DeepCrime's lenet loss
    builds them: (sin p cos y, sin p sin y, cos p)."""
    pitch, yaw = angles[:, 0], angles[:, 1]
    return np.stack([np.sin(pitch) * np.cos(yaw), np.sin(pitch) * np.sin(yaw), np.cos(pitch)],
                    axis=1)


def angle_errors_degrees(predicted: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Angle between predicted and true gaze directions, in degrees (cosine clipped to
    +-0.99999 as in DeepCrime)."""
    p, t = gaze_vectors(np.asarray(predicted, float)), gaze_vectors(np.asarray(true, float))
    cosine = np.sum(p * t, axis=1) / (np.linalg.norm(p, axis=1) * np.linalg.norm(t, axis=1))
    return np.degrees(np.arccos(np.clip(cosine, -0.99999, 0.99999)))


def _one_hot_unless_sparse(y, n_outputs, loss):
    return y if "sparse" in str(loss) else np.eye(n_outputs, dtype=np.float32)[y]


def _majority_share(y_train, y_test):
    return float(np.mean(y_test == np.bincount(y_train).argmax()))


@dataclass(frozen=True)
class Task:
    """How instances of one kind of model are trained and scored."""

    name: str
    scoring: str  # what "accuracy" means, for docs and --list-operators
    targets: Callable  # (y, n_outputs, loss) -> what model.fit gets
    decisions: Callable  # model outputs -> what is predicted (class ids or values)
    correct: Callable  # (model outputs, y) -> bool per input
    chance: Callable  # (y_train, y_test) -> accuracy of the best constant prediction


TASKS = {task.name: task for task in [
    Task("classification", "share of test inputs whose arg-max class is the label",
         _one_hot_unless_sparse,
         lambda outputs: np.argmax(outputs, axis=1),
         lambda outputs, y: np.argmax(outputs, axis=1) == y,
         _majority_share),
    Task("regression", f"share of test inputs whose predicted gaze is within "
                       f"{GAZE_TOLERANCE_DEGREES:g} degrees of the truth",
         lambda y, n_outputs, loss: y,
         lambda outputs: outputs,
         lambda outputs, y: angle_errors_degrees(outputs, y) < GAZE_TOLERANCE_DEGREES,
         lambda y_train, y_test: float(np.mean(angle_errors_degrees(
             np.broadcast_to(y_train.mean(axis=0), y_test.shape), y_test)
             < GAZE_TOLERANCE_DEGREES))),
    Task("recommendation", f"share of held-out ratings (scaled to [0, 1]) predicted within "
                           f"{RATING_TOLERANCE:g}",
         lambda y, n_outputs, loss: y[:, None],
         lambda outputs: outputs.reshape(-1),
         lambda outputs, y: np.abs(outputs.reshape(-1) - y) <= RATING_TOLERANCE,
         lambda y_train, y_test: float(np.mean(np.abs(y_train.mean() - y_test)
                                               <= RATING_TOLERANCE))),
]}


def strata(y: np.ndarray, task: str) -> np.ndarray:
    """Groups that splits and data operators treat as "classes", as DeepCrime groups its
    subjects: the labels of a classifier; the recommender's distinct ratings (DeepCrime
    configures its MovieLens subject as a classifier whose classes are the ratings); for
    regression DeepCrime's label buckets, below -sd, within, above +sd around 0 for each
    target column (one column: ``[-sd, sd]`` is the middle; two: ``[-sd, sd)``), 3 or 9
    buckets numbered first column first.

    >>> strata(np.array([0.0, 0.5, 0.5, 0.5, 1.0]), "recommendation").tolist()
    [0, 1, 1, 1, 2]
    >>> strata(np.array([[-2.0, 0.0], [0.0, 0.0], [0.0, 2.0], [2.0, -2.0]]), "regression").tolist()
    [1, 4, 5, 6]
    """
    if task == "classification":
        return y
    if task == "recommendation":
        return np.unique(y, return_inverse=True)[1]
    columns = y.reshape(len(y), -1)
    sd = columns.std(axis=0)
    upper = columns > sd if columns.shape[1] == 1 else columns >= sd
    buckets = (columns >= -sd).astype(int) + upper
    return buckets @ (3 ** np.arange(columns.shape[1])[::-1])
