"""How a magnitude ``VALUE[@TARGET]`` is read, and how a share becomes a count.

Each parser takes the text before and after ``@`` and returns the operator's parameters
(plain data), or raises ``ValueError`` with what was wrong (the registry adds which
``--mutation`` it was). Nothing here imports TensorFlow: Keras names are checked when
the mutation is bound to a model (:func:`probmut.train.operators.check_keras_name`).

Targets: ``@LAYER`` (an index into the model's layer table: ``model.layers``, nested
models' layers in their place), ``@each`` (one mutant per layer
that fits, as DeepCrime runs a layer operator over every layer when none is given),
``@network`` (every layer with a kernel at once, DeepMutation's model-level scope),
``@all`` / ``@C`` / ``@C1+C2`` (classes) and ``@A-B`` (a pair of classes).

Examples
--------
>>> ratio_scale("0.05_1", None)
{'ratio': 0.05, 'scale': 1.0, 'layer': None}
>>> ratio("0.01", "network"), ratio("0.1", "3")
({'ratio': 0.01, 'layer': 'network'}, {'ratio': 0.1, 'layer': 3})
>>> clip("0.5", None), clip("norm_1", None)
({'clip': (None, 0.5)}, {'clip': ('norm', 1.0)})
"""

from __future__ import annotations

import math

from probmut.io.manifest import MAGNITUDE_INTEGER, MAGNITUDE_NUMBER

#: A layer target meaning "one mutant per layer that fits" (DeepCrime's loop).
EACH = "each"
#: A layer target meaning "every layer with a kernel at once" (DeepMutation's scope).
NETWORK = "network"


def count(n: int, share: float, per: float = 1) -> int:
    """How many of ``n`` items the share ``share / per`` takes, truncated as the
    references count: DeepCrime ``int(n * percent / 100)``, PMT and DeepMutation++
    ``int(n * ratio)`` (the same arithmetic, so the same counts to the last item).

    >>> count(40, 30.93, per=100), count(100, 29, per=100), count(32, 0.05)
    (12, 29, 1)
    """
    return int(n * share / per)


def number(text: str, what: str, low: float, high: float = math.inf, *, integer=False):
    """The number ``text`` in one of the forms docs/operators.md lists
    (:data:`~probmut.io.manifest.MAGNITUDE_NUMBER`), within its bounds.

    >>> number("12.5", "percent", 0, 100), number("3", "layer index", 0, integer=True)
    (12.5, 3)
    >>> number("1_0", "percent", 0, 100)
    Traceback (most recent call last):
    ...
    ValueError: percent must be a number in decimal digits (e.g. 10, 3.1, 1e-3), got '1_0'
    """
    form = MAGNITUDE_INTEGER if integer else MAGNITUDE_NUMBER
    if not form.fullmatch(text):
        example = "e.g. 3" if integer else "e.g. 10, 3.1, 1e-3"
        raise ValueError(f"{what} must be {'an integer' if integer else 'a number'} in "
                         f"decimal digits ({example}), got {text!r}")
    value = int(text) if integer else float(text)
    if value < low or value > high or not math.isfinite(value):
        bound = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
        raise ValueError(f"{what} must be {bound}, got {text}")
    return value


def no_target(target):
    if target is not None:
        raise ValueError("takes no @target")


def layer(target, *, network=False):
    """``@LAYER``, ``@each`` or (model-level weight operators) ``@network``; None if absent."""
    if target is None or target == EACH or (network and target == NETWORK):
        return target
    return number(target, "layer index", 0, integer=True)


def _classes(target):
    """``@3`` or ``@3+7``: class ids a local (class-targeted) operator is restricted to."""
    if target is None:
        return None
    return tuple(sorted({number(c, "class id", 0, integer=True) for c in target.split("+")}))


def percent(value, target):
    no_target(target)
    return {"percent": number(value, "percent", 0, 100)}


def local_percent(value, target):
    return {"percent": number(value, "percent", 0, 100), "classes": _classes(target)}


def change_label(value, target):
    share = number(value, "percent", 0, 100)
    if target == "all":
        return {"percent": share, "all_classes": True, "classes": None}
    return {"percent": share, "all_classes": False, "classes": _classes(target)}


