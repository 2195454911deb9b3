"""The mutation operators on torch models: one implementation per operator of the
registry (:data:`probmut.train.operators.OPERATORS`, the one list of names, magnitudes,
defaults and sources), keyed by its name in :data:`TORCH_OPERATORS`.

* Data level: the registry's own functions, unchanged (one implementation for both
  frameworks): they change the numpy training data before training.
* Training level: the registry's own functions change the run's
  :class:`~probmut.train.torch.settings.TrainConfig`; the torch build reads its layer
  changes and structure (:mod:`probmut.train.torch.build`) and the torch loop its
  settings (:mod:`probmut.train.torch.fitting`).
* Model level (on a trained healthy instance): the functions here. The weight and unit
  operators read each kernel in Keras' layout (inputs before units: a Dense kernel
  ``(in, out)``, a convolution's ``(kh, kw, in, out)``), draw with the registry's own
  :func:`~probmut.train.operators.model.select` and change kernels with its own
  functions (``freeze``, ``invert``, ``switch``, ``shuffle_weights``, on the layer's
  :class:`~probmut.train.layer_weights.Units`: :func:`units_of`), so a seed picks
  the same weights, units and neurons of the same architecture in both frameworks.

Layer targets (:data:`LAYER_KIND`, :func:`bind`) are read from the torch layer table
(:mod:`probmut.train.torch.graph`), with the rules of the Keras targets: without
``@LAYER`` an operator acts on the subject's published layer, else on the first hidden
layer (not an output's) that fits; ``@each`` on every layer that fits; ``@network`` on
every one at once.

Examples
--------
>>> from probmut.train.operators import OPERATORS
>>> sorted(set(OPERATORS) - set(TORCH_OPERATORS))      # every operator has a torch one
[]
>>> kernel_of(__import__("torch").nn.Linear(3, 2)).shape   # Keras' (in, out)
(3, 2)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from probmut.errors import ProbmutError
from probmut.train.layer_weights import UnitAxes, Units
from probmut.train.operators import OPERATORS, Mutation, _at_layer
from probmut.train.operators import model as keras_model
from probmut.train.operators.magnitudes import EACH, NETWORK
from probmut.train.torch import activations, initializers, losses, optimizers
from probmut.train.torch.build import Built, remove, set_activation
from probmut.train.torch.graph import fresh_name
from probmut.train.torch.modules import SeededDropout


def kernel_of(module) -> np.ndarray:
    """A Dense or convolution layer's weight in Keras' layout (a copy): units last,
    inputs second to last."""
    weight = module.weight.detach().numpy()
    return np.ascontiguousarray(np.moveaxis(weight, (0, 1), (-1, -2)))


def set_kernel(module, kernel: np.ndarray) -> None:
    """Set a layer's weight from its kernel in Keras' layout."""
    with torch.no_grad():
        module.weight.copy_(torch.from_numpy(np.moveaxis(kernel, (-1, -2), (0, 1)).copy()))


def _g(built):
    return built.graph


#: Which layers an operator may target: (words for messages, fits(layer, built)).
LAYER_KIND = {
    "activation": ("an activation layer (a module or function computing one)",
                   lambda layer, b: _g(b).activation(layer) is not None),
    "linear_activation": ("a Dense or convolution layer that feeds no activation",
                          lambda layer, b: _g(b).weighted(layer)
                          and not _g(b).feeds_activation(layer)),
    "nonlinear_activation": ("a layer computing a non-linear activation",
                             lambda layer, b: _g(b).activation(layer) not in (None, "linear")),
    "kernel_initializer": ("a Dense or convolution layer (Linear, ConvNd)",
                           lambda layer, b: _g(b).weighted(layer)),
    "weights": ("a Dense or convolution layer (Linear, ConvNd)",
                lambda layer, b: _g(b).weighted(layer)),
    "units": ("a Dense or convolution layer (Linear, ConvNd)",
              lambda layer, b: _g(b).weighted(layer)),
    "pre_activation": ("a Dense or convolution layer (Linear, ConvNd)",
                       lambda layer, b: _g(b).weighted(layer)),
    "switchable": ("a Dense or convolution layer with at least two units",
                   lambda layer, b: _g(b).weighted(layer) and _g(b).units(layer) >= 2),
    "no_regulariser": ("a Dense or convolution layer without a weight penalty",
                       lambda layer, b: _g(b).weighted(layer)
                       and f"{layer.name}.weight" not in b.penalties),
    "regulariser": ("a layer with a weight penalty",
                    lambda layer, b: f"{layer.name}.weight" in b.penalties),
    "dropout": ("a dropout layer", lambda layer, b: isinstance(layer.module, SeededDropout)),
    "bias": ("a Dense or convolution layer with a bias",
             lambda layer, b: _g(b).weighted(layer) and layer.module.bias is not None),
    "no_bias": ("a Dense or convolution layer without a bias",
                lambda layer, b: _g(b).weighted(layer) and layer.module.bias is None),
    "neurons": ("a Dense or convolution layer whose neurons reach weighted layers by paths "
                "that keep them apart (no addition, no model output)",
                lambda layer, b: _g(b).neuron_routes(layer) is not None),
    "active_same_shape": ("a layer whose output shape equals its input shape and which "
                          "acts at inference (not a dropout)",
                          lambda layer, b: _g(b).same_shape(layer)
                          and not _g(b).identity_at_inference(layer)),
    "removable": ("a layer whose output shape equals its input shape",
                  lambda layer, b: _g(b).same_shape(layer)),
    "insertion_point": ("a layer with one output", lambda layer, b: True),
}


def fitting(built: Built, kind: str, *, hidden_only: bool) -> list[int]:
    """Indices of the layers of ``built`` that fit ``kind`` (hidden ones only: not
    giving a model output; or all)."""
    fits, graph = LAYER_KIND[kind][1], built.graph
    return [i for i, layer in enumerate(graph.layers)
            if (not hidden_only or not graph.is_output(layer)) and fits(layer, built)]


_NAMES = {"activations": activations.canonical, "initializers": initializers.canonical,
          "losses": losses.canonical, "optimizers": optimizers.canonical}


def check_name(mutation: Mutation) -> None:
    """Is the mutation's Keras name (activation, initializer, loss, optimizer) one the
    torch trainer computes? One line naming the ones it does, if not."""
    kind, name = mutation.operator.keras_kind, mutation.params.get("name")
    if kind is not None and name is not None:
        try:
            _NAMES[kind](name)
        except ProbmutError as error:
            raise ProbmutError(f"{mutation.label}: {error}", option="mutation") from None


def bind(mutation: Mutation, built: Built, task: str = "classification",
         published: dict[str, int] | None = None) -> list[Mutation]:
    """Check (and default) the target layer of ``mutation`` against a built torch model:
    one bound mutation per target layer (several for ``@each``), as
    :func:`probmut.train.operators.bind` does for Keras. Raises :class:`ProbmutError`
    if impossible."""
    operator, label = mutation.operator, mutation.label
    check_name(mutation)
    if task != "classification":
        raise ProbmutError(f"{label}: torch models are classifiers here; this is a {task} "
                           "model", option="mutation")
    if operator.layer_kind is None:
        return [mutation]
    if built.graph is None:
        raise ProbmutError(f"{label}: {built.problem}", option="mutation")
    what, fits = LAYER_KIND[operator.layer_kind]
    layers, index = built.graph.layers, mutation.params["layer"]
    if index is None and operator.scope == NETWORK:
        index = NETWORK
    elif index is None and operator.name in (published or {}):
        index = published[operator.name]
    candidates = fitting(built, operator.layer_kind, hidden_only=index is None)
    if index is None:
        index = next(iter(candidates), None)
        problem = None if index is not None else f"the model has no hidden layer that is {what}"
    elif index in (NETWORK, EACH):
        problem = None if candidates else f"the model has no layer that is {what}"
    elif index >= len(layers):
        problem = f"layer {index} is out of range (the model has {len(layers)} layers)"
    elif not fits(layers[index], built):
        problem = f"layer {index} ({layers[index].name}) is not {what}"
    else:
        problem = None
    if problem:
        raise ProbmutError(f"{label}: {problem}; layers: {built.graph.describe()}",
                           option="mutation")
    if index == NETWORK:
        return [Mutation(operator, mutation.magnitude, {**mutation.params, "layer": NETWORK},
                         mutation.equivalent)]
    return [_at_layer(mutation, i) for i in (candidates if index == EACH else [index])]


def scope(built: Built, params: dict, kind: str) -> list[int]:
    """The layers a weight or unit operator acts on: ``@LAYER``'s, or (``@network``)
    every layer of ``kind``."""
    if params["layer"] == NETWORK:
        return fitting(built, kind, hidden_only=False)
    return [params["layer"]]


def _fuzz(built, params, rng, sd, minimum):
    """Add N(0, sd(chosen weights, kernel)^2) noise to ``ratio`` of the kernel weights
    (the count and the draws of :func:`probmut.train.operators.model.weights_fuzzing`)."""
    layers = [built.graph.layers[i] for i in scope(built, params, "weights")]
    kernels = [kernel_of(layer.module) for layer in layers]
    picks = keras_model.select([k.size for k in kernels], params["ratio"], rng, minimum)
    for layer, kernel, chosen in zip(layers, kernels, picks, strict=True):
        if chosen.size:
            flat = kernel.reshape(-1)
            noise = rng.normal(0.0, 1.0, size=chosen.size) * sd(flat[chosen], flat)
            flat[chosen] += noise.astype(flat.dtype)
            set_kernel(layer.module, kernel)
    return built


def weights_fuzzing(built, params, rng):
    """PMT's operator: N(0, (scale |w|)^2) noise on ``ratio`` of the kernel weights w."""
    return _fuzz(built, params, rng, lambda chosen, flat: params["scale"] * np.abs(chosen),
                 minimum=0)


