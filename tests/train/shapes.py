"""Tiny user models of the shapes a user's Keras model takes (issue 42's matrix): a
Sequential chain, a two-input functional model joined by a Concatenate, a residual
block (an Add, and a layer shared by two calls), a nested sub-model, and a model
compiled with a loss function Keras cannot find by name. Each is a ``module:function``
model, ``(input_shape, n_classes) -> keras.Model``, of a few hundred weights; the data
they train on is made by :func:`dataset`. Keras is imported by the functions only, so
that collecting the tests does not start TensorFlow (conftest.py sizes its threads
first)."""

import numpy as np

from probmut.train.datasets.dataset import Dataset


def chain(input_shape, n_classes):
    import keras
    from keras import layers

    return keras.Sequential([
        keras.Input(input_shape), layers.Conv2D(3, 3, padding="same", activation="relu"),
        layers.Flatten(), layers.Dense(6, activation="relu"), layers.Dense(6, activation="tanh"),
        layers.Dropout(0.1), layers.Dense(n_classes, activation="softmax")])


def two_inputs(input_shape, n_classes):
    import keras
    from keras import layers

    image_shape, side_shape = input_shape
    image, side = keras.Input(image_shape, name="image"), keras.Input(side_shape, name="side")
    x = layers.Conv2D(2, 3, padding="same", activation="relu")(image)
    x = layers.Flatten()(layers.MaxPooling2D(2)(x))
    y = layers.Dense(4, activation="relu")(side)
    z = layers.Dense(6, activation="relu")(layers.Concatenate()([y, x]))
    z = layers.Dense(6, activation="tanh")(z)
    return keras.Model([image, side], layers.Dense(n_classes, activation="softmax")(z))


def residual(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.Dense(6, activation="relu")(x)
    shared = layers.Dense(6, activation="tanh")
    added = layers.Add()([h, shared(shared(h))])
    t = layers.Dense(6, activation="tanh")(added)
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(t))


def nested(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.Dense(5)(x)  # linear: the first non-linear layer is inside the block
    block = keras.Sequential([keras.Input((5,)), layers.Dense(6, activation="relu"),
                              layers.Dense(6, activation="tanh")], name="block")
    return keras.Model(x, layers.Dense(n_classes, activation="softmax")(block(h)))


def smoothed(y_true, y_pred):
    """A loss function Keras cannot find by name."""
    import keras

    return keras.losses.categorical_crossentropy(y_true, y_pred, label_smoothing=0.1)


def custom_loss(input_shape, n_classes):
    import keras
    from keras import layers

    x = keras.Input(input_shape)
    h = layers.Dense(6, activation="relu")(layers.Flatten()(x))
    model = keras.Model(x, layers.Dense(n_classes, activation="softmax")(
        layers.Dense(6, activation="tanh")(h)))
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=smoothed)
    return model


#: The inputs each shape takes: images 4 x 4, vectors of 6, or both (an image, 3 values).
INPUTS = {"chain": "image", "two_inputs": "both", "residual": "vector", "nested": "vector",
          "custom_loss": "image"}
#: The neurons neuron_effect_blocking can block, counted by hand: those of every layer
#: whose values reach weighted layers without an Add or a model output on the way.
BLOCKABLE = {"chain": 3 + 6 + 6,                # conv -> Flatten -> dense; dense; dense
             "two_inputs": 2 + 4 + 6 + 6,      # conv -> pool -> Flatten -> Concatenate
             "residual": 6,                    # only the layer after the Add
             "nested": 5 + 6 + 6,              # into, inside and out of the block
             "custom_loss": 6 + 6}


def dataset(shape: str, n_train=60, n_test=30, seed=0) -> Dataset:
    """Three classes that the inputs' first value tells apart, in the inputs ``shape``
    takes."""
    rng = np.random.default_rng(seed)
    parts = []
    for n in (n_train, n_test):
        y = np.arange(n) % 3
        image = rng.normal(0, 1, (n, 4, 4, 1)).astype(np.float32)
        image[:, 0, 0, 0] += 2 * y
        vector = rng.normal(0, 1, (n, 6)).astype(np.float32)
        vector[:, 0] += 2 * y
        x = {"image": image, "vector": vector, "both": (image, vector[:, :3])}[INPUTS[shape]]
        parts += [x, y.astype(np.int64)]
    return Dataset(shape, *parts)
