"""``probmut symptoms``: what each mutation did to training (crash, hang, NaN, accuracy
and training-time change), from a run's symptom records."""

from __future__ import annotations

import argparse
from pathlib import Path

from probmut.cli.args import (
    add_criterion_arguments,
    add_plot_arguments,
    add_strict_argument,
    criterion_from,
    figure_path,
)
from probmut.cli.emit import emit_with_figure
from probmut.errors import ProbmutError


def _manifest_path(args) -> Path:
    if args.run and args.manifest:
        raise ProbmutError("give a run directory or --manifest, not both")
    if args.manifest:
        return Path(args.manifest)
    if not args.run:
        raise ProbmutError("give a run directory (with manifest.toml) or --manifest FILE")
    run = Path(args.run)
    return run / "manifest.toml" if run.is_dir() else run


def _run_symptoms(args) -> int:
    from probmut.io.manifest import Manifest
    from probmut.symptoms import study_from_manifest

    manifest = Manifest.load(_manifest_path(args))
    study = study_from_manifest(manifest, args.model, criterion_from(args), strict=args.strict)
    figure = figure_path(args, "symptoms", f"{study.label}.png")
    if figure:
        from probmut.plots import plot_symptoms, save

        save(plot_symptoms(study, title=f"symptoms: {study.label}"), figure)
    emit_with_figure(args, study.to_dict(), str(study), figure)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "symptoms", help="what each mutation did to training: crash, hang, NaN, accuracy "
                         "and time change",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Classify each mutant population of a run after Jia et al. (SANER "
                    "2022): crash, hang, nan when most of its instances crashed, timed out or "
                    "diverged; else no observable difference, insignificant or significant "
                    "accuracy change (Jia et al.'s two-tailed t-test at 0.05: Student's, "
                    "paired for model-level mutants), with the failed instances, the kill "
                    "criterion's effect size and the training-time change with its own test "
                    "(see docs/symptoms.md).",
        epilog="example:\n  probmut symptoms runs/digits\n"
               "  probmut symptoms --manifest raw_data/manifest.toml --model mnist --no-plot")
    parser.add_argument("run", nargs="?", metavar="RUN_DIR",
                        help="a run directory written by probmut train (its manifest.toml)")
    parser.add_argument("--manifest", help="a manifest file instead of a run directory")
    parser.add_argument("--model", help="the model in the manifest (default: its first)")
    add_criterion_arguments(parser)
    add_strict_argument(parser)
    add_plot_arguments(parser, "figures/symptoms/MODEL.png")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=_run_symptoms)
