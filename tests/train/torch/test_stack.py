"""torch stacks: a member trains as the same instance alone (its start exactly, its
training to float rounding), what cannot stack says why, and a stacked population's
accuracies come from the distribution of the same population trained one at a time."""

import math

import numpy as np
import pytest

SKIP_SHARED = "tests.train.torch.subjects:skip_shared"


def _assignments(architecture, count, epochs=2, population="healthy", operator=None,
                 params=None, **changes):
    from probmut.train.torch.settings import TrainConfig
    from probmut.train.work import Assignment, RunSettings

    config = TrainConfig(epochs=epochs, batch_size=32).replace(**changes)
    settings = RunSettings("digits", architecture, config, seed=11, stack=count)
    return [Assignment(settings, population, i, operator, params, keep_weights=True)
            for i in range(count)]


@pytest.mark.parametrize("architecture, population, operator, params, changes, formulation", [
    ("digits_cnn", "healthy", None, None, {}, "grouped"),
    ("digits_cnn", "healthy", None, None, {}, "vmap"),
    ("deepcrime_mnist", "healthy", None, None, {}, "grouped"),
    ("mlp", "delete_training_data_20", "delete_training_data",
     {"percent": 20.0, "classes": None}, {"optimizer": "rmsprop", "clip": ("norm", 0.5)},
     "grouped"),
    (SKIP_SHARED, "add_weights_regularisation_l1@7", "add_weights_regularisation",
     {"name": "l1", "layer": 7}, {}, "auto"),
], ids=["digits_cnn-grouped", "digits_cnn-vmap", "two-dropouts-grouped",
        "mlp-own-data-rmsprop-clipnorm", "skip-shared-penalty-vmap"])
def test_a_member_trains_as_the_same_instance_alone(small_digits, architecture, population,
                                                    operator, params, changes, formulation):
    """Stack of 3 against each instance alone: the same start (the first batch's loss
    to float rounding: another member's initial weights would change it in the second
    digit), the same losses and weights to float rounding (two epochs move the weights by
    about 0.1; rounding leaves under 1e-5), the same scores; a model with two dropouts
    (their masks drawn batch by batch in turn, as alone); each member on its own mutated
    training set, with its own clipping; a model with a skip connection, a shared
    convolution and a penalty through vmap."""
    from probmut.train.torch.instance import train_unit
    from probmut.train.torch.stack import train_stack

    assignments = _assignments(architecture, 3, population=population, operator=operator,
                               params=params, **changes)
    stacked = train_stack(assignments, dataset=small_digits, formulation=formulation)
    for assignment, member in zip(assignments, stacked, strict=True):
        (alone,) = train_unit([assignment], False, dataset=small_digits)
        assert member.instance == assignment.instance and math.isnan(member.seconds)
        assert member.initial_loss == pytest.approx(alone.initial_loss, rel=1e-6)
        np.testing.assert_allclose(member.loss_history, alone.loss_history, rtol=1e-5)
        for a, b in zip(member.weights, alone.weights, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)
        assert np.mean(member.correct != alone.correct) <= 0.01


def test_a_diverging_member_is_recorded_as_alone(small_digits):
    """A learning rate that makes the loss overflow: each member's losses end with the
    epoch of its first non-finite batch, as alone, and it is flagged diverged."""
    from probmut.train.torch.instance import train_unit
    from probmut.train.torch.stack import train_stack

    assignments = _assignments("mlp", 2, epochs=4, optimizer="sgd", learning_rate=1e12)
    for member, assignment in zip(train_stack(assignments, dataset=small_digits), assignments,
                                  strict=True):
        (alone,) = train_unit([assignment], False, dataset=small_digits)
        assert member.status == alone.status == "diverged"
        assert len(member.loss_history) == len(alone.loss_history) < 4
        assert not math.isfinite(member.loss_history[-1])


