"""Per-input killing: which test inputs tell a mutant population from the healthy one.

Works on per-input outcome matrices (instances x test inputs, True where the instance
classified the input correctly), as the trainer writes them (``{stem}.outcomes.npz``,
read by :func:`probmut.io.outcomes.load_outcomes`). Two analyses:

**DeepMutation's mutation score** (Ma et al. 2018), lifted to populations: input ``j``
kills a mutant population when more than ``threshold`` (default one half: a majority)
of the healthy instances classify it correctly and more than ``threshold`` of the
mutant instances classify it wrongly. A mutant's *killed classes* are the true labels of
its killing inputs; the score of a set of mutants M on a test set is
``sum over m of |killed classes(m)| / (|M| |C|)`` with C the classes of the task (the
labels of all inputs in the files, so that the score too can only grow with the set).

**Statistical killing** in the manner of Kim et al. (2025): for each input, Fisher's
exact test on the 2x2 table (healthy, mutant) x (correct, incorrect) instance counts.
A mutant is killed by a test set when some input of the set is significant at the
per-input threshold. With ``correction="bonferroni"`` (default) that threshold is
``alpha / pool`` where ``pool`` is the number of *candidate* inputs (all inputs in the
outcome files), fixed before any test set is chosen; with ``"none"`` it is ``alpha``.
Either way the threshold does not depend on the test set, so adding inputs can never
un-kill a mutant (monotonicity). A correction over the chosen test set itself
(Bonferroni or Holm with m = its size, Benjamini-Hochberg) would lower the bar for
every input as the set grows and break that property; probmut does not offer one.

References
----------
Ma et al. DeepMutation: mutation testing of deep learning systems. ISSRE 2018.

Kim, Humbatova, Jahangirova, Yoo, Tonella. New formulation of DNN statistical mutation
killing for ensuring monotonicity: a technical report. arXiv:2507.11199, 2025.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from probmut.errors import ProbmutError
from probmut.results import Result

CORRECTIONS = ("bonferroni", "none")
ALTERNATIVES = ("greater", "two-sided")


@dataclass(frozen=True)
class Outcomes:
    """Per-input outcomes of one population: ``correct[i, j]`` for instance i, input j.

    >>> o = Outcomes.from_matrix([[True, False], [True, True]], labels=[3, 7], name="h")
    >>> o.correct_fraction().tolist()
    [1.0, 0.5]
    """

    correct: np.ndarray
    labels: np.ndarray
    ids: np.ndarray
    name: str = "population"

    @classmethod
    def from_matrix(cls, correct, labels, ids=None, name: str = "population") -> Outcomes:
        correct = np.asarray(correct, dtype=bool)
        if correct.ndim != 2 or correct.shape[0] < 1 or correct.shape[1] < 1:
            raise ProbmutError(f"{name}: outcomes must be a non-empty (instances x inputs) "
                               f"matrix, got shape {correct.shape}")
        labels = np.asarray(labels, dtype=np.int64)
        if labels.shape != (correct.shape[1],):
            raise ProbmutError(f"{name}: {labels.size} labels for {correct.shape[1]} inputs")
        ids = np.arange(correct.shape[0]) if ids is None else np.asarray(ids, dtype=np.int64)
        return cls(correct, labels, ids, name)

    @classmethod
    def load(cls, path, name: str | None = None, strict: bool = False) -> Outcomes:
        """Read a trainer's ``{stem}.outcomes.npz``; the name defaults to the stem.
        ``strict``: a population short of its run's target is an error, not a warning."""
        from pathlib import Path

        from probmut.io.outcomes import load_outcomes

        ids, correct, labels = load_outcomes(path, strict=strict)
        stem = Path(path).name.removesuffix(".npz").removesuffix(".outcomes")
        return cls.from_matrix(correct, labels, ids, name or stem)

    @property
    def n_instances(self) -> int:
        return self.correct.shape[0]

    @property
    def n_inputs(self) -> int:
        return self.correct.shape[1]

    def correct_fraction(self) -> np.ndarray:
        return self.correct.mean(axis=0)


