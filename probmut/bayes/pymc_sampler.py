"""PyMC's NUTS on the model written in PyMC (the model's definition; compiled by PyTensor
for every fit). PyMC is imported on first use."""

from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager

from probmut.bayes.model import nu_names
from probmut.errors import ProbmutError


def _pymc():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import pymc
    except ImportError:
        raise ProbmutError("the pymc sampler needs PyMC (not installed): install "
                           "probmut[bayes], e.g. pip install 'probmut[bayes]'") from None
    return pymc


@contextmanager
def _quiet_pymc():
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def pymc_model(first, second, paired: bool, likelihood: str):
    """The model in PyMC, observing the two scaled groups."""
    from probmut.bayes.density import MU_SD, NU_MINUS_ONE_MEAN, SIGMA_SD

    pm = _pymc()
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, MU_SD, shape=2)   # healthy, mutant (paired: difference)
        sigma = pm.HalfNormal("sigma", SIGMA_SD, shape=2)
        nus = [pm.Exponential(name + "_minus_one", 1 / NU_MINUS_ONE_MEAN) + 1
               for name in nu_names(paired, likelihood)]
        for group, data in enumerate((first, second)):
            name = ("healthy", "difference" if paired else "mutant")[group]
            if likelihood == "normal":
                pm.Normal(name, mu=mu[group], sigma=sigma[group], observed=data)
            else:
                pm.StudentT(name, nu=nus[group % len(nus)], mu=mu[group], sigma=sigma[group],
                            observed=data)
    return model


def sample(first, second, paired: bool, settings, seed: int, progressbar: bool):
    """PyMC's NUTS draws of the model's parameters given the two scaled groups
    (an ArviZ InferenceData)."""
    pm = _pymc()
    with (pymc_model(first, second, paired, settings.likelihood), _quiet_pymc(),
          warnings.catch_warnings()):
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return pm.sample(draws=settings.draws, tune=settings.tune, chains=settings.chains,
                         cores=settings.cores, target_accept=settings.target_accept,
                         random_seed=seed, progressbar=progressbar,
                         compute_convergence_checks=False)