def overlap(value, target):
    pair = None
    if target is not None:
        first, sep, second = target.partition("-")
        if not sep:
            raise ValueError(f"write the classes as @FROM-TO, e.g. @3-5; got @{target}")
        pair = (number(first, "class id", 0, integer=True),
                number(second, "class id", 0, integer=True))
        if pair[0] == pair[1]:
            raise ValueError("the two classes must differ")
    return {"percent": number(value, "percent", 0, 100), "pair": pair}


def noise(value, target):
    share, _, std = value.partition("_")
    params = local_percent(share, target)
    params["std"] = number(std, "noise std", 0) if std else 0.1
    return params


def ratio_scale(value, target):
    share, sep, scale = value.partition("_")
    if not sep:
        raise ValueError(f"write RATIO_SCALE as in the paper, e.g. 0.05_1; got {value!r}")
    return {"ratio": number(share, "ratio", 0, 1), "scale": number(scale, "scale", 0),
            "layer": layer(target, network=True)}


def gaussian(value, target):
    share, sep, scale = value.partition("_")
    if sep and scale.startswith("sd"):  # the paper's form: N(w, sd^2), an absolute sd
        return {"ratio": number(share, "ratio", 0, 1), "scale": None,
                "sd": number(scale[2:], "noise sd", 0), "layer": layer(target, network=True)}
    if not sep:
        raise ValueError(f"write RATIO_sdSD (an absolute sd, DeepMutation's N(w, sd^2)) or "
                         f"RATIO_SCALE (sd relative to each kernel's), e.g. 0.01_sd0.1 or "
                         f"0.01_1; got {value!r}")
    return {**ratio_scale(value, target), "sd": None}


def ratio(value, target):
    return {"ratio": number(value, "ratio", 0, 1), "layer": layer(target, network=True)}


def layer_only(value, target):
    """The magnitude is a layer index (or ``each``); empty: the operator's default layer."""
    if target is not None:
        raise ValueError("write the layer index as the magnitude, e.g. layer_deactivation:6")
    return {"layer": layer(value) if value else None}


def switch_only(value, target):
    no_target(target)
    if value != "on":
        raise ValueError(f"takes no magnitude (write just the operator's name, or ':on'); "
                         f"got {value!r}")
    return {}


def keras_name(with_layer: bool):
    """Parser for a Keras activation/initializer/loss/optimizer name (checked against
    Keras when bound, so that parsing needs no TensorFlow)."""
    def parse(value, target):
        if not value:
            raise ValueError("give a name")
        if not with_layer:
            no_target(target)
            return {"name": value}
        return {"name": value, "layer": layer(target)}
    return parse


#: What ``add_layer`` may insert besides an ``Activation`` layer (DeepMutation's LAs).
BATCH_NORMALIZATION = "batch_normalization"


def inserted_layer(value, target):
    """``add_layer``: ``batch_normalization`` or a Keras activation name (an
    ``Activation`` layer), inserted after ``@LAYER``."""
    if not value:
        raise ValueError(f"give what to insert: {BATCH_NORMALIZATION} or an activation name")
    name = None if value == BATCH_NORMALIZATION else value
    return {"insert": value, "name": name, "layer": layer(target)}


def regulariser_name(value, target):
    from probmut.train.models import REGULARISERS

    if value not in REGULARISERS:
        raise ValueError(f"regulariser must be one of {', '.join(REGULARISERS)}, got {value!r}")
    return {"name": value, "layer": layer(target)}


def rate(value, target):
    return {"value": number(value, "dropout rate", 0, 1), "layer": layer(target)}


def clip(value, target):
    """``T`` (the healthy optimizer's clip threshold becomes T) or ``value_T`` /
    ``norm_T`` (the same, and it must be that kind of clipping)."""
    no_target(target)
    kind, sep, threshold = value.rpartition("_")
    if sep and kind not in ("value", "norm"):
        raise ValueError(f"write T, value_T or norm_T (the new threshold of the healthy "
                         f"optimizer's gradient clipping), e.g. 0.5; got {value!r}")
    return {"clip": (kind or None, number(threshold, "clip threshold", math.ulp(0.0)))}


def positive(what, integer, low=None):
    def parse(value, target):
        no_target(target)
        minimum = low if low is not None else (1 if integer else math.ulp(0.0))
        return {"value": number(value, what, minimum, integer=integer)}
    return parse