def fisher_exact_inputs(healthy_correct, n_healthy: int, mutant_correct, n_mutant: int,
                        alternative: str = "greater") -> np.ndarray:
    """Fisher's exact test for every input at once.

    Input j's table is ``[[h_j, n_healthy - h_j], [m_j, n_mutant - m_j]]`` (rows healthy,
    mutant; columns correct, incorrect). ``alternative="greater"``: the healthy instances
    classify the input correctly more often (the mutant is worse on it); ``"two-sided"``:
    they differ either way. Identical tables are computed once, so 10,000 inputs cost
    a few distinct hypergeometric evaluations.

    Examples
    --------
    Compare with SciPy, one input at a time:

    >>> from scipy.stats import fisher_exact
    >>> p = fisher_exact_inputs([20, 12, 5], 20, [9, 12, 0], 20, "two-sided")
    >>> ref = [fisher_exact([[h, 20 - h], [m, 20 - m]]).pvalue
    ...        for h, m in [(20, 9), (12, 12), (5, 0)]]
    >>> bool(np.allclose(p, ref, rtol=1e-12))
    True
    """
    if alternative not in ALTERNATIVES:
        raise ProbmutError(f"unknown alternative {alternative!r}; choose one of "
                           f"{', '.join(ALTERNATIVES)}")
    h = np.asarray(healthy_correct, dtype=np.int64)
    m = np.asarray(mutant_correct, dtype=np.int64)
    if h.shape != m.shape or h.ndim != 1:
        raise ProbmutError("one correct count per input on both sides is needed")
    if np.any((h < 0) | (h > n_healthy) | (m < 0) | (m > n_mutant)):
        raise ProbmutError("correct counts must lie between 0 and the number of instances")
    tables, inverse = np.unique(np.stack([h, m], axis=1), axis=0, return_inverse=True)
    a, c = tables[:, 0], tables[:, 1]
    total = n_healthy + n_mutant
    correct = a + c
    if alternative == "greater":
        # SciPy's form: P(healthy incorrect <= observed) given the margins.
        p = _hypergeom().cdf(n_healthy - a, total, n_healthy, total - correct)
    else:
        p = _two_sided(a, correct, n_healthy, total)
    # A margin of zero (all correct or all wrong on both sides): no evidence, p = 1.
    p = np.where((correct == 0) | (correct == total), 1.0, np.minimum(p, 1.0))
    return p[inverse.ravel()]


def _hypergeom():
    # Imported on use: scipy.stats would add half a second to every command's start-up.
    from scipy.stats import hypergeom

    return hypergeom


def _two_sided(a, correct, n_healthy, total):
    # Sum of the probabilities of all tables no more likely than the observed one, with
    # SciPy's relative tolerance of 1e-14 for ties.
    support = np.arange(n_healthy + 1)[None, :]
    low = np.maximum(0, correct - (total - n_healthy))[:, None]
    high = np.minimum(correct, n_healthy)[:, None]
    pmf = _hypergeom().pmf(support, total, n_healthy, correct[:, None])
    pmf = np.where((support >= low) & (support <= high), pmf, 0.0)
    observed = pmf[np.arange(a.size), a][:, None]
    return np.where(pmf <= observed * (1 + 1e-14), pmf, 0.0).sum(axis=1)


@dataclass(frozen=True)
class MutantInputs:
    """Per-input kill analysis of one mutant population against the healthy one.

    Arrays run over all inputs of the files (``p_values[j]``: Fisher's p of input j);
    the killers and ``smallest_p`` over the chosen test set only.
    """

    name: str
    n_healthy: int
    n_mutant: int
    labels: np.ndarray = field(repr=False)
    healthy_correct: np.ndarray = field(repr=False)
    mutant_correct: np.ndarray = field(repr=False)
    p_values: np.ndarray = field(repr=False)
    smallest_p: float
    alpha_per_input: float
    majority_killers: np.ndarray = field(repr=False)
    killed_classes: tuple[int, ...]
    statistical_killers: np.ndarray = field(repr=False)

    @property
    def statistically_killed(self) -> bool:
        return self.statistical_killers.size > 0

    def to_dict(self) -> dict:
        return {
            "name": self.name, "n_healthy": self.n_healthy, "n_mutant": self.n_mutant,
            "deepmutation": {"killing_inputs": self.majority_killers.tolist(),
                             "killed_classes": list(self.killed_classes)},
            "statistical": {"killed": self.statistically_killed,
                            "alpha_per_input": self.alpha_per_input,
                            "killing_inputs": self.statistical_killers.tolist(),
                            "p_values": self.p_values[self.statistical_killers].tolist(),
                            "smallest_p": self.smallest_p},
        }


