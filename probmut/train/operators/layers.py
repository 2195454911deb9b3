"""Which layers of a built Keras model an operator may target.

Layers are those of the model's layer table (:func:`probmut.train.graph.graph`:
``model.layers`` with each nested model's layers in its place), and whether a layer is
an output layer, keeps its shape or feeds a weighted layer is read from the model's
graph, not from the order of its layers: several inputs and outputs, branches and joins,
nested models and shared layers are all followed.

:data:`LAYER_KIND` maps each kind to the words used in messages and a test
``fits(layer, graph)``. Without ``@LAYER`` an operator acts on the subject's published
layer if its model names one (:class:`probmut.train.models.ModelSpec`), else on the
first hidden layer (not an input or an output layer) that fits; ``@each`` makes one
mutant per layer that fits, hidden or output, as DeepCrime's loop over a model's layers
does. What is known of Keras layer classes themselves is in
:mod:`probmut.train.layer_traits`; a layer's weights and units are read from the layer
(:mod:`probmut.train.layer_weights`), and :func:`unfit` says why a layer with connection
weights is not one a weight or unit operator can change.
"""

from __future__ import annotations

import numpy as np

from probmut.train.graph import graph
from probmut.train.layer_traits import activation_name, is_input, kind
from probmut.train.layer_weights import connections


def hidden(layer, model_graph) -> bool:
    return not is_input(layer) and not model_graph.is_output(layer)


def identity_at_inference(layer, model_graph) -> bool:
    """Does ``layer`` pass its input through unchanged at inference (a dropout, a
    Gaussian noise layer, an Identity)? Checked on a random input of its shape."""
    if not model_graph.same_shape(layer):
        return False
    shape = (4, *model_graph.input_shape(layer))
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    return bool(np.allclose(np.asarray(layer(x, training=False)), x))


def _acts_keeping_shape(layer, model_graph) -> bool:
    return model_graph.same_shape(layer) and not identity_at_inference(layer, model_graph)


def _one_output(layer, model_graph) -> bool:
    calls = model_graph.calls_of(layer)
    return bool(calls) and all(len(call.outputs) == 1 for call in calls)


def unfit(layer, kind: str, model_graph) -> str | None:
    """Why ``layer`` (a layer with connection weights) is not of the unit or neuron
    ``kind`` (``"units"``, ``"pre_activation"``, ``"switchable"``, ``"neurons"``): in
    words, for messages and the dry run; None if it is, or for other kinds."""
    if not connections(layer):
        return None
    if kind == "neurons":
        return model_graph.route_problem(layer)
    if kind not in ("units", "pre_activation", "switchable"):
        return None
    found = model_graph.units(layer)
    if isinstance(found, str):
        return found
    return {"units": None, "pre_activation": found.not_negatable,
            "switchable": found.not_switchable}[kind]


def _of_units(kind):
    return lambda layer, g: bool(connections(layer)) and unfit(layer, kind, g) is None


#: Which layers an operator may target: (words for messages, fits(layer, graph)).
LAYER_KIND = {
    "activation": ("a layer with an activation",
                   lambda layer, g: activation_name(layer) is not None),
    "linear_activation": ("a layer with a linear activation (no activation)",
                          lambda layer, g: activation_name(layer) == "linear"),
    "nonlinear_activation": ("a layer with a non-linear activation",
                             lambda layer, g: activation_name(layer) not in (None, "linear")),
    "kernel_initializer": ("a layer with a kernel initializer",
                           lambda layer, g: hasattr(layer, "kernel_initializer")),
    "weights": ("a layer with connection weights (Dense, convolutions, embeddings, recurrent "
                "and custom layers)", lambda layer, g: bool(connections(layer))),
    "units": ("a layer with connection weights whose units probmut can tell apart",
              _of_units("units")),
    "pre_activation": ("a layer with connection weights whose units' pre-activations "
                       "probmut can find", _of_units("pre_activation")),
    "switchable": ("a layer with connection weights whose units can trade places (two or "
                   "more)", _of_units("switchable")),
    "no_regulariser": ("a layer with connection weights that can take a kernel regulariser "
                       "and has none",
                       lambda layer, g: bool(connections(layer))
                       and getattr(layer, "kernel_regularizer", 0) is None),
    "regulariser": ("a layer with a kernel regulariser",
                    lambda layer, g: getattr(layer, "kernel_regularizer", None) is not None),
    "dropout": ("a Dropout layer", lambda layer, g: kind(layer) == "Dropout"),
    "bias": ("a layer with a bias", lambda layer, g: getattr(layer, "use_bias", False) is True),
    "no_bias": ("a layer that can take a bias but has none",
                lambda layer, g: getattr(layer, "use_bias", True) is False),
    "neurons": ("a layer whose neurons reach layers with connection weights by paths that "
                "keep them apart (no Add, no model output)",
                lambda layer, g: g.neuron_routes(layer) is not None),
    "active_same_shape": ("a layer whose output shape equals its input shape and which "
                          "acts at inference (not a dropout)", _acts_keeping_shape),
    "removable": ("a layer whose output shape equals its input shape",
                  lambda layer, g: g.same_shape(layer)),
    "insertion_point": ("a layer with one output", _one_output),
}


def fitting(model, kind: str, *, hidden_only: bool) -> list[int]:
    """Indices (in the model's layer table) of the layers of ``model`` that fit ``kind``
    (hidden ones only, or hidden and output layers)."""
    fits, model_graph = LAYER_KIND[kind][1], graph(model)
    return [i for i, layer in enumerate(model_graph.layers)
            if not is_input(layer) and (not hidden_only or hidden(layer, model_graph))
            and fits(layer, model_graph)]
