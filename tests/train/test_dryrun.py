"""``probmut train --dry-run``: per mutation, legal or not (and why), its target and
exactly what it changes, through the command (text and JSON) and the Python API
(:func:`probmut.train.dryrun.dry_run`). The counts are checked against each reference's
rule computed here (``int(n * share)`` of the layer or of the whole network); the
dry run itself finds them by comparing the mutant with the healthy model, so the two
are independent. Nothing is trained."""

import numpy as np
import pytest

pytestmark = pytest.mark.train

DIGITS_KERNELS = {0: 144, 2: 4608, 4: 32768, 6: 640}        # digits_cnn's weighted layers
DIGITS_UNITS = {0: 16, 2: 32, 4: 64, 6: 10}
MNIST_KERNELS = {0: 288, 1: 18432, 5: 1179648, 7: 1280}     # deepcrime_mnist on 28 x 28


@pytest.fixture(scope="module")
def mnist_shaped(tmp_path_factory):
    """A tiny data set of 28 x 28 images, so that deepcrime_mnist has MNIST's shapes."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("data") / "mnist28.npz"
    np.savez(path, x_train=rng.integers(0, 256, (40, 28, 28), dtype=np.uint8),
             y_train=np.arange(40) % 10, x_test=rng.integers(0, 256, (10, 28, 28), dtype=np.uint8),
             y_test=np.arange(10))
    return path


@pytest.fixture(scope="module")
def api():
    pytest.importorskip("tensorflow")
    from probmut.train.datasets import load_dataset
    from probmut.train.dryrun import dry_run
    from probmut.train.models import MODELS

    def run(model, texts, data="digits", **options):
        spec = MODELS[model]
        config = spec.config.replace(**options)
        return dry_run(texts, spec, load_dataset(str(data)), config, seed=42, architecture=model)
    return run


def _layers(preview):
    return {c["index"]: (c["changed"], c["of"]) for c in preview["changes"]["layers"]}


def _only(report):
    (preview,) = report.to_dict()["mutations"]
    assert preview["legal"] and preview["reason"] is None
    return preview


@pytest.mark.parametrize("text, layers, total", [
    ("GF", DIGITS_KERNELS, int(38160 * 0.01)),               # weights of the whole network
    ("gaussian_fuzzing:0.05_sd0.1", DIGITS_KERNELS, int(38160 * 0.05)),
    ("WS", DIGITS_UNITS, int(122 * 0.01)),                   # units of the whole network
    ("NAI:0.1", DIGITS_UNITS, int(122 * 0.1)),
    ("NEB", {0: 16, 2: 32, 4: 64}, int(112 * 0.01)),         # neurons that feed a layer
    ("NEB:0.1", {0: 16, 2: 32, 4: 64}, int(112 * 0.1)),
    ("neurons_freezing:0.05", {0: 16}, max(1, int(16 * 0.05))),   # PMT: the first conv
    ("neurons_freezing:0.2@network", DIGITS_UNITS, int(122 * 0.2)),
    ("weights_fuzzing:0.1_1", {0: 144}, int(144 * 0.1)),
    ("weights_fuzzing:0.05_1@4", {4: 32768}, int(32768 * 0.05)),
    ("neuron_switch:0.1@4", {4: 64}, int(64 * 0.1)),
])
def test_model_level_counts_on_digits_cnn_follow_the_reference_rule(api, text, layers, total):
    preview = _only(api("digits_cnn", [text]))
    found = _layers(preview)
    assert {i: of for i, (_, of) in found.items()} == layers
    assert sum(changed for changed, _ in found.values()) == total
    assert preview["level"] == "model" and preview["changes"]["samples"] is None


def test_model_level_counts_on_deepcrime_mnist(api, mnist_shaped):
    """PMT's neurons_freezing:0.05 freezes int(32 x 0.05) = 1 of the first convolution's
    32 filters; GF fuzzes 1% of the network's 1,199,648 kernel weights."""
    report = api("deepcrime_mnist", ["neurons_freezing:0.05", "GF", "WS", "NAI:0.1", "NEB",
                                     "NS:0.05"], mnist_shaped)
    freezing, fuzzing, shuffling, inverse, blocking, switch = report.to_dict()["mutations"]
    assert freezing["changes"]["layers"] == [{"index": 0, "name": "conv2d", "changed": 1,
                                              "of": 32, "weights": ["kernel", "bias"]}]
    found = _layers(fuzzing)
    assert {i: of for i, (_, of) in found.items()} == MNIST_KERNELS
    assert sum(c for c, _ in found.values()) == int(sum(MNIST_KERNELS.values()) * 0.01) == 11996
    assert found[5][0] > 11000  # the dense kernel holds 98% of the weights
    units = {0: 32, 1: 64, 5: 128, 7: 10}
    for preview, pool, total in [(shuffling, units, int(234 * 0.01)),
                                 (inverse, units, int(234 * 0.1)),
                                 (blocking, {0: 32, 1: 64, 5: 128}, int(224 * 0.01))]:
        found = _layers(preview)
        assert {i: of for i, (_, of) in found.items()} == pool, preview["name"]
        assert sum(c for c, _ in found.values()) == total, preview["name"]
    switched = [c for c, _ in _layers(switch).values() if c]
    assert sum(switched) >= int(234 * 0.05) and min(switched) >= 2  # a switch needs two