@dataclass(frozen=True)
class InputsStudy(Result):
    """Both per-input analyses for a set of mutants on one test set (see module doc)."""

    mutants: tuple[MutantInputs, ...]
    inputs: np.ndarray = field(repr=False)
    pool: int
    classes: tuple[int, ...]
    alpha: float
    correction: str
    alternative: str
    threshold: float
    show: int = 10

    def smallest_attainable_p(self) -> float:
        """The smallest Fisher p any input can reach with these instance counts (all
        healthy instances right, all mutant ones wrong); above the per-input alpha, the
        statistical criterion cannot kill whatever the test set."""
        return min(float(fisher_exact_inputs([m.n_healthy], m.n_healthy, [0], m.n_mutant,
                                             self.alternative)[0]) for m in self.mutants)

    def rows(self) -> list[dict]:
        """One row per mutant: its killing inputs counted, killed classes, smallest p."""
        return [{"name": m.name, "n_healthy": m.n_healthy, "n_mutant": m.n_mutant,
                 "deepmutation_inputs": int(m.majority_killers.size),
                 "killed_classes": list(m.killed_classes),
                 "statistical_inputs": int(m.statistical_killers.size),
                 "smallest_p": m.smallest_p, "statistically_killed": m.statistically_killed}
                for m in self.mutants]

    @property
    def deepmutation_score(self) -> float:
        """DeepMutation's score: killed classes over (mutants x classes)."""
        killed = sum(len(m.killed_classes) for m in self.mutants)
        return killed / (len(self.mutants) * len(self.classes))

    @property
    def statistical_score(self) -> float:
        """Fraction of the mutants killed by the statistical criterion."""
        return sum(m.statistically_killed for m in self.mutants) / len(self.mutants)

    def to_dict(self) -> dict:
        return {"test_inputs": int(self.inputs.size), "candidate_pool": self.pool,
                "classes": list(self.classes), "alpha": self.alpha,
                "correction": self.correction, "alternative": self.alternative,
                "majority_threshold": self.threshold,
                "smallest_attainable_p": self.smallest_attainable_p(),
                "deepmutation_score": self.deepmutation_score,
                "statistical_score": self.statistical_score,
                "mutants": [m.to_dict() for m in self.mutants]}


    def __str__(self) -> str:
        per_input = self.mutants[0].alpha_per_input
        lines = [
            f"Per-input killing on {self.inputs.size} test inputs of a pool of {self.pool} "
            f"({len(self.classes)} classes)",
            f"DeepMutation: an input kills when > {self.threshold:g} of the healthy instances "
            f"get it right and > {self.threshold:g} of the mutant instances get it wrong",
            f"statistical: Fisher's exact test ({self.alternative}) per input, killed iff some "
            f"p <= {per_input:.3g} (alpha {self.alpha:g}, "
            + ("Bonferroni over the pool)" if self.correction == "bonferroni" else
               "no correction)"),
        ]
        attainable = self.smallest_attainable_p()
        if attainable > per_input:
            lines.append(f"warning: with these instance counts no input can reach p <= "
                         f"{per_input:.3g} (smallest possible p {attainable:.3g}); train more "
                         "instances for the statistical criterion to kill anything")
        lines += [
            "",
            f"{'mutant':<28}{'n_h':>5}{'n_m':>5}{'DM inputs':>10}{'classes':>9}"
            f"{'Fisher inputs':>15}{'min p':>11}  statistical",
        ]
        for m in self.mutants:
            lines.append(
                f"{m.name:<28}{m.n_healthy:>5}{m.n_mutant:>5}{m.majority_killers.size:>10}"
                f"{len(m.killed_classes):>9}{m.statistical_killers.size:>15}"
                f"{m.smallest_p:>11.3g}  {'KILLED' if m.statistically_killed else 'not killed'}")
        lines += ["", f"DeepMutation mutation score: {self.deepmutation_score:.4f}   "
                      f"statistical mutation score: {self.statistical_score:.4f}"]
        for m in self.mutants:
            lines.append("")
            lines.append(f"{m.name}: killed classes {list(m.killed_classes) or 'none'}")
            lines.append(_killer_table(m, self.show))
        return "\n".join(lines)


def _killer_table(m: MutantInputs, show: int) -> str:
    killers = np.union1d(m.majority_killers, m.statistical_killers)
    if killers.size == 0:
        return "  no input kills it"
    order = killers[np.argsort(m.p_values[killers], kind="stable")]
    rows = ["  input  label  healthy correct  mutant correct   Fisher p  kills by"]
    majority = set(m.majority_killers.tolist())
    statistical = set(m.statistical_killers.tolist())
    for j in order[:show]:
        how = "+".join(n for n, s in (("DM", majority), ("Fisher", statistical)) if j in s)
        rows.append(f"  {j:>5}  {m.labels[j]:>5}  {m.healthy_correct[j]:>15.3f}"
                    f"  {m.mutant_correct[j]:>14.3f}  {m.p_values[j]:>9.3g}  {how}")
    if order.size > show:
        rows.append(f"  ... {order.size - show} more (all in the JSON document)")
    return "\n".join(rows)


