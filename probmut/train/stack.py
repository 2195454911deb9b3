"""Train several instances of one population at once, as one stacked computation.

A *stack* of K members is one TensorFlow computation whose every weight carries a
leading member axis: a Dense kernel of shape ``(in, out)`` becomes ``(K, in, out)``.
Members share no weights and see their own data; per member the computation is the
one Keras does when it trains that instance alone:

* initial weights: member k's model is built exactly as for training it alone
  (``clear_session``, ``set_random_seed(seed_k)``, build) and its weights are copied
  into slot k, so its start is bit-identical to the solo start;
* data: member k trains on its own (possibly mutated) training set, in its own order
  (a fresh permutation per epoch from its own seed), in batches of ``batch_size`` with
  a smaller last batch, as ``model.fit(shuffle=True)`` does;
* layers: a Dense layer is a batched matrix product ``(K, B, in) @ (K, in, out)``; a
  Conv2D layer is one grouped convolution whose group k is member k (the members'
  channels side by side), where TensorFlow trains one (oneDNN's CPU kernels, cuDNN),
  else a depthwise convolution when it has one input channel and otherwise an
  image-patch matrix (``extract_patches``) times the member's kernel, each exactly a
  convolution; weightless per-sample layers (pooling, flatten, activations, ...) run
  on the K x B samples at once; Dropout draws each member's masks from its own seed;
* loss: the sum over members of each member's mean loss over its batch, so the
  gradient with respect to member k's weights is its solo gradient;
* optimiser: Keras' own optimizer object over the stacked weights. The supported
  optimizers update every weight from that weight's own gradient and state only, so
  each member has its own optimiser state and takes its solo step.

A member's result depends on its seed and on the stack size: the batched kernels add
in an order that depends on how many members share them, and training amplifies those
last-bit differences like any change of seed. The same command (same seed, same stack
size) gives the same bits, whatever ``--jobs``. What is not bit-identical to ``model.fit``: the data order and dropout masks come from other
random streams (same distribution), and the floating-point summation order of the
batched kernels differs from Keras' solo kernels (differences of the order of float
rounding, which training amplifies like any change of seed). The population's
statistics therefore match, which ``scripts/bench_train.py`` measures.

Examples
--------
>>> auto_stack_size(member_bytes=10_000_000)
20
>>> auto_stack_size(member_bytes=2 * 2**30)
4
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math

import numpy as np

from probmut.train import models
from probmut.train.operators import OPERATORS
from probmut.train.tasks import TASKS

AUTO_STACK = 20
CPU_BUDGET = 8 * 2**30
# A member's training step (floating-point operations) above which ``--stack auto``
# trains one at a time on a CPU: there a step is mostly computation, which the
# stacked kernels do more slowly than Keras' own. Per instance-step, one thread, two
# runs of ``scripts/bench_train.py --crossover`` with oneDNN's kernels: digits_cnn at
# batch 32 (22 MFLOP) stacked 2.08x / 2.14x as fast as alone, batch 128 (89 MFLOP)
# 2.01x / 1.62x, batch 256 (179 MFLOP) 0.87x / 0.86x, deepcrime_mnist at batch 16
# (1.2 GFLOP) 0.74x / 0.59x. With grouped convolutions (another machine, AMD EPYC with
# AVX-512, two runs) the stacked step is faster at 89 MFLOP and above (stacked ms per
# instance-step 1.21 / 1.20 against 1.83 with patch matrices at 89, 2.41 / 2.52 against
# 3.57 at 179, 14.5 / 13.9 against 20.6 for deepcrime_mnist): the crossover moves up,
# but patch matrices remain where TensorFlow cannot train a grouped convolution, so
# the threshold stays where both ways win.
CPU_STEP_FLOPS = 100e6
# Optimizers whose update of a weight reads only that weight, its gradient and its
# own slots (moments, accumulators): on stacked weights, each member's own optimiser.
ELEMENTWISE_OPTIMIZERS = {"SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "Nadam",
                          "RMSprop", "Ftrl", "Lion"}
# Layers without weights or randomness that compute each sample on its own: they run
# on all K x B samples of a stack at once, unchanged.
PER_SAMPLE_LAYERS = {
    "InputLayer", "Flatten", "Reshape", "Permute", "Activation", "ReLU", "LeakyReLU", "ELU",
    "Softmax", "Identity", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D",
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "GlobalAveragePooling1D",
    "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "ZeroPadding2D",
    "Cropping2D", "UpSampling2D"}
# Per-sample layers that also compute each channel on its own, in the channels-last
# image layout: between grouped convolutions they run on the members' channels side by
# side, (B, H, W, K * C), unchanged (see StackedModel.__call__).
# (Activation only with an elementwise function: :data:`ELEMENTWISE_ACTIVATIONS`.)
CHANNELWISE_LAYERS = {"Activation", "ReLU", "LeakyReLU", "ELU", "Identity", "MaxPooling2D",
                      "AveragePooling2D", "ZeroPadding2D", "Cropping2D", "UpSampling2D"}
# Keras' activation functions (by their __name__) that compute each value on its own
# (not softmax, log_softmax, sparsemax or glu, which combine the channels).
ELEMENTWISE_ACTIVATIONS = {"linear", "relu", "relu6", "leaky_relu", "elu", "selu", "celu",
                           "gelu", "silu", "mish", "sigmoid", "hard_sigmoid", "hard_silu",
                           "sparse_sigmoid", "tanh", "hard_tanh", "tanh_shrink", "softplus",
                           "sparse_plus", "squareplus", "softsign", "soft_shrink",
                           "hard_shrink", "threshold", "exponential"}


# ---------------------------------------------------------------- what can be stacked

def _layer_problem(layer) -> str | None:
    kind = type(layer).__name__
    if kind in PER_SAMPLE_LAYERS:
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


def _chain_problem(model) -> str | None:
    """A reason ``model`` is not a single chain of layers, or None."""
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        return "the model has several inputs or outputs"
    layers = [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]
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
    return problem or _loss_problem(config.loss)


_PROBLEMS: dict[str, str | None] = {}


def population_problem(model_name: str, dataset, config: models.TrainConfig) -> str | None:
    """:func:`stack_problem` for the model ``model_name`` trained on ``dataset`` with
    ``config`` (cached per process)."""
    if dataset.task != "classification":
        return f"stacked training scores classifiers only (this is a {dataset.task} model)"
    key = json.dumps([model_name, dataclasses.asdict(dataset.dims),
                      dataclasses.asdict(config)], default=str)
    if key not in _PROBLEMS:
        spec = models.resolve_model(model_name, dataset.dims)
        model = models.build_model(spec, dataset.dims, config)
        _PROBLEMS[key] = stack_problem(model, config)
    return _PROBLEMS[key]


def sample_floats(model) -> int:
    """Floats one sample occupies in a stacked forward pass: every layer's output, plus
    the image patches of each convolution as if computed as a patch matrix (counted
    also where a grouped convolution needs none, so that the stack size does not depend
    on which kernels this TensorFlow has)."""
    total = 0
    for layer in model.layers:
        if type(layer).__name__ == "InputLayer":
            continue
        total += int(np.prod(layer.output.shape[1:]))
        if type(layer).__name__ == "Conv2D" and layer.input.shape[-1] > 1:
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
        kind = type(layer).__name__
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


# ---------------------------------------------------------------- the stacked model

class StackedModel:
    """K members of one Keras model (a chain of supported layers) as one computation.

    ``models_`` are the members' built solo models; their current weights become the
    members' initial weights.
    """

    def __init__(self, models_: list, seeds: list[int]):
        import tensorflow as tf

        self.template = models_[0]
        self.size = len(models_)
        self.seeds = tf.constant(np.asarray(seeds, dtype=np.int64))
        self.layers = [layer for layer in self.template.layers
                       if type(layer).__name__ != "InputLayer"]
        self.variables = []  # one per solo weight, in get_weights() order
        self.layer_weights = []  # per layer: its stacked variables
        for index, layer in enumerate(self.template.layers):
            stacked = [tf.Variable(np.stack([m.layers[index].get_weights()[w] for m in models_]),
                                   name=f"{layer.name}_{w}")
                       for w in range(len(layer.get_weights()))]
            if type(layer).__name__ != "InputLayer":
                self.layer_weights.append(stacked)
            self.variables += stacked

    def member_weights(self, member: int) -> list[np.ndarray]:
        """Member ``member``'s weights, in the solo model's ``get_weights()`` order."""
        return [v[member].numpy() for v in self.variables]

    def __call__(self, x, training: bool, step=None):
        """Forward pass of ``x`` of shape (K, B, ...) to outputs of shape (K, B, ...).

        After a grouped convolution the members' channels stay side by side, (B, H, W,
        K * C), through elementwise activations and :data:`CHANNELWISE_LAYERS` into the
        next convolution: the same values, without a transpose to the member axis and
        back at each layer (a stacked digits_cnn run trains about 9% faster)."""
        side_by_side = False  # x is (B, H, W, K * C) instead of (K, B, ...)
        for position, (layer, weights) in enumerate(zip(self.layers, self.layer_weights,
                                                              strict=True)):
            kind = type(layer).__name__
            if kind == "Conv2D" and grouped_convolution_trains():
                bias = weights[1] if layer.use_bias else None
                y = _grouped_conv2d(x if side_by_side else _channels_from_members(x),
                                    weights[0], bias, layer)
                side_by_side = _elementwise(layer.activation)
                x = layer.activation(y if side_by_side else _members_from_channels(y, self.size))
                continue
            if side_by_side and kind in CHANNELWISE_LAYERS and _channels_last(layer) and (
                    kind != "Activation" or _elementwise(layer.activation)):
                x = layer(x)
                continue
            if side_by_side:
                x, side_by_side = _members_from_channels(x, self.size), False
            if kind == "Dense":
                x = layer.activation(_dense(x, weights[0], weights[1] if layer.use_bias
                                            else None, layer.use_bias))
            elif kind == "Conv2D":
                x = layer.activation(_conv2d(x, weights[0], weights[1] if layer.use_bias
                                             else None, layer))
            elif kind == "Dropout":
                if training and layer.rate > 0:
                    x = self._dropout(x, layer.rate, step, position)
            else:
                x = _per_sample(layer, x)
        return _members_from_channels(x, self.size) if side_by_side else x

    def _dropout(self, x, rate, step, position):
        """Keras' inverted dropout with member k's mask drawn from its own seed, the step
        and the layer: a mask never depends on the other members."""
        import tensorflow as tf

        counter = tf.cast(step, tf.int64) * 1000 + position
        masks = [tf.random.stateless_uniform(tf.shape(x)[1:], tf.stack([self.seeds[k], counter]))
                 >= rate for k in range(self.size)]
        return tf.where(tf.stack(masks), x / (1.0 - rate), tf.zeros_like(x))


def _dense(x, kernel, bias=None, use_bias=True):
    import tensorflow as tf

    y = tf.matmul(x, kernel)  # (K, B, in) @ (K, in, out): each member its own product
    return y + bias[:, None, :] if use_bias else y


def _merge(x):
    """(K, B, ...) -> (K * B, ...): per-sample ops see one big batch."""
    import tensorflow as tf

    return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0))


def _unmerge(x, size):
    import tensorflow as tf

    return tf.reshape(x, tf.concat([[size, -1], tf.shape(x)[1:]], axis=0))


def _per_sample(layer, x):
    return _unmerge(layer(_merge(x)), x.shape[0])


def _members_from_channels(y, size):
    """(B, H, W, K * O), member-major channels -> (K, B, H, W, O)."""
    import tensorflow as tf

    shape = tf.shape(y)
    return tf.transpose(tf.reshape(y, [shape[0], shape[1], shape[2], size, -1]),
                        [3, 0, 1, 2, 4])


def _channels_from_members(x):
    """(K, B, H, W, C) -> (B, H, W, K * C), member-major channels (the inverse of
    :func:`_members_from_channels`)."""
    import tensorflow as tf

    shape = tf.shape(x)
    return tf.reshape(tf.transpose(x, [1, 2, 3, 0, 4]), [shape[1], shape[2], shape[3], -1])


def _elementwise(activation) -> bool:
    """Whether a Keras activation function computes each value on its own (so that it
    can run on members side by side on the channel axis; softmax, for one, cannot)."""
    return getattr(activation, "__name__", None) in ELEMENTWISE_ACTIVATIONS


def _channels_last(layer) -> bool:
    return getattr(layer, "data_format", "channels_last") == "channels_last"


@functools.cache
def grouped_convolution_trains() -> bool:
    """Whether this TensorFlow trains a grouped convolution (an input of G x C channels,
    a kernel of C input channels): oneDNN's CPU kernels and cuDNN do; TensorFlow's own
    CPU kernels compute its forward pass but refuse its gradient."""
    import tensorflow as tf

    images, kernel, strides = [1, 3, 3, 2], [3, 3, 1, 2], [1, 1, 1, 1]

    @tf.function  # as a training step runs it: a graph
    def gradient():  # its two kernels, called directly (see below); returned, so kept
        return (tf.raw_ops.Conv2DBackpropInput(input_sizes=images, filter=tf.ones(kernel),
                                               out_backprop=tf.ones(images), strides=strides,
                                               padding="SAME"),
                tf.raw_ops.Conv2DBackpropFilter(input=tf.ones(images), filter_sizes=kernel,
                                                out_backprop=tf.ones(images), strides=strides,
                                                padding="SAME"))

    # init_scope: run now, also when first asked while a step is being traced (a
    # gradient tape records nothing there, hence the kernels called directly)
    with tf.init_scope():
        try:
            gradient()
        except tf.errors.OpError:
            return False
    return True


def _grouped_conv2d(images, kernel, bias, layer):
    """Member k's 2-D convolution as group k of one grouped convolution, where TensorFlow
    trains one (:func:`grouped_convolution_trains`): ``images`` (B, H, W, K * C) and the
    result (B, H', W', K * O) hold the members side by side on the channel axis,
    member-major; ``kernel`` is (K, h, w, C, O), ``bias`` (K, O) or None."""
    import tensorflow as tf

    size, (kh, kw), channels, filters = kernel.shape[0], layer.kernel_size, *kernel.shape[3:]
    filt = tf.reshape(tf.transpose(kernel, [1, 2, 3, 0, 4]), [kh, kw, channels, size * filters])
    y = tf.nn.conv2d(images, filt, [1, *layer.strides, 1], layer.padding.upper(),
                     dilations=[1, *layer.dilation_rate, 1])
    return y if bias is None else y + tf.reshape(bias, [size * filters])


def _conv2d(x, kernel, bias, layer):
    """Member k's 2-D convolution of x[k] (K, B, H, W, C) with kernel[k] (K, h, w, C, O),
    where TensorFlow cannot train a grouped convolution (:func:`_grouped_conv2d`): a
    depthwise convolution for one input channel, an image-patch matrix times each
    member's kernel otherwise."""
    import tensorflow as tf

    size, channels, filters = x.shape[0], x.shape[-1], kernel.shape[-1]
    (kh, kw), strides = layer.kernel_size, [1, *layer.strides, 1]
    rates, padding = [1, *layer.dilation_rate, 1], layer.padding.upper()
    if channels == 1 and tuple(layer.dilation_rate) == (1, 1):
        # one input channel: member k is channel k of a depthwise convolution
        images = tf.transpose(x[..., 0], [1, 2, 3, 0])  # (B, H, W, K)
        filt = tf.transpose(kernel[:, :, :, 0, :], [1, 2, 0, 3])  # (h, w, K, O)
        y = _members_from_channels(tf.nn.depthwise_conv2d(images, filt, strides, padding),
                                   size)
    else:
        patches = tf.image.extract_patches(_merge(x), [1, kh, kw, 1], strides, rates, padding)
        shape = tf.shape(patches)  # (K * B, H', W', h * w * C), ordered (h, w, C)
        rows = tf.reshape(patches, [size, -1, kh * kw * channels])
        y = tf.matmul(rows, tf.reshape(kernel, [size, kh * kw * channels, filters]))
        y = tf.reshape(y, [size, -1, shape[1], shape[2], filters])
    return y + bias[:, None, None, None, :] if layer.use_bias else y


