"""Issue 55's matrix: every model-level operator (the weight and unit operators, and the
layer operators LD, LAm, AFRm) on every kind of Keras model a user writes
(tests/train/kinds.py), on 48 of the bundled digits.

* Dry runs, one per kind: no traceback anywhere; each mutation is legal, or refused with
  one line saying why (the refusals are pinned in :data:`REFUSED`). Over the network the
  weights and units counted are the kind's own, counted here by hand (:data:`WEIGHTS`,
  :data:`UNITS`), and where probmut finds each layer's units (by probing the layer) is
  checked against where Keras lays them out for each class (:func:`_owners`).
* One trained mutant of each kind (:data:`TRAINED`): healthy instance 0 trains one epoch,
  the mutant is derived from its weights as a run derives it, and the two are compared
  entry by entry: what changed is what the dry run counted, in the weights it named, and
  as the operator's reference changes it (negated, zeroed, shuffled, traded).
* The issue's other items, each on the kind that showed it.
"""

import json
import warnings

import numpy as np
import pytest

from probmut.train.operators import OPERATORS
from tests.train import kinds

pytestmark = pytest.mark.train

SEED = 42
MODEL_LEVEL = [name for name, op in OPERATORS.items() if op.level == "model"]
#: Training-level operators on a custom activation, each changing something else: the
#: settings, a layer's activation, bias or initializer, the layers.
TRAINING_LEVEL = ["change_epochs:2", "change_learning_rate", "change_loss_function",
                  "change_activation_function", "remove_activation_function", "remove_bias",
                  "change_weights_initialisation", "add_layer", "remove_layer"]
LAYER_OPERATORS = {"layer_deactivation", "duplicate_layer", "remove_activation_trained"}
_NO_SAME_SHAPE = "no hidden layer that is a layer whose output shape equals its input shape"
_SUBCLASSED = "it is a subclassed model (Small): probmut reads its layers"
#: The model-level operators each kind refuses at its default, and why; the others are legal.
REFUSED = {
    "conv_bn_branches": {"remove_activation_trained": "no hidden layer that is a layer with a "
                                                      "non-linear activation"},
    "subclassed": dict.fromkeys(LAYER_OPERATORS, _SUBCLASSED),
    **{kind: {"layer_deactivation": _NO_SAME_SHAPE, "duplicate_layer": _NO_SAME_SHAPE}
       for kind in ("gru_rows", "lstm", "transposed", "depthwise")},
}
#: Connection weights of each kind, by hand: every kernel, recurrent kernel and custom
#: matrix, a shared layer's once (biases, gates and BatchNormalization's scales are not).
WEIGHTS = {
    "nested_sequential": 64 * 6 + 6 * 6 + 6 * 6 + 6 * 10,
    "shared": 64 * 6 + 6 * 6 + 12 * 10,
    "conv_bn_branches": 9 * 3 + 9 * 3 + 4 * 4 * 6 * 10,
    "custom": 64 * 8 + 8 * 6 + 6 * 10,                  # the Linear layer's w too
    "subclassed": 64 * 8 + 8 * 10,
    "gru_rows": 8 * 18 + 6 * 18 + 6 * 10,                # kernel and recurrent kernel, 3 gates
    "lstm": 8 * 20 + 5 * 20 + 5 * 10,                    # 4 gates
    "gated": 64 * 6 + 6 * 10,
    "transposed": 9 * 4 + 9 * 4 * 3 + 7 * 7 * 3 * 10,
    "depthwise": 9 * 3 + 9 * 3 * 2 + 2 * 2 * 6 * 10,
    "regularised": 64 * 8 + 8 * 8 + 8 * 10,
    "nested_without_input": 64 * 6 + 6 * 6 + 6 * 10,
}
#: Units of each kind: every layer's outputs (a Conv2DTranspose's filters, a
#: DepthwiseConv2D's channels x multiplier, a recurrent layer's units).
UNITS = {"nested_sequential": 28, "shared": 22, "conv_bn_branches": 16, "custom": 24,
         "subclassed": 18, "gru_rows": 16, "lstm": 15, "gated": 16, "transposed": 4 + 3 + 10,
         "depthwise": 3 + 6 + 10, "regularised": 26, "nested_without_input": 22}
