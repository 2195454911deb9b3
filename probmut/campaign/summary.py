"""What a campaign knows: each population's count against its target, each mutant's
summary, and the campaign's result type with its tables and status lines."""

from __future__ import annotations

from dataclasses import dataclass, field

from probmut.campaign.compare import Comparison, compare_reports
from probmut.campaign.curve import KillCurve
from probmut.campaign.next_steps import NextSteps, next_steps_of
from probmut.campaign.score import MutationScore
from probmut.results import Result, plain

#: What each mutant's summary outcome can be, in the order of the summary's counts.
OUTCOMES = ("killed", "not killed", "not settled", "flagged", "not analysed")


def analysis_of(settings) -> dict:
    """The analysis settings (:class:`~probmut.bagging.PosteriorSettings`) that define a
    report's numbers, by name: ``"analysis"`` in its JSON, what a comparison with another
    report checks (not the Monte-Carlo error's jackknife and solver, which it does not
    use).

    >>> from probmut.bagging import PosteriorSettings
    >>> analysis_of(PosteriorSettings())["criterion"]["kind"]
    'deepcrime'
    """
    from dataclasses import asdict

    return plain({k: v for k, v in asdict(settings).items() if k not in ("jackknife", "solver")})


@dataclass(frozen=True)
class PopulationCount:
    """How many instances a population file holds against its run's target (None when
    the manifest records none). ``instances`` counts every record, failed ones too (they
    were trained); 0 when the file does not exist yet (``exists`` False) or holds only
    its header. ``failures``: its failed instances by status (crashed, timed out,
    diverged), None when the file has no symptom records to say (DeepCrime's format)."""

    name: str
    file: str
    instances: int
    target: int | None
    exists: bool = True
    failures: dict[str, int] | None = None

    @property
    def complete(self) -> bool | None:
        """Whether it holds its target; None when no target is recorded."""
        return None if self.target is None else self.instances >= self.target

    @property
    def held(self) -> str:
        """Its instances against its target, in words.

        >>> PopulationCount("m", "m.csv", 0, 40, exists=False).held
        '0 of 40 instances (no file yet)'
        """
        why = "" if self.instances else " (no instance yet)" if self.exists else " (no file yet)"
        return f"{self.instances} of {self.target} instances{why}"

    def describe(self) -> str:
        """Its name and :attr:`held` (the status box's line).

        >>> PopulationCount("m", "m.csv", 0, 40).describe()
        'm: 0 of 40 instances (no instance yet)'
        """
        return f"{self.name}: {self.held}"

    def to_dict(self) -> dict:
        return {"name": self.name, "file": self.file, "instances": self.instances,
                "target": self.target, "complete": self.complete,
                "failures": self.failures}


