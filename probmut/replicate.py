"""The whole paper in one call: every figure and table from the bundled populations.

``replicate(out)`` writes, with the paper's settings (``quick=True``: reduced ones):

- ``{model}/{model}_{mutation}.png``: Figure 3 for every mutation of the manifest, and
  ``ratio_table.csv``: posterior mean, interval, H_sound, H_mutant, ratio, decision;
- ``deepcrime_table.csv``: DeepCrime's single test on its own 20 vs 20 instances;
- ``motivating_table.csv`` and ``motivating.png``: the motivating experiment (MNIST
  delete_training_data; METHOD.md section 2) and its figure against k = 20..90;
- ``sample_size/{model}_{mutation}_{magnitude}.csv`` and
  ``{model}/{model}_{mutation}_sample_size.png``: Figures 4/5 for the paper's
  configurations.

Every Monte-Carlo result is cached under ``out/.probmut_cache`` (keyed by the
accuracies, settings and seed): a second run computes nothing again, an interrupted run
resumes. Figures are not cached: every run draws them all, which is most of a cached
rerun's time (the report says how long).
"""

from __future__ import annotations

import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probmut import paper, seeds
from probmut.bagging import PosteriorSettings
from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write_text
from probmut.io.cache import Cache, cache_key
from probmut.io.manifest import Manifest
from probmut.io.populations import read_population
from probmut.progress import progress as progress_display
from probmut.results import Result
from probmut.validation import renamed

PARTS = ("figure3", "deepcrime", "motivating", "sample-size")
DEEPCRIME_SUFFIX = "_dc"


@dataclass(frozen=True)
class Plan:
    """Settings of one replication: the paper's, or reduced ones for a quick check."""

    posterior: PosteriorSettings
    study: PosteriorSettings
    sizes: tuple[int, ...]
    subpopulations: int
    repetitions: int
    motivating_repetitions: int
    motivating_ks: tuple[int, ...]

    @classmethod
    def full(cls) -> Plan:
        return cls(paper.posterior_settings(), paper.study_settings(), paper.SIZES,
                   paper.SUBPOPULATIONS, paper.REPETITIONS, paper.MOTIVATING_REPETITIONS,
                   paper.MOTIVATING_KS)

    @classmethod
    def quick(cls) -> Plan:
        return cls(paper.posterior_settings(bootstraps=20, trials=50),
                   paper.study_settings(bootstraps=20, trials=50), (25, 100, 190), 10, 10, 10,
                   (20, 55, 90))


@dataclass
class _Written:
    """What a replication has written so far: its files, and the figures it drew with the
    time that took (never cached: every run draws every figure)."""

    files: list = field(default_factory=list)
    figures: int = 0
    drawing_seconds: float = 0.0

    @contextmanager
    def drawing(self):
        """Time a figure's drawing."""
        start = time.perf_counter()
        yield
        self.figures += 1
        self.drawing_seconds += time.perf_counter() - start


@dataclass(frozen=True)
class ReplicateReport(Result):
    """What a replication wrote, how long each part took, and the cache's use."""

    out: Path
    quick: bool
    files: tuple = ()
    seconds: dict = field(default_factory=dict)
    cache_hits: int = 0
    cache_misses: int = 0
    figures: int = 0
    drawing_seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"out": str(self.out), "quick": self.quick,
                "files": [str(f) for f in self.files],
                "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
                "cache_hits": self.cache_hits, "cache_misses": self.cache_misses,
                "figures": self.figures, "drawing_seconds": round(self.drawing_seconds, 2)}

    index = "file"

    def rows(self) -> list[dict]:
        return [{"file": str(f)} for f in self.files]

    def __str__(self) -> str:
        mode = "quick (reduced settings)" if self.quick else "the paper's settings"
        lines = [f"replicate: {len(self.files)} files under {self.out} ({mode})"]
        lines += [f"  {part:<12}{seconds:8.1f} s" for part, seconds in self.seconds.items()]
        lines.append(f"  figures: {self.figures} drawn in {self.drawing_seconds:.1f} s (not "
                     "cached: every run draws them)")
        lines.append(f"  cache: {self.cache_hits} results reused, {self.cache_misses} computed")
        lines += [f"  {f}" for f in self.files]
        return "\n".join(lines)


def _write_frame(frame, path: Path, written: _Written) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, frame.to_csv(float_format="%.6g"))
    written.files.append(path)


