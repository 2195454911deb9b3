"""A training program for ``probmut train --command "python examples/digits_mlp_program.py"``:
the model of examples/digits_mlp.py (scikit-learn's MLPClassifier on the digits) as a
program of its own, one process per instance (docs/training.md, *Your own training
code*). It uses nothing of probmut: any language that reads JSON and NumPy's .npz can
do the same.

probmut writes the instance's spec as JSON into the file $PROBMUT_SPEC names (its seed,
hyperparameters, mutation, and ``data``: an .npz of x_train, y_train, x_test, y_test)
and reads the result, JSON too, from the file $PROBMUT_RESULT names. A program's reads
cannot be watched, so the result lists the hyperparameters it used under ``read``.
"""

import json
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier


def main():
    spec = json.loads(Path(os.environ["PROBMUT_SPEC"]).read_text())
    settings = spec["hyperparameters"]
    used = {"learning_rate": 0.001, "batch_size": 32, "epochs": 20}  # the defaults
    used = {name: settings.get(name, default) for name, default in used.items()}
    with np.load(spec["data"]) as data:
        x_train, y_train, x_test, y_test = (data[k] for k in ("x_train", "y_train", "x_test",
                                                               "y_test"))
    model = MLPClassifier(hidden_layer_sizes=(32,), learning_rate_init=used["learning_rate"],
                          batch_size=used["batch_size"], max_iter=used["epochs"],
                          random_state=spec["seed"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train.reshape(len(x_train), -1), y_train)
    correct = model.predict(x_test.reshape(len(x_test), -1)) == y_test
    result = {"accuracy": float(correct.mean()), "correct": correct.tolist(),
              "loss_history": model.loss_curve_, "read": sorted(used)}
    if spec["save_model"]:
        result["model_path"] = str(Path(spec["folder"]) / "model.pkl")
        Path(result["model_path"]).write_bytes(pickle.dumps(model))
    Path(os.environ["PROBMUT_RESULT"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
