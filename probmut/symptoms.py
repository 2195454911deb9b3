"""What a mutation does to training: each mutant population's symptom, after Jia et
al. ("How Do Injected Bugs Affect Deep Learning?", SANER 2022).

Jia et al. trained each buggy version once (ten-fold cross-validation), classified it
Normal, Crash or Hang, and called its accuracy change significant by a two-tailed
t-test at 0.05. probmut trains populations, so it extends their classification; what
is probmut's own is marked so. Each instance has a symptom record
(:mod:`probmut.io.records`): ``ok``, ``crashed``, ``timed out`` or ``diverged``. A
mutant population gets one symptom, from :data:`SYMPTOMS`, by this rule:

1. If more than half of its instances failed (crashed, timed out or diverged), its
   symptom is the most frequent failure: ``crash`` (crashed), ``hang`` (timed out) or
   ``nan`` (diverged; probmut's), ties going to the earlier of these (the majority
   rule over instances is probmut's).
2. Otherwise its usable instances (the ones that did not fail) are compared with the
   healthy population's usable instances:

   - ``no observable difference`` (probmut's): exactly the same accuracies (model-level,
     paired: instance by instance; source-level: as sorted lists), i.e. the mutation
     changed nothing the test set can see;
   - ``significant accuracy change``: Jia et al.'s test rejects equal accuracy: a
     two-tailed t-test at :data:`ALPHA` (0.05), Student's (:func:`student_t_test`) for
     source-level mutants, the paired t-test for model-level ones, whose instance i
     derives from healthy instance i;
   - ``insignificant accuracy change``: otherwise.

   The symptom's text gives the failed instances beside it (``insignificant accuracy
   change (10 of 20 failed)``): the comparison saw only the others.

Student's rather than Welch's test: under the null hypothesis, a mutation that changes
nothing, both populations have one distribution, variance included, and Student's test
then has exactly the stated level for normal accuracies at every size (Welch's is
conservative at 3 instances per side); its statistic is DeepCrime's (pooled variance),
read with the t tail instead of DeepCrime's normal one, which exceeds the stated level at
small sizes (by how much: docs/validation.md).

The accuracy change also reports the kill criterion's effect size (its symbol in the
registry :data:`probmut.killtest.CRITERIA`: Cohen's d, d_z, A12 or r_rb) and whether the
full criterion (p and effect) kills. The training
time change (probmut's) has its own test: the ratio of median training seconds (mutant
over healthy) and the two-sided Mann-Whitney U test on the seconds (normal
approximation with tie correction), for source-level mutants only: a model-level mutant
is derived from a trained healthy instance in a fraction of a second, not trained.

Examples
--------
>>> from probmut.io.records import InstanceRecord as R
>>> healthy = [R(i, 0.90 + 0.01 * (i % 3), seconds=10.0 + i % 4) for i in range(12)]
>>> crashing = [R(i, math.nan, status="crashed", error="ValueError: bad") for i in range(12)]
>>> classify(healthy, crashing, "ctc").summary
'crash (12 of 12 failed)'
>>> slower = [R(i, 0.70 + 0.01 * (i % 3), seconds=30.0 + i % 4) for i in range(12)]
>>> result = classify(healthy, slower, "slow")
>>> result.symptom, round(result.time_change.ratio, 3)   # median 31.5 s against 11.5 s
('significant accuracy change', 2.739)
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

from probmut.errors import ProbmutError
from probmut.io.records import InstanceRecord
from probmut.killtest import KillCriterion, kill_test
from probmut.killtest.kernels import mann_whitney_test, paired_t_test, pooled_z_test
from probmut.results import Result, listing, plain

#: The symptoms in the order the rule tries them.
SYMPTOMS = ("crash", "hang", "nan", "no observable difference",
            "insignificant accuracy change", "significant accuracy change")

#: The symptom a majority of instances with each failure status gives.
FAILURE_SYMPTOMS = {"crashed": "crash", "timed out": "hang", "diverged": "nan"}

#: Jia et al.'s level for a significant accuracy change (two-tailed t-test).
ALPHA = 0.05


def student_t_test(x, y) -> float:
    """Two-sided p-value of Student's two-sample t-test (pooled variance, ``k_x + k_y -
    2`` degrees of freedom).

    The statistic is DeepCrime's z (:func:`probmut.killtest.kernels.pooled_z_test`, which also
    decides constant samples relative to their scale: equal constants give p = 1,
    different ones p = 0); only the tail differs, Student's t instead of the normal.

    >>> from scipy import stats
    >>> x, y = [0.90, 0.91, 0.92], [0.89, 0.92, 0.88]
    >>> bool(np.isclose(student_t_test(x, y), stats.ttest_ind(x, y).pvalue, rtol=1e-12))
    True
    >>> student_t_test([0.7] * 3, [0.7] * 4), student_t_test([0.7] * 3, [0.8] * 4)
    (1.0, 0.0)
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    _, d, _ = pooled_z_test(x, y)
    if math.isinf(d):
        return 0.0
    t = d / math.sqrt(1 / x.size + 1 / y.size)
    return float(2 * special.stdtr(x.size + y.size - 2, -abs(t)))


