"""Fitting and scoring one instance (probmut.train.fitting): what Keras' fit is given for
the training settings (batches, validation data, early stopping)."""

import types

import numpy as np
import pytest

from probmut.train import fitting
from probmut.train.datasets import ModelDims
from probmut.train.models import MODELS, TrainConfig

pytestmark = pytest.mark.train


def test_fit_honours_batching_validation_and_patience(monkeypatch):
    """remove_validation_set gives training no validation data, as DeepCrime's
    ``validation_data=None``: the validation samples are never trained on."""
    pytest.importorskip("tensorflow")
    import keras

    calls, model_dims = [], ModelDims((8, 8, 1), 10)
    keras.utils.set_random_seed(0)
    model = MODELS["digits_cnn"].build(model_dims)
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    history = types.SimpleNamespace(history={"loss": [2.0, 1.0]})
    monkeypatch.setattr(model, "fit", lambda x, y, **kwargs: calls.append((len(x), kwargs))
                        or history)
    x, y = np.zeros((50, 8, 8, 1), np.float32), np.arange(50) % 10
    validation = (np.zeros((7, 8, 8, 1), np.float32), np.arange(7) % 10)
    config = TrainConfig(epochs=2, batch_size=16)
    fitting.fit(model, x, y, model_dims, "classification", config, validation)
    fitting.fit(model, x, y, model_dims, "classification",
                config.replace(full_batch=True, patience=1), validation)
    fitting.fit(model, x, y, model_dims, "classification",
                config.replace(validation=False, patience=1), validation)
    (n1, first), (n2, second), (n3, third) = calls
    stops = [[c for c in kwargs["callbacks"] if isinstance(c, keras.callbacks.EarlyStopping)]
             for kwargs in (first, second, third)]  # beside the symptom watch, always there
    assert (n1, first["batch_size"], first["validation_data"][0].shape[0]) == (50, 16, 7)
    assert stops[0] == []
    assert (n2, second["batch_size"]) == (50, 50)
    assert stops[1][0].patience == 1
    assert (n3, third["validation_data"], stops[2]) == (50, None, [])
