"""Output of every subcommand: a readable table, or one strict JSON document.

With ``--json`` a command prints exactly one JSON document on stdout (non-finite numbers
as ``null``: any JSON parser reads it) and nothing else; messages go to stderr.
"""

from __future__ import annotations

from pathlib import Path

from probmut.progress import ANALYSIS_DELAY, progress
from probmut.results import dumps


def tests_progress(args, total: int, desc: str):
    """The progress display of an analysis of ``total`` kill tests: shown on stderr once it
    has run for a while (:data:`~probmut.progress.ANALYSIS_DELAY`), never with --quiet."""
    return progress(total, desc, enabled=not args.quiet, unit="test", unit_scale=True,
                    delay=ANALYSIS_DELAY)


def emit(args, result) -> None:
    """Print a result: its JSON document with ``--json``, else its readable table."""
    print(result.to_json() if args.json else result)


def emit_many(args, results, key: str) -> None:
    """One result as its own document; several as ``{key: [...]}`` (or tables)."""
    if len(results) == 1:
        emit(args, results[0])
    elif args.json:
        print(dumps({key: [r.to_dict() for r in results]}))
    else:
        print("\n\n".join(str(r) for r in results))


def emit_with_figure(args, document: dict, text: str, figure: Path | None) -> None:
    """Print a result that drew a figure: JSON with a "figure" key, or text and its path."""
    if args.json:
        print(dumps(document | {"figure": str(figure) if figure else None}))
    else:
        print(text)
        if figure:
            print(f"figure: {figure}")
