"""torch models the tests train and mutate as a user's ``module:function``."""

import torch
import torch.nn.functional as F
from torch import nn


class SkipShared(nn.Module):
    """A convolution, a residual block whose two convolutions are one shared module (a
    skip connection around it), a functional ReLU, a dense head with a functional
    dropout and a softmax."""

    def __init__(self, input_shape, n_classes):
        super().__init__()
        channels, height, width = input_shape
        self.stem = nn.Conv2d(channels, 6, 3, padding=1)
        self.shared = nn.Conv2d(6, 6, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(6 * (height // 2) * (width // 2), 12)
        self.out = nn.Linear(12, n_classes)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = x + self.shared(torch.relu(self.shared(x)))
        x = self.pool(x).flatten(1)
        x = F.dropout(torch.relu(self.head(x)), 0.2, self.training)
        return torch.softmax(self.out(x), dim=1)


def skip_shared(input_shape, n_classes):
    return SkipShared(input_shape, n_classes)


class Branching(nn.Module):
    """An MLP whose forward depends on its data (dynamic control flow: torch.fx cannot
    trace it)."""

    def __init__(self, input_shape, n_classes):
        super().__init__()
        features = int(torch.tensor(input_shape).prod())
        self.hidden = nn.Linear(features, 16)
        self.out = nn.Linear(16, n_classes)

    def forward(self, x):
        h = self.hidden(x.flatten(1))
        if h.mean() > 0:
            h = torch.relu(h)
        return torch.softmax(self.out(h), dim=1)


def branching(input_shape, n_classes):
    return Branching(input_shape, n_classes)


def small_mlp(input_shape, n_classes):
    """A Keras-like MLP without dropout (deterministic forward), for cross-framework
    checks."""
    features = int(torch.tensor(input_shape).prod())
    return nn.Sequential(nn.Flatten(), nn.Linear(features, 16), nn.Tanh(),
                         nn.Linear(16, n_classes), nn.Softmax(dim=1))


def not_a_module(input_shape, n_classes):
    return "a string"


def wrong_outputs(input_shape, n_classes):
    """Three outputs whatever the classes."""
    return nn.Sequential(nn.Flatten(), nn.Linear(int(torch.tensor(input_shape).prod()), 3))
