"""This campaign against an earlier report of it: which outcomes changed.

Two reports are compared only when their numbers mean the same: the same model, the same
analysis settings (the sample size k defines the score; the kill criterion, the numbers
of resamples and trials, the Beta fit and interval, the ratio threshold define the
outcomes), outcomes of the same kind (verdicts, or the bagged posterior's decisions with
``--no-verdicts``) and the same seed. Anything else is refused in one line naming what
differs, with the option that would make them comparable: a change of outcome there
would say nothing about the populations.

The earlier report is its JSON document (``probmut report --json``) or its page: every
page embeds what a comparison needs (:data:`EMBEDDED`), so a page written again can be
compared with the one it replaces (``--compare RUN/report.html``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.results import Result, counted

#: The id of the script element of a page that holds its data (JSON).
EMBEDDED = "probmut-data"
#: The largest earlier report read (a page of thousands of mutants is a few megabytes).
MAX_BYTES = 256 * 2**20
#: The analysis settings of a report's ``"analysis"`` table, by the option that sets each.
OPTIONS = {"sample": "--sample", "bootstraps": "--bootstraps", "trials": "--trials",
           "fit": "--fit", "grid_step": "--paper (grid step)", "interval": "--interval",
           "mass": "the interval's mass", "threshold": "--threshold",
           "criterion.kind": "--criterion", "criterion.alpha": "--alpha",
           "criterion.effect": "--effect", "criterion.direction": "--direction",
           "criterion.round_p": "--round-p"}


def _score(document: dict) -> dict | None:
    return document.get("mutation_score")


@dataclass(frozen=True)
class Comparison(Result):
    """This campaign against an earlier report of it (``file``): the mutants whose
    outcome changed (``changed``: name, before, now), those only now (``added``: name,
    outcome) or only then (``removed``: name, outcome then), how many kept theirs, and
    the mutation score then and now (``mean``, ``ci_low``, ``ci_high``, ``mutants``;
    None when there was none)."""

    file: str
    model: str
    changed: tuple[tuple[str, str, str], ...]
    added: tuple[tuple[str, str], ...]
    removed: tuple[tuple[str, str], ...]
    unchanged: int
    score_before: dict | None
    score_now: dict | None

    def rows(self) -> list[dict]:
        return [{"name": n, "before": b, "now": a} for n, b, a in self.changed]

    def to_dict(self) -> dict:
        return {"file": self.file, "model": self.model, "changed": self.rows(),
                "added": [{"name": n, "now": o} for n, o in self.added],
                "removed": [{"name": n, "before": o} for n, o in self.removed],
                "unchanged": self.unchanged, "score_before": self.score_before,
                "score_now": self.score_now}

    @staticmethod
    def describe_score(score: dict | None) -> str:
        """A score with its interval and its number of mutants, in words."""
        if score is None:
            return "none"
        return (f"{score['mean']:.3f} [{score['ci_low']:.3f}, {score['ci_high']:.3f}] of "
                f"{counted(score['mutants'], 'mutant')}")

    def head(self) -> str:
        """The first line: the file, the counts and both scores."""
        return (f"compared with {self.file} (a report of {self.model}, the same settings): "
                f"{counted(len(self.changed), 'outcome')} changed, {self.unchanged} the same, "
                f"{len(self.added)} new, {len(self.removed)} gone; mutation score "
                f"{self.describe_score(self.score_before)} then, "
                f"{self.describe_score(self.score_now)} now")

    def __str__(self) -> str:
        lines = [self.head()]
        lines += [f"  {n}: {b} -> {a}" for n, b, a in self.changed]
        lines += [f"  {n}: new, {o}" for n, o in self.added]
        lines += [f"  {n}: gone (was {o})" for n, o in self.removed]
        return "\n".join(lines)


def _flat(table, prefix: str = "") -> dict:
    if not isinstance(table, dict):
        return {}
    found = {}
    for key, value in table.items():
        if isinstance(value, dict):
            found |= _flat(value, f"{prefix}{key}.")
        else:
            found[f"{prefix}{key}"] = value
    return found


def differences(now: dict, before: dict) -> list[str]:
    """What makes two reports' documents incomparable, each in words with the option
    that sets it (empty when they are comparable): the model, the analysis settings
    (``"analysis"``; for a document of an older probmut, its ``"settings"`` in words),
    the kind of outcomes (``"verdicts"``) and the seed; of these, what ``now`` holds (a
    report being written knows its outcomes' kind only when it computes them).

    >>> now = {"model": "m", "analysis": {"sample": 20}, "verdicts": True, "seed": 7}
    >>> differences(now, now | {"analysis": {"sample": 5}, "seed": 42})
    ['--sample 5 then, 20 now', '--seed 42 then, 7 now']
    """
    if before.get("model") != now.get("model"):
        return [f"a report of {before.get('model')}, not of {now.get('model')}"]
    found = []
    if "analysis" in now and isinstance(before.get("analysis"), dict):
        then, here = _flat(before["analysis"]), _flat(now["analysis"])
        keys = [k for k in OPTIONS if k in then or k in here]
        keys += sorted((then.keys() | here.keys()) - set(OPTIONS))
        found += [f"{OPTIONS.get(key, key)} {then.get(key)} then, {here.get(key)} now"
                  for key in keys if then.get(key) != here.get(key)]
    elif "settings" in now and before.get("settings") != now["settings"]:
        found.append(f"analysis settings '{before.get('settings')}' then, "
                     f"'{now['settings']}' now")
    if "verdicts" in now and before.get("verdicts") != now["verdicts"]:
        def kind(verdicts):
            return "verdicts" if verdicts else "the decisions (--no-verdicts)"

        found.append(f"outcomes from {kind(before.get('verdicts'))} then, "
                     f"{kind(now['verdicts'])} now")
    if "seed" in now and before.get("seed") != now["seed"]:
        found.append(f"--seed {before.get('seed')} then, {now['seed']} now")
    return found


def check_comparable(now: dict, before: dict, file: str) -> None:
    """Refuse (one line, :class:`ProbmutError` on ``--compare``) to compare reports whose
    numbers mean different things (:func:`differences`)."""
    found = differences(now, before)
    if found:
        raise ProbmutError(f"{file}: cannot be compared: {'; '.join(found)} (changes there "
                           "would not come from the populations); report again with its "
                           "settings, or compare with a report of these", option="compare")


def compare_reports(now: dict, before: dict, file: str = "the earlier report") -> Comparison:
    """Which outcomes changed between two comparable reports' documents (``probmut report
    --json``; :func:`check_comparable` refuses others).

    >>> old = {"model": "m", "mutation_score": {"mean": 0.4, "ci_low": 0.3, "ci_high": 0.5,
    ...        "mutants": 2}, "mutants": [{"name": "a", "outcome": "not settled"},
    ...                                   {"name": "b", "outcome": "killed"}]}
    >>> new = old | {"mutation_score": None, "mutants": [
    ...     {"name": "a", "outcome": "killed"}, {"name": "c", "outcome": "not killed"}]}
    >>> print(compare_reports(new, old, "old.json"))  # doctest: +NORMALIZE_WHITESPACE
    compared with old.json (a report of m, the same settings): 1 outcome changed, 0 the
    same, 1 new, 1 gone; mutation score 0.400 [0.300, 0.500] of 2 mutants then, none now
      a: not settled -> killed
      c: new, not killed
      b: gone (was killed)
    """
    check_comparable(now, before, file)
    then = {m["name"]: m["outcome"] for m in before["mutants"]}
    found = {m["name"]: m["outcome"] for m in now["mutants"]}
    changed = tuple((n, then[n], o) for n, o in found.items() if n in then and then[n] != o)
    return Comparison(
        file, str(before.get("model")), changed,
        tuple((n, o) for n, o in found.items() if n not in then),
        tuple((n, o) for n, o in then.items() if n not in found),
        sum(1 for n, o in found.items() if then.get(n) == o), _score(before), _score(now))


_DATA = re.compile(rf'<script type="application/json" id="{EMBEDDED}">(.*?)</script>', re.S)


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(
        value)


def _refused(path, why: str) -> ProbmutError:
    return ProbmutError(f"{path}: not the document of probmut report --json, nor a report's "
                        f"page ({why})", option="compare")


def _checked(document, path) -> dict:
    """The fields of a report's document that a comparison reads, checked."""
    if not isinstance(document, dict):
        raise _refused(path, "not a JSON object")
    mutants = document.get("mutants")
    if not isinstance(mutants, list) or not all(
            isinstance(m, dict) and isinstance(m.get("name"), str)
            and isinstance(m.get("outcome"), str) for m in mutants):
        raise _refused(path, "no list of mutants with their outcomes")
    score = document.get("mutation_score")
    if score is not None and not (isinstance(score, dict) and all(
            _number(score.get(k)) for k in ("mean", "ci_low", "ci_high"))
            and isinstance(score.get("mutants"), int)):
        raise _refused(path, "its mutation_score is not a score with its interval and "
                             "number of mutants")
    for key, kinds in (("model", str), ("settings", str), ("verdicts", bool),
                       ("analysis", dict)):
        if key in document and not isinstance(document[key], kinds):
            raise _refused(path, f"its {key} is not a {kinds.__name__}")
    return document


def read_report(path) -> dict:
    """An earlier report's JSON document (``probmut report --json``), or the data its page
    embeds (:data:`EMBEDDED`), checked: a :class:`ProbmutError` on ``--compare`` in one
    line for anything else (a byte-order mark is allowed)."""
    from probmut.io.files import read_input_text

    path = Path(path)
    try:
        text = read_input_text(path, "a report's JSON document or page", MAX_BYTES)
    except ProbmutError as error:
        raise ProbmutError(str(error), option="compare") from None
    page = text.lstrip().startswith("<")
    if page:
        found = _DATA.search(text)
        if found is None:
            raise _refused(path, "a page without its data: written by an older probmut; give "
                                 "its --json document")
        text = found[1]
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ProbmutError(f"{path}: not a JSON document ({error})", option="compare") from None
    except RecursionError:
        raise ProbmutError(f"{path}: not a report's JSON document (nested too deeply)",
                           option="compare") from None
    if page:
        document = document.get("campaign") if isinstance(document, dict) else None
    return _checked(document, path)
