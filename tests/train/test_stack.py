"""Stacked training (--stack): a member computes what it would alone, has its own data,
and stacks resume, reproduce and fall back like single instances."""

import json
import os
import platform
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.train


def tiny_cnn(input_shape, n_classes):
    """Every stacked layer kind, no dropout: one- and many-channel convolutions, strides,
    dilation, valid and same padding, pooling, flatten, dense; between convolutions
    layers that run on the members' channels side by side (pooling, an elementwise
    activation) and one that cannot (a softmax over the channels)."""
    from keras import Sequential, layers

    return Sequential([
        layers.Input(input_shape),
        layers.Conv2D(4, 3, padding="same", activation="relu"),
        layers.Conv2D(4, 3, dilation_rate=2, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Activation("tanh"),
        layers.Conv2D(5, 1, activation="softmax"),
        layers.Conv2D(6, 3, strides=2, activation="relu"),
        layers.Flatten(),
        layers.Dense(8, activation="tanh"),
        layers.Dense(n_classes, activation="softmax"),
    ])


def batchnorm_mlp(input_shape, n_classes):
    from keras import Sequential, layers

    return Sequential([layers.Input(input_shape), layers.Flatten(), layers.Dense(8),
                       layers.BatchNormalization(), layers.Dense(n_classes, activation="softmax")])


def solo_build(spec, dims, config, seed):
    """The model the solo trainer starts ``seed`` from (probmut.train.instance._trained)."""
    import keras

    from probmut.train import models

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    return models.build_model(spec, dims, config)


def seeded_after_build(input_shape, n_classes):
    """A model whose build does more than initialise its weights: a kernel set from a
    NumPy draw after the build (a user function may do this)."""
    model = tiny_cnn(input_shape, n_classes)
    kernel, bias = model.layers[-1].get_weights()
    model.layers[-1].set_weights([np.random.normal(size=kernel.shape).astype("float32"), bias])
    return model


def draws_from_python_random(input_shape, n_classes):
    """A model function that draws from Python's random as it makes the model, as many
    times as its first draw says (a user function may do anything)."""
    import random

    for _ in range(1 + (random.random() < 0.5)):
        random.random()
    return tiny_cnn(input_shape, n_classes)


@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)
    return load_dataset("digits")


@pytest.mark.parametrize("grouped, optimizer", [(True, "adam"), (False, "adam"),
                                                (True, "rmsprop")],
                         ids=["grouped-conv", "patch-conv", "grouped-conv-rmsprop"])
def test_a_member_trains_exactly_as_the_same_instance_alone(digits, monkeypatch, grouped,
                                                             optimizer):
    """Stack of 3 vs Keras' own train_on_batch on each member from the same start and
    data order: same initial weights bit for bit, same trained weights up to float
    rounding (14 Adam steps move the weights by about 0.1; rounding leaves ~1e-6). Both
    ways of stacking a convolution: one grouped convolution, and (where TensorFlow
    cannot train that) depthwise and patch-matrix convolutions; Adam through
    TensorFlow's fused kernel, RMSprop through Keras' own update."""
    from probmut.train import models
    from probmut.train.stack import model as stacked

    if grouped and not stacked.grouped_convolution_trains():
        pytest.skip("this TensorFlow cannot train a grouped convolution (oneDNN is off)")
    monkeypatch.setattr(stacked, "grouped_convolution_trains", lambda: grouped)
    from probmut.train.stack.model import StackedModel
    from probmut.train.stack.training import data_order, fit_stack, starting_weights

    spec = models.ModelSpec(lambda dims: tiny_cnn(dims.input_shape, dims.n_outputs),
                            models.TrainConfig(epochs=2, batch_size=32, learning_rate=1e-2,
                                               optimizer=optimizer),
                            "tiny")
    x, y, seeds = digits.x_train[:200], digits.y_train[:200], [11, 22, 33]
    template, start = starting_weights(spec, digits.dims, spec.config, seeds)
    stack = StackedModel(template, start, seeds)
    orders = [data_order(seed, len(y), 2) for seed in seeds]
    fit_stack(stack, [x] * 3, [y] * 3, 10, spec.config, orders)
    one_hot = np.eye(10, dtype=np.float32)[y]
    for k, seed in enumerate(seeds):
        alone = solo_build(spec, digits.dims, spec.config, seed)
        assert all(np.array_equal(a, b) for a, b in zip(alone.get_weights(), start[k], strict=True))
        for order in orders[k]:
            for first in range(0, len(y), 32):
                rows = order[first:first + 32]
                alone.train_on_batch(x[rows], one_hot[rows])
        member = stack.member_weights(k)
        moved = max(np.abs(a - b).max() for a, b in zip(member, start[k], strict=True))
        differ = max(np.abs(a - b).max() for a, b in zip(member, alone.get_weights(), strict=True))
        assert moved > 0.05 and differ < 2e-5, (moved, differ)


