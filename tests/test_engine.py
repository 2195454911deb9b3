"""The Monte-Carlo engine: reproducibility, independence of workers, correct sampling, for
every kill criterion (each against METHOD.md section 3 written plainly with SciPy's tests)."""

import numpy as np
import pytest
from scipy import stats

from probmut import engine
from probmut.engine import kill_counts
from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion

from .conftest import paper_file
from .killtest.conftest import rank_biserial


def test_same_seed_same_counts_any_number_of_threads(mnist_delete):
    healthy, mutants = mnist_delete
    one = kill_counts(healthy.values, mutants[1].values, repetitions=3, seed=11, threads=1)
    two = kill_counts(healthy.values, mutants[1].values, repetitions=3, seed=11, threads=2)
    assert one.shape == (3, 100)
    np.testing.assert_array_equal(one, two)
    other = kill_counts(healthy.values, mutants[1].values, repetitions=3, seed=12, threads=2)
    assert not np.array_equal(one, other)


@pytest.mark.parametrize("paired, expected", [
    (False, [27, 36, 31, 50, 30, 36, 45, 25]), (True, [24, 20, 30, 21, 18, 36, 35, 42])],
    ids=["unpaired", "paired"])
def test_a_seed_keeps_its_kill_counts(paired, expected):
    """A seed's numbers are part of what users record: a faster kernel must draw the same
    stream and test the same samples (these counts are those of every earlier release)."""
    rng = np.random.default_rng(2026)
    healthy, mutant = rng.normal(0.990, 0.002, 60), rng.normal(0.9894, 0.002, 60)
    counts = kill_counts(healthy, mutant, bootstraps=8, trials=50, seed=11, paired=paired)
    assert counts.tolist() == expected


def test_chunked_sets_give_the_numbers_of_one_call():
    rng = np.random.default_rng(0)
    healthy, mutant = rng.normal(0.9, 0.01, (5, 40)), rng.normal(0.895, 0.01, (5, 40))
    whole = kill_counts(healthy, mutant, bootstraps=7, repetitions=2, seed=5)
    parts = [kill_counts(healthy[i:i + 2], mutant[i:i + 2], bootstraps=7, repetitions=2,
                         seed=5, first_set=i) for i in range(0, 5, 2)]
    np.testing.assert_array_equal(whole, np.concatenate(parts))


@pytest.mark.parametrize("paired", [False, True], ids=["unpaired", "paired"])
def test_any_split_of_the_work_into_calls_gives_the_counts_of_one_call(monkeypatch, paired):
    """The engine returns to Python between calls of a fraction of a second (Ctrl-C,
    progress): blocks of whole tasks, or slices of long tasks' trials with their streams
    and draws kept between calls. However the work is split, the counts are those of one
    call, bit for bit, and ``report`` hears of every test once."""
    rng = np.random.default_rng(2)
    healthy, mutant = rng.normal(0.9, 0.01, (3, 40)), rng.normal(0.897, 0.01, (3, 40))
    # two threads at most, whatever the machine: the split depends on the thread count
    # (with 16, blocks of 3000 took all 30 tasks in one call; issue 44)
    run = dict(bootstraps=5, trials=37, repetitions=2, sample=10, paired=paired, seed=3,
               first_set=2, threads=2)
    assert engine._calls(3 * 2 * 5, 37, 10, 40, 40, threads=64) == (30, 37)  # one call
    whole = kill_counts(healthy, mutant, **run)
    for work, memory in ((1, engine.CALL_MEMORY), (3000, engine.CALL_MEMORY), (500, 1)):
        monkeypatch.setattr(engine, "CALL_WORK", work)     # one trial per call; blocks of
        monkeypatch.setattr(engine, "CALL_MEMORY", memory)  # whole tasks; one task at a time
        reported = []
        split = kill_counts(healthy, mutant, report=reported.append, **run)
        np.testing.assert_array_equal(split, whole)
        assert len(reported) > 1 and sum(reported) == 3 * 2 * 5 * 37


