"""Pilot verdicts and fresh-instance predictions (probmut.recommend) and the validation
scripts built on them."""

import json
import subprocess
import sys

import numpy as np
import pytest

import probmut.engine
from probmut.bagging import PosteriorSettings, bagged_posteriors
from probmut.io.cache import Cache
from probmut.io.populations import read_population
from probmut.population import pair
from probmut.recommend import _fresh_instances, recommend
from probmut.seeds import seed_of
from probmut.sequential import CERTAINTY, SPEND, settle_threshold

from .conftest import RAW, ROOT

MNIST = RAW / "mnist"


def _mnist(name):
    return read_population(MNIST / f"results_mnist_{name}.csv", name=name)


@pytest.fixture(scope="module")
def healthy():
    return _mnist("original")


def _dtd(magnitude):
    return _mnist(f"delete_training_data_mutated0_MP_{magnitude}")


def test_overlap_defect_regression(healthy):
    """Instances 0-59 of MNIST healthy and delete_training_data 18.57: the old
    recommendation drew sub-populations of the pilot itself and called 46 instances
    enough with a band of 0.10. Sub-populations of 46 measured on the bundled data give
    0.47 (disjoint sets) to 0.58 (drawn outside the pilot); the prediction must be of
    that order, not 0.1."""
    advice = recommend(healthy.values[:60], _dtd("18.57").values[:60], sizes=(25, 46, 200),
                       seed=42)
    small, size, large = advice.sizes
    # 100 draws estimate a 95% band to about 10% (relative): 0.3 is far below 0.47.
    assert 0.3 < size.mean_band < 0.7
    # The band of fresh instances narrows with n but stays wide near the pilot's size.
    assert small.mean_band > size.mean_band * 0.9 > large.mean_band


def _disjoint_verdicts(healthy, mutant, pilots=8, size=25):
    return [recommend(healthy.values[size * j:size * (j + 1)],
                      mutant.values[size * j:size * (j + 1)], sizes=(size,), seed=7).verdict
            for j in range(pilots)]


@pytest.mark.slow
def test_verdicts_on_clear_and_ambiguous_mutants(healthy):
    """Disjoint pilots of the whole populations (30.93 killed with posterior mean 0.99;
    3.1 not killed with 0.15, Cohen's d 0.29; 9.29 not killed with 0.46, a coin toss)."""
    clear = _disjoint_verdicts(healthy, _dtd("30.93"))
    # Six are killed; two pilots put p_killed at 0.956 and 0.959 (800 simulated
    # populations), too close to 0.95 to clear it with its Monte-Carlo error.
    assert clear.count("killed") >= 6 and "not killed" not in clear
    # 25 instances per side pin Cohen's d down to about +-0.55 (95%): too little to rule
    # out the two-sided kill boundary |d| = 0.62 for 3.1 (d = 0.29) at the verdict's
    # level. It is never called killed; 50 instances per side can call it not killed.
    weak = _disjoint_verdicts(healthy, _dtd("3.1"))
    assert "killed" not in weak
    assert "not killed" in _disjoint_verdicts(healthy, _dtd("3.1"), pilots=4, size=50)
    ambiguous = _disjoint_verdicts(healthy, _dtd("9.29"))
    assert ambiguous.count("not settled") >= 6
    assert _disjoint_verdicts(healthy, _dtd("9.29"), pilots=4, size=50) == ["not settled"] * 4
    whole = recommend(healthy, _dtd("9.29"), sizes=(200,), seed=7)
    assert whole.verdict == "not settled" and "so close to the boundary" in whole.message