#: One trained mutant per kind, on what makes the kind what it is.
TRAINED = {
    "nested_sequential": "NEB:0.2",                 # into, inside and out of the block
    "shared": "NS:0.2@4",                           # the shared layer, once
    "conv_bn_branches": "LD:3",                     # the BatchNormalization of a branch
    "custom": "GF:0.05_sd0.1",                      # the Linear layer's w among the rest
    "subclassed": "NAI:0.1",
    "gru_rows": "NAI:0.3@2",                        # the candidate's gate block
    "lstm": "neurons_freezing:0.4@1",
    "gated": "NAI:0.3@2",                           # kernel and bias, not the gate
    "transposed": "NS:0.5@1",                       # its output channels: the kernel's axis 2
    "depthwise": "WS:0.5@1",                        # channel x multiplier
    "regularised": "WS",
    "nested_without_input": "weights_fuzzing:0.05_1@3",
}


def _data():
    from probmut.train.datasets import load_dataset
    from probmut.train.datasets.dataset import Dataset

    digits = load_dataset("digits")
    return Dataset("digits", digits.x_train[:48], digits.y_train[:48], digits.x_test[:24],
                   digits.y_test[:24])


class Kind:
    """One kind: its spec, settings and dry run (every model-level operator at its
    default, and its trained mutation), made once; ``model`` a healthy model built as the
    run builds it, to read its layers."""

    def __init__(self, name, data):
        from probmut.train.dryrun import dry_run
        from probmut.train.models import resolve_model

        self.name, self.model, self.data = name, f"tests.train.kinds:{name}", data
        self.spec = resolve_model(self.model, data.dims)
        self.config = self.spec.config.replace(epochs=1, batch_size=16)
        report = dry_run([*MODEL_LEVEL, TRAINED[name]], self.spec, data, self.config,
                         seed=SEED, architecture=self.model)
        self.text = str(report)
        *defaults, self.trained = report.mutations
        self.previews = {p.operator: p for p in defaults}
        self.built = self.healthy()

    def dry_run(self, texts):
        from probmut.train.dryrun import dry_run

        return dry_run(texts, self.spec, self.data, self.config, seed=SEED).mutations

    def healthy(self):
        """A fresh healthy model, as the run builds it."""
        from probmut.train.legality import healthy_model

        return healthy_model(self.spec, self.data, self.config)


_KINDS: dict[str, Kind] = {}


def _kind(name) -> Kind:
    pytest.importorskip("tensorflow")
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)  # as a run sizes it, before the first model is built
    if name not in _KINDS:
        _KINDS[name] = Kind(name, _KINDS[next(iter(_KINDS))].data if _KINDS else _data())
    return _KINDS[name]


@pytest.fixture(scope="module", params=kinds.KINDS)
def kind(request):
    return _kind(request.param)


def test_every_model_level_operator_is_legal_or_refused_in_one_line(kind):
    refused = REFUSED.get(kind.name, {})
    for name, preview in kind.previews.items():
        if name in refused:
            assert not preview.legal and refused[name] in preview.reason, (name, preview.reason)
            assert "\n" not in preview.reason and not preview.reason.startswith(name)
            continue
        assert preview.legal, (kind.name, name, preview.reason)
        for count in preview.layers:
            assert 0 <= count.changed <= count.of and count.weights, (name, count)
    assert "Traceback" not in kind.text


def test_the_network_counts_every_connection_weight_and_unit_of_the_kind(kind):
    """DeepMutation's 1% of all the kind's weights (GF) and units (WS, NAI), drawn over
    all of them: recurrent kernels, custom layers' matrices, transposed and depthwise
    convolutions' channels included."""
    for name, pool in [("gaussian_fuzzing", WEIGHTS), ("weight_shuffling", UNITS),
                       ("neuron_activation_inverse", UNITS)]:
        preview = kind.previews[name]
        assert sum(c.of for c in preview.layers) == pool[kind.name], (name, preview.layers)
        assert sum(c.changed for c in preview.layers) == max(1, int(pool[kind.name] * 0.01))
        assert not preview.skipped, preview.skipped  # no layer left out, silently or not


