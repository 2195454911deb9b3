"""Output of every subcommand: a readable table, or one strict JSON document.

With ``--json`` a command prints exactly one JSON document on stdout (non-finite numbers
as ``null``: any JSON parser reads it) and nothing else; messages go to stderr.

When the populations read come from a run that recorded its target (``probmut train``'s
manifest), the document also says whether they are all complete: ``"complete"``, and
``"completeness"`` with each population's instances and target (see
:func:`probmut.io.completeness.check_complete`; the text output has its warnings).
"""

from __future__ import annotations

from pathlib import Path

from probmut.io.completeness import noted_completeness
from probmut.progress import ANALYSIS_DELAY, progress
from probmut.results import dumps, listing


def tests_progress(args, total: int, desc: str):
    """The progress display of an analysis of ``total`` kill tests: shown on stderr once it
    has run for a while (:data:`~probmut.progress.ANALYSIS_DELAY`), never with --quiet."""
    return progress(total, desc, enabled=not args.quiet, unit="test", unit_scale=True,
                    delay=ANALYSIS_DELAY)


def _json(document: dict) -> str:
    """The document, with the completeness of the run populations read, if any."""
    noted = noted_completeness()
    if noted:
        document = document | {"complete": all(c.complete for c in noted),
                               "completeness": [c.to_dict() for c in noted]}
    return dumps(document)


def emit(args, result) -> None:
    """Print a result: its JSON document with ``--json``, else its readable table."""
    print(_json(result.to_dict()) if args.json else result)


def emit_many(args, results) -> None:
    """One result as its own document; several as ``{"results": [...]}``
    (:func:`~probmut.results.listing`), or tables."""
    if len(results) == 1:
        emit(args, results[0])
    elif args.json:
        print(_json(listing([r.to_dict() for r in results])))
    else:
        print("\n\n".join(str(r) for r in results))


def emit_with_figure(args, document: dict, text: str, figure: Path | None) -> None:
    """Print a result that drew a figure: JSON with a "figure" key, or text and its path."""
    if args.json:
        print(_json(document | {"figure": str(figure) if figure else None}))
    else:
        print(text)
        if figure:
            print(f"figure: {figure}")
