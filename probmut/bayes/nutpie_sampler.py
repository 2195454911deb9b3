"""nutpie's NUTS (Rust) on the model's log density compiled by Numba
(:mod:`probmut.bayes.density`, cached on disk). nutpie is imported on first use."""

from __future__ import annotations

import functools
import math

import numpy as np

from probmut.bayes.model import nu_names
from probmut.errors import ProbmutError


def _nutpie():
    try:
        import nutpie
        import nutpie.compiled_pyfunc
    except ImportError:
        raise ProbmutError("the nutpie sampler needs nutpie (not installed): install "
                           "probmut[bayes], e.g. pip install 'probmut[bayes]', or choose "
                           "the sampler 'pymc'") from None
    return nutpie


@functools.cache
def nutpie_model(paired: bool, likelihood: str):
    """The model for nutpie's NUTS (Rust), its density compiled by Numba (cached on disk);
    each fit passes its data with ``.with_data(first=..., second=...)``."""
    from probmut.bayes.density import NU_MINUS_ONE_MEAN, SIGMA_SD, model_log_density

    student = likelihood == "student-t"
    nus = [name + "_minus_one" for name in nu_names(paired, likelihood)]
    names = ["mu", "sigma", *nus]
    shapes = [(2,), (2,)] + [()] * len(nus)
    # PyMC's start: its initial point (prior mean or scale), jittered by U(-1, 1) per chain
    center = np.array([0.0, 0.0, math.log(SIGMA_SD), math.log(SIGMA_SD)]
                      + [math.log(NU_MINUS_ONE_MEAN)] * len(nus))

    def log_density(x, first, second):
        return model_log_density(x, first, second, student, paired)

    def named(x, first, second):
        return {"mu": x[:2].copy(), "sigma": np.exp(x[2:4])} | {
            name: np.asarray(math.exp(x[4 + i])) for i, name in enumerate(nus)}

    def start(seed):
        return center + np.random.default_rng(seed).uniform(-1.0, 1.0, center.size)

    return _nutpie().compiled_pyfunc.from_pyfunc(
        center.size, lambda: log_density, lambda seed1, seed2, chain: named,
        [np.dtype(np.float64)] * len(names), shapes, names,
        shared_data={"first": np.zeros(3), "second": np.zeros(3)},
        make_initial_point_fn=start)


def sample(first, second, paired: bool, settings, seed: int, progressbar: bool):
    """nutpie's NUTS draws of the model's parameters given the two scaled groups
    (an ArviZ InferenceData)."""
    model = nutpie_model(paired, settings.likelihood).with_data(
        first=np.ascontiguousarray(first, dtype=np.float64),
        second=np.ascontiguousarray(second, dtype=np.float64))
    return _nutpie().sample(model, draws=settings.draws, tune=settings.tune,
                            chains=settings.chains, cores=settings.cores, seed=seed,
                            target_accept=settings.target_accept,
                            progress_bar=progressbar, save_warmup=False)