def _owners(layer, weight, units) -> np.ndarray:
    """The output unit each entry of ``weight`` feeds, as Keras lays out ``layer``'s class."""
    shape = tuple(weight.shape)
    index = np.indices(shape)
    name = type(layer).__name__
    if name in ("GRU", "LSTM"):
        return index[-1] % units  # gate blocks of `units` columns side by side
    if name == "Conv2DTranspose" and len(shape) == 4:
        return index[2]  # (rows, columns, filters, input channels)
    if name == "DepthwiseConv2D" and len(shape) == 4:
        return index[2] * shape[3] + index[3]  # input channel c, multiplier m: c * M + m
    return index[-1]  # Dense, Conv2D, custom kernels; biases and gates


def test_units_are_found_where_each_layer_class_keeps_them(kind):
    """probmut's probe finds, for every weight of every layer with connection weights,
    the unit each entry feeds where Keras (or the custom layer) puts it; and the entries
    NAI negates are the unit's pre-activation: a Gated layer's kernel and bias, not its
    gate; a recurrent layer's candidate block."""
    from probmut.train.graph import graph

    table = graph(kind.built)
    for layer in table.layers:
        units = table.units(layer) if layer.weights else None
        if units is None or isinstance(units, str):
            continue
        for axes in units.axes:
            weight = layer.weights[axes.weight]
            found = np.full(int(np.prod(weight.shape)), -1)
            view = axes.view(np.arange(found.size).reshape(tuple(weight.shape)), units.count)
            for unit in range(units.count):
                found[view[unit].reshape(-1)] = unit
            expected = _owners(layer, weight, units.count)
            assert np.array_equal(found.reshape(expected.shape), expected), (layer.name,
                                                                              axes.name)
        pre = {a.name: a.pre_activation for a in units.axes}
        if type(layer).__name__ == "Gated":
            assert pre == {"kernel": (0,), "gate": (), "bias": (0,)}
        elif type(layer).__name__ in ("GRU", "LSTM"):
            assert set(pre.values()) == {(2,)}  # i, f, c, o / z, r, h: the candidate
        else:
            assert all(p == (0,) for p in pre.values()), (layer.name, pre)


@pytest.fixture(scope="module")
def trained(kind):
    """Healthy instance 0 (one epoch, weights kept) and the kind's mutant of it, derived as
    a run derives it."""
    import tensorflow as tf

    from probmut.train.instance import train_instance
    from probmut.train.legality import bound_to
    from probmut.train.operators import parse_mutations
    from probmut.train.work import Assignment, RunSettings

    settings = RunSettings("digits", kind.model, kind.config, seed=SEED)
    (mutation,) = bound_to(parse_mutations(TRAINED[kind.name])[0], kind.spec, kind.data,
                           kind.built)
    tf.config.run_functions_eagerly(True)  # three batches: quicker than tracing them
    try:
        with warnings.catch_warnings():  # tf.data's functions are traced all the same
            warnings.filterwarnings("ignore", "Even though the `tf.config.experimental_run")
            healthy = train_instance(Assignment(settings, "healthy", 0, keep_weights=True),
                                     dataset=kind.data)
            assert healthy.status == "ok", healthy.error
            mutant = train_instance(Assignment(
                settings, mutation.population, 0, mutation.operator.name, mutation.params,
                keep_weights=True, save_model=mutation.operator.name in LAYER_OPERATORS),
                healthy.weights, dataset=kind.data)
    finally:
        tf.config.run_functions_eagerly(False)
    assert mutant.status == "ok", mutant.error
    return healthy, mutant


def _names(layer) -> dict[int, str]:
    """Each weight's name as a user reads it: the attribute that holds it."""
    found = {}
    for owner in filter(None, (layer, getattr(layer, "cell", None))):
        found |= {id(v): a.lstrip("_") for a, v in vars(owner).items()}
    return {i: found.get(id(v), v.name) for i, v in enumerate(layer.weights)}


def _changes(kind, healthy, mutant):
    """Per layer of the table (by index): each weight that changed, as (name, before,
    after)."""
    from probmut.train.graph import graph

    model = kind.built
    position = {id(v): k for k, v in enumerate(model.weights)}
    table = graph(model)
    found = {}
    for index, layer in enumerate(table.layers):
        names = _names(layer)
        for i, variable in enumerate(layer.weights):
            before, after = (w[position[id(variable)]] for w in (healthy.weights, mutant.weights))
            if not np.array_equal(before, after):
                found.setdefault(index, []).append((names[i], before, after, layer, variable))
    return found


