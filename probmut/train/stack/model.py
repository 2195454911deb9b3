"""The stacked computation: K members of one Keras model as one TensorFlow computation
whose every weight carries a leading member axis (see :mod:`probmut.train.stack`).

Each layer kind computes exactly what the member's own layer computes: a Dense layer is a
batched matrix product; a Conv2D layer one grouped convolution of the members' channels
side by side where TensorFlow trains one (:func:`grouped_convolution_trains`), else a
depthwise convolution (one input channel) or an image-patch matrix times each member's
kernel; per-sample layers run on all members' samples at once; Dropout draws each
member's masks from its own seed.
"""

from __future__ import annotations

import functools

import numpy as np

from probmut.train import layer_traits


class StackedModel:
    """K members of one Keras model (a chain of supported layers) as one computation.

    ``template`` is one member's built solo model (its layers define the computation);
    ``weights`` holds each member's initial weights in the solo model's
    ``get_weights()`` order.
    """

    def __init__(self, template, weights: list[list[np.ndarray]], seeds: list[int]):
        import tensorflow as tf

        self.template = template
        self.size = len(weights)
        self.seeds = tf.Variable(np.asarray(seeds, dtype=np.int64), trainable=False)
        self.layers = [layer for layer in template.layers if not layer_traits.is_input(layer)]
        self.variables = []  # one per solo weight, in get_weights() order
        self.layer_weights = []  # per layer: its stacked variables
        for layer in template.layers:
            first = len(self.variables)
            stacked = [tf.Variable(np.stack([member[first + w] for member in weights]),
                                   name=f"{layer.name}_{w}")
                       for w in range(len(layer.weights))]
            if not layer_traits.is_input(layer):
                self.layer_weights.append(stacked)
            self.variables += stacked
        #: traced training steps by configuration (:func:`probmut.train.stack.fit_stack`)
        self.steps = {}

    def restart(self, weights: list[list[np.ndarray]], seeds: list[int]) -> None:
        """Make this the stack of other members of the same model: their initial weights
        and seeds (as many members as before), keeping the traced training steps."""
        if len(weights) != self.size:
            raise ValueError(f"a stack of {self.size} cannot restart with {len(weights)}")
        self.seeds.assign(np.asarray(seeds, dtype=np.int64))
        for w, variable in enumerate(self.variables):
            variable.assign(np.stack([member[w] for member in weights]))

    def member_weights(self, member: int) -> list[np.ndarray]:
        """Member ``member``'s weights, in the solo model's ``get_weights()`` order."""
        return [v[member].numpy() for v in self.variables]

    def __call__(self, x, training: bool, step=None):
        """Forward pass of ``x`` of shape (K, B, ...) to outputs of shape (K, B, ...).

        After a grouped convolution the members' channels stay side by side, (B, H, W,
        K * C), through elementwise activations and channelwise layers
        (:attr:`probmut.train.layer_traits.Traits.channelwise`) into the next
        convolution: the same values, without a transpose to the member axis and back at
        each layer."""
        side_by_side = False  # x is (B, H, W, K * C) instead of (K, B, ...)
        for position, (layer, weights) in enumerate(zip(self.layers, self.layer_weights,
                                                              strict=True)):
            kind = layer_traits.kind(layer)
            if kind == "Conv2D" and grouped_convolution_trains():
                bias = weights[1] if layer.use_bias else None
                y = _grouped_conv2d(x if side_by_side else _channels_from_members(x),
                                    weights[0], bias, layer)
                side_by_side = layer_traits.elementwise(layer.activation)
                x = layer.activation(y if side_by_side else _members_from_channels(y, self.size))
                continue
            channelwise = layer_traits.traits_of(kind).channelwise and _channels_last(layer) and (
                kind != "Activation" or layer_traits.elementwise(layer.activation))
            if side_by_side and channelwise:
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