def _reference_kill_rate(healthy, mutant, rng, bootstraps, trials, paired):
    """METHOD.md section 3 written plainly with numpy and scipy (an independent oracle)."""
    kills = 0
    for _ in range(bootstraps):
        ids = rng.integers(0, healthy.size, healthy.size)
        h_boot = healthy[ids] if paired else healthy[rng.integers(0, healthy.size, healthy.size)]
        m_boot = mutant[ids] if paired else mutant[rng.integers(0, mutant.size, mutant.size)]
        for _ in range(trials):
            pick = rng.choice(healthy.size, 20, replace=False)
            x = h_boot[pick]
            y = m_boot[pick if paired else rng.choice(mutant.size, 20, replace=False)]
            sp = np.sqrt((19 * x.var(ddof=1) + 19 * y.var(ddof=1)) / 38)
            z = (y.mean() - x.mean()) / (sp * np.sqrt(0.1))
            p = 2 * stats.norm.sf(abs(z))
            kills += p < 0.05 and abs((x.mean() - y.mean()) / sp) >= 0.5
    return kills / (bootstraps * trials)


@pytest.mark.parametrize("paired", [False, True])
def test_kill_rate_matches_a_plain_implementation(mnist_delete, manifest, paired):
    from probmut.io.populations import read_population
    from probmut.population import pair

    if paired:
        mutation = manifest.mutation("mnist", "weights_fuzzing")
        healthy, mutant = pair(read_population(mutation.healthy),
                               read_population(mutation.files[2]))
    else:
        healthy, mutant = mnist_delete[0], mnist_delete[1][1]
    reference = _reference_kill_rate(healthy.values, mutant.values, np.random.default_rng(3),
                                     bootstraps=40, trials=50, paired=paired)
    engine = kill_counts(healthy.values, mutant.values, repetitions=20, seed=3,
                         paired=paired).mean() / 100
    # Both estimate the same kill probability; the reference's own MC error dominates.
    se = np.sqrt(reference * (1 - reference) / 2000) + 0.02
    assert abs(engine - reference) < 3 * se, (engine, reference)


def test_paired_healthy_against_itself_never_kills(mnist_delete):
    healthy = mnist_delete[0].values
    assert kill_counts(healthy, healthy, paired=True, seed=1).max() == 0


def test_whole_population_sample_is_deterministic_per_resample():
    # k = n: each trial uses every resampled instance, so all trials of a resample agree.
    rng = np.random.default_rng(2)
    counts = kill_counts(rng.normal(0.9, 0.01, 20), rng.normal(0.899, 0.01, 20),
                         bootstraps=50, trials=10, sample=20, seed=4)
    assert set(np.unique(counts)) <= {0, 10}


def test_impossible_requests_are_clear_errors():
    values = np.linspace(0.8, 0.9, 15)
    with pytest.raises(ProbmutError, match="cannot draw 20 instances .* population of 15"):
        kill_counts(values, values)
    with pytest.raises(ProbmutError, match="paired populations must have the same instances"):
        kill_counts(values, values[:10], sample=5, paired=True)
    with pytest.raises(ProbmutError, match="bootstraps must be at least 1, got 0"):
        kill_counts(values, values, sample=5, bootstraps=0)


def _distribution_summary(counts):
    """Per repetition: mean kill count, sd of the counts over the B resamples (the
    bootstrap's signature) and the bagged posterior's variance (moment-matched Beta)."""
    from probmut.beta import fit_beta_batch

    a, b = fit_beta_batch(counts, 100, "moments")
    return {"mean": counts.mean(axis=1), "sd": counts.std(axis=1, ddof=1),
            "var": a * b / ((a + b) ** 2 * (a + b + 1))}


@pytest.mark.parametrize("mutation, magnitude, paired", [
    ("delete_training_data", "9.29", False), ("weights_fuzzing", "0.05_1", True)])
