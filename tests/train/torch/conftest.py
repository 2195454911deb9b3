"""What the torch trainer's tests share: torch set up as a worker sets it up, the
bundled digits (small enough for a few epochs in a second)."""

import pytest

from . import torch_or_skip


@pytest.fixture(scope="module")
def digits():
    torch_or_skip()
    from probmut.train.datasets import load_dataset
    from probmut.train.torch.process import configure_torch

    configure_torch(1)
    return load_dataset("digits")


@pytest.fixture(scope="module")
def small_digits(digits):
    """300 training samples of the digits (the whole test set), for tests that train."""
    import dataclasses

    return dataclasses.replace(digits, x_train=digits.x_train[:300], y_train=digits.y_train[:300])


@pytest.fixture(scope="module")
def tiny_digits(digits):
    """64 training and 100 test samples: two batches, for tests that check what a trained
    model is, not how well it learnt."""
    import dataclasses

    return dataclasses.replace(digits, x_train=digits.x_train[:64], y_train=digits.y_train[:64],
                               x_test=digits.x_test[:100], y_test=digits.y_test[:100])
