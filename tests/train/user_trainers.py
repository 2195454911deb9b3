"""Training code of a user's own, for the tests of probmut.train.function_trainer and
probmut.train.command_trainer: scikit-learn's MLP on the digits, small enough to train
in a tenth of a second, and code that misbehaves. Importable by name in probmut's
workers (``tests.train.user_trainers:mlp``)."""

import os
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

#: Set in a run's environment: the functions refuse to train where TensorFlow is imported.
NO_TENSORFLOW = "PROBMUT_TEST_NO_TENSORFLOW"


def _fit(spec, learning_rate):
    # in the processes of a run a test starts afresh to see that none imports TensorFlow
    # (a test's own process may have imported it for another test)
    if os.environ.get(NO_TENSORFLOW) and ("tensorflow" in sys.modules or "keras" in sys.modules):
        raise RuntimeError("TensorFlow was imported in the worker of a training function")
    settings = spec.hyperparameters
    model = MLPClassifier(hidden_layer_sizes=(16,), learning_rate_init=learning_rate,
                          batch_size=settings.get("batch_size", 64),
                          max_iter=settings.get("epochs", 6), random_state=spec.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(spec.x_train.reshape(len(spec.x_train), -1), spec.y_train)
    correct = model.predict(spec.x_test.reshape(len(spec.x_test), -1)) == spec.y_test
    return {"accuracy": float(correct.mean()), "correct": correct,
            "loss_history": model.loss_curve_}


def mlp(spec):
    """Reads its learning rate, batch size and epochs."""
    return _fit(spec, spec.hyperparameters.get("learning_rate", 0.01))


def ignores_learning_rate(spec):
    """Never reads the learning rate: a mutation of it cannot reach this code."""
    return _fit(spec, 0.01)


def slow_mlp(spec):
    """:func:`mlp`, 0.4 s later (a run that is interrupted midway)."""
    time.sleep(0.4)
    return mlp(spec)


def troubled(spec):
    """Raises on instance 1, returns no accuracy on instance 2, prints on instance 3."""
    if spec.instance == 1:
        raise ValueError(f"no batch of {spec.hyperparameters.get('batch_size')}")
    if spec.instance == 2:
        return {"acc": 0.9}
    if spec.instance == 3:
        print("training instance 3")
    return mlp(spec)