def test_each_kinds_trained_mutant_changes_what_its_dry_run_showed(kind, trained):
    healthy, mutant = trained
    preview = kind.trained
    assert preview.legal, preview.reason
    if preview.operator in LAYER_OPERATORS:
        return _check_layer_mutant(kind, healthy, mutant, preview)
    changes = _changes(kind, healthy, mutant)
    shown = {c.index: c for c in preview.layers}
    if preview.counted == "neurons":  # the weights from the neurons, zeroed where they feed
        named = {w for c in preview.layers for w in c.weights}
        for changed in changes.values():
            for name, before, after, _, _ in changed:
                assert np.all(after[before != after] == 0)
                assert any(w.endswith(f"/{name}") for w in named), (name, named)
        assert sum(c.changed for c in preview.layers) >= 1
        return
    for index in set(shown) | set(changes):
        count = shown[index]
        changed = changes.get(index, [])
        assert {name for name, *_ in changed} <= set(count.weights), (index, count)
        if preview.counted == "weights":
            assert sum(int(np.sum(b != a)) for _, b, a, _, _ in changed) == count.changed
            continue
        units = set()
        for _, before, after, layer, variable in changed:
            moved = before != after
            units |= set(_owners(layer, variable, count.of)[moved].tolist())
            _check_unit_change(preview.operator, before, after, moved)
        assert len(units) == count.changed, (index, units, count)
    assert sum(c.changed for c in preview.layers) >= 1


def _check_unit_change(operator, before, after, moved):
    """What the unit operators' references do to the entries they change."""
    if operator == "neuron_activation_inverse":
        assert np.array_equal(after[moved], -before[moved])
    elif operator == "neurons_freezing":
        assert np.all(after[moved] == 0)
    else:  # WS shuffles, NS trades: the same values, elsewhere
        assert np.array_equal(np.sort(after, axis=None), np.sort(before, axis=None))


def _check_layer_mutant(kind, healthy, mutant, preview):
    """LD on a branch's BatchNormalization: the saved mutant holds every healthy weight
    but that layer's, an Identity in its place, and predicts what the run scored."""
    import tempfile
    from collections import Counter
    from pathlib import Path

    import keras

    from probmut.train.fitting import score
    from probmut.train.graph import graph

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mutant.keras"
        path.write_bytes(mutant.model_bytes)
        saved = keras.saving.load_model(path, compile=False)
    model = kind.built
    model.set_weights(healthy.weights)
    index = int(preview.target.split()[1])
    target = graph(model).layers[index]
    assert type(target).__name__ == "BatchNormalization"
    assert preview.settings == {f"layer {index} {target.name}": ["BatchNormalization",
                                                                  "Identity"]}

    def multiset(arrays):
        return Counter((a.shape, a.tobytes()) for a in arrays)

    assert multiset(saved.get_weights()) == multiset(healthy.weights) - multiset(
        target.get_weights())
    assert type(graph(saved).layers[index]).__name__ == "Identity"
    found = score(saved, kind.data.x_test, kind.data.y_test)
    assert np.array_equal(found.correct, mutant.correct)


def test_a_custom_activation_dry_runs_every_training_operator():
    """A custom activation function (Keras stores its name, not a config) in a dry run of
    every training-level operator, and in copies of the model: no traceback."""
    custom = _kind("custom")
    previews = {p.operator: p for p in custom.dry_run(TRAINING_LEVEL)}
    assert all(p.legal for p in previews.values()), [p.reason for p in previews.values()]
    assert previews["change_epochs"].settings == {"epochs": [1, 2]}
    assert previews["change_activation_function"].settings == {
        "layer 3 activation: activation": ["scaled_tanh", "elu"]}
    assert previews["remove_activation_function"].settings == {  # the function copied as is
        "layer 3 activation: activation": ["scaled_tanh", "linear"]}
    assert custom.previews["layer_deactivation"].settings == {
        "layer 3 activation": ["Activation(scaled_tanh)", "Identity"]}


