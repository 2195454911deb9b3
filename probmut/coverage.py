"""Importance-driven coverage (DeepImportance) of a test set, its classic baselines, and
whether coverage predicts killing.

For each healthy instance (a trained model), on the neurons of one layer (by default the
penultimate layer, the last hidden layer with weights):

1. **Importance**: each neuron's relevance summed over the training inputs, by
   layer-wise relevance propagation with the epsilon rule
   (:mod:`probmut.train.relevance`); the ``m`` most relevant neurons are the
   important ones.
2. **Quantisation**: each important neuron's activations over the training inputs
   (a convolution channel's mean over its positions), without the zeros of an inactive
   neuron, are clustered by k-means (scikit-learn) for k = 2 to ``max_clusters``; the k
   with the highest silhouette score wins. A neuron active on fewer than 10 training
   inputs gets one cluster, at 0.
3. **IDC**: a test input covers the combination of its important neurons' nearest
   cluster centres; IDC is the number of distinct combinations the test set covers over
   the number of all combinations (the product of the neurons' cluster counts).

The baselines (DeepImportance's RQ4) are computed on the neurons of every hidden layer
with weights: **NC** (DeepXplore; a neuron is covered when, on some input, its
activation scaled by the min and max of its layer's output for that input exceeds 0.75),
**KMNC** (DeepGauge; each neuron's training range split into k sections, default 1000;
the share of sections some test input falls in) and **TKNC** (DeepGauge; the share of
neurons that are among the top k (default 3) of their layer for some input).

**Coverage against killing** draws random test subsets of one size and computes, for
each, the mean IDC over the healthy instances and the killing of a run's mutants on
that subset, from the per-input outcomes (no retraining): the mean kill probability
(the fraction of k-vs-k kill tests on the subset's accuracies that kill, averaged over
the mutants; see :func:`kill_probability`) or DeepMutation's mutation score. Their
rank correlation is Kendall's tau (tau-b, SciPy) with its p-value and a percentile
bootstrap interval over the subsets.

References
----------
Gerasimou, Eniser, Sen, Cakan. Importance-driven deep learning system testing. ICSE 2020.

Pei, Cao, Yang, Jana. DeepXplore: automated whitebox testing of deep learning systems.
SOSP 2017.

Ma et al. DeepGauge: multi-granularity testing criteria for deep learning systems. ASE 2018.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from probmut import seeds
from probmut.errors import ProbmutError
from probmut.results import Result, plain

MIN_ACTIVE = 10  # DeepImportance: fewer active training inputs than this, one cluster
KILLING = ("probability", "score")


# ---------------------------------------------------------------- clustering

def silhouette_1d(values, labels) -> float:
    """Mean silhouette score of a clustering of one-dimensional values, exactly, in
    O(k n log n) (sorted values and prefix sums instead of all pairwise distances).

    A point alone in its cluster scores 0, as in scikit-learn.

    >>> from sklearn.metrics import silhouette_score
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 1, 300), rng.normal(5, 1, 200)]
    >>> labels = (x > 2.5).astype(int) + (x > 6)
    >>> bool(np.isclose(silhouette_1d(x, labels), silhouette_score(x[:, None], labels)))
    True
    """
    x = np.asarray(values, dtype=np.float64)
    labels = np.asarray(labels)
    clusters = np.unique(labels)
    mean_distance = np.empty((clusters.size, x.size))
    sizes = np.empty(clusters.size)
    for row, cluster in enumerate(clusters):
        members = np.sort(x[labels == cluster])
        prefix = np.concatenate([[0.0], np.cumsum(members)])
        below = np.searchsorted(members, x, side="right")
        total = (x * below - prefix[below]) + (prefix[-1] - prefix[below]
                                              - x * (members.size - below))
        sizes[row] = members.size
        mean_distance[row] = total
    own = np.searchsorted(clusters, labels)
    own_size = sizes[own]
    a = mean_distance[own, np.arange(x.size)] / np.maximum(own_size - 1, 1)
    others = mean_distance / sizes[:, None]
    others[own, np.arange(x.size)] = np.inf
    b = others.min(axis=0)
    s = np.where(own_size > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(s.mean())


@functools.cache
def _threadpools():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def quantize(values, max_clusters: int = 4, seed: int = 0) -> np.ndarray:
    """Sorted cluster centres of one neuron's training activations (see the module
    notes): zeros left out, k from 2 to ``max_clusters`` chosen by silhouette."""
    from sklearn.cluster import KMeans

    active = np.asarray(values, dtype=np.float64)
    active = active[active != 0]
    distinct = np.unique(active).size
    if active.size < MIN_ACTIVE or distinct < 2:
        return np.zeros(1)
    best, best_score = None, -np.inf
    for k in range(2, min(max_clusters, distinct) + 1):
        with _threadpools().limit(limits=1):  # threads cost more than they save on 1-D data
            model = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(active[:, None])
        score = silhouette_1d(active, model.labels_)
        if score > best_score:
            best, best_score = model.cluster_centers_.ravel(), score
    return np.sort(best)


def nearest(values, centres) -> np.ndarray:
    """Index of the nearest of the sorted ``centres`` for each value (ties: the lower).

    >>> nearest([0.0, 1.1, 1.6, 9.0], np.array([0.5, 1.5, 3.0])).tolist()
    [0, 1, 1, 2]
    """
    centres = np.asarray(centres)
    if centres.size == 1:
        return np.zeros(len(values), dtype=np.int64)
    midpoints = (centres[1:] + centres[:-1]) / 2
    return np.searchsorted(midpoints, np.asarray(values), side="left")


# ---------------------------------------------------------------- one instance

@dataclass(frozen=True, eq=False)
class LayerValues:
    """One layer's neuron values for a set of inputs: ``values`` (inputs x neurons) and,
    per input, the min and max over the layer's whole output (for NC's scaling)."""

    values: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Sanity:
    """DeepImportance's RQ1 on one instance: the mean drop of the output for the predicted
    class when the m important neurons are silenced, against ``draws`` random sets of m
    neurons of the same layer."""

    neurons: int
    important_drop: float
    random_drop: float  # mean over the draws
    random_at_least: float  # share of random draws whose drop reaches the important one
    important_changed: float  # share of test inputs whose predicted class changes
    random_changed: float
    draws: int


@dataclass(frozen=True, eq=False)
class InstanceCoverage:
    """Everything one instance's coverage of any subset of the test inputs needs."""

    name: str
    importance: np.ndarray  # neuron indices, most relevant first
    relevance: np.ndarray  # total relevance per neuron (training inputs)
    centres: tuple  # sorted cluster centres of the important neurons, in importance order
    codes: np.ndarray  # (test inputs, max m): cluster index per important neuron
    nc_covered: np.ndarray = field(repr=False)  # (test inputs, hidden neurons) bool
    kmnc_section: np.ndarray = field(repr=False)  # (test inputs, hidden neurons), -1 outside
    tknc_top: np.ndarray = field(repr=False)  # (test inputs, hidden neurons) bool
    sections: int = 1000
    sanity: Sanity | None = None

    def _rows(self, rows):
        return slice(None) if rows is None else rows

    def combinations(self, m: int) -> int:
        return int(np.prod([len(c) for c in self.centres[:m]], dtype=np.float64))

    def idc(self, m: int, rows=None) -> float:
        """Share of the ``m`` important neurons' cluster combinations covered."""
        if not 1 <= m <= self.codes.shape[1]:
            raise ProbmutError(f"m = {m}: between 1 and {self.codes.shape[1]} neurons")
        covered = np.unique(self.codes[self._rows(rows), :m], axis=0).shape[0]
        return covered / self.combinations(m)

    def nc(self, rows=None) -> float:
        return float(self.nc_covered[self._rows(rows)].any(axis=0).mean())

    def kmnc(self, rows=None) -> float:
        sections = self.kmnc_section[self._rows(rows)]
        neurons = np.broadcast_to(np.arange(sections.shape[1]), sections.shape)
        inside = sections >= 0
        keys = neurons[inside].astype(np.int64) * self.sections + sections[inside]
        return np.unique(keys).size / (self.sections * sections.shape[1])

    def tknc(self, rows=None) -> float:
        return float(self.tknc_top[self._rows(rows)].any(axis=0).mean())


