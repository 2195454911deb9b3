"""A training function that hands probmut its torch model (``"model"``): probmut scores
it, keeps it, and derives model-level mutants from each healthy instance's model, scored
and matched as the torch trainer's; what cannot work is refused in one line before
training, or recorded as the instance's failure. The functions:
tests/train/torch/user_torch.py."""

import numpy as np
import pytest

from probmut.errors import ProbmutError
from probmut.io.populations import read_instances
from probmut.train import train_populations
from probmut.train.options import ExecutionOptions, Instances, TrainingOptions

from ..test_run import assert_same_but_seconds
from . import torch_or_skip

MLP = "tests.train.torch.user_torch:mlp"
QUIET = ExecutionOptions(progress=False)
pytestmark = pytest.mark.filterwarnings("ignore:.* instances per population")


def _train(out, mutations, trainer=MLP, count=3, **options):
    return train_populations(out, mutations, trainer=trainer, mode=Instances(count=count),
                             training=TrainingOptions(epochs=2), execution=QUIET, **options)


def _spec(out, instance, digits):
    """Healthy instance ``instance``'s spec, as the run hands it to the function."""
    from probmut.train.hyperparameters import user_config
    from probmut.train.user_code import instance_spec
    from probmut.train.work import Assignment, RunSettings

    settings = RunSettings("digits", None, user_config(epochs=2), trainer="function", code=MLP)
    return instance_spec(Assignment(settings, "healthy", instance), digits, str(out))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    torch_or_skip()
    out = tmp_path_factory.mktemp("returned") / "run"
    report = _train(out, ["neurons_freezing:0.5", "weights_fuzzing:0_1",
                          "delete_training_data:30"], save_models=True)
    return out, report


def test_mutants_derive_from_the_model_each_healthy_instance_returned(run, digits):
    """Mutant i is healthy instance i's returned model with half the units of its first
    Linear layer frozen (their weights and bias zero, every other weight the healthy
    model's), scored by probmut as plain torch scores it; the healthy instances' own
    scores are the function's."""
    import torch

    from tests.train.torch.user_torch import fit, images

    out, report = run
    assert not report.failures, report.failures
    healthy = read_instances(out / "healthy.csv")
    frozen = read_instances(out / "neurons_freezing_0.5.csv")
    for instance in range(3):
        model, correct = fit(_spec(out, instance, digits))
        assert healthy[instance].accuracy == correct.mean()
        before = model.state_dict()
        state = torch.load(out / "models" / "neurons_freezing_0.5" / f"{instance:05d}.pt")
        rows = (state["1.weight"] == 0).all(1) & (state["1.bias"] == 0)
        assert rows.sum() == 8  # int(16 x 0.5) units of the first Linear layer
        assert torch.equal(state["1.weight"][~rows], before["1.weight"][~rows])
        assert all(torch.equal(state[k], before[k]) for k in ("3.weight", "3.bias"))
        model.load_state_dict(state)
        with torch.no_grad():
            mutant = model(images(digits.x_test)).argmax(1).numpy() == digits.y_test
        assert frozen[instance].accuracy == mutant.mean()
    assert report.flags["weights_fuzzing_0_1"].flags == ("equivalent",)
    assert report.counts["delete_training_data_30"] == 3


def test_a_later_run_derives_mutants_from_healthy_instances_trained_again(run, tmp_path):
    """Healthy instances trained without a model-level mutation keep no model; a later
    run's mutants derive from them trained again with their seeds: the same mutants."""
    first, _ = run
    out = tmp_path / "run"
    _train(out, [])
    assert not (out / ".work" / "weights").exists()
    report = _train(out, ["neurons_freezing:0.5"])
    assert report.trained == 3 and not report.failures, report.failures
    assert_same_but_seconds(first / "neurons_freezing_0.5.csv", out / "neurons_freezing_0.5.csv")


@pytest.mark.parametrize("mutation, says", [
    ("neuron_effect_blocking:0.01@each", "@each makes one mutant per fitting layer"),
    ("layer_deactivation", r"give the layer \(layer_deactivation:LAYER\)"),
    ("change_activation_function:elu", "changes a layer of the model before training"),
])
def test_what_a_function_returning_its_model_cannot_be_given_is_refused(tmp_path, mutation,
                                                                        says):
    torch_or_skip()
    with pytest.raises(ProbmutError, match=says):
        _train(tmp_path / "run", [mutation])
    assert not (tmp_path / "run" / ".work" / "healthy").exists()


def test_a_program_cannot_be_given_model_level_mutations(tmp_path):
    with pytest.raises(ProbmutError, match="a training function returning its torch model"):
        train_populations(tmp_path / "run", ["neurons_freezing:0.1"], command="python x.py",
                          execution=QUIET)


@pytest.mark.parametrize("trainer, mutation, healthy, mutants", [
    ("claims_more", "neurons_freezing:0.5",
     "the returned model gives accuracy", "the returned model gives accuracy"),
    ("keeps_its_model", "neurons_freezing:0.5", None, "returned no model"),
    ("mlp", "neurons_freezing:0.5@9", None, "layer 9 is out of range (the model has 4 layers)"),
])
def test_what_fails_on_the_model_is_the_instances_failure(tmp_path, trainer, mutation, healthy,
                                                          mutants):
    """A model whose accuracy is not what the function said, no model for a model-level
    mutant, a target the model does not have: each instance's one line, the run goes on."""
    torch_or_skip()
    report = _train(tmp_path / "run", [mutation], f"tests.train.torch.user_torch:{trainer}",
                    count=2)
    records = {stem: read_instances(tmp_path / "run" / f"{stem}.csv")
               for stem in ("healthy", "neurons_freezing_" + mutation.split(":")[1])}
    first, second = records.values()
    assert [r.status == "crashed" for r in first] == [healthy is not None] * 2
    assert all(healthy in r.error for r in first if healthy)
    assert [r.status for r in second] == ["crashed"] * 2
    assert all(mutants in r.error and "\n" not in r.error for r in second), second[0].error
    assert len(report.failures) == 2 + 2 * (healthy is not None)


def test_the_returned_model_scored_as_probmut_feeds_it(digits):
    """probmut's score is the model's on the test images channels first; a model that
    disagrees with the function's own accuracy by more than one input is refused."""
    import torch

    from probmut.train.torch.returned import score_returned
    from tests.train.torch.user_torch import images

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    with torch.no_grad():
        expected = model(images(digits.x_test)).argmax(1).numpy() == digits.y_test
    one_off = expected.copy()
    one_off[0] = not one_off[0]
    assert np.array_equal(score_returned(model, None, digits, one_off).correct, expected)
    one_off[1] = not one_off[1]
    with pytest.raises(ValueError, match="2 inputs judged otherwise"):
        score_returned(model, None, digits, one_off)


def test_the_documented_torch_function_is_the_examples():
    """docs/training.md's listing of examples/digits_torch.py: each of its lines but the
    elisions is the example's."""
    from ..commands import REPO

    documented = (REPO / "docs" / "training.md").read_text()
    listing = documented.split("### A function's torch model")[1].split("```python\n")[1]
    example = (REPO / "examples" / "digits_torch.py").read_text().splitlines()
    lines = [line for line in listing.split("```")[0].splitlines() if line.strip() != "..."]
    assert len(lines) > 5 and all(line in example for line in lines), lines