def test_unsettled_verdict_says_how_many_or_why_not(healthy):
    ambiguous = recommend(healthy.values[25:50], _dtd("9.29").values[25:50], sizes=(25, 50),
                          seed=7)
    assert ambiguous.verdict == "not settled"
    assert 0.1 < ambiguous.p_killed < 0.9
    if ambiguous.needed is None:
        assert "so close to the boundary" in ambiguous.message
    else:
        assert ambiguous.needed > 25 and f"About {ambiguous.needed}" in ambiguous.message
        capped = recommend(healthy.values[25:50], _dtd("9.29").values[25:50], sizes=(25, 50),
                           seed=7, needed_up_to=ambiguous.needed - 1)
        assert capped.verdict == "not settled" and capped.needed is None
        assert f"It would take about {ambiguous.needed} instances" in capped.message
    weak = recommend(healthy.values[50:75], _dtd("3.1").values[50:75], sizes=(25,), seed=7)
    assert weak.verdict == "not settled" and 25 < weak.needed <= 1000
    assert f"About {weak.needed} instances per side would settle it" in weak.message
    # Grown from 25 to more than 50, the pilot's own uncertainty lowers the promised 0.8.
    assert 0 < weak.needed_chance < 0.8
    assert f"about {weak.needed_chance:.2f} for this pilot grown" in weak.message
    capped = recommend(healthy.values[50:75], _dtd("3.1").values[50:75], sizes=(25,), seed=7,
                       needed_up_to=weak.needed - 1)
    assert capped.needed is None and f"It would take about {weak.needed}" in capped.message
    assert capped.needed_chance is None


def test_paired_pilot_draws_ids_jointly(healthy):
    frozen = _mnist("neurons_freezing_mutated0_MP_0.2")
    h, m = pair(healthy, frozen)
    advice = recommend(h.subset(h.ids[:25]), m.subset(m.ids[:25]), sizes=(25,), paired=True,
                       seed=1)
    assert advice.verdict == "killed" and advice.paired
    # Joint draws keep the pairs' correlation; independent ones would not.
    rng = np.random.default_rng(0)
    sample = np.column_stack([h.values[:25], m.values[:25]])
    fresh = _fresh_instances(rng, sample, 200, 50, uncertain=False)
    correlation = np.corrcoef(fresh[..., 0].ravel(), fresh[..., 1].ravel())[0, 1]
    expected = np.corrcoef(h.values[:25], m.values[:25])[0, 1]
    assert correlation == pytest.approx(expected, abs=0.05)


