"""A coverage result's JSON file (``coverage.json``): the document ``probmut coverage
--json`` prints (:meth:`probmut.coverage.CoverageStudy.to_dict`), saved by the user
beside a run (``probmut coverage RUN --json > RUN/coverage.json``) or anywhere, and read
by the campaign (:func:`probmut.campaign.summarize_campaign`) to show coverage beside
killing. The command writes it to standard output (:mod:`probmut.cli.emit`), so this
module only reads it.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "coverage.json"
>>> _ = path.write_text('{"layer": "dense", "idc": {"mean": 0.5}}')
>>> read_coverage(path)["idc"]
{'mean': 0.5}
"""

from __future__ import annotations

import json
from pathlib import Path

from probmut.errors import ProbmutError


def read_coverage(path) -> dict:
    """The coverage result held in ``path``: a JSON object with its ``layer`` and ``idc``
    (a UTF-8 byte-order mark allowed, as in the other files probmut reads).

    Raises
    ------
    ProbmutError
        No such file, not JSON, or not a coverage result (``option="coverage"``).
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise ProbmutError(f"{path}: no such coverage file", option="coverage") from None
    except (OSError, ValueError) as error:
        raise ProbmutError(f"{path}: not a JSON document ({error})", option="coverage") from None
    except RecursionError:
        raise ProbmutError(f"{path}: not a JSON document (nested too deeply)",
                           option="coverage") from None
    if not isinstance(document, dict) or "idc" not in document or "layer" not in document:
        raise ProbmutError(f"{path}: not a coverage result (the JSON document of probmut "
                           "coverage --json)", option="coverage")
    return document
