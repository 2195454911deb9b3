"""Reading a manifest's populations and analysing every mutant of one model: the
orchestration behind :func:`summarize_campaign`."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from probmut.campaign.compare import read_report
from probmut.campaign.curve import KillCurve, kill_curve
from probmut.campaign.next_steps import NOT_A_RUN
from probmut.campaign.score import (
    MutationScore,
    aligned_populations,
    campaign_score,
    mutation_score,
)
from probmut.campaign.summary import Campaign, MutantSummary, PopulationCount, analysis_of
from probmut.errors import ProbmutError
from probmut.io.manifest import manifest_or_path
from probmut.seeds import DEFAULT_SEED, generator
from probmut.validation import checked, flag, instance, optional, path, renamed, seed, text, threads


def _seed_of(settings) -> int | None:
    seed = settings.get("seed") if isinstance(settings, dict) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else None


def _recorded_run(folder: Path) -> tuple[dict | None, str | None, int | None]:
    """What a probmut train run in ``folder`` recorded (``.work/settings.json``): the
    settings the next steps' command repeats (data, architecture, training settings,
    seed), or None with why there are none (populations probmut train did not write, a
    run of probmut 0.1, a damaged settings file: still a report), and the run's seed
    (``train --seed``; None when none can be read)."""
    import json

    from probmut.io.workdir import read_settings, settings_path

    try:
        found = read_settings(folder)
    except ProbmutError as error:
        try:  # a run of probmut 0.1 recorded its seed too
            raw = json.loads(settings_path(folder).read_text(encoding="utf-8-sig"))
        except (OSError, ValueError, RecursionError):
            raw = None
        return None, f"no command: {error}", _seed_of(raw)
    if found is None:
        return None, NOT_A_RUN, None
    missing = sorted({"dataset", "architecture", "seed", "config", "data"} - set(found))
    if missing or not isinstance(found["data"], dict) or "option" not in found["data"]:
        return None, (f"no command: {settings_path(folder)}: the run's settings do not say "
                      f"{', '.join(missing) or 'which option named its data'}; train more "
                      "instances into another output directory"), _seed_of(found)
    return found, None, _seed_of(found)


def _settings(value, name):
    from probmut.bagging import PosteriorSettings

    return instance(PosteriorSettings)(value, name)


def _cache(value, name):
    from probmut.io.cache import Cache

    return instance(Cache)(value, name)


@renamed(jobs="threads")
@checked(manifest=optional(manifest_or_path), model=optional(text), settings=optional(_settings),
         seed=seed, threads=threads, verdicts=flag, coverage=optional(path), compare=optional(path),
         progress=flag, cache=optional(_cache))
def summarize_campaign(manifest=None, model: str | None = None, settings=None, *,
                       seed=None, threads: int | None = None, verdicts: bool = True,
                       coverage=None, compare=None, progress: bool = False,
                       cache=None) -> Campaign:
    """Analyse every mutant of one model of a manifest: the campaign's whole answer.

    Parameters
    ----------
    manifest : Manifest or path-like, optional
        A :class:`~probmut.io.manifest.Manifest` or its path (default: the bundled
        data's). A run directory's ``manifest.toml``; its ``rounds.json``,
        ``coverage.json`` (``probmut coverage --json``) and the settings its run recorded
        (``.work/settings.json``, for the next steps' command) are read when present.
    model : str, optional
        The model (default: the manifest's first).
    settings : PosteriorSettings, optional
        The :class:`~probmut.bagging.PosteriorSettings` of every analysis. None (the
        default): those of the run's rounds, when it was trained in rounds (the k,
        criterion, resamples and trials recorded in its ``.work/settings.json``), so that
        its report reads its mutants as its verdicts or score did; else the defaults.
    seed : int, SeedSequence, Generator or None, optional
        The same seed gives the same numbers, for any number of threads. None (the
        default): the seed the run recorded (``train --seed``, in the manifest's folder's
        ``.work/settings.json``), so that a run's report shows the numbers its rounds
        computed; :data:`~probmut.seeds.DEFAULT_SEED` for populations of no run.
    threads : int, optional
        Engine threads (None: all cores); the numbers do not depend on them.
    verdicts : bool, optional
        Compute each mutant's pilot verdict (:func:`probmut.recommend.recommend`; the
        largest part of the time).
    coverage : path-like, optional
        A coverage result's JSON file (default: ``coverage.json`` beside the manifest, if
        any).
    compare : dict, optional
        An earlier report's JSON document (``probmut report --json``): which outcomes
        changed since (:class:`Comparison`).
    progress : bool, optional
        Progress lines on stderr.
    cache : Cache, optional
        A :class:`~probmut.io.cache.Cache` for the verdicts' simulated blocks: a rerun
        reads them instead of simulating them again (the same numbers).

    A population file not written yet, or holding only its header (a run stopped
    early), counts 0 instances and its mutant is not analysed; the rest is. Warnings
    while reading (dropped instances, small populations) become ``notes``, and each
    mutant's own also its ``notes``.

    Returns
    -------
    Campaign
        Every mutant's summary, the mutation score, per operator the smallest killed
        magnitude, completeness, the next steps and the changes since ``compare``.

    Raises
    ------
    ProbmutError
        For a manifest that cannot be read, an unknown model, a model without its healthy
        population, a ``coverage`` or ``compare`` file that is not what it should be, a
        damaged population file, or an argument of the wrong type.

    Examples
    --------
    >>> report = summarize_campaign(model="mnist_dc", verdicts=False)     # DeepCrime's 20 vs 20
    >>> report.counts["killed"], round(report.score.mean, 3)
    (11, 0.633)
    >>> report.complete is None       # the bundled manifest records no targets
    True
    """
    manifest, model, settings, coverage, earlier = _summarize_iv(manifest, model, settings,
                                                                coverage, compare)
    from probmut.bagging import PosteriorSettings

    run_settings, run_note, run_seed = _recorded_run(manifest.path.parent)
    recorded = None if settings is not None else _recorded_analysis(run_settings)
    analysis_source = ("given" if settings is not None else "the run's" if recorded is not None
                       else "the default")
    settings = settings or recorded or PosteriorSettings()
    source = "given" if seed is not None else "the run's" if run_seed is not None else (
        "the default")
    seed = seed if seed is not None else run_seed if run_seed is not None else DEFAULT_SEED
    if earlier is not None:  # before any analysis: a report that cannot be compared
        from probmut.campaign.compare import check_comparable

        # (the kind of outcomes: when known, by the caller or by Campaign.comparison)
        check_comparable({"model": model, "seed": seed, "analysis": analysis_of(settings),
                          "settings": settings.describe()}, earlier[1], earlier[0])
    notes: list[str] = []
    with _noted(notes):
        result = _campaign(manifest, model, settings, seed, threads, coverage, progress, notes)
    notes += [note for m in result.mutants for note in m.notes]
    result = replace(result, notes=tuple(dict.fromkeys(notes)), earlier=earlier,
                     verdicts=False, run_settings=run_settings, run_note=run_note,
                     seed_source=source, analysis_source=analysis_source)
    return (with_verdicts(result, threads=threads, progress=progress, cache=cache) if verdicts
            else result)


def _summarize_iv(manifest, model, settings, coverage, compare):
    """:func:`summarize_campaign`'s input validation, every file it is given read before
    any population is analysed: the manifest, the model and its healthy population, the
    coverage document (given, or ``coverage.json`` beside the manifest) and the earlier
    report. Returns the manifest, the model's name, the settings, the coverage document
    (or None) and the earlier report as (its name, its document) (or None)."""
    from probmut.io.coverage import read_coverage
    from probmut.io.manifest import Manifest

    manifest = manifest if isinstance(manifest, Manifest) else Manifest.load(manifest)
    model = model or manifest.model_names()[0]
    healthy_path = manifest.healthy(model)
    if not healthy_path.is_file():
        raise ProbmutError(f"{manifest.path}: model {model!r} has no population files yet "
                           f"({healthy_path.name} is missing): nothing to report")
    beside = manifest.path.parent / "coverage.json"
    coverage = coverage or (beside if beside.is_file() else None)
    coverage = read_coverage(coverage) if coverage else None
    earlier = (str(compare), read_report(compare)) if compare else None
    return manifest, model, settings, coverage, earlier


def _recorded_analysis(run_settings: dict | None):
    """The analysis of a run trained in rounds (``rounds.analysis`` of its
    ``.work/settings.json``: the k, criterion, resamples and trials its verdicts or score
    used), as :class:`~probmut.bagging.PosteriorSettings`; None for another run, or a
    record that cannot be read as one."""
    from probmut.bagging import PosteriorSettings
    from probmut.killtest import KillCriterion

    rounds = (run_settings or {}).get("rounds")
    analysis = rounds.get("analysis") if isinstance(rounds, dict) else None
    if not isinstance(analysis, dict) or not isinstance(analysis.get("criterion"), dict):
        return None
    try:
        return PosteriorSettings(**{**analysis,
                                    "criterion": KillCriterion(**analysis["criterion"])})
    except (ProbmutError, TypeError):
        return None


def with_verdicts(campaign: Campaign, *, threads: int | None = None,
                  progress: bool = False, cache=None) -> Campaign:
    """The campaign with every analysed mutant's verdict (:func:`probmut.recommend.recommend`
    on its instances, the pilot being the whole populations; the campaign's settings and
    seed): what ``summarize_campaign(verdicts=True)`` gives, in a second step (the figures
    of the page can be drawn meanwhile). ``cache``: a :class:`~probmut.io.cache.Cache` of
    the verdicts' simulated blocks (recommend's own keys: a mutant whose populations,
    settings and seed are unchanged is not simulated again).
    """
    from probmut.progress import progress as progress_bar
    from probmut.recommend import recommend, simulate_verdicts

    settings, mutants, notes = campaign.settings, [], list(campaign.notes)
    judged = [m for m in campaign.mutants if m.populations is not None]
    with progress_bar(len(judged), f"verdicts {campaign.model}", enabled=progress,
                      unit="mutant") as bar:
        # every mutant's simulated blocks at once (the same numbers, a third of the work)
        cache = simulate_verdicts([(*m.populations, m.paired) for m in judged], settings,
                                  seed=campaign.seed, threads=threads, cache=cache,
                                  done=bar.update)
        for m in campaign.mutants:
            if m.populations is None:
                mutants.append(m)
                continue
            own: list[str] = []
            with _noted(own):
                # The verdict alone (no table of sizes): its blocks do not depend on them.
                advice = recommend(*m.populations, settings, sizes=(), paired=m.paired,
                                   seed=campaign.seed, threads=threads, cache=cache, name=m.name)
            verdict = {"verdict": advice.verdict, "p_killed": advice.p_killed,
                       "needed": advice.needed, "message": advice.message}
            mutants.append(replace(m, verdict=verdict,
                                   notes=tuple(dict.fromkeys((*m.notes, *own)))))
            notes += own
    return replace(campaign, mutants=tuple(mutants), verdicts=True,
                   notes=tuple(dict.fromkeys(notes)))


class _noted(warnings.catch_warnings):
    """Warnings inside become lines of ``notes`` (a short population's are left out: the
    summary's status says it)."""

    def __init__(self, notes: list):
        super().__init__(record=True)
        self.notes = notes

    def __enter__(self):
        self.caught = super().__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        from probmut.io.completeness import IncompleteRunWarning

        super().__exit__(*exc)
        self.notes += [str(w.message) for w in self.caught
                       if not issubclass(w.category, IncompleteRunWarning)]


def _campaign(manifest, model, settings, seed, threads, coverage, progress, notes):
    from probmut.bagging import bagged_posteriors
    from probmut.io.populations import has_symptom_records, instances_so_far, read_population
    from probmut.io.records import FAILED
    from probmut.io.rounds import read_rounds
    from probmut.progress import progress as progress_bar

    folder = manifest.path.parent
    rounds = read_rounds(folder / "rounds.json")
    healthy_path = manifest.healthy(model)
    mutations = list(manifest.mutations(model))
    files = [healthy_path] + [f for m in mutations for f in m.files]
    records = {f: instances_so_far(f) for f in files}

    def count(path: Path, name: str) -> PopulationCount:
        target = manifest.target(path)
        failures = None
        if records[path] and has_symptom_records(path):
            statuses = [r.status for r in records[path]]
            failures = {s: statuses.count(s) for s in sorted(FAILED) if s in statuses}
        return PopulationCount(name, str(path.relative_to(folder)) if path.is_relative_to(
            folder) else str(path), len(records[path]), None if target is None else target[1],
            path.is_file(), failures)

    healthy = read_population(healthy_path, name="healthy") if records[healthy_path] else None
    enough = healthy is not None and len(healthy) >= settings.sample
    if not enough:
        held = "no instance yet" if healthy is None else f"{len(healthy)} usable instances"
        notes.append(f"{healthy_path}: {held}, fewer than the sample size k = "
                     f"{settings.sample}: no mutant can be analysed (lower the sample size, "
                     "or train more instances)")

    def baseline(paired: bool):
        return bagged_posteriors(healthy, [], settings, paired=paired, seed=seed,
                                 threads=threads).baseline

    symptoms = records[healthy_path] and has_symptom_records(healthy_path)
    outcomes = _outcomes_of(healthy_path, "healthy", notes) if healthy is not None else None
    mutants, mutant_outcomes = [], {}
    total = sum(len(m.files) for m in mutations)
    with progress_bar(total, f"report {model}", enabled=progress, unit="mutant") as bar:
        for mutation in mutations:
            for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
                name = f"{mutation.name}_{magnitude}"
                summary = MutantSummary(name, mutation.name, magnitude, mutation.paired,
                                        count(path, name),
                                        flags=tuple(mutation.flags.get(magnitude, ())))
                own: list[str] = []
                with _noted(own):
                    if not path.is_file():
                        summary = replace(summary, status="missing")
                    elif not records[path]:
                        summary = replace(summary, status="empty")
                    else:
                        summary = _analyse(summary, healthy if enough else None, path,
                                           settings, seed, threads, own)
                        if symptoms and has_symptom_records(path):
                            summary = _with_symptoms(summary, records[healthy_path],
                                                     records[path], settings, own)
                        if outcomes is not None:
                            found = _outcomes_of(path, name, own)
                            if found is not None:
                                mutant_outcomes[name] = found
                mutants.append(replace(summary, rounds=_rounds_of(rounds, name),
                                       notes=tuple(dict.fromkeys(own))))
                bar.update()
    inputs = _inputs(outcomes, mutant_outcomes, notes)
    if inputs is not None:
        found = {m.name: m for m in inputs.mutants}
        mutants = [replace(m, inputs=found.get(m.name)) for m in mutants]
    scored = [m.posterior for m in mutants if m.posterior is not None and not m.flags]
    score = campaign_score(scored, settings, seed) if scored else None
    unpaired = baseline(False) if enough else None
    paired = baseline(True) if enough and any(m.paired for m in mutations) else None
    curves = tuple(_curve(mutation, [m for m in mutants if m.mutation == mutation.name],
                          paired if mutation.paired else unpaired, seed, settings)
                   for mutation in mutations)
    return Campaign(
        model=model, manifest=str(manifest.path),
        description=str(manifest.models[model].get("description", "")),
        data=manifest.models[model].get("data"), settings=settings, seed=seed,
        healthy=count(healthy_path, "healthy"), baseline=unpaired, mutants=tuple(mutants),
        score=score, curves=curves, verdicts=False, inputs=inputs, coverage=coverage,
        rounds_file=str(folder / "rounds.json") if rounds else None,
        operator_scores=tuple(_operator_score(mutation.name, mutants, seed, settings)
                              for mutation in mutations),
        paired_baseline=paired,
        score_rounds=tuple(r for r in rounds or () if "score" in r))


def _operator_score(mutation: str, mutants, seed, settings) -> MutationScore | None:
    """The mutation score of one operator's analysed, unflagged mutants (its own stream)."""
    scored = [m.posterior for m in mutants if m.mutation == mutation
              and m.posterior is not None and not m.flags]
    return mutation_score(scored, seed=generator(seed, "campaign operator score", mutation),
                          mass=settings.mass) if scored else None


def _analyse(summary, healthy, path, settings, seed, threads, notes):
    """The bagged posterior and the test on whole populations of a mutant."""
    from probmut.bagging import bagged_posteriors
    from probmut.io.populations import read_population
    from probmut.io.records import AllFailedError
    from probmut.killtest import kill_test

    try:
        mutant = read_population(path, name=summary.magnitude)
    except AllFailedError:
        return replace(summary, status="failed")
    if healthy is None:
        return replace(summary, status="too few", usable=len(mutant))
    h, m = aligned_populations(healthy, mutant, summary.paired, notes)
    if m is None or min(len(h), len(m)) < settings.sample:
        return replace(summary, status="too few", usable=len(mutant))
    study = bagged_posteriors(h, [m], settings, paired=summary.paired, seed=seed, threads=threads)
    return replace(summary, usable=len(mutant), study=study, populations=(h, m),
                   test=kill_test(h, m, settings.criterion))


def _with_symptoms(summary, healthy_records, records, settings, notes):
    """The mutant's symptoms, from its records as read once per file
    (:func:`probmut.io.populations.instances_so_far`)."""
    from probmut.symptoms import classify

    try:
        found = classify(healthy_records, records, summary.name, settings.criterion,
                         summary.paired)
    except ProbmutError as error:
        notes.append(f"symptoms of {summary.name}: {error}")
        return summary
    return replace(summary, symptoms=found)


def _outcomes_of(path: Path, name: str, notes):
    """A population's per-input outcomes (``{stem}.outcomes.npz``), or None."""
    from probmut.inputs import Outcomes
    from probmut.io.records import AllFailedError

    found = path.with_name(f"{path.stem}.outcomes.npz")
    if not found.is_file():
        return None
    try:
        return Outcomes.load(found, name=name)
    except AllFailedError:
        return None
    except ProbmutError as error:
        notes.append(str(error))
        return None


def _inputs(healthy, mutants: dict, notes):
    """Per-input killing of every mutant with outcomes (:func:`probmut.inputs.analyse_inputs`)."""
    from probmut.inputs import analyse_inputs

    if healthy is None or not mutants:
        return None
    try:
        return analyse_inputs(healthy, list(mutants.values()))
    except ProbmutError as error:
        notes.append(f"per-input killing: {error}")
        return None


def _rounds_of(rounds, name: str) -> tuple[dict, ...]:
    if not rounds:
        return ()
    return tuple({"round": r.get("round"), "instances": r["instances"].get(name),
                  **r.get("verdicts", {})[name]}
                 for r in rounds if name in r.get("verdicts", {}))


def _curve(mutation, mutants, baseline, seed, settings) -> KillCurve:
    fitted = {m.magnitude: m.posterior for m in mutants if m.posterior is not None
              and not m.flags}
    excluded = tuple(m.magnitude for m in mutants if m.magnitude not in fitted)
    if not fitted:
        return KillCurve(mutation.name, (), None, "no analysed magnitude", np.zeros(0),
                         np.zeros(0), np.zeros(0), excluded=excluded)
    return kill_curve(mutation.name, fitted, excluded=excluded,
                      baseline=None if baseline is None else baseline.mean,
                      mass=settings.mass, seed=seed)
