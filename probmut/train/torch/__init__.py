"""PyTorch models as probmut trains and mutates them: a library the trainer seam plugs in
(docs/torch.md).

The rooms, bottom up: :mod:`~probmut.train.torch.settings` (the one import of the
framework-neutral settings), :mod:`~probmut.train.torch.process` (a worker's set-up),
:mod:`~probmut.train.torch.architectures` (bundled models, a user's
``module:function``), what Keras computes in torch (:mod:`~probmut.train.torch.modules`,
:mod:`~probmut.train.torch.activations`, :mod:`~probmut.train.torch.initializers`,
:mod:`~probmut.train.torch.losses`, :mod:`~probmut.train.torch.optimizers`),
:mod:`~probmut.train.torch.graph` (the layer table, from ``torch.fx``),
:mod:`~probmut.train.torch.build` (an instance's model), :mod:`~probmut.train.torch.fitting`
(the training loop), :mod:`~probmut.train.torch.operators` (every operator),
:mod:`~probmut.train.torch.legality` and :mod:`~probmut.train.torch.dryrun` (before
training), :mod:`~probmut.train.torch.instance` (one instance, and ``train_unit``),
:mod:`~probmut.train.torch.stack` and :mod:`~probmut.train.torch.grouped` (many at once),
:mod:`~probmut.train.torch.trainer` (the trainer seam's protocol: ``probmut train
--framework torch``), :mod:`~probmut.train.torch.returned` (the torch model a user's
training function returns) and :mod:`~probmut.train.torch.saved` (saved ``.pt`` models
scored again: ``probmut evaluate --framework torch``).

probmut imports this package only where torch is asked for (the torch trainer, a
function's returned torch model, ``evaluate --framework torch``), and it imports
neither TensorFlow nor Keras: a Keras run and the analysis never import torch, a torch
run never TensorFlow (unless Keras must read its data set: Keras' data sets, image
folders).
"""
