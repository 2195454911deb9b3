"""How numbers and texts from files read on the page: escaped, formatted, sortable."""

from __future__ import annotations

import html
import math
import re


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def fmt(value, spec: str = ".4f") -> str:
    """A number for the page: formatted, blank when unknown, words for infinity."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format(value, spec)


#: The smallest p-value the page writes as a number; a smaller one (0: it underflowed)
#: is written as below it.
SMALLEST_P = 1e-300


def fmt_p(value, spec: str = ".4g") -> str:
    """A p-value for the page (HTML): "< 1e-300" where it underflows.

    >>> fmt_p(0.0), fmt_p(0.0123)
    ('&lt; 1e-300', '0.0123')
    """
    if value is not None and not math.isnan(value) and value < SMALLEST_P:
        return f"&lt; {SMALLEST_P:g}"
    return fmt(value, spec)


def sort_value(value) -> str:
    """A cell's ``data-value`` for sorting numbers: JavaScript's ``Number`` reads it
    (``Infinity`` for an infinite ratio, which sorts as the largest); blank sorts last."""
    if value is None or isinstance(value, bool) or (isinstance(value, float)
                                                    and math.isnan(value)):
        return ""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def anchor(index: int, name: str) -> str:
    """The id of a mutant's section: unique, and safe in a URL fragment.

    >>> anchor(3, "weights_fuzzing_0.05_1@3")
    'm3-weights_fuzzing_0.05_1-3'
    """
    return f"m{index}-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def slug(outcome: str) -> str:
    return outcome.replace(" ", "-")


def breakable(name: str) -> str:
    """A mutant's name that may wrap after its underscores (a narrow column)."""
    return "_<wbr>".join(esc(part) for part in name.split("_"))


def value_html(value) -> str:
    """Any JSON-like value (the data's provenance) as nested lists."""
    if isinstance(value, dict):
        return "<ul>" + "".join(f"<li><b>{esc(k)}</b>: {value_html(v)}</li>"
                                for k, v in value.items()) + "</ul>"
    if isinstance(value, list | tuple):
        return ", ".join(value_html(v) for v in value)
    return esc(value)


def facts(rows) -> str:
    """A two-column table of (label, HTML) rows."""
    return ('<table class="facts">' + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>"
                                              for k, v in rows) + "</table>")


def tag(outcome: str) -> str:
    return f'<span class="tag {slug(outcome)}">{esc(outcome)}</span>'


def score_text(score) -> str:
    """A score (a :class:`~probmut.campaign.MutationScore` or its document) with its
    interval."""
    if not score:
        return "none analysed"
    if isinstance(score, dict):
        return f"{score['mean']:.3f} [{score['ci_low']:.3f}, {score['ci_high']:.3f}]"
    return f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]"
