"""Train until the campaign's mutation score is settled: rounds of instances for the
populations that weigh most on the score's interval (``train --until-score WIDTH``).

The first round trains a pilot: ``PILOT`` times k instances of every mutant population
(the bagged posterior of fewer is unreliable: :mod:`probmut.bagging` warns) and
``HEALTHY_PILOT`` times k healthy ones (every mutant is compared with the same healthy
sample, so its sampling error does not average out over the campaign; docs/score.md).
After each round the mutation score of the mutants trained so far is read as ``probmut
report`` reads it (:func:`probmut.campaign.campaign_score`: the same seed, the same
numbers), with the parts of its variance (:func:`probmut.campaign.score_shares`): the
part no instance reduces, the healthy instances' part (shared by every mutant) and each
mutant's own, each scaling as 1/n. Training stops when the score's interval is at most
``width`` wide, or when no population below ``max_instances`` would narrow it.

Otherwise the next round is planned (:func:`plan_round`), ``round_size`` instances at a
time: each step goes to the population whose next ``round_size`` instances reduce the
predicted variance most per instance (a paired mutant that outgrows the healthy
population brings the healthy instances it needs, and their reduction), until the
variance predicted for the round reaches the one the target width asks for (the
interval's width scales as the square root of the variance). No population more than
doubles in a round: when the best next step belongs to one that has, the round ends, so
that the others wait for the next reading rather than take instances that reduce the
variance less. Mutants flagged equivalent or broken are left out of the score (as the
report leaves them out) and trained no more.

The output directory gains ``rounds.json`` and ``rounds.txt`` (one row per round: the
instances of each population and in all, the score with its interval and width, the
parts of its variance, the widths predicted after the next round and with every
population at the cap, and what the next round trains), rewritten after every round,
and the manifest's targets are those of each round (a population short of the cap is
short on purpose). A resumed run goes on from the last round ``rounds.json`` holds, and a
resume with other options is refused (:func:`probmut.train.rounds.recorded_rounds`);
stopped in its first round, it starts again from the records on disk: every number is
seeded, so the round's score and plan come out the same, and only what is missing is
trained.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.rounds import RoundsReport, recorded_rounds, rounds_plan, train_round
from probmut.train.work import HEALTHY

#: Instances of every mutant population before the score is first read, in multiples
#: of k, and of the healthy population (calibrated on replays of the bundled campaigns
#: with another seed than the validation's: docs/score.md).
PILOT = 2
HEALTHY_PILOT = 5
#: The stop decision's margin, in Monte-Carlo standard errors of the interval's width
#: (:func:`width_error`): a width this close to the one asked for is undecided
#: (:func:`decide`), and at the most resamples it settles the score only this far below.
MARGIN = 3.0
#: Bootstrap replicates of the resamples behind :func:`width_error`.
REPLICATES = 200
#: The resamples a stop decision pools at least and at most, in multiples of the
#: analysis' B. The width of one block and its bootstrap error err together (an
#: unusually narrow width comes with a small error), so a second block checks the first.
LEAST_BLOCKS, MOST_BLOCKS = 2, 16


@dataclass(frozen=True)
class Assessment:
    """The score of the mutants trained so far (:class:`~probmut.campaign.MutationScore`)
    and the parts of its variance (:class:`~probmut.campaign.ScoreShares`), mutant by
    mutant in the order of ``names``."""

    score: object
    shares: object
    names: tuple[str, ...]
    posteriors: tuple = ()

    @property
    def width(self) -> float:
        return self.score.ci_high - self.score.ci_low

    def parts(self) -> dict[str, float]:
        """Each part's share of the score's variance: ``fixed``, ``healthy`` and each mutant."""
        s = self.shares
        total = s.variance()
        values = {"fixed": s.fixed, HEALTHY: s.healthy} | dict(zip(self.names, s.mutants,
                                                                     strict=True))
        return {name: value / total if total > 0 else 0.0 for name, value in values.items()}

    def healthy_for(self, width: float, sizes) -> int | None:
        """The healthy instances that, with the mutants at ``sizes``, would bring the
        interval to ``width`` by the variance model; None when no number would (the
        mutants' own parts and the trials' noise alone are wider).

        >>> from probmut.campaign import MutationScore, ScoreShares
        >>> found = Assessment(MutationScore(0.5, 0.4, 0.6, 0.5, 2, 1),
        ...                    ScoreShares(1.0, 6.0, (1.0, 1.0), 100, (100, 100)), ("a", "b"))
        >>> found.healthy_for(0.15, (100, 100)), found.healthy_for(0.05, (100, 100))
        (291, None)
        """
        s = self.shares
        goal = s.variance() * (width / self.width) ** 2
        rest = s.variance(math.inf, sizes)  # what no healthy instance reduces
        if s.healthy <= 0 or goal <= rest:
            return None
        return math.ceil(s.healthy * s.healthy_size / (goal - rest) - 1e-9)

    def width_at(self, healthy_size: int, sizes) -> float:
        """The width predicted with other numbers of instances: the interval's width
        scales as the square root of the variance."""
        now = self.shares.variance()
        return self.width * (self.shares.variance(healthy_size, sizes) / now) ** 0.5 \
            if now > 0 else self.width


def assess(healthy, mutants: dict, settings, *, seed, threads: int | None = None,
           memo: dict | None = None) -> Assessment:
    """The mutation score of ``mutants`` (name -> (population, paired)) against the healthy
    population, and the parts of its variance. ``memo`` keeps the mutants' posteriors
    between calls (by their populations, settings and seed): a round recomputes only those
    whose instances changed.

    >>> import numpy as np
    >>> from probmut.bagging import PosteriorSettings
    >>> from probmut.population import Population
    >>> rng = np.random.default_rng(0)
    >>> healthy = Population.from_values(rng.normal(0.9, 0.01, 40))
    >>> found = assess(healthy, {"a": (Population.from_values(rng.normal(0.89, 0.01, 40)), False)},
    ...                PosteriorSettings(), seed=1)
    >>> round(found.score.mean, 2), found.names, found.shares.sizes
    (0.59, ('a',), (40,))
    """
    from probmut.campaign import campaign_score, mutant_posterior, score_shares
    from probmut.io.cache import cache_key

    memo = {} if memo is None else memo

    def posterior(population, paired):
        key = cache_key(healthy.values, healthy.ids, population.values, population.ids,
                        paired, settings, seed)
        if key not in memo:
            memo[key] = mutant_posterior(healthy, population, settings, paired=paired,
                                         seed=seed, threads=threads)
        return memo[key]

    names = tuple(mutants)
    posteriors = [posterior(population, paired) for population, paired in mutants.values()]
    shares = score_shares(posteriors, healthy.values,
                          [population.values for population, _ in mutants.values()],
                          [paired for _, paired in mutants.values()])
    return Assessment(campaign_score(posteriors, settings, seed), shares, names,
                      tuple(posteriors))


@dataclass(frozen=True)
class Decision:
    """Whether the score's interval is at most ``asked`` wide, read on ``resamples``
    bootstrap resamples per mutant: the interval's ``width`` there and its Monte-Carlo
    standard error ``width_se`` (:func:`decide`)."""

    asked: float
    width: float
    width_se: float
    resamples: int

    @property
    def settles(self) -> bool:
        """``width + MARGIN width_se <= asked``: a stop the Monte-Carlo error cannot undo.

        >>> Decision(0.10, 0.085, 0.004, 100).settles, Decision(0.10, 0.09, 0.004, 100).settles
        (True, False)
        """
        return self.width + MARGIN * self.width_se <= self.asked

    def to_dict(self) -> dict:
        return {"width": self.width, "width_se": self.width_se, "resamples": self.resamples}


def decide(assessment: Assessment, healthy, mutants: dict, settings, *, seed, asked: float,
           threads: int | None = None, memo: dict | None = None) -> Decision:
    """Whether the score of ``assessment`` (:func:`assess`, on ``healthy`` and ``mutants``
    with ``settings`` and ``seed``) is settled at the width ``asked``, its Monte-Carlo
    error accounted for.

    The interval's width is itself a Monte-Carlo estimate, from B resamples of each
    population (about 8% of it is its standard error on the bundled pilots), so a rule
    that stops at the first width under ``asked`` stops on the analysis seed's luck.
    While the width is within ``MARGIN`` of its standard errors (:func:`width_error`) of
    ``asked``, blocks of B more resamples (kill tests of their own, seeded from ``seed``
    and the block) are pooled with the ones read, doubling them, up to ``MOST_BLOCKS``
    times B, and never fewer than ``LEAST_BLOCKS`` times B are read; the width and its error
    are read again on the pool (the score's interval as
    :func:`~probmut.campaign.campaign_score` reads it, from joint draws over every
    resample). Decided, the score is settled when the width is under ``asked``; undecided at
    the most resamples, when it is ``MARGIN`` standard errors under it (not at all, then,
    but a little past it). The score the round records stays the one of the B resamples,
    which ``probmut report`` shows.
    """
    from probmut.bagging import summarize
    from probmut.campaign import campaign_score, mutant_posterior
    from probmut.io.cache import cache_key
    from probmut.seeds import stream

    memo = {} if memo is None else memo
    posteriors = list(assessment.posteriors)
    width, width_se = assessment.width, width_error(posteriors, settings.mass, seed)
    blocks = 1
    while blocks < LEAST_BLOCKS or (abs(width - asked) <= MARGIN * width_se
                                    and blocks < MOST_BLOCKS):
        for block in range(blocks, 2 * blocks):
            for index, (population, paired) in enumerate(mutants.values()):
                key = cache_key(healthy.values, healthy.ids, population.values,
                                population.ids, paired, settings, seed, "block", block)
                if key not in memo:
                    memo[key] = mutant_posterior(
                        healthy, population, settings, paired=paired, threads=threads,
                        seed=stream(seed, "score resamples", block)).kill_counts
                pooled = posteriors[index]
                posteriors[index] = summarize(pooled.name, np.concatenate(
                    [pooled.kill_counts, memo[key]]), settings)
        blocks *= 2
        score = campaign_score(posteriors, settings, seed)
        width = score.ci_high - score.ci_low
        width_se = width_error(posteriors, settings.mass, seed)
    return Decision(asked, width, width_se, blocks * settings.bootstraps)


def width_error(posteriors, mass: float, seed, replicates: int = REPLICATES) -> float:
    """The Monte-Carlo standard error of the width of the score's interval
    (:func:`probmut.campaign.campaign_score` with the same seed): how much the width moves
    from one analysis seed to another.

    The score's joint draws pick one of B bootstrap resamples each; the resamples (a
    resample of the instances and N kill tests on it) are independent given the
    instances, so the width is a statistic of a sample of B of them, and its error is
    that of the bootstrap over them: each replicate weighs every draw by how often its
    resample is picked among B drawn with replacement and takes the weighted interval's
    width; the error is the standard deviation of ``replicates`` widths (the noise of
    the 20,000 draws themselves, small beside it, is left out). On three lenet pilots
    its mean over 20 analysis seeds matched the standard deviation of the width over
    them (docs/score.md).

    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rng = np.random.default_rng(0)
    >>> rows = [summarize(name, rng.binomial(100, p, 100), PosteriorSettings())
    ...         for name, p in (("a", 0.3), ("b", 0.7))]
    >>> round(width_error(rows, 0.95, seed=1), 3)
    0.007
    """
    from probmut.campaign.score import DRAWS, resampled_draws, score_stream
    from probmut.seeds import generator

    picked, draws = resampled_draws(posteriors, DRAWS, score_stream(seed))
    scores = draws.mean(axis=1)
    order = np.argsort(scores, kind="stable")
    scores, picked = scores[order], picked[order]
    bootstraps = posteriors[0].kill_counts.size
    rng = generator(seed, "campaign draws", "score width error")
    tails = np.array([(1 - mass) / 2, (1 + mass) / 2])
    widths = np.empty(replicates)
    for r in range(replicates):
        times = np.bincount(rng.integers(0, bootstraps, bootstraps), minlength=bootstraps)
        weights = np.cumsum(times[picked])
        # the first draw whose cumulative weight reaches each tail (inverted_cdf)
        low, high = np.minimum(np.searchsorted(weights, tails * weights[-1]), scores.size - 1)
        widths[r] = scores[high] - scores[low]
    return float(widths.std(ddof=1))


def pilot_targets(populations, sample: int, max_instances: int) -> dict[str, int]:
    """The first round's targets: ``HEALTHY_PILOT`` k healthy instances and ``PILOT`` k
    of each mutant (at most ``max_instances``).

    >>> pilot_targets(["a"], 20, 200)
    {'healthy': 100, 'a': 40}
    """
    return ({HEALTHY: min(HEALTHY_PILOT * sample, max_instances)}
            | dict.fromkeys(populations, min(PILOT * sample, max_instances)))


def plan_round(assessment: Assessment, targets: dict[str, int], paired: dict[str, bool], *,
               width: float, round_size: int, max_instances: int) -> dict[str, int]:
    """The next round's targets (population -> instances) of the populations it trains,
    empty when no population below ``max_instances`` would narrow the interval (see the
    module notes). ``targets``: the instances of each population in the score (and of
    the healthy one) so far; ``paired``: which mutants are paired.

    >>> from probmut.campaign import MutationScore, ScoreShares
    >>> score = MutationScore(0.5, 0.4, 0.6, 0.5, 3, 1)           # 0.2 wide
    >>> unpaired = dict.fromkeys("abc", False)
    >>> found = Assessment(score, ScoreShares(0.0, 8.0, (2.0, 1.0, 0.0), 40, (40, 40, 40)),
    ...                    ("a", "b", "c"))
    >>> plan_round(found, {"healthy": 40, "a": 40, "b": 40, "c": 40}, unpaired, width=0.1,
    ...            round_size=10, max_instances=200)   # the healthy part weighs most
    {'healthy': 80}
    >>> found = Assessment(score, ScoreShares(0.0, 8.0, (2.0, 1.0, 0.0), 200, (40, 40, 40)),
    ...                    ("a", "b", "c"))
    >>> plan_round(found, {"healthy": 200, "a": 40, "b": 40, "c": 40}, unpaired, width=0.1,
    ...            round_size=10, max_instances=200)   # at the cap: a and b; never c
    {'a': 80, 'b': 60}
    """
    shares = assessment.shares
    names = assessment.names
    part = {HEALTHY: shares.healthy} | dict(zip(names, shares.mutants, strict=True))
    read = {HEALTHY: shares.healthy_size} | dict(zip(names, shares.sizes, strict=True))
    added = dict.fromkeys(part, 0)

    def variance(extra) -> float:  # each part scales as 1/n
        return shares.fixed + sum(part[p] * read[p] / (read[p] + extra[p]) for p in part)

    def increment(p, extra) -> dict[str, int]:  # p's next round, and the healthy it needs
        step = min(round_size, max_instances - targets[p] - extra[p])
        if step <= 0:
            return {}
        more = {p: step}
        if p != HEALTHY and paired[p]:
            need = targets[p] + extra[p] + step - targets[HEALTHY] - extra[HEALTHY]
            if need > 0:
                more[HEALTHY] = need
        return more

    def gain(more, extra) -> float:  # reduction of the variance per instance
        after = {p: extra[p] + more.get(p, 0) for p in extra}
        return (variance(extra) - variance(after)) / sum(more.values())

    goal = shares.variance() * (width / assessment.width) ** 2
    limit = {p: max(round_size, targets[p]) for p in part}  # at most doubling in a round
    while variance(added) > goal:
        options = [(gain(more, added), p) for p in part if (more := increment(p, added))]
        if not options:
            break
        value, best = max(options, key=lambda option: option[0])
        if value <= 0 or added[best] >= limit[best]:
            break
        for q, step in increment(best, added).items():
            added[q] += step
    return {p: targets[p] + step for p, step in added.items() if step}


@dataclass(frozen=True)
class ScoreReport(RoundsReport):
    """A run until the score is settled (:class:`~probmut.train.rounds.RoundsReport`):
    every round's instances, score and plan (``rounds``) and how it ended (``final``)."""

    width: float = field(kw_only=True)  # the asked width, which UntilScore holds

    def plan(self) -> dict:
        return {"until_score": self.width} | super().plan()

    def endings(self) -> list[str]:
        return [self.final["message"]] if self.final else []

    def table(self) -> str:
        """The rounds as a readable table: instances, the score, and the next round."""
        lines = [f"{'round':>5}{HEALTHY:>9}{'instances':>11}  {'score':<6} {'95% interval':<16}"
                 f"{'width':>7}  {'decided on':<22}  the next round trains, up to"]
        for r in self.rounds:
            s = r["score"]
            following = ", ".join(f"{population} {n}"
                                  for population, n in r["next"].items()) or "-"
            lines.append(f"{r['round']:>5}{r['instances'][HEALTHY]:>9}{r['spent']:>11}  "
                         f"{s['mean']:<6.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}] "
                         f"{s['width']:>7.3f}  {_decided_on(r):<22}  {following}")
        lines += ["", *self.endings()]
        return "\n".join(line.rstrip() for line in lines)


