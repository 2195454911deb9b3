"""Train (or derive) and score one instance: the unit of work every backend runs.

Each instance gets its own seed, ``instance_seed(base_seed, instance_id, population)``,
so its result does not depend on which worker runs it, in what order, or how many
workers there are. TensorFlow runs with deterministic ops, so the same seed gives the
same accuracy.

Examples
--------
>>> instance_seed(0, 3, "healthy") == instance_seed(0, 3, "healthy")
True
>>> instance_seed(0, 3, "healthy") != instance_seed(0, 4, "healthy")
True
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import time
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

from probmut.io.records import InstanceRecord, loss_diverged, one_line
from probmut.train import flags, models
from probmut.train.operators import OPERATORS
from probmut.train.tasks import TASKS

HEALTHY = "healthy"


def instance_seed(base_seed: int, instance: int, population: str) -> int:
    """A 32-bit seed from the base seed, the instance id and the population's name."""
    state = np.random.SeedSequence([base_seed, instance, zlib.crc32(population.encode())])
    return int(state.generate_state(1)[0])


@dataclass(frozen=True)
class RunSettings:
    """What every population of a run shares: data, model, base training settings, seed,
    and ``stack``: instances of a population trained at once (1: one at a time with
    ``model.fit``; see :mod:`probmut.train.stack`)."""

    dataset: str
    model: str
    config: models.TrainConfig
    seed: int = 0
    stack: int = 1


@dataclass(frozen=True)
class Task:
    """One instance of one population. ``operator`` None is the healthy population;
    ``params`` are the mutation's parsed, layer-bound parameters (plain data).
    ``timeout`` (seconds) stops its training at the next batch end past it;
    ``save_model`` returns the trained (or mutated) model as ``.keras`` bytes."""

    settings: RunSettings
    population: str
    instance: int
    operator: str | None = None
    params: dict | None = None
    keep_weights: bool = False
    timeout: float | None = None
    save_model: bool = False


@dataclass(frozen=True, eq=False)
class InstanceResult:
    """One instance's outcome and symptoms (see :mod:`probmut.io.records`).

    ``correct`` (one bool per test input) is None when the instance was not scored
    (crashed, timed out); ``loss_history`` is empty for model-level mutants (not
    trained). A stack of members fills one result per member.
    """

    population: str
    instance: int
    seed: int
    accuracy: float
    correct: np.ndarray | None
    seconds: float
    weights: list | None = None  # trained healthy weights, when the task asked for them
    # model-level mutants: how closely it matches its healthy instance (flags.MATCHES)
    match: str | None = None
    status: str = "ok"
    error: str = ""
    loss_history: tuple[float, ...] = ()
    initial_loss: float = math.nan
    constant: bool | None = None
    model_bytes: bytes | None = None  # the .keras file, when the task asked for it

    def record(self) -> InstanceRecord:
        return InstanceRecord(
            instance=self.instance, accuracy=self.accuracy, seed=self.seed, status=self.status,
            seconds=self.seconds, loss_history=self.loss_history,
            initial_loss=self.initial_loss, constant=self.constant, error=self.error)


def configure_tensorflow(threads: int) -> None:
    """Set TensorFlow up for training: oneDNN kernels, thread pools of ``threads``,
    deterministic ops (once per process).

    Call before anything imports TensorFlow in the process; a process where it already
    runs (a reused Ray worker) keeps its set-up. oneDNN's CPU kernels are chosen when
    TensorFlow is imported (``TF_ENABLE_ONEDNN_OPTS``: TensorFlow decides by the CPU and
    leaves them off on this machine's; probmut turns them on unless the variable is set)
    and train a stack 1.7 times as fast here. Results depend, by float rounding, on the
    kernels and the pools, so TensorFlow imported or sized before this call gets a
    warning: its files may then differ from the command's.
    """
    if "tensorflow" in sys.modules and "TF_ENABLE_ONEDNN_OPTS" not in os.environ:
        _differs_from_the_command("imported before probmut could choose its kernels (oneDNN)")
    set_tensorflow_environment()
    with _native_stderr_silenced():  # oneDNN announces itself at import, whatever the log level
        import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # one predict function per instance is expected

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # already initialised: keep the pools, say so if they differ
        current = tf.config.threading.get_intra_op_parallelism_threads()
        if current != threads:
            _differs_from_the_command(f"initialised before probmut could size its thread "
                                      f"pools ({current or 'its default'} threads, asked "
                                      f"{threads})")
    tf.config.experimental.enable_op_determinism()


def set_tensorflow_environment() -> None:
    """Choose what TensorFlow reads from the environment when it is imported (oneDNN
    kernels, quiet C++ logs), where the user has not: for a process that must import
    TensorFlow before :func:`configure_tensorflow` runs, such as a test session."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


@contextlib.contextmanager
def _native_stderr_silenced():
    """Send what native code writes to file descriptor 2 to /dev/null for a while."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _differs_from_the_command(what: str) -> None:
    warnings.warn(f"TensorFlow was {what} in this process: results may differ by float "
                  "rounding from the same run of `probmut train`; call "
                  "probmut.train.instance.configure_tensorflow first", RuntimeWarning,
                  stacklevel=3)


@functools.lru_cache(maxsize=4)
def _spec(model: str, dims) -> models.ModelSpec:
    return models.resolve_model(model, dims)


