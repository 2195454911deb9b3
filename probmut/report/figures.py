"""The report's figures, drawn as SVG images, in worker processes where the system forks
them (:class:`Drawing`), so that they are drawn while the verdicts are computed."""

from __future__ import annotations

import base64
import io
import os
import signal
import sys
from typing import NamedTuple

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


def _figure(campaign: Campaign, key: tuple[str, int]) -> Image:
    from probmut.plots import plot_campaign, plot_kill_curve, plot_posterior

    kind, index = key
    if kind == "overview":
        return image_of(plot_campaign(campaign))
    if kind == "operator":
        return image_of(plot_kill_curve(campaign.curves[index], legend=False))
    mutant = campaign.mutants[index]
    return image_of(plot_posterior(mutant.study, mutant.posterior.name, title="",
                                   legend=False))


_ADOPTED: Campaign | None = None  # the campaign a worker process draws


def _adopt(campaign: Campaign) -> None:
    global _ADOPTED
    _ADOPTED = campaign
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the drawing process's to handle


def _draw_share(keys) -> list[Image]:
    return [_figure(_ADOPTED, key) for key in keys]


#: Fewer figures than this are drawn in this process (starting workers would cost
#: more), and each worker draws at least half as many.
PARALLEL_FIGURES = 8
#: The kinds of figures of the page; of them only the overview, coloured by outcome,
#: depends on the verdicts.
KINDS = ("overview", "operator", "mutant")


def figure_keys(campaign: Campaign, kinds=KINDS) -> list[tuple[str, int]]:
    """The keys of the page's figures of these ``kinds``: ``("overview", 0)``,
    ``("operator", i)`` per operator with an analysed magnitude, ``("mutant", i)`` per
    analysed mutant."""
    keys = [("overview", 0)] if "overview" in kinds else []
    if "operator" in kinds:
        keys += [("operator", i) for i, c in enumerate(campaign.curves) if c.magnitudes]
    if "mutant" in kinds:
        keys += [("mutant", i) for i, m in enumerate(campaign.mutants)
                 if m.posterior is not None]
    return keys


def _workers_context():
    """Where drawing workers start from: forks of this process, when it runs no other
    Python thread (a test runner's, a notebook's kernel: one of them may hold a lock that
    a forked child would then wait on forever; a worker of a test run did) and the system
    forks (Linux); else None, and the figures are drawn here. The engine's native threads
    are idle then and the workers never call it."""
    import multiprocessing
    import threading

    if threading.active_count() > 1 or not sys.platform.startswith("linux"):
        return None
    return multiprocessing.get_context("fork")


class Drawing:
    """Figures of a campaign being drawn: by ``jobs`` worker processes (None: one per
    core), which draw while this process goes on (computing the verdicts, say); here, on
    :meth:`wait`, for a few figures or where workers cannot be forked safely
    (:func:`_workers_context`). The same images either way. A context manager: leaving
    it early stops the workers.

    >>> from probmut.campaign import summarize_campaign
    >>> campaign = summarize_campaign(model="mnist_dc", verdicts=False)
    >>> with Drawing(campaign, ("operator",)) as drawing:
    ...     figures = drawing.wait()
    >>> sorted(figures), figures["operator", 0].width
    ([('operator', 0), ('operator', 1), ('operator', 2), ('operator', 3)], 346)
    """

    def __init__(self, campaign: Campaign, kinds=KINDS, jobs: int | None = None):
        self.campaign, self.keys = campaign, figure_keys(campaign, kinds)
        workers = min(jobs or os.cpu_count() or 1, 2 * len(self.keys) // PARALLEL_FIGURES)
        context = _workers_context() if workers >= 2 else None
        self.pool = None
        if context is not None:
            import warnings

            import probmut.plots  # noqa: F401  here, once: the workers inherit it

            self.shares = [self.keys[i::workers] for i in range(workers)]
            with warnings.catch_warnings():
                # Python 3.12 warns on forking a process with threads: the engine's
                # native ones, idle (see _workers_context).
                warnings.simplefilter("ignore", DeprecationWarning)
                self.pool = context.Pool(workers, initializer=_adopt, initargs=(campaign,))
            self.pending = self.pool.map_async(_draw_share, self.shares)

    def wait(self) -> dict:
        """Every figure, by key."""
        if self.pool is None:
            return {key: _figure(self.campaign, key) for key in self.keys}
        drawn = self.pending.get()
        self.pool.close()
        self.pool.join()
        self.pool = None
        return {key: image for share, images in zip(self.shares, drawn, strict=True)
                for key, image in zip(share, images, strict=True)}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
        return False


def draw_figures(campaign: Campaign, jobs: int | None = None, kinds=KINDS) -> dict:
    """Every figure of the page (of these ``kinds``), by key (:func:`figure_keys`), drawn
    by ``jobs`` processes where the system forks them (:class:`Drawing`)."""
    with Drawing(campaign, kinds, jobs) as drawing:
        return drawing.wait()
