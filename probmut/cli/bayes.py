"""The ``bayes`` subcommand: model-based posterior of the kill probability (PyMC).

Registering the command imports nothing heavy; PyMC and ArviZ are imported when the
command runs, and their absence is a plain error (exit 2) saying what to install.
"""

from __future__ import annotations

import os

from probmut.cli.args import (
    add_criterion_arguments,
    add_plot_arguments,
    add_population_arguments,
    add_run_arguments,
    criterion_from,
    figure_path,
    resolve_inputs,
)
from probmut.cli.emit import emit_with_figure


def _run_bayes(args) -> int:
    from probmut.bayes import BayesSettings, model_posteriors

    settings = BayesSettings(
        draws=args.draws, tune=args.tune, chains=args.chains,
        cores=min(args.chains, args.jobs or os.cpu_count() or 1),
        likelihood=args.likelihood, tests=args.tests, sample=args.sample,
        criterion=criterion_from(args))
    inputs = resolve_inputs(args)
    study = model_posteriors(inputs.healthy, inputs.mutants, settings, paired=inputs.paired,
                             seed=args.seed)
    figure = figure_path(args, args.model or "bayes", f"{inputs.label}_bayes.png")
    if figure:
        from probmut.plots import plot_bayes

        plot_bayes(study, figure, title=inputs.label.replace("_", " ") + " (model-based)")
    emit_with_figure(args, study.to_dict(), str(study), figure)
    return 0


def register(subparsers) -> None:
    bayes = subparsers.add_parser(
        "bayes", help="model-based posterior of the kill probability (PyMC; probmut[bayes])",
        description="Fit a robust Bayesian model (Student-t, BEST) to the healthy and mutant "
                    "accuracies (paired: per-instance differences), simulate k-vs-k kill tests "
                    "from it, and report the posterior of the kill probability, of the mean "
                    "accuracy difference and of Cohen's d, with ArviZ diagnostics.")
    add_population_arguments(bayes, many_mutants=False)
    add_criterion_arguments(bayes)
    group = bayes.add_argument_group("model and sampler")
    group.add_argument("--likelihood", choices=("student-t", "normal"), default="student-t",
                       help="accuracy model: robust Student-t (default) or normal")
    group.add_argument("--draws", type=int, default=1000, help="NUTS draws per chain (1000)")
    group.add_argument("--tune", type=int, default=1000, help="NUTS tuning steps per chain (1000)")
    group.add_argument("--chains", type=int, default=2, help="chains, at least 2 (2)")
    group.add_argument("--tests", type=int, default=100,
                       help="simulated k-vs-k tests per posterior draw (100)")
    group.add_argument("--sample", type=int, default=20, help="k instances per side (20)")
    add_plot_arguments(bayes, "plot_results/MODEL/NAME_bayes.png")
    add_run_arguments(bayes)
    bayes.set_defaults(func=_run_bayes)