@dataclass(frozen=True)
class MutantSummary:
    """Everything the campaign knows about one mutant population.

    ``status`` is ``analysed``, ``missing`` (no population file yet), ``empty`` (a file
    holding no instance yet), ``failed`` (every instance failed) or ``too few`` (fewer
    usable instances than the sample size k). ``study`` is its bagged posterior against
    the healthy baseline (Figure 3; paired by instance id for a model-level mutant, so is
    its baseline), ``posterior`` its row; ``test`` the kill criterion's test on the whole
    populations; ``verdict`` the pilot verdict (``verdict``, ``p_killed``, ``needed``,
    ``message``); ``rounds`` its rows of a run trained until settled; ``symptoms`` and
    ``inputs`` where the run has symptom records and per-input outcomes; ``notes`` the
    warnings its own analysis gave.
    """

    name: str
    mutation: str
    magnitude: str
    paired: bool
    count: PopulationCount
    usable: int = 0
    status: str = "analysed"
    flags: tuple[str, ...] = ()
    study: object = None
    test: object = None
    verdict: dict | None = None
    rounds: tuple[dict, ...] = ()
    symptoms: object = None
    inputs: object = None
    notes: tuple[str, ...] = ()
    #: The healthy and mutant populations as analysed (aligned by id when paired): what
    #: the verdict is computed from (:func:`with_verdicts`).
    populations: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def posterior(self):
        return None if self.study is None else self.study.populations[1]

    @property
    def baseline(self):
        """The healthy population against itself as this mutant's analysis had it (paired
        by instance id for a model-level mutant), or None."""
        return None if self.study is None else self.study.baseline

    @property
    def conflict(self) -> str | None:
        """Where the kill test on the whole populations and the bagged posterior's
        decision disagree, or a settled verdict contradicts the decision: the three in
        words (None otherwise; "not settled" alone is the outcome's to say)."""
        if self.posterior is None:
            return None
        said = {"test": "killed" if self.test.killed else "not killed",
                "decision": self.decision}
        if self.verdict:
            said["verdict"] = self.verdict["verdict"]
        settled = said.get("verdict", self.decision) != "not settled"
        if said["test"] == self.decision and (not settled
                                              or said.get("verdict", self.decision)
                                              == self.decision):
            return None
        return ", ".join(f"{what} {says}" for what, says in said.items())

    @property
    def remarks(self) -> tuple[str, ...]:
        """What a reader of its verdict must see beside it (with its ``notes``, the
        warnings of its analysis): a short population, the flags, a disagreement between
        test, decision and verdict."""
        found = []
        if self.count.complete is False:
            found.append(f"short: {self.count.held}")
        if self.flags:
            found.append(f"flagged {', '.join(self.flags)}: left out of the score")
        if self.conflict:
            found.append(f"disagree: {self.conflict}")
        if self.two_tests:
            found.append(self.two_tests)
        return tuple(found)

    @property
    def two_tests(self) -> str | None:
        """Where the symptom's test of the accuracies and the kill test say different
        things (one significant, the other not killed, or the other way): they are two
        tests (a paired t-test, say, and DeepCrime's), and this says which; else None."""
        from probmut.killtest.criteria import CRITERIA

        change = self.symptoms and self.symptoms.accuracy_change
        if not change or self.test is None or change.significant == self.test.killed:
            return None
        return (f"two tests: the symptom's {change.test} (p {change.p_value:.3g}) is "
                f"{'' if change.significant else 'not '}significant, the kill test's "
                f"({CRITERIA[self.test.kind].test}, p {self.test.p_value:.3g}) "
                f"{'kills' if self.test.killed else 'does not kill'}")

    @property
    def decision(self) -> str:
        """The bagged posterior's decision (ratio rule), or why there is none."""
        if self.posterior is None:
            return self.status
        return "killed" if self.posterior.killed else "not killed"

    @property
    def outcome(self) -> str:
        """The summary's category (:data:`OUTCOMES`): flagged, not analysed, or the
        verdict (the decision when verdicts were not computed)."""
        if self.flags:
            return "flagged"
        if self.posterior is None:
            return "not analysed"
        return self.verdict["verdict"] if self.verdict else self.decision

    def to_dict(self) -> dict:
        p, t = self.posterior, self.test
        return plain({
            "name": self.name, "mutation": self.mutation, "magnitude": self.magnitude,
            "paired": self.paired, "status": self.status, "usable": self.usable,
            **{k: v for k, v in self.count.to_dict().items() if k != "name"},
            "flags": list(self.flags), "decision": self.decision, "outcome": self.outcome,
            "posterior": None if p is None else p.to_dict(),
            "kill_test": None if t is None else t.to_dict(), "verdict": self.verdict,
            "conflict": self.conflict, "notes": list(self.notes),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "rounds": list(self.rounds),
            "symptoms": None if self.symptoms is None else self.symptoms.to_dict(),
            "inputs": None if self.inputs is None else self.inputs.to_dict()})

    def row(self) -> dict:
        """The mutant's line of the campaign table."""
        p, t, v = self.posterior, self.test, self.verdict
        return {"name": self.name, "mutation": self.mutation, "magnitude": self.magnitude,
                "instances": self.count.instances, "target": self.count.target,
                "mean": p and p.mean, "ci_low": p and p.ci_low, "ci_high": p and p.ci_high,
                "ratio": p and p.ratio, "decision": self.decision,
                "verdict": v and v["verdict"], "p_killed": v and v["p_killed"],
                "p_value": t and t.p_value, "effect_size": t and t.effect_size,
                "test_killed": t and t.killed, "conflict": self.conflict,
                "flags": ", ".join(self.flags),
                "symptom": self.symptoms and self.symptoms.symptom, "outcome": self.outcome}


