"""The nutpie sampler (probmut.bayes.nutpie_sampler): the same posterior as PyMC's NUTS
within Monte-Carlo error, draws independent of the number of threads."""

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("pymc")
pytest.importorskip("arviz")

from probmut.bayes import BayesSettings, model_posterior  # noqa: E402

from ..conftest import normal_accuracies  # noqa: E402

pytestmark = pytest.mark.bayes


def test_nutpie_and_pymc_agree_within_monte_carlo_error():
    # Two NUTS implementations of one posterior: the mean and sd of every parameter and of
    # the kill probability agree within 4.5 combined Monte-Carlo standard errors (14
    # comparisons; ArviZ's standard errors of 4 x 2000 draws are themselves estimates).
    import arviz as az

    h, m = normal_accuracies(9, n=40, shift=0.0006)
    settings = BayesSettings(draws=2000, tune=1000, chains=4)
    fits = [model_posterior(h, m, replace(settings, sampler=sampler), seed=13)
            for sampler in ("nutpie", "pymc")]
    for fit in fits:
        assert fit.diagnostics.converged, fit.diagnostics
    names = ["mu", "sigma", "nu_minus_one", "kill_probability", "cohens_d"]
    first, second = (az.summary(fit.trace, var_names=names, round_to="none") for fit in fits)
    for moment in ("mean", "sd"):
        error = 4.5 * np.hypot(first[f"mcse_{moment}"], second[f"mcse_{moment}"])
        assert (abs(first[moment] - second[moment]) < error).all(), (moment, first, second)


def test_nutpie_draws_do_not_depend_on_threads():
    h, m = normal_accuracies(10)
    one, two = (model_posterior(h, m, BayesSettings(draws=300, tune=300, cores=cores), seed=3)
                for cores in (1, 2))
    np.testing.assert_array_equal(one.kill_draws, two.kill_draws)
    np.testing.assert_array_equal(one.diff_draws, two.diff_draws)