def analyse_inputs(healthy: Outcomes, mutants, *, inputs=None, alpha: float = 0.05,
                   correction: str = "bonferroni", alternative: str = "greater",
                   threshold: float = 0.5, show: int = 10) -> InputsStudy:
    """DeepMutation's score and statistical per-input killing of mutants on a test set.

    Parameters
    ----------
    healthy : Outcomes
        The healthy population's :class:`Outcomes`.
    mutants : sequence of Outcomes
        Each mutant's :class:`Outcomes` (the healthy one's test inputs and labels).
    inputs : array_like of int or bool, optional
        The test set: indices (or a boolean mask) into the inputs of the files; None: all
        of them. The Bonferroni pool is always all inputs of the files.
    alpha : float, optional
        The family-wise significance threshold of the statistical criterion.
    correction : {"bonferroni", "none"}, optional
        A per-input threshold of ``alpha / pool`` (Bonferroni) or ``alpha``; both keep killing
        monotonic in the test set.
    alternative : {"greater", "two-sided"}, optional
        ``"greater"``: the mutant errs more on the input.
    threshold : float, optional
        DeepMutation's majority: an input is correct for a population when more than this
        fraction of its instances classify it correctly (wrong likewise).
    show : int, optional
        The killing inputs listed per mutant in the printed summary.

    Returns
    -------
    InputsStudy

    Raises
    ------
    ProbmutError
        For an unknown correction, alpha outside (0, 1), a threshold outside [0, 1), no
        mutant, or a mutant's outcomes on other test inputs or labels than the healthy ones.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> labels = np.arange(200) % 10
    >>> healthy = Outcomes.from_matrix(rng.random((30, 200)) < 0.95, labels, name="healthy")
    >>> broken = rng.random((30, 200)) < 0.95
    >>> broken[:, labels == 3] = rng.random((30, 20)) < 0.2     # class 3 is lost
    >>> study = analyse_inputs(healthy, [Outcomes.from_matrix(broken, labels, name="m")])
    >>> study.mutants[0].killed_classes, study.statistical_score
    ((3,), 1.0)
    """
    if correction not in CORRECTIONS:
        raise ProbmutError(f"unknown correction {correction!r}; choose one of "
                           f"{', '.join(CORRECTIONS)} (corrections over the chosen test set "
                           "would break monotonicity)")
    if not 0 < alpha < 1:
        raise ProbmutError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 <= threshold < 1:
        raise ProbmutError(f"the majority threshold must be in [0, 1), got {threshold}")
    mutants = list(mutants)
    if not mutants:
        raise ProbmutError("give at least one mutant population")
    for mutant in mutants:
        if mutant.n_inputs != healthy.n_inputs or not np.array_equal(mutant.labels,
                                                                     healthy.labels):
            raise ProbmutError(
                f"{mutant.name}: its outcomes are not on the same test inputs as "
                f"{healthy.name} ({mutant.n_inputs} vs {healthy.n_inputs} inputs, or other "
                "labels); per-input analyses need the same test set in the same order")
    pool = healthy.n_inputs
    selected = _select(inputs, pool)
    per_input = alpha / pool if correction == "bonferroni" else alpha
    classes = tuple(int(c) for c in np.unique(healthy.labels))
    healthy_fraction = healthy.correct_fraction()
    healthy_right = healthy_fraction > threshold
    results = []
    for mutant in mutants:
        mutant_fraction = mutant.correct_fraction()
        majority = selected[(healthy_right & (1 - mutant_fraction > threshold))[selected]]
        p = fisher_exact_inputs(healthy.correct.sum(axis=0), healthy.n_instances,
                                mutant.correct.sum(axis=0), mutant.n_instances, alternative)
        significant = selected[p[selected] <= per_input]
        results.append(MutantInputs(
            name=mutant.name, n_healthy=healthy.n_instances, n_mutant=mutant.n_instances,
            labels=healthy.labels, healthy_correct=healthy_fraction,
            mutant_correct=mutant_fraction, p_values=p, smallest_p=float(p[selected].min()),
            alpha_per_input=per_input, majority_killers=majority,
            killed_classes=tuple(int(c) for c in np.unique(healthy.labels[majority])),
            statistical_killers=significant))
    return InputsStudy(tuple(results), selected, pool, classes, alpha, correction,
                       alternative, threshold, show)


def _select(inputs, pool: int) -> np.ndarray:
    if inputs is None:
        return np.arange(pool)
    chosen = np.asarray(inputs)
    if chosen.dtype == bool:
        if chosen.shape != (pool,):
            raise ProbmutError(f"a boolean input mask needs {pool} entries, got {chosen.size}")
        return np.flatnonzero(chosen)
    chosen = np.unique(chosen.astype(np.int64))
    if chosen.size == 0 or chosen[0] < 0 or chosen[-1] >= pool:
        raise ProbmutError(f"test inputs must be a non-empty selection of 0..{pool - 1}")
    return chosen