def test_bootstrap_spread_and_posterior_variance_match_the_papers_runs(
        manifest, mutation, magnitude, paired):
    # The paper's 100 repetitions of B = 100 resamples x N = 100 tests (rep_mce) against a
    # fresh engine run of the same size. Without the bootstrap the sd of the counts over
    # resamples falls from about 13.3 to 4.96 (binomial only) and the posterior variance
    # from 0.0193 to 0.0047 (MNIST 9.29); without paired resampling the mean count of
    # weights_fuzzing 0.05_1 falls from 62.7 to 58.2. Tolerance: 4 standard errors of the
    # difference of the two averages over repetitions.
    from probmut import paper
    from probmut.io.arrays import load_kill_rates
    from probmut.io.populations import read_population
    from probmut.population import pair

    spec = manifest.mutation("mnist", mutation)
    healthy = read_population(spec.healthy)
    mutant = read_population(spec.file_for(magnitude))
    if paired:
        healthy, mutant = pair(healthy, mutant)
    saved = load_kill_rates(paper_file(f"rep_mce/mnist/mnist_{mutation}_{magnitude}"
                                       "_200_pop_size.npy", "the paper's own repetitions"), 100)
    fresh = kill_counts(healthy.values, mutant.values, repetitions=100, paired=paired,
                        criterion=paper.criterion(), seed=7)
    ours, theirs = _distribution_summary(fresh), _distribution_summary(saved)
    for key in ("mean", "sd", "var"):
        se = np.hypot(ours[key].std(ddof=1), theirs[key].std(ddof=1)) / 10
        assert abs(ours[key].mean() - theirs[key].mean()) < 4 * se, (key, ours[key].mean(),
                                                                     theirs[key].mean(), se)


# --- the other kill criteria -----------------------------------------------------------

@pytest.mark.parametrize("kind", ["welch", "mannwhitney"])
def test_engine_is_reproducible_by_seed_for_each_criterion(mnist_delete, kind):
    healthy, mutants = mnist_delete
    criterion = KillCriterion(kind=kind)
    one = kill_counts(healthy, mutants[1], repetitions=2, seed=11, threads=1, criterion=criterion)
    two = kill_counts(healthy, mutants[1], repetitions=2, seed=11, threads=2, criterion=criterion)
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, kill_counts(healthy, mutants[1], repetitions=2, seed=12,
                                               criterion=criterion))
    # Same random draws, another test: the counts differ but stay close.
    deepcrime = kill_counts(healthy, mutants[1], repetitions=2, seed=11)
    assert not np.array_equal(one, deepcrime)
    assert abs(one.mean() - deepcrime.mean()) < 15


def _scipy_kill_rate(healthy, mutant, rng, kind, bootstraps=20, trials=50):
    """METHOD.md section 3 with SciPy's tests (an independent oracle for the engine)."""
    kills = 0
    for _ in range(bootstraps):
        h_boot = healthy[rng.integers(0, healthy.size, healthy.size)]
        m_boot = mutant[rng.integers(0, mutant.size, mutant.size)]
        for _ in range(trials):
            x = h_boot[rng.choice(healthy.size, 20, replace=False)]
            y = m_boot[rng.choice(mutant.size, 20, replace=False)]
            if kind == "welch":
                p = stats.ttest_ind(x, y, equal_var=False).pvalue
                sp = np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2)
                kills += p < 0.05 and abs(x.mean() - y.mean()) / sp >= 0.5
            else:
                res = stats.mannwhitneyu(x, y)
                a12 = res.statistic / 400
                kills += res.pvalue < 0.05 and max(a12, 1 - a12) >= 0.64
    return kills / (bootstraps * trials)


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")
@pytest.mark.parametrize("kind", ["welch", "mannwhitney"])
def test_engine_kill_rate_matches_scipy_implementation(mnist_delete, kind):
    healthy, mutants = mnist_delete
    h, m = healthy.values, mutants[1].values
    reference = _scipy_kill_rate(h, m, np.random.default_rng(5), kind)
    engine = kill_counts(h, m, repetitions=10, seed=5,
                         criterion=KillCriterion(kind=kind)).mean() / 100
    se = np.sqrt(reference * (1 - reference) / 1000) + 0.02
    assert abs(engine - reference) < 3 * se, (engine, reference)


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")
@pytest.mark.parametrize("kind", ["paired-t", "wilcoxon"])
def test_engine_with_paired_criteria(manifest, kind):
    from probmut.io.populations import read_population
    from probmut.population import pair

    mutation = manifest.mutation("mnist", "weights_fuzzing")
    healthy, mutant = pair(read_population(mutation.healthy), read_population(mutation.files[1]))
    criterion = KillCriterion(kind=kind)
    run = dict(repetitions=10, paired=True, criterion=criterion)
    one = kill_counts(healthy.values, mutant.values, seed=4, threads=1, **run)
    np.testing.assert_array_equal(one, kill_counts(healthy.values, mutant.values, seed=4,
                                                   threads=2, **run))
    # Same kill probability as METHOD.md section 3 written plainly with SciPy's tests.
    rng = np.random.default_rng(4)
    h, m = healthy.values, mutant.values
    kills = 0
    for _ in range(20):
        ids = rng.integers(0, h.size, h.size)
        for _ in range(50):
            pick = ids[rng.choice(h.size, 20, replace=False)]
            x, y = h[pick], m[pick]
            if kind == "paired-t":
                p = stats.ttest_rel(x, y).pvalue
                size = abs(np.mean(x - y) / np.std(x - y, ddof=1))
            else:
                p = stats.wilcoxon(x, y).pvalue
                size = abs(rank_biserial(x[None], y[None])[0])
            kills += p < 0.05 and size >= criterion.effect
    reference = kills / 1000
    engine = one.mean() / 100
    se = np.sqrt(reference * (1 - reference) / 1000) + 0.02
    assert abs(engine - reference) < 3 * se, (engine, reference)
    # The healthy population against itself, paired: every difference is zero.
    assert kill_counts(h, h, bootstraps=5, paired=True, criterion=criterion, seed=1).max() == 0


