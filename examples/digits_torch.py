"""A PyTorch training function for ``probmut train --trainer examples.digits_torch:train``:
a small CNN on the digits, one instance per call, that hands probmut its trained model
(docs/training.md, *Your own training code*, and docs/torch.md).

It is plain PyTorch and uses nothing of probmut. ``spec`` holds the instance's seed, its
data (a data-level mutation already applied; images as ``(n, height, width, channels)``)
and its hyperparameters, the mutated one in place. Returning the model as ``"model"``
lets probmut apply its model-level operators to it (``--mutation neurons_freezing``,
...): probmut scores the model itself on the test images laid out as torch lays them out,
channels first, as this function does. It is deterministic per seed: the initial weights,
the batches' order and the dropout masks come from ``spec.seed``.
"""

import numpy as np
import torch
from torch import nn


def images(x):
    """Images as torch lays them out: ``(n, channels, height, width)``, a float32 copy
    (the spec's arrays are read-only)."""
    return torch.from_numpy(np.moveaxis(x, 3, 1).astype(np.float32))


def train(spec):
    settings = spec.hyperparameters  # read what you use: probmut records it
    torch.manual_seed(spec.seed)
    torch.use_deterministic_algorithms(True)
    channels, classes = spec.x_train.shape[3], spec.n_classes
    model = nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * (spec.x_train.shape[1] // 2) * (spec.x_train.shape[2] // 2), 32),
        nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.get("learning_rate", 0.003))
    x, y = images(spec.x_train), torch.from_numpy(spec.y_train.astype(np.int64))
    batch, order = settings.get("batch_size", 32), torch.Generator().manual_seed(spec.seed)
    losses = []
    for _ in range(settings.get("epochs", 5)):
        model.train()
        total = 0.0
        for chosen in torch.randperm(len(y), generator=order).split(batch):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[chosen]), y[chosen])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(chosen)
        losses.append(total / len(y))
    model.eval()
    with torch.no_grad():
        predicted = model(images(spec.x_test)).argmax(1).numpy()  # images channels first
    correct = predicted == spec.y_test
    return {"accuracy": float(correct.mean()), "correct": correct, "loss_history": losses,
            "model": model}
