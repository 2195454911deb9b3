"""How one torch model is trained and scored: probmut's own loop with the Keras trainer's
settings (:func:`fit`), :func:`predict`, and the model as ``.pt`` bytes.

:func:`fit` does what :func:`probmut.train.fitting.fit` has Keras' ``model.fit`` do, from
the same :class:`~probmut.train.torch.settings.TrainConfig`:

* every epoch a fresh order of the training samples, in batches of ``batch_size`` with a
  smaller last batch (``full_batch``: one batch of all of them);
* a batch's loss is Keras' loss of that name (:mod:`probmut.train.torch.losses`) plus the
  weight penalties, its gradient clipped and applied by Keras' optimizer rule
  (:mod:`probmut.train.torch.optimizers`);
* an epoch's loss is the mean of its batches' losses weighted by their sizes (Keras'
  running mean); the untrained model's loss is its first batch's, before the update;
* training stops after the first batch whose loss is not finite (that epoch's loss
  kept), or past the deadline;
* with a validation set and a patience, Keras' ``EarlyStopping(monitor="val_loss")``:
  after each epoch the validation loss (inference mode, batches of ``batch_size``);
  training stops once it has not improved for ``patience`` epochs (not after the first).

Every random draw comes from the instance's seed: its data order from the ``"data
order"`` stream (:mod:`probmut.seeds`), its dropout masks from a torch generator seeded
by its ``"dropout masks"`` stream, its initial weights from ``"initial weights"``
(:func:`probmut.train.torch.build.build`); a model whose forward draws from torch's
global generator itself (an untraced ``F.dropout``) finds it seeded by the instance.
"""

from __future__ import annotations

import io
import math
import time

import numpy as np
import torch

from probmut import seeds
from probmut.train.fitting import FitReport
from probmut.train.tasks import TASKS
from probmut.train.torch.architectures import torch_inputs
from probmut.train.torch.losses import Outputs, batch_loss
from probmut.train.torch.optimizers import KerasOptimizer


def targets(y: np.ndarray, task: str, n_outputs: int, loss: str) -> torch.Tensor:
    """What a loss compares the outputs with: one-hot classes unless the loss is sparse
    (:data:`probmut.train.tasks.TASKS`)."""
    values = TASKS[task].targets(y, n_outputs, loss)
    return torch.from_numpy(np.asarray(values))


def loss_of(built, x: torch.Tensor, target: torch.Tensor, loss: str) -> torch.Tensor:
    """A batch's training loss: Keras' ``loss`` of the model's outputs plus its penalties."""
    outputs = Outputs(built.training_module(x), built.logits_of)
    return batch_loss(loss, target, outputs) + built.penalty()


def seed_generators(built, seed: int) -> None:
    """The model's dropouts draw from the instance's ``"dropout masks"`` stream."""
    generator = torch.Generator().manual_seed(seeds.seed_of(seed, "dropout masks"))
    for dropout in built.dropouts():
        dropout.generator, dropout.mask = generator, None


class EarlyStopping:
    """Keras' ``EarlyStopping(monitor="val_loss", patience)`` (min_delta 0, no baseline)."""

    def __init__(self, patience: int):
        self.patience, self.wait, self.best = patience, 0, None

    def stops(self, epoch: int, value: float) -> bool:
        self.wait += 1
        if self.best is None or value < self.best:
            self.best, self.wait = value, 0
            return False
        return self.wait >= self.patience and epoch > 0


def mean_loss(built, x: torch.Tensor, target: torch.Tensor, loss: str, batch: int) -> float:
    """The loss over a set in inference mode, batch by batch, weighted by batch size."""
    built.module.eval()
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(x), batch):
            rows = slice(start, start + batch)
            total += float(loss_of(built, x[rows], target[rows], loss)) * len(x[rows])
    built.module.train()
    return total / len(x)


def fit(built, x, y, task: str, n_outputs: int, config, seed: int, validation=None,
        deadline: float | None = None) -> FitReport:
    """Train ``built`` (:func:`probmut.train.torch.build.build`) on ``(x, y)`` (as the
    data gives them) per ``config``, drawing from the instance ``seed``. ``validation``
    is the data's ``(x_val, y_val)`` or None: early stopping with ``config.patience``
    (unless ``config.validation`` is False). Stops at a non-finite loss, or at the first
    batch end past ``deadline`` (a ``time.monotonic()`` value)."""
    inputs = torch.from_numpy(torch_inputs(x))
    wanted = targets(y, task, n_outputs, config.loss)
    weights = [w for w in built.module.parameters() if w.requires_grad]
    optimizer = KerasOptimizer(config.optimizer, config.learning_rate, config.clip, weights)
    seed_generators(built, seed)
    order = seeds.generator(seed, "data order")
    batch = len(inputs) if config.full_batch else config.batch_size
    stopping = None
    if validation is not None and config.validation and config.patience is not None:
        stopping = EarlyStopping(config.patience)
        x_val, y_val = torch.from_numpy(torch_inputs(validation[0])), \
            targets(validation[1], task, n_outputs, config.loss)
    losses, initial, timed_out = [], math.nan, False
    built.module.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for epoch in range(config.epochs):
            total, seen, stop = 0.0, 0, False
            permutation = torch.from_numpy(order.permutation(len(inputs)))
            for start in range(0, len(inputs), batch):
                rows = permutation[start:start + batch]
                loss = loss_of(built, inputs[rows], wanted[rows], config.loss)
                optimizer.step(torch.autograd.grad(loss, weights))
                value = float(loss.detach())
                if not losses and not seen:
                    initial = value
                total, seen = total + value * len(rows), seen + len(rows)
                if not math.isfinite(value):
                    stop = True
                    break
                if deadline is not None and time.monotonic() > deadline:
                    timed_out = stop = True
                    break
            losses.append(total / seen)
            if stopping is not None and stopping.stops(
                    epoch, mean_loss(built, x_val, y_val, config.loss, batch)):
                stop = True
            if stop:
                break
    return FitReport(tuple(losses), initial, timed_out)


def predict(module, x, batch: int = 1024) -> np.ndarray:
    """The model's outputs for inputs ``x`` (as the data gives them), in inference mode."""
    inputs = torch.from_numpy(torch_inputs(x))
    module.eval()
    with torch.no_grad():
        outputs = [module(inputs[start:start + batch]) for start in range(0, len(inputs), batch)]
    return torch.cat(outputs).numpy()


def state_bytes(module) -> bytes:
    """The model's ``state_dict`` as a ``.pt`` file's bytes (``torch.save``), so that a
    worker can hand it to the driver, which writes every file of a run."""
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getvalue()


def weights_of(module) -> list[np.ndarray]:
    """The model's state (weights and buffers, in ``state_dict`` order) as arrays: what a
    run keeps of a trained healthy instance."""
    return [value.detach().numpy().copy() for value in module.state_dict().values()]


def load_weights(module, weights: list) -> None:
    """Set the model's state from :func:`weights_of`'s arrays."""
    keys = list(module.state_dict())
    if len(keys) != len(weights):
        raise ValueError(f"{len(weights)} kept arrays for a model of {len(keys)}")
    module.load_state_dict({k: torch.from_numpy(np.asarray(w)) for k, w in
                            zip(keys, weights, strict=True)})
