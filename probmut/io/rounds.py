"""The rounds of a run trained in rounds (``--until-settled``, ``--until-score``):
``rounds.json``, every round's instances per population and its verdicts, with the run's
plan and how it ended; and ``rounds.txt``, the same rounds as a table to read.

Written by :mod:`probmut.train.rounds` after every round, read by the campaign
(:func:`probmut.campaign.summarize_campaign`) to show how the run got there.

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_rounds(folder, {"max_instances": 20, "rounds": [{"instances": {"healthy": 10}}],
...                       "final": {}}, "round  healthy\\n    1       10")
>>> read_rounds(folder / "rounds.json")
[{'instances': {'healthy': 10}}]
>>> read_rounds(folder / "missing.json") is None
True
"""

from __future__ import annotations

import json
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.atomic import atomic_write_text


def write_rounds(folder, document: dict, table: str) -> None:
    """Rewrite ``rounds.json`` (``document``, with its ``rounds`` list) and ``rounds.txt``
    (``table``) in ``folder``, each whole (:func:`probmut.io.atomic.atomic_write_text`)."""
    folder = Path(folder)
    atomic_write_text(folder / "rounds.json", json.dumps(document, indent=1) + "\n")
    atomic_write_text(folder / "rounds.txt", table + "\n")


def read_rounds(path) -> list[dict] | None:
    """The rounds held in ``path`` (a ``rounds.json``), each with its ``instances``
    (population stem -> count); None when there is no such file.

    Raises
    ------
    ProbmutError
        The file is not a rounds file (not JSON, or no list of rounds with instances).
    """
    document = read_rounds_document(path)
    return None if document is None else document["rounds"]


def read_rounds_document(path) -> dict | None:
    """The whole of ``path`` (a ``rounds.json``): the run's plan, its ``rounds`` and how it
    ended (``final``), from which a resumed run goes on; None when there is no such file.

    Raises
    ------
    ProbmutError
        As :func:`read_rounds`.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        rounds = document["rounds"]
        if not isinstance(rounds, list) or not all(isinstance(r["instances"], dict)
                                                   for r in rounds):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        raise ProbmutError(f"{path}: not the rounds file of a run trained in rounds "
                           "(probmut train --until-settled or --until-score writes it)") from None
    return document
