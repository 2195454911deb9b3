"""A training program for the tests of probmut.train.command_trainer (``--command
"python tests/train/user_program.py [--no-read]"``): a nearest-centroid classifier on
the spec's data, deterministic and fast, that misbehaves on purpose: instance 1 exits
with code 3, instance 2 hangs, instance 3 writes garbage as its result, instance 4 writes
no result, with ``--misbehave``. ``--no-read`` leaves out the list of the hyperparameters
it read; ``--slow FILE`` appends its process id to FILE and takes 1.5 s longer."""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def main():
    spec = json.loads(Path(os.environ["PROBMUT_SPEC"]).read_text())
    result = Path(os.environ["PROBMUT_RESULT"])
    misbehave = "--misbehave" in sys.argv
    if "--slow" in sys.argv:
        with open(sys.argv[sys.argv.index("--slow") + 1], "a") as pids:
            print(os.getpid(), file=pids)
        time.sleep(1.5)
    if misbehave and spec["instance"] == 1:
        print("Traceback (most recent call last):\nMemoryError: boom", file=sys.stderr)
        sys.exit(3)
    if misbehave and spec["instance"] == 2:
        time.sleep(600)
    if misbehave and spec["instance"] == 3:
        result.write_text("accuracy: high")
        return
    if misbehave and spec["instance"] == 4:
        return
    with np.load(spec["data"]) as data:
        x, y = data["x_train"].reshape(len(data["y_train"]), -1), data["y_train"]
        x_test, y_test = data["x_test"].reshape(len(data["y_test"]), -1), data["y_test"]
    # a shrunken centroid per class: the learning rate is the share kept of the distance
    # to the overall mean, so that a mutation of it changes the model
    rate = spec["hyperparameters"].get("learning_rate", 1.0)
    centre = x.mean(axis=0)
    centroids = np.array([centre + rate * (x[y == c].mean(axis=0) - centre)
                          for c in range(spec["n_classes"])])
    noise = np.random.default_rng(spec["seed"]).normal(0, 0.1, centroids.shape)
    distances = ((x_test[:, None, :] - (centroids + noise)[None]) ** 2).sum(axis=2)
    correct = distances.argmin(axis=1) == y_test
    document = {"accuracy": float(correct.mean()), "correct": correct.tolist()}
    if "--no-read" not in sys.argv:
        document["read"] = ["learning_rate"]
    result.write_text(json.dumps(document))


if __name__ == "__main__":
    main()
