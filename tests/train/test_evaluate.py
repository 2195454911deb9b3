"""Scoring saved models without TensorFlow: how model files group into populations."""

import pytest

from probmut.errors import ProbmutError
from probmut.train.evaluate import group_models, instance_ids


def test_deepcrime_and_probmut_model_files_group_into_populations(tmp_path):
    deepcrime = ["mnist_original_0.h5", "mnist_original_1.h5",
                 "mnist_delete_training_data_mutated0_MP_3.1_0.h5",
                 "mnist_delete_training_data_mutated0_MP_3.1_1.h5",
                 "mnist_change_activation_function_mutated0_MP_elu_0.h5"]
    model, groups = group_models(deepcrime)
    assert model == "mnist"
    assert {k: [i for i, _ in v] for k, v in groups.items()} == {
        ("healthy", None): [0, 1], ("delete_training_data", "3.1"): [0, 1],
        ("change_activation_function", "elu"): [0]}
    ours = [f"models/{p}/{i:05d}.keras" for p in ("healthy", "weights_fuzzing_0.05_1")
            for i in (2, 0)]
    model, groups = group_models(ours)
    assert model is None and groups[("weights_fuzzing", "0.05_1")][0][0] == 0
    with pytest.raises(ProbmutError, match="cannot tell the population"):
        group_models(["random.h5"])
    assert instance_ids(["x_3.keras", "x_3.h5"]) == [0, 1]  # repeated numbers: positions


def test_deepcrime_operator_names_group_under_ours():
    """DeepCrime's change_gradient_clip / change_earlystopping_patience are our
    change_gradient_clipping / change_patience: the same population names as train's."""
    model, groups = group_models(["mnist_change_gradient_clip_mutated0_MP_0.1_0.h5",
                                  "mnist_change_earlystopping_patience_mutated0_MP_1_0.h5",
                                  "models/change_gradient_clip_0.5/00000.keras"])
    assert set(groups) == {("change_gradient_clipping", "0.1"), ("change_patience", "1"),
                           ("change_gradient_clipping", "0.5")}
