"""Output of every subcommand: text or one JSON document, and where figures go."""

from __future__ import annotations

import json
from pathlib import Path


def emit(args, result) -> None:
    """Print a result: its JSON document with ``--json``, else its readable table."""
    print(result.to_json() if args.json else result)


def emit_with_figure(args, document: dict, text: str, figure: Path | None) -> None:
    """Print a result that drew a figure: JSON with a "figure" key, or text and its path."""
    if args.json:
        print(json.dumps(document | {"figure": str(figure) if figure else None}, indent=2))
    else:
        print(text)
        if figure:
            print(f"figure: {figure}")