# ---------------------------------------------------------------- training a stack

def _member_models(spec, data, config, seeds):
    import gc

    import keras

    built = []
    for seed in seeds:  # exactly the solo start: models.fit would begin from these weights
        # a fresh session without its garbage collection (three quarters of a build's
        # time): the weights depend on the seed and the session's state, not on memory
        keras.backend.clear_session(free_memory=False)
        keras.utils.set_random_seed(seed)
        built.append(models.build_model(spec, data.dims, config))
    gc.collect()
    return built


def data_order(seed: int, n: int, epochs: int) -> np.ndarray:
    """Member ``seed``'s training order: one permutation of ``n`` samples per epoch.

    >>> data_order(7, 5, 2).shape
    (2, 5)
    """
    rng = np.random.default_rng([seed, 1])  # a stream apart from the mutation's draws
    return np.stack([rng.permutation(n) for _ in range(epochs)])


def _fused_adam(optimizer, variables):
    """For a plain Keras Adam (no AMSGrad, weight decay, moving average, clipping, loss
    scaling, accumulation or schedule), its update of ``variables`` as TensorFlow's fused
    Adam kernel: one pass over each weight and its two moments instead of Keras' ten
    elementwise operations, which on a stack's weights cost a fifth of a digits_cnn step.
    The same update as Keras' (epsilon outside the square root, the step's bias
    corrections in the learning rate), equal up to float rounding; Keras' own slots and
    step counter are the state. None for any other optimizer."""
    import keras
    import tensorflow as tf

    schedule = keras.optimizers.schedules.LearningRateSchedule
    if not (type(optimizer) is keras.optimizers.Adam and not optimizer.amsgrad
            and optimizer.weight_decay is None and not optimizer.use_ema
            and optimizer.clipnorm is None and optimizer.clipvalue is None
            and optimizer.global_clipnorm is None and optimizer.loss_scale_factor is None
            and not optimizer.gradient_accumulation_steps
            and not isinstance(optimizer._learning_rate, schedule)):
        return None
    slots = [(optimizer._momentums[optimizer._get_variable_index(v)],
              optimizer._velocities[optimizer._get_variable_index(v)]) for v in variables]
    beta_1, beta_2, epsilon = (tf.constant(value, tf.float32) for value in
                               (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon))

    def update(gradients):
        step = tf.cast(optimizer.iterations + 1, tf.float32)
        rate = tf.cast(optimizer.learning_rate, tf.float32)
        powers = {"beta1_power": beta_1 ** step, "beta2_power": beta_2 ** step}  # once a step
        for variable, (m, v), gradient in zip(variables, slots, gradients, strict=True):
            tf.raw_ops.ResourceApplyAdam(var=variable.handle, m=m.handle, v=v.handle, lr=rate,
                                         beta1=beta_1, beta2=beta_2, epsilon=epsilon,
                                         grad=gradient, **powers)
        optimizer.iterations.assign_add(1)

    return update


