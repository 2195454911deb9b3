"""The ``bayes`` subcommand: model-based posterior of the kill probability (nutpie or PyMC).

Its choices and defaults are the library's (:mod:`probmut.bayes`, which imports ArviZ
and the samplers only when a model is fitted): registering the command imports nothing
heavy, and the absence of the ``bayes`` extra is a plain error (exit 2) when the command
runs, saying what to install.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from probmut.bayes import LIKELIHOODS, SAMPLERS, BayesSettings, model_posteriors
from probmut.cli.args import (
    add_criterion_arguments,
    add_plot_arguments,
    add_population_arguments,
    add_run_arguments,
    add_sample_argument,
    criterion_from,
    figure_path,
    integer,
    resolve_inputs,
    writable_file,
)
from probmut.cli.emit import emit_with_figure

_DEFAULTS = BayesSettings()


def _run_bayes(args) -> int:
    settings = BayesSettings(
        draws=args.draws, tune=args.tune, chains=args.chains,
        cores=min(args.chains, args.threads or os.cpu_count() or 1),
        sampler=args.sampler, likelihood=args.likelihood, trials=args.trials, sample=args.sample,
        criterion=criterion_from(args))
    inputs = resolve_inputs(args)
    inputs.require(3, "the 3 the model needs per population")
    figure = figure_path(args, args.model or "bayes", f"{inputs.label}_bayes.png")
    trace = (writable_file(Path(args.save_trace), "trace", "save_trace")
             if args.save_trace else None)
    study = model_posteriors(inputs.healthy, inputs.mutants, settings, paired=inputs.paired,
                             seed=args.seed, progress=not args.quiet)
    if trace:
        for path in study.save_traces(trace):
            print(f"trace: {path}", file=sys.stderr)
    if figure:
        from probmut.plots import plot_bayes, save

        save(plot_bayes(study, title=inputs.label.replace("_", " ") + " (model-based)"), figure)
    emit_with_figure(args, study.to_dict(), str(study), figure)
    return 0


def register(subparsers) -> None:
    bayes = subparsers.add_parser(
        "bayes", help="model-based posterior of the kill probability (probmut[bayes])",
        description="Fit a robust Bayesian model (Student-t, BEST) to the healthy and mutant "
                    "accuracies (paired: per-instance differences), simulate k-vs-k kill tests "
                    "from it, and report the posterior of the kill probability, of the mean "
                    "accuracy difference and of Cohen's d, with ArviZ diagnostics. Writes the "
                    "figure to figures/MODEL/NAME_bayes.png (--plot FILE, --no-plot) and, with "
                    "--save-trace FILE.nc, the ArviZ traces.")
    add_population_arguments(bayes, many_mutants=False)
    add_criterion_arguments(bayes)
    group = bayes.add_argument_group("model and sampler")
    group.add_argument("--likelihood", choices=LIKELIHOODS, default=_DEFAULTS.likelihood,
                       help="accuracy model: robust Student-t or normal "
                            f"(default: {_DEFAULTS.likelihood})")
    group.add_argument("--sampler", choices=SAMPLERS, default=_DEFAULTS.sampler,
                       help="NUTS implementation: nutpie's, on the model compiled once and "
                            "cached, or PyMC's own, which compiles it for every fit; the same "
                            f"posterior, other draws (default: {_DEFAULTS.sampler})")
    group.add_argument("--draws", type=integer(1, 10**6), default=_DEFAULTS.draws,
                       help=f"NUTS draws per chain (default: {_DEFAULTS.draws})")
    group.add_argument("--tune", type=integer(1, 10**6), default=_DEFAULTS.tune,
                       help=f"NUTS tuning steps per chain (default: {_DEFAULTS.tune})")
    group.add_argument("--chains", type=integer(2, 64), default=_DEFAULTS.chains,
                       help=f"chains, at least 2 for R-hat (default: {_DEFAULTS.chains})")
    group.add_argument("--trials", type=integer(1, 10**6), default=_DEFAULTS.trials, metavar="N",
                       help="simulated k-vs-k kill tests per posterior draw "
                            f"(default: {_DEFAULTS.trials})")
    add_sample_argument(group)
    group.add_argument("--save-trace", metavar="FILE.nc",
                       help="keep the ArviZ InferenceData of each fit as netCDF (several "
                            "mutants: FILE_MUTANT.nc); read it with arviz.from_netcdf")
    add_plot_arguments(bayes, "figures/MODEL/NAME_bayes.png")
    add_run_arguments(bayes, threads_help="threads of the simulated kill tests, and chains "
                                          "sampled at once (at most --chains)")
    bayes.set_defaults(func=_run_bayes)
