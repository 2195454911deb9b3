"""What ``probmut train`` found about trained populations, in the analysis commands'
output (``kill``, ``posterior``).

``probmut train`` writes each mutant population's flags (``equivalent``, ``broken``; for a
user's training code ``not applied``, ``unverified``) and
whether it is a survivor of the test set (see :mod:`probmut.train.flags`) into its
manifest. When an analysis reads its populations through such a manifest
(``--model/--mutation``), both are shown after the table and carried in the JSON
(``"flags"`` and ``"survivor"`` per population); ``--exclude-flagged`` leaves flagged
populations out and never a survivor: a mutant the test set cannot tell apart is what
mutation testing measures. Nothing is dropped unless the user asks. (Populations that
DeepMutation's quality control removed at training time are not in the manifest's
magnitudes at all: :class:`probmut.io.manifest.MutationEntry`.)
"""

from __future__ import annotations

import dataclasses
import sys

from probmut.errors import ProbmutError
from probmut.io.manifest import Manifest


def add_flag_arguments(parser) -> None:
    parser.add_argument("--exclude-flagged", action="store_true",
                        help="leave out populations the manifest flags (equivalent, broken, not "
                             "applied, unverified: probmut train's checks); survivors of the "
                             "test set stay")


@dataclasses.dataclass(frozen=True)
class TrainChecks:
    """Population name -> flags, and name -> why it is a survivor, from a manifest."""

    flags: dict[str, tuple[str, ...]]
    survivors: dict[str, str]

    def only(self, names) -> TrainChecks:
        names = set(names)
        return TrainChecks({n: f for n, f in self.flags.items() if n in names},
                           {n: why for n, why in self.survivors.items() if n in names})


def manifest_flags(args) -> TrainChecks | None:
    """What ``probmut train`` found about the populations read through a manifest (one
    it wrote); None otherwise."""
    if not (args.model and args.mutation):
        return None
    mutation = Manifest.load(args.manifest).mutation(args.model, args.mutation)
    if not (mutation.flags or mutation.survivors):
        return None
    return TrainChecks(mutation.flags, mutation.survivors)


def exclude_flagged(args, inputs, checks: TrainChecks | None):
    """``(inputs, checks)``: without the flagged mutants when ``--exclude-flagged`` is
    given (survivors are kept), and the checks of the mutants that remain."""
    if not checks:
        return inputs, checks
    if args.exclude_flagged:
        kept = [m for m in inputs.mutants if not checks.flags.get(m.name)]
        dropped = [f"{m.name} ({', '.join(checks.flags[m.name])})" for m in inputs.mutants
                   if checks.flags.get(m.name)]
        if dropped:
            print(f"probmut: excluded flagged populations: {', '.join(dropped)}",
                  file=sys.stderr)
        if not kept:
            raise ProbmutError("--exclude-flagged left no mutant population")
        inputs = dataclasses.replace(inputs, mutants=kept)
    return inputs, checks.only(m.name for m in inputs.mutants)


def flags_note(checks: TrainChecks | None) -> str:
    """Lines to print after a table: the flagged populations and the survivors, or
    nothing."""
    if not checks:
        return ""
    flagged = {name: f for name, f in checks.flags.items() if f}
    lines = []
    if flagged:
        lines.append("flags (probmut train's checks, from the manifest): " + "; ".join(
            f"{name}: {', '.join(f)}" for name, f in flagged.items()))
    if checks.survivors:
        lines.append("survivors (every instance predicts on the test set what its healthy "
                     "instance predicts; never excluded): " + ", ".join(checks.survivors))
    return "".join(f"\n{line}" for line in lines)


def with_flags(document: dict, checks: TrainChecks | None) -> dict:
    """A JSON document whose population entries (its ``results``, or the document itself)
    carry their ``"flags"`` and ``"survivor"`` (why, or null)."""
    if checks is None:
        return document
    entries = document.get("results") or [document]
    for entry in entries:
        if entry.get("name") != "healthy":
            entry["flags"] = list(checks.flags.get(entry.get("name"), ()))
            entry["survivor"] = checks.survivors.get(entry.get("name"))
    return document


@dataclasses.dataclass(frozen=True)
class Flagged:
    """A printable result (``__str__``, ``to_dict``) with what ``probmut train`` found
    about its populations."""

    result: object
    flags: TrainChecks | None

    def __str__(self) -> str:
        return str(self.result) + flags_note(self.flags)

    def to_dict(self) -> dict:
        return with_flags(self.result.to_dict(), self.flags)