def test_a_subclassed_model_trains_one_at_a_time_and_refuses_what_rebuilds_it(tmp_path, cli):
    """--stack auto chooses one instance at a time (a stack needs the chain a functional
    model keeps) instead of failing on the layers' outputs; the operators that rebuild the
    model say why they cannot."""
    from probmut.train.stack.eligibility import choose_stack_size, stack_problem

    small = _kind("subclassed")
    model = small.built
    choice = choose_stack_size(model, small.config, small.data, private_data=False,
                               gpu_bytes=None)
    assert choice.size == 1 and "subclassed keras.Model (Small)" in choice.why
    assert "subclassed keras.Model (Small)" in stack_problem(model, small.config)
    for preview in small.dry_run(["change_activation_function", "remove_layer"]):
        assert not preview.legal and _SUBCLASSED in preview.reason
    data = small.data
    np.savez(tmp_path / "digits48.npz", x_train=data.x_train, y_train=data.y_train,
             x_test=data.x_test, y_test=data.y_test)
    code, out, err = cli("train", "--architecture", small.model, "--data",
                         tmp_path / "digits48.npz", "--instances", 1, "--epochs", 1,
                         "--mutation", "GF", "--out", tmp_path / "run", "--json")
    assert code == 0, err
    assert "one instance at a time: the model is a subclassed keras.Model" in err
    assert [p["name"] for p in json.loads(out)["results"]] == ["healthy",
                                                             "gaussian_fuzzing_0.01_sd0.1"]


def test_the_layer_added_on_a_branch_is_named_after_the_layer_it_follows():
    """LAs names the layer whose output the inserted layer reads, not a
    BatchNormalization just like the one inserted (LD on a branch's BatchNormalization,
    whose recorded call passes a mask the Identity does not take: its trained mutant)."""
    after_conv, after_bn = _kind("conv_bn_branches").dry_run([
        "add_layer:batch_normalization@2", "add_layer:relu@3"])
    assert after_conv.settings == {"new layer 3 (after layer 2 b1_conv)": [
        None, "BatchNormalization"]}
    assert after_bn.settings == {"new layer 4 (after layer 3 a1_bn)": [None, "Activation(relu)"]}


def test_the_learning_rate_an_uncompiled_model_starts_with():
    """An uncompiled model trains with Adam's own 0.001: the dry run shows it, and setting
    it is an equivalent mutant."""
    same, other = _kind("nested_sequential").dry_run(["change_learning_rate:0.001",
                                                      "change_learning_rate:0.01"])
    assert same.legal and same.settings == {} and "the same settings" in same.equivalent
    assert other.settings == {"learning_rate": [0.001, 0.01]} and not other.equivalent


def test_a_refusal_after_binding_names_the_bound_mutation_once(monkeypatch):
    """A mutation refused once bound to its layer is listed by its bound label, and its
    reason does not repeat it (the command prints ``LABEL: REASON``)."""
    import keras

    class Broken(keras.layers.Layer):
        def call(self, inputs):
            raise ValueError("broken on purpose")

    monkeypatch.setattr(keras.layers, "Identity", Broken)
    (preview,) = _kind("regularised").dry_run(["LD"])
    assert not preview.legal and preview.label == "layer_deactivation:2"
    assert preview.reason.startswith("not a valid model (") and "Broken" in preview.reason


def test_where_units_cannot_be_told_apart_the_unit_operators_say_so():
    """A Bidirectional GRU's weights each reach several of its output units, and a
    DepthwiseConv2D's units read their own input channels (trading two does not trade
    their outputs): the weight operators act on them, the others say why not, at
    ``@LAYER`` and in the dry run of the whole network."""
    import keras

    from probmut.errors import ProbmutError
    from probmut.train.operators import bind, parse_mutations

    model = keras.Sequential([keras.Input((3, 2)), keras.layers.Bidirectional(keras.layers.GRU(2)),
                              keras.layers.Dense(4)])
    (fuzzed,) = bind(parse_mutations("GF:0.1_sd0.1@0")[0], model)
    assert fuzzed.params["layer"] == 0
    with pytest.raises(ProbmutError, match="is not a layer with connection weights whose units "
                                           "probmut can tell apart: its units cannot be told "
                                           "apart"):
        bind(parse_mutations("WS:0.5@0")[0], model)
    depthwise = _kind("depthwise")
    (switch,) = depthwise.dry_run(["NS"])
    assert [(s.index, s.why) for s in switch.skipped] == [
        (1, "trading two units' weights does not trade their outputs")]
    (at_layer,) = depthwise.dry_run(["NS:0.5@1"])
    assert not at_layer.legal and "trading two units' weights" in at_layer.reason
