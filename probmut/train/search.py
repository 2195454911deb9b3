"""DeepCrime's killable-magnitude search: bisection over a mutation's magnitude for the
smallest magnitude at which the mutant is killed (``probmut train --search``).

The search assumes that killing is monotone in the magnitude between the two ends
given, ``--search OPERATOR:WEAK,STRONG`` (usually ``LOW,HIGH``; give ``HIGH,LOW`` for
an operator that gets stronger as its value falls, e.g. ``change_epochs``). It decides
the strong end first: if it is not killed, no magnitude in the range is. Then the weak
end: if it is killed, it is the answer. Otherwise it halves the bracket
``ceil(log2(|STRONG - WEAK| / resolution))`` times, each time training the middle
magnitude and keeping the half where the decision changes; so it trains at most
``ceil(log2(range / resolution)) + 2`` magnitudes, fewer when some were trained
before (a population already complete in the output directory is reused, not
retrained). It reports the final bracket: the largest magnitude found not killed and
the smallest found killed, at most ``resolution`` apart.

The decision at each magnitude compares the mutant population with the healthy one:
by default the bagged posterior's ratio (:func:`probmut.bagging.bagged_posteriors`,
killed iff ratio > 1); with ``decision="deepcrime"`` DeepCrime's single test on the
whole populations. Unlike DeepCrime's own search, which compares the middle
magnitude with the previous lower bound's population, every magnitude is compared
with the healthy population. A magnitude all of whose instances failed (crashed,
timed out or diverged) counts as killed: the mutation is observable.

Examples
--------
The bisection on its own, with a known threshold at 37 (no training):

>>> steps = bisect(0, 100, 5, lambda value: (value >= 37, ""), integer=False)
>>> [(s.value, s.killed) for s in steps]
[(100, True), (0, False), (50.0, True), (25.0, False), (37.5, True), (31.25, False), (34.38, False)]
>>> bracket(steps)
(34.38, 37.5)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from probmut.errors import ProbmutError
from probmut.results import Result
from probmut.seeds import DEFAULT_SEED


@dataclass(frozen=True)
class Step:
    """One decided magnitude: its value, the decision and the evidence behind it."""

    value: float
    killed: bool
    evidence: str = ""
    trained: bool = False  # this search trained it (False: found already trained)


def max_trained(low: float, high: float, resolution: float) -> int:
    """The most magnitudes a search trains: ``ceil(log2(range / resolution)) + 2``.

    >>> max_trained(0, 100, 5), max_trained(0, 100, 100)
    (7, 2)
    """
    span = abs(high - low)
    return (math.ceil(math.log2(span / resolution)) if span > resolution else 0) + 2


def _decimals(resolution: float) -> int:
    return max(0, math.ceil(-math.log10(resolution))) + 2


def bisect(weak: float, strong: float, resolution: float, decide, integer: bool) -> list[Step]:
    """Decide ``strong``, then ``weak``, then bisect (see the module notes).

    ``decide(value)`` returns ``(killed, evidence)`` or ``(killed, evidence, trained)``.
    Middle values are rounded to two decimals more than ``resolution`` has (to integers
    for integer-valued operators).
    """
    def step(value):
        killed, evidence, *trained = decide(value)
        return Step(value, bool(killed), evidence, bool(trained and trained[0]))

    steps = [step(strong)]
    if not steps[-1].killed:
        return steps
    steps.append(step(weak))
    if steps[-1].killed:
        return steps
    for _ in range(max_trained(weak, strong, resolution) - 2):
        middle = (weak + strong) / 2
        middle = round(middle) if integer else round(middle, _decimals(resolution))
        if middle in (weak, strong):
            break
        steps.append(step(middle))
        if steps[-1].killed:
            strong = middle
        else:
            weak = middle
    return steps


def bracket(steps) -> tuple[float | None, float | None]:
    """``(largest found not killed, smallest found killed)`` in the search's direction;
    None where the search found none."""
    if not steps:
        return None, None
    strong, weak = steps[0].value, steps[min(1, len(steps) - 1)].value
    sign = 1 if strong >= weak else -1
    killed = [s.value for s in steps if s.killed]
    alive = [s.value for s in steps if not s.killed]
    return (max(alive, key=lambda v: sign * v) if alive else None,
            min(killed, key=lambda v: sign * v) if killed else None)


def magnitude_text(value: float, integer: bool) -> str:
    """A magnitude as the operator parses it and the population file is named.

    >>> magnitude_text(12.5, False), magnitude_text(100.0, False), magnitude_text(3, True)
    ('12.5', '100', '3')
    """
    if integer:
        return str(int(value))
    return f"{value:.10f}".rstrip("0").rstrip(".")


def parse_search(text: str):
    """``OPERATOR:WEAK,STRONG`` -> ``(operator, weak, strong, integer)``; the operator
    must take one number as its magnitude."""
    from probmut.train.operators import OPERATORS, magnitudes, unknown_operator

    name, _, ends = text.partition(":")
    if name not in OPERATORS:
        raise ProbmutError(f"{text!r}: {unknown_operator(name)}", option="search")
    try:
        weak, strong = (magnitudes.number(v, "an end", -math.inf) for v in ends.split(","))
    except ValueError:
        raise ProbmutError(f"{text!r}: give the range as OPERATOR:LOW,HIGH (two numbers)",
                           option="search") from None
    if weak == strong:
        raise ProbmutError(f"{text!r}: the two ends are equal", option="search")
    operator = OPERATORS[name]
    # a Keras name or a layer: nothing lies between two of them (not a range to narrow)
    kind = operator.keras_kind or ""
    takes = (f"a Keras {'loss' if kind == 'losses' else kind.removesuffix('s')} name" if kind else
             "a layer" if operator.parse is magnitudes.layer_only else None)
    if takes is not None:
        raise ProbmutError(f"{text!r}: {name} takes {takes}, not a number; the search bisects "
                           "an operator whose magnitude is one number (give each one with "
                           "--mutation)", option="search")
    try:  # integer-valued operators refuse a fractional magnitude
        operator.parse("1.5", None)
        integer = False
    except ValueError as error:
        integer = "integer" in str(error)
    for value in (weak, strong):
        try:
            operator.parse(magnitude_text(value, integer and value == int(value)), None)
        except ValueError as error:
            raise ProbmutError(f"{name}:{magnitude_text(value, False)}: {error}; the search "
                               "needs an operator whose magnitude is one number",
                               option="search") from None
    return name, weak, strong, integer


@dataclass(frozen=True)
class SearchResult(Result):
    """A finished search: every decided magnitude, in order, and the final bracket."""

    index = "value"
    operator: str
    weak: float
    strong: float
    resolution: float
    steps: tuple[Step, ...]
    decision: str
    integer: bool = False

    @property
    def bracket(self):
        return bracket(self.steps)

    @property
    def trained(self) -> int:
        return sum(s.trained for s in self.steps)

    def to_dict(self) -> dict:
        not_killed, killed = self.bracket
        return {"operator": self.operator, "low": self.weak, "high": self.strong,
                "resolution": self.resolution, "decision": self.decision,
                "steps": [asdict(s) for s in self.steps],
                "bracket": {"not_killed": not_killed, "killed": killed},
                "killable_magnitude": killed,
                "trained_magnitudes": self.trained,
                "max_trained_magnitudes": max_trained(self.weak, self.strong, self.resolution)}

    def rows(self) -> list[dict]:
        return [asdict(s) for s in self.steps]

    def __str__(self) -> str:
        text = lambda v: magnitude_text(v, self.integer)  # noqa: E731
        lines = [f"killable-magnitude search: {self.operator} from {text(self.weak)} to "
                 f"{text(self.strong)}, resolution {self.resolution:g} ({self.decision})",
                 f"{'magnitude':>12}  {'trained':<8} {'decision':<11} evidence"]
        for s in self.steps:
            lines.append(f"{text(s.value):>12}  {'yes' if s.trained else 'reused':<8} "
                         f"{'KILLED' if s.killed else 'not killed':<11} {s.evidence}")
        not_killed, killed = self.bracket
        if killed is None:
            lines.append(f"not killed at {text(self.strong)}, the strong end: no magnitude in "
                         "the range is killable (if killing grows with the magnitude)")
        elif not_killed is None:
            lines.append(f"killed at {text(self.weak)}, the weak end: the whole range is "
                         "killable")
        else:
            lines.append(f"bracket: not killed at {text(not_killed)}, killed at {text(killed)} "
                         f"(width {abs(killed - not_killed):g}); smallest killed magnitude "
                         f"found: {text(killed)}")
        lines.append(f"trained {self.trained} magnitude{'' if self.trained == 1 else 's'} "
                     "(at most "
                     f"{max_trained(self.weak, self.strong, self.resolution)} = ceil(log2(range /"
                     " resolution)) + 2)")
        return "\n".join(lines)


def _decision(out, name: str, paired: bool, decision: str, instances: int, seed: int):
    """Killed? and the evidence, from the population files in ``out`` (``seed``: the
    bagged posterior's)."""
    from probmut.io.populations import read_population
    from probmut.io.records import AllFailedError

    healthy = read_population(out / "healthy.csv", name="healthy")
    try:
        mutant = read_population(out / f"{name}.csv", name=name)
    except AllFailedError:
        return True, "every instance failed (see probmut symptoms)"
    if decision == "deepcrime":
        from probmut.killtest import kill_test
        from probmut.population import pair

        if paired:
            healthy, mutant = pair(healthy, mutant)
        test = kill_test(healthy, mutant)
        return test.killed, f"p {test.p_value:.3g}, d {test.effect_size:.3f}"
    from probmut.bagging import PosteriorSettings, bagged_posteriors

    sample = search_sample(instances)
    study = bagged_posteriors(healthy, [mutant], PosteriorSettings(sample=sample),
                              paired=paired, seed=seed)
    post = study.populations[1]
    return post.killed, (f"ratio {post.ratio:.4g}, mean {post.mean:.3f} "
                         f"[{post.ci_low:.3f}, {post.ci_high:.3f}]")


def search_sample(instances: int) -> int:
    """Instances per side in each bagged-posterior trial: half the population, at most
    20 (k close to the population size makes every trial alike)."""
    return max(2, min(20, instances // 2))


def describe_decision(decision: str, instances: int, seed: int = DEFAULT_SEED) -> str:
    """How a search decides that a magnitude is killed, in words.

    >>> describe_decision("posterior", 20, seed=7)
    'bagged posterior, k = 10 of 20 instances, killed iff ratio > 1, seed 7'
    """
    if decision == "deepcrime":
        return "DeepCrime's test on the whole populations, kill iff p < 0.05 and |d| >= 0.5"
    return (f"bagged posterior, k = {search_sample(instances)} of {instances} instances, "
            f"killed iff ratio > 1, seed {seed}")


def run_search(job, mode) -> Result:
    """Search per ``mode`` (:class:`~probmut.train.options.Search`, checked: its
    ``magnitudes`` ``OPERATOR:WEAK,STRONG``, ``resolution``, ``decision`` and
    ``instances``), training each needed magnitude's population (and the healthy one)
    into ``job`` (:class:`~probmut.train.run.Job`), the decisions seeded by its settings'
    seed. Each magnitude is bound and checked as ``--mutation`` is, by ``job.check``
    (which also says which of the populations cannot be stacked).

    Returns
    -------
    RunReport
        The :class:`~probmut.train.run.RunReport` of the search's training, the search's
        :class:`SearchResult` as its ``search``.

    Raises
    ------
    ProbmutError
        A magnitude of the range that cannot train (e.g. one that leaves no training
        data), with the advice to narrow the range; as :meth:`probmut.train.run.Job.train`.
    """
    import dataclasses
    import warnings

    from probmut.io.records import FailedInstanceWarning
    from probmut.train.operators import parse_mutations
    from probmut.train.run import RunReport

    operator, weak, strong, integer = parse_search(mode.magnitudes)
    resolution = abs(strong - weak) / 16 if mode.resolution is None else mode.resolution
    if integer and resolution < 1:
        resolution = 1.0
    instances, seed = mode.instances, job.settings.seed
    runs = []

    def decide(value):
        magnitude = magnitude_text(value, integer)
        try:
            mutations, unstackable = job.check(parse_mutations(f"{operator}:{magnitude}"))
        except ProbmutError as error:  # e.g. a magnitude that leaves no training data
            raise ProbmutError(f"{error} (magnitude {magnitude} of the search "
                               f"{mode.magnitudes}: narrow its range)", option="search") from None
        mutation = mutations[0]
        report = dataclasses.replace(job, unstackable=unstackable).train([mutation], instances)
        runs.append(report)
        trained = report.trained_per_population.get(mutation.population, 0) > 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FailedInstanceWarning)  # symptoms report them
            killed, evidence = _decision(job.out, mutation.population,
                                         mutation.operator.paired, mode.decision, instances,
                                         seed)
        return killed, evidence, trained

    steps = bisect(weak, strong, resolution, decide, integer)
    result = SearchResult(operator, weak, strong, resolution, tuple(steps),
                          describe_decision(mode.decision, instances, seed), integer)
    return RunReport.of_runs(runs, out=job.out, name=job.name, search=result)
