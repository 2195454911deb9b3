"""Every operator on torch models: what the dry run says a mutant changes is what the
trained mutant's weights show, on a bundled architecture and on a module with a skip
connection and a shared submodule; mutants that change nothing are flagged equivalent;
a model torch.fx cannot trace takes no layer operator (one line, the reason)."""

import io

import numpy as np
import pytest

from probmut.errors import ProbmutError

from . import torch_or_skip

torch_or_skip()

from probmut.train.operators import parse_mutations  # noqa: E402
from probmut.train.torch.legality import check  # noqa: E402

SKIP_SHARED = "tests.train.torch.subjects:skip_shared"
SUBJECTS = ["digits_cnn", SKIP_SHARED]


def _model_level():
    from probmut.train.operators import OPERATORS

    return [name for name, op in OPERATORS.items() if op.level == "model"]


@pytest.fixture(scope="module")
def healthy(small_digits):
    """Healthy instance 0 of each subject, trained one epoch: its settings, built model
    and kept weights."""
    from probmut.train.torch.instance import healthy_model
    from probmut.train.torch.settings import TrainConfig
    from probmut.train.work import RunSettings

    found = {}
    for subject in SUBJECTS:
        settings = RunSettings("digits", subject, TrainConfig(epochs=1, batch_size=32), seed=42)
        built, report = healthy_model(settings, small_digits, 0)
        assert report.losses
        found[subject] = settings, built
    return found


def _state(built) -> dict:
    return {k: v.detach().numpy().copy() for k, v in built.module.state_dict().items()}


@pytest.mark.parametrize("subject", SUBJECTS)
@pytest.mark.parametrize("name", _model_level())
def test_the_dry_run_counts_what_the_trained_mutant_changed(small_digits, healthy, subject,
                                                            name):
    """The dry run (on healthy instance 0's initial weights) and the mutant derived from
    the trained healthy instance 0 (the same seed) change the same weights, units or
    neurons per layer, or the same layers; a layer operator keeps every trained weight."""
    from probmut.train.operators import OPERATORS, parse_mutations
    from probmut.train.torch.architectures import spec_of
    from probmut.train.torch.dryrun import dry_run, model_changes
    from probmut.train.torch.instance import mutate_paired
    from probmut.train.torch.legality import check
    from probmut.train.work import instance_seed

    settings, trained = healthy[subject]
    spec = spec_of(subject, small_digits.dims)
    (preview,) = dry_run([name], spec, small_digits, settings.config, seed=42).mutations
    if not preview.legal:
        assert subject == SKIP_SHARED and name == "neuron_switch", preview.reason
        return
    (mutation,) = check(parse_mutations(f"{name}:{preview.magnitude}")[0], spec, small_digits,
                        settings.config, trained.copy())
    healthy_model, before = trained.copy(), _state(trained)
    rng = np.random.default_rng(instance_seed(42, 0, mutation.population))
    mutant, _, match = mutate_paired(healthy_model, OPERATORS[name], mutation.params, rng,
                                     small_digits)
    after = _state(mutant)
    if preview.counted is None:  # a layer operator: the same layers changed, weights kept
        assert preview.settings == model_changes(trained, mutant)
        kept = {k: v for k, v in after.items() if k in before}
        assert all(np.array_equal(before[k], v) for k, v in kept.items())
        return
    graph = trained.graph
    for count in preview.layers:
        layer = graph.layers[count.index]
        old, new = before[f"{layer.name}.weight"], after[f"{layer.name}.weight"]
        if preview.counted == "weights":
            changed = int(np.sum(old != new))
        elif preview.counted == "units":
            rows = (old != new).reshape(len(old), -1).any(axis=1)
            if f"{layer.name}.bias" in before:
                rows |= before[f"{layer.name}.bias"] != after[f"{layer.name}.bias"]
            changed = int(rows.sum())
        else:  # neurons: the source's units whose weights into its consumers were zeroed
            blocked = set()
            for consumer, carried in graph.neuron_routes(layer):
                key = f"{consumer.name}.weight"
                columns = np.moveaxis(before[key] != after[key], 1, 0).reshape(
                    before[key].shape[1], -1).any(axis=1)
                blocked |= set(carried[columns & (carried >= 0)].tolist())
            changed = len(blocked)
        assert changed == count.changed, (layer.name, count)
    assert sum(c.changed for c in preview.layers) >= 1
    assert match in ("different", "test predictions", "training and test predictions")


