"""The bagged posterior against METHOD.md and the paper's data."""


import numpy as np
import pytest

from probmut import paper
from probmut.bagging import (
    PosteriorSettings,
    bagged_posteriors,
    study_from_kill_counts,
)
from probmut.beta import fit_beta_batch
from probmut.io.arrays import load_kill_rates

from .conftest import KILL_RATES, paper_file

# METHOD.md, "Reference values": (H_s, H_m, ratio) for healthy and each magnitude.
REFERENCE_TABLE = {
    "healthy": (0.75663, 1.00000, 0.756626),
    "3.1": (0.91377, 1.00000, 0.913773),
    "9.29": (0.99836, 0.99924, 0.999124),
    "12.38": (0.99942, 0.99979, 0.999627),
    "18.57": (1.00000, 0.95441, 1.047766),
    "30.93": (1.00000, 0.00355, 281.44),
}


def test_paper_kill_rates_reproduce_the_reference_table():
    baseline = load_kill_rates(KILL_RATES / "mnist_orig.npy", 100)
    mutants = load_kill_rates(
        KILL_RATES / "mnist" / "mnist_delete_training_data_list_mut.npy", 100)
    study = study_from_kill_counts(baseline, list(mutants), list(REFERENCE_TABLE),
                                   paper.posterior_settings())
    for row in study.populations:
        h_s, h_m, ratio = REFERENCE_TABLE[row.name]
        # The table prints 5 decimals for H and 6 significant digits for the ratio.
        assert row.h_sound == pytest.approx(h_s, abs=5e-6)
        assert row.h_mutant == pytest.approx(h_m, abs=5e-6)
        assert row.ratio == pytest.approx(ratio, rel=1e-4)
    assert [r.killed for r in study.populations[1:]] == [False, False, False, True, True]


def test_fresh_monte_carlo_agrees_with_the_paper(mnist_delete):
    # A fresh B = N = 100 run against the paper's own run (its saved kill rates), both
    # summarised alike. Each is one Monte-Carlo draw: the sd of the posterior mean over the
    # paper's 100 repetitions (rep_mce) is its MC error (0.0002 to 0.015 here), so the
    # difference of two runs has sd sqrt(2) times that; tolerance 4 of those.
    healthy, mutants = mnist_delete
    names = ["original"] + [f"delete_training_data_{m.name}" for m in mutants]
    repetitions = [paper_file(f"rep_mce/mnist/mnist_{name}_200_pop_size.npy",
                              "the Monte-Carlo error of the paper's run")
                   for name in names]
    settings = paper.posterior_settings()
    fresh = bagged_posteriors(healthy, mutants, settings, seed=2023)
    saved = study_from_kill_counts(
        load_kill_rates(KILL_RATES / "mnist_orig.npy", 100),
        list(load_kill_rates(KILL_RATES / "mnist" / "mnist_delete_training_data_list_mut.npy",
                             100)),
        list(REFERENCE_TABLE), settings)
    run_sd = []
    for path in repetitions:
        counts = load_kill_rates(path, 100)
        a, b = fit_beta_batch(counts, 100, "lsq", settings.grid_step)
        run_sd.append((a / (a + b)).std(ddof=1))
    ours = np.array([p.mean for p in fresh.populations])
    theirs = np.array([p.mean for p in saved.populations])
    assert np.all(np.abs(ours - theirs) < 4 * np.sqrt(2) * np.array(run_sd)), (ours, theirs)
    np.testing.assert_allclose(theirs, [0.06, 0.14, 0.48, 0.47, 0.80, 0.99], atol=0.005)
    decisions = {p.name: p.killed for p in fresh.populations}
    assert decisions["3.1"] is False and decisions["30.93"] is True


def test_same_seed_same_study_any_threads(mnist_delete):
    healthy, mutants = mnist_delete
    one = bagged_posteriors(healthy, mutants[:2], seed=9, threads=1).to_dict()
    two = bagged_posteriors(healthy, mutants[:2], seed=9, threads=2).to_dict()
    assert one == two


def test_a_mutants_numbers_do_not_depend_on_the_other_mutants(mnist_delete):
    healthy, mutants = mnist_delete
    together = bagged_posteriors(healthy, mutants[:3], seed=5).populations[3]
    alone = bagged_posteriors(healthy, [mutants[2]], seed=5).populations[1]
    assert together.name == alone.name == "12.38"
    np.testing.assert_array_equal(together.kill_counts, alone.kill_counts)


def test_warns_when_the_sample_is_most_of_the_population():
    from probmut.bagging import SmallPopulationWarning

    rng = np.random.default_rng(0)
    small = rng.normal(0.9, 0.01, 30).clip(0, 1)
    with pytest.warns(SmallPopulationWarning, match="30 instances for samples of k = 20"):
        bagged_posteriors(small, [small], PosteriorSettings(bootstraps=5), seed=1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bagged_posteriors(small, [small], PosteriorSettings(bootstraps=5, sample=10), seed=1)
