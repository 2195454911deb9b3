"""A training function for ``probmut train --trainer examples.digits_mlp:train``:
scikit-learn's MLPClassifier on the digits, one instance per call (docs/training.md,
*Your own training code*).

probmut calls ``train(spec)`` once per instance, in its own workers. ``spec`` holds the
instance's seed, its data (a data-level mutation already applied) and its
hyperparameters, the mutated one in place; the function returns the test accuracy and,
so that every analysis works, which test inputs it got right and its loss per epoch.
It is deterministic per seed: every random choice (the initial weights, the batches'
order) comes from ``spec.seed``.
"""

import pickle
import warnings
from pathlib import Path

from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier


def train(spec):
    settings = spec.hyperparameters  # read what you use: probmut records it
    model = MLPClassifier(hidden_layer_sizes=(32,),
                          learning_rate_init=settings.get("learning_rate", 0.001),
                          batch_size=settings.get("batch_size", 32),
                          max_iter=settings.get("epochs", 20),
                          random_state=spec.seed)
    with warnings.catch_warnings():  # a few epochs on purpose: probmut measures the spread
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(spec.x_train.reshape(len(spec.x_train), -1), spec.y_train)
    correct = model.predict(spec.x_test.reshape(len(spec.x_test), -1)) == spec.y_test
    result = {"accuracy": float(correct.mean()), "correct": correct,
              "loss_history": model.loss_curve_}
    if spec.save_model:
        result["model_path"] = Path(spec.folder) / "model.pkl"
        result["model_path"].write_bytes(pickle.dumps(model))
    return result