@pytest.mark.parametrize("build, real_builds", [(tiny_cnn, 1), (seeded_after_build, 4),
                                                (draws_from_python_random, 4)],
                         ids=["initialised-by-keras", "changed-after-build", "draws-from-random"])
def test_members_start_exactly_as_alone_built_once_where_keras_initialises(
        digits, monkeypatch, build, real_builds):
    """starting_weights gives each member its solo start bit for bit. Where a model's
    weights are its initializers' values, only member 0 is built (the others' weights
    come from the seeds Keras draws); a model changed after its build, or whose making
    draws from Python's random besides Keras, is built for every member, and still
    starts exactly as alone."""
    from probmut.train import models
    from probmut.train.stack.training import starting_weights

    spec = models.ModelSpec(lambda dims: build(dims.input_shape, dims.n_outputs),
                            models.TrainConfig(epochs=1, batch_size=32), "probe")
    seeds = [5, 7, 8, 6]  # the making of 7 and 8 draws more from random with draws-from-random
    builds = []
    real = models.build_model
    monkeypatch.setattr(models, "build_model", lambda *a, **k: builds.append(k) or real(*a, **k))
    template, weights = starting_weights(spec, digits.dims, spec.config, seeds)
    assert sum(k.get("compile", True) for k in builds) == real_builds
    monkeypatch.setattr(models, "build_model", real)
    for seed, member in zip(seeds, weights, strict=True):
        alone = solo_build(spec, digits.dims, spec.config, seed).get_weights()
        assert len(member) == len(alone)
        assert all(a.dtype == b.dtype and np.array_equal(a, b)
                   for a, b in zip(member, alone, strict=True))
    assert weights[0] is not weights[1] and not np.array_equal(weights[0][0], weights[1][0])


def test_only_a_plain_adam_takes_the_fused_update(digits):
    """Adam with an option the fused kernel does not have (AMSGrad, weight decay,
    clipping, a schedule), and every other optimizer, keep Keras' own update."""
    import keras

    from probmut.train import models
    from probmut.train.stack.training import _fused_adam

    weights = [keras.Variable(np.zeros((2, 3), "float32"))]

    def fused(optimizer, **options):
        if not isinstance(optimizer, keras.optimizers.Optimizer):
            optimizer = models.make_optimizer(models.TrainConfig(
                epochs=1, batch_size=8, optimizer=optimizer, **options))
        optimizer.build(weights)
        return _fused_adam(optimizer, weights) is not None

    assert fused("adam") and fused("adam", learning_rate=0.01)
    assert not fused({"class_name": "Adam", "config": {"amsgrad": True}})
    assert not fused({"class_name": "Adam", "config": {"weight_decay": 0.01}})
    assert not fused("adam", clip=("value", 1.0))
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.9)
    assert not fused(keras.optimizers.Adam(learning_rate=schedule))
    assert not fused("sgd") and not fused("adamw") and not fused("rmsprop")


