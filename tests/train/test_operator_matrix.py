"""Issue 42's matrix: every model-level operator at its default on every shape of user
model (tests/train/shapes.py: a Sequential chain, two inputs joined by a Concatenate, a
residual block with an Add and a shared layer, a nested sub-model, a custom loss
function).

* Dry run (quick): every mutation is legal and changes what its reference's rule says,
  counted over the whole model (its kernels and units read from ``model.weights``, the
  blockable neurons counted by hand), not over a layer list.
* One tiny training each (slow): healthy instance 0 trains one epoch, each mutant is
  derived from it as a run derives it (``train_instance`` with the healthy weights), and
  its saved weights are compared with the healthy instance's: how many changed and
  where, equal to what the dry run showed for instance 0 (the same seed and shapes); a
  layer operator's saved model holds the healthy weights with the layer replaced,
  duplicated or linear, and predicts what the run scored.
"""

import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from probmut.train.operators import OPERATORS
from tests.train import shapes

pytestmark = pytest.mark.train

MODEL_LEVEL = [name for name, op in OPERATORS.items() if op.level == "model"]
LAYER_OPERATORS = {"layer_deactivation", "duplicate_layer", "remove_activation_trained"}
SEED = 42


class Subject:
    """One shape: its spec, data, healthy model and bound mutations, made once."""

    def __init__(self, shape):
        from probmut.train.legality import healthy_model
        from probmut.train.models import resolve_model
        from probmut.train.operators import bind, parse_mutations

        self.shape, self.model = shape, f"tests.train.shapes:{shape}"
        self.data = shapes.dataset(shape)
        self.spec = resolve_model(self.model, self.data.dims)
        self.config = self.spec.config.replace(epochs=1, batch_size=16)
        self.healthy = healthy_model(self.spec, self.data, self.config)
        # bound as the run binds them (their legality: the dry run's)
        self.mutations = {name: bind(parse_mutations(name)[0], self.healthy)[0]
                          for name in MODEL_LEVEL}
        kernels = [v for v in self.healthy.weights if v.name == "kernel"]
        self.kernel_weights = sum(int(np.prod(v.shape)) for v in kernels)
        self.units = sum(int(v.shape[-1]) for v in kernels)
        self._preview = None

    def preview(self) -> dict:
        """Every model-level mutation's dry run, by operator."""
        if self._preview is None:
            from probmut.train.dryrun import dry_run

            report = dry_run(MODEL_LEVEL, self.spec, self.data, self.config, seed=SEED,
                             architecture=self.model)
            self._preview = {p["operator"]: p for p in report.to_dict()["mutations"]}
        return self._preview


_SUBJECTS: dict[str, Subject] = {}


def _subject(shape) -> Subject:
    pytest.importorskip("tensorflow")
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)  # as a run sizes it, before the first model is built
    if shape not in _SUBJECTS:
        _SUBJECTS[shape] = Subject(shape)
    return _SUBJECTS[shape]


@pytest.fixture(scope="module", params=list(shapes.INPUTS))
def subject(request):
    return _subject(request.param)


def _counts(preview):
    return [(c["of"], c["changed"]) for c in preview["changes"]["layers"]]


def _at_least_one(n, ratio):
    return max(1, int(n * ratio))


def test_every_model_level_operator_is_legal_and_counts_over_the_whole_graph(subject):
    found = subject.preview()
    assert set(found) == set(MODEL_LEVEL)
    assert all(p["legal"] for p in found.values()), [p["reason"] for p in found.values()]
    # DeepMutation's network scope: 1% of all the model's kernel weights or units
    fuzzed = _counts(found["gaussian_fuzzing"])
    assert sum(of for of, _ in fuzzed) == subject.kernel_weights
    assert sum(c for _, c in fuzzed) == _at_least_one(subject.kernel_weights, 0.01)
    for name in ("weight_shuffling", "neuron_activation_inverse"):
        counted = _counts(found[name])
        assert sum(of for of, _ in counted) == subject.units, name
        assert sum(c for _, c in counted) == _at_least_one(subject.units, 0.01), name
    switched = _counts(found["neuron_switch"])
    assert sum(of for of, _ in switched) == subject.units
    assert all(c == 0 or c >= 2 for _, c in switched) and sum(c for _, c in switched) >= 2
    blocked = _counts(found["neuron_effect_blocking"])
    assert sum(of for of, _ in blocked) == shapes.BLOCKABLE[subject.shape]
    assert sum(c for _, c in blocked) == 1
    # PMT's operators: one layer (the first hidden weighted layer)
    ((of, changed),) = _counts(found["weights_fuzzing"])
    assert changed == int(of * 0.05)
    ((of, changed),) = _counts(found["neurons_freezing"])
    assert changed == _at_least_one(of, 0.1)
    # the layer operators say what they replace, insert or change
    target = found["layer_deactivation"]["target"]  # "layer I NAME (Class)"
    index, name = target.split()[1:3]
    assert found["layer_deactivation"]["changes"]["settings"] == {
        f"layer {index} {name}": ["Dense", "Identity"]}
    assert found["duplicate_layer"]["changes"]["settings"] == {
        f"new layer {int(index) + 1} (after layer {index} {name})": [None, "Dense"]}
    (setting, change), = found["remove_activation_trained"]["changes"]["settings"].items()
    assert setting.endswith(": activation") and change[1] == "linear"


