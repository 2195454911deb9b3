"""Training operators (source level: the model's layers and its training settings):
``apply(config, params) -> config`` on a :class:`~probmut.train.models.TrainConfig`.

DeepCrime's "change" operators change a setting the healthy model has and are refused
otherwise (their :attr:`~probmut.train.operators.Operator.requires`): ``change_patience``
needs early stopping, and ``change_gradient_clipping`` a clipping optimizer.

Examples
--------
>>> from probmut.train.models import TrainConfig
>>> config = TrainConfig(epochs=12, batch_size=128, clip=("value", 1.0))
>>> change_gradient_clipping(config, {"clip": (None, 0.5)}).clip
('value', 0.5)
>>> needs_early_stopping(config, {})  # doctest: +NORMALIZE_WHITESPACE
'the healthy model has no early stopping to change (train it with a patience N and a validation
split)'
"""

from __future__ import annotations

_FROM_PARAMS = object()


def layer_change(attribute, value=_FROM_PARAMS, key="name"):
    """Set one attribute of the target layer's config (``value``, or ``params[key]``)."""
    def apply(config, params):
        change = (params["layer"], attribute, params[key] if value is _FROM_PARAMS else value)
        return config.replace(layer_changes=(*config.layer_changes, change))
    return apply


def remove_layer(config, params):
    """The target layer is left out (DeepMutation LR)."""
    return config.replace(structure=(*config.structure, ("remove", params["layer"], None)))


def add_layer(config, params):
    """A batch normalisation or an activation layer is inserted after the target layer
    (DeepMutation LAs)."""
    return config.replace(structure=(*config.structure,
                                     ("add", params["layer"], params["insert"])))


def setting(name, key="value"):
    def apply(config, params):
        return config.replace(**{name: params[key]})
    return apply


def fixed(**settings):
    def apply(config, params):
        return config.replace(**settings)
    return apply


def change_optimisation_function(config, params):
    """Use another Keras optimizer, with its own default learning rate."""
    return config.replace(optimizer=params["name"], learning_rate=None)


def change_gradient_clipping(config, params):
    """The healthy optimizer's clip threshold (by value or by norm) becomes ``T``."""
    kind, threshold = params["clip"]
    return config.replace(clip=(kind or config.clip[0], threshold))


def needs_early_stopping(config, params) -> str | None:
    if config.patience is None:
        return ("the healthy model has no early stopping to change (train it with a "
                "patience N and a validation split)")
    return None


def needs_clipping(config, params) -> str | None:
    kind = params["clip"][0]
    if config.clip is None:
        return ("the healthy optimizer does not clip gradients (DeepCrime changes an "
                "existing clipnorm or clipvalue)")
    if kind is not None and kind != config.clip[0]:
        return f"the healthy optimizer clips by {config.clip[0]}, not by {kind}"
    return None