def test_same_numbers_for_any_threads_sizes_and_cache(healthy, tmp_path, monkeypatch):
    mutant = _dtd("12.38")
    small = PosteriorSettings(bootstraps=20, trials=30)
    kwargs = dict(simulations=20, seed=3)
    one = recommend(healthy.values[:30], mutant.values[:30], small, sizes=(25, 60), threads=1,
                    **kwargs)
    two = recommend(healthy.values[:30], mutant.values[:30], small, sizes=(60,), threads=2,
                    cache=Cache(tmp_path), **kwargs)
    assert np.array_equal(one.sizes[1].means, two.sizes[0].means)
    assert np.array_equal(one.reference_means, two.reference_means)
    calls = []
    real = probmut.engine.kill_counts
    monkeypatch.setattr(probmut.engine, "kill_counts",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    again = recommend(healthy.values[:30], mutant.values[:30], small, sizes=(60,),
                      cache=Cache(tmp_path), **kwargs)
    assert calls == [] and again.to_dict() == two.to_dict()


def test_resampled_draws_keep_mean_and_unbiased_variance():
    rng = np.random.default_rng(4)
    sample = rng.normal(0.9, 0.01, (20, 1))
    fresh = _fresh_instances(rng, sample, 2000, 20, uncertain=False)
    assert fresh.mean() == pytest.approx(sample.mean(), abs=0.01 / np.sqrt(40000) * 5)
    assert fresh.var() == pytest.approx(sample.var(ddof=1), rel=0.02)
    # Each draw is a pilot instance, its deviation from the mean stretched by sqrt(P/(P-1)).
    stretched = sample.mean() + (sample - sample.mean()) * np.sqrt(20 / 19)
    assert np.allclose(np.unique(fresh.round(12)), np.sort(stretched.ravel().round(12)))


#: The command line's plan: a pilot of 20, rounds of 10, at most 200 per side.
LOOKS = range(20, 201, 10)


def _normal_pair(rng, effect, count=1, n=200):
    """Synthetic normal accuracies (MNIST's healthy spread), the mutant ``effect`` standard
    deviations worse."""
    return (0.99 + 0.0006 * rng.standard_normal((count, n)),
            0.99 + 0.0006 * (rng.standard_normal((count, n)) - effect))


def _path(h, m, looks, settings, seed):
    """The verdict after each look until settled: (verdict, instances per side)."""
    for n in looks:
        advice = recommend(h[:n], m[:n], settings, sizes=(), looks=looks, needed_up_to=200,
                           seed=seed)
        if advice.verdict != "not settled":
            break
    return advice.verdict, n


@pytest.mark.slow
def test_a_coin_toss_mutant_looked_at_ten_times_settles_rarely():
    """Normal populations at d = 0.62, where about half of the fresh populations of 200
    per side are judged killed (q, measured on 200 of them): any settled verdict is a
    coin toss, so wrong settled verdicts of at most 5% allow settling on at most 10% of
    the paths. The rule settles 5 of these 150 paths (10 looks from 20 to 200 per side);
    even at 4%, more than 15 of 150 has a chance under 0.1% (binomial). Without the
    correction over the looks (a fixed 0.95, the Monte-Carlo bound kept) 20 of the same
    150 paths settle."""
    from scipy import stats

    small = PosteriorSettings(bootstraps=20, trials=20)
    rng = np.random.default_rng(2024)
    fresh = _normal_pair(rng, 0.62, count=200)
    q = np.mean([bagged_posteriors(h, [m], small, seed=i).populations[1].killed
                 for i, (h, m) in enumerate(zip(*fresh, strict=True))])
    assert 0.3 < q < 0.7  # a coin toss (standard error of q: 0.035)
    looks = list(range(20, 201, 20))
    paths = 150
    settled = sum(_path(*(rows[0] for rows in _normal_pair(rng, 0.62)), looks, small,
                        seed=j)[0] != "not settled" for j in range(paths))
    assert stats.binom.sf(15, paths, 0.04) < 0.001
    assert settled <= 15


@pytest.mark.slow
def test_clear_mutants_still_settle_from_few_instances():
    """With the command line's plan (19 looks): d = 1.6 is killed from 20 or 30
    instances per side, d = 0 called not killed, from a median of at most 60. d = 0
    takes longer: the criterion is two-sided (a better mutant can be killed too), and
    the estimate must keep clear of |d| = 0.62 on both sides (latent model: median 50,
    78% by 60, 90% by 80; one path of seed 7 took 170)."""
    rng = np.random.default_rng(7)
    for effect, expected, paths in ((1.6, "killed", 3), (0.0, "not killed", 5)):
        seen = [_path(*(rows[0] for rows in _normal_pair(rng, effect)), list(LOOKS),
                      PosteriorSettings(), seed=j) for j in range(paths)]
        assert all(verdict == expected for verdict, _ in seen), seen
        sizes = [n for _, n in seen]
        assert (max(sizes) <= 30) if effect else (np.median(sizes) <= 60), seen


@pytest.mark.slow
def test_pilot_validation_quick_run_reports_every_part_reproducibly(tmp_path):
    """scripts/validation/pilot_validation.py --quick: every part and the targets printed, the
    summary saved, and a rerun (from its cache) prints the same tables."""
    command = [sys.executable, str(ROOT / "scripts" / "validation" / "pilot_validation.py"),
               "--quick", "--out", str(tmp_path)]
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    for heading in ("## (a)", "## (b)", "## (c)", "## (d)", "## (e)", "## Targets"):
        assert heading in first.stdout
    summary = json.loads((tmp_path / "pilot_validation.json").read_text())["summary"]
    # the levels table reads p_killed alone: at the default level it settles every pilot
    # table (a) settles, and those the Monte-Carlo bound on p_killed kept unsettled there
    rows = [line.split(" | ") for line in first.stdout.splitlines()
            if line.startswith(f"| {CERTAINTY} | ")]
    for row in rows:
        cell = summary["verdicts"][f"{row[1]} all 77"]
        assert float(row[6].rstrip("%")) >= round(100 * cell["settled"] / cell["pilots"], 1)
    assert len(rows) == 2
    assert {key.split(" ", 1)[1] for key in summary["normal_floor"]} == {
        "real (a, b)", "normal, one population of 200 (as a, b)", "normal, fresh populations"}
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    before_timings = [run.stdout.split("## Benchmark")[0] for run in (first, again)]
    assert before_timings[0] == before_timings[1]


@pytest.mark.slow
def test_sequential_validation_quick_run_reports_every_part_reproducibly(tmp_path):
    """scripts/validation/sequential_validation.py --quick: both parts, the frontier and the targets
    printed and saved, and a rerun (every path from its cache) prints the same tables."""
    command = [sys.executable, str(ROOT / "scripts" / "validation" / "sequential_validation.py"),
               "--quick", "--out", str(tmp_path)]
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    for heading in ("## (a)", "### normal", "## (b)", "most any rule may settle",
                    "## Targets"):
        assert heading in first.stdout
    document = json.loads((tmp_path / "sequential_validation.json").read_text())
    assert document["thresholds"] == [settle_threshold(n, LOOKS) for n in LOOKS]
    assert [cell["effect"] for cell in document["synthetic"]] == [0.0, 0.6, 1.5]
    for path in document["bundled_paths"]:  # every look recorded, up to the last one
        assert len(path["trajectory"]) == path["looks"]
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split("total")[0] == first.stdout.split("total")[0]
    # The calibration's family, replayed on the same cached paths: its member at the
    # library's budget and shape is the library's rule, path for path.
    calibrated = subprocess.run(command + ["--calibrate", "--only", "a", "--budgets",
                                           str(SPEND * (1 - CERTAINTY)), "--rule-shapes", "0"],
                                capture_output=True, text=True, cwd=tmp_path)
    assert calibrated.returncode == 0, calibrated.stderr
    (row,) = json.loads((tmp_path / "sequential_validation.json").read_text())["calibration"]
    assert row["thresholds"] == pytest.approx(document["thresholds"])
    assert [c["summary"] for c in row["cells"]] == [c["summary"] for c in document["synthetic"]]
    # (b) alone: the bundled paths replayed without (a)'s cells.
    only_b = subprocess.run(command + ["--calibrate", "--only", "b", "--budgets",
                                       str(SPEND * (1 - CERTAINTY)), "--rule-shapes", "0"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert only_b.returncode == 0, only_b.stderr
    (row,) = json.loads((tmp_path / "sequential_validation.json").read_text())["calibration"]
    assert "cells" not in row
    assert {k: row["b"][k] for k in ("paths", "settled", "wrong", "instances")} == {
        k: document["bundled"]["all"][k] for k in ("paths", "settled", "wrong", "instances")}


def test_a_verdict_seed_keys_its_own_stream():
    """The "verdict" seed gives each mutant and look its own stream: the same pilot judged under
    another name or look draws other populations, under the same one the same."""
    rng = np.random.default_rng(3)
    h, m = rng.normal(0.99, 0.002, 20), rng.normal(0.988, 0.002, 20)

    def means(name, look):
        return recommend(h, m, sizes=(), simulations=20,
                         seed=seed_of(5, "verdict", name, look)).reference_means

    first = means("a", 20)
    assert np.array_equal(first, means("a", 20))
    assert not np.array_equal(first, means("b", 20))
    assert not np.array_equal(first, means("a", 30))


def test_verdicts_simulated_together_are_each_pilots_own(monkeypatch):
    """simulate_verdicts: recommend reads every block of each pilot from it (nothing is
    simulated again) and gives what it gives alone, for unpaired and paired pilots, one
    refused pilot among them, settled ones and some that took more blocks."""
    import probmut.recommend as module

    rng = np.random.default_rng(4)
    small = PosteriorSettings(bootstraps=20, trials=20, sample=5)
    healthy = rng.normal(0.9, 0.01, 30)
    pilots = [(healthy, healthy - drop + rng.normal(0, 0.01, 30), paired)
              for drop in (0.0, 0.015, 0.02, 0.03) for paired in (False, True)]
    pilots.append((healthy[:3], healthy[:3], False))  # fewer than k: recommend refuses it
    run = dict(seed=3, threads=1)
    cache = module.simulate_verdicts(pilots, small, **run)
    alone = [recommend(h, m, small, sizes=(), paired=p, **run) for h, m, p in pilots[:-1]]
    assert max(a.simulations_used for a in alone) > module.SIMULATIONS  # blocks doubled
    assert {a.verdict for a in alone} >= {"killed", "not killed"}

    def no_simulation(*args, **kwargs):
        raise AssertionError("a block was simulated again")

    monkeypatch.setattr(module, "_analyse_together", no_simulation)
    for (h, m, p), own in zip(pilots[:-1], alone, strict=True):
        read = recommend(h, m, small, sizes=(), paired=p, cache=cache, **run)
        assert (read.verdict, read.p_killed, read.message) == (own.verdict, own.p_killed,
                                                               own.message)
        np.testing.assert_array_equal(read.reference_means, own.reference_means)