def fit_stack(stack: StackedModel, xs: list, ys: list, n_classes: int,
              config: models.TrainConfig, orders: list[np.ndarray]):
    """Train ``stack`` in place: member k on ``(xs[k], ys[k])`` in the order ``orders[k]``
    (epochs x n). All members have the same number of samples. Returns the members'
    mean training loss per epoch, shape (K, epochs), and each member's loss on its first
    batch, before any update (its untrained loss, as :func:`probmut.train.models.fit`
    reports it), shape (K,)."""
    import keras
    import tensorflow as tf

    size, n = stack.size, len(ys[0])
    distinct = {}  # members sharing one input array (healthy, label mutants) share it
    for x in xs:
        distinct.setdefault(id(x), (len(distinct), x))
    starts = np.cumsum([0] + [len(x) for _, x in distinct.values()])
    x_offsets = np.array([starts[distinct[id(x)][0]] for x in xs])[:, None]
    x_pool = tf.constant(np.concatenate([x for _, x in distinct.values()]))
    targets = TASKS["classification"].targets
    y_pool = tf.constant(np.concatenate([targets(y, n_classes, config.loss) for y in ys]))
    y_offsets = (np.arange(size) * n)[:, None]
    loss_fn = keras.losses.get(config.loss)
    optimizer = models.make_optimizer(config)
    variables = stack.variables
    optimizer.build(variables)
    update = _fused_adam(optimizer, variables) or functools.partial(optimizer.apply,
                                                                    trainable_variables=variables)
    rows_spec = tf.TensorSpec([size, None], tf.int64)  # one trace for every batch size

    @tf.function(input_signature=[rows_spec, rows_spec, tf.TensorSpec([], tf.int64)])
    def step(x_rows, y_rows, number):
        x, y = tf.gather(x_pool, x_rows), tf.gather(y_pool, y_rows)
        with tf.GradientTape() as tape:
            per_member = tf.reduce_mean(loss_fn(y, stack(x, True, number)), axis=1)
            total = tf.reduce_sum(per_member)  # d total / d member k = its own mean loss
        update(tape.gradient(total, variables))
        return per_member

    history = np.zeros((size, config.epochs))
    initial = np.full(size, np.nan)
    number = 0
    for epoch in range(config.epochs):
        order = np.stack([o[epoch] for o in orders])
        sums, batches = np.zeros(size), 0
        batch = n if config.full_batch else config.batch_size
        for start in range(0, n, batch):
            rows = order[:, start:start + batch]
            losses = step(tf.constant(rows + x_offsets), tf.constant(rows + y_offsets),
                          tf.constant(number, tf.int64)).numpy()
            if number == 0:
                initial = losses.astype(np.float64)
            sums += losses
            batches, number = batches + 1, number + 1
        history[:, epoch] = sums / batches
    return history, initial


