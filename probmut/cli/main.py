"""The ``probmut`` command: parse arguments, call the API, print.

Each feature module registers its own subcommands through a ``register(subparsers)``
function, named for each command in ``_COMMANDS``; a handler returns the exit code. Bad input
(a bad option value, or :class:`probmut.errors.ProbmutError` from anywhere below) is
reported in one line without a traceback, with exit code 2, and so are a request too large
for the memory (numpy's MemoryError) and an operating-system error on a named file (a
name too long, a folder where a file is wanted, no permission). Ctrl-C stops any command
with one line and exit code 130; a command that keeps its completed work (it sets the
default ``resumes=True``; ``--no-cache`` turns it off) says that rerunning it resumes, and
so it says after a full disk (exit 2, the file named).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from probmut import __version__
from probmut.cli.args import flag
from probmut.errors import EXIT_BAD_INPUT, ProbmutError

#: Each command and the module that registers it, in the order ``probmut --help`` lists
#: them. A command given on the command line imports its own module only: the others'
#: registration imports (their settings, their choices) would only delay its start.
_COMMANDS = {
    "kill": "probmut.cli.analysis", "repeat": "probmut.cli.analysis",
    "posterior": "probmut.cli.analysis",
    "train": "probmut.cli.train",
    "evaluate": "probmut.cli.evaluate",
    "mce": "probmut.cli.studies", "sample-size": "probmut.cli.studies",
    "recommend": "probmut.cli.studies", "replicate": "probmut.cli.studies",
    "bayes": "probmut.cli.bayes",
    "inputs": "probmut.cli.inputs",
    "symptoms": "probmut.cli.symptoms",
    "coverage": "probmut.cli.coverage",
    "report": "probmut.cli.report",
}

#: Exit code when the reader of our output went away (``probmut ... | head``): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141
#: Exit code after Ctrl-C: 128 + SIGINT, as shells report it.
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (``probmut kill: error: ...``), exit 2,
    and a record of the options given on the command line (``args.given``, their dests),
    so that a command can refuse an option that cannot apply, even at its default value."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.given: set[str] = set()

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _get_values(self, action, arg_strings):
        # argparse calls this for each action found on the command line, and only those.
        if action.option_strings:
            self.given.add(action.dest)
        return super()._get_values(action, arg_strings)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command, or with ``command`` (one of them) the
    commands of its module only."""
    parser = Parser(
        prog="probmut",
        description="Probabilistic mutation testing for deep neural networks: kill decisions "
                    "you can trust despite training randomness.",
    )
    parser.add_argument("--version", action="version", version=f"probmut {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    modules = [_COMMANDS[command]] if command in _COMMANDS else dict.fromkeys(_COMMANDS.values())
    for name in modules:
        importlib.import_module(name).register(subparsers)
    parser.set_defaults(commands=subparsers.choices)
    return parser


#: Options of earlier releases, by command: the option that took their place
#: (CHANGELOG.md, 0.2.0), named when one is given.
RETIRED = {"train": {"--model": "--architecture", "--level": "--certainty"},
           "recommend": {"--draws": "--simulations", "--level": "--certainty",
                         "--max-instances": "--needed-up-to"},
           "evaluate": {"--manifest": "--write-manifest"}}


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The arguments; an unknown option is reported by the command it was given to, so
    that the message points at that command's help (``probmut kill --help``), with the
    option that replaced it when it is a retired one (:data:`RETIRED`)."""
    args, unknown = parser.parse_known_args(argv)
    owner = args.commands.get(args.command, parser)
    if unknown:
        retired = RETIRED.get(args.command, {})
        old = dict.fromkeys(w.split("=")[0] for w in unknown if w.split("=")[0] in retired)
        hint = "".join(f"; {o}, removed in probmut 0.2.0, is {retired[o]}" for o in old)
        owner.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    args.given = frozenset(owner.given)
    return args


def _flag_of(args: argparse.Namespace, option: str) -> str:
    """The command's flag for a library setting: the option whose value it holds (its
    first name: ``--architecture`` for ``architecture``, ``--simulations`` for
    ``simulations``, not its deprecated ``--populations``), else the setting's name as a
    flag."""
    owner = args.commands.get(args.command)
    for action in getattr(owner, "_actions", ()):
        if action.dest == option and action.option_strings:
            return action.option_strings[0]
    return flag(option)


def _resumes(args: argparse.Namespace) -> bool:
    """Whether the command keeps its completed work (and ``--no-cache`` is not given)."""
    return getattr(args, "resumes", False) and not getattr(args, "no_cache", False)


#: The warnings this command has printed: each is printed once (a warning about the
#: healthy population, say, is not repeated for every mutant).
_SHOWN: set[str] = set()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if str(message) not in _SHOWN:
        _SHOWN.add(str(message))
        print(f"probmut: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    _SHOWN.clear()
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go to files; no display needed
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words else None)
    try:
        args = _parse(parser, argv)
    except SystemExit as stop:  # --help, --version, or a bad option (already reported)
        return int(stop.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    from probmut.io.atomic import DiskFullError
    from probmut.io.completeness import noting_completeness

    try:
        with noting_completeness():  # the JSON output says whether the runs read are complete
            return int(args.func(args) or 0)
    except ProbmutError as error:
        hint = f" ({_flag_of(args, error.option)})" if error.option else ""
        if isinstance(error, DiskFullError) and _resumes(args):
            hint += "; completed work is kept: the same command resumes"
        print(f"probmut {args.command}: error: {error}{hint}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError as error:  # a request beyond the limits checked before allocating
        detail = f" ({error})" if str(error) else ""
        print(f"probmut {args.command}: error: not enough memory{detail}; ask for fewer "
              "instances, bootstraps, trials or draws", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"probmut {args.command}: interrupted"
              + ("; completed work is kept, run the same command again to resume"
                 if _resumes(args) else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader closed the pipe (e.g. `| head`): stop quietly. Point stdout at
        # /dev/null so that the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as error:
        if error.filename is None:  # not about a file: unexpected, keep the traceback
            raise
        # a file name too long, a folder where a file is wanted, no permission, ...
        print(f"probmut {args.command}: error: {error.filename}: {error.strerror}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