def score_round(number: int, targets: dict[str, int], healthy, scored: dict, analysis, *,
                seed, width: float, round_size: int, max_instances: int,
                threads: int | None = None, memo: dict | None = None) -> dict:
    """Round ``number``'s record: the score of the ``scored`` mutants (population name ->
    (population, paired)) against the ``healthy`` population, the parts of its variance,
    and the next round's targets (``next``: empty when the run stops), for populations
    trained to ``targets`` (population -> instances, every population of the run)."""
    assessment = assess(healthy, scored, analysis, seed=seed, threads=threads, memo=memo)
    current = {p: targets[p] for p in (HEALTHY, *scored)}
    decision = decide(assessment, healthy, scored, analysis, seed=seed, asked=width,
                      threads=threads, memo=memo)
    # the next round aims at the margin under the width, as the decision reads it
    target = max(width - MARGIN * decision.width_se, 1e-9) * assessment.width / decision.width
    following = {} if decision.settles else plan_round(
        assessment, current, {population: paired for population, (_, paired) in scored.items()},
        width=target, round_size=round_size, max_instances=max_instances)
    planned = current | following
    score = assessment.score
    return {"round": number, "instances": dict(targets), "spent": sum(targets.values()),
            "score": {"mean": score.mean, "ci_low": score.ci_low, "ci_high": score.ci_high,
                      "width": assessment.width, "mutants": score.mutants},
            "decision": decision.to_dict(),
            "shares": assessment.parts(),
            "width_next": assessment.width_at(planned[HEALTHY],
                                              [planned[n] for n in assessment.names]),
            "width_at_cap": assessment.width_at(max_instances,
                                                [max_instances] * len(assessment.names)),
            "healthy_for_width": assessment.healthy_for(target,
                                                        [max_instances] * len(assessment.names)),
            "next": following}