def gaussian_fuzzing(built, params, rng):
    """DeepMutation's GF: ``ratio`` of the kernel weights w become N(w, sd^2)."""
    if params["sd"] is not None:
        return _fuzz(built, params, rng, lambda chosen, flat: params["sd"], minimum=1)
    return _fuzz(built, params, rng, lambda chosen, flat: params["scale"] * flat.std(),
                 minimum=1)


def units_of(module) -> Units:
    """A Dense or convolution layer's units where its Keras-layout weights
    (:func:`keras_weights`) hold them: the kernel's last axis and the bias, both carrying
    the units' pre-activation (:class:`probmut.train.layer_weights.Units`)."""
    axes = [UnitAxes(0, "kernel", module.weight.dim() - 1, module.weight.dim(), True,
                     pre_activation=(0,))]
    if module.bias is not None:
        axes.append(UnitAxes(1, "bias", 0, 1, False, pre_activation=(0,)))
    return Units(int(module.weight.shape[0]), tuple(axes))


def keras_weights(module) -> list[np.ndarray]:
    """A Dense or convolution layer's weights as Keras' ``get_weights()`` lists them:
    its kernel in Keras' layout, then its bias (copies)."""
    bias = [] if module.bias is None else [module.bias.detach().numpy().copy()]
    return [kernel_of(module), *bias]


