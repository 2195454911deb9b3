"""This campaign against an earlier report of it: which outcomes changed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.results import Result, counted


@dataclass(frozen=True)
class Comparison(Result):
    """This campaign against an earlier report of it (``probmut report --json``'s
    document, ``file``): the mutants whose outcome changed (``changed``: name, before,
    now), those only now (``added``) or only then (``removed``), how many kept theirs,
    and the mutation score then and now (None when there was none)."""

    file: str
    model: str
    changed: tuple[tuple[str, str, str], ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    score_before: float | None
    score_now: float | None

    def rows(self) -> list[dict]:
        return [{"name": n, "before": b, "now": a} for n, b, a in self.changed]

    def to_dict(self) -> dict:
        return {"file": self.file, "model": self.model, "changed": self.rows(),
                "added": list(self.added), "removed": list(self.removed),
                "unchanged": self.unchanged, "score_before": self.score_before,
                "score_now": self.score_now}

    def __str__(self) -> str:
        def score(value):
            return "none" if value is None else f"{value:.3f}"

        lines = [f"compared with {self.file} (a report of {self.model}): "
                 f"{counted(len(self.changed), 'outcome')} changed, {self.unchanged} the same; "
                 f"mutation score {score(self.score_before)} then, {score(self.score_now)} now"]
        lines += [f"  {n}: {b} -> {a}" for n, b, a in self.changed]
        lines += [f"  {n}: new" for n in self.added]
        lines += [f"  {n}: gone" for n in self.removed]
        return "\n".join(lines)


def compare_reports(now: dict, before: dict, file: str = "the earlier report") -> Comparison:
    """Which outcomes changed between two reports' documents (``probmut report --json``).

    >>> old = {"model": "m", "mutation_score": {"mean": 0.4}, "mutants": [
    ...     {"name": "a", "outcome": "not settled"}, {"name": "b", "outcome": "killed"}]}
    >>> new = {"model": "m", "mutation_score": {"mean": 0.5}, "mutants": [
    ...     {"name": "a", "outcome": "killed"}, {"name": "c", "outcome": "not killed"}]}
    >>> print(compare_reports(new, old, "old.json"))
    compared with old.json (a report of m): 1 outcome changed, 0 the same; mutation score 0.400 then, 0.500 now
      a: not settled -> killed
      c: new
      b: gone
    """
    then = {m["name"]: m["outcome"] for m in before["mutants"]}
    found = {m["name"]: m["outcome"] for m in now["mutants"]}
    changed = tuple((n, then[n], o) for n, o in found.items() if n in then and then[n] != o)
    return Comparison(
        file, str(before.get("model")), changed,
        tuple(n for n in found if n not in then), tuple(n for n in then if n not in found),
        sum(1 for n, o in found.items() if then.get(n) == o),
        (before.get("mutation_score") or {}).get("mean"),
        (now.get("mutation_score") or {}).get("mean"))


def read_report(path) -> dict:
    """An earlier report's JSON document (``probmut report --json``), checked."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProbmutError(f"{path}: no such file (an earlier probmut report --json)",
                           option="compare") from None
    except (OSError, ValueError) as error:
        raise ProbmutError(f"{path}: not a JSON document ({error})", option="compare") from None
    mutants = document.get("mutants") if isinstance(document, dict) else None
    if not isinstance(mutants, list) or not all(
            isinstance(m, dict) and isinstance(m.get("name"), str)
            and isinstance(m.get("outcome"), str) for m in mutants):
        raise ProbmutError(f"{path}: not the document of probmut report --json (no list of "
                           "mutants with their outcomes)", option="compare")
    return document
