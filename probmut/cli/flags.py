"""Flags of trained populations in the analysis commands' output (``kill``, ``posterior``).

``probmut train`` writes each mutant population's flags (``equivalent``, ``broken``; see
:mod:`probmut.train.flags`) into its manifest. When an analysis reads its populations
through such a manifest (``--model/--mutation``), the flags are shown after the table and
carried in the JSON (``"flags"`` per population); ``--exclude-flagged`` leaves flagged
populations out. Flags are data: nothing is dropped unless the user asks.
"""

from __future__ import annotations

import dataclasses
import sys

from probmut.errors import ProbmutError
from probmut.io.manifest import Manifest


def add_flag_arguments(parser) -> None:
    parser.add_argument("--exclude-flagged", action="store_true",
                        help="leave out populations the manifest flags as equivalent or broken "
                             "(probmut train's checks)")


def manifest_flags(args) -> dict[str, tuple[str, ...]] | None:
    """Magnitude -> flags for populations read through a manifest with a flags table
    (one ``probmut train`` wrote); None otherwise."""
    if not (args.model and args.mutation):
        return None
    flags = Manifest.load(args.manifest).mutation(args.model, args.mutation).flags
    return flags or None


def exclude_flagged(args, inputs, flags):
    """``(inputs, flags)``: without the flagged mutants when ``--exclude-flagged`` is
    given, and the flags of the mutants that remain."""
    if not flags:
        return inputs, flags
    if args.exclude_flagged:
        kept = [m for m in inputs.mutants if not flags.get(m.name)]
        dropped = [f"{m.name} ({', '.join(flags[m.name])})" for m in inputs.mutants
                   if flags.get(m.name)]
        if dropped:
            print(f"probmut: excluded flagged populations: {', '.join(dropped)}",
                  file=sys.stderr)
        if not kept:
            raise ProbmutError("--exclude-flagged left no mutant population")
        inputs = dataclasses.replace(inputs, mutants=kept)
    return inputs, {m.name: flags[m.name] for m in inputs.mutants if m.name in flags}


def flags_note(flags) -> str:
    """Lines to print after a table: the flagged populations, or nothing."""
    flagged = {name: f for name, f in (flags or {}).items() if f}
    if not flagged:
        return ""
    return "\nflags (probmut train's checks, from the manifest): " + "; ".join(
        f"{name}: {', '.join(f)}" for name, f in flagged.items())


def with_flags(document: dict, flags) -> dict:
    """A JSON document whose population entries (``tests`` or ``populations``, or the
    document itself) carry their ``"flags"``."""
    if flags is None:
        return document
    entries = document.get("tests") or document.get("populations") or [document]
    for entry in entries:
        if entry.get("name") != "healthy":
            entry["flags"] = list(flags.get(entry.get("name"), ()))
    return document


@dataclasses.dataclass(frozen=True)
class Flagged:
    """A printable result (``__str__``, ``to_dict``) with its populations' flags."""

    result: object
    flags: dict | None

    def __str__(self) -> str:
        return str(self.result) + flags_note(self.flags)

    def to_dict(self) -> dict:
        return with_flags(self.result.to_dict(), self.flags)