def set_keras_weights(module, weights: list[np.ndarray]) -> None:
    set_kernel(module, weights[0])
    if module.bias is not None:
        with torch.no_grad():
            module.bias.copy_(torch.from_numpy(weights[1]))


def per_unit(change, kind: str):
    """A model operator changing ``ratio`` of the units of the layers in scope (of the
    layer kind ``kind``; at least one) with the registry's ``change(units, weights,
    chosen, rng)`` on the layer's Keras-layout weights."""
    def apply(built, params, rng):
        layers = [built.graph.layers[i] for i in scope(built, params, kind)]
        found = [units_of(layer.module) for layer in layers]
        picks = keras_model.select([units.count for units in found], params["ratio"], rng,
                                   minimum=1)
        for layer, units, chosen in zip(layers, found, picks, strict=True):
            if chosen.size:
                weights = keras_weights(layer.module)
                change(units, weights, chosen, rng)
                set_keras_weights(layer.module, weights)
        return built
    apply.__doc__ = change.__doc__
    return apply


def neuron_effect_blocking(built, params, rng):
    """DeepMutation's NEB: every weight from ``ratio`` of the neurons (at least one) into
    a weighted layer they feed is zeroed, wherever the graph takes them."""
    sources = [built.graph.layers[i] for i in scope(built, params, "neurons")]
    picks = keras_model.select([built.graph.units(layer) for layer in sources],
                               params["ratio"], rng, minimum=1)
    for source, neurons in zip(sources, picks, strict=True):
        if neurons.size:
            for consumer, carried in built.graph.neuron_routes(source):
                kernel = kernel_of(consumer.module)
                kernel[..., np.isin(carried, neurons), :] = 0
                set_kernel(consumer.module, kernel)
    return built


def layer_deactivation(built, params, rng):
    """DeepMutation's LD: a trained copy in which the layer is the identity."""
    mutant = built.copy()
    remove(mutant.module, mutant.graph.layers[params["layer"]])
    return mutant.rebuilt()


def remove_activation_trained(built, params, rng):
    """DeepMutation's AFRm: a trained copy in which the layer's activation is removed."""
    mutant = built.copy()
    set_activation(mutant, mutant.graph.layers[params["layer"]], "linear")
    return mutant.rebuilt()


