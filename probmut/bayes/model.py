"""The model's data: both groups on the scale its priors assume, and the names of its
Student-t normality parameters. The samplers (:mod:`probmut.bayes.nutpie_sampler`,
:mod:`probmut.bayes.pymc_sampler`) share them."""

from __future__ import annotations

import numpy as np

from probmut.errors import ProbmutError


def _scale(values, center) -> float:
    scale = float(np.sqrt(np.mean((values - center) ** 2)))
    if not scale > 0:
        raise ProbmutError("every accuracy is identical; the model needs some spread")
    return scale


def scaled_data(h, m, paired: bool):
    """The two modelled groups on the model's scale (healthy; mutant, or the per-instance
    differences when paired) and the maps (c, s, r) back to accuracies."""
    if paired:
        diff = m - h
        c = float(h.mean())
        s = _scale(h, c)
        r = _scale(diff, 0.0)
        return (h - c) / s, diff / r, (c, s, r)
    both = np.concatenate([h, m])
    c = float(both.mean())
    s = _scale(both, c)
    return (h - c) / s, (m - c) / s, (c, s, s)


def nu_names(paired: bool, likelihood: str) -> list[str]:
    if likelihood == "normal":
        return []
    return ["nu_healthy", "nu_difference"] if paired else ["nu"]

