"""How a torch model is built for an instance: its seeded initial weights, the training
settings' layer changes and structure applied through its ``torch.fx`` graph, its weight
penalties, and the view of it that training reads (the logits of its final softmax).

:func:`build` is the one way every instance, every legality check and every dry run
makes a model, so that they agree. A :class:`~probmut.train.torch.settings.TrainConfig`'s
``layer_changes`` (from the registry's training-level operators, unchanged) become, on
the layer at that index of the healthy model's table (:mod:`probmut.train.torch.graph`):

* ``activation NAME``: an activation layer computes Keras' NAME instead
  (``linear``: it is removed); a Dense or convolution layer that feeds no activation
  gets NAME after it (DeepCrime's ``add_activation_function``);
* ``kernel_initializer NAME``: the layer's weight is drawn again from Keras' NAME;
* ``kernel_regularizer NAME``: Keras' penalty ``l1 x sum|w| + l2 x sum w^2`` on the
  layer's weight is added to the loss, as Keras adds a regulariser's (not a weight
  decay of the optimiser: with Adam the two differ, and Keras' is a penalty); None
  removes it;
* ``rate R``: the dropout's rate; ``use_bias B``: the layer gains a zero bias or loses
  its bias;

and ``structure`` removes a layer (its input passes on) or inserts Keras'
``BatchNormalization`` or an activation after one. A model that does not trace takes
no layer change (refused before training, :mod:`probmut.train.torch.legality`).

Examples
--------
>>> from probmut.train.datasets import ModelDims
>>> from probmut.train.torch.architectures import ARCHITECTURES, torch_dims
>>> spec, dims = ARCHITECTURES["mlp"], torch_dims(ModelDims((8, 8, 1), 10))
>>> built = build(spec, dims, spec.config.replace(layer_changes=((2, "activation", "elu"),)),
...               seed=0)
>>> [layer.kind for layer in built.graph.layers]
['Flatten', 'Linear', 'ELU', 'SeededDropout', 'Linear', 'Softmax']
>>> built.logits_of
'softmax'
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import fx, nn

from probmut import seeds
from probmut.errors import ProbmutError
from probmut.train.torch.activations import make
from probmut.train.torch.graph import TorchGraph, fresh_name, set_module, trace
from probmut.train.torch.initializers import initialise
from probmut.train.torch.modules import BatchNormalization, SeededDropout
from probmut.train.torch.settings import REGULARISERS


@dataclass(eq=False)
class Built:
    """A built model: ``module`` (a ``GraphModule`` when it traces), its layer table
    ``graph`` (None, and ``problem`` saying why, when it does not trace), ``penalties``
    (weight name -> regulariser name), ``initializers`` (layer name -> the Keras
    initialiser a layer change drew its weight from; ``initializer`` the others'), and
    what training reads:
    ``training_module``
    (the model without its final softmax or sigmoid when it has one, ``logits_of``
    naming it; sharing the model's weights)."""

    module: nn.Module
    graph: TorchGraph | None
    input_shape: tuple
    problem: str | None = None
    penalties: dict[str, str] = field(default_factory=dict)
    initializers: dict[str, str] = field(default_factory=dict)
    initializer: str | None = None
    training_module: nn.Module | None = None
    logits_of: str | None = None

    def __post_init__(self):
        if self.training_module is None:
            self.training_module, self.logits_of = _training_view(self.module, self.graph)

    def penalty(self, weights: dict | None = None, members: bool = False):
        """The weight penalties' sum (Keras' ``l1 sum|w| + l2 sum w^2``), of the model's own
        weights or of ``weights`` (name -> tensor); ``members``: the weights carry a
        leading member axis, one sum per member."""
        weights = dict(self.module.named_parameters()) if weights is None else weights
        total = 0.0
        for name, regulariser in self.penalties.items():
            factors, w = REGULARISERS[regulariser][1], weights[name]
            axes = tuple(range(1, w.dim())) if members else tuple(range(w.dim()))
            total = total + factors.get("l1", 0.0) * w.abs().sum(axes) \
                + factors.get("l2", 0.0) * w.square().sum(axes)
        return total

    def dropouts(self) -> list[SeededDropout]:
        return [m for m in self.module.modules() if isinstance(m, SeededDropout)]

    def _with(self, module) -> Built:
        graph = None if self.graph is None else TorchGraph(module, self.input_shape)
        return Built(module, graph, self.input_shape, self.problem, dict(self.penalties),
                     dict(self.initializers), initializer=self.initializer)

    def copy(self) -> Built:
        """An independent copy (weights too), to mutate without touching this one."""
        return self._with(copy.deepcopy(self.module))

    def rebuilt(self) -> Built:
        """This model after its graph was edited: recompiled and read again, without the
        modules no longer called (a removed layer's: not in its state, not a dropout that
        a stack would look for in the graph)."""
        self.module.graph.eliminate_dead_code()
        self.module.delete_all_unused_submodules()
        self.module.recompile()
        return self._with(self.module)


def _training_view(module, graph):
    """The model as training reads it: without a final softmax or sigmoid (whose logits
    the loss reads, as Keras' crossentropies do), sharing the model's weights."""
    kind = graph.output_activation() if graph is not None else None
    if kind is None:
        return module, None
    (node,) = graph.outputs
    logits = graph.inputs_of(node)[0]
    view, copies = fx.Graph(), {}
    view.graph_copy(module.graph, copies)
    view.output(copies[logits])
    training = fx.GraphModule(module, view)
    training.graph.eliminate_dead_code()
    training.recompile()
    return training, kind


def build(spec, dims, config, seed: int) -> Built:
    """``spec``'s model for torch ``dims``, with ``config``'s layer changes and
    structure, its initial weights drawn from the instance ``seed`` (its ``"initial
    weights"`` stream; torch's global generator is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seeds.seed_of(seed, "initial weights"))
        module = spec.build(dims)
        try:
            traced = trace(module)
        except ProbmutError as error:
            _seed_dropouts(module)
            if config.layer_changes or config.structure:
                raise
            return Built(module, None, tuple(dims.input_shape), str(error),
                         initializer=spec.initializer)
        built = Built(traced, TorchGraph(traced, dims.input_shape), tuple(dims.input_shape),
                      initializer=spec.initializer)
        if config.layer_changes or config.structure:
            built = _changed(built, config)
    return built


def initial_weights(spec, dims, config, seed: int) -> dict:
    """The initial weights (name -> tensor) :func:`build` gives instance ``seed``, made
    without tracing the model when ``config`` changes no layer (a stack's members)."""
    if config.layer_changes or config.structure:
        return dict(build(spec, dims, config, seed).module.named_parameters())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seeds.seed_of(seed, "initial weights"))
        return dict(spec.build(dims).named_parameters())


def _seed_dropouts(module: nn.Module) -> None:
    """An untraced model's ``nn.Dropout`` modules become seeded ones, in place."""
    for name, child in list(module.named_modules()):
        if type(child) is nn.Dropout:
            set_module(module, name, SeededDropout(child.p))


def _changed(built: Built, config) -> Built:
    graph, module = built.graph, built.module
    targets = [(graph.layers[index], attribute, value)
               for index, attribute, value in config.layer_changes]
    structure = [(kind, graph.layers[index], what) for kind, index, what in config.structure]
    for layer, attribute, value in targets:
        if attribute == "activation":
            set_activation(built, layer, value)
        elif attribute == "kernel_initializer":
            initialise(layer.module.weight, value)
            built.initializers[layer.name] = value
        elif attribute == "kernel_regularizer":
            built.penalties.pop(f"{layer.name}.weight", None)
            if value is not None:
                built.penalties[f"{layer.name}.weight"] = value
        elif attribute == "rate":
            layer.module.p = float(value)
        elif attribute == "use_bias":
            units = layer.module.weight.shape[0]
            layer.module.bias = nn.Parameter(torch.zeros(units)) if value else None
        else:
            raise ProbmutError(f"torch models take no layer change of {attribute!r}",
                               option="mutation")
    for kind, layer, what in structure:
        if kind == "remove":
            remove(module, layer)
        else:
            inserted = BatchNormalization(graph.shapes[layer.calls[0]][0]) \
                if what == "batch_normalization" else make(what)
            insert_after(module, layer, inserted, what)
    return built.rebuilt()


def set_activation(built: Built, layer, name: str) -> None:
    """``layer`` computes Keras' activation ``name`` (an activation layer: replaced,
    ``linear`` removing it; a layer computing none: ``name`` inserted after it)."""
    module = built.module
    if built.graph.activation(layer) is None:
        if name == "linear":  # Keras' linear activation is none: nothing to add
            return
        insert_after(module, layer, make(name), name)
    elif name == "linear":
        remove(module, layer)
    elif layer.module is not None:
        set_module(module, layer.name, make(name))
    else:
        replace_calls(module, layer, make(name), name)


def remove(module: fx.GraphModule, layer) -> None:
    """Every call of ``layer`` removed: its one input passes on."""
    for call in layer.calls:
        call.replace_all_uses_with(call.all_input_nodes[0])
        module.graph.erase_node(call)


def replace_calls(module: fx.GraphModule, layer, replacement: nn.Module, name: str) -> None:
    """Every call of a function ``layer`` replaced by a call of ``replacement``."""
    target = fresh_name(module, name)
    module.add_submodule(target, replacement)
    for call in layer.calls:
        with module.graph.inserting_after(call):
            new = module.graph.call_module(target, (call.all_input_nodes[0],))
        call.replace_all_uses_with(new)
        module.graph.erase_node(call)


def insert_after(module: fx.GraphModule, layer, inserted: nn.Module, name: str) -> None:
    """``inserted`` put after ``layer`` (one module, called after each of its calls)."""
    target = fresh_name(module, name)
    module.add_submodule(target, inserted)
    for call in layer.calls:
        with module.graph.inserting_after(call):
            new = module.graph.call_module(target, (call,))
        call.replace_all_uses_with(new, delete_user_cb=lambda user, new=new: user is not new)
