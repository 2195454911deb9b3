"""Population-size study (METHOD.md section 6), its recommendation, caching and resuming."""

from pathlib import Path

import numpy as np
import pytest

import probmut.engine
from probmut import paper
from probmut.bagging import PosteriorSettings
from probmut.io.cache import Cache
from probmut.io.populations import read_population
from probmut.sample_size import sample_size_study

from .conftest import MCE_LABEL_312

RAW = Path(__file__).resolve().parents[1] / "raw_data" / "mnist"
SMALL = PosteriorSettings(bootstraps=20, trials=30)


def _population(name):
    return read_population(RAW / f"results_mnist_{name}.csv", name=name)


@pytest.fixture(scope="module")
def healthy():
    return _population("original")


def _median_se(values, rng, resamples: int = 2000) -> float:
    """Monte-Carlo error of a median over sub-populations: bootstrap over them."""
    draws = rng.choice(values, (resamples, values.size))
    return float(np.median(draws, axis=1).std(ddof=1))


@pytest.mark.slow
def test_curve_approaches_the_papers_values_within_monte_carlo_error(healthy):
    # MNIST change_label 3.12 at the paper's settings (30 sub-populations, least-squares fit;
    # R = 10 instead of 100: each sub-population's mean is noisier, and that noise is part
    # of the bootstrap's MC error). References: the paper's n = 25 median (METHOD.md
    # section 6) and the 200-instance value the curve must approach, from the paper's own
    # 100 repetitions (rep_mce; METHOD.md section 5: 0.36883, MCE 0.00155).
    from probmut.io.arrays import load_kill_rates
    from probmut.mce import mce_from_kill_counts

    mutant = _population("change_label_mutated0_MP_3.12")
    study = sample_size_study(healthy, mutant, paper.study_settings(), sizes=(25, 100, 190),
                              subpopulations=30, repetitions=10, seed=42)
    full = mce_from_kill_counts(load_kill_rates(MCE_LABEL_312, 100), paper.mce_settings())
    assert full.mean == pytest.approx(0.36883, abs=5e-6)
    rng = np.random.default_rng(0)
    n25, n100, n190 = study.sizes
    # n = 25: sub-populations split between killed and not killed (means from 0.02 to
    # 0.99, as in the paper), so a median over 30 of them has an MC error near 0.2, and
    # the paper's median (also over 30) as much again: this comparison is necessarily loose.
    se = _median_se(n25.means, rng)
    assert 0.1 < se < 0.3
    assert abs(np.median(n25.means) - 0.27597) < 4 * np.sqrt(2) * se
    mean = n25.summary("mean")
    assert mean["low"] < 0.1 and mean["high"] > 0.9
    # Larger n: the curve approaches the 200-instance value, within its MC error.
    for size in (n100, n190):
        se = np.hypot(_median_se(size.means, rng), full.mean_se)
        assert abs(np.median(size.means) - full.mean) < 4 * se, (size.n, se)
    assert _median_se(n190.means, rng) < 0.02
    # and the spread over sub-populations narrows.
    widths = [np.subtract(*np.quantile(s.means, [0.975, 0.025])) for s in study.sizes]
    assert widths[0] > widths[1] > widths[2]


def test_sizes_above_half_the_population_are_flagged(healthy):
    mutant = _population("delete_training_data_mutated0_MP_30.93")
    study = sample_size_study(healthy.subset(healthy.ids[:60]), mutant.subset(mutant.ids[:60]),
                              SMALL, sizes=(25, 30, 46), subpopulations=3, repetitions=2,
                              seed=1)
    assert [row["overlap"] for row in study.to_dict()["sizes"]] == [False, False, True]
    assert study.to_frame()["overlap"].tolist() == [False, False, True]
    note = study.to_dict()["overlap_note"]
    assert "n above half of the 60 instances (46)" in note and "probmut recommend" in note
    text = str(study)
    assert "   46*" in text and "* n above half" in text
    alone = sample_size_study(healthy, mutant, SMALL, sizes=(25,), subpopulations=3,
                              repetitions=2, seed=1)
    assert alone.overlap_note is None and "*" not in str(alone)


def test_same_numbers_for_any_threads_and_chunking(healthy):
    mutant = _population("delete_training_data_mutated0_MP_9.29")
    kwargs = dict(sizes=(25, 60), subpopulations=5, repetitions=4, seed=9)
    one = sample_size_study(healthy, mutant, SMALL, threads=1, chunk=5, **kwargs)
    two = sample_size_study(healthy, mutant, SMALL, threads=2, chunk=2, **kwargs)
    for a, b in zip(one.sizes, two.sizes, strict=True):
        assert np.array_equal(a.means, b.means) and np.array_equal(a.var_se, b.var_se)


def test_interrupt_and_resume_reuses_work(healthy, tmp_path, monkeypatch):
    mutant = _population("delete_training_data_mutated0_MP_12.38")
    kwargs = dict(sizes=(25, 50, 75), subpopulations=6, repetitions=4, seed=5, chunk=2)
    reference = sample_size_study(healthy, mutant, SMALL, **kwargs)  # no cache
    real = probmut.engine.kill_counts
    calls = []

    def interrupted(*args, **kw):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(kw["first_set"])
        return real(*args, **kw)

    monkeypatch.setattr(probmut.engine, "kill_counts", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sample_size_study(healthy, mutant, SMALL, cache=Cache(tmp_path), **kwargs)
    assert len(calls) == 4
    calls.clear()
    monkeypatch.setattr(probmut.engine, "kill_counts",
                        lambda *a, **kw: calls.append(kw["first_set"]) or real(*a, **kw))
    cache = Cache(tmp_path)
    resumed = sample_size_study(healthy, mutant, SMALL, cache=cache, **kwargs)
    assert len(calls) == 9 - 4 and cache.hits == 4    # 3 sizes x 3 chunks, 4 were done
    for a, b in zip(reference.sizes, resumed.sizes, strict=True):
        assert np.array_equal(a.means, b.means) and np.array_equal(a.variances, b.variances)
    calls.clear()
    again = sample_size_study(healthy, mutant, SMALL, cache=Cache(tmp_path), **kwargs)
    assert calls == [] and again.to_dict() == resumed.to_dict()


def test_paired_study_and_bad_sizes(healthy):
    mutant = read_population(RAW / "results_mnist_neurons_freezing_mutated0_MP_0.1.csv")
    study = sample_size_study(healthy, mutant, SMALL, sizes=(30,), subpopulations=3,
                              repetitions=3, paired=True, seed=1)
    assert study.paired and study.sizes[0].means.shape == (3,)
    with pytest.raises(Exception, match="population sizes must lie between"):
        sample_size_study(healthy, mutant, SMALL, sizes=(10, 250), subpopulations=3,
                          repetitions=3, seed=1)
