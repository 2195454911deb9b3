"""Several torch instances of one population trained at once, as one batched model.

A stack of K members holds each weight with a leading member axis (PyTorch's model
ensembling: ``torch.func.stack_module_state``, ``functional_call``, ``vmap``). Per member
the computation is the one :func:`probmut.train.torch.fitting.fit` does alone:

* initial weights: member k's are those its instance gets alone (its own build from
  its seed);
* data: member k trains on its own (possibly mutated) training set in its own order
  (its ``"data order"`` stream), in batches of ``batch_size``, a smaller last one;
* dropout: member k's masks are drawn from its own ``"dropout masks"`` generator, in
  the order its solo training draws them, and handed to the batched model;
* loss and update: member k's loss and gradient are its own (the stack's loss is the
  sum of the members' losses); one optimiser updates the stacked weights, which is each
  member's own update (:mod:`probmut.train.torch.optimizers`: elementwise rules, the
  clipping norm taken per member).

The members' model runs as batched matrix products (:mod:`probmut.train.torch.grouped`)
where the model is a chain of the layers that module runs, else through ``vmap`` of the
member's loss and gradient. The trained members are scored together the same way.

What is not bit-identical to training alone is the floating-point summation order of
the batched kernels (a convolution as a matrix product of its input's columns), which
training amplifies like any change of seed; the population's statistics match
(``tests/train/torch/test_stack.py``). A member whose loss stops being finite is
recorded as alone (its losses up to that epoch) and trains on uselessly with the others.

What stacks (:func:`stack_problem`): a model that traces, whose layers keep no running
statistics (batch normalisation), draw nothing from torch's global generator and call
each dropout once; no early stopping (members would stop at different epochs).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from probmut import seeds
from probmut.errors import ProbmutError
from probmut.io.records import loss_diverged
from probmut.train.fitting import score_outputs
from probmut.train.operators import OPERATORS, population_config
from probmut.train.torch import fitting, grouped
from probmut.train.torch.architectures import spec_of, torch_dims, torch_inputs
from probmut.train.torch.build import build, initial_weights
from probmut.train.torch.losses import Outputs, batch_loss
from probmut.train.torch.optimizers import KerasOptimizer, canonical
from probmut.train.training_set import training_set
from probmut.train.work import Assignment, InstanceResult

_GLOBAL_RANDOM = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
                  nn.FeatureAlphaDropout, nn.RReLU)


def stack_problem(architecture: str, dataset, config) -> str | None:
    """Why a population of ``architecture`` trained per ``config`` on ``dataset`` cannot
    be stacked, or None (module notes)."""
    if config.patience is not None and config.validation and dataset.validation is not None:
        return "early stopping stops each instance at its own epoch"
    return _model_problem(architecture, dataset.dims, config.replace(patience=None))


@functools.lru_cache(maxsize=64)
def _model_problem(architecture: str, dims, config) -> str | None:
    try:
        canonical(config.optimizer)
        built = build(spec_of(architecture, dims), torch_dims(dims), config, seed=0)
    except ProbmutError as error:
        return str(error)
    if built.graph is None:
        return built.problem
    if any(True for _ in built.module.buffers()):
        return "the model keeps running statistics (buffers: batch normalisation)"
    for name, module in built.module.named_modules():
        if isinstance(module, _GLOBAL_RANDOM):
            return f"layer {name} ({type(module).__name__}) draws from torch's global generator"
    for layer in built.graph.layers:
        if layer.module in built.dropouts() and len(layer.calls) > 1:
            return f"dropout {layer.name} is called {len(layer.calls)} times"
    return None


#: How a stack computes its members' model: ``"grouped"`` (:mod:`probmut.train.torch.grouped`:
#: batched matrix products, for the chains of layers it runs),
#: ``"vmap"`` (PyTorch's ensembling: ``vmap`` of ``functional_call``, any model that
#: stacks) or ``"auto"``: grouped where it runs, else vmap (the faster where both run:
#: scripts/benchmarks/bench_torch.py, docs/benchmarks.md).
FORMULATIONS = ("auto", "grouped", "vmap")

#: Test samples x members a stack scores at once (its grouped model's inputs, chunked).
_SCORED_AT_ONCE = 2048


class Stack:
    """The stacked weights of members whose model is ``template`` (built for the first
    of them) and whose initial weights are ``starts`` (name -> tensor, one mapping per
    member, as each gets them alone), and the batched training step of their model
    (``formulation``: :data:`FORMULATIONS`)."""

    def __init__(self, template, starts: list[dict], seeds_: list[int], config,
                 formulation: str = "auto"):
        self.template, self.config = template, config
        self.names = [n for n, w in template.module.named_parameters() if w.requires_grad]
        self.weights = {n: torch.stack([start[n].detach() for start in starts]).requires_grad_()
                        for n in self.names}
        self.dropouts = [(name, module, template.graph.shapes[
            template.graph.inputs_of(template.graph.layer_of_module(module).calls[0])[0]])
            for name, module in template.module.named_modules()
            if module in template.dropouts()]
        self.generators = [torch.Generator().manual_seed(seeds.seed_of(s, "dropout masks"))
                           for s in seeds_]
        self.optimizer = KerasOptimizer(config.optimizer, config.learning_rate, config.clip,
                                        list(self.weights.values()), stacked=True)

        problem = grouped.problem(template)
        if formulation == "grouped" and problem is not None:
            raise ProbmutError(f"the grouped stack cannot run this model: {problem}")
        self.grouped = grouped.GroupedModel(template) if formulation != "vmap" and \
            problem is None else None

        def member_loss(weights, x, target, masks):
            outputs = functional_call(template.training_module, {**weights, **masks}, (x,))
            return batch_loss(config.loss, target, Outputs(outputs, template.logits_of)) \
                + template.penalty(weights)

        self._vmapped = vmap(grad_and_value(member_loss))

    def masks(self, batch: int) -> dict:
        """Each member's dropout masks for a batch, drawn from its own generator."""
        return {f"{name}.mask": module.draw_members((batch, *shape), self.generators)
                for name, module, shape in self.dropouts}

    def step(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One training step of every member on its batch (``x``: ``(K, batch, ...)``);
        the members' losses."""
        masks = self.masks(x.shape[1])
        if self.grouped is None:
            grads, losses = self._vmapped(self.weights, x, target, masks)
            grads = [grads[n] for n in self.names]
        else:
            outputs = Outputs(self.grouped(self.weights, x, masks), self.template.logits_of)
            losses = batch_loss(self.config.loss, target, outputs) \
                + self.template.penalty(self.weights, members=True)
            grads = torch.autograd.grad(losses.sum(), [self.weights[n] for n in self.names])
        self.optimizer.step(grads)
        return losses.detach()

    @torch.no_grad()
    def outputs(self, x: np.ndarray) -> np.ndarray:
        """Every member's outputs (its model's, final activation included) for the inputs
        ``x`` (as the data gives them) in inference mode, ``(members, samples, ...)``: through
        the grouped model in chunks of samples, else each member's model in turn."""
        if self.grouped is None:
            return np.stack([fitting.predict(built.module, x) for built in self.members()])
        inputs = torch.from_numpy(torch_inputs(x))
        members = len(next(iter(self.weights.values())))
        chunk = max(1, _SCORED_AT_ONCE // members)
        module = self.template.training_module
        module.eval()
        try:
            logits = torch.cat([self.grouped(self.weights, inputs[start:start + chunk].expand(
                members, *inputs[start:start + chunk].shape), {})
                for start in range(0, len(inputs), chunk)], dim=1)
        finally:
            module.train()
        return Outputs(logits, self.template.logits_of).probabilities.numpy()

    def members(self):
        """Each member's trained model in turn: the template holding its weights."""
        for k in range(len(next(iter(self.weights.values())))):
            with torch.no_grad():
                for name, weight in self.template.module.named_parameters():
                    weight.copy_(self.weights[name][k])
            yield self.template


@functools.cache
def _keep_freed_memory() -> None:
    """Have glibc keep freed memory for the next allocation (up to 256 MiB) instead of
    handing blocks over 128 KiB back to the system: a stack allocates and frees
    megabytes every step, and memory fresh from the system costs a page fault per 4 KiB
    (a third of a stack's time on this machine's profile). Nothing where malloc is not
    glibc's."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 32 << 20)
        mallopt(_M_TRIM_THRESHOLD, 256 << 20)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


@contextlib.contextmanager
def _large_tensors():
    """Room for a stack's large temporaries: freed memory kept (:func:`_keep_freed_memory`)
    and, under :func:`torch.use_deterministic_algorithms`, new tensors not filled with NaN
    first (torch does so in case a kernel read memory it had not written; the stack's
    kernels write every value before reading it, so no number changes)."""
    _keep_freed_memory()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = fill


def fit_stack(stack: Stack, xs: list, ys: list, task: str, n_outputs: int,
              seeds_: list[int]) -> tuple[list[tuple], list[float]]:
    """Train ``stack``'s members on their own training sets (equally many samples) in
    their own orders; each member's epoch losses (up to its first non-finite batch) and
    initial loss."""
    config = stack.config
    same = all(x is xs[0] for x in xs)
    inputs = [torch.from_numpy(torch_inputs(x)) for x in (xs[:1] if same else xs)]
    wanted = [fitting.targets(y, task, n_outputs, config.loss) for y in ys]
    stacked_inputs = inputs[0] if same else torch.stack(inputs)
    stacked_targets = torch.stack(wanted)
    n, members = len(ys[0]), torch.arange(len(ys))[:, None]
    batch = n if config.full_batch else config.batch_size
    orders = [seeds.generator(s, "data order") for s in seeds_]
    histories = [[] for _ in seeds_]
    initial = [math.nan] * len(seeds_)
    stopped = [False] * len(seeds_)
    for epoch in range(config.epochs):
        rows = torch.from_numpy(np.stack([o.permutation(n) for o in orders]))
        totals = torch.zeros(len(seeds_), dtype=torch.float64)
        finite = torch.ones(len(seeds_), dtype=torch.bool)
        for start in range(0, n, batch):
            index = rows[:, start:start + batch]
            x = stacked_inputs[index] if same else stacked_inputs[members, index]
            losses = stack.step(x, stacked_targets[members, index])
            if epoch == 0 and start == 0:
                initial = losses.tolist()
            # as alone: a member's epoch loss counts its batches up to its first
            # non-finite one (which makes it NaN); it has then stopped training
            totals = torch.where(finite, totals + losses.double() * index.shape[1], totals)
            finite &= torch.isfinite(losses)
        for k, history in enumerate(histories):
            if not stopped[k]:
                history.append(float(totals[k]) / n if finite[k] else math.nan)
                stopped[k] = not bool(finite[k])
    return [tuple(h) for h in histories], initial


def train_stack(assignments: list[Assignment], *, dataset,
                formulation: str = "auto") -> list[InstanceResult]:
    """Train the instances ``assignments`` (one population, not model-level) as stacks
    (members with equally many training samples together; ``formulation``: how the
    stack computes, :data:`FORMULATIONS`) and score each member alone; one result per
    assignment, in order. A member's ``seconds`` is NaN: the stack's time is shared, not
    any one instance's."""
    settings = assignments[0].settings
    operator = OPERATORS[assignments[0].operator] if assignments[0].operator else None
    params = assignments[0].params
    config = population_config(settings.config, operator, params)
    member_seeds = [a.seed for a in assignments]
    data = [training_set(dataset, config, operator, params, s) for s in member_seeds]
    if operator is None or operator.level != "data":  # one training set for all
        data = [data[0]] * len(data)
    spec, dims = spec_of(settings.architecture, dataset.dims), torch_dims(dataset.dims)
    by_size: dict[int, list[int]] = {}
    for k, (_, y) in enumerate(data):
        by_size.setdefault(len(y), []).append(k)
    results = [None] * len(assignments)
    for members in by_size.values():
        chosen = [member_seeds[k] for k in members]
        template = build(spec, dims, config, chosen[0])
        starts = [dict(template.module.named_parameters())] + [
            initial_weights(spec, dims, config, s) for s in chosen[1:]]
        stack = Stack(template, starts, chosen, config, formulation)
        with _large_tensors():
            histories, initial = fit_stack(stack, [data[k][0] for k in members],
                                           [data[k][1] for k in members], dataset.task,
                                           dataset.dims.n_outputs, chosen)
            outputs = stack.outputs(dataset.x_test)
        for j, (k, built) in enumerate(zip(members, stack.members(), strict=True)):
            scored = score_outputs(outputs[j], dataset.y_test, dataset.task)
            losses = histories[j]
            diverged = loss_diverged(initial[j], losses) or not scored.finite
            assignment = assignments[k]
            results[k] = InstanceResult(
                assignment.population, assignment.instance, assignment.seed,
                float(scored.correct.mean()), scored.correct, math.nan,
                weights=fitting.weights_of(built.module) if assignment.keep_weights else None,
                status="diverged" if diverged else "ok", loss_history=losses,
                initial_loss=float(initial[j]), constant=scored.constant,
                model_bytes=fitting.state_bytes(built.module) if assignment.save_model
                else None)
    return results


def stacked_member(settings, dataset, instance: int, population: str):
    """The built model holding the weights instance ``instance`` of ``population`` gets
    when trained in a stack (of one, as the Keras trainer retrains it), for a model-level
    mutant whose healthy weights were not kept."""
    result = train_stack([Assignment(settings, population, instance, keep_weights=True)],
                         dataset=dataset)[0]
    built = build(spec_of(settings.architecture, dataset.dims), torch_dims(dataset.dims),
                  settings.config, result.seed)
    fitting.load_weights(built.module, result.weights)
    return built