def test_the_published_layer_and_settings_before_and_after(api, mnist_shaped):
    report = api("deepcrime_mnist", ["change_activation_function", "change_epochs:3",
                                     "remove_layer", "add_layer", "AFRm"], mnist_shaped)
    activation, epochs, removed, added, trained = report.to_dict()["mutations"]
    assert activation["changes"]["settings"] == {"layer 5 dense: activation": ["relu", "elu"]}
    assert epochs["changes"]["settings"] == {"epochs": [12, 3]}
    assert removed["changes"]["settings"] == {"layer 3 dropout": ["Dropout", None]}
    assert added["changes"]["settings"] == {
        "new layer 1 (after layer 0 conv2d)": [None, "BatchNormalization"]}
    assert trained["changes"]["settings"] == {"layer 0 conv2d: activation": ["relu", "linear"]}
    assert "target: layer 5 dense (Dense)" in str(report)


def test_data_level_counts(api):
    """Samples changed in place, or added and removed (the samples of one set the other
    does not hold): data_repetition adds copies and changes nothing."""
    from probmut.train.datasets import load_dataset

    classes = np.bincount(load_dataset("digits").y_train)  # 1347 samples, class 3 largest
    report = api("digits_cnn", ["delete_training_data:10", "change_label:10",
                                "make_output_classes_overlap:10", "add_noise:0.01",
                                "data_repetition:10"])
    deleted, relabelled, overlapped, unchanged, repeated = report.to_dict()["mutations"]

    def samples(changed=0, added=0, removed=0):
        return {"changed": changed, "added": added, "removed": removed, "of": 1347}

    assert deleted["changes"]["samples"] == samples(removed=sum(int(c * 10 / 100)
                                                                for c in classes))
    assert relabelled["changes"]["samples"] == samples(changed=int(classes.max() * 10 / 100))
    assert overlapped["changes"]["samples"] == samples(added=int(classes.max() * 10 / 100))
    assert unchanged["changes"]["samples"] == samples()
    assert repeated["changes"]["samples"] == samples(added=int(1347 * 10 / 100))
    assert unchanged["equivalent"] == "it leaves the training data unchanged"
    assert repeated["equivalent"] is None and repeated["target"] == "all samples"
    text = str(report)
    assert "samples removed: 130 of 1347" in text and "samples added: 13 of 1347" in text
    assert "samples added: 134 of 1347" in text and "samples changed: 0 of 1347" in text
    assert "equivalent before training: it leaves the training data unchanged" in text


def test_deepmutations_data_operators_default_to_the_papers_1_percent(api):
    """Ma et al. (ASE 2018, V-B): "we configure our data-level mutation operators to
    automatically mutate 1% of original training data": int(1347 x 1 / 100) = 13 of the
    digits samples; DM removes DeepCrime's per-class share (1% of each class, truncated:
    one of each, 10)."""
    from probmut.train.datasets import load_dataset

    classes = np.bincount(load_dataset("digits").y_train)
    report = api("digits_cnn", ["DR", "LE", "DM", "DF", "NP"])
    found = {p["name"]: p["changes"]["samples"] for p in report.to_dict()["mutations"]}
    share = int(1347 * 1 / 100)
    assert found["data_repetition_1"] == {"changed": 0, "added": share, "removed": 0, "of": 1347}
    assert found["change_label_1@all"]["changed"] == share
    assert found["noise_perturbation_1"]["changed"] == share
    assert found["delete_training_data_1"]["removed"] == sum(int(c / 100) for c in classes) == 10
    assert 0 < found["data_shuffle_1"]["changed"] <= share  # the chosen samples, reordered


def test_gaze_lenet_holds_out_deepcrimes_tenth_and_remove_validation_set_trains_on_it(
        tmp_path, cli):
    """DeepCrime's lenet fits with validation_split=0.1: gaze_lenet's runs hold out 0.1
    unless told otherwise, and the remove_validation_set mutant trains on it too."""
    from probmut.train.datasets import load_dataset
    from tests.train.test_models import _gaze_npz

    gaze = _gaze_npz(tmp_path / "gaze.npz", n_train=200, n_test=20)
    base = ["train", "--architecture", "gaze_lenet", "--data", gaze, "--dry-run",
            "--mutation", "remove_validation_set"]
    (preview,) = cli.json(*base)["mutations"]
    assert preview["changes"]["samples"] == {"changed": 0, "added": 20, "removed": 0, "of": 180}
    assert preview["equivalent"] is None
    (preview,) = cli.json(*base, "--validation-split", "0.25", "--patience", "3")["mutations"]
    held = load_dataset(str(gaze), task="regression", validation_split=0.25)  # per bucket
    assert preview["changes"]["samples"] == {"changed": 0, "added": len(held.y_val),
                                             "removed": 0, "of": len(held.y_train)}
    assert preview["changes"]["settings"] == {"validation": [True, False], "patience": [3, None]}