def _scaled(layer: LayerValues) -> np.ndarray:
    span = layer.high - layer.low
    return np.where(span[:, None] > 0, (layer.values - layer.low[:, None])
                    / np.where(span > 0, span, 1.0)[:, None], 0.0)


def instance_coverage(name: str, relevance, layer_train, layer_test, hidden_train,
                      hidden_test, neurons: int, *, max_clusters: int = 4,
                      nc_threshold: float = 0.75, sections: int = 1000, top_k: int = 3,
                      seed: int = 0) -> InstanceCoverage:
    """Build one instance's coverage from its arrays.

    ``relevance``: (training inputs, neurons) of the chosen layer; ``layer_train``,
    ``layer_test``: that layer's neuron values; ``hidden_train``, ``hidden_test``:
    :class:`LayerValues` of every hidden layer with weights, for the baselines;
    ``neurons``: the largest m that will be asked for.

    Returns
    -------
    InstanceCoverage

    Raises
    ------
    ProbmutError
        When more important neurons are asked for than the chosen layer has.
    """
    total = np.asarray(relevance, dtype=np.float64).sum(axis=0)
    if not 1 <= neurons <= total.size:
        raise ProbmutError(f"{neurons} important neurons asked for; the layer has "
                           f"{total.size}", option="neurons")
    importance = np.argsort(-total, kind="stable")
    chosen = importance[:neurons]
    centres = tuple(quantize(layer_train[:, j], max_clusters, seed) for j in chosen)
    codes = np.column_stack([nearest(layer_test[:, j], c) for j, c in zip(chosen, centres,
                                                                          strict=True)])
    nc = np.concatenate([_scaled(layer) > nc_threshold for layer in hidden_test], axis=1)
    kmnc, top = [], []
    for train, test in zip(hidden_train, hidden_test, strict=True):
        low, high = train.values.min(axis=0), train.values.max(axis=0)
        span = np.where(high > low, high - low, 1.0)
        section = np.floor((test.values - low) / span * sections).astype(np.int64)
        section = np.where(test.values == high, sections - 1, section)
        outside = (test.values < low) | (test.values > high) | (high <= low)
        kmnc.append(np.where(outside, -1, np.minimum(section, sections - 1)))
        k = min(top_k, test.values.shape[1])
        ranks = np.argsort(-test.values, axis=1, kind="stable")[:, :k]
        flags = np.zeros(test.values.shape, dtype=bool)
        np.put_along_axis(flags, ranks, True, axis=1)
        top.append(flags)
    return InstanceCoverage(name, importance, total, centres, codes.astype(np.int16), nc,
                            np.concatenate(kmnc, axis=1), np.concatenate(top, axis=1), sections)