@pytest.mark.parametrize("onednn, trains", [("1", True), ("0", False)])
def test_grouped_convolutions_are_used_exactly_where_tensorflow_trains_them(onednn, trains):
    """oneDNN's CPU kernels train a grouped convolution; TensorFlow's own refuse its
    gradient, and the probe then sends stacks to patch matrices (tested above)."""
    if trains and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("oneDNN's grouped convolution gradient is checked on x86-64 only")
    probe = ("from probmut.train.tf_setup import configure_tensorflow\n"
             "configure_tensorflow(1)\n"
             "from probmut.train.stack import grouped_convolution_trains\n"
             "print(grouped_convolution_trains())\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": onednn}, check=True)
    assert result.stdout.split()[-1] == str(trains), result.stderr[-2000:]


def test_each_member_gets_its_own_mutated_training_set(digits):
    from probmut.train.models import MODELS
    from probmut.train.operators import OPERATORS, parse_mutations
    from probmut.train.stack.training import member_data
    from probmut.train.work import Assignment, RunSettings, instance_seed

    settings = RunSettings("digits", "digits_cnn", MODELS["digits_cnn"].config, stack=3)
    mutation = parse_mutations("delete_training_data:30")[0]
    assignments = [Assignment(settings, mutation.population, i, mutation.operator.name,
                              mutation.params) for i in range(3)]
    xs, ys = member_data(assignments, digits)
    assert len({len(y) for y in ys}) == 1 and len(ys[0]) < len(digits.y_train)
    assert not np.array_equal(xs[0], xs[1]) and not np.array_equal(xs[1], xs[2])
    for assignment, x, y in zip(assignments, xs, ys, strict=True):  # the set it gets alone
        seed = instance_seed(settings.seed, assignment.instance, assignment.population)
        alone = OPERATORS["delete_training_data"].apply(
            digits.x_train, digits.y_train, 10, assignment.params, np.random.default_rng(seed))
        assert np.array_equal(alone[0], x) and np.array_equal(alone[1], y)


def test_a_stack_reusing_the_previous_ones_model_and_step_trains_as_a_new_one(digits):
    """A process's next stack of the same model, configuration and size restarts the
    previous stacked model (weights, dropout seeds, data, optimiser state) and reuses
    its traced step: its members train bit for bit as in a new stacked model."""
    from probmut.train.models import MODELS
    from probmut.train.operators import parse_mutations
    from probmut.train.stack import training
    from probmut.train.work import Assignment, RunSettings

    config = MODELS["digits_cnn"].config.replace(epochs=2)
    settings = RunSettings("digits", "digits_cnn", config, stack=2)
    mutation = parse_mutations("delete_training_data:30")[0]  # data differ per member

    def train(instances):
        return training.train_stack([Assignment(settings, mutation.population, i,
                                                mutation.operator.name, mutation.params)
                                     for i in instances], dataset=digits)

    training._PREVIOUS.clear()
    train([0, 1])
    stack = next(iter(training._PREVIOUS.values()))[0]
    reused = train([2, 3])
    assert next(iter(training._PREVIOUS.values()))[0] is stack
    assert [steps.run.experimental_get_tracing_count() for steps in stack.steps.values()] == [1]
    training._PREVIOUS.clear()
    new = train([2, 3])
    assert next(iter(training._PREVIOUS.values()))[0] is not stack
    for a, b in zip(reused, new, strict=True):
        assert (a.accuracy, a.loss_history, a.initial_loss) == (b.accuracy, b.loss_history,
                                                                 b.initial_loss)
        assert np.array_equal(a.correct, b.correct)
    assert reused[0].loss_history != reused[1].loss_history


def _run(out, settings, digits, mutations=()):
    from probmut.train.backends import Serial
    from probmut.train.run import run_populations

    with Serial(1, {"dataset": digits}) as backend:
        return run_populations(settings, list(mutations), 4, out, backend, digits,
                               name="digits", progress=False)


