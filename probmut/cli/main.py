"""The ``probmut`` command: parse arguments, call the API, print.

Each feature module registers its own subcommands through a ``register(subparsers)``
function listed in ``_COMMAND_MODULES``; a handler returns the exit code. Bad input
(a bad option value, or :class:`probmut.errors.ProbmutError` from anywhere below) is
reported in one line without a traceback, with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from probmut import __version__
from probmut.errors import EXIT_BAD_INPUT, ProbmutError

_COMMAND_MODULES = [
    "probmut.cli.analysis",
    "probmut.cli.train",
    "probmut.cli.evaluate",
    "probmut.cli.studies",
    "probmut.cli.bayes",
    "probmut.cli.inputs",
    "probmut.cli.symptoms",
    "probmut.cli.coverage",
    "probmut.cli.report",
]

#: Exit code when the reader of our output went away (``probmut ... | head``): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (``probmut kill: error: ...``), exit 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="probmut",
        description="Probabilistic mutation testing for deep neural networks: kill decisions "
                    "you can trust despite training randomness.",
    )
    parser.add_argument("--version", action="version", version=f"probmut {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    parser.set_defaults(commands=subparsers.choices)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The arguments; an unknown option is reported by the command it was given to, so
    that the message points at that command's help (``probmut kill --help``)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner = args.commands.get(args.command, parser)
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"probmut: warning: {message}", file=sys.stderr)


def flag(option: str) -> str:
    """The command-line flag of a setting: ``sample`` -> ``--sample``."""
    return "--" + option.replace("_", "-")


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go to files; no display needed
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as stop:  # --help, --version, or a bad option (already reported)
        return int(stop.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ProbmutError as error:
        hint = f" ({flag(error.option)})" if error.option else ""
        print(f"probmut {args.command}: error: {error}{hint}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"probmut {args.command}: interrupted; completed work is kept, run the same "
              "command again to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader closed the pipe (e.g. `| head`): stop quietly. Point stdout at
        # /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
