"""The command line: the entry point (:mod:`~probmut.cli.main`), shared argument groups
(:mod:`~probmut.cli.args`), output (:mod:`~probmut.cli.emit`) and one module per family
of subcommands. Nothing outside this package imports it.
"""

from probmut.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