def test_the_skip_connection_and_the_shared_convolution_are_followed(small_digits, healthy):
    """The shared convolution is one layer with two calls; neither it nor the stem (whose
    neurons meet the addition) nor the output layer can have its neurons blocked; the
    head can. Layer 4 (the addition) is the skip connection; the functional dropout
    became a seeded dropout module."""
    _, built = healthy[SKIP_SHARED]
    graph = built.graph
    assert [layer.kind for layer in graph.layers] == [
        "Conv2d", "relu", "Conv2d", "relu", "add", "MaxPool2d", "flatten", "Linear", "relu",
        "SeededDropout", "Linear", "softmax"]
    assert len(graph.layers[2].calls) == 2
    routed = {layer.name for layer in graph.layers
              if graph.weighted(layer) and graph.neuron_routes(layer) is not None}
    assert routed == {"head"}


@pytest.mark.parametrize("text, match", [
    ("weights_fuzzing:0.05_0", "weights"),              # noise of sd 0: nothing changes
    ("gaussian_fuzzing:0.01_sd0", "weights"),
    ("neurons_freezing:0@network", "weights"),          # ratio 0: no unit
])
def test_a_model_level_mutant_that_changes_nothing_is_flagged_equivalent(
        small_digits, healthy, text, match):
    from probmut.train import flags
    from probmut.train.operators import parse_mutations
    from probmut.train.torch.instance import mutate_paired

    _, trained = healthy["digits_cnn"]
    mutation = parse_mutations(text)[0]
    params = {**mutation.params, "layer": mutation.params["layer"] or 0}
    _, _, found = mutate_paired(trained.copy(), mutation.operator, params,
                                np.random.default_rng(0), small_digits)
    assert found == match and found == flags.SAME_WEIGHTS


@pytest.mark.parametrize("text", ["change_epochs:15", "change_activation_function:relu@1",
                                  "change_dropout_rate:0.25", "data_shuffle"])
def test_training_and_data_mutants_that_change_nothing_are_equivalent_before_training(
        small_digits, text):
    from probmut.train.operators import parse_mutations
    from probmut.train.torch.architectures import ARCHITECTURES
    from probmut.train.torch.legality import prepare

    spec = ARCHITECTURES["digits_cnn"]
    (bound,) = prepare(parse_mutations(text), spec, small_digits, spec.config)
    assert bound.equivalent


def _training_level():
    from probmut.train.operators import OPERATORS

    return [name for name, op in OPERATORS.items() if op.level == "training"]


@pytest.mark.parametrize("subject", SUBJECTS)
@pytest.mark.parametrize("text", _training_level() + ["add_layer:tanh@4", "remove_bias:0"])
def test_a_trained_training_level_mutant_is_the_model_its_dry_run_describes(
        tiny_digits, subject, text):
    """Each training-level operator at its default: legal, or refused with a reason; a
    legal mutant's dry run names what changes (or why nothing does), and the trained
    mutant's saved state (``.pt`` bytes) holds the weights of the model the dry run
    builds, which differ from the healthy model's where the dry run says layers do."""
    import torch

    from probmut.train.torch.architectures import resolve
    from probmut.train.torch.dryrun import dry_run
    from probmut.train.torch.instance import train_instance
    from probmut.train.torch.legality import healthy_model
    from probmut.train.work import Assignment, RunSettings

    spec = resolve(subject, tiny_digits.dims)
    config = spec.config.replace(epochs=1, clip=("norm", 1.0))
    (preview,) = dry_run([text], spec, tiny_digits, config, seed=1).mutations
    if not preview.legal:
        assert preview.reason and "\n" not in preview.reason
        return
    assert preview.settings or preview.equivalent
    (mutation,) = [m for m in parse_mutations(text)]
    mutation = check(mutation, spec, tiny_digits, config, healthy_model(spec, tiny_digits,
                                                                          config))[0]
    settings = RunSettings("digits", subject, config, seed=1)
    result = train_instance(Assignment(settings, mutation.population, 0, mutation.operator.name,
                                       mutation.params, save_model=True), dataset=tiny_digits)
    assert result.status in ("ok", "diverged"), result.error
    saved = {k: tuple(v.shape) for k, v in torch.load(io.BytesIO(result.model_bytes)).items()}
    mutant = healthy_model(spec, tiny_digits, mutation.operator.apply(config, mutation.params))
    healthy = healthy_model(spec, tiny_digits, config)
    assert saved == {k: tuple(v.shape) for k, v in mutant.module.state_dict().items()}
    if any(key.endswith(": bias") or after == "BatchNormalization"
           for key, (_, after) in preview.settings.items()):
        assert saved != {k: tuple(v.shape) for k, v in healthy.module.state_dict().items()}