def _ending(record: dict, width: float, max_instances: int, left_out: list[str]) -> dict:
    """How the run ended, in words and numbers (``final``)."""
    s = record["score"]
    reached = Decision(width, **record["decision"]).settles
    if reached:
        why = f"settled at {width:g} (decided on {_decided_on(record)} resamples)"
    else:
        needed = record["healthy_for_width"]
        why = (f"not settled at {width:g} (decided on {_decided_on(record)} resamples): no "
               "population below "
               f"{max_instances} instances would "
               f"narrow it ({record['shares'][HEALTHY]:.0%} of its variance is the healthy "
               "population's, shared by every mutant; " + (
                   f"with every mutant at {max_instances}, about {needed} healthy instances "
                   f"would bring it to {width:g} by the variance model, an extrapolation; a "
                   "larger --max-instances lets the rounds train them)" if needed else
                   "no number of healthy instances would: the mutants' own parts and the "
                   "trials' noise alone are wider)"))
    message = (f"mutation score {s['mean']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}] of "
               f"{s['mutants']} mutants after {record['round']} rounds and {record['spent']} "
               f"instances: the interval is {s['width']:.3f} wide, {why}")
    if left_out:
        message += f"; flagged, left out of the score: {', '.join(left_out)}"
    return {"reached": reached, "score": s, "instances": record["instances"],
            "spent": record["spent"], "left_out": left_out, "message": message}


