"""The report's figures drawn by matplotlib as SVG images (each operator's kill curve and
the overview), in worker processes where the system forks them (:class:`Drawing`), so
that they are drawn while the verdicts are computed; and the data from which the page's
own script draws each mutant's posterior when it is shown (:func:`posterior_data`): a
campaign of hundreds of mutants keeps a small page that opens fast."""

from __future__ import annotations

import base64
import io
import os
import signal
import sys
from typing import NamedTuple

import numpy as np

from probmut.campaign import Campaign

# --- figures ----------------------------------------------------------------------------------


class Image(NamedTuple):
    """A figure for the page: its data URI and its size in CSS pixels."""

    uri: str
    width: int
    height: int


def image_of(fig) -> Image:
    """The figure as an SVG data URI (text drawn as paths: what the browser shows is
    what matplotlib measured), at its own size (1 inch = 96 CSS px); the figure is closed.
    The same figure gives the same bytes.

    >>> import matplotlib.pyplot as plt
    >>> image = image_of(plt.figure(figsize=(1, 0.5)))
    >>> image.uri.startswith("data:image/svg+xml;base64,"), image.width, image.height
    (True, 96, 48)
    """
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    width, height = fig.get_size_inches()
    with plt.rc_context({"svg.hashsalt": "probmut", "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue().encode()).decode("ascii")
    return Image(f"data:image/svg+xml;base64,{data}", round(width * 96), round(height * 96))


#: The most mutants of one overview figure: an operator with more is split, each part
#: with its own axis, so that the axis is never far from a mutant.
OVERVIEW_ROWS = 40


def overview_parts(campaign: Campaign) -> list[tuple[int, ...]]:
    """The overview's figures: the indices of the mutants of each, one operator's (or a
    part of its, :data:`OVERVIEW_ROWS` at most) each, in the campaign's order.

    >>> from probmut.campaign import summarize_campaign
    >>> [len(part) for part in overview_parts(summarize_campaign(model="mnist_dc",
    ...                                                          verdicts=False))]
    [5, 5, 5, 5]
    """
    parts = []
    for mutation in dict.fromkeys(m.mutation for m in campaign.mutants):
        indices = [i for i, m in enumerate(campaign.mutants) if m.mutation == mutation]
        count = -(-len(indices) // OVERVIEW_ROWS)
        size = -(-len(indices) // count)
        parts += [tuple(indices[j:j + size]) for j in range(0, len(indices), size)]
    return parts


def _figure(campaign: Campaign, key: tuple[str, int]) -> Image:
    from probmut.plots import plot_campaign, plot_kill_curve

    kind, index = key
    if kind == "overview":
        part = overview_parts(campaign)[index]
        return image_of(plot_campaign(campaign, mutants=[campaign.mutants[i] for i in part]))
    return image_of(plot_kill_curve(campaign.curves[index], legend=False))


def posterior_data(mutant) -> dict:
    """What the page's script draws a mutant's posterior from (its Figure 3, as
    :func:`probmut.plots.plot_posterior` draws it): its resamples' kill counts as
    ``[count, resamples]`` pairs, the trials N, its Beta summary and interval.

    >>> import numpy as np
    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> post = summarize("m", np.array([3, 3, 5]), PosteriorSettings(bootstraps=3))
    >>> posterior_data(post)["counts"]
    [[3, 2], [5, 1]]
    """
    post = getattr(mutant, "posterior", mutant)
    counts, times = np.unique(post.kill_counts, return_counts=True)
    return {"counts": [[int(c), int(t)] for c, t in zip(counts, times, strict=True)],
            "trials": int(post.trials), "alpha": float(post.alpha), "beta": float(post.beta),
            "mean": float(post.mean), "low": float(post.ci_low), "high": float(post.ci_high)}


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the drawing process's to handle
    import probmut.plots  # noqa: F401  matplotlib's import, while the campaign is computed


def _draw_share(campaign: Campaign, keys) -> list[Image]:
    return [_figure(campaign, key) for key in keys]


#: Each drawing worker is there for at least half this many figures (fewer: drawn by
#: fewer workers, or here: starting a worker costs about as much as drawing a few).
PARALLEL_FIGURES = 8
#: The kinds of figures matplotlib draws for the page; of them only the overview,
#: coloured by outcome, depends on the verdicts.
KINDS = ("overview", "operator")


def figure_keys(campaign: Campaign, kinds=KINDS) -> list[tuple[str, int]]:
    """The keys of the page's figures of these ``kinds``: ``("overview", i)`` per part of
    the overview (:func:`overview_parts`), ``("operator", i)`` per operator with an
    analysed magnitude."""
    keys = []
    if "overview" in kinds:
        keys += [("overview", i) for i in range(len(overview_parts(campaign)))]
    if "operator" in kinds:
        keys += [("operator", i) for i, c in enumerate(campaign.curves) if c.magnitudes]
    return keys


def _workers_context():
    """Where drawing workers start from: forks of this process, when it runs no other
    Python thread (a test runner's, a notebook's kernel: one of them may hold a lock that
    a forked child would then wait on forever; a worker of a test run did) and the system
    forks (Linux); else None, and the figures are drawn here. The engine's native threads,
    if started, are idle then and the workers never call it."""
    import multiprocessing
    import threading

    if threading.active_count() > 1 or not sys.platform.startswith("linux"):
        return None
    return multiprocessing.get_context("fork")


class Drawing:
    """Worker processes that draw a campaign's figures: ``jobs`` of them (None: one per
    core; for ``figures`` figures at most, one per :data:`PARALLEL_FIGURES` / 2), started
    at once, so that they import matplotlib while this process computes the campaign,
    and draw while it goes on (computing the verdicts, say); ``alongside`` that work,
    which keeps a core busy, one worker fewer (and one worker, not none, for two jobs).
    With one job, or where workers cannot be forked safely (:func:`_workers_context`),
    the figures are drawn here, on :meth:`wait`. The same images either way. A context
    manager: leaving it early stops the workers.

    >>> from probmut.campaign import summarize_campaign
    >>> with Drawing() as drawing:
    ...     campaign = summarize_campaign(model="mnist_dc", verdicts=False)
    ...     drawing.draw(campaign, ("operator",))
    ...     figures = drawing.wait()
    >>> sorted(figures), figures["operator", 0].width
    ([('operator', 0), ('operator', 1), ('operator', 2), ('operator', 3)], 346)
    """

    def __init__(self, jobs: int | None = None, figures: int | None = None,
                 alongside: bool = False):
        jobs = jobs or os.cpu_count() or 1
        self.workers = jobs - 1 if alongside else jobs
        if figures is not None:
            self.workers = min(self.workers, 2 * figures // PARALLEL_FIGURES)
        context = _workers_context() if self.workers >= 1 and jobs >= 2 else None
        self.pool, self.pending = None, []
        if context is not None:
            import warnings

            with warnings.catch_warnings():
                # Python 3.12 warns on forking a process with threads: the engine's
                # native ones, idle (see _workers_context).
                warnings.simplefilter("ignore", DeprecationWarning)
                self.pool = context.Pool(self.workers, initializer=_start_worker)

    def draw(self, campaign: Campaign, kinds=KINDS) -> None:
        """Start drawing the figures of these ``kinds`` (:func:`figure_keys`); :meth:`wait`
        gives them."""
        keys = figure_keys(campaign, kinds)
        if self.pool is None:
            self.pending.append((campaign, keys, None))
            return
        shares = [keys[i::self.workers] for i in range(self.workers)]
        shares = [share for share in shares if share]
        self.pending.append((campaign, shares, self.pool.starmap_async(
            _draw_share, [(campaign, share) for share in shares])))

    def wait(self) -> dict:
        """Every figure asked for since the last wait, by key."""
        figures = {}
        for campaign, keys, drawn in self.pending:
            if drawn is None:
                figures |= {key: _figure(campaign, key) for key in keys}
                continue
            figures |= {key: image for share, images in zip(keys, drawn.get(), strict=True)
                        for key, image in zip(share, images, strict=True)}
        self.pending = []
        return figures

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
        return False


def draw_figures(campaign: Campaign, jobs: int | None = None, kinds=KINDS) -> dict:
    """Every figure of the page (of these ``kinds``), by key (:func:`figure_keys`), drawn
    by ``jobs`` processes where the system forks them (:class:`Drawing`)."""
    with Drawing(jobs, len(figure_keys(campaign, kinds))) as drawing:
        drawing.draw(campaign, kinds)
        return drawing.wait()
