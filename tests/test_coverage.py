"""Coverage without TensorFlow: the 1-D silhouette and clustering against scikit-learn,
IDC and the baselines against direct per-input loops, killing on subsets, and the
correlation (a planted relation is found)."""

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

from probmut.coverage import (
    Correlation,
    CoverageStudy,
    LayerValues,
    coverage_vs_killing,
    instance_coverage,
    kendall_with_interval,
    kill_probability,
    nearest,
    quantize,
    silhouette_1d,
)
from probmut.engine import kill_counts
from probmut.errors import ProbmutError
from probmut.inputs import Outcomes


@pytest.mark.parametrize("k", [2, 3, 5])
def test_silhouette_1d_equals_scikit_learn(k):
    rng = np.random.default_rng(k)
    x = np.concatenate([rng.normal(3 * c, 1, 50 + 20 * c) for c in range(k)])
    labels = KMeans(k, n_init=2, random_state=0).fit_predict(x[:, None])
    assert silhouette_1d(x, labels) == pytest.approx(silhouette_score(x[:, None], labels),
                                                     abs=1e-12)
    labels[0] = k  # a singleton cluster scores 0, as in scikit-learn
    assert silhouette_1d(x, labels) == pytest.approx(silhouette_score(x[:, None], labels),
                                                     abs=1e-12)


def test_quantize_keeps_the_k_with_the_best_silhouette_and_ignores_zeros():
    rng = np.random.default_rng(1)
    x = np.concatenate([np.zeros(500), rng.normal(1, 0.05, 200), rng.normal(2, 0.05, 200),
                        rng.normal(4, 0.05, 200)])
    centres = quantize(x, max_clusters=4)
    assert centres.size == 3 and np.allclose(centres, [1, 2, 4], atol=0.02)
    active = x[x != 0][:, None]
    scores = {k: silhouette_score(active, KMeans(k, n_init=3, random_state=0).fit_predict(active))
              for k in (2, 3, 4)}
    assert max(scores, key=scores.get) == 3
    assert quantize(np.r_[np.zeros(100), np.ones(9)]).tolist() == [0.0]  # fewer than 10 active


def test_nearest_centre_equals_brute_force():
    rng = np.random.default_rng(2)
    centres = np.sort(rng.random(4))
    values = rng.random(1000)
    brute = np.argmin(np.abs(values[:, None] - centres[None, :]), axis=1)
    assert np.array_equal(nearest(values, centres), brute)


def _instance(seed=3, n_train=400, n_test=120, units=(6, 5), m=4, sections=10):
    rng = np.random.default_rng(seed)
    hidden_train, hidden_test = [], []
    for u in units:
        for store, n in ((hidden_train, n_train), (hidden_test, n_test)):
            values = np.maximum(rng.normal(0.5, 1, (n, u)), 0)
            store.append(LayerValues(values, values.min(1) - rng.random(n) * 0.1,
                                     values.max(1) + rng.random(n) * 0.1))
    relevance = rng.normal(0, 1, (n_train, units[-1]))
    inst = instance_coverage("0", relevance, hidden_train[-1].values, hidden_test[-1].values,
                             hidden_train, hidden_test, m, sections=sections, top_k=2)
    return inst, relevance, hidden_train, hidden_test


def test_idc_counts_the_distinct_cluster_combinations():
    inst, relevance, train, test = _instance()
    chosen = np.argsort(-relevance.sum(0), kind="stable")[:4]
    assert inst.importance[:4].tolist() == chosen.tolist()
    for m in (1, 2, 4):
        combos = {tuple(int(np.argmin(np.abs(c - test[-1].values[i, j])))
                        for j, c in zip(chosen[:m], inst.centres[:m], strict=True))
                  for i in range(test[-1].values.shape[0])}
        total = np.prod([len(c) for c in inst.centres[:m]])
        assert inst.idc(m) == pytest.approx(len(combos) / total)
    rows = np.arange(30)
    assert inst.idc(4, rows) <= inst.idc(4, np.arange(60)) <= inst.idc(4)  # grows with the set
    with pytest.raises(ProbmutError, match="between 1 and 4"):
        inst.idc(5)


def test_baselines_equal_per_input_loops():
    inst, _, train, test = _instance()
    covered, sections, top = set(), set(), set()
    offset = 0
    for tr, te in zip(train, test, strict=True):
        low, high = tr.values.min(0), tr.values.max(0)
        for i in range(te.values.shape[0]):
            scaled = (te.values[i] - te.low[i]) / (te.high[i] - te.low[i])
            top |= {offset + j for j in np.argsort(-te.values[i], kind="stable")[:2]}
            for j, v in enumerate(te.values[i]):
                if scaled[j] > 0.75:
                    covered.add(offset + j)
                if low[j] < high[j] and low[j] <= v <= high[j]:
                    sections.add((offset + j, min(int((v - low[j]) / (high[j] - low[j]) * 10), 9)))
        offset += te.values.shape[1]
    assert inst.nc() == pytest.approx(len(covered) / offset)
    assert inst.kmnc() == pytest.approx(len(sections) / (10 * offset))
    assert inst.tknc() == pytest.approx(len(top) / offset)


