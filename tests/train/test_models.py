"""The PMT paper's other two subjects: a gaze regression model (DeepCrime's UnityEyes
LeNet) and a recommender (DeepCrime's MovieLens model), on small synthetic data made
here. How an instance is scored is checked against an independent computation from
the model's own outputs."""

import tomllib

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.train.tasks import TASKS, angle_errors_degrees

pytestmark = pytest.mark.train


def _gaze_npz(path, n_train=96, n_test=48, seed=0):
    """Eye images, head poses and gaze angles (radians); the gaze follows the pose."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for part, n in (("train", n_train), ("test", n_test)):
        pose = np.column_stack([rng.normal(np.pi / 2, 0.15, n), rng.normal(0, 0.15, n)])
        arrays[f"x_{part}"] = rng.integers(0, 256, (n, 20, 28), dtype=np.uint8)
        arrays[f"pose_{part}"] = pose.astype(np.float32)
        arrays[f"y_{part}"] = (pose + rng.normal(0, 0.02, pose.shape)).astype(np.float32)
    np.savez(path, **arrays)
    return path


def _ratings_npz(path, n_train=400, n_test=100, seed=0):
    """(user, item) ids and ratings in [0, 1] from hidden user/item factors."""
    rng = np.random.default_rng(seed)
    users, items = rng.normal(size=(30, 3)), rng.normal(size=(50, 3))
    arrays = {}
    for part, n in (("train", n_train), ("test", n_test)):
        ids = np.column_stack([rng.integers(0, 30, n), rng.integers(0, 50, n)])
        arrays[f"x_{part}"] = ids
        arrays[f"y_{part}"] = 1 / (1 + np.exp(-np.sum(users[ids[:, 0]] * items[ids[:, 1]], 1)))
    np.savez(path, **arrays)
    return path


def test_angle_error_agrees_with_an_independent_formula():
    rng = np.random.default_rng(3)
    a = np.column_stack([rng.uniform(0.2, 3.0, 500), rng.uniform(-3, 3, 500)])
    b = a + rng.normal(0, 0.1, a.shape)

    def unit(angles):  # spherical to Cartesian, written independently
        return np.array([[np.sin(p) * np.cos(q), np.sin(p) * np.sin(q), np.cos(p)]
                         for p, q in angles])

    u, v = unit(a), unit(b)
    expected = np.degrees(np.arctan2(np.linalg.norm(np.cross(u, v), axis=1), np.sum(u * v, 1)))
    assert np.allclose(angle_errors_degrees(b, a), expected, atol=1e-6)


def _scored(task, monkeypatch, tmp_path, npz, model):
    """Train one instance (1 epoch) and return (the scorer's answer, the raw outputs)."""
    pytest.importorskip("tensorflow")
    from probmut.train import fitting, instance, models
    from probmut.train.datasets import load_dataset
    from probmut.train.instance import train_instance
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import Assignment, RunSettings

    configure_tensorflow(1)
    outputs = []
    real = fitting.predict
    monkeypatch.setattr(instance.fitting, "predict",
                        lambda m, x: outputs.append(real(m, x)) or outputs[-1])
    data = load_dataset(str(npz), task=task)
    settings = RunSettings(str(npz), model, models.MODELS[model].config.replace(epochs=1))
    result = train_instance(Assignment(settings, "healthy", 0), dataset=data)
    return result, outputs[-1], data


def test_gaze_model_scores_the_share_within_5_degrees(monkeypatch, tmp_path):
    npz = _gaze_npz(tmp_path / "gaze.npz")
    result, outputs, data = _scored("regression", monkeypatch, tmp_path, npz, "gaze_lenet")
    assert outputs.shape == (48, 2)
    with np.load(npz) as arrays:
        truth = arrays["y_test"]
    expected = angle_errors_degrees(outputs, truth) < 5
    assert np.array_equal(result.correct, expected)
    assert result.accuracy == expected.mean()
    assert data.dims.input_shape == ((20, 28, 1), (2,)) and data.dims.n_outputs == 2
    # chance: predicting the training mean gaze for every test input
    mean = np.broadcast_to(data.y_train.mean(axis=0), data.y_test.shape)
    assert TASKS["regression"].chance(data.y_train, data.y_test) == np.mean(
        angle_errors_degrees(mean, data.y_test) < 5)


def test_recommender_scores_the_share_within_0_12(monkeypatch, tmp_path):
    npz = _ratings_npz(tmp_path / "ratings.npz")
    result, outputs, data = _scored("recommendation", monkeypatch, tmp_path, npz, "recommender")
    with np.load(npz) as arrays:
        truth = arrays["y_test"]
    assert outputs.shape == (100, 1)
    assert np.array_equal(result.correct, np.abs(outputs[:, 0] - truth) <= 0.12)
    assert data.dims.vocabulary == (30, 50)


def test_task_data_problems_are_clear_errors(tmp_path):
    from probmut.train.datasets import load_dataset

    with pytest.raises(ProbmutError, match="a regression model trains on a file FILE.npz with "
                                           "x_train .*pose_train"):
        load_dataset("digits", task="regression")
    np.savez(tmp_path / "bad.npz", x_train=np.zeros((4, 2)), y_train=np.zeros(4),
             x_test=np.zeros((2, 2)), y_test=np.zeros(2))
    with pytest.raises(ProbmutError, match="non-negative integer .user, item. ids"):
        load_dataset(str(tmp_path / "bad.npz"), task="recommendation")
    with pytest.raises(ProbmutError, match="missing array 'pose_train'"):
        load_dataset(str(tmp_path / "bad.npz"), task="regression")


@pytest.mark.slow
def test_gaze_and_recommender_runs_through_the_command(tmp_path, cli):
    gaze, ratings = _gaze_npz(tmp_path / "gaze.npz"), _ratings_npz(tmp_path / "ratings.npz")
    summary = cli.json("train", "--architecture", "gaze_lenet", "--data", gaze, "--instances", 2,
                       "--epochs", 1, "--out", tmp_path / "gaze", "--quiet",
                       "--mutation", "change_label:20", "--mutation", "delete_training_data:30",
                       "--mutation", "neurons_freezing:0.2")
    assert [p["instances"] for p in summary["results"]] == [2, 2, 2, 2]
    data = tomllib.loads((tmp_path / "gaze" / "manifest.toml").read_text())["models"]["gaze"][
        "data"]
    assert data["task"] == "regression" and data["input_shape"] == [[20, 28, 1], [2]]
    cli.run("train", "--architecture", "recommender", "--data", ratings, "--instances", 2,
            "--epochs", 1, "--out", tmp_path / "movies", "--quiet",
            "--mutation", "unbalance_train_data:50", "--mutation", "change_label:10")
    # operators that only make sense for classes or image inputs say so
    on_gaze = ["train", "--architecture", "gaze_lenet", "--data", gaze, "--out", tmp_path / "x"]
    on_ratings = ["train", "--architecture", "recommender", "--data", ratings,
                  "--out", tmp_path / "x"]
    cli.refused(*on_gaze, "--mutation", "make_output_classes_overlap",
                says="only for classification and recommendation models; this is a "
                     "regression model")
    cli.refused(*on_ratings, "--mutation", "add_noise",
                says="only for classification and regression models; this is a "
                     "recommendation model")
    # its embeddings' neurons meet in a Dot and an Add: no weights can block them
    cli.refused(*on_ratings, "--mutation", "NEB",
                says="no layer that is a layer whose neurons reach layers with connection "
                     "weights")
