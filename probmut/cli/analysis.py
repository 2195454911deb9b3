"""Analysis subcommands: ``kill``, ``repeat`` and ``posterior``."""

from __future__ import annotations

from pathlib import Path

from probmut import paper
from probmut.cli.args import (
    PAPER_HELP_POSTERIOR,
    add_criterion_arguments,
    add_plot_arguments,
    add_population_arguments,
    add_posterior_arguments,
    add_run_arguments,
    add_sample_argument,
    comma_list,
    criterion_from,
    figure_path,
    integer,
    manifest_magnitudes,
    posterior_settings_from,
    refuse_given,
    resolve_inputs,
)
from probmut.cli.emit import emit, emit_with_figure, tests_progress
from probmut.cli.flags import (
    Flagged,
    add_flag_arguments,
    exclude_flagged,
    flags_note,
    manifest_flags,
    with_flags,
)
from probmut.errors import ProbmutError
from probmut.population import pair

#: What saved kill rates fix: options that cannot apply to them (their bootstraps are the
#: files'; the populations, the kill test, its sample size and the seed were the saving
#: run's).
SAVED_RATES_FIX = ("bootstraps", "sample", "criterion", "alpha", "effect", "direction",
                   "round_p", "seed", "threads", "paired", "strict", "exclude_flagged")


def saved_rates_reason(fixed: str) -> str:
    """Why an option cannot apply to saved kill rates; ``fixed`` says what the files fix."""
    return (f"to saved kill rates: their {fixed}, and the kill test, its sample size and the "
            "seed were those of the run that saved them")


def _run_kill(args) -> int:
    from probmut.killtest import kill_tests

    inputs, flags = exclude_flagged(args, resolve_inputs(args), manifest_flags(args))
    inputs.require(2, "the 2 a kill test needs per population")
    emit(args, Flagged(kill_tests(inputs.healthy, inputs.mutants, criterion_from(args),
                                  paired=inputs.paired), flags))
    return 0


def _run_repeat(args) -> int:
    from probmut.repeat import RepeatStudy, repeated_tests

    inputs = resolve_inputs(args)
    criterion = criterion_from(args)
    if inputs.paired:
        inputs.mutants = [pair(inputs.healthy, mutant)[1] for mutant in inputs.mutants]
    populations = [inputs.healthy] + inputs.mutants
    names = ["healthy (false positives)"] + [m.name for m in inputs.mutants]
    total = len(populations) * args.repetitions * args.trials
    with tests_progress(args, total, "repeat") as bar:
        results = tuple(
            repeated_tests(inputs.healthy, population, repetitions=args.repetitions,
                           trials=args.trials, sample=args.sample, pool=args.pool,
                           paired=inputs.paired, criterion=criterion, seed=args.seed,
                           name=name, report=bar.update)
            for population, name in zip(populations, names, strict=True))
    emit(args, RepeatStudy(results, criterion, inputs.paired, args.seed))
    return 0


