"""What an instance trains on, whatever trains it: the training set (with the
validation set for a population trained without one), and its population's data
mutation drawn with the instance's own seed, so that an instance gets the same samples
trained alone, in a stack, or by a user's training code.

Examples
--------
>>> from probmut.train.datasets import load_dataset
>>> from probmut.train.hyperparameters import TrainConfig
>>> from probmut.train.operators import parse_mutations
>>> data, config = load_dataset("digits"), TrainConfig(epochs=1, batch_size=32)
>>> mutation = parse_mutations("delete_training_data:50")[0]
>>> x, y = training_set(data, config, mutation.operator, mutation.params, seed=7)
>>> len(y), len(data.y_train)
(676, 1347)
"""

from __future__ import annotations

import numpy as np

from probmut.train.datasets import concat
from probmut.train.hyperparameters import TrainConfig


def training_data(data, config: TrainConfig):
    """The samples a population trains on: the training set, and the validation set too
    when ``config`` has no validation (DeepCrime's ``remove_validation_set`` fits with
    ``validation_split=0``: its mutant trains on all the data)."""
    if config.validation or data.validation is None:
        return data.x_train, data.y_train
    return concat(data.x_train, data.x_val), np.concatenate([data.y_train, data.y_val])


def training_set(data, config: TrainConfig, operator, params, seed: int):
    """The samples one instance trains on: :func:`training_data`, changed by a data-level
    ``operator`` (with ``params``) drawing from the instance's ``seed``."""
    x, y = training_data(data, config)
    if operator is not None and operator.level == "data":
        x, y = operator.apply(x, y, data.n_classes, params, np.random.default_rng(seed),
                              data.task)
    return x, y