@pytest.mark.parametrize("pairs", [2, 5, 12])  # alone; padded; side by side (SIDE_BY_SIDE)
@pytest.mark.parametrize("kind, paired, own_healthy", [
    ("deepcrime", False, False), ("deepcrime", False, True), ("deepcrime", True, True),
    ("deepcrime", True, False), ("welch", False, False), ("mannwhitney", False, True),
    ("paired-t", True, True)])
def test_pairs_drawn_together_get_the_counts_each_gets_alone(monkeypatch, kind, paired,
                                                              own_healthy, pairs):
    """kill_counts_shared: every pair's counts are kill_counts' for it alone with the same
    seed, bit for bit: its shared draws, its healthy moments taken once, the pairs' moments
    and verdicts side by side (fewer pairs padded, or each alone), and the split of the
    tasks into calls. Some pairs' accuracies take two values only, so that samples are constant
    (degenerate) and p-values fall near the boundary, where the verdict is not sure
    from the side-by-side loop alone."""
    assert 2 < engine.SIDE_BY_SIDE // 2 <= 5 < engine.SIDE_BY_SIDE <= 12
    monkeypatch.setattr(engine, "CALL_WORK", 20_000)  # several calls
    rng = np.random.default_rng(7)
    sets, n = 3, 30
    healthy = rng.normal(0.9, 0.01, (pairs, sets, n) if own_healthy else (sets, n))
    mutants = rng.normal(0.9, 0.01, (pairs, sets, n)) - rng.uniform(0, 0.01, (pairs, 1, 1))
    few = pairs // 2  # pairs whose samples are often constant
    mutants[:few] = rng.choice([0.9, 0.9, 0.9, 0.89], (few, sets, n))
    if own_healthy:
        healthy[:few] = rng.choice([0.9, 0.9, 0.9, 0.9, 0.91], (few, sets, n))
    run = dict(bootstraps=4, trials=23, sample=6, paired=paired, seed=9,
               criterion=KillCriterion(kind=kind))
    together = engine.kill_counts_shared(healthy, mutants, **run)
    alone = [kill_counts(healthy[q] if own_healthy else healthy, mutants[q], **run)
             for q in range(pairs)]
    assert together.shape == (pairs, sets, 4)
    np.testing.assert_array_equal(together, np.reshape(alone, together.shape))
    assert len({int(c) for c in together.sum(axis=(1, 2))}) > 1  # the pairs differ


def test_pairs_drawn_together_are_refused_as_alone():
    rng = np.random.default_rng(0)
    healthy, mutants = rng.normal(0.9, 0.01, (3, 30)), rng.normal(0.9, 0.01, (2, 3, 30))
    with pytest.raises(ProbmutError, match="not .S, n. or .Q, S, n. and .Q, S, n."):
        engine.kill_counts_shared(healthy, mutants[0])
    with pytest.raises(ProbmutError, match="sample size k <= 30"):
        engine.kill_counts_shared(healthy, mutants, sample=40)
    mutants[1, 2, 5] = np.nan
    with pytest.raises(ProbmutError, match="mutants.*NaN"):
        engine.kill_counts_shared(healthy, mutants)
