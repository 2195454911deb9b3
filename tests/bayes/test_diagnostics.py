"""Convergence checks (probmut.bayes.diagnostics): a chain that did not converge is
flagged and warned about."""

import pytest

pytest.importorskip("pymc")
pytest.importorskip("arviz")

from probmut.bayes import (  # noqa: E402
    BayesSettings,
    BayesStudy,
    ConvergenceWarning,
    model_posterior,
)

from ..conftest import normal_accuracies  # noqa: E402

pytestmark = pytest.mark.bayes


def test_non_convergence_is_flagged_and_warned():
    h, m = normal_accuracies(3, n=10)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = model_posterior(h, m, BayesSettings(draws=30, tune=10), seed=0)
    assert not res.diagnostics.converged
    assert "NOT CONVERGED" in str(BayesStudy((res,), res.settings))