def _decided_on(record: dict) -> str:
    """The width the stop was decided on, with its Monte-Carlo standard error and its
    resamples (a 0.2.0 run's rounds decided on the width alone).

    >>> _decided_on({"decision": {"width": 0.0931, "width_se": 0.0042, "resamples": 400}})
    '0.093 ± 0.004 on 400'
    """
    d = record.get("decision")
    return "-" if d is None else f"{d['width']:.3f} ± {d['width_se']:.3f} on {d['resamples']}"


def _line(record: dict, width: float, final: dict | None) -> str:
    """The round's line on stderr."""
    s = record["score"]
    sign = "settled at" if Decision(width, **record["decision"]).settles else "not settled at"
    text = (f"round {record['round']}: {record['spent']} instances ({HEALTHY} "
            f"{record['instances'][HEALTHY]}); score {s['mean']:.3f} [{s['ci_low']:.3f}, "
            f"{s['ci_high']:.3f}], width {s['width']:.3f} ({_decided_on(record)} resamples) "
            f"{sign} {width:g}")
    if final is not None:
        return text + "; stops"
    following = record["next"].items()
    return text + "; next: " + ", ".join(f"{population} {n}" for population, n in following)


def train_until_score(job, mutations, mode) -> ScoreReport:
    """Train ``job`` (:class:`~probmut.train.run.Job`) in rounds until the mutation
    score's interval is at most the mode's ``width`` wide, or no population below its
    ``max_instances`` would narrow it (see the module notes). One line per round
    (instances, the score, what the next round trains) goes to stderr, also without
    progress bars (which show the training).

    Parameters
    ----------
    job : Job
        The run's parts; its settings' seed is the score's (``probmut report --seed``).
    mutations : list of Mutation
        The bound mutations.
    mode : UntilScore
        :class:`~probmut.train.options.UntilScore`: the widest interval that settles the
        score (``width``), the step of a round's plan (``round_size``: a population takes
        one step or more, at most doubling in a round), the most instances per population
        (``max_instances``) and the score's ``analysis`` (its ``mass`` is the interval's).
        The same seed gives the same rounds for any number of workers.

    Returns
    -------
    ScoreReport
        The training of all the rounds, every round's score and plan, and how it ended.

    Raises
    ------
    ProbmutError
        As :meth:`probmut.train.run.Job.train`, and when failed instances leave a
        population fewer than k usable instances.
    """
    from probmut.io.populations import read_population

    out, seed, analysis = job.out, job.settings.seed, mode.analysis
    width, round_size, max_instances = mode.width, mode.round_size, mode.max_instances
    plan = rounds_plan("--until-score", analysis, until_score=width, round=round_size,
                       max_instances=max_instances)
    targets = pilot_targets([m.population for m in mutations], analysis.sample, max_instances)
    paired = {m.population: m.operator.paired for m in mutations}
    runs, rounds, final, number, memo = [], [], None, 0, {}
    if (document := recorded_rounds(out, paired)) is not None:
        rounds, final = document["rounds"], document["final"] or None
        number, targets = rounds[-1]["round"], {**rounds[-1]["instances"],
                                                **rounds[-1]["next"]}
        print(f"resuming after round {number} of {out / 'rounds.json'}", file=sys.stderr)
        if final is not None and not final.get("reached") \
                and max_instances > document["max_instances"]:
            final = None  # stopped at its cap, which is now larger: the rounds go on
        if final is not None:  # it had ended: its files, as they are
            train_round(number, runs, job, mutations, targets, most=max_instances, rounds=plan)
    while final is None:
        number += 1
        run = train_round(number, runs, job, mutations, targets, most=max_instances,
                          rounds=plan)
        if run.failures or run.lost:  # the rounds wait for them: a rerun trains the lost
            break
        left_out = [m.population for m in mutations
                    if run.flags.get(m.population) and run.flags[m.population].flags]
        scored = {m.population: (read_population(out / f"{m.population}.csv", name=m.population),
                                 paired[m.population])
                  for m in mutations if m.population not in left_out}
        if not scored:
            final = {"reached": False, "message": "every mutant is flagged (equivalent or "
                     f"broken): no mutation score; flagged: {', '.join(left_out)}"}
            ScoreReport(rounds=rounds, final=final, width=width, max_instances=max_instances,
                        out=out).write()
            break
        healthy = read_population(out / f"{HEALTHY}.csv", name=HEALTHY)
        for population in (healthy, *(p for p, _ in scored.values())):
            if len(population) < analysis.sample:
                raise ProbmutError(
                    f"{population.name}: {len(population)} usable instances, fewer than k = "
                    f"{analysis.sample}: its failed instances leave no score to read "
                    "(--retry-failed trains them again)", option="retry_failed")
        record = score_round(number, targets, healthy, scored, analysis, seed=seed,
                             width=width, round_size=round_size, max_instances=max_instances,
                             memo=memo)
        rounds.append(record)
        final = None if record["next"] else _ending(record, width, max_instances, left_out)
        ScoreReport(rounds=rounds, final=final or {}, width=width, max_instances=max_instances,
                    out=out).write()
        print(_line(record, width, final), file=sys.stderr)
        if final is not None:
            break
        targets.update(record["next"])
    return ScoreReport.of_runs(runs, rounds=rounds, final=final or {}, width=width,
                               max_instances=max_instances)