def accuracy_p_value(x, y, paired: bool) -> float:
    """The p-value of Jia et al.'s test on healthy accuracies ``x`` and mutant ones
    ``y``: Student's t-test, or the paired t-test when ``x[i], y[i]`` are a pair."""
    if paired:
        return float(paired_t_test(np.asarray(x, np.float64), np.asarray(y, np.float64))[0])
    return student_t_test(x, y)


@dataclass(frozen=True)
class AccuracyChange:
    """Jia et al.'s test on the usable instances' accuracies (``p_value``, ``test``,
    ``significant``) and the kill criterion's effect size and decision."""

    p_value: float
    test: str
    significant: bool
    effect_size: float
    killed: bool
    mean_healthy: float
    mean_mutant: float
    n_healthy: int
    n_mutant: int


@dataclass(frozen=True)
class TimeChange:
    """Median training seconds, their ratio (mutant / healthy), the Mann-Whitney p."""

    ratio: float
    p_value: float
    median_healthy: float
    median_mutant: float


@dataclass(frozen=True)
class PopulationSymptoms:
    """One population's symptom with the counts and tests behind it."""

    name: str
    symptom: str
    instances: int
    crashed: int
    timed_out: int
    diverged: int
    constant: int
    accuracy_change: AccuracyChange | None
    time_change: TimeChange | None
    errors: tuple[str, ...] = ()  # the distinct messages of the crashed instances

    @property
    def failed(self) -> int:
        return self.crashed + self.timed_out + self.diverged

    @property
    def summary(self) -> str:
        """The symptom with the failed instances beside it, when any failed."""
        if not self.failed or self.symptom == "baseline":
            return self.symptom
        return f"{self.symptom} ({self.failed} of {self.instances} failed)"

    def to_dict(self) -> dict:
        row = asdict(self)
        row["errors"] = list(self.errors)
        return row | {"failed": self.failed, "summary": self.summary}

    @property
    def shares(self) -> dict[str, float]:
        """Share of instances per status: ok (of which constant), crashed, timed out,
        diverged; for the stacked bars of the figure."""
        n = self.instances
        ok = n - self.crashed - self.timed_out - self.diverged
        return {"ok": ok / n, "crashed": self.crashed / n, "timed out": self.timed_out / n,
                "diverged": self.diverged / n}


def _counts(records) -> Counter:
    return Counter(r.status for r in records)


def _usable(records) -> list[InstanceRecord]:
    return [r for r in records if not r.failed and math.isfinite(r.accuracy)]


def _accuracy_change(healthy, mutant, paired: bool, criterion: KillCriterion):
    """The accuracy change, and whether the accuracies are exactly the healthy ones; or
    None when either side has fewer than two usable instances (pairs)."""
    if paired:
        by_id_h = {r.instance: r.accuracy for r in healthy}
        by_id_m = {r.instance: r.accuracy for r in mutant}
        common = sorted(by_id_h.keys() & by_id_m.keys())
        x = np.array([by_id_h[i] for i in common])
        y = np.array([by_id_m[i] for i in common])
    else:
        x = np.array([r.accuracy for r in healthy])
        y = np.array([r.accuracy for r in mutant])
    if x.size < 2 or y.size < 2:
        return None, False
    same = np.array_equal(x, y) if paired else np.array_equal(np.sort(x), np.sort(y))
    p = accuracy_p_value(x, y, paired)
    kill = kill_test(x, y, criterion)
    change = AccuracyChange(
        p_value=p, test="paired t-test" if paired else "Student's t-test",
        significant=p < ALPHA, effect_size=kill.effect_size, killed=kill.killed,
        mean_healthy=kill.mean_healthy, mean_mutant=kill.mean_mutant,
        n_healthy=kill.n_healthy, n_mutant=kill.n_mutant)
    return change, bool(same)


