"""Per-input killing: Fisher's test against SciPy, DeepMutation's score, monotonicity."""

import numpy as np
import pytest
from scipy.stats import fisher_exact

from probmut.errors import ProbmutError
from probmut.inputs import Outcomes, analyse_inputs, fisher_exact_inputs

from .conftest import synthetic_outcomes, write_outcomes

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # the seeded randomized test below still checks monotonicity
    given = None


@pytest.mark.parametrize("sizes", [(20, 20), (13, 31), (5, 2)])
@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
def test_vectorised_fisher_equals_scipy_per_input(sizes, alternative):
    n_h, n_m = sizes
    rng = np.random.default_rng(1)
    h = rng.integers(0, n_h + 1, 2000)
    m = rng.integers(0, n_m + 1, 2000)
    h[:5], m[:5] = n_h, n_m  # all correct on both sides: a zero margin
    h[5:10], m[5:10] = 0, 0
    p = fisher_exact_inputs(h, n_h, m, n_m, alternative)
    reference = [fisher_exact([[a, n_h - a], [c, n_m - c]], alternative=alternative).pvalue
                 for a, c in zip(h, m, strict=True)]
    np.testing.assert_allclose(p, reference, rtol=1e-12, atol=0)


def test_deepmutation_and_statistical_killing_on_synthetic_files(tmp_path):
    labels, healthy, broken, same = synthetic_outcomes(np.random.default_rng(2))
    files = [write_outcomes(tmp_path / "healthy.outcomes.npz", healthy, labels),
             write_outcomes(tmp_path / "broken.outcomes.npz", broken, labels),
             write_outcomes(tmp_path / "same.outcomes.npz", same, labels)]
    h, *mutants = [Outcomes.load(f) for f in files]
    assert [m.name for m in mutants] == ["broken", "same"]
    study = analyse_inputs(h, mutants)
    broken_result, same_result = study.mutants

    # DeepMutation, directly from the definition.
    expected = np.flatnonzero((healthy.mean(0) > 0.5) & ((~broken).mean(0) > 0.5))
    np.testing.assert_array_equal(broken_result.majority_killers, expected)
    assert set(broken_result.killed_classes) == {3, 7}
    assert same_result.killed_classes == ()
    assert study.deepmutation_score == pytest.approx(2 / (2 * 10))

    # Statistical: Fisher per input at alpha / pool.
    assert study.pool == 400 and broken_result.alpha_per_input == pytest.approx(0.05 / 400)
    p = [fisher_exact([[a, 30 - a], [c, 30 - c]], alternative="greater").pvalue
         for a, c in zip(healthy.sum(0), broken.sum(0), strict=True)]
    np.testing.assert_array_equal(broken_result.statistical_killers,
                                  np.flatnonzero(np.array(p) <= 0.05 / 400))
    assert broken_result.statistically_killed and not same_result.statistically_killed
    assert study.statistical_score == 0.5
    assert set(labels[broken_result.statistical_killers]) == {3, 7}


def test_a_test_set_without_the_broken_class_does_not_kill(tmp_path):
    labels, healthy, broken, _ = synthetic_outcomes(np.random.default_rng(3))
    h = Outcomes.from_matrix(healthy, labels, name="healthy")
    m = Outcomes.from_matrix(broken, labels, name="broken")
    without = np.flatnonzero((labels != 3) & (labels != 7))
    study = analyse_inputs(h, [m], inputs=without)
    assert study.deepmutation_score == 0 and study.statistical_score == 0
    assert study.mutants[0].alpha_per_input == pytest.approx(0.05 / 400)  # the pool, not the set


def _random_case(rng, n_h, n_m, n, share):
    quality = rng.uniform(0, 1, n)
    healthy = rng.random((n_h, n)) < quality
    mutant = rng.random((n_m, n)) < quality * rng.uniform(0, 1, n)
    labels = rng.integers(0, 4, n)
    small = rng.random(n) < share
    small[rng.integers(n)] = True
    large = small | (rng.random(n) < 0.5)
    return (Outcomes.from_matrix(healthy, labels), Outcomes.from_matrix(mutant, labels),
            small, large)


def _check_monotone(healthy, mutant, small, large, **options):
    before = analyse_inputs(healthy, [mutant], inputs=small, **options)
    after = analyse_inputs(healthy, [mutant], inputs=large, **options)
    b, a = before.mutants[0], after.mutants[0]
    assert set(b.statistical_killers) <= set(a.statistical_killers)
    assert set(b.majority_killers) <= set(a.majority_killers)
    assert set(b.killed_classes) <= set(a.killed_classes)
    assert before.statistical_score <= after.statistical_score
    assert before.deepmutation_score <= after.deepmutation_score


def test_adding_inputs_never_unkills_seeded():
    rng = np.random.default_rng(6)
    for _ in range(200):
        case = _random_case(rng, rng.integers(2, 13), rng.integers(2, 13),
                            rng.integers(1, 41), rng.uniform(0.05, 1))
        _check_monotone(*case, correction=["bonferroni", "none"][rng.integers(2)],
                        alternative=["greater", "two-sided"][rng.integers(2)],
                        alpha=[0.05, 0.5, 0.9][rng.integers(3)])


if given is not None:
    @settings(max_examples=300, deadline=None)
    @given(st.integers(2, 12), st.integers(2, 12), st.integers(1, 40),
           st.integers(0, 2**32 - 1), st.floats(0.05, 1.0),
           st.sampled_from(["bonferroni", "none"]), st.sampled_from(["greater", "two-sided"]),
           st.sampled_from([0.05, 0.5, 0.9]))
    def test_adding_inputs_never_unkills(n_h, n_m, n, seed, share, correction, alternative,
                                         alpha):
        case = _random_case(np.random.default_rng(seed), n_h, n_m, n, share)
        _check_monotone(*case, correction=correction, alternative=alternative, alpha=alpha)


def test_bonferroni_over_the_test_set_would_not_be_monotone():
    # Why the level is fixed by the pool: one input with p = 0.01 kills as a test set of
    # 1 under alpha / |set|, and stops killing once 9 harmless inputs join (0.01 > 0.005).
    p = fisher_exact_inputs([10], 10, [4], 10)[0]
    assert 0.05 / 10 < p <= 0.05 / 1


def test_an_unknown_correction_is_refused():
    labels, healthy, broken, _ = synthetic_outcomes(np.random.default_rng(5))
    with pytest.raises(ProbmutError, match="correction"):
        analyse_inputs(Outcomes.from_matrix(healthy, labels),
                       [Outcomes.from_matrix(broken, labels)], correction="holm")