def _figure3(manifest, plan, out, cache, seed, threads, written, bar):
    import pandas as pd

    from probmut.bagging import bagged_posteriors, study_from_kill_counts
    from probmut.plots import plot_posteriors, save

    rows = []
    for model in manifest.model_names():
        if model.endswith(DEEPCRIME_SUFFIX):
            continue
        for mutation in manifest.mutations(model):
            healthy = read_population(mutation.healthy, name="healthy")
            mutants = [read_population(f, name=m)
                       for m, f in zip(mutation.magnitudes, mutation.files, strict=True)]
            names = ["healthy"] + list(mutation.magnitudes)
            key = cache_key("posterior", healthy.values, healthy.ids,
                            [(m.values, m.ids) for m in mutants], mutation.paired,
                            plan.posterior, seed)
            bootstraps = plan.posterior.bootstraps
            stored = cache.get(key, shapes={"baseline": (bootstraps,),
                                            "mutants": (len(mutants), bootstraps)})
            if stored is None:
                study = bagged_posteriors(healthy, mutants, plan.posterior,
                                          paired=mutation.paired, seed=seed, threads=threads,
                                          names=names)
                cache.put(key, baseline=study.baseline.kill_counts,
                          mutants=np.array([p.kill_counts for p in study.populations[1:]]))
            else:
                study = study_from_kill_counts(stored["baseline"], list(stored["mutants"]),
                                               names, plan.posterior, mutation.paired, seed,
                                               source="populations")
            label = f"{model}_{mutation.name}"
            with written.drawing():
                written.files.append(save(plot_posteriors(study, title=label.replace("_", " ")),
                                         out / model / f"{label}.png"))
            for post in study.populations:
                rows.append({"model": model, "mutation": mutation.name} | post.to_dict())
            bar.update()
    _write_frame(pd.DataFrame(rows).set_index(["model", "mutation", "name"]),
                 out / "ratio_table.csv", written)


def _deepcrime(manifest, out, written, bar):
    import pandas as pd

    from probmut.killtest import kill_test

    rows = []
    for model in manifest.model_names():
        if not model.endswith(DEEPCRIME_SUFFIX):
            continue
        for mutation in manifest.mutations(model):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                healthy = read_population(mutation.healthy, name="healthy")
                for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
                    result = kill_test(healthy, read_population(path, name=magnitude),
                                       paper.criterion())
                    rows.append({"model": model.removesuffix(DEEPCRIME_SUFFIX),
                                 "mutation": mutation.name, "magnitude": magnitude,
                                 "p_value": result.p_value, "effect_size": result.effect_size,
                                 "killed": result.killed, "n_healthy": result.n_healthy,
                                 "n_mutant": result.n_mutant,
                                 "note": _relative_note(caught, manifest.path.parent)})
                    caught.clear()
            bar.update()
    _write_frame(pd.DataFrame(rows).set_index(["model", "mutation", "magnitude"]),
                 out / "deepcrime_table.csv", written)


def _relative_note(caught, data_root) -> str:
    """The warnings of one row, files named relative to the data folder, so that the
    table is the same on every machine."""
    prefix = f"{data_root}{os.sep}"
    return "; ".join(str(w.message).replace(prefix, "") for w in caught)


def _motivating(manifest, plan, out, cache, seed, written, bar):
    import pandas as pd

    from probmut.plots import plot_motivating, save
    from probmut.repeat import RepeatResult, repeated_tests

    model, name = paper.MOTIVATING
    mutation = manifest.mutation(model, name)
    healthy = read_population(mutation.healthy, name="healthy")
    populations = [healthy] + [read_population(f, name=m)
                               for m, f in zip(mutation.magnitudes, mutation.files, strict=True)]
    criterion = plan.posterior.criterion
    series = {}
    for index, population in enumerate(populations):
        results = []
        for k in sorted(set(plan.motivating_ks) | {20}):
            key = cache_key("repeat", healthy.values, population.values, k,
                            plan.motivating_repetitions, criterion, seed, index)
            stored = cache.get(key, shapes={"pass_rates": (plan.motivating_repetitions,)})
            if stored is None:
                result = repeated_tests(healthy, population,
                                        repetitions=plan.motivating_repetitions,
                                        trials=paper.MOTIVATING_TESTS, sample=k,
                                        pool=len(healthy) // 2, paired=mutation.paired,
                                        criterion=criterion,
                                        seed=seeds.stream(seed, "paper repeat", index, k))
                cache.put(key, pass_rates=result.pass_rates)
            else:
                result = RepeatResult(population.name, stored["pass_rates"],
                                      paper.MOTIVATING_TESTS, k)
            results.append(result)
        series["healthy" if index == 0 else population.name] = results
        bar.update()
    rows = [{"population": label, "pass_rate_mean": r.mean, "pass_rate_sd": r.sd,
             "repetitions": r.pass_rates.size, "trials": r.trials}
            for label, results in series.items() for r in results if r.sample == 20]
    _write_frame(pd.DataFrame(rows).set_index("population"), out / "motivating_table.csv",
                 written)
    with written.drawing():
        figure = plot_motivating({label: [r for r in results if r.sample in plan.motivating_ks]
                                  for label, results in series.items()},
                                 title=f"{model} {name}: one DeepCrime test, k vs k")
        written.files.append(save(figure, out / "motivating.png"))