def duplicate_layer(built, params, rng):
    """DeepMutation's LAm: a trained copy with a copy of the layer (its trained weights
    too) after each of its calls."""
    import copy

    mutant = built.copy()
    module, layer = mutant.module, mutant.graph.layers[params["layer"]]
    target = fresh_name(module, f"{layer.name}_copy") if layer.module is not None else None
    if target is not None:
        module.add_submodule(target, copy.deepcopy(layer.module))
    for call in layer.calls:
        with module.graph.inserting_after(call):
            new = module.graph.call_module(target, (call,)) if target else \
                module.graph.node_copy(call, lambda node, call=call: call
                                       if node is call.all_input_nodes[0] else node)
        call.replace_all_uses_with(new, delete_user_cb=lambda user, new=new: user is not new)
    return mutant.rebuilt()


@dataclass(frozen=True)
class TorchOperator:
    """What an operator of the registry does on a torch model (``what``, for the docs),
    and, at the model level, ``apply(built, params, rng) -> built`` (the same model,
    changed in place, or a changed copy)."""

    what: str
    apply: Callable | None = None


_DATA = "the registry's own function on the numpy training data, before training"

#: The torch implementation of every operator of the registry, by its name.
TORCH_OPERATORS = {
    **{name: TorchOperator(_DATA) for name, op in OPERATORS.items() if op.level == "data"},
    "change_activation_function": TorchOperator(
        "the activation layer (a module or a function call) computes Keras' NAME instead"),
    "add_activation_function": TorchOperator(
        "Keras' NAME inserted after a Linear or convolution layer that feeds no activation"),
    "remove_activation_function": TorchOperator(
        "the activation layer removed before training (its input passes on)"),
    "change_weights_initialisation": TorchOperator(
        "the layer's weight drawn from Keras' initializer NAME (Keras' fans and defaults)"),
    "add_weights_regularisation": TorchOperator(
        "Keras' L1/L2 penalty (factor 0.01) on the layer's weight added to the loss"),
    "change_weights_regularisation": TorchOperator(
        "the layer's weight penalty becomes another one"),
    "remove_weights_regularisation": TorchOperator("the layer's weight penalty removed"),
    "change_dropout_rate": TorchOperator("the dropout's rate p becomes RATE"),
    "add_bias": TorchOperator("the layer gets a bias, initialised to zeros"),
    "remove_bias": TorchOperator("the layer's bias removed (bias=None)"),
    "change_loss_function": TorchOperator("training minimises Keras' loss NAME"),
    "change_optimisation_function": TorchOperator(
        "training uses Keras' optimizer rule NAME with its default learning rate"),
    "change_learning_rate": TorchOperator("the optimizer's learning rate"),
    "change_epochs": TorchOperator("the number of epochs"),
    "change_batch_size": TorchOperator("the batch size"),
    "disable_batching": TorchOperator("one batch of the whole training set per epoch"),
    "change_gradient_clipping": TorchOperator(
        "the threshold of Keras' clipvalue (elementwise) or clipnorm (per weight tensor)"),
    "change_patience": TorchOperator("the patience of Keras' early stopping on val_loss"),
    "remove_validation_set": TorchOperator(
        "the validation set trained on with the rest, without early stopping"),
    "remove_layer": TorchOperator("the layer removed before training (its input passes on)"),
    "add_layer": TorchOperator(
        "Keras' BatchNormalization (momentum 0.99, epsilon 1e-3) or an activation "
        "inserted after the layer"),
    "weights_fuzzing": TorchOperator(
        "N(0, (SCALE |w|)^2) noise on RATIO of the trained kernel weights", weights_fuzzing),
    "gaussian_fuzzing": TorchOperator(
        "RATIO of the trained kernel weights w become N(w, SD^2)", gaussian_fuzzing),
    "neurons_freezing": TorchOperator(
        "the trained weights and bias of RATIO of the units zeroed",
        per_unit(keras_model.freeze, "pre_activation")),
    "weight_shuffling": TorchOperator(
        "the trained incoming weights of RATIO of the units shuffled",
        per_unit(keras_model.shuffle_weights, "units")),
    "neuron_activation_inverse": TorchOperator(
        "the trained weights and bias of RATIO of the units negated",
        per_unit(keras_model.invert, "pre_activation")),
    "neuron_switch": TorchOperator(
        "RATIO of the trained units trade weights and biases cyclically within their layer",
        per_unit(keras_model.switch, "switchable")),
    "neuron_effect_blocking": TorchOperator(
        "the trained weights from RATIO of the neurons into the layers they feed zeroed",
        neuron_effect_blocking),
    "layer_deactivation": TorchOperator(
        "the trained layer replaced by the identity", layer_deactivation),
    "duplicate_layer": TorchOperator(
        "a copy of the trained layer inserted after it", duplicate_layer),
    "remove_activation_trained": TorchOperator(
        "the trained layer's activation removed", remove_activation_trained),
}