# ---------------------------------------------------------------- killing on subsets

def _sample_size(instances: int) -> int:
    return max(2, min(20, instances // 2))


def kill_probability(healthy, mutants, subsets, *, criterion=None, bootstraps: int = 20,
                     trials: int = 50, seed: int = 0) -> np.ndarray:
    """Mean kill probability of each test subset: for each mutant, the share of
    ``bootstraps x trials`` k-vs-k kill tests (k = half the smaller population, at most
    20) on the instances' accuracies *on that subset* that kill, averaged over the
    mutants. ``healthy`` is the healthy population's :class:`~probmut.inputs.Outcomes`,
    ``mutants`` holds ``(Outcomes, paired)`` per mutant population; ``subsets`` holds
    input indices, one row per subset."""
    from probmut.engine import kill_counts

    subsets = np.asarray(subsets)
    rates = []
    for mutant, paired in mutants:
        h, m = healthy.correct, mutant.correct
        if paired:  # mutant i against healthy i
            common = np.intersect1d(healthy.ids, mutant.ids)
            h = h[[list(healthy.ids).index(i) for i in common]]
            m = m[[list(mutant.ids).index(i) for i in common]]
        h_acc = np.stack([h[:, s].mean(axis=1) for s in subsets])
        m_acc = np.stack([m[:, s].mean(axis=1) for s in subsets])
        sample = _sample_size(min(h.shape[0], m.shape[0]))
        counts = kill_counts(h_acc, m_acc, bootstraps=bootstraps, trials=trials, sample=sample,
                             paired=paired, criterion=criterion, seed=seed)
        rates.append(counts.reshape(len(subsets), -1).mean(axis=1) / trials)
    return np.mean(rates, axis=0)


def deepmutation_scores(healthy, mutants, subsets) -> np.ndarray:
    """DeepMutation's mutation score of each test subset (:mod:`probmut.inputs`)."""
    from probmut.inputs import analyse_inputs

    outcomes = [m for m, _ in mutants]
    return np.array([analyse_inputs(healthy, outcomes, inputs=s, show=0).deepmutation_score
                     for s in subsets])


@dataclass(frozen=True, eq=False)
class Correlation:
    """Kendall's tau between coverage and killing over random test subsets."""

    tau: float
    p_value: float
    ci_low: float
    ci_high: float
    subsets: int
    subset_size: int
    neurons: int
    killing: str
    coverage_values: np.ndarray = field(repr=False)
    killing_values: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        return {"tau": self.tau, "p_value": self.p_value, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "subsets": self.subsets,
                "subset_size": self.subset_size, "neurons": self.neurons,
                "killing": self.killing,
                "coverage_range": [float(self.coverage_values.min()),
                                   float(self.coverage_values.max())],
                "killing_range": [float(self.killing_values.min()),
                                  float(self.killing_values.max())]}

    def answer(self) -> str:
        """The plain answer, whichever way it goes."""
        what = {"probability": "kill probability", "score": "mutation score"}[self.killing]
        interval = f"tau {self.tau:.3f}, 95% interval [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        if math.isnan(self.tau):
            return f"no answer: coverage or {what} is constant over the subsets"
        strength = _strength(self.tau)
        if self.ci_low > 0:
            return (f"test subsets that cover more also kill more here, {strength} "
                    f"({interval}, p {self.p_value:.3g}); raising IDC would help kill these "
                    f"mutants{'' if strength == 'strongly' else ' only ' + strength}")
        if self.ci_high < 0:
            return (f"test subsets that cover more kill less here, {strength} ({interval}, p "
                    f"{self.p_value:.3g}); optimising IDC would not help kill these mutants")
        return (f"no evidence that IDC predicts the {what} here ({interval}, p "
                f"{self.p_value:.3g}): optimising coverage is not shown to help kill these "
                "mutants")


def _strength(tau: float) -> str:
    """How strongly Kendall's tau relates two rankings, in words (|tau| under 0.1 very
    weakly, under 0.3 weakly, under 0.5 moderately, else strongly).

    >>> _strength(0.108), _strength(-0.6)
    ('weakly', 'strongly')
    """
    size = abs(tau)
    return ("very weakly" if size < 0.1 else "weakly" if size < 0.3
            else "moderately" if size < 0.5 else "strongly")


def kendall_with_interval(coverage, killing, bootstraps: int = 1000, seed: int = 0):
    """Kendall's tau-b and its p-value (SciPy), and a percentile bootstrap 95% interval
    from resampling the (coverage, killing) pairs.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.random(100)
    >>> tau, p, low, high = kendall_with_interval(x, x + rng.normal(0, 0.3, 100))
    >>> bool(0 < low < tau < high), p < 1e-6
    (True, True)
    """
    from scipy.stats import kendalltau

    x, y = np.asarray(coverage, float), np.asarray(killing, float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, math.nan, math.nan, math.nan
    result = kendalltau(x, y)
    rng = seeds.generator(seed, "coverage bootstrap")
    taus = []
    for _ in range(bootstraps):
        rows = rng.integers(0, x.size, x.size)
        if np.ptp(x[rows]) > 0 and np.ptp(y[rows]) > 0:
            taus.append(kendalltau(x[rows], y[rows]).statistic)
    low, high = np.percentile(taus, [2.5, 97.5])
    return float(result.statistic), float(result.pvalue), float(low), float(high)


def coverage_vs_killing(instances, neurons: int, healthy, mutants, *, subsets: int = 200,
                        subset_size: int | None = None, killing: str = "probability",
                        criterion=None, seed: int = 0) -> Correlation:
    """Correlate the mean IDC (``neurons`` important neurons, over ``instances``) of
    random test subsets with their killing (see the module notes).

    ``healthy``: the run's healthy :class:`~probmut.inputs.Outcomes`; ``mutants``:
    ``(Outcomes, paired)`` of each mutant population; all on the same test inputs as the
    coverage.

    Returns
    -------
    Correlation

    Raises
    ------
    ProbmutError
        For an unknown killing measure, outcomes and coverage on different test sets, no
        mutant with outcomes, a subset size outside 2 to (inputs - 1), or fewer than 10
        subsets.
    """
    if killing not in KILLING:
        raise ProbmutError(f"unknown killing measure {killing!r}; one of {', '.join(KILLING)}")
    n_inputs = instances[0].codes.shape[0]
    if healthy.n_inputs != n_inputs or any(m.n_inputs != n_inputs for m, _ in mutants):
        raise ProbmutError(f"the outcome files describe {healthy.n_inputs} test inputs, the "
                           f"coverage {n_inputs}; they must be the same test set")
    if not mutants:
        raise ProbmutError("the run has no mutant populations with outcomes to kill")
    size = subset_size or max(10, n_inputs // 10)
    if not 2 <= size < n_inputs:
        raise ProbmutError(f"a test subset must hold between 2 and {n_inputs - 1} inputs, got "
                           f"{size}", option="subset_size")
    if subsets < 10:
        raise ProbmutError(f"at least 10 test subsets are needed, got {subsets}",
                           option="subsets")
    rng = seeds.generator(seed, "coverage subsets")
    chosen = np.array([rng.choice(n_inputs, size, replace=False) for _ in range(subsets)])
    cover = np.array([np.mean([i.idc(neurons, s) for i in instances]) for s in chosen])
    if killing == "probability":
        kills = kill_probability(healthy, mutants, chosen, criterion=criterion, seed=seed)
    else:
        kills = deepmutation_scores(healthy, mutants, chosen)
    tau, p, low, high = kendall_with_interval(cover, kills, seed=seed)
    return Correlation(tau, p, low, high, subsets, size, neurons, killing, cover, kills)


# ---------------------------------------------------------------- the study

def _summary(values) -> dict:
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()), "sd": float(values.std(ddof=1)) if values.size > 1
            else 0.0, "min": float(values.min()), "max": float(values.max()),
            "per_instance": values.tolist()}


@dataclass(frozen=True, eq=False)
class CoverageStudy(Result):
    """IDC per m and the baselines, per healthy instance, and optionally the correlation
    of coverage with killing."""

    layer: str
    neurons: tuple[int, ...]
    instances: tuple[InstanceCoverage, ...]
    test_inputs: int
    settings: dict
    correlation: Correlation | None = None

    index = "instance"

    def idc(self, m: int) -> np.ndarray:
        return np.array([i.idc(m) for i in self.instances])

    def to_dict(self) -> dict:
        primary = self.neurons[0]
        document = {
            "layer": self.layer, "neurons": primary, "test_inputs": self.test_inputs,
            "idc": _summary(self.idc(primary)),
            "idc_by_neurons": {str(m): _summary(self.idc(m)) for m in self.neurons},
            "nc": _summary([i.nc() for i in self.instances]),
            "kmnc": _summary([i.kmnc() for i in self.instances]),
            "tknc": _summary([i.tknc() for i in self.instances]),
            "instances": [i.name for i in self.instances],
            "important_neurons": {i.name: i.importance[:max(self.neurons)].tolist()
                                  for i in self.instances},
            "clusters": {i.name: [len(c) for c in i.centres] for i in self.instances},
            "settings": self.settings}
        checks = [i.sanity for i in self.instances if i.sanity is not None]
        if checks:
            document["sanity"] = {
                "neurons": checks[0].neurons, "draws": checks[0].draws,
                "important_drop": _summary([c.important_drop for c in checks]),
                "random_drop": _summary([c.random_drop for c in checks]),
                "important_beats_random_mean": sum(c.important_drop > c.random_drop
                                                   for c in checks),
                "per_instance": [dataclasses.asdict(c) for c in checks]}
        if self.correlation is not None:
            document["correlation"] = self.correlation.to_dict()
            document["answer"] = self.correlation.answer()
        return plain(document)

    def rows(self) -> list[dict]:
        return [{"instance": i.name, **{f"idc_{m}": i.idc(m) for m in self.neurons},
                 "nc": i.nc(), "kmnc": i.kmnc(), "tknc": i.tknc()} for i in self.instances]

    def __str__(self) -> str:
        s = self.settings
        lines = [f"Importance-driven coverage of {self.test_inputs} test inputs, layer "
                 f"{self.layer}, {len(self.instances)} healthy instances (LRP epsilon "
                 f"{s['epsilon']:g}; k-means, k = 2..{s['max_clusters']} by silhouette)",
                 f"{'criterion':<14}{'mean':>9}{'sd':>9}{'min':>9}{'max':>9}  notes"]
        for m in self.neurons:
            v = self.idc(m)
            combos = [i.combinations(m) for i in self.instances]
            sd = v.std(ddof=1) if v.size > 1 else 0
            lines.append(f"{'IDC m=' + str(m):<14}{v.mean():>9.4f}{sd:>9.4f}"
                         f"{v.min():>9.4f}{v.max():>9.4f}  {min(combos)}-{max(combos)} "
                         "combinations")
        for label, values, note in (
                ("NC", [i.nc() for i in self.instances], f"threshold {s['nc_threshold']:g}"),
                ("KMNC", [i.kmnc() for i in self.instances], f"k = {s['sections']} sections"),
                ("TKNC", [i.tknc() for i in self.instances], f"top {s['top_k']} per layer")):
            v = np.array(values)
            lines.append(f"{label:<14}{v.mean():>9.4f}{v.std(ddof=1) if v.size > 1 else 0:>9.4f}"
                         f"{v.min():>9.4f}{v.max():>9.4f}  {note}, all hidden layers")
        checks = [i.sanity for i in self.instances if i.sanity is not None]
        if checks:
            important = np.mean([c.important_drop for c in checks])
            random = np.mean([c.random_drop for c in checks])
            beaten = sum(c.important_drop > c.random_drop for c in checks)
            lines.append(
                f"RQ1 check (m={checks[0].neurons}): silencing the important neurons lowers the "
                f"output for the predicted class by {important:.4f} on average, as many random "
                f"neurons of the layer by {random:.4f} ({checks[0].draws} draws each); the "
                f"important ones do more in {beaten} of {len(checks)} instances (predicted class "
                f"changed: {np.mean([c.important_changed for c in checks]):.3f} against "
                f"{np.mean([c.random_changed for c in checks]):.3f})")
        c = self.correlation
        if c is not None:
            what = {"probability": "mean kill probability", "score": "mutation score"}[c.killing]
            lines.append(f"coverage vs killing: {c.subsets} random subsets of {c.subset_size} "
                         f"inputs, IDC (m={c.neurons}) against {what}: Kendall's tau "
                         f"{c.tau:.3f} (p {c.p_value:.3g}), 95% bootstrap interval "
                         f"[{c.ci_low:.3f}, {c.ci_high:.3f}]")
            lines.append(f"answer: {c.answer()}")
        return "\n".join(lines)
