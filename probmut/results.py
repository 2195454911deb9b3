"""What every result object shares: a JSON document and a tidy table.

Results are small frozen dataclasses that print a readable summary (``__str__``), give
their whole answer as a dict (``to_dict``), as strict JSON (``to_json``: non-finite
numbers become ``null``, so any JSON parser reads it) and as a pandas DataFrame with one
row per item (``to_frame``; pandas is imported on use), which a notebook shows as an HTML
table (``_repr_html_``).
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod

import numpy as np


def plain(value):
    """``value`` with NumPy types made Python ones and non-finite floats made None.

    >>> plain({"a": np.float64("inf"), "b": [np.int64(3), float("nan")], "c": (1.5,)})
    {'a': None, 'b': [3, None], 'c': [1.5]}
    """
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(document, indent: int | None = 2) -> str:
    """Strict JSON of ``document`` (see :func:`plain`): never ``NaN`` or ``Infinity``.

    >>> dumps({"ratio": float("inf"), "killed": True}, indent=None)
    '{"ratio": null, "killed": true}'
    """
    return json.dumps(plain(document), indent=indent, allow_nan=False, default=str)


def listing(results: list, **rest) -> dict:
    """A command's document with its list of results under ``"results"``, the one key of
    every command, then ``rest``.

    >>> listing([{"name": "a"}], paired=False)
    {'results': [{'name': 'a'}], 'paired': False}
    """
    return {"results": results, **rest}


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, in the plural unless the count is one.

    >>> counted(1, "instance"), counted(0, "instance"), counted(3, "model")
    ('1 instance', '0 instances', '3 models')
    """
    return f"{count} {noun}{'' if count == 1 else 's'}"


class Result(ABC):
    """Mixin of every result: ``to_json`` from ``to_dict``, ``to_frame`` from ``rows``.

    Subclasses define ``to_dict()`` (the whole answer) and ``rows()`` (one dict per
    item of the table: population, mutant, size...) with the index column ``index``.
    """

    index: str = "name"

    @abstractmethod
    def to_dict(self) -> dict:
        """The whole answer, as a dict of plain values (:func:`plain` makes them so)."""

    def rows(self) -> list[dict]:
        return [self.to_dict()]

    def to_json(self) -> str:
        return dumps(self.to_dict())

    def to_frame(self):
        """One row per item, indexed by :attr:`index`."""
        import pandas as pd

        frame = pd.DataFrame([plain(row) for row in self.rows()])
        return frame.set_index(self.index) if self.index in frame else frame

    def _repr_html_(self) -> str:
        """How a notebook (Jupyter, IPython) shows a result: its table as HTML."""
        return self.to_frame().to_html()
