"""Train several instances of one population at once, as one stacked computation.

A *stack* of K members is one TensorFlow computation whose every weight carries a
leading member axis: a Dense kernel of shape ``(in, out)`` becomes ``(K, in, out)``.
Members share no weights and see their own data; per member the computation is the
one Keras does when it trains that instance alone:

* initial weights: slot k holds exactly the weights member k's model gets when built
  for training alone (``clear_session``, ``set_random_seed(seed_k)``, build), so its
  start is bit-identical to the solo start; they are computed from the seeds Keras
  gives the initializers, checked against real builds (see
  :class:`~probmut.train.stack.training.SeedRecipe`);
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
size) gives the same bits, whatever ``--jobs``. What is not bit-identical to
``model.fit``: the data order and dropout masks come from other random streams (same
distribution), and the floating-point summation order of the batched kernels differs
from Keras' solo kernels (differences of the order of float rounding, which training
amplifies like any change of seed). The population's statistics therefore match, which
``scripts/benchmarks/bench_train.py`` measures.

The package has three rooms: :mod:`~probmut.train.stack.eligibility` (which populations
a stack can train, and how many members it gets: ``--stack auto``),
:mod:`~probmut.train.stack.model` (the stacked computation, :class:`StackedModel`) and
:mod:`~probmut.train.stack.training` (training and scoring a stack of instances).
"""

from probmut.train.stack.eligibility import (
    AUTO_STACK,
    CPU_STEP_FLOPS,
    auto_stack_size,
    choose_stack_size,
    gpu_budget,
    member_bytes,
    population_problem,
    stack_problem,
    step_flops,
    trains_stacked,
)
from probmut.train.stack.model import StackedModel, grouped_convolution_trains
from probmut.train.stack.training import (
    data_order,
    fit_stack,
    stacked_model,
    starting_weights,
    train_stack,
)

__all__ = ["AUTO_STACK", "CPU_STEP_FLOPS", "StackedModel", "auto_stack_size",
           "choose_stack_size", "data_order", "fit_stack", "gpu_budget",
           "grouped_convolution_trains", "member_bytes", "population_problem",
           "stack_problem", "stacked_model", "starting_weights", "step_flops", "train_stack",
           "trains_stacked"]