def _sample_size(manifest, plan, out, cache, seed, threads, written, bar):
    from probmut.plots import plot_sample_size, save
    from probmut.sample_size import sample_size_study

    for model, name, magnitudes in paper.SAMPLE_SIZE_CONFIGS:
        mutation = manifest.mutation(model, name)
        healthy = read_population(mutation.healthy, name="healthy")
        studies = []
        for magnitude in magnitudes:
            mutant = read_population(mutation.file_for(magnitude), name=magnitude)
            study = sample_size_study(healthy, mutant, plan.study, sizes=plan.sizes,
                                      subpopulations=plan.subpopulations,
                                      repetitions=plan.repetitions, paired=mutation.paired,
                                      seed=seed, threads=threads, cache=cache,
                                      name=f"{name} {magnitude}")
            _write_frame(study.to_frame(),
                         out / "sample_size" / f"{model}_{name}_{magnitude}.csv", written)
            studies.append(study)
            bar.update()
        with written.drawing():
            figure = plot_sample_size(studies,
                                      title=f"{model} {name.replace('_', ' ')}: population size")
            written.files.append(save(figure, out / model / f"{model}_{name}_sample_size.png"))


@renamed(jobs="threads")
def replicate(out, *, quick: bool = False, threads: int | None = None,
              seed: int = seeds.DEFAULT_SEED, cache_dir=None, manifest=None, parts=PARTS,
              progress: bool = False) -> ReplicateReport:
    """Regenerate the paper's figures and tables under ``out`` (see the module doc).

    Parameters
    ----------
    out : path-like
        The output directory (the paper's ``plot_results``).
    quick : bool, optional
        Reduced settings (B = 20, N = 50, R = 10, 3 sizes, 10 sub-populations).
    threads : int, optional
        Engine threads (None: all cores); the numbers do not depend on them.
    seed : int, optional
        The seed (the paper's: 42).
    cache_dir : path-like or False, optional
        The cache directory (default ``out/.probmut_cache``); ``False``: no cache.
    manifest : path-like, optional
        The manifest (default: the bundled ``raw_data/manifest.toml``).
    parts : sequence of str, optional
        A subset of :data:`PARTS`.
    progress : bool, optional
        Show progress on stderr (see :func:`probmut.progress.progress`).

    Returns
    -------
    ReplicateReport
        What was written under ``out``, how long each part took, the cache's use.

    Raises
    ------
    ProbmutError
        For an unknown part, or a manifest or population file that cannot be read.
    """
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ProbmutError(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    out = Path(out)
    manifest = Manifest.load(manifest)
    plan = Plan.quick() if quick else Plan.full()
    cache = Cache(None if cache_dir is False else (cache_dir or out / ".probmut_cache"))
    written, seconds = _Written(), {}
    models = manifest.model_names()
    steps = {"figure3": sum(len(manifest.mutation_names(m)) for m in models
                            if not m.endswith(DEEPCRIME_SUFFIX)),
             "deepcrime": sum(len(manifest.mutation_names(m)) for m in models
                              if m.endswith(DEEPCRIME_SUFFIX)),
             "motivating": len(manifest.mutation(*paper.MOTIVATING).magnitudes) + 1,
             "sample-size": sum(len(c[2]) for c in paper.SAMPLE_SIZE_CONFIGS)}
    runners = {"figure3": lambda bar: _figure3(manifest, plan, out, cache, seed, threads, written,
                                               bar),
               "deepcrime": lambda bar: _deepcrime(manifest, out, written, bar),
               "motivating": lambda bar: _motivating(manifest, plan, out, cache, seed, written,
                                                     bar),
               "sample-size": lambda bar: _sample_size(manifest, plan, out, cache, seed, threads,
                                                       written, bar)}
    for part in PARTS:
        if part not in parts:
            continue
        start = time.perf_counter()
        with progress_display(steps[part], f"replicate {part}", enabled=progress) as bar:
            runners[part](bar)
        seconds[part] = time.perf_counter() - start
    return ReplicateReport(out, quick, tuple(written.files), seconds, cache.hits, cache.misses,
                           written.figures, written.drawing_seconds)