def _outcomes(rng, labels, n, broken_class=None, rate=0.95):
    correct = rng.random((n, labels.size)) < rate
    if broken_class is not None:
        correct[:, labels == broken_class] = rng.random((n, (labels == broken_class).sum())) < 0.3
    return Outcomes.from_matrix(correct, labels)


def test_kill_probability_is_the_engines_mean_kill_rate_on_the_subset():
    rng = np.random.default_rng(4)
    labels = np.arange(200) % 10
    healthy, mutant = _outcomes(rng, labels, 20), _outcomes(rng, labels, 20, broken_class=3)
    subsets = np.array([rng.choice(200, 40, replace=False) for _ in range(3)])
    rates = kill_probability(healthy, [(mutant, False)], subsets, seed=5)
    h = np.stack([healthy.correct[:, s].mean(1) for s in subsets])
    m = np.stack([mutant.correct[:, s].mean(1) for s in subsets])
    direct = kill_counts(h, m, bootstraps=20, trials=50, sample=10, seed=5).reshape(3, -1)
    direct = direct.mean(axis=1) / 50
    assert np.allclose(rates, direct)
    same = kill_probability(healthy, [(healthy, True)], subsets, seed=5)
    assert same.max() < rates.min()  # the healthy population against itself rarely "kills"


def test_kendall_interval_agrees_with_scipy_and_is_nan_when_constant():
    rng = np.random.default_rng(6)
    x, y = rng.random(80), rng.random(80)
    tau, p, low, high = kendall_with_interval(x, y, seed=1)
    reference = kendalltau(x, y)
    assert (tau, p) == pytest.approx((reference.statistic, reference.pvalue))
    assert low < tau < high
    assert np.isnan(kendall_with_interval(x, np.ones(80))[0])


def test_a_planted_relation_between_coverage_and_killing_is_found():
    # Test inputs of class 3 fall in a cluster combination of their own, and the mutant
    # fails class 3: subsets with more class-3 inputs cover more and kill more.
    rng = np.random.default_rng(7)
    n_test, labels = 300, np.arange(300) % 10
    values_test = np.where((labels == 3)[:, None], 5.0, 1.0) + rng.normal(0, 0.1, (n_test, 2))
    values_train = np.r_[np.full((100, 2), 1.0), np.full((100, 2), 5.0)] + rng.normal(0, 0.1,
                                                                                       (200, 2))
    layer_train = [LayerValues(values_train, values_train.min(1), values_train.max(1))]
    layer_test = [LayerValues(values_test, values_test.min(1), values_test.max(1))]
    inst = instance_coverage("0", np.ones((200, 2)), values_train, values_test, layer_train,
                             layer_test, 2)
    assert inst.idc(2) == pytest.approx(2 / 4)
    healthy, mutant = _outcomes(rng, labels, 20), _outcomes(rng, labels, 20, broken_class=3)
    correlation = coverage_vs_killing([inst], 2, healthy, [(mutant, False)], subsets=100,
                                      subset_size=6, seed=8)
    assert correlation.ci_low > 0 and correlation.p_value < 0.01
    assert "cover more also kill more" in correlation.answer()

    study = CoverageStudy("dense (layer 4, 2 neurons)", (2,), (inst,), n_test,
                          {"epsilon": 0.01, "max_clusters": 4, "nc_threshold": 0.75,
                           "sections": 1000, "top_k": 3, "seed": 0}, correlation)
    document = study.to_dict()
    assert {"layer", "neurons", "idc", "nc", "kmnc", "tknc", "correlation"} <= set(document)
    assert set(document["correlation"]) >= {"tau", "p_value", "ci_low", "ci_high", "subsets",
                                            "subset_size"}
    assert document["idc"]["per_instance"] == [0.5]
    with pytest.raises(ProbmutError, match="same test set"):
        coverage_vs_killing([inst], 2, _outcomes(rng, labels[:100], 5), [(mutant, False)])


@pytest.mark.parametrize("tau, low, high, said", [
    (0.108, 0.019, 0.202, "also kill more here, weakly (tau 0.108"),
    (0.05, 0.01, 0.09, "would help kill these mutants only very weakly"),
    (0.62, 0.5, 0.7, "more here, strongly (tau 0.620"),
    (-0.35, -0.5, -0.2, "kill less here, moderately"),
    (0.07, -0.04, 0.17, "no evidence that IDC predicts")])
def test_the_answer_says_how_strong_a_relation_is(tau, low, high, said):
    """A significant but small tau is not a reason to optimise coverage: the answer says
    how strong the relation is (docs/coverage.md's tau 0.108 read 'raising IDC would help')."""
    correlation = Correlation(tau, 0.02, low, high, 200, 50, 64, "score", np.zeros(2), np.zeros(2))
    answer = correlation.answer()
    assert said in answer
    if tau == 0.62:
        assert answer.endswith("would help kill these mutants")