def _time_change(healthy, mutant):
    x = np.array([r.seconds for r in healthy if math.isfinite(r.seconds)])
    y = np.array([r.seconds for r in mutant if math.isfinite(r.seconds)])
    if x.size < 2 or y.size < 2:
        return None
    p, _, _ = mann_whitney_test(x, y)
    median_h, median_m = float(np.median(x)), float(np.median(y))
    return TimeChange(ratio=median_m / median_h if median_h > 0 else math.inf,
                      p_value=float(p), median_healthy=median_h, median_mutant=median_m)


def classify(healthy, mutant, name: str, criterion: KillCriterion | None = None,
             paired: bool = False) -> PopulationSymptoms:
    """The symptom of a mutant population (records) against the healthy one (see the
    module notes for the rule).

    Returns
    -------
    PopulationSymptoms

    Raises
    ------
    ProbmutError
        When the mutant has no records, the healthy population has fewer than two usable
        instances, or the mutant has fewer than two and no failure explains it.
    """
    criterion = criterion or KillCriterion()
    healthy, mutant = list(healthy), list(mutant)
    if not mutant:
        raise ProbmutError(f"{name}: no instances")
    usable_healthy = _usable(healthy)
    if len(usable_healthy) < 2:
        raise ProbmutError(f"the healthy population has {len(usable_healthy)} usable instances "
                           f"of {len(healthy)}; the symptoms need at least 2")
    counts = _counts(mutant)
    failures = {status: counts[status] for status in FAILURE_SYMPTOMS}
    usable = _usable(mutant)
    change, same = _accuracy_change(usable_healthy, usable, paired, criterion)
    if sum(failures.values()) > len(mutant) / 2 or (change is None and any(failures.values())):
        most = max(failures.values())
        symptom = FAILURE_SYMPTOMS[next(s for s in FAILURE_SYMPTOMS if failures[s] == most)]
    elif change is None:
        raise ProbmutError(f"{name}: {len(usable)} usable instances; the symptoms need at "
                           "least 2")
    elif same:
        symptom = "no observable difference"
    elif change.significant:
        symptom = "significant accuracy change"
    else:
        symptom = "insignificant accuracy change"
    errors = tuple(dict.fromkeys(r.error for r in mutant if r.status == "crashed" and r.error))
    return PopulationSymptoms(
        name=name, symptom=symptom, instances=len(mutant), crashed=failures["crashed"],
        timed_out=failures["timed out"], diverged=failures["diverged"],
        constant=sum(bool(r.constant) for r in mutant), accuracy_change=change,
        time_change=None if paired else _time_change(usable_healthy, usable), errors=errors)


def _baseline(healthy, name: str = "healthy") -> PopulationSymptoms:
    counts = _counts(healthy)
    return PopulationSymptoms(
        name=name, symptom="baseline", instances=len(healthy), crashed=counts["crashed"],
        timed_out=counts["timed out"], diverged=counts["diverged"],
        constant=sum(bool(r.constant) for r in healthy), accuracy_change=None,
        time_change=None,
        errors=tuple(dict.fromkeys(r.error for r in healthy if r.status == "crashed")))


def _format(value, spec: str) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else format(value, spec)


