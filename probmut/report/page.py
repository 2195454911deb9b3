"""The page's file: it records its campaign, so that a report never replaces the page of
another campaign."""

from __future__ import annotations

import datetime
import html
import os
import re
from pathlib import Path

from probmut.campaign import Campaign
from probmut.errors import ProbmutError
from probmut.report.sections import render_html
from probmut.validation import checked, instance, jobs, mapping, optional, path, text


def campaign_id(manifest, model: str, folder) -> str:
    """What a page records of its campaign: its model and its manifest, relative to the
    page's ``folder`` (so that a run's page stays its own when the run is moved).

    >>> campaign_id("/runs/a/manifest.toml", "a", "/runs/a")
    'a @ manifest.toml'
    """
    relative = os.path.relpath(Path(manifest).resolve(), Path(folder).resolve())
    return f"{model} @ {Path(relative).as_posix()}"


_RECORDED = re.compile(r'<meta name="probmut-campaign" content="([^"]*)">')


def check_replaceable(path, identity: str) -> bool:
    """Whether writing the page of ``identity`` to ``path`` replaces an earlier page of
    the same campaign (True) or nothing (False); a ProbmutError when ``path`` holds
    anything else: another campaign's page, or a file that is not a probmut report."""
    path = Path(path)
    if not path.exists():
        return False
    try:
        with path.open("rb") as handle:
            start = handle.read(4096).decode("utf-8", "replace")
    except OSError as error:
        raise ProbmutError(f"{path}: cannot read it ({error.strerror})", option="out") from None
    found = _RECORDED.search(start)
    if found and html.unescape(found[1]) == identity:
        return True
    what = (f"the report of another campaign ({html.unescape(found[1])})" if found else
            "a page of an older probmut that does not say its campaign"
            if "<title>probmut report:" in start else "a file that is not a probmut report")
    raise ProbmutError(f"{path}: holds {what}; give --out FILE for this one, or remove it",
                       option="out")


@checked(campaign=instance(Campaign), path=path, command=optional(text),
         created=optional(instance(datetime.datetime)), jobs=jobs, figures=optional(mapping))
def write_report(campaign: Campaign, path, *, command: str | None = None,
                 created: datetime.datetime | None = None, jobs: int | None = None,
                 figures: dict | None = None) -> Path:
    """Write :func:`render_html`'s page to ``path`` (atomically). It replaces an earlier
    page of the same campaign only (:func:`check_replaceable`).

    Parameters
    ----------
    campaign : Campaign
        The campaign to show (:func:`probmut.summarize_campaign`).
    path : path-like
        The HTML file to write.
    command : str, optional
        The command that produced the numbers, shown in the page's header.
    created : datetime.datetime, optional
        The date shown in the header (default: now, UTC).
    jobs : int, optional
        Worker processes that draw the figures not given in ``figures`` (None: one per
        core).
    figures : dict, optional
        Figures already drawn (:func:`probmut.report.figures.draw_figures`), by key.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ProbmutError
        ``path`` holds a page of another campaign or another kind of file, or cannot be
        written; an argument of the wrong type.
    """
    from probmut.io.atomic import atomic_write_text

    path = Path(path)
    identity = campaign_id(campaign.manifest, campaign.model, path.parent)
    check_replaceable(path, identity)
    atomic_write_text(path, render_html(campaign, command=command, created=created, jobs=jobs,
                                        identity=identity, figures=figures))
    return path
