"""The torch training loop: the Keras trainer's settings (penalties, early stopping, a
diverging loss, a deadline, one batch, the validation set trained on), results that
depend on the seed alone, and the unit of work the trainer seam calls."""

import io
import math

import numpy as np
import pytest


def _settings(architecture="mlp", **changes):
    from probmut.train.torch.settings import TrainConfig
    from probmut.train.work import RunSettings

    config = TrainConfig(epochs=2, batch_size=32).replace(**changes)
    return RunSettings("digits", architecture, config, seed=7)


def _train(data, settings, population="healthy", instance=0, text=None, **options):
    from probmut.train.operators import parse_mutations
    from probmut.train.torch.architectures import spec_of
    from probmut.train.torch.instance import train_unit
    from probmut.train.torch.legality import prepare
    from probmut.train.work import Assignment

    operator = params = None
    if text is not None:
        (mutation,) = prepare(parse_mutations(text), spec_of(settings.architecture, data.dims),
                              data, settings.config)
        population, operator, params = mutation.population, mutation.operator.name, \
            mutation.params
    (result,) = train_unit([Assignment(settings, population, instance, operator, params,
                                       **options)], False, dataset=data)
    return result


def test_the_same_seed_gives_the_same_instance_whatever_ran_before(small_digits):
    first = _train(small_digits, _settings())
    _train(small_digits, _settings(), instance=1)     # other work in the same process
    again = _train(small_digits, _settings())
    other = _train(small_digits, _settings(), instance=1)
    assert first.status == "ok" and first.loss_history == again.loss_history
    assert np.array_equal(first.correct, again.correct)
    assert first.loss_history != other.loss_history


def test_workers_give_the_numbers_of_this_process(small_digits):
    """A fresh worker process, set up as the seam sets its workers up, trains the
    instances this process trains, in the other order, into the same numbers."""
    import concurrent.futures
    import multiprocessing

    from probmut.train.torch.instance import train_unit
    from probmut.train.torch.process import configure_torch
    from probmut.train.work import Assignment

    units = [[Assignment(_settings(), "healthy", i)] for i in range(2)]
    here = [train_unit(unit, False, dataset=small_digits)[0] for unit in units]
    with concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"), initializer=configure_torch,
            initargs=(1,)) as pool:
        futures = [pool.submit(train_unit, unit, False, dataset=small_digits)
                   for unit in reversed(units)]
        there = [future.result()[0] for future in reversed(futures)]
    for a, b in zip(here, there, strict=True):
        assert a.loss_history == b.loss_history and np.array_equal(a.correct, b.correct)


def test_a_weight_penalty_adds_keras_l2_to_the_loss(small_digits):
    """The same seed (the mutant's), so the same initial weights and first batch: the
    first batch's loss grows by exactly Keras' L2 penalty (0.01 x sum w^2) of the layer's
    initial kernel."""
    from probmut.train.torch.architectures import spec_of, torch_dims
    from probmut.train.torch.build import build
    from probmut.train.work import instance_seed

    settings, population = _settings(), "add_weights_regularisation_l2@1"
    penalised = _train(small_digits, settings, text="add_weights_regularisation:l2@1")
    unpenalised = _train(small_digits, settings, population=population)
    start = build(spec_of("mlp", small_digits.dims), torch_dims(small_digits.dims),
                  settings.config, seed=instance_seed(settings.seed, 0, population))
    penalty = 0.01 * float((start.module.get_submodule("1").weight.detach() ** 2).sum())
    assert penalised.initial_loss - unpenalised.initial_loss == pytest.approx(penalty, rel=1e-4)


