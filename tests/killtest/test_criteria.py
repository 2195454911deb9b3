"""The kill criteria's registry and settings (probmut.killtest.criteria): named effect
sizes, descriptions, refusals, DeepCrime's rounding of p, paired criteria on paired
populations only."""

import math

import numpy as np
import pytest
import statsmodels.api as sm

from probmut import paper
from probmut.engine import kill_counts
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion, kill_test, round_p_value


def test_criterion_settings_and_errors():
    assert KillCriterion().effect == 0.5 and KillCriterion(kind="mannwhitney").effect == 0.64
    assert KillCriterion(effect="large").effect == 0.8
    assert KillCriterion(kind="mannwhitney", effect="0.7").effect == 0.7
    assert paper.criterion("welch").round_p == 3
    assert KillCriterion(kind="welch").describe() == "Welch p < 0.05 and |d| >= 0.5"
    assert KillCriterion().describe() == "p < 0.05 and |d| >= 0.5"
    assert (KillCriterion(kind="mannwhitney", direction="mutant-better").describe()
            == "Mann-Whitney p < 0.05 and 1-A12 >= 0.64")
    with pytest.raises(ProbmutError, match="kind must be one of deepcrime, .*, got 'ttest'"):
        KillCriterion(kind="ttest")
    with pytest.raises(ProbmutError, match=r"A12 and must be in \[0.5, 1\]"):
        KillCriterion(kind="mannwhitney", effect=0.2)
    with pytest.raises(ProbmutError, match="unknown effect size"):
        KillCriterion(effect="huge")
    with pytest.raises(ProbmutError,
                       match=r"effect must be a finite number in \[0, inf\), got nan"):
        KillCriterion(effect=float("nan"))
    with pytest.raises(ProbmutError, match="direction"):
        KillCriterion(direction="up")
    with pytest.raises(ProbmutError, match="alpha"):
        KillCriterion(alpha=1.5)


def test_rounding_boundary_changes_the_decision():
    criterion = KillCriterion(round_p=3)
    assert f"{criterion.p_max():.3f}" == "0.049"
    assert f"{math.nextafter(criterion.p_max(), 1):.3f}" == "0.050"
    exact = KillCriterion()
    # p = 0.0496 is significant exactly, not when printed as 0.050.
    assert 0.0496 <= exact.p_max() and 0.0496 > criterion.p_max()


def test_rounding_reads_p_as_the_printed_summary_table(random_draws):
    # DeepCrime parses the p out of glm.summary(); our rounding must give the same number.
    x, y = random_draws
    for a, b in zip(x[:150], y[:150], strict=True):
        design = sm.add_constant(np.r_[np.zeros(20), np.ones(20)])
        fit = sm.GLM(np.r_[a, b], design).fit()
        printed = float(str(fit.summary().tables[1][2][4]))
        assert round_p_value(kill_test(a, b).p_value_exact, 3) == printed


def test_paired_criteria_refuse_independent_populations(mnist_delete):
    from probmut.repeat import repeated_tests

    healthy, mutants = mnist_delete
    for kind in ("paired-t", "wilcoxon"):
        criterion = KillCriterion(kind=kind)
        with pytest.raises(ProbmutError, match=f"the {kind} criterion needs paired populations"):
            kill_counts(healthy.values, mutants[0].values, bootstraps=2, criterion=criterion)
        with pytest.raises(ProbmutError, match="needs paired populations"):
            repeated_tests(healthy, mutants[0], repetitions=2, criterion=criterion)
    with pytest.raises(ProbmutError, match="same size, got 5 healthy and 4 mutant"):
        kill_test(np.ones(5), np.ones(4), KillCriterion(kind="wilcoxon"))
