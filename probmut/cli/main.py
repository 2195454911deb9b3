"""The ``probmut`` command: parse arguments, call the API, print.

Each feature module registers its own subcommands through a ``register(subparsers)``
function listed in ``_COMMAND_MODULES``; a handler returns the exit code. Bad input
raises :class:`probmut.errors.ProbmutError`, printed here without a traceback (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from probmut.errors import EXIT_BAD_INPUT, ProbmutError

_COMMAND_MODULES = [
    "probmut.cli.analysis",
    "probmut.cli.train",
    "probmut.cli.studies",
    "probmut.cli.bayes",
    "probmut.cli.inputs",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="probmut",
        description="Probabilistic mutation testing for deep neural networks.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"probmut: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ProbmutError as error:
        print(f"probmut {args.command}: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"probmut {args.command}: interrupted; completed work is kept, run the same "
              "command again to resume", file=sys.stderr)
        return 130

