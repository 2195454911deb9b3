"""What the torch trainer reads of probmut's framework-neutral training settings, imported
here only.

:class:`TrainConfig` (how to train: every setting a DeepCrime training-level operator
changes), the bundled architectures' published settings (:data:`MODELS`: the torch
architectures train with the same ones as the Keras ones) and the regularisers'
factors (:data:`REGULARISERS`) live in :mod:`probmut.train.hyperparameters` and
:mod:`probmut.train.models`, which import neither TensorFlow nor torch; should they
move, these imports are the lines to change.

>>> MODELS["digits_cnn"].config.optimizer, REGULARISERS["l2"]
('adam', ('L2', {'l2': 0.01}))
"""

from probmut.train.hyperparameters import TrainConfig
from probmut.train.models import MODELS, REGULARISERS

__all__ = ["MODELS", "REGULARISERS", "TrainConfig"]