@dataclass(frozen=True)
class Campaign(Result):
    """One model's mutation-testing campaign (see the module notes and
    :func:`summarize_campaign`)."""

    model: str
    manifest: str
    description: str
    data: dict | None
    settings: object
    seed: object
    healthy: PopulationCount
    baseline: object
    mutants: tuple[MutantSummary, ...]
    score: MutationScore | None
    curves: tuple[KillCurve, ...]
    verdicts: bool = True
    inputs: object = None
    coverage: dict | None = None
    rounds_file: str | None = None
    notes: tuple[str, ...] = ()
    operator_scores: tuple[MutationScore | None, ...] = ()
    paired_baseline: object = None
    run_settings: dict | None = None
    #: Why there is no next-steps command (None with ``run_settings``).
    run_note: str | None = None
    #: Where the seed comes from: "given", "the run's" (``train --seed``, recorded in
    #: ``.work/settings.json``) or "the default".
    seed_source: str = "given"
    #: Where the analysis settings come from: "given", "the run's" (the analysis of its
    #: rounds, recorded in ``.work/settings.json``) or "the default".
    analysis_source: str = "given"
    #: An earlier report's JSON document and its file (``--compare``).
    earlier: tuple[str, dict] | None = field(default=None, repr=False)

    @property
    def comparison(self) -> Comparison | None:
        """What changed since the earlier report (None without one)."""
        if self.earlier is None:
            return None
        return compare_reports(self.record(), self.earlier[1], self.earlier[0])
    score_rounds: tuple[dict, ...] = ()

    def analysis(self) -> dict:
        """Its analysis settings by name (:func:`analysis_of`)."""
        return analysis_of(self.settings)

    def describe_seed(self) -> str:
        """The seed and where it comes from, in words."""
        why = {"the run's": " (the run's: train --seed, in .work/settings.json; --seed "
                            "gives another)",
               "the default": " (the default: no run's seed recorded)"}
        return f"{self.seed}{why.get(self.seed_source, '')}"

    def record(self) -> dict:
        """What a later comparison reads of this report (:mod:`probmut.campaign.compare`):
        its JSON document's keys that say what the numbers mean, its score, its counts
        and each mutant's outcome. A page embeds it."""
        return plain({"model": self.model, "manifest": self.manifest, "seed": self.seed,
                      "settings": self.settings.describe(), "analysis": self.analysis(),
                      "verdicts": self.verdicts,
                      "mutation_score": None if self.score is None else self.score.to_dict(),
                      "counts": self.counts,
                      "mutants": [{"name": m.name, "outcome": m.outcome}
                                  for m in self.mutants]})

    @property
    def populations(self) -> tuple[PopulationCount, ...]:
        return (self.healthy, *(m.count for m in self.mutants))

    @property
    def complete(self) -> bool | None:
        """Every population holds its recorded target (none missing, none short); None
        when the manifest records no targets."""
        judged = [p.complete for p in self.populations if p.complete is not None]
        return all(judged) if judged else None

    @property
    def short(self) -> tuple[PopulationCount, ...]:
        return tuple(p for p in self.populations if p.complete is False)

    @property
    def counts(self) -> dict[str, int]:
        """Mutants per summary outcome (:data:`OUTCOMES`)."""
        found = [m.outcome for m in self.mutants]
        return {outcome: found.count(outcome) for outcome in OUTCOMES}

    @property
    def flagged(self) -> tuple[MutantSummary, ...]:
        return tuple(m for m in self.mutants if m.flags)

    def rows(self) -> list[dict]:
        return [m.row() for m in self.mutants]

    def operators(self) -> list[dict]:
        """Per operator (the manifest's order): its mutants, their counts per outcome and
        the mutation score of its analysed, unflagged mutants (None without one)."""
        rows = []
        for curve, score in zip(self.curves, self.operator_scores or [None] * len(self.curves),
                                strict=True):
            found = [m.outcome for m in self.mutants if m.mutation == curve.mutation]
            rows.append({"mutation": curve.mutation, "mutants": len(found),
                         "counts": {o: found.count(o) for o in OUTCOMES}, "score": score})
        return rows

    def next_steps(self) -> NextSteps:
        """What would settle the unsettled and unanalysed mutants (see :class:`NextSteps`)."""
        return next_steps_of(self)

    def to_dict(self) -> dict:
        return plain({
            "model": self.model, "manifest": self.manifest, "description": self.description,
            "data": self.data, "seed": self.seed, "seed_source": self.seed_source,
            "analysis_source": self.analysis_source,
            "settings": self.settings.describe(), "analysis": self.analysis(),
            "complete": self.complete,
            "populations": [p.to_dict() for p in self.populations],
            "mutation_score": None if self.score is None else self.score.to_dict(),
            "counts": self.counts, "verdicts": self.verdicts,
            "flagged": [{"name": m.name, "flags": list(m.flags)} for m in self.flagged],
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "paired_baseline": (None if self.paired_baseline is None
                                else self.paired_baseline.to_dict()),
            "operators": [c.to_dict() | {"mutants": o["mutants"], "counts": o["counts"],
                                         "score": o["score"] and o["score"].to_dict()}
                          for c, o in zip(self.curves, self.operators(), strict=True)],
            "mutants": [m.to_dict() for m in self.mutants],
            "next_steps": self.next_steps().to_dict(),
            "compare": None if self.comparison is None else self.comparison.to_dict(),
            "inputs": None if self.inputs is None else {
                k: v for k, v in self.inputs.to_dict().items() if k != "mutants"},
            "coverage": self.coverage, "rounds": self.rounds_file,
            "score_rounds": list(self.score_rounds), "notes": list(self.notes)})

    def _repr_html_(self) -> str:
        import html

        head = [*self.status_lines()[:1],
                str(self.score) if self.score else "mutation score: no analysed mutant"]
        return ("".join(f"<p>{html.escape(line)}</p>" for line in head)
                + super()._repr_html_())

    def status_lines(self) -> list[str]:
        """Whether the campaign is complete, and every short population."""
        if self.complete is None:
            sizes = sorted({p.instances for p in self.populations})
            held = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"
            return [f"completeness unknown: the manifest records no targets (probmut train "
                    f"records them); the populations hold {held} instances"]
        if self.complete:
            return ["complete: every population holds the target its run recorded"]
        lines = [f"UNFINISHED: {len(self.short)} population(s) short of the target their run "
                 f"recorded; {self.finish_hint()}"]
        lines += [f"  {p.describe()}" for p in self.short]
        return lines

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {o}" for o, n in self.counts.items() if n)
        lines = [f"Campaign of {self.model}: {len(self.mutants)} mutants, healthy population "
                 f"{self.healthy.instances} instances; "
                 f"{'verdicts' if self.verdicts else 'decisions'}: {counts}",
                 *self.status_lines(),
                 str(self.score) if self.score else "mutation score: no analysed mutant"]
        if self.score_rounds:
            last = self.score_rounds[-1]
            lines.append(f"trained until the score was settled (train --until-score): "
                         f"{len(self.score_rounds)} rounds, {last['spent']} instances, the "
                         f"last interval {last['score']['width']:.3f} wide")
        if self.flagged:
            lines.append("flagged, left out of the score: " + "; ".join(
                f"{m.name} ({', '.join(m.flags)})" for m in self.flagged))
        lines += [f"{label}: {numbers}" for label, numbers in self.baselines()]
        lines += [self.failures_line(), "", *self._operator_table()]
        lines += [str(c) for c in self.curves]
        width = max([len("mutant")] + [len(m.name) for m in self.mutants]) + 1
        lines += ["", f"{'mutant':<{width}}{'n':>5}{'mean':>8}  {'95% interval':<17}"
                      f"{'ratio':>9}  {'decision':<12}{'verdict':<13}flags"]
        for m in self.mutants:
            p = m.posterior
            numbers = (f"{p.mean:>8.4f}  [{p.ci_low:.3f}, {p.ci_high:.3f}]  {p.ratio:>9.4g}"
                       if p else f"{'':>8}  {'':<17}{'':>9}")
            verdict = m.verdict["verdict"] if m.verdict else ""
            lines.append(f"{m.name:<{width}}{m.count.instances:>5}{numbers}  "
                         f"{m.decision:<12}{verdict:<13}{', '.join(m.flags)}".rstrip())
        lines.append(f"settings: {self.settings.describe()}"
                     + (" (the run's rounds')" if self.analysis_source == "the run's" else "")
                     + f", seed {self.describe_seed()}")
        steps = self.next_steps()
        if steps.steps:
            lines += ["", str(steps)]
        if self.comparison is not None:
            lines += ["", str(self.comparison)]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def finish_hint(self) -> str:
        """How to finish the short populations: rerun probmut train (a run of it), or
        train them with the tool that made them (a manifest written by hand, another
        tool's populations, a run of probmut 0.1, which 0.2 does not resume)."""
        if self.run_settings is not None:
            return "rerun the same probmut train command to finish them"
        if self.run_note and "probmut 0.1" in self.run_note:
            return ("probmut 0.2 does not resume a run of probmut 0.1: train more instances "
                    "into another output directory")
        return ("train the missing instances with the tool that wrote them (no probmut train "
                "run recorded here), then report again")

    def baselines(self) -> list[tuple[str, str]]:
        """The healthy population against itself, the baseline of the mutants' P(above the
        baseline), as (label, numbers): unpaired, and paired by instance id where
        model-level mutants use it."""
        paired = self.paired_baseline
        never = paired is not None and not paired.kill_counts.any()
        why = (f" (by instance id: the model-level mutants' baseline; the same instances on "
               f"both sides, which the test never kills: Beta(1, N + 1), mean 1/(N + 2) for "
               f"N = {paired.trials} trials, the same for every campaign)" if never else
               " (by instance id: the model-level mutants' baseline)")
        return [(label, f"posterior mean {post.mean:.4f} [{post.ci_low:.3f}, "
                        f"{post.ci_high:.3f}]" + why)
                for label, post, why in (
                    ("healthy vs healthy", self.baseline, ""),
                    ("healthy vs healthy, paired", paired, why))
                if post is not None]

    def failures_line(self) -> str:
        """The failed instances of every population that records them, in one line."""
        recorded = [p for p in self.populations if p.failures is not None]
        if not recorded:
            return ("instance failures: not recorded (the population files hold accuracies "
                    "only)")
        failed = [f"{p.name}: " + ", ".join(f"{n} {status}" for status, n in p.failures.items())
                  for p in recorded if p.failures]
        return "instance failures: " + ("; ".join(failed) if failed else
                                        f"none in {len(recorded)} populations")

    def _operator_table(self) -> list[str]:
        rows = self.operators()
        width = max(len("operator"), *(len(r["mutation"]) for r in rows)) + 1 if rows else 9
        lines = [f"{'operator':<{width}}{'mutants':>8}" + "".join(f"{o:>{len(o) + 2}}"
                                                               for o in OUTCOMES)
                 + f"  score [{self.settings.mass:.0%} interval]"]
        for row in rows:
            score = row["score"]
            lines.append(f"{row['mutation']:<{width}}{row['mutants']:>8}" + "".join(
                f"{row['counts'][o]:>{len(o) + 2}}" for o in OUTCOMES) + "  " + (
                f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]" if score
                else "none analysed"))
        return lines