def _run_posterior(args) -> int:
    from probmut.bagging import bagged_posteriors, study_from_kill_counts
    from probmut.io.arrays import load_kill_rates

    settings = posterior_settings_from(args)
    label = (f"{args.model}_{args.mutation}" if args.model else
             Path(args.kill_rates[-1]).stem if args.kill_rates else
             "_".join(Path(f).stem for f in args.files[1:4]) or "posterior")
    figure = figure_path(args, args.model or "posterior", f"{label}.png")
    flags = None
    if args.kill_rates:
        if len(args.kill_rates) != 2 or args.files:
            raise ProbmutError("--kill-rates takes two files: BASELINE.npy MUTANTS.npy")
        refuse_given(args, SAVED_RATES_FIX, saved_rates_reason("bootstraps come from the files"))
        baseline = load_kill_rates(args.kill_rates[0], settings.trials)
        mutants = load_kill_rates(args.kill_rates[1], settings.trials)
        mutants = mutants[None, :] if mutants.ndim == 1 else mutants
        if baseline.ndim != 1 or mutants.ndim != 2:
            raise ProbmutError("--kill-rates: BASELINE must be 1-D (B,), MUTANTS (B,) or "
                               "(mutants, B)")
        names = ["healthy"] + (args.names or
                               manifest_magnitudes(args) or
                               [f"mutant {i}" for i in range(1, len(mutants) + 1)])
        if len(names) != len(mutants) + 1:
            raise ProbmutError(f"{len(names) - 1} names for {len(mutants)} mutant rows")
        study = study_from_kill_counts(baseline, list(mutants), names, settings,
                                       source="saved kill rates")
    else:
        refuse_given(args, ["names"], "without --kill-rates: populations are named by their "
                     "files or magnitudes")
        inputs, flags = exclude_flagged(args, resolve_inputs(args), manifest_flags(args))
        inputs.require(settings.sample, f"the sample size k = {settings.sample}", "sample")
        total = len(inputs.populations) * settings.bootstraps * settings.trials
        with tests_progress(args, total, "posterior") as bar:
            study = bagged_posteriors(inputs.healthy, inputs.mutants, settings,
                                      paired=inputs.paired, seed=args.seed, threads=args.threads,
                                      report=bar.update)
    if figure:
        from probmut.plots import plot_posteriors, save

        save(plot_posteriors(study, title=label.replace("_", " ")), figure)
    emit_with_figure(args, with_flags(study.to_dict(), flags), str(study) + flags_note(flags),
                     figure)
    return 0


def register(subparsers) -> None:
    kill = subparsers.add_parser(
        "kill", help="one kill decision from two whole populations",
        description="One kill test on the whole populations, as DeepCrime does with its 20 vs "
                    "20 instances: the --criterion chosen (by default DeepCrime's: GLM "
                    "p-value + Cohen's d). Writes nothing; prints a table or --json.")
    add_population_arguments(kill)
    add_criterion_arguments(kill)
    add_flag_arguments(kill)
    kill.add_argument("--json", action="store_true", help="print one JSON document")
    kill.set_defaults(func=_run_kill)

    repeat = subparsers.add_parser(
        "repeat", help="the DeepCrime test repeated over random instance subsets",
        description="The motivating experiment: pass rate of repeated k-vs-k DeepCrime tests "
                    "with fresh sound/unknown pools, mean (sd); the healthy population "
                    "against itself gives the false-positive rate. Writes nothing; prints a "
                    "table or --json.")
    add_population_arguments(repeat)
    add_criterion_arguments(repeat)
    repeat.add_argument("--repetitions", type=integer(1), default=paper.MOTIVATING_REPETITIONS,
                        help="repetitions of the whole experiment, each with fresh pools "
                             f"(default: {paper.MOTIVATING_REPETITIONS}, as the paper's "
                             "motivating experiment; mce and sample-size repeat the bagging "
                             f"{paper.REPETITIONS} times, the paper's R)")
    repeat.add_argument("--trials", type=integer(1), default=100, metavar="N",
                        help="kill tests per repetition (default: 100)")
    add_sample_argument(repeat)
    repeat.add_argument("--pool", type=integer(1), default=None,
                        help="sound pool size (default: half the healthy instances)")
    add_run_arguments(repeat)
    repeat.set_defaults(func=_run_repeat)

    posterior = subparsers.add_parser(
        "posterior", help="bagged posteriors, ratios and decisions (the main analysis)",
        description="Bagged posterior of the kill probability for the healthy baseline and "
                    "each mutant, Hellinger distances to the ideal posteriors, ratio and "
                    "decision, and the paper's Figure 3. Writes the figure to "
                    "figures/MODEL/NAME.png (--plot FILE, --no-plot).")
    add_population_arguments(posterior)
    posterior.add_argument("--kill-rates", nargs="+", metavar="FILE.npy",
                           help="analyse saved kill rates instead: BASELINE.npy MUTANTS.npy")
    posterior.add_argument("--names", type=comma_list(str, "names"),
                           help="comma-separated mutant names for --kill-rates")
    add_criterion_arguments(posterior, PAPER_HELP_POSTERIOR)
    add_posterior_arguments(posterior)
    add_plot_arguments(posterior, "figures/MODEL/NAME.png")
    add_flag_arguments(posterior)
    add_run_arguments(posterior)
    posterior.set_defaults(func=_run_posterior)

