"""Tiny user models of every kind of Keras layer and model (issue 55's matrix), for 8 x 8
images of the bundled digits: a nested Sequential inside a functional model, a layer
shared by two calls, Conv-BatchNorm-ReLU branches joined by a Concatenate, a custom
layer written the Keras guide's way (``self.w``, ``self.b``) with a custom activation
function and loss, a subclassed ``keras.Model``, a GRU over the image's rows, an LSTM, a
custom layer whose weights are ``[kernel, gate, bias]``, a Conv2DTranspose, a
DepthwiseConv2D, regularised layers, and a nested model without ``keras.Input``. Each is a
``module:function`` model, ``(input_shape, n_classes) -> keras.Model``, of at most a few
thousand weights. Keras is imported by the functions only, so that collecting the tests
does not start TensorFlow (conftest.py sizes its threads first); the custom layer classes
are made once, as a user's module makes them."""

import functools


def nested_sequential(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.Dense(6, activation="relu")(layers.Flatten()(x))
    block = keras.Sequential([keras.Input((6,)), layers.Dense(6, activation="tanh"),
                              layers.Dense(6, activation="relu")], name="block")
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(block(h)))


def shared(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.Dense(6, activation="relu")(layers.Flatten()(x))
    twice = layers.Dense(6, activation="tanh", name="twice")  # called on h, and on h dropped
    joined = layers.Concatenate()([twice(h), twice(layers.Dropout(0.1)(h))])
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(joined))


def conv_bn_branches(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    branches = []
    for name in ("a", "b"):
        h = layers.Conv2D(3, 3, padding="same", name=f"{name}1_conv")(x)
        h = layers.BatchNormalization(name=f"{name}1_bn")(h)
        branches.append(layers.ReLU(name=f"{name}1_relu")(h))
    h = layers.Flatten()(layers.MaxPooling2D(2)(layers.Concatenate()(branches)))
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(h))


def scaled_tanh(x):
    """A custom activation function (Keras stores its name, not a config)."""
    import keras

    return 1.7159 * keras.ops.tanh(2 * x / 3)


def smoothed(y_true, y_pred):
    """A custom loss function."""
    import keras

    return keras.losses.categorical_crossentropy(y_true, y_pred, label_smoothing=0.1)


@functools.cache
def _linear_class():
    import keras

    class Linear(keras.layers.Layer):
        """The Keras guide's custom layer: ``y = x w + b``, weights ``self.w``, ``self.b``."""

        def __init__(self, units=8, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                     initializer="random_normal", trainable=True)
            self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return keras.ops.matmul(inputs, self.w) + self.b

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    return Linear


def custom(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = _linear_class()(8, name="linear")(layers.Flatten()(x))
    h = layers.Dense(6, activation=scaled_tanh)(layers.Activation(scaled_tanh)(h))
    model = keras.Model(x, layers.Dense(n_classes, activation="softmax")(h))
    model.compile(optimizer="adam", loss=smoothed)
    return model


def subclassed(input_shape, n_classes):
    import keras
    from keras import layers

    class Small(keras.Model):
        def __init__(self):
            super().__init__()
            self.flatten = layers.Flatten()
            self.hidden = layers.Dense(8, activation="relu")
            self.out = layers.Dense(n_classes, activation="softmax")

        def call(self, inputs):
            return self.out(self.hidden(self.flatten(inputs)))

    return Small()


def gru_rows(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.GRU(6)(layers.Reshape(input_shape[:2])(x))  # each row of the image a step
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(h))


def lstm(input_shape, n_classes):
    import keras
    from keras import layers

    return keras.Sequential([keras.Input(input_shape), layers.Reshape(input_shape[:2]),
                             layers.LSTM(5), layers.Dense(n_classes, activation="softmax")])


@functools.cache
def _gated_class():
    import keras

    class Gated(keras.layers.Layer):
        """``y = (x kernel) * sigmoid(gate) + bias``: weights ``[kernel, gate, bias]``, so
        the second weight is not the bias."""

        def __init__(self, units=6, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
            self.gate = self.add_weight(shape=(self.units,), initializer="ones", name="gate")
            self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias")

        def call(self, inputs):
            return keras.ops.matmul(inputs, self.kernel) * keras.ops.sigmoid(self.gate) \
                + self.bias

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    return Gated


def gated(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.Activation("relu")(_gated_class()(6, name="gated")(layers.Flatten()(x)))
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(h))


def transposed(input_shape, n_classes):
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input(input_shape), layers.Conv2D(4, 3, strides=2, activation="relu"),
        layers.Conv2DTranspose(3, 3, strides=2, activation="relu"), layers.Flatten(),
        layers.Dense(n_classes, activation="softmax")])


def depthwise(input_shape, n_classes):
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input(input_shape), layers.Conv2D(3, 3, activation="relu"),
        layers.DepthwiseConv2D(3, depth_multiplier=2, activation="relu"),
        layers.MaxPooling2D(2), layers.Flatten(),
        layers.Dense(n_classes, activation="softmax")])


def regularised(input_shape, n_classes):
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input(input_shape), layers.Flatten(),
        layers.Dense(8, activation="relu", kernel_regularizer="l2", bias_regularizer="l1"),
        layers.Dense(8, activation="tanh", kernel_regularizer=keras.regularizers.L1L2(0.01, 0.01)),
        layers.Dense(n_classes, activation="softmax", activity_regularizer="l2")])


def nested_without_input(input_shape, n_classes):
    import keras
    from keras import layers

    block = keras.Sequential([layers.Dense(6, activation="relu"),
                              layers.Dense(6, activation="tanh")], name="block")
    x = keras.Input(input_shape)
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(
        block(layers.Flatten()(x))))


#: Every kind, by the name of its function.
KINDS = ("nested_sequential", "shared", "conv_bn_branches", "custom", "subclassed", "gru_rows",
         "lstm", "gated", "transposed", "depthwise", "regularised", "nested_without_input")