def predict_classes(stack: StackedModel, x_test) -> np.ndarray:
    """(K, n_test): each member's predicted class for each test input.

    Inputs go through in chunks of at most 256 MiB of activations for the whole stack."""
    import tensorflow as tf

    batch = int(np.clip(2**26 // (stack.size * sample_floats(stack.template)), 1, 1024))
    predicted = []
    for start in range(0, len(x_test), batch):
        chunk = tf.constant(x_test[start:start + batch])
        x = tf.broadcast_to(chunk[None], [stack.size, *chunk.shape])
        predicted.append(tf.argmax(stack(x, False), axis=-1).numpy())
    return np.concatenate(predicted, axis=1)


def member_data(tasks: list, dataset) -> tuple[list, list]:
    """Each task's training set: the dataset's, or the data mutation drawn with the
    instance's own seed (exactly the set it gets when trained alone)."""
    from probmut.train.instance import instance_seed

    xs, ys = [], []
    for task in tasks:
        x, y = dataset.x_train, dataset.y_train
        operator = OPERATORS[task.operator] if task.operator else None
        if operator is not None and operator.level == "data":
            seed = instance_seed(task.settings.seed, task.instance, task.population)
            x, y = operator.apply(x, y, dataset.n_classes, task.params,
                                  np.random.default_rng(seed), dataset.task)
        xs.append(x)
        ys.append(y)
    return xs, ys


def train_stack(tasks: list, *, dataset) -> list:
    """Train the instances ``tasks`` (one population, not model-level) as one stack and
    score them; one :class:`~probmut.train.instance.InstanceResult` per task, in order,
    with each member's symptom record (its losses; ``diverged`` by the rule of
    :func:`probmut.io.records.loss_diverged`; constant predictions) and, if its task asks,
    its weights and its model as ``.keras`` bytes. A member's ``seconds`` is NaN (unknown):
    the stack's wall time is shared, not any one instance's training time, and a share
    of it would make populations look faster or slower than they train alone."""
    import keras

    from probmut.io.records import loss_diverged
    from probmut.train.instance import InstanceResult, instance_seed

    settings = tasks[0].settings
    operator = OPERATORS[tasks[0].operator] if tasks[0].operator else None
    config = settings.config
    if operator is not None and operator.level == "training":
        config = operator.apply(config, tasks[0].params)
    seeds = [instance_seed(settings.seed, t.instance, t.population) for t in tasks]
    xs, ys = member_data(tasks, dataset)
    spec = models.resolve_model(settings.model, dataset.dims)
    results = [None] * len(tasks)
    by_size = {}  # a stack trains members with equally many samples together
    for k, y in enumerate(ys):
        by_size.setdefault(len(y), []).append(k)
    for members in by_size.values():
        member_seeds = [seeds[k] for k in members]
        stack = StackedModel(_member_models(spec, dataset, config, member_seeds), member_seeds)
        orders = [data_order(s, len(ys[members[0]]), config.epochs) for s in member_seeds]
        history, initial = fit_stack(stack, [xs[k] for k in members], [ys[k] for k in members],
                                     dataset.n_classes, config, orders)
        predicted = predict_classes(stack, dataset.x_test)
        for j, k in enumerate(members):
            losses = tuple(float(v) for v in history[j])
            keep = tasks[k].keep_weights or tasks[k].save_model
            weights = stack.member_weights(j) if keep else None
            model_bytes = None
            if tasks[k].save_model:  # a solo model with the member's weights, its layers
                keras.backend.clear_session(free_memory=False)  # named as if built alone
                solo = models.build_model(spec, dataset.dims, config)
                solo.set_weights(weights)
                model_bytes = models.keras_bytes(solo)
            results[k] = dict(
                correct=predicted[j] == dataset.y_test, loss_history=losses,
                initial_loss=float(initial[j]),
                status="diverged" if loss_diverged(float(initial[j]), losses) else "ok",
                constant=bool(np.all(predicted[j] == predicted[j][0])),
                weights=weights if tasks[k].keep_weights else None, model_bytes=model_bytes)
    return [InstanceResult(population=t.population, instance=t.instance, seed=seed,
                           accuracy=float(r["correct"].mean()), seconds=math.nan, **r)
            for t, seed, r in zip(tasks, seeds, results, strict=True)]


def stacked_model(settings, dataset, instance: int, population: str):
    """Solo Keras model holding the weights ``instance`` of ``population`` gets when
    trained in a stack (for model-level mutants whose healthy weights were not kept)."""
    from probmut.train.instance import Task

    spec = models.resolve_model(settings.model, dataset.dims)
    result = train_stack([Task(settings, population, instance, keep_weights=True)],
                         dataset=dataset)[0]
    model = models.build_model(spec, dataset.dims, settings.config)
    model.set_weights(result.weights)
    return model
