"""The model-based posterior's results (probmut.bayes.results): JSON, table, text."""

import json

import numpy as np
import pytest

pytest.importorskip("pymc")
pytest.importorskip("arviz")

from probmut.bayes import (  # noqa: E402
    BayesComparison,
    BayesSettings,
    BayesStudy,
    Diagnostics,
    model_posteriors,
)

from ..conftest import normal_accuracies  # noqa: E402
from .conftest import SHORT  # noqa: E402

pytestmark = pytest.mark.bayes


def test_normal_likelihood_and_result_documents():
    h, m = normal_accuracies(2)
    study = model_posteriors(h, [m, h + 0.0], BayesSettings(draws=300, tune=300,
                                                             likelihood="normal"), seed=5)
    text = str(study)
    assert "Normal model" in text and "mutant 1" in text
    row = json.loads(study.to_json())["results"][0]
    assert set(row["kill_probability"]) == {"mean", "sd", "hdi_low", "hdi_high"}
    assert {"r_hat_max", "ess_bulk_min", "ess_tail_min", "divergences",
            "converged"} <= set(row["diagnostics"])
    assert study.to_frame().shape[0] == 2
    # the healthy population against itself: rarely killed
    assert study.comparisons[1].kill_mean < 0.15


def _comparison(name, kill, diff, d):
    draws = lambda values: np.asarray(values, dtype=float).reshape(2, -1)  # noqa: E731
    return BayesComparison(name, 20, 20, False, draws(kill), draws(diff), draws(d), 5.0,
                           Diagnostics(1.0, 900.0, 900.0, 0, 2, 4), SHORT)


def test_the_table_keeps_its_columns_apart_for_long_names_and_large_effects():
    """Issue 32: a long mutant name and a Cohen's d of tens ran into the next columns. The
    columns widen to their longest cell; short names and small effects keep the
    documented layout."""
    rng = np.random.default_rng(0)
    short = _comparison("3.1", rng.uniform(0.1, 0.2, 400), rng.normal(-2e-4, 5e-5, 400),
                        rng.normal(0.3, 0.1, 400))
    long = _comparison("delete_training_data_mutated0_MP_30.93", np.ones(400),
                       rng.normal(-0.05, 1e-4, 400), rng.normal(82.9, 4, 400))
    documented = str(BayesStudy((short,), SHORT)).splitlines()
    assert documented[0] == ("mutant               P(kill) [95% HDI]  mean diff mutant-healthy "
                             "[HDI]         Cohen d [HDI] P(worse)  R-hat    ESS  div")
    lines = str(BayesStudy((short, long), SHORT)).splitlines()
    header, rows = lines[0], lines[2:4]
    assert len({len(header), *map(len, rows)}) == 1  # every column lines up
    for row in rows:
        cells = row.split()
        assert cells[0] in ("3.1", "delete_training_data_mutated0_MP_30.93")
        assert len(cells) == 14  # name, 3 x (value and an interval of 2), 4 diagnostics
    assert " +82." in rows[1] and rows[1].startswith("delete_training_data_mutated0_MP_30.93  ")
