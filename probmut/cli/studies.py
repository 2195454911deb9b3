"""Study subcommands: ``mce``, ``sample-size``, ``recommend`` and ``replicate``.

They reuse the shared argument helpers of :mod:`probmut.cli.analysis` (populations by file
or manifest, kill criterion, bagged-posterior settings, seed/threads/json).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from probmut import paper
from probmut.cli.analysis import SAVED_RATES_FIX, saved_rates_reason
from probmut.cli.args import (
    PAPER_HELP_MCE,
    PLOT_DIR,
    RenamedOption,
    add_cache_arguments,
    add_criterion_arguments,
    add_plot_arguments,
    add_population_arguments,
    add_posterior_arguments,
    add_run_arguments,
    cache_from,
    comma_list,
    figure_path,
    integer,
    number,
    posterior_settings_from,
    refuse_given,
    resolve_inputs,
    writable_directory,
)
from probmut.cli.emit import emit, emit_many, emit_with_figure, tests_progress
from probmut.errors import ProbmutError
from probmut.results import listing

# --- mce ------------------------------------------------------------------------------------

def _run_mce(args) -> int:
    from probmut.io.arrays import load_kill_rates
    from probmut.mce import mce_from_kill_counts, monte_carlo_error

    settings = posterior_settings_from(args, "mce_settings")
    if args.kill_rates:
        if args.files or args.model:
            raise ProbmutError("give either --kill-rates or populations, not both")
        refuse_given(args, (*SAVED_RATES_FIX, "repetitions", "mutation", "magnitudes",
                            "manifest", "cache", "no_cache"),
                     saved_rates_reason("repetitions and bootstraps are the file's rows and "
                                        "columns"))
        counts = load_kill_rates(args.kill_rates, settings.trials)
        if counts.ndim != 2 or counts.shape[0] < 2:
            raise ProbmutError(f"{args.kill_rates}: needs an R x B array of kill rates, one row "
                               f"per repetition and at least 2 rows; got shape {counts.shape}",
                               option="kill_rates")
        emit(args, mce_from_kill_counts(counts, settings, name=Path(args.kill_rates).stem,
                                        source="saved kill rates"))
        return 0
    inputs = resolve_inputs(args)
    inputs.require(settings.sample, f"the sample size k = {settings.sample}", "sample")
    cache = cache_from(args)
    total = len(inputs.mutants) * args.repetitions * settings.bootstraps * settings.trials
    with tests_progress(args, total, "mce") as bar:
        results = [monte_carlo_error(inputs.healthy, mutant, settings,
                                     repetitions=args.repetitions, paired=inputs.paired,
                                     seed=args.seed, threads=args.threads, name=mutant.name,
                                     report=bar.update, cache=cache)
                   for mutant in inputs.mutants]
    emit_many(args, results)
    return 0


# --- sample-size and recommend ---------------------------------------------------------------

def _run_sample_size(args) -> int:
    from probmut.sample_size import default_sizes, sample_size_study

    inputs = resolve_inputs(args)
    settings = posterior_settings_from(args, "study_settings")
    inputs.require(settings.sample, f"the sample size k = {settings.sample}", "sample")
    cache = cache_from(args)
    studies = []
    for healthy, mutant in inputs.pairs():
        sizes = args.sizes or default_sizes(min(len(healthy), len(mutant)), settings.sample)
        studies.append(sample_size_study(
            healthy, mutant, settings, sizes=sizes, subpopulations=args.subpopulations,
            repetitions=args.repetitions, paired=inputs.paired, seed=args.seed,
            threads=args.threads, cache=cache, progress=not args.quiet, name=mutant.name))
    figure = figure_path(args, inputs.model or "sample_size", f"{inputs.label}_sample_size.png")
    if figure:
        from probmut.plots import plot_sample_size, save

        save(plot_sample_size(studies, title=inputs.label.replace("_", " ")), figure)
    documents = [s.to_dict() for s in studies]
    emit_with_figure(args, documents[0] if len(documents) == 1 else listing(documents),
                     "\n\n".join(str(s) for s in studies), figure)
    return 0


def _first(population, count: int | None):
    """The first ``count`` instances of a population (all of them without ``--pilot``)."""
    if count is None:
        return population
    if count > len(population):
        raise ProbmutError(f"--pilot {count}: {population.where} holds only {len(population)} "
                           "instances", option="pilot")
    return population.subset(population.ids[:count])


def _run_recommend(args) -> int:
    from probmut.recommend import DEFAULT_SIZES, recommend

    inputs = resolve_inputs(args)
    settings = posterior_settings_from(args, "study_settings")
    sizes = args.sizes or DEFAULT_SIZES
    cache = cache_from(args)
    results = []
    for healthy, mutant in inputs.pairs():
        results.append(recommend(
            _first(healthy, args.pilot), _first(mutant, args.pilot), settings, sizes=sizes,
            simulations=args.simulations, certainty=args.certainty, reference=args.reference,
            needed_up_to=args.needed_up_to, looks=args.looks, paired=inputs.paired,
            seed=args.seed,
            threads=args.threads, cache=cache, progress=not args.quiet, name=mutant.name))
    emit_many(args, results)
    return 0


# --- replicate --------------------------------------------------------------------------------

def _run_replicate(args) -> int:
    from probmut.replicate import PARTS, replicate

    parts = args.only or list(PARTS)
    writable_directory(Path(args.out), "output", "out")
    if args.cache and not args.no_cache:
        writable_directory(Path(args.cache), "cache", "cache")
    report = replicate(Path(args.out), quick=args.quick, threads=args.threads, seed=args.seed,
                       cache_dir=None if args.no_cache else args.cache, manifest=args.manifest,
                       parts=parts, progress=not args.quiet)
    emit(args, report)
    return 0


# --- registration -----------------------------------------------------------------------------

def _add_sample_size_arguments(parser: argparse.ArgumentParser):
    add_population_arguments(parser)
    add_criterion_arguments(parser, PAPER_HELP_MCE)
    add_posterior_arguments(parser)
    group = parser.add_argument_group("population-size study")
    group.add_argument("--sizes", type=comma_list(int, "population sizes"),
                       help="comma-separated population sizes (default: the "
                                       "paper's 25,50,...,175,190 for 200 instances; else 8 "
                                       "sizes up to 95%% of the population)")
    group.add_argument("--subpopulations", type=integer(2), default=30,
                       help="random sub-populations per size, at least 2: their spread is "
                            "the band (default: 30)")
    group.add_argument("--repetitions", type=integer(2), default=paper.REPETITIONS,
                       help="R repetitions of the whole bagging per sub-population, for its "
                            f"Monte-Carlo error (default: {paper.REPETITIONS}, the paper's R)")
    add_cache_arguments(group)
    add_run_arguments(parser)


def _add_recommend_arguments(parser: argparse.ArgumentParser):
    from probmut import recommend as defaults

    add_population_arguments(parser)
    add_criterion_arguments(parser, PAPER_HELP_MCE)
    add_posterior_arguments(parser)
    group = parser.add_argument_group("pilot verdict and predictions for fresh instances")
    group.add_argument("--pilot", type=integer(1), metavar="N",
                       help="use only the first N instances of each population as the pilot "
                            "(e.g. to try it on the bundled data)")
    group.add_argument("--sizes", type=comma_list(int, "population sizes"),
                       help="comma-separated population sizes per side to predict "
                                       f"(default: {','.join(map(str, defaults.DEFAULT_SIZES))})")
    group.add_argument("--simulations", type=integer(10), default=defaults.SIMULATIONS,
                       metavar="N",
                       help="simulated populations per size and for the verdict's first block "
                            f"(default: {defaults.SIMULATIONS})")
    group.add_argument("--populations", type=integer(10), dest="simulations",
                       action=RenamedOption, new="--simulations")
    group.add_argument("--certainty", type=number(0.5, 1, low_open=True, high_open=True),
                       default=defaults.CERTAINTY,
                       help="predicted probability of the large-population decision at which "
                            "one look settles the verdict; over --looks, 1 - CERTAINTY bounds the "
                            "chance of a wrong settled verdict for any true effect "
                            f"(default: {defaults.CERTAINTY})")
    group.add_argument("--looks", type=comma_list(int, "instance counts"),
                       metavar="N1,N2,...",
                       help="instances per side at which you look at the verdict, in "
                            "increasing order, this pilot's size among them (e.g. "
                            "20,30,...,200 when judging after every "
                            "round of 10): the verdict then settles only at the threshold that "
                            "keeps wrong settled verdicts under 1 - CERTAINTY over all the looks "
                            "(default: this pilot only)")
    group.add_argument("--reference", type=integer(2), default=defaults.REFERENCE_SIZE,
                       help="instances per side of the large population whose decision the "
                            f"verdict predicts (default: {defaults.REFERENCE_SIZE})")
    group.add_argument("--needed-up-to", type=integer(2), default=defaults.NEEDED_UP_TO,
                       metavar="N", help="largest population per side to propose for an "
                                         "unsettled verdict; beyond it, needed is null "
                                         f"(default: {defaults.NEEDED_UP_TO})")
    add_cache_arguments(group)
    add_run_arguments(parser)


def register(subparsers) -> None:
    mce = subparsers.add_parser(
        "mce", help="Monte-Carlo error of the bagged posterior (R repetitions, jackknife)",
        description="Repeat the bagged posterior R times with fresh randomness and report the "
                    "average posterior mean and variance with their jackknife standard errors "
                    "(METHOD.md section 5). --paper: the paper's least-squares fit on its 0.01 "
                    "grid (curve_fit per repetition) and its jackknife. Writes each mutant's "
                    "kill counts to .probmut_cache/ (--cache DIR, --no-cache); prints a table "
                    "or --json.")
    add_population_arguments(mce)
    mce.add_argument("--kill-rates", metavar="FILE.npy",
                     help="analyse saved kill rates instead: an R x B array, one row per "
                          "repetition")
    add_criterion_arguments(mce, PAPER_HELP_MCE)
    add_posterior_arguments(mce)
    group = mce.add_argument_group("Monte-Carlo error")
    group.add_argument("--repetitions", type=integer(2), default=paper.REPETITIONS,
                       help=f"R repetitions of the whole bagging (default: "
                            f"{paper.REPETITIONS}, the paper's R)")
    add_cache_arguments(group, "each mutant's kill counts")
    add_run_arguments(mce)
    mce.set_defaults(resumes=True, func=_run_mce)

    sample_size = subparsers.add_parser(
        "sample-size", help="how the posterior settles with the number of instances",
        description="The population-size study (METHOD.md section 6): for each size n, the MCE "
                    "analysis on random sub-populations of n instances; median and 95% band "
                    "of the estimates and their MCE bounds, and the Figure 4/5 plot. Sizes "
                    "above half of the population are flagged: their sub-populations overlap "
                    "(for how many instances to train, see `probmut recommend`). Writes the "
                    "figure to figures/MODEL/NAME_sample_size.png (--plot FILE, --no-plot) and "
                    "its cached chunks to .probmut_cache/ (--cache DIR, --no-cache).")
    _add_sample_size_arguments(sample_size)
    add_plot_arguments(sample_size, "figures/MODEL/NAME_sample_size.png")
    sample_size.set_defaults(resumes=True, func=_run_sample_size)

    recommend = subparsers.add_parser(
        "recommend", help="is a pilot enough? a verdict, and predictions for fresh instances",
        description="From a pilot (from about 20 instances per side): per mutant, the verdict "
                    "killed / not killed / not settled that a large population would reach, "
                    "with the pilot's own uncertainty; for 'not settled', the instances per "
                    "side that would settle it; and, for fresh populations of each size, the "
                    "predicted 95% band of the posterior mean and the share reaching the same "
                    "decision (docs/recommend.md).")
    _add_recommend_arguments(recommend)
    recommend.set_defaults(resumes=True, func=_run_recommend)

    rep = subparsers.add_parser(
        "replicate", help="regenerate the paper's figures and tables from raw_data/",
        description="Figure 3 for every mutation of the manifest, Figures 4/5, the motivating "
                    "experiment (table and figure), DeepCrime's single-test table and the ratio "
                    "table, with the paper's settings. Writes them under plot_results/ (--out "
                    "DIR); results are cached in OUT/.probmut_cache (a rerun computes nothing "
                    "again, only draws the figures, and an interrupted run resumes).")
    rep.add_argument("--quick", action="store_true",
                     help="reduced settings (about a minute; for CI), not the paper's numbers")
    rep.add_argument("--out", default=str(PLOT_DIR),
                     help=f"output directory (default: {PLOT_DIR})")
    rep.add_argument("--only", type=comma_list(str, "parts"),
                     help="comma-separated parts: figure3 (with the ratio table), "
                                    "deepcrime, motivating, sample-size (default: all)")
    add_cache_arguments(rep, "results", default="OUT/.probmut_cache")
    rep.add_argument("--manifest", help="manifest TOML (default: the bundled raw_data)")
    add_run_arguments(rep, json_help="print the list of files written as JSON")
    rep.set_defaults(resumes=True, func=_run_replicate)
