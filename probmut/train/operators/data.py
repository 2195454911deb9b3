"""Data operators (source level, before training): ``apply(x, y, n_classes, params, rng,
task) -> (x, y)``.

Counts are truncated as DeepCrime (``int(n * percent / 100)``) and DeepMutation's
implementations (``floor(n * ratio)``) count them (:func:`~probmut.train.operators.
magnitudes.count`). The "classes" of the operators that work per class are the labels of
a classifier, the rating values of the recommender (DeepCrime configures its MovieLens
subject as a classifier whose classes are the ratings) and DeepCrime's label buckets for
regression (:func:`probmut.train.tasks.strata`).

Examples
--------
>>> y = np.repeat(np.arange(3), 10)
>>> x, y2 = delete_training_data(y[:, None], y, 3, {"percent": 25.0, "classes": None},
...                              np.random.default_rng(0))
>>> np.bincount(y2).tolist()    # int(10 x 25 / 100) = 2 of each class removed
[8, 8, 8]
"""

from __future__ import annotations

import numpy as np

from probmut.train.datasets import concat, take
from probmut.train.operators.magnitudes import count
from probmut.train.tasks import strata


def choose(rng, candidates, k):
    """``k`` of ``candidates`` drawn without replacement, sorted."""
    return np.sort(rng.choice(candidates, size=k, replace=False)) if k else np.array([], int)


def _percent_of(rng, candidates, percent):
    return choose(rng, candidates, count(len(candidates), percent, per=100))


def _pool(y, classes):
    """Samples an operator may touch: all, or those of the given classes."""
    return np.arange(len(y)) if classes is None else np.flatnonzero(np.isin(y, classes))


def _label_classes(y, n_classes, task):
    """``(class id of each sample, label value of each class)``: a classifier's labels,
    or the recommender's distinct ratings (DeepCrime's MovieLens classes)."""
    if task == "classification":
        return y, np.arange(n_classes)
    values, ids = np.unique(y, return_inverse=True)
    return ids, values


def change_label(x, y, n_classes, params, rng, task="classification"):
    """``percent`` of the most frequent class's labels (of class C with ``@C``, of all
    labels with ``@all``) get another class, drawn uniformly (the recommender: another
    of its rating values). Regression (DeepCrime's label noise): every target gets
    N(0, (percent/100 x sd)^2) noise, sd the one of all targets together."""
    if task == "regression":
        sd = float(np.std(y)) * params["percent"] / 100
        return x, (y + rng.normal(0.0, sd, size=y.shape)).astype(y.dtype)
    ids, values = _label_classes(y, n_classes, task)
    if params["all_classes"]:
        candidates = np.arange(len(y))
    elif params["classes"] is not None:
        candidates = _pool(ids, params["classes"])
    else:
        candidates = np.flatnonzero(ids == np.argmax(np.bincount(ids)))
    chosen = _percent_of(rng, candidates, params["percent"])
    new = (ids[chosen] + rng.integers(1, len(values), size=chosen.size)) % len(values)
    y = y.copy()
    y[chosen] = values[new]
    return x, y


def _delete_per_group(x, y, percent, rng, groups, chosen_groups):
    drop = [_percent_of(rng, np.flatnonzero(groups == g), percent) for g in chosen_groups]
    keep = np.setdiff1d(np.arange(len(y)), np.concatenate([np.array([], int), *drop]))
    return take(x, keep), y[keep]


def delete_training_data(x, y, n_classes, params, rng, task="classification"):
    """Remove ``percent`` of the training samples of every class (of the classes given
    with ``@C1+C2``)."""
    groups = strata(y, task)
    chosen = np.unique(groups) if params["classes"] is None else params["classes"]
    return _delete_per_group(x, y, params["percent"], rng, groups, chosen)


def unbalance_train_data(x, y, n_classes, params, rng, task="classification"):
    """Remove ``percent`` of the samples of each class with fewer samples than the
    average class."""
    groups = strata(y, task)
    present, counts = np.unique(groups, return_counts=True)
    return _delete_per_group(x, y, params["percent"], rng, groups,
                             present[counts < counts.mean()])


def make_output_classes_overlap(x, y, n_classes, params, rng, task="classification"):
    """Copies of ``percent`` of the most frequent class's samples are added with the
    second most frequent class as their label (``@A-B``: from class A to class B)."""
    ids, values = _label_classes(y, n_classes, task)
    if params["pair"] is None:
        order = np.argsort(-np.bincount(ids, minlength=len(values)), kind="stable")
        source, target = int(order[0]), int(order[1])
    else:
        source, target = params["pair"]
    chosen = _percent_of(rng, np.flatnonzero(ids == source), params["percent"])
    return concat(x, take(x, chosen)), np.concatenate(
        [y, np.full(chosen.size, values[target], y.dtype)])


def _first_input(x):
    return x[0] if isinstance(x, tuple) else x


def _with_first_input(x, first):
    return (first, *x[1:]) if isinstance(x, tuple) else first


def add_noise(x, y, n_classes, params, rng, task="classification"):
    """``percent`` of the training inputs get Gaussian noise whose sd is ``percent``% of
    that input's own sd (DeepCrime; the image input of a multi-input model). A share
    that counts to no input changes nothing, as in DeepCrime."""
    chosen = _percent_of(rng, np.arange(len(y)), params["percent"])
    images = _first_input(x).copy()
    sd = images[chosen].reshape(chosen.size, images[0].size).std(axis=1)
    spread = sd * params["percent"] / 100
    noise = rng.normal(0.0, 1.0, size=images[chosen].shape)
    images[chosen] += (noise * spread.reshape(-1, *[1] * (images.ndim - 1))).astype(images.dtype)
    return _with_first_input(x, images), y


def data_repetition(x, y, n_classes, params, rng, task="classification"):
    """Append a copy of ``percent`` of the training samples (of the classes given with
    ``@C1+C2``) (DeepMutation DR)."""
    chosen = _percent_of(rng, _pool(y, params["classes"]), params["percent"])
    return concat(x, take(x, chosen)), np.concatenate([y, y[chosen]])


def noise_perturbation(x, y, n_classes, params, rng, task="classification"):
    """Add Gaussian noise (std ``std``, default 0.1 on [0, 1] inputs) to ``percent`` of
    the training inputs (of the classes given with ``@C1+C2``) (DeepMutation NP)."""
    chosen = _percent_of(rng, _pool(y, params["classes"]), params["percent"])
    images = _first_input(x).copy()
    images[chosen] += rng.normal(0.0, params["std"], size=images[chosen].shape).astype(
        images.dtype)
    return _with_first_input(x, images), y


def data_shuffle(x, y, n_classes, params, rng, task="classification"):
    """Permute the order of ``percent`` of the training samples (DeepMutation DF).

    Keras shuffles every epoch, so this is an equivalent mutant by construction: a
    negative control whose kill rate should match healthy vs healthy."""
    chosen = _percent_of(rng, np.arange(len(y)), params["percent"])
    order = np.arange(len(y))
    order[chosen] = rng.permutation(chosen)
    return take(x, order), y[order]