def test_a_removed_layer_leaves_the_model_and_its_mutant_trains_in_a_stack(tiny_digits):
    """remove_layer on digits_cnn's dropout: its module leaves the model (not in the
    saved state, not a dropout that the stack looks for in the graph: a stack of them
    failed before), and a stack of two trains."""
    from probmut.train.torch.architectures import ARCHITECTURES, torch_dims
    from probmut.train.torch.build import build
    from probmut.train.torch.stack import train_stack
    from probmut.train.work import Assignment, RunSettings

    spec = ARCHITECTURES["digits_cnn"]
    config = spec.config.replace(epochs=1, structure=(("remove", 8, None),))
    built = build(spec, torch_dims(tiny_digits.dims), config, seed=0)
    assert "8" not in dict(built.module.named_modules()) and not built.dropouts()
    settings = RunSettings("digits", "digits_cnn", config, seed=1, stack=2)
    stacked = train_stack([Assignment(settings, "healthy", i) for i in range(2)],
                          dataset=tiny_digits)
    assert [r.status for r in stacked] == ["ok", "ok"], [r.error for r in stacked]


def test_a_model_that_does_not_trace_takes_no_layer_operator(small_digits):
    """Dynamic control flow: data-level and settings-level operators apply, layer ones are
    refused with torch.fx's reason in one line, and the model trains."""
    from probmut.train.operators import parse_mutations
    from probmut.train.torch.architectures import resolve
    from probmut.train.torch.instance import train_instance
    from probmut.train.torch.legality import prepare
    from probmut.train.work import Assignment, RunSettings

    subject = "tests.train.torch.subjects:branching"
    spec = resolve(subject, small_digits.dims)
    assert prepare(parse_mutations("delete_training_data:10") + parse_mutations("change_epochs:2")
                   + parse_mutations("change_optimisation_function:sgd"), spec, small_digits,
                   spec.config)
    for text in ("weights_fuzzing", "change_activation_function", "layer_deactivation"):
        with pytest.raises(ProbmutError, match="cannot be traced by torch.fx") as refused:
            prepare(parse_mutations(text), spec, small_digits, spec.config)
        assert "\n" not in str(refused.value)
    settings = RunSettings("digits", subject, spec.config.replace(epochs=1), seed=0)
    result = train_instance(Assignment(settings, "healthy", 0), dataset=small_digits)
    assert result.status == "ok", result.error


@pytest.mark.parametrize("text, message", [
    ("change_activation_function:sparsemax", "unknown activation 'sparsemax' for torch"),
    ("change_loss_function:ctc", "unknown loss 'ctc' for torch"),
    ("change_optimisation_function:ftrl", "unknown optimizer 'ftrl' for torch"),
    ("change_weights_initialisation:stft", "unknown weight initializer 'stft' for torch"),
    ("change_dropout_rate:0.5@3", r"layer 3 \(3\) is not a dropout layer"),
])
def test_names_and_targets_torch_cannot_take_are_refused_in_one_line(small_digits, text,
                                                                     message):
    from probmut.train.operators import parse_mutations
    from probmut.train.torch.architectures import ARCHITECTURES
    from probmut.train.torch.legality import prepare

    spec = ARCHITECTURES["digits_cnn"]
    with pytest.raises(ProbmutError, match=message):
        prepare(parse_mutations(text), spec, small_digits, spec.config)


@pytest.mark.parametrize("subject, message", [
    ("tests.train.torch.subjects:not_a_module", "not a torch.nn.Module"),
    ("tests.train.torch.subjects:wrong_outputs", r"gives \(2, 3\) for 2 samples"),
    ("tests.train.torch.subjects:missing", "cannot import missing"),
    ("gaze_lenet", "a Keras architecture only"),
])
def test_a_model_function_that_is_not_a_classifier_is_refused_in_one_line(small_digits, subject,
                                                                          message):
    from probmut.train.torch.architectures import resolve

    with pytest.raises(ProbmutError, match=message) as refused:
        resolve(subject, small_digits.dims)
    assert "\n" not in str(refused.value)
