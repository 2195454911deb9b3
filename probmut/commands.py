"""Analysis subcommands: ``kill``, ``repeat``, ``posterior``; and the argument helpers
every analysis subcommand shares (population inputs, kill criterion, seeds, output).

Populations come as files (``HEALTHY MUTANT [MUTANT ...]``) or through a manifest
(``--model mnist --mutation delete_training_data [--magnitudes 3.1,9.29]``).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path

from probmut.data import Population, pair, read_population
from probmut.errors import ProbmutError
from probmut.experiments import Manifest
from probmut.killtest import DIRECTIONS, KINDS, TEST_NAMES, KillCriterion

DEFAULT_SEED = 42
PLOT_DIR = Path("plot_results")


@dataclass
class Inputs:
    """Populations resolved from the command line."""

    healthy: Population
    mutants: list[Population]
    paired: bool
    model: str | None = None
    mutation: str | None = None

    @property
    def label(self) -> str:
        if self.model:
            return f"{self.model}_{self.mutation}" if self.mutation else self.model
        return "_".join(m.name for m in self.mutants[:3]) or self.healthy.name


# --- shared arguments ---------------------------------------------------------------------

def add_population_arguments(parser: argparse.ArgumentParser, many_mutants: bool = True):
    """``HEALTHY MUTANT...`` files, or ``--model/--mutation`` through a manifest."""
    parser.add_argument("files", nargs="*", metavar="HEALTHY MUTANT",
                        help="population files: the healthy one, then "
                             + ("one or more mutants" if many_mutants else "the mutant")
                             + " (DeepCrime CSV or tidy CSV 'instance,accuracy')")
    group = parser.add_argument_group("populations by name (from a manifest)")
    group.add_argument("--model", help="model name in the manifest, e.g. mnist")
    group.add_argument("--mutation", help="mutation name, e.g. delete_training_data")
    group.add_argument("--magnitudes", help="comma-separated subset of magnitudes (default all)")
    group.add_argument("--manifest", help="manifest TOML (default: bundled raw_data/manifest.toml "
                                          "or $PROBMUT_MANIFEST)")
    parser.add_argument("--paired", action="store_true",
                        help="model-level mutation: mutant i derived from healthy i (pairs by "
                             "instance id; implied by the manifest for such mutations)")
    parser.add_argument("--strict", action="store_true",
                        help="a missing accuracy is an error instead of a dropped instance")


def add_criterion_arguments(parser: argparse.ArgumentParser):
    group = parser.add_argument_group("kill criterion")
    group.add_argument("--criterion", choices=KINDS, default="deepcrime",
                       help="the test: deepcrime (GLM z-test + Cohen's d, the default), welch "
                            "(Welch's t-test + Cohen's d) or mannwhitney (Mann-Whitney U + "
                            "Vargha-Delaney A12)")
    group.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    group.add_argument("--effect", default=None, metavar="SIZE",
                       help="effect-size threshold: a number or small/medium/large (default "
                            "medium). Cohen's d for deepcrime/welch (0.2/0.5/0.8); A12 in "
                            "[0.5, 1] for mannwhitney (0.56/0.64/0.71)")
    group.add_argument("--direction", choices=DIRECTIONS, default="two-sided",
                       help="two-sided |d| (the paper), mutant-worse (DeepCrime, classifiers) "
                            "or mutant-better (DeepCrime, regression)")
    group.add_argument("--round-p", type=int, default=None, metavar="DECIMALS",
                       help="round p as DeepCrime reads it from statsmodels' summary (3)")
    group.add_argument("--paper", action="store_true",
                       help="exactly the paper's choices (p rounded to 3 decimals, |d|, "
                            "least-squares Beta fit, normal-approximation interval)")


def add_run_arguments(parser: argparse.ArgumentParser, json_help: str = "print one JSON document"):
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"random seed (default {DEFAULT_SEED}); same seed, same numbers")
    parser.add_argument("--jobs", type=int, default=None,
                        help="threads for the Monte-Carlo engine (default: all cores); "
                             "results do not depend on it")
    parser.add_argument("--json", action="store_true", help=json_help)


def criterion_from(args) -> KillCriterion:
    if args.paper:
        return KillCriterion.paper(args.criterion)
    return KillCriterion(alpha=args.alpha, effect=args.effect, direction=args.direction,
                         round_p=args.round_p, kind=args.criterion)


def resolve_inputs(args, need_mutants: bool = True) -> Inputs:
    """Read the populations named on the command line (files or manifest)."""
    if args.model:
        if args.files:
            raise ProbmutError("give either population files or --model/--mutation, not both")
        manifest = Manifest.load(args.manifest)
        healthy = read_population(manifest.healthy(args.model), name="healthy",
                                  strict=args.strict)
        if not args.mutation:
            if need_mutants:
                raise ProbmutError(f"--model {args.model} needs --mutation (one of "
                                   f"{', '.join(manifest.mutation_names(args.model))})")
            return Inputs(healthy, [], args.paired, args.model)
        mutation = manifest.mutation(args.model, args.mutation)
        chosen = (args.magnitudes.split(",") if args.magnitudes else mutation.magnitudes)
        mutants = [read_population(mutation.file_for(m.strip()), name=m.strip(),
                                   strict=args.strict) for m in chosen]
        return Inputs(healthy, mutants, args.paired or mutation.paired, args.model, args.mutation)
    if args.mutation or args.magnitudes:
        raise ProbmutError("--mutation and --magnitudes need --model")
    if not args.files:
        raise ProbmutError("give the population files (HEALTHY MUTANT ...) or --model/--mutation")
    if need_mutants and len(args.files) < 2:
        raise ProbmutError("give a healthy population file and at least one mutant file")
    healthy, *mutants = [read_population(f, strict=args.strict) for f in args.files]
    return Inputs(healthy, mutants, args.paired)


def emit(args, result) -> None:
    """Print a result: its JSON document with ``--json``, else its readable table."""
    print(result.to_json() if args.json else result)


def add_plot_arguments(parser: argparse.ArgumentParser, default: str):
    parser.add_argument("--plot", metavar="FILE", help=f"figure file (default {default})")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the figure")


def figure_path(args, folder: str, name: str) -> Path | None:
    """Where to draw: ``--plot FILE``, else ``plot_results/FOLDER/NAME``; None with --no-plot."""
    if args.no_plot:
        return None
    return Path(args.plot) if args.plot else PLOT_DIR / folder / name


def emit_with_figure(args, document: dict, text: str, figure: Path | None) -> None:
    """Print a result that drew a figure: JSON with a "figure" key, or text and its path."""
    if args.json:
        print(json.dumps(document | {"figure": str(figure) if figure else None}, indent=2))
    else:
        print(text)
        if figure:
            print(f"figure: {figure}")


# --- kill ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class KillTable:
    names: list
    results: list

    def to_json(self) -> str:
        if len(self.results) == 1:
            return json.dumps(self.results[0].to_dict() | {"name": self.names[0]}, indent=2)
        return json.dumps({"tests": [r.to_dict() | {"name": n}
                                     for n, r in zip(self.names, self.results, strict=True)]},
                          indent=2, default=str)

    def __str__(self) -> str:
        if len(self.results) == 1:
            return f"{self.names[0]}: {self.results[0]}"
        first = self.results[0]
        effect = "A12" if first.kind == "mannwhitney" else "d"
        lines = [f"{TEST_NAMES[first.kind]} on whole populations (kill iff {first.criterion})",
                 f"{'population':<24}{'n_h':>5}{'n_m':>5}{'p-value':>10}{effect:>9}  decision"]
        lines += [f"{n:<24}{r.n_healthy:>5}{r.n_mutant:>5}{r.p_value:>10.4g}"
                  f"{r.effect_size:>9.4f}  {'KILLED' if r.killed else 'not killed'}"
                  for n, r in zip(self.names, self.results, strict=True)]
        return "\n".join(lines)


def _run_kill(args) -> int:
    from probmut.killtest import deepcrime_test

    inputs = resolve_inputs(args)
    criterion = criterion_from(args)
    results = []
    for mutant in inputs.mutants:
        healthy = inputs.healthy
        if inputs.paired:
            healthy, mutant = pair(healthy, mutant)
        results.append(deepcrime_test(healthy, mutant, criterion))
    emit(args, KillTable([m.name for m in inputs.mutants], results))
    return 0


# --- repeat -------------------------------------------------------------------------------

def _run_repeat(args) -> int:
    from probmut.repeat import RepeatStudy, repeated_tests

    inputs = resolve_inputs(args)
    criterion = criterion_from(args)
    populations = [inputs.healthy] + inputs.mutants
    names = ["healthy (false positives)"] + [m.name for m in inputs.mutants]
    results = tuple(
        repeated_tests(inputs.healthy, population, repetitions=args.repetitions,
                       tests=args.tests, sample=args.sample, pool=args.pool,
                       paired=inputs.paired, criterion=criterion, seed=args.seed, name=name)
        for population, name in zip(populations, names, strict=True))
    emit(args, RepeatStudy(results, criterion, inputs.paired, args.seed))
    return 0


# --- posterior ----------------------------------------------------------------------------

def posterior_settings_from(args):
    from probmut.posterior import PosteriorSettings

    base = (PosteriorSettings.paper(criterion=criterion_from(args)) if args.paper
            else PosteriorSettings(criterion=criterion_from(args)))
    overrides = {"bootstraps": args.bootstraps, "trials": args.trials, "sample": args.sample,
                 "threshold": args.threshold}
    if args.fit:
        overrides["fit"] = args.fit
    if args.interval:
        overrides["interval"] = args.interval
    return replace(base, **overrides)


def _run_posterior(args) -> int:
    from probmut.data import load_kill_rates
    from probmut.posterior import bagged_posteriors, study_from_kill_counts

    settings = posterior_settings_from(args)
    if args.kill_rates:
        if len(args.kill_rates) != 2 or args.files:
            raise ProbmutError("--kill-rates takes two files: BASELINE.npy MUTANTS.npy")
        baseline = load_kill_rates(args.kill_rates[0], settings.trials)
        mutants = load_kill_rates(args.kill_rates[1], settings.trials)
        mutants = mutants[None, :] if mutants.ndim == 1 else mutants
        if baseline.ndim != 1 or mutants.ndim != 2:
            raise ProbmutError("--kill-rates: BASELINE must be 1-D (B,), MUTANTS (B,) or "
                               "(mutants, B)")
        names = ["healthy"] + (args.names.split(",") if args.names else
                               _manifest_magnitudes(args) or
                               [f"mutant {i}" for i in range(1, len(mutants) + 1)])
        if len(names) != len(mutants) + 1:
            raise ProbmutError(f"{len(names) - 1} names for {len(mutants)} mutant rows")
        study = study_from_kill_counts(baseline, list(mutants), names, settings,
                                       paired=args.paired, source="saved kill rates")
        label = f"{args.model}_{args.mutation}" if args.model else Path(args.kill_rates[1]).stem
    else:
        inputs = resolve_inputs(args)
        study = bagged_posteriors(inputs.healthy, inputs.mutants, settings, paired=inputs.paired,
                                  seed=args.seed, jobs=args.jobs)
        label = inputs.label
    figure = figure_path(args, args.model or "posterior", f"{label}.png")
    if figure:
        from probmut.plots import plot_posteriors

        plot_posteriors(study, figure, title=label.replace("_", " "))
    emit_with_figure(args, study.to_dict(), str(study), figure)
    return 0


def _manifest_magnitudes(args):
    if not (args.model and args.mutation):
        return None
    magnitudes = Manifest.load(args.manifest).mutation(args.model, args.mutation).magnitudes
    return list(args.magnitudes.split(",") if args.magnitudes else magnitudes)


def add_posterior_arguments(parser: argparse.ArgumentParser):
    group = parser.add_argument_group("bagged posterior")
    group.add_argument("--bootstraps", type=int, default=100, help="B resamples (100)")
    group.add_argument("--trials", type=int, default=100, help="N tests per resample (100)")
    group.add_argument("--sample", type=int, default=20, help="k instances per side (20)")
    group.add_argument("--fit", choices=("moments", "lsq"), default=None,
                       help="Beta summary: moment matching (default) or least squares (paper)")
    group.add_argument("--interval", choices=("hdi", "equal-tailed", "normal"), default=None,
                       help="credible interval: highest-density (default), equal-tailed, or "
                            "the paper's mean +- 1.96 sd")
    group.add_argument("--threshold", type=float, default=1.0,
                       help="killed iff ratio H_sound/H_mutant > threshold (1)")


def register(subparsers) -> None:
    kill = subparsers.add_parser(
        "kill", help="one DeepCrime decision from two whole populations",
        description="DeepCrime's statistical test (GLM p-value + Cohen's d) on the whole "
                    "populations, as DeepCrime does with its 20 vs 20 instances.")
    add_population_arguments(kill)
    add_criterion_arguments(kill)
    kill.add_argument("--json", action="store_true", help="print one JSON document")
    kill.set_defaults(func=_run_kill)

    repeat = subparsers.add_parser(
        "repeat", help="the DeepCrime test repeated over random instance subsets",
        description="The motivating experiment: pass rate of repeated k-vs-k DeepCrime tests "
                    "with fresh sound/unknown pools, mean (sd); the healthy population "
                    "against itself gives the false-positive rate.")
    add_population_arguments(repeat)
    add_criterion_arguments(repeat)
    repeat.add_argument("--repetitions", type=int, default=50, help="repetitions (50)")
    repeat.add_argument("--tests", type=int, default=100, help="tests per repetition (100)")
    repeat.add_argument("--sample", type=int, default=20, help="k instances per side (20)")
    repeat.add_argument("--pool", type=int, default=None,
                        help="sound pool size (default half the healthy instances)")
    add_run_arguments(repeat)
    repeat.set_defaults(func=_run_repeat)

    posterior = subparsers.add_parser(
        "posterior", help="bagged posteriors, ratios and decisions (the main analysis)",
        description="Bagged posterior of the kill probability for the healthy baseline and "
                    "each mutant, Hellinger distances to the ideal posteriors, ratio and "
                    "decision, and the paper's Figure 3.")
    add_population_arguments(posterior)
    posterior.add_argument("--kill-rates", nargs="+", metavar="NPY",
                           help="analyse saved kill rates instead: BASELINE.npy MUTANTS.npy")
    posterior.add_argument("--names", help="comma-separated mutant names for --kill-rates")
    add_criterion_arguments(posterior)
    add_posterior_arguments(posterior)
    add_plot_arguments(posterior, "plot_results/MODEL/NAME.png")
    add_run_arguments(posterior)
    posterior.set_defaults(func=_run_posterior)

