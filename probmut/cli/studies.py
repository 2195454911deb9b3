"""Study subcommands: ``mce``, ``sample-size``, ``recommend`` and ``replicate``.

They reuse the shared argument helpers of :mod:`probmut.cli.analysis` (populations by file
or manifest, kill criterion, bagged-posterior settings, seed/jobs/json).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from probmut.cli.args import (
    PAPER_HELP_MCE,
    PLOT_DIR,
    add_criterion_arguments,
    add_plot_arguments,
    add_population_arguments,
    add_posterior_arguments,
    add_run_arguments,
    figure_path,
    integer,
    number,
    posterior_settings_from,
    resolve_inputs,
    writable_directory,
)
from probmut.cli.emit import emit, emit_many, emit_with_figure
from probmut.errors import ProbmutError
from probmut.results import dumps

DEFAULT_CACHE = Path(".probmut_cache")


# --- mce ------------------------------------------------------------------------------------

def _run_mce(args) -> int:
    from probmut.io.populations import load_kill_rates
    from probmut.mce import mce_from_kill_counts, monte_carlo_error

    settings = posterior_settings_from(args, "mce_settings")
    if args.kill_rates:
        if args.files or args.model:
            raise ProbmutError("give either --kill-rates or populations, not both")
        counts = load_kill_rates(args.kill_rates, settings.trials)
        if counts.ndim != 2 or counts.shape[0] < 2:
            raise ProbmutError(f"{args.kill_rates}: needs an R x B array of kill rates, one row "
                               f"per repetition and at least 2 rows; got shape {counts.shape}",
                               option="kill_rates")
        emit(args, mce_from_kill_counts(counts, settings,
                                        name=Path(args.kill_rates).stem, paired=args.paired,
                                        source="saved kill rates"))
        return 0
    inputs = resolve_inputs(args)
    inputs.require(settings.sample, f"the sample size k = {settings.sample}", "sample")
    results = [monte_carlo_error(inputs.healthy, mutant, settings, repetitions=args.repetitions,
                                 paired=inputs.paired, seed=args.seed,
                                 jobs=args.jobs, name=mutant.name)
               for mutant in inputs.mutants]
    emit_many(args, results, "results")
    return 0


# --- sample-size and recommend ---------------------------------------------------------------

def _sizes(text: str | None, available: int, sample: int) -> list[int]:
    from probmut.sample_size import default_sizes

    if not text:
        return default_sizes(available, sample)
    try:
        sizes = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        sizes = []
    if not sizes:
        raise ProbmutError(f"expected comma-separated integers, got {text!r}", option="sizes")
    return sizes


def _studies(args):
    from probmut.io.cache import Cache
    from probmut.io.populations import pair
    from probmut.sample_size import sample_size_study

    inputs = resolve_inputs(args)
    settings = posterior_settings_from(args, "study_settings")
    inputs.require(settings.sample, f"the sample size k = {settings.sample}", "sample")
    cache = Cache(None if args.no_cache else
                  writable_directory(Path(args.cache), "cache", "cache"))
    studies = []
    for mutant in inputs.mutants:
        healthy = inputs.healthy
        if inputs.paired:
            healthy, mutant = pair(healthy, mutant)
        sizes = _sizes(args.sizes, min(len(healthy), len(mutant)), settings.sample)
        studies.append(sample_size_study(
            healthy, mutant, settings, sizes=sizes, subpopulations=args.subpopulations,
            repetitions=args.repetitions, paired=inputs.paired,
            seed=args.seed, jobs=args.jobs, tolerance=args.tolerance,
            agreement=args.agreement, cache=cache, progress=not args.quiet, name=mutant.name))
    return inputs, studies


def _run_sample_size(args) -> int:
    inputs, studies = _studies(args)
    figure = figure_path(args, inputs.model or "sample_size", f"{inputs.label}_sample_size.png")
    if figure:
        from probmut.plots import plot_sample_size, save

        save(plot_sample_size(studies, title=inputs.label.replace("_", " ")), figure)
    documents = [s.to_dict() for s in studies]
    emit_with_figure(args, documents[0] if len(documents) == 1 else {"studies": documents},
                     "\n\n".join(str(s) for s in studies), figure)
    return 0


def _run_recommend(args) -> int:
    _, studies = _studies(args)
    if args.json:
        documents = [{"name": s.name} | s.recommendation.to_dict() for s in studies]
        print(dumps(documents[0] if len(documents) == 1 else {"recommendations": documents},
                         indent=2))
    else:
        print("\n\n".join(f"{s.name}:\n{s.recommendation}" for s in studies))
    return 0


# --- replicate --------------------------------------------------------------------------------

def _run_replicate(args) -> int:
    from probmut.replicate import PARTS, replicate

    parts = args.only.split(",") if args.only else list(PARTS)
    report = replicate(Path(args.out), quick=args.quick, jobs=args.jobs, seed=args.seed,
                       cache_dir=None if args.no_cache else args.cache, manifest=args.manifest,
                       parts=parts, progress=not args.quiet)
    print(report.to_json() if args.json else report)
    return 0


# --- registration -----------------------------------------------------------------------------

def _add_study_arguments(parser: argparse.ArgumentParser):
    add_population_arguments(parser)
    add_criterion_arguments(parser, PAPER_HELP_MCE)
    add_posterior_arguments(parser)
    group = parser.add_argument_group("population-size study")
    group.add_argument("--sizes", help="comma-separated population sizes (default: the "
                                       "paper's 25,50,...,175,190 for 200 instances; else 8 "
                                       "sizes up to 95%% of the population)")
    group.add_argument("--subpopulations", type=integer(1), default=30,
                       help="random sub-populations per size (default: 30)")
    group.add_argument("--repetitions", type=integer(2), default=100,
                       help="R repetitions of the whole bagging per sub-population, for its "
                            "Monte-Carlo error (default: 100)")
    group.add_argument("--tolerance", type=number(1e-6, 1), default=0.1,
                       help="largest acceptable width of the 95%% band of the posterior mean "
                            "(default: 0.1)")
    group.add_argument("--agreement", type=number(0.5, 1), default=0.95,
                       help="share of sub-populations that must reach the same decision "
                            "(default: 0.95)")
    group.add_argument("--cache", default=str(DEFAULT_CACHE),
                       help="directory of cached chunks: reruns are instant and an interrupted "
                            f"run resumes (default: {DEFAULT_CACHE})")
    group.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    add_run_arguments(parser)


def register(subparsers) -> None:
    mce = subparsers.add_parser(
        "mce", help="Monte-Carlo error of the bagged posterior (R repetitions, jackknife)",
        description="Repeat the bagged posterior R times with fresh randomness and report the "
                    "average posterior mean and variance with their jackknife standard errors "
                    "(METHOD.md section 5). --paper: the paper's least-squares fit on its 0.01 "
                    "grid (curve_fit per repetition) and its jackknife. Writes nothing; prints "
                    "a table or --json.")
    add_population_arguments(mce)
    mce.add_argument("--kill-rates", metavar="REPS.npy",
                     help="analyse saved kill rates instead: an R x B array, one row per "
                          "repetition")
    add_criterion_arguments(mce, PAPER_HELP_MCE)
    add_posterior_arguments(mce)
    mce.add_argument("--repetitions", type=integer(2), default=100,
                     help="R repetitions of the whole bagging (default: 100)")
    add_run_arguments(mce)
    mce.set_defaults(func=_run_mce)

    sample_size = subparsers.add_parser(
        "sample-size", help="how the posterior settles with the number of instances",
        description="The population-size study (METHOD.md section 6): for each size n, the MCE "
                    "analysis on random sub-populations of n instances; median and 95% band "
                    "of the estimates and their MCE bounds, the Figure 4/5 plot, and the "
                    "recommended number of instances. Writes the figure to "
                    "figures/MODEL/NAME_sample_size.png (--plot FILE, --no-plot) and its "
                    "cached chunks to .probmut_cache/ (--cache DIR, --no-cache).")
    _add_study_arguments(sample_size)
    add_plot_arguments(sample_size, "figures/MODEL/NAME_sample_size.png")
    sample_size.set_defaults(func=_run_sample_size)

    recommend = subparsers.add_parser(
        "recommend", help="how many instances to train (run it on a pilot population)",
        description="The recommendation of the population-size study alone: the smallest n at "
                    "which the decision is the same in at least 95% of sub-populations and "
                    "the 95% band of the posterior mean is narrower than --tolerance; if not "
                    "reached, what the trend suggests.")
    _add_study_arguments(recommend)
    recommend.set_defaults(func=_run_recommend)

    rep = subparsers.add_parser(
        "replicate", help="regenerate the paper's figures and tables from raw_data/",
        description="Figure 3 for every mutation of the manifest, Figures 4/5, the motivating "
                    "experiment (table and figure), DeepCrime's single-test table and the ratio "
                    "table, with the paper's settings. Writes them under plot_results/ (--out "
                    "DIR); results are cached in OUT/.probmut_cache (re-plotting is instant "
                    "and an interrupted run resumes).")
    rep.add_argument("--quick", action="store_true",
                     help="reduced settings (about a minute; for CI), not the paper's numbers")
    rep.add_argument("--out", default=str(PLOT_DIR),
                     help=f"output directory (default: {PLOT_DIR})")
    rep.add_argument("--only", help="comma-separated parts: figure3 (with the ratio table), "
                                    "deepcrime, motivating, sample-size (default: all)")
    rep.add_argument("--cache", default=None,
                     help="cache directory (default: OUT/.probmut_cache)")
    rep.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    rep.add_argument("--manifest", help="manifest TOML (default: the bundled raw_data)")
    add_run_arguments(rep, json_help="print the list of files written as JSON")
    rep.set_defaults(func=_run_replicate)