def test_what_cannot_stack_says_why(small_digits):
    import dataclasses

    from probmut.train.torch.settings import TrainConfig
    from probmut.train.torch.stack import stack_problem

    config = TrainConfig(epochs=1, batch_size=32)
    assert stack_problem("digits_cnn", small_digits, config) is None
    normalised = config.replace(structure=(("add", 0, "batch_normalization"),))
    assert "running statistics" in stack_problem("digits_cnn", small_digits, normalised)
    validated = dataclasses.replace(small_digits, x_val=small_digits.x_test,
                                    y_val=small_digits.y_test)
    assert "early stopping" in stack_problem("mlp", validated, config.replace(patience=2))
    assert "cannot be traced" in stack_problem("tests.train.torch.subjects:branching",
                                               small_digits, config)


@pytest.mark.slow
def test_stacked_and_alone_populations_have_the_same_accuracies(digits):
    """40 digits_cnn instances (3 epochs, batch 32, Adam, all the digits) trained in two
    stacks of 20 through the trainer's entry point and one at a time, from the same
    seeds: what the exact tests above (stacks of 3, 300 samples) leave out, full-size
    stacks scored in chunks of inputs (102 a chunk: the test set's 450 in five) and a
    smaller last batch. Two-sample Kolmogorov-Smirnov at the 0.001 level (the test fails
    by chance once in a thousand runs), and each member within float rounding of its
    instance alone: most accuracies equal, none apart by more than a few test inputs."""
    from scipy import stats

    from probmut.train.torch.instance import train_unit
    from probmut.train.torch.stack import _SCORED_AT_ONCE

    assignments = _assignments("digits_cnn", 40, epochs=3)
    assert _SCORED_AT_ONCE // 20 < len(digits.y_test)
    stacked = [r for start in range(0, 40, 20)
               for r in train_unit(assignments[start:start + 20], True, dataset=digits)]
    alone = [train_unit([a], False, dataset=digits)[0] for a in assignments]
    a = np.array([r.accuracy for r in stacked])
    b = np.array([r.accuracy for r in alone])
    assert stats.ks_2samp(a, b).pvalue > 0.001
    assert np.mean(a == b) > 0.5
    assert np.max(np.abs(a - b)) <= 3 / len(digits.y_test)


def test_the_grouped_model_pools_before_a_relu_with_the_same_gradients():
    """A ReLU before a max pool runs after it (on a quarter of the values): member by
    member the same outputs and weight gradients as the model's own layers in their
    order, also where a window's values are all cut to zero by the ReLU (ties)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from probmut.train.torch.build import Built
    from probmut.train.torch.graph import TorchGraph, trace
    from probmut.train.torch.grouped import GroupedModel

    torch.manual_seed(0)
    model = trace(nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Flatten(), nn.Linear(12, 2)))
    grouped = GroupedModel(Built(model, TorchGraph(model, (1, 4, 4)), (1, 4, 4)))
    assert [kind for _, _, kind, _, _ in grouped.steps][1:5] == [
        "convolution", "pool", "elementwise", "flatten"]
    weights = {n: torch.stack([w, w - 0.3]).detach().requires_grad_()
               for n, w in model.named_parameters()}
    x = torch.randn(2, 5, 1, 4, 4)
    out = grouped(weights, x, {})
    grads = torch.autograd.grad(out.square().sum(), list(weights.values()))
    zeros = 0
    for k in range(2):
        with torch.no_grad():
            for n, w in model.named_parameters():
                w.copy_(weights[n][k])
        alone = model(x[k])
        pooled = F.max_pool2d(F.relu(F.conv2d(x[k], weights["0.weight"][k],
                                              weights["0.bias"][k], padding=1)), 2)
        zeros += int((pooled == 0).sum())
        assert torch.allclose(out[k], alone, atol=1e-6)
        own = torch.autograd.grad(alone.square().sum(), list(model.parameters()))
        for g, o in zip(grads, own, strict=True):
            assert torch.allclose(g[k], o, atol=1e-5)
    assert zeros > 0  # windows the ReLU made all zero