def test_early_stopping_stops_once_the_validation_loss_stops_improving(digits):
    """A validation split and patience 0: training stops after the first epoch whose
    validation loss is not lower than the best (Keras' rule: never after the first)."""
    import dataclasses

    import torch

    from probmut.train.torch.architectures import spec_of, torch_dims
    from probmut.train.torch.build import build
    from probmut.train.torch.fitting import fit, mean_loss, targets, torch_inputs

    data = dataclasses.replace(digits, x_val=digits.x_train[1000:], y_val=digits.y_train[1000:],
                               x_train=digits.x_train[:300], y_train=digits.y_train[:300])
    config = _settings(epochs=30, patience=0, learning_rate=0.05, optimizer="sgd").config
    built = build(spec_of("mlp", data.dims), torch_dims(data.dims), config, seed=3)
    report = fit(built, data.x_train, data.y_train, "classification", 10, config, 3,
                 data.validation)
    assert 1 < len(report.losses) < 30
    # replay: the validation losses of the same training, epoch by epoch, stop there
    x_val = torch.from_numpy(torch_inputs(data.x_val))
    y_val = targets(data.y_val, "classification", 10, config.loss)
    losses = []
    for epochs in range(1, len(report.losses) + 1):
        replay = build(spec_of("mlp", data.dims), torch_dims(data.dims), config, seed=3)
        fit(replay, data.x_train, data.y_train, "classification", 10,
            config.replace(epochs=epochs, patience=None), 3)
        losses.append(mean_loss(replay, x_val, y_val, config.loss, 32))
    assert losses[-1] >= min(losses[:-1])
    assert all(later < earlier for earlier, later in zip(losses[:-2], losses[1:-1], strict=True))


def test_a_diverging_loss_stops_training_and_is_recorded(small_digits):
    result = _train(small_digits, _settings(epochs=5, optimizer="sgd"),
                    text="change_learning_rate:1e12")
    assert result.status == "diverged"
    assert len(result.loss_history) < 5 and not math.isfinite(result.loss_history[-1])


def test_a_deadline_stops_training_as_timed_out(small_digits):
    result = _train(small_digits, _settings(epochs=50), timeout=0.01)
    assert result.status == "timed out" and result.correct is None


def test_one_batch_and_the_validation_set_trained_on_change_what_is_trained(digits):
    import dataclasses

    from probmut.train.operators import OPERATORS
    from probmut.train.training_set import training_set

    data = dataclasses.replace(digits, x_val=digits.x_train[1000:], y_val=digits.y_train[1000:],
                               x_train=digits.x_train[:1000], y_train=digits.y_train[:1000])
    config = _settings(patience=2).config
    removed = OPERATORS["remove_validation_set"].apply(config, {})
    assert len(training_set(data, removed, None, None, 0)[1]) == len(digits.y_train)
    assert len(training_set(data, config, None, None, 0)[1]) == 1000
    batched = _train(data, _settings(epochs=1))
    whole = _train(data, _settings(epochs=1), text="disable_batching")
    assert whole.initial_loss == pytest.approx(batched.initial_loss, abs=0.5)
    assert whole.loss_history != batched.loss_history


def test_a_model_level_mutant_derives_alike_from_kept_or_retrained_weights(small_digits):
    """Kept healthy weights (what a run passes the seam) and healthy instance 0 trained
    again give the same mutant; the saved model loads into a fresh build."""
    import torch

    from probmut.train.operators import parse_mutations
    from probmut.train.torch.architectures import spec_of, torch_dims
    from probmut.train.torch.build import build
    from probmut.train.torch.instance import train_unit
    from probmut.train.torch.legality import prepare
    from probmut.train.work import Assignment

    settings = _settings()
    healthy = _train(small_digits, settings, keep_weights=True)
    (mutation,) = prepare(parse_mutations("neurons_freezing:0.5"),
                          spec_of("mlp", small_digits.dims), small_digits, settings.config)
    assignment = Assignment(settings, mutation.population, 0, mutation.operator.name,
                            mutation.params, save_model=True)
    (kept,) = train_unit([assignment], False, healthy.weights, dataset=small_digits)
    (retrained,) = train_unit([assignment], False, dataset=small_digits)
    assert kept.match == retrained.match == "different"
    assert np.array_equal(kept.correct, retrained.correct) and kept.loss_history == ()
    fresh = build(spec_of("mlp", small_digits.dims), torch_dims(small_digits.dims),
                  settings.config, seed=0)
    fresh.module.load_state_dict(torch.load(io.BytesIO(kept.model_bytes)))
    zeroed = fresh.module.get_submodule("1").weight.abs().sum(1) == 0
    assert int(zeroed.sum()) == 64      # int(128 x 0.5) units frozen