@pytest.mark.slow
def test_stacks_reproduce_and_resume_only_the_missing_instances(tmp_path, digits):
    from probmut.train.models import MODELS
    from probmut.train.work import RunSettings

    settings = RunSettings("digits", "digits_cnn", MODELS["digits_cnn"].config.replace(epochs=1),
                           stack=4)
    first, again = _run(tmp_path / "a", settings, digits), _run(tmp_path / "b", settings, digits)
    assert first.trained == again.trained == 4
    from probmut.io.outcomes import load_outcomes
    from probmut.io.populations import read_instances

    # same seed, same stack: the same bits in everything but the wall time (seconds)
    runs = [read_instances(tmp_path / run / "healthy.csv") for run in "ab"]
    assert [(r.accuracy, r.seed, r.loss_history, r.initial_loss, r.constant) for r in runs[0]] \
        == [(r.accuracy, r.seed, r.loss_history, r.initial_loss, r.constant) for r in runs[1]]
    outcomes = [load_outcomes(tmp_path / run / "healthy.outcomes.npz") for run in "ab"]
    assert all(np.array_equal(a, b) for a, b in zip(*outcomes, strict=True))
    accuracies = np.array([r.accuracy for r in runs[0]])
    assert accuracies.min() > 0.5 and len(set(accuracies)) > 1  # trained, and not alike

    records = tmp_path / "a" / ".work" / "healthy"
    for lost in ("00001.npz", "00002.npz"):  # killed while stack 0 was being written
        (records / lost).unlink()
    kept = {p.name: p.stat().st_mtime_ns for p in records.glob("*.npz")}
    resumed = _run(tmp_path / "a", settings, digits)
    assert (resumed.trained, resumed.resumed) == (2, 2)
    assert {p.name: p.stat().st_mtime_ns for p in records.glob("*.npz") if p.name in kept} == kept
    assert [r.instance for r in read_instances(tmp_path / "a" / "healthy.csv")] == [0, 1, 2, 3]


@pytest.mark.slow
def test_an_unsupported_layer_falls_back_to_one_at_a_time_with_a_message(tmp_path, digits,
                                                                          capsys):
    from probmut.train.models import TrainConfig
    from probmut.train.work import RunSettings

    settings = RunSettings("digits", f"{__name__}:batchnorm_mlp",
                           TrainConfig(epochs=1, batch_size=64), stack=4)
    report = _run(tmp_path / "bn", settings, digits)
    assert report.trained == 4 and not report.failures
    message = capsys.readouterr().err
    assert "healthy: training one instance at a time: layer batch_normalization" in message
    assert "(BatchNormalization) cannot be stacked" in message


def test_auto_stacks_small_models_and_trains_large_ones_alone(digits):
    from types import SimpleNamespace

    from probmut.train import models, stack
    from probmut.train.datasets import ModelDims

    def auto(name, dims):
        spec = models.resolve_model(name, dims)
        probe = models.build_model(spec, dims, spec.config)
        data = SimpleNamespace(x_train=np.zeros((10, *dims.input_shape), np.float32))
        return stack.choose_stack_size(probe, spec.config, data, private_data=False,
                                       gpu_bytes=None)  # the CPU rule, on any machine

    mnist = ModelDims(input_shape=(28, 28, 1), n_outputs=10)
    assert auto("digits_cnn", digits.dims) == stack.eligibility.StackChoice(stack.AUTO_STACK)
    alone = auto("deepcrime_mnist", mnist)
    assert alone.size == 1 and "about 9,210 MFLOP per instance, and above 100 MFLOP" in alone.why


