"""PyTorch training functions of a user's own, for the tests of a function that hands
probmut its torch model (probmut.train.torch.returned): a small MLP on the digits,
deterministic per seed, a tenth of a second an instance. Importable by name in
probmut's workers (``tests.train.torch.user_torch:mlp``)."""

import numpy as np
import torch
from torch import nn


def images(x):
    """The spec's images as torch lays them out (channels first), a float32 copy."""
    return torch.from_numpy(np.moveaxis(x, 3, 1).astype(np.float32))


def fit(spec):
    """The trained model and which test inputs it gets right."""
    torch.manual_seed(spec.seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(),
                          nn.Linear(16, spec.n_classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = images(spec.x_train), torch.from_numpy(spec.y_train.astype(np.int64))
    order = torch.Generator().manual_seed(spec.seed)
    for _ in range(spec.hyperparameters.get("epochs", 2)):
        for chosen in torch.randperm(len(y), generator=order).split(64):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x[chosen]), y[chosen]).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        correct = model(images(spec.x_test)).argmax(1).numpy() == spec.y_test
    return model, correct


def mlp(spec):
    """Returns its model, its accuracy and which test inputs it gets right."""
    model, correct = fit(spec)
    return {"accuracy": float(correct.mean()), "correct": correct, "model": model}


def claims_more(spec):
    """Says its model is 10 points better than it is."""
    model, correct = fit(spec)
    return {"accuracy": min(1.0, float(correct.mean()) + 0.1), "model": model}


def keeps_its_model(spec):
    """Returns no model."""
    _, correct = fit(spec)
    return {"accuracy": float(correct.mean())}
