"""Argument groups every analysis subcommand shares, and how they become inputs.

Populations come as files (``HEALTHY MUTANT [MUTANT ...]``) or through a manifest
(``--model mnist --mutation delete_training_data [--magnitudes 3.1,9.29]``); the kill
criterion, the bagged-posterior settings, seeds, threads and output flags read the same
in every command.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.manifest import Manifest
from probmut.io.populations import Population, read_population
from probmut.killtest import DIRECTIONS, KINDS, KillCriterion

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


def _decimals(text: str) -> int | str:
    if text.strip().lower() == "none":
        return "none"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of decimals or 'none', got {text!r}") from None


#: What ``--paper`` sets, by command family; explicit flags always win over it.
PAPER_HELP_CRITERION = ("the paper's kill rule: p rounded to 3 decimals, alpha 0.05, two-sided "
                        "|d| >= 0.5; an option given explicitly wins over it")
PAPER_HELP_POSTERIOR = ("the paper's choices: its kill rule (p rounded to 3 decimals, alpha 0.05, "
                        "|d| >= 0.5), least-squares Beta fit (curve_fit, grid 0.001), interval "
                        "mean +- 1.96 sd; options given explicitly win over it")
PAPER_HELP_MCE = ("the paper's MCE code: its kill rule (p rounded to 3 decimals, |d| >= 0.5), "
                  "least-squares Beta fit on the 0.01 grid, its jackknife; options given "
                  "explicitly win over it")


def add_criterion_arguments(parser: argparse.ArgumentParser,
                            paper_help: str = PAPER_HELP_CRITERION):
    group = parser.add_argument_group("kill criterion")
    group.add_argument("--criterion", choices=KINDS, default="deepcrime",
                       help="the test: deepcrime (GLM z-test + Cohen's d, the default), welch "
                            "(Welch's t-test + Cohen's d) or mannwhitney (Mann-Whitney U + "
                            "Vargha-Delaney A12)")
    group.add_argument("--alpha", type=float, default=None,
                       help="significance level (default 0.05)")
    group.add_argument("--effect", default=None, metavar="SIZE",
                       help="effect-size threshold: a number or small/medium/large (default "
                            "medium). Cohen's d for deepcrime/welch (0.2/0.5/0.8); A12 in "
                            "[0.5, 1] for mannwhitney (0.56/0.64/0.71)")
    group.add_argument("--direction", choices=DIRECTIONS, default=None,
                       help="two-sided |d| (the paper; the default), mutant-worse (DeepCrime, "
                            "classifiers) or mutant-better (DeepCrime, regression)")
    group.add_argument("--round-p", type=_decimals, default=None, metavar="DECIMALS",
                       help="round p to DECIMALS before comparing, as DeepCrime reads it from "
                            "statsmodels' summary (3); 'none' compares the exact p (the "
                            "default)")
    group.add_argument("--paper", action="store_true", help=paper_help)


def add_run_arguments(parser: argparse.ArgumentParser, json_help: str = "print one JSON document"):
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"random seed (default {DEFAULT_SEED}); same seed, same numbers")
    parser.add_argument("--jobs", type=int, default=None,
                        help="threads for the Monte-Carlo engine (default: all cores); "
                             "results do not depend on it")
    parser.add_argument("--json", action="store_true", help=json_help)


def criterion_from(args) -> KillCriterion:
    """The kill criterion: ``--paper``'s (or the default) with every explicit flag on top."""
    from probmut import paper

    base = paper.criterion(args.criterion) if args.paper else KillCriterion(kind=args.criterion)
    given = {"alpha": args.alpha, "effect": args.effect, "direction": args.direction,
             "round_p": None if args.round_p == "none" else args.round_p}
    explicit = {key: value for key, value in given.items()
                if value is not None or (key == "round_p" and args.round_p == "none")}
    return replace(base, **explicit)


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


def add_plot_arguments(parser: argparse.ArgumentParser, default: str):
    parser.add_argument("--plot", metavar="FILE", help=f"figure file (default {default})")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the figure")


def figure_path(args, folder: str, name: str) -> Path | None:
    """Where to draw: ``--plot FILE``, else ``plot_results/FOLDER/NAME``; None with --no-plot."""
    if args.no_plot:
        return None
    return Path(args.plot) if args.plot else PLOT_DIR / folder / name


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


def posterior_settings_from(args, preset: str = "posterior_settings"):
    """Bagged-posterior settings: the defaults, or ``--paper``'s preset (``preset`` names
    the function of :mod:`probmut.paper`), with every explicit flag on top."""
    from probmut import paper
    from probmut.posterior import PosteriorSettings

    base = (getattr(paper, preset)(criterion=criterion_from(args)) if args.paper
            else PosteriorSettings(criterion=criterion_from(args)))
    overrides = {"bootstraps": args.bootstraps, "trials": args.trials, "sample": args.sample,
                 "threshold": args.threshold}
    if args.fit:
        overrides["fit"] = args.fit
    if args.interval:
        overrides["interval"] = args.interval
    return replace(base, **overrides)


def manifest_magnitudes(args):
    if not (args.model and args.mutation):
        return None
    magnitudes = Manifest.load(args.manifest).mutation(args.model, args.mutation).magnitudes
    return list(args.magnitudes.split(",") if args.magnitudes else magnitudes)