@pytest.mark.slow
def test_auto_says_why_it_trains_one_at_a_time_and_a_resume_keeps_its_size(
        tmp_path, cli, monkeypatch):
    """The command says why auto trains one at a time, and a resumed run keeps the stack
    size it began with: with another (auto's 20 here) its settings would differ and the
    resume be refused."""
    from probmut.train import preflight

    monkeypatch.setattr(preflight, "gpu_budget", lambda: None)  # the CPU rule, on any machine
    common = ["train", "--instances", "1", "--epochs", "1", "--quiet"]
    large = cli.run(*common, "--batch-size", "1347", "--out", tmp_path / "large")
    assert ("automatic stack size: one instance at a time: a training step of this model "
            "costs about 940 MFLOP per instance" in large.err)
    out = tmp_path / "resumed"
    cli.run(*common, "--stack", "4", "--out", out)
    shutil.rmtree(out / ".work" / "healthy")  # the instance trains again, under auto
    cli.run(*common, "--out", out)
    assert json.loads((out / ".work" / "settings.json").read_text())["stack"] == 4


def test_on_a_gpu_auto_fits_the_stack_to_its_memory_and_stacks_large_models_too(digits):
    """With a GPU budget, auto takes as many members as fit it (at least 2, at most
    AUTO_STACK) and does not send large models to one-at-a-time training (that rule is
    the CPU's). The budget is given: the decision, not the GPU, is tested here."""
    from types import SimpleNamespace

    from probmut.train import models, stack
    from probmut.train.datasets import ModelDims

    def auto(name, dims, budget):
        spec = models.resolve_model(name, dims)
        probe = models.build_model(spec, dims, spec.config)
        data = SimpleNamespace(x_train=np.zeros((10, *dims.input_shape), np.float32))
        member = stack.member_bytes(probe, spec.config.batch_size)
        choice = stack.choose_stack_size(probe, spec.config, data, private_data=False,
                                         gpu_bytes=budget)
        return choice.size, member

    mnist = ModelDims(input_shape=(28, 28, 1), n_outputs=10)
    size, member = auto("deepcrime_mnist", mnist, 2**40)
    assert size == stack.AUTO_STACK
    size, _ = auto("deepcrime_mnist", mnist, 7 * member + member // 2)
    assert size == 7
    size, _ = auto("digits_cnn", digits.dims, 1)
    assert size == 2


def test_gpu_budget_is_half_the_memory_nvidia_smi_reports(monkeypatch):
    import shutil
    import subprocess
    from types import SimpleNamespace

    import tensorflow as tf

    from probmut.train import stack

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: ["GPU:0"])
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(subprocess, "run",
                        lambda *a, **k: SimpleNamespace(stdout="16384\n16384\n"))
    assert stack.gpu_budget() == 8 * 2**30
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(stdout="N/A\n"))
    assert stack.gpu_budget() is None
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    assert stack.gpu_budget() is None


def test_on_a_real_gpu_the_budget_is_read():
    """Runs only where TensorFlow sees a GPU and nvidia-smi is installed."""
    import shutil

    tf = pytest.importorskip("tensorflow")
    if not tf.config.list_physical_devices("GPU") or shutil.which("nvidia-smi") is None:
        pytest.skip("no GPU here: the budget's decision is tested with a patched budget")
    from probmut.train import stack

    assert stack.gpu_budget() > 2**28  # half of any GPU's memory exceeds 256 MiB


@pytest.mark.slow
def test_a_run_leaving_workers_idle_says_which_stack_size_keeps_them_busy(tmp_path, cli):
    """One population of 4 with --jobs 2 is one stack (auto): the run names --stack 2,
    with which it gets no such line."""
    pytest.importorskip("tensorflow")
    common = ["train", "--instances", "4", "--epochs", "1", "--jobs", "2", "--quiet"]
    auto = cli.run(*common, "--out", tmp_path / "auto")
    assert ("1 stack of 4 instances for --jobs 2 leaves 1 worker idle; --stack 2 keeps 2 "
            "busy" in auto.err)
    assert "idle" not in cli.run(*common, "--stack", "2", "--out", tmp_path / "two").err
