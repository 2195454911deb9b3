"""The ``inputs`` subcommand: per-input killing from the trainer's outcome files."""

from __future__ import annotations

import argparse

from probmut.cli.args import add_strict_argument, integer, number, refuse_repeated_files
from probmut.cli.emit import emit
from probmut.errors import ProbmutError
from probmut.inputs import ALTERNATIVES, CORRECTIONS, Outcomes, analyse_inputs


def parse_input_range(text: str | None, pool: int):
    """``START:STOP`` (Python slice of input indices) or None for every input.

    >>> parse_input_range("10:13", 100).tolist()
    [10, 11, 12]
    """
    if text is None:
        return None
    import numpy as np

    try:
        start, stop = (int(part) if part else None for part in text.split(":"))
    except ValueError:
        raise ProbmutError(f"--inputs takes START:STOP (e.g. 0:1000), got {text!r}") from None
    chosen = np.arange(pool)[slice(start, stop)]
    if chosen.size == 0:
        raise ProbmutError(f"--inputs {text} selects none of the {pool} inputs")
    return chosen


def _run_inputs(args) -> int:
    if len(args.files) < 2:
        raise ProbmutError("give the healthy outcomes file and at least one mutant's "
                           "(HEALTHY.outcomes.npz MUTANT.outcomes.npz ...)")
    refuse_repeated_files(args.files)
    healthy, *mutants = [Outcomes.load(path, strict=args.strict) for path in args.files]
    study = analyse_inputs(healthy, mutants,
                           inputs=parse_input_range(args.inputs, healthy.n_inputs),
                           alpha=args.alpha, correction=args.correction,
                           alternative=args.alternative, threshold=args.majority,
                           show=args.show)
    emit(args, study)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "inputs", help="which test inputs kill each mutant (per-input outcomes)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="DeepMutation's mutation score (majority over instances) and "
                    "monotonic statistical killing (Fisher's exact test per input) from the "
                    "trainer's per-input outcome files, with the inputs that kill. Writes "
                    "nothing; prints a table or --json.")
    parser.add_argument("files", nargs="+", metavar="OUTCOMES.npz",
                        help="the healthy population's {stem}.outcomes.npz, then each mutant's")
    parser.add_argument("--inputs", metavar="START:STOP",
                        help="the test set: a range of input indices (default: all); the "
                             "Bonferroni pool stays all inputs of the files")
    parser.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True),
                        default=0.05,
                        help="family-wise significance threshold of the statistical criterion")
    parser.add_argument("--correction", choices=CORRECTIONS, default="bonferroni",
                        help="bonferroni: per-input threshold alpha / number of inputs in the "
                             "files; none: alpha per input")
    parser.add_argument("--alternative", choices=ALTERNATIVES, default="greater",
                        help="greater: the mutant errs more on the input; two-sided: either way")
    parser.add_argument("--majority", type=number(0, 1, high_open=True), default=0.5,
                        help="DeepMutation majority: a population gets an input right (wrong) "
                             "when more than this fraction of its instances do")
    parser.add_argument("--show", type=integer(0), default=10,
                        help="killing inputs listed per mutant")
    add_strict_argument(parser)
    parser.add_argument("--json", action="store_true",
                        help="one JSON document with every killing input")
    parser.set_defaults(func=_run_inputs)