def test_gaze_lenets_graph_two_inputs_and_a_concatenate(tmp_path, cli):
    """Issue 42 on gaze_lenet (its second input listed after the image branch, joined by
    a Concatenate, compiled with angular_error): AFRm copies the model without compiling
    it from its config; NEB's network is every layer whose neurons reach a weighted
    layer: the two convolutions (through pooling and Flatten) and the dense layer
    (through the Concatenate, after the pose's two columns), 20 + 50 + 500 neurons."""
    from tests.train.test_models import _gaze_npz

    gaze = _gaze_npz(tmp_path / "gaze.npz", n_train=40, n_test=10)
    trained, blocked, at_layer = cli.json(
        "train", "--architecture", "gaze_lenet", "--data", gaze, "--dry-run", "--mutation",
        "AFRm:3", "--mutation", "NEB", "--mutation", "NEB:0.01@3")["mutations"]
    assert trained["changes"]["settings"] == {"layer 3 conv2d_1: activation": ["relu", "linear"]}
    assert [(c["index"], c["of"]) for c in blocked["changes"]["layers"]] == [
        (1, 20), (3, 50), (7, 500)]
    assert sum(c["changed"] for c in blocked["changes"]["layers"]) == int(570 * 0.01)
    assert at_layer["legal"] and at_layer["changes"]["layers"] == [
        {"index": 3, "name": "conv2d_1", "changed": 1, "of": 50, "weights": ["dense/kernel"]}]


def test_targets_say_which_classes(api):
    text = str(api("digits_cnn", ["LE:10", "change_label:10@3+4",
                                  "make_output_classes_overlap:10@1-2", "change_label:10"]))
    assert [line for line in text.splitlines() if "target:" in line] == [
        "  target: every label", "  target: classes 3, 4",
        "  target: class 1's samples, added as class 2", "  target: the most frequent class "
                                                         "(regression: every target)"]


def test_each_is_one_entry_per_layer_and_the_json_has_exactly_the_issues_keys(api):
    report = api("digits_cnn", ["remove_bias:each", "change_patience"])
    document = report.to_dict()
    assert list(document) == ["mutations"]
    names = [m["name"] for m in document["mutations"]]
    assert names == ["remove_bias_0", "remove_bias_2", "remove_bias_4", "remove_bias_6",
                     "change_patience_1"]
    for preview in document["mutations"]:
        assert list(preview) == ["name", "operator", "magnitude", "level", "legal", "reason",
                                 "target", "equivalent", "changes"]
        assert list(preview["changes"]) == ["counted", "layers", "samples", "settings",
                                            "skipped"]
    illegal = document["mutations"][-1]
    assert illegal["legal"] is False and "no early stopping to change" in illegal["reason"]
    assert illegal["target"] is None and illegal["changes"]["counted"] is None
    assert [p.name for p in report.illegal] == ["change_patience_1"]


def test_the_command_prints_json_and_exits_2_for_an_illegal_mutation(mnist_shaped, cli):
    pytest.importorskip("tensorflow")
    base = ["train", "--architecture", "deepcrime_mnist", "--data", mnist_shaped, "--dry-run"]
    assert cli.json(*base, "--mutation", "neurons_freezing:0.05") == {"mutations": [{
        "name": "neurons_freezing_0.05", "operator": "neurons_freezing", "magnitude": "0.05",
        "level": "model", "legal": True, "reason": None, "target": "layer 0 conv2d (Conv2D)",
        "equivalent": None,
        "changes": {"counted": "units",
                    "layers": [{"index": 0, "name": "conv2d", "changed": 1, "of": 32,
                                "weights": ["kernel", "bias"]}],
                    "samples": None, "settings": {}, "skipped": []}}]}

    code, out, err = cli(*base, "--mutation", "GF", "--mutation", "change_gradient_clip")
    assert code == 2  # after printing the preview
    assert "change_gradient_clipping_0.5 (training level): ILLEGAL: the healthy optimizer " \
           "does not clip gradients" in out
    assert "weights changed: 0 conv2d" in out and "(11996 of 1199648)" in out
    assert err.strip().splitlines() == [
        "probmut train: error: change_gradient_clipping:0.5: the healthy optimizer does not "
        "clip gradients (DeepCrime changes an existing clipnorm or clipvalue) (--mutation)"]


@pytest.mark.parametrize("argv, message", [
    (["--dry-run"], "a dry run needs at least one mutation (--mutation)"),
    (["--dry-run", "--search", "change_epochs:1,5"], "leave out --search"),
    (["--dry-run", "--mutation", "GF:2_sd0.1"], "ratio must be between 0 and 1"),
])
def test_bad_dry_runs_exit_2_with_one_line(argv, message, cli):
    cli.refused("train", *argv, says=message)
