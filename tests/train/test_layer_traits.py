"""The one table of Keras layer traits names Keras' own classes, and reads as the rooms
that use it need (stacking, relevance propagation)."""

import pytest

from probmut.train.layer_traits import LAYERS, traits_of

pytestmark = pytest.mark.train


def test_every_class_in_the_table_is_a_keras_layer():
    keras = pytest.importorskip("keras")
    missing = [name for name in LAYERS if not isinstance(getattr(keras.layers, name, None),
                                                         type)]
    assert missing == []


def test_channelwise_layers_are_per_sample_and_weighted_layers_have_no_traits():
    assert all(t.per_sample for t in LAYERS.values() if t.channelwise)
    assert traits_of("Dense") == traits_of("Conv2D") == traits_of("LSTM")  # none
    assert traits_of("Dropout").relevance == "pass" and not traits_of("Dropout").per_sample
    assert not traits_of("Softmax").channelwise  # it combines the channels