def test_the_default_targets_reach_nested_layers():
    """On the nested model the layer operators' first fitting hidden layer is inside the
    block: the table opens nested models."""
    found = _subject("nested").preview()
    assert found["layer_deactivation"]["target"] == "layer 3 block/dense_2 (Dense)"
    assert found["remove_activation_trained"]["target"] == "layer 2 block/dense_1 (Dense)"


@pytest.fixture(scope="module")
def trained(subject):
    """Healthy instance 0, one epoch, its weights kept (as a run keeps them)."""
    from probmut.train.instance import train_instance
    from probmut.train.work import Assignment, RunSettings

    settings = RunSettings(subject.shape, subject.model, subject.config, seed=SEED)
    healthy = train_instance(Assignment(settings, "healthy", 0, keep_weights=True),
                             dataset=subject.data)
    assert healthy.status == "ok", healthy.error
    return settings, healthy


def _changed(healthy, mutant, paths, kind):
    """Per weighted layer (by its kernel's path), what changed: kernel entries
    ("weights") or units (a kernel column or a bias entry), and the arrays that changed."""
    per_layer, arrays = {}, set()
    for path, before, after in zip(paths, healthy, mutant, strict=True):
        differs = before != after
        if differs.any():
            arrays.add(path)
        layer = path.rsplit("/", 1)[0]
        if kind == "weights" and path.endswith("/kernel"):
            per_layer[layer] = int(differs.sum())
        elif kind == "units" and path.endswith("/kernel"):
            columns = differs.reshape(-1, differs.shape[-1]).any(axis=0)
            per_layer[layer] = per_layer.get(layer, 0) | columns
        elif kind == "units" and path.endswith("/bias"):
            per_layer[layer] = per_layer.get(layer, 0) | differs
    if kind == "units":
        per_layer = {k: int(np.sum(v)) for k, v in per_layer.items()}
    return per_layer, arrays


@pytest.mark.slow
def test_each_mutant_of_a_trained_instance_changes_what_the_dry_run_showed(subject, trained):
    from probmut.train.instance import train_instance
    from probmut.train.work import Assignment

    settings, healthy = trained
    paths = [v.path for v in subject.healthy.weights]
    previews = subject.preview()
    for name, mutation in subject.mutations.items():
        operator = mutation.operator
        result = train_instance(Assignment(settings, mutation.population, 0, name, mutation.params,
                                           keep_weights=True,
                                           save_model=name in LAYER_OPERATORS),
                                healthy.weights, dataset=subject.data)
        assert result.status == "ok", (name, result.error)
        if name in LAYER_OPERATORS:
            _check_layer_mutant(subject, healthy, result, previews[name])
            continue
        kind = "weights" if operator.counts == "weights" else "units"
        per_layer, arrays = _changed(healthy.weights, result.weights, paths, kind)
        assert all(path.endswith("/kernel") or path.endswith("/bias") for path in arrays)
        shown = sorted(c for _, c in _counts(previews[name]) if c)
        if name == "neuron_effect_blocking":  # rows of the layers they feed: zeroed
            assert arrays and all(path.endswith("/kernel") for path in arrays), name
            for before, after in zip(healthy.weights, result.weights, strict=True):
                assert np.all(after[before != after] == 0), name
            continue
        assert sorted(c for c in per_layer.values() if c) == shown, (name, per_layer, shown)
        if name in ("weights_fuzzing", "gaussian_fuzzing", "weight_shuffling"):
            assert all(path.endswith("/kernel") for path in arrays), name  # biases kept


def _saved(result):
    import keras

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mutant.keras"
        path.write_bytes(result.model_bytes)
        return keras.saving.load_model(path, compile=False)


def _multiset(arrays):
    return Counter((a.shape, a.tobytes()) for a in arrays)


def _check_layer_mutant(subject, healthy, result, preview):
    """The saved mutant holds the healthy weights, with the target layer's weights gone
    (LD), twice (LAm) or kept (AFRm), and predicts what the run scored."""
    from probmut.train.fitting import score
    from probmut.train.graph import graph

    mutant = _saved(result)
    index = int(preview["target"].split()[1])
    healthy_model = subject.spec.build(subject.data.dims)
    healthy_model.set_weights(healthy.weights)
    target = graph(healthy_model).layers[index]
    own, every = _multiset(target.get_weights()), _multiset(healthy.weights)
    expected = {"layer_deactivation": every - own, "duplicate_layer": every + own,
                "remove_activation_trained": every}[preview["operator"]]
    assert _multiset(mutant.get_weights()) == expected, preview["operator"]
    replaced = graph(mutant).layers[index]
    if preview["operator"] == "layer_deactivation":
        assert type(replaced).__name__ == "Identity"
    elif preview["operator"] == "remove_activation_trained":
        assert replaced.activation.__name__ == "linear"
    else:
        twin = graph(mutant).layers[index + 1]
        assert twin.name.endswith("_copy") and all(
            np.array_equal(a, b) for a, b in zip(twin.get_weights(), target.get_weights(),
                                                 strict=True))
    found = score(mutant, subject.data.x_test, subject.data.y_test)
    assert np.array_equal(found.correct, result.correct)