@dataclass(frozen=True)
class SymptomStudy(Result):
    """Symptoms of every mutant population of a run, the healthy population first."""

    healthy: PopulationSymptoms
    populations: tuple[PopulationSymptoms, ...]
    criterion: KillCriterion
    label: str = ""

    def to_dict(self) -> dict:
        return plain(listing([p.to_dict() for p in self.populations],
                             healthy=self.healthy.to_dict(), criterion=self.criterion.describe()))

    def rows(self) -> list[dict]:
        rows = []
        for p in (self.healthy, *self.populations):
            row = {k: v for k, v in p.to_dict().items()
                   if k not in ("accuracy_change", "time_change", "errors")}
            change, time_change = p.accuracy_change, p.time_change
            row |= {f"accuracy_{k}": v for k, v in (asdict(change) if change else {}).items()}
            row |= {f"time_{k}": v for k, v in (asdict(time_change) if time_change else {}).items()}
            rows.append(row)
        return rows

    def __str__(self) -> str:
        effect = self.criterion.spec.symbol  # d, d_z, A12, r_rb: the registry's
        everyone = (self.healthy, *self.populations)
        width = max(len("population"), *(len(p.name) for p in everyone)) + 1
        header = (f"{'population':<{width}}{'n':>4}{'crash':>6}{'hang':>5}{'nan':>5}"
                  f"{'const':>6}{'acc h':>8}{'acc m':>8}{'p-value':>11}{effect:>9}"
                  f"{'time x':>8}{'time p':>9}  symptom")
        lines = [f"Symptoms{' of ' + self.label if self.label else ''} (after Jia et al.: "
                 f"a significant accuracy change has p < {ALPHA} in a two-tailed t-test, "
                 f"Student's, paired for model-level mutants; {effect}: the kill criterion's, "
                 f"kill iff {self.criterion.describe()})", header]
        for p in everyone:
            a, t = p.accuracy_change, p.time_change
            lines.append(
                f"{p.name:<{width}}{p.instances:>4}{p.crashed:>6}{p.timed_out:>5}"
                f"{p.diverged:>5}{p.constant:>6}{_format(a and a.mean_healthy, '.4f'):>8}"
                f"{_format(a and a.mean_mutant, '.4f'):>8}{_format(a and a.p_value, '.4g'):>11}"
                f"{_format(a and a.effect_size, '.3f'):>9}{_format(t and t.ratio, '.2f'):>8}"
                f"{_format(t and t.p_value, '.3g'):>9}  {p.summary}")
        for p in self.populations:
            for error in p.errors[:2]:
                lines.append(f"  {p.name} crashed with: {error}")
        if any(p.time_change is None and p.accuracy_change for p in self.populations):
            lines.append("time x, time p: blank for model-level mutants (derived, not trained) "
                         "and where training times are unknown (a stack's members share its "
                         "time: compare training times on runs with --stack 1)")
        return "\n".join(lines)


def symptom_study(healthy, mutants: dict, criterion: KillCriterion | None = None,
                  paired=(), label: str = "") -> SymptomStudy:
    """Classify each mutant population (``name -> records``) against ``healthy``
    (records); ``paired`` names the model-level ones.

    Returns
    -------
    SymptomStudy
        The healthy population's symptoms (``healthy``) and each mutant's, in the order
        given (``populations``).

    Raises
    ------
    ProbmutError
        As :func:`classify`, for the first population it cannot classify.
    """
    criterion = criterion or KillCriterion()
    populations = tuple(classify(healthy, records, name, criterion, name in set(paired))
                        for name, records in mutants.items())
    return SymptomStudy(_baseline(healthy), populations, criterion, label)


def study_from_manifest(manifest, model: str | None = None,
                        criterion: KillCriterion | None = None,
                        strict: bool = False) -> SymptomStudy:
    """The symptoms of every mutation and magnitude of one model of a manifest (by
    default its only model, or the first). ``strict``: a population short of its run's
    target is an error, not a warning.

    Returns
    -------
    SymptomStudy

    Raises
    ------
    ProbmutError
        When the model has no mutant populations, when a population's records cannot be
        read, or, with ``strict``, when one is short of its run's target.
    """
    from probmut.io.populations import read_instances

    model = model or manifest.model_names()[0]
    healthy = read_instances(manifest.healthy(model), strict, manifest)
    mutants, paired = {}, []
    for mutation in manifest.mutations(model):
        for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
            name = f"{mutation.name}_{magnitude}"
            mutants[name] = read_instances(path, strict, manifest)
            if mutation.paired:
                paired.append(name)
    if not mutants:
        raise ProbmutError(f"{manifest.path}: model {model!r} has no mutant populations")
    return symptom_study(healthy, mutants, criterion, paired, label=model)
