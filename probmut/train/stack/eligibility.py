"""Which populations a stack can train, and how many members a stack gets (``--stack auto``).

A population trains stacked when its model is a chain of layers the stacked computation
supports (:func:`stack_problem`: Dense and Conv2D layers, Dropout, and the per-sample
layers of :mod:`probmut.train.layer_traits`), its optimizer updates each weight from
its own gradient and slots, and it has no early stopping; :func:`trains_stacked` asks
it of a run's population. ``--stack auto`` (:func:`choose_stack_size`) trains a model
whose training step is large one instance at a time on a CPU, and otherwise as many
members as fit a memory budget (a fixed one on a CPU, so that the choice, and with it
the results, do not depend on the machine).

Examples
--------
>>> auto_stack_size(member_bytes=10_000_000)
20
>>> auto_stack_size(member_bytes=2 * 2**30)
4
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np

from probmut.train import layer_traits, models
from probmut.train.datasets import n_rows

AUTO_STACK = 20
CPU_BUDGET = 8 * 2**30
#: A member's training step (floating-point operations) above which ``--stack auto``
#: trains one at a time on a CPU: there a step is mostly computation, which the stacked
#: kernels do more slowly than Keras' own (measured with ``scripts/benchmarks/bench_train.py
#: --crossover``: docs/training.md, *Speed*).
CPU_STEP_FLOPS = 100e6
#: Optimizers whose update of a weight reads only that weight, its gradient and its own
#: slots (moments, accumulators): on stacked weights, each member's own optimiser.
ELEMENTWISE_OPTIMIZERS = {"SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "Nadam",
                          "RMSprop", "Ftrl", "Lion"}


def _layer_problem(layer) -> str | None:
    kind = layer_traits.kind(layer)
    if layer_traits.traits_of(kind).per_sample:
        return None
    if getattr(layer, "compute_dtype", "float32") != "float32":
        return f"layer {layer.name} computes in {layer.compute_dtype}"
    if kind == "Dropout":
        if layer.rate >= 1:  # its inverted-dropout scale 1 / (1 - rate) is infinite
            return f"{layer.name} drops every input (rate {layer.rate:g})"
        return None if layer.noise_shape is None else f"{layer.name} has a noise_shape"
    if kind not in ("Dense", "Conv2D"):
        return f"layer {layer.name} ({kind}) cannot be stacked"
    if not layer.trainable:
        return f"layer {layer.name} is frozen"
    for extra in ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                  "kernel_constraint", "bias_constraint"):
        if getattr(layer, extra, None) is not None:
            return f"layer {layer.name} has a {extra.replace('_', ' ')}"
    if kind == "Dense" and (len(layer.input.shape) != 2 or getattr(layer, "lora_enabled", False)):
        return f"Dense layer {layer.name} takes a {len(layer.input.shape)}-D input or has LoRA"
    if kind == "Conv2D" and (layer.groups != 1 or layer.data_format != "channels_last"):
        return f"Conv2D layer {layer.name} is grouped or channels_first"
    return None


def _subclassed_problem(model) -> str | None:
    """Why a subclassed model (a ``keras.Model`` with its own ``call``) trains one instance
    at a time, or None for a Sequential or functional model."""
    from probmut.train.graph import is_nested

    if is_nested(model):
        return None
    return (f"the model is a subclassed keras.Model ({type(model).__name__}): a stack needs "
            "the chain of layers a Sequential or functional model keeps")


def _chain_problem(model) -> str | None:
    """A reason ``model`` is not a single chain of layers, or None."""
    problem = _subclassed_problem(model)
    if problem is not None:
        return problem
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        return "the model has several inputs or outputs"
    layers = [layer for layer in model.layers if not layer_traits.is_input(layer)]
    if not layers or layers[0].input is not model.inputs[0]:
        return "the model is not a chain of layers"
    for before, after in zip(layers[:-1], layers[1:], strict=True):
        if after.input is not before.output:
            return "the model is not a chain of layers (branches or shared layers)"
    if layers[-1].output is not model.outputs[0]:
        return "the model is not a chain of layers"
    return None


def _optimizer_problem(optimizer) -> str | None:
    kind = type(optimizer).__name__
    if kind not in ELEMENTWISE_OPTIMIZERS:
        return f"optimizer {kind} is not one whose update is per weight"
    if optimizer.clipnorm is not None or optimizer.global_clipnorm is not None:
        return "the optimizer clips gradients by norm (a norm over all members)"
    return None


def _loss_problem(loss) -> str | None:
    import keras
    import tensorflow as tf

    try:
        values = keras.losses.get(loss)(tf.fill((2, 3, 4), 0.25), tf.fill((2, 3, 4), 0.25))
    except Exception as error:  # noqa: BLE001 - any failure means: do not stack
        return f"loss {loss!r} cannot be evaluated per sample ({type(error).__name__})"
    if tuple(values.shape) != (2, 3):
        return f"loss {loss!r} does not give one value per sample"
    return None


def stack_problem(model, config: models.TrainConfig) -> str | None:
    """Why a built, compiled ``model`` with ``config`` cannot be trained stacked, or None.

    >>> import keras
    >>> model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3)])
    >>> stack_problem(model, models.TrainConfig(epochs=1, batch_size=8)) is None
    True
    >>> lstm = keras.Sequential([keras.layers.Input((5, 4)), keras.layers.LSTM(3)])
    >>> stack_problem(lstm, models.TrainConfig(epochs=1, batch_size=8))
    'layer lstm (LSTM) cannot be stacked'
    """
    problem = _chain_problem(model)
    if problem is None:
        problem = next(filter(None, map(_layer_problem, model.layers)), None)
    if problem is None:
        problem = _optimizer_problem(models.make_optimizer(config))
    if problem is None and config.patience is not None:
        problem = "early stopping needs Keras' per-epoch validation"
    own = getattr(model, "loss", None)
    if problem is None and own is not None and not isinstance(own, str):
        problem = (f"its loss is the model's own object {models.loss_name(own)!r} (a stack "
                   "computes a loss Keras finds by name)")
    return problem or _loss_problem(config.loss)


_PROBLEMS: dict[str, str | None] = {}


def population_problem(architecture: str, dataset, config: models.TrainConfig) -> str | None:
    """:func:`stack_problem` for the ``architecture`` trained on ``dataset`` with
    ``config`` (cached per process; the model is built in a fresh Keras session, so that
    a message names its layers as the first build does: conv2d, ...)."""
    if dataset.task != "classification":
        return f"stacked training scores classifiers only (this is a {dataset.task} model)"
    key = json.dumps([architecture, dataclasses.asdict(dataset.dims),
                      dataclasses.asdict(config)], default=str)
    if key not in _PROBLEMS:
        import keras

        spec = models.resolve_model(architecture, dataset.dims)
        keras.backend.clear_session(free_memory=False)
        model = models.build_model(spec, dataset.dims, config)
        _PROBLEMS[key] = stack_problem(model, config)
    return _PROBLEMS[key]


def trains_stacked(settings, dataset, config: models.TrainConfig) -> bool:
    """Whether a population of a run (:class:`~probmut.train.work.RunSettings`) trained
    with ``config`` trains in stacks."""
    return settings.stack > 1 and population_problem(settings.architecture, dataset, config) is None


def sample_floats(model) -> int:
    """Floats one sample occupies in a stacked forward pass: every layer's output, plus
    the image patches of each convolution as if computed as a patch matrix (counted
    also where a grouped convolution needs none, so that the stack size does not depend
    on which kernels this TensorFlow has)."""
    total = 0
    for layer in model.layers:
        if layer_traits.is_input(layer):
            continue
        total += int(np.prod(layer.output.shape[1:]))
        if layer_traits.kind(layer) == "Conv2D" and layer.input.shape[-1] > 1:
            total += int(np.prod(layer.output.shape[1:-1])) * int(np.prod(layer.kernel.shape[:-1]))
    return total


def member_bytes(model, batch_size: int, private_data_bytes: int = 0) -> int:
    """Rough memory of one stack member: weights with their gradients and two optimiser
    slots, a batch's activations and patches (x 3: kept for the backward pass, their
    gradients, temporaries), and its own copy of a mutated training set."""
    weights = sum(int(np.prod(w.shape)) for w in model.weights)
    return 4 * (4 * weights + 3 * batch_size * sample_floats(model)) + private_data_bytes


def step_flops(model, batch_size: int) -> int:
    """Estimated floating-point operations of one training step of one instance: six
    per multiply-add of its Dense and Conv2D layers (two forward, four backward) per
    sample, times the batch.

    >>> import keras
    >>> model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3)])
    >>> step_flops(model, batch_size=8)  # 6 x (4 x 3) x 8
    576
    """
    macs = 0
    for layer in model.layers:
        kind = layer_traits.kind(layer)
        if kind in ("Dense", "Conv2D"):
            pixels = int(np.prod(layer.output.shape[1:-1])) if kind == "Conv2D" else 1
            macs += pixels * int(np.prod(layer.kernel.shape))
    return 6 * macs * batch_size


def auto_stack_size(member_bytes: int, budget_bytes: int = CPU_BUDGET) -> int:
    """The stack size ``--stack auto`` picks: :data:`AUTO_STACK` members, fewer if they do
    not fit ``budget_bytes`` at ``member_bytes`` each (a fixed budget on CPU, so the
    choice, and with it the results, do not depend on the machine); at least 2."""
    return int(max(2, min(AUTO_STACK, budget_bytes // max(member_bytes, 1))))


def gpu_budget() -> int | None:
    """Half the memory of the first GPU TensorFlow sees (from ``nvidia-smi``), or None."""
    import shutil
    import subprocess

    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU") or shutil.which("nvidia-smi") is None:
        return None
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=memory.total",
                               "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, check=True).stdout
        return int(text.split()[0]) * 2**20 // 2
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class StackChoice:
    """``--stack auto``'s choice for a model: the stack ``size`` and, when it trains one
    instance at a time, ``why`` (else empty)."""

    size: int
    why: str = ""


def choose_stack_size(model, config: models.TrainConfig, dataset, *, private_data: bool,
                      gpu_bytes: int | None) -> StackChoice:
    """``--stack auto``'s choice for the built ``model`` trained per ``config`` on
    ``dataset``. One instance at a time for a subclassed model; on a CPU (``gpu_bytes``
    None) one instance at a time when a member's training step is larger than
    :data:`CPU_STEP_FLOPS`; else :func:`auto_stack_size` of
    :func:`member_bytes` within the CPU's budget, or within ``gpu_bytes`` (the GPU's
    budget, :func:`gpu_budget`). ``private_data``: each member holds its own (mutated)
    copy of the training inputs (the run has data-level mutations).

    >>> import keras
    >>> small = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(3)])
    >>> data = type("Data", (), {"x_train": np.zeros((10, 4), np.float32)})()
    >>> config = models.TrainConfig(epochs=1, batch_size=8)
    >>> choose_stack_size(small, config, data, private_data=False, gpu_bytes=None)
    StackChoice(size=20, why='')
    """
    subclassed = _subclassed_problem(model)
    if subclassed is not None:
        return StackChoice(1, subclassed)
    batch = n_rows(dataset.x_train) if config.full_batch else config.batch_size
    flops = step_flops(model, batch)
    if gpu_bytes is None and flops > CPU_STEP_FLOPS:
        return StackChoice(1, f"a training step of this model costs about {flops / 1e6:,.0f} "
                              f"MFLOP per instance, and above {CPU_STEP_FLOPS / 1e6:.0f} MFLOP "
                              "stacking is slower on a CPU")
    inputs = dataset.x_train if isinstance(dataset.x_train, tuple) else (dataset.x_train,)
    private = sum(x.nbytes for x in inputs) if private_data else 0
    size = member_bytes(model, batch, private)
    return StackChoice(auto_stack_size(size) if gpu_bytes is None
                       else auto_stack_size(size, gpu_bytes))