def _trained(settings: RunSettings, data, seed: int, operator=None, params=None,
             deadline: float | None = None):
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    x, y, config = data.x_train, data.y_train, settings.config
    if operator is not None and operator.level == "data":
        x, y = operator.apply(x, y, data.n_classes, params, np.random.default_rng(seed),
                              data.task)
    elif operator is not None:
        config = operator.apply(config, params)
    model = models.build_model(_spec(settings.model, data.dims), data.dims, config)
    report = models.fit(model, x, y, data.dims, data.task, config, data.validation, deadline)
    return model, report


def stacked(settings: RunSettings, dataset, config: models.TrainConfig) -> bool:
    """Whether a population trained with ``config`` trains in stacks in this run."""
    if settings.stack == 1:
        return False
    from probmut.train.stack import population_problem

    return population_problem(settings.model, dataset, config) is None


def _healthy_model(settings: RunSettings, dataset, instance: int, deadline=None):
    """Healthy instance ``instance`` retrained as the run trains it, its weights not kept:
    the model and its training report (None when retrained in a stack)."""
    seed = instance_seed(settings.seed, instance, HEALTHY)
    if stacked(settings, dataset, settings.config):
        from probmut.train.stack import stacked_model

        return stacked_model(settings, dataset, instance, HEALTHY), None
    return _trained(settings, dataset, seed, deadline=deadline)


def _mutate_paired(healthy, operator, params, rng, dataset):
    """Apply a model-level operator to a trained healthy model. Returns the mutant, its
    outputs on the test inputs, and how closely it matches the healthy model
    (:data:`probmut.train.flags.MATCHES`): the same predictions on every test input and
    the same weights; else the same predictions on every training input too; else the
    same on the test inputs only; else different. The training inputs are predicted
    only for a mutant the test inputs cannot tell apart."""
    weights, outputs = healthy.get_weights(), models.predict(healthy, dataset.x_test)
    mutant = operator.apply(healthy, params, rng)
    mutant_outputs = models.predict(mutant, dataset.x_test)
    decisions = TASKS[dataset.task].decisions
    if not np.array_equal(decisions(outputs), decisions(mutant_outputs)):
        return mutant, mutant_outputs, flags.DIFFERENT
    mutated = mutant.get_weights()
    if mutant is healthy and all(np.array_equal(a, b) for a, b in zip(weights, mutated,
                                                                       strict=True)):
        return mutant, mutant_outputs, flags.SAME_WEIGHTS
    on_training = decisions(models.predict(mutant, dataset.x_train))
    if mutant is healthy:  # mutated in place: predict with the healthy weights, then restore
        healthy.set_weights(weights)
        before = decisions(models.predict(healthy, dataset.x_train))
        mutant.set_weights(mutated)
    else:
        before = decisions(models.predict(healthy, dataset.x_train))
    same = np.array_equal(before, on_training)
    return mutant, mutant_outputs, flags.SAME_PREDICTIONS if same else flags.SAME_TEST_PREDICTIONS


def train_instance(task: Task, healthy_weights=None, *, dataset) -> InstanceResult:
    """Train instance ``task.instance`` of its population on ``dataset`` and score it.

    Model-level mutants start from healthy instance ``task.instance``: its saved
    ``healthy_weights``, or (if they were not kept) a retraining with the healthy seed,
    which deterministic ops make identical.

    Never raises for a failure of the instance itself: an exception is recorded as
    status ``crashed`` with its one-line text, a stop at ``task.timeout`` as ``timed
    out`` (neither is scored), a loss that diverged (see
    :func:`probmut.io.records.loss_diverged`) or non-finite outputs as ``diverged``.
    """
    start = time.perf_counter()
    deadline = None if task.timeout is None else time.monotonic() + task.timeout
    settings = task.settings
    seed = instance_seed(settings.seed, task.instance, task.population)
    operator = OPERATORS[task.operator] if task.operator else None
    result = functools.partial(InstanceResult, task.population, task.instance, seed)
    report, match = None, None
    try:
        if operator is not None and operator.level == "model":
            if healthy_weights is None:
                healthy, report = _healthy_model(settings, dataset, task.instance, deadline)
            else:
                spec = _spec(settings.model, dataset.dims)
                healthy = models.build_model(spec, dataset.dims, settings.config)
                healthy.set_weights(healthy_weights)
            if report is None or not report.timed_out:
                model, outputs, match = _mutate_paired(
                    healthy, operator, task.params, np.random.default_rng(seed), dataset)
                report = None  # the mutant itself is not trained: no loss of its own
        else:
            model, report = _trained(settings, dataset, seed, operator, task.params, deadline)
            if not report.timed_out:
                outputs = models.predict(model, dataset.x_test)
        if report is not None and report.timed_out:
            return result(math.nan, None, time.perf_counter() - start, status="timed out",
                          error=f"stopped after {task.timeout:g} s (--timeout)",
                          loss_history=report.losses, initial_loss=report.initial_loss)
        scored = models.score_outputs(outputs, dataset.y_test, dataset.task)
    except Exception as error:  # the instance failed, not the run
        losses = () if report is None else report.losses
        return result(math.nan, None, time.perf_counter() - start, status="crashed",
                      error=one_line(error), loss_history=losses)
    seconds = time.perf_counter() - start
    losses = () if report is None else report.losses
    initial = math.nan if report is None else report.initial_loss
    diverged = loss_diverged(initial, losses) or not scored.finite
    return result(
        float(scored.correct.mean()), scored.correct, seconds,
        weights=model.get_weights() if task.keep_weights else None, match=match,
        status="diverged" if diverged else "ok", loss_history=losses, initial_loss=initial,
        constant=scored.constant,
        model_bytes=models.keras_bytes(model) if task.save_model else None)
