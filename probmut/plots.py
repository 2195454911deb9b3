"""Figures, drawn from result objects only (computation never draws).

In the matplotlib/ArviZ manner: every function takes computed results, draws on the
axes it is given (``ax=`` or ``axes=``; new ones otherwise) and returns the figure;
:func:`save` writes it (any format matplotlib knows, from the suffix). Looks come from
:data:`STYLE` through ``rc_context``, never by changing global settings, and importing
this module does not choose a backend (the command line picks Agg).

>>> import numpy as np
>>> from probmut.bagging import PosteriorSettings, study_from_kill_counts
>>> study = study_from_kill_counts(np.full(20, 5), [np.full(20, 90)], ["healthy", "m"],
...                                PosteriorSettings(bootstraps=20))
>>> fig = plot_posteriors(study)
>>> [ax.get_title() for ax in fig.axes if ax.get_visible()][1]
'm: mean 0.892, ratio 1.029 (killed)'
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.transforms import blended_transform_factory

from probmut.bagging import PosteriorStudy
from probmut.beta import beta_pdf, mixture_pdf, resample_posteriors

#: One place for the look of every figure.
STYLE = {"dpi": 150, "panel_size": (3.2, 2.4), "resample_color": "0.6",
         "fit_color": "tab:blue", "mixture_color": "black", "font_size": 8,
         # The report's figures: shown at their own size (1 pt = 4/3 CSS px), at most
         # 3.6 in (346 px) wide so that a phone shows them unshrunk; no text under 7.5 pt
         # (10 px).
         "report_width": 3.6, "report_text": {"font.size": 8, "axes.titlesize": 8,
                                              "axes.labelsize": 8, "legend.fontsize": 7.5,
                                              "xtick.labelsize": 7.5, "ytick.labelsize": 7.5},
         # Figures 4/5: the estimate and its lower/upper MCE bounds, side by side.
         "estimate_color": "tab:blue", "lower_color": "tab:green", "upper_color": "tab:orange",
         "bound_offset": 0.25,
         # Motivating figure: one color per population (matplotlib's cycle).
         "scatter_alpha": 0.25,
         # Symptoms: one color per instance status.
         "status_colors": {"ok": "tab:green", "crashed": "tab:red", "timed out": "tab:orange",
                           "diverged": "tab:purple"}}


def _rc(report: bool = False):
    """The figures' settings: the report's larger text with ``report``."""
    return plt.rc_context(STYLE["report_text"] if report else {"font.size": STYLE["font_size"]})


def save(fig, path) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix, folders created) and close it.

    The bytes are written to a temporary file first and renamed, as every file of probmut.
    """
    from probmut.io.atomic import atomic_write

    path = Path(path)
    suffix = path.suffix.lstrip(".") or "png"
    atomic_write(path, lambda handle: fig.savefig(handle, format=suffix, dpi=STYLE["dpi"],
                                                  bbox_inches="tight"))
    plt.close(fig)
    return path


def _grid(axes, count: int, columns: int, sharex: bool = False):
    """The caller's axes (as a 2-D array), or a new figure of ``count`` panels."""
    if axes is not None:
        axes = np.atleast_2d(np.asarray(axes, dtype=object))
        if axes.size < count:
            raise ValueError(f"{count} panels needed, {axes.size} axes given")
        return axes.flat[0].figure, axes
    columns = min(columns, count)
    rows = math.ceil(count / columns)
    width, height = STYLE["panel_size"]
    return plt.subplots(rows, columns, figsize=(width * columns, height * rows),
                        squeeze=False, sharex=sharex)


def plot_posteriors(study: PosteriorStudy, *, axes=None, title: str | None = None):
    """Figure 3 of the paper: one panel per population (baseline first); returns the figure.

    Each panel shows the B per-resample Beta posteriors (faint), their mixture (dashed),
    the Beta summary with its credible interval shaded and its mean (vertical line).
    ``axes``: one matplotlib axes per population (default: a new figure, 3 per row).
    """
    with _rc():
        return _plot_posteriors(study, axes, title)


def _plot_posteriors(study, axes, title):
    count = len(study.populations)
    own = axes is None
    fig, axes = _grid(axes, count, 3, sharex=True)
    for ax, post in zip(axes.flat, study.populations, strict=False):
        _posterior_panel(ax, study, post)
        verdict = ("baseline" if post is study.baseline
                   else "killed" if post.killed else "not killed")
        ax.set_title(f"{post.name}: mean {post.mean:.3f}, ratio {post.ratio:.4g} ({verdict})")
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    axes.flat[0].legend(loc="upper right", fontsize=6, frameon=False)
    _finish(fig, title, own)
    return fig


#: Where a posterior panel's mean line stops (a fraction of the axes' height) when the
#: "axis capped" label is above it.
CAPPED_BELOW = 0.84


def _posterior_panel(ax, study, post):
    """One population's panel of Figure 3 (see :func:`plot_posteriors`), untitled.

    A Beta summary with a shape below 1 (a U- or J-shaped posterior: the small and
    unsettled mutants, resamples that kill always or never) has an infinite density at 0
    or 1, which would flatten everything else. The density axis is therefore capped at the
    mixture's height (a mixture of ``Beta(s + 1, N - s + 1)`` is bounded) or the summary's
    away from the ends, whichever is higher; a capped curve is said so on the panel. The
    interval is also drawn as a bar on the axis, visible whatever the density's shape.
    """
    # Denser near 0 and 1, where the posteriors of clear cases are narrow spikes.
    x = 0.5 - 0.5 * np.cos(np.linspace(0.002, np.pi - 0.002, 400))
    a_b, b_b = resample_posteriors(post.kill_counts, post.trials)
    pairs = np.unique(np.column_stack([a_b, b_b]), axis=0)
    curves = beta_pdf(x[None, :], pairs[:, :1], pairs[:, 1:])
    mixture = mixture_pdf(post.kill_counts, post.trials, x)
    fitted = beta_pdf(x, post.alpha, post.beta)
    inner = (x > 0.005) & (x < 0.995)
    top = 1.12 * max(np.max(mixture), np.nanmax(fitted[inner]), 1.0)
    shown = np.minimum(np.nan_to_num(fitted, nan=0.0, posinf=2 * top), 2 * top)
    # One path with breaks (not a collection): matplotlib then simplifies it, dropping
    # the points a line through its neighbours passes within a fraction of a pixel of.
    breaks = np.full((len(pairs), 1), np.nan)
    ax.plot(np.hstack([np.broadcast_to(x, curves.shape), breaks]).ravel(),
            np.hstack([np.minimum(curves, 2 * top), breaks]).ravel(),
            color=STYLE["resample_color"], lw=0.5, alpha=0.25,
            label=f"resample posteriors (B = {post.kill_counts.size})")
    # Named parts (ids in an SVG) that tests find where the page shows them.
    ax.patch.set_gid("plot-area")
    ax.plot(x, mixture, ls="--", color=STYLE["mixture_color"], lw=1, label="bagged (mixture)",
            gid="bagged-mixture")
    ax.plot(x, shown, color=STYLE["fit_color"], lw=1.5,
            label=f"Beta({post.alpha:.3g}, {post.beta:.3g})", gid="beta-fit")
    inside = (x >= post.ci_low) & (x <= post.ci_high)
    ax.fill_between(x[inside], shown[inside], color=STYLE["fit_color"], alpha=0.25, lw=0)
    ax.plot([post.ci_low, post.ci_high], [0, 0], color=STYLE["fit_color"], lw=5,
            solid_capstyle="butt", clip_on=False, label=f"{study.settings.mass:.0%} interval",
            gid="interval")
    ax.set_xlim(-0.02, 1.02)  # spikes at 0 and 1 clear of the frame
    ax.set_ylim(0, top)
    ends = [end for end, density in (("0", fitted[0]), ("1", fitted[-1]))
            if not density <= top]
    if ends:
        ax.text(0.5, 0.97, f"Beta density → ∞ at {' and '.join(ends)}: axis capped",
                transform=ax.transAxes, ha="center", va="top", color=STYLE["fit_color"],
                fontsize=plt.rcParams["legend.fontsize"])
    # the mean's line stops below that label rather than cross it
    ax.axvline(post.mean, ymax=CAPPED_BELOW if ends else 1, color=STYLE["fit_color"], lw=1,
               ls=":", gid="mean")
    ax.set_xlabel("kill probability")
    ax.set_ylabel("density")


def plot_posterior(study: PosteriorStudy, name: str, *, ax=None, title: str | None = None,
                   legend: bool = True):
    """One population's panel of Figure 3 (``name``: a population of ``study``, e.g. a
    mutant of a campaign report), at the report's size and text; returns the figure.
    ``title`` (default: the name, mean and ratio; "" for none) heads the panel;
    ``legend`` under it (the report explains the lines once, on the page, instead).

    >>> import numpy as np
    >>> from probmut.bagging import PosteriorSettings, study_from_kill_counts
    >>> study = study_from_kill_counts(np.full(20, 5), [np.full(20, 90)], ["healthy", "m"],
    ...                                PosteriorSettings(bootstraps=20))
    >>> plot_posterior(study, "m").axes[0].get_title()
    'm: mean 0.892, ratio 1.029'
    """
    post = next((p for p in study.populations if p.name == name), None)
    if post is None:
        raise ValueError(f"no population {name!r} in the study")
    with _rc(report=True):
        own = ax is None
        if own:
            ax = plt.figure(figsize=(STYLE["report_width"], 2.4)).add_axes((0.15, 0.2, 0.8, 0.7))
        _posterior_panel(ax, study, post)
        ax.set_title(f"{post.name}: mean {post.mean:.3f}, ratio {post.ratio:.4g}"
                     if title is None else title)
        if own:
            _size_around(ax, legend, height=1.6)
        elif legend:
            ax.legend(frameon=False)
        return ax.figure


def plot_kill_curve(curve, *, ax=None, title: str | None = None, legend: bool = True):
    """One operator's kill probability against its magnitude
    (:class:`probmut.campaign.KillCurve`), at the report's size and text; returns the
    figure.

    Each magnitude's posterior mean with its credible interval; for ordered magnitudes
    the isotonic fit (line), the level that counts as killed (dashed) and the smallest
    (or largest) killed magnitude: the gap between tested magnitudes where the fit
    crosses (a thick segment on the dashed level) and its interval (a shaded band, clipped
    to the tested range); categories in the manifest's order, without a fit. The healthy
    population against itself is the dotted line. ``legend`` below the panel (the report
    explains the marks once, on the page, instead).

    >>> import numpy as np
    >>> from probmut.campaign import kill_curve
    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rows = {m: summarize(m, np.full(40, c), PosteriorSettings(bootstraps=40))
    ...         for m, c in (("10", 10), ("20", 30), ("30", 70))}
    >>> fig = plot_kill_curve(kill_curve("op", rows, seed=1))
    >>> fig.axes[0].get_xlabel(), len(fig.axes[0].lines) > 0
    ('magnitude', True)
    """
    with _rc(report=True):
        own = ax is None
        if own:
            ax = plt.figure(figsize=(STYLE["report_width"], 2.6)).add_axes((0.15, 0.2, 0.8, 0.7))
        if curve.values is None:
            _categories(ax, curve)
        else:
            _ordered(ax, curve)
        ax.grid(alpha=0.3)
        ax.set_title(curve.mutation if title is None else title)
        if own:
            ordered = curve.values is not None
            _size_around(ax, legend, height=1.5 if ordered else 0.3 * len(curve.magnitudes) + 0.2,
                         names=() if ordered else curve.magnitudes)
        elif legend:
            ax.legend(frameon=False)
        return ax.figure


def _ordered(ax, curve) -> None:
    """Ordered magnitudes along x: means and intervals, the fit and where it crosses."""
    x, color = curve.values, STYLE["estimate_color"]
    if curve.baseline is not None:
        ax.axhline(curve.baseline, color=STYLE["resample_color"], ls=":", lw=1,
                   label="healthy vs healthy")
    ax.axhline(curve.killed_at, color=STYLE["mixture_color"], ls="--", lw=0.8,
               label=f"kill probability {curve.killed_at:g}")
    ax.errorbar(x, curve.means, [curve.means - curve.ci_low, curve.ci_high - curve.means],
                fmt="o", ms=3, capsize=2, color=color,
                label=f"posterior mean, {curve.mass:.0%} interval")
    if curve.fitted is not None:
        ax.plot(x, curve.fitted, color=color, lw=1.2, label=f"isotonic fit ({curve.direction})")
        def inside(value):
            return min(max(value, x.min()), x.max())

        side = "largest" if curve.direction == "decreasing" else "smallest"
        ax.axvspan(inside(curve.threshold_low), inside(curve.threshold_high),
                   color=STYLE["upper_color"], alpha=0.2,
                   label=f"{side} killed magnitude, {curve.mass:.0%} interval")
        # the gap between tested magnitudes where the fit crosses, on the killed_at line
        ax.plot([inside(curve.gap[0]), inside(curve.gap[1])], [curve.killed_at] * 2,
                color=STYLE["upper_color"], lw=3, solid_capstyle="butt",
                label=f"the fit crosses {curve.killed_at:g} here")
    ax.set_xlabel(curve.axis)
    ax.set_ylabel("kill probability")
    ax.set_ylim(-0.02, 1.02)


def _categories(ax, curve) -> None:
    """Categories (no order, no fit) one per row, top down in the manifest's order, the
    kill probability along x: their names read level, however long."""
    y = np.arange(len(curve.magnitudes))[::-1] * 1.0
    if curve.baseline is not None:
        ax.axvline(curve.baseline, color=STYLE["resample_color"], ls=":", lw=1,
                   label="healthy vs healthy")
    ax.axvline(curve.killed_at, color=STYLE["mixture_color"], ls="--", lw=0.8,
               label=f"kill probability {curve.killed_at:g}")
    ax.errorbar(curve.means, y, xerr=[curve.means - curve.ci_low, curve.ci_high - curve.means],
                fmt="o", ms=3, capsize=2, color=STYLE["estimate_color"],
                label=f"posterior mean, {curve.mass:.0%} interval")
    ax.set_yticks(y, curve.magnitudes)
    ax.set_ylim(-0.6, len(y) - 0.4)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("kill probability")


def _size_around(ax, legend: bool, height: float = 1.5, right: float = 0.12,
                 names=()) -> None:
    """Size ``ax``'s figure around it (``height`` inches of plot at the report's width):
    its title above, its tick labels (``names`` on the y axis: categories; else
    numbers) and axis labels beside and below, ``legend`` under them, each measured, so
    that no text covers another. Cheaper than ``tight_layout``, which draws the whole
    figure to find out."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    pixels = fig.dpi
    size = plt.rcParams["xtick.labelsize"] * pixels / 72
    label = ax.yaxis.label.get_window_extent(renderer).width if ax.get_ylabel() else 0
    left = (_tick_label_width(names, renderer) + label) / pixels + 0.2
    below = (1.3 * size + ax.xaxis.label.get_window_extent(renderer).height) / pixels + 0.18
    found = None
    if legend:
        handles, labels = ax.get_legend_handles_labels()
        found = fig.legend(handles, labels, loc="lower center", ncol=1, frameon=False,
                           handlelength=1.6)
        below += found.get_window_extent(renderer).height / pixels + 0.05
    above = (ax.title.get_window_extent(renderer).height / pixels + 0.12
             if ax.get_title() else 0.08)
    width = STYLE["report_width"]
    total = below + height + above
    fig.set_size_inches(width, total)
    ax.set_position((left / width, below / total, (width - left - right) / width,
                     height / total))
    if found is not None:
        found.set_bbox_to_anchor((0.5, 0.02 / total), transform=fig.transFigure)


def _tick_label_width(names, renderer) -> float:
    """The widest of these y tick labels (categories; none: a number's, "0.00"), in
    pixels, measured without laying the ticks out (that takes as long as drawing them)."""
    from matplotlib.font_manager import FontProperties

    font = FontProperties(size=plt.rcParams["ytick.labelsize"])
    return max(renderer.get_text_width_height_descent(name, font, ismath=False)[0]
               for name in (list(names) or ["0.00"]))


def plot_campaign(campaign, *, mutants=None, ax=None, title: str | None = None):
    """Mutants of a campaign (:class:`probmut.campaign.Campaign`; ``mutants``: some of
    its :attr:`~probmut.campaign.Campaign.mutants`, default all) in its order, grouped
    by operator: each one's posterior mean and interval, its outcome (the report's) told
    by colour and by marker shape (:data:`~probmut.report.assets.OUTCOME_COLORS` and
    :data:`~probmut.report.assets.OUTCOME_MARKERS`, which the report's page shares); a
    mutant not analysed is said so. Returns the figure.

    >>> from probmut.campaign import summarize_campaign
    >>> fig = plot_campaign(summarize_campaign(model="mnist_dc", verdicts=False))
    >>> [t.get_text() for t in fig.axes[0].texts][:2]
    ['change_label', 'delete_training_data']
    """
    from probmut.report.assets import OUTCOME_COLORS, OUTCOME_MARKERS

    mutants = campaign.mutants if mutants is None else tuple(mutants)
    rows = []  # (operator or None, mutant or None)
    for mutation in dict.fromkeys(m.mutation for m in mutants):
        rows.append((mutation, None))
        rows += [(None, m) for m in mutants if m.mutation == mutation]
    colors = OUTCOME_COLORS
    with _rc(report=True):
        own = ax is None
        if own:
            ax = plt.figure(figsize=(STYLE["report_width"], 3)).add_axes((0.3, 0.1, 0.65, 0.8))
        y = np.arange(len(rows))[::-1] * 1.0
        ax.axvline(0.5, color=STYLE["mixture_color"], ls="--", lw=0.8)
        labels, positions = [], []
        for position, (mutation, m) in zip(y, rows, strict=True):
            if mutation is not None:  # from the figure's left edge, over the labels
                ax.text(0.02, position, mutation, transform=blended_transform_factory(
                    ax.figure.transFigure, ax.transData), ha="left", va="center",
                    fontweight="bold")
                continue
            labels.append(m.magnitude)
            positions.append(position)
            p = m.posterior
            if p is None:
                ax.text(0.02, position, m.outcome, transform=ax.get_yaxis_transform(),
                        va="center", color=colors[m.outcome], style="italic")
                continue
            ax.plot([p.ci_low, p.ci_high], [position] * 2, color=colors[m.outcome], lw=2,
                    solid_capstyle="butt")
            ax.plot([p.mean], [position], OUTCOME_MARKERS[m.outcome], ms=4.5,
                    color=colors[m.outcome], markeredgecolor="white", markeredgewidth=0.5)
        ax.set_yticks(positions, labels)
        ax.tick_params(axis="y", length=0)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlim(-0.02, 1.02)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(f"kill probability: posterior mean, {campaign.settings.mass:.0%} "
                      "interval")
        shown = [o for o in colors if any(m.outcome == o for m in mutants)
                 and o in OUTCOME_MARKERS]
        if shown:
            ax.legend([plt.Line2D([], [], color=colors[o], marker=OUTCOME_MARKERS[o], ms=4.5,
                                  lw=2) for o in shown],
                      shown, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(shown),
                      frameon=False, handlelength=1.2, columnspacing=0.8, handletextpad=0.4)
        if title:
            ax.set_title(title, pad=22)
        if own:
            fig = ax.figure
            renderer = fig.canvas.get_renderer()
            widest = _tick_label_width(labels, renderer) / fig.dpi
            left, height = widest + 0.15, 0.16 * len(rows)
            below, above = 0.5, 0.3 + (0.3 if title else 0)
            total = below + height + above
            width = STYLE["report_width"]
            fig.set_size_inches(width, total)
            ax.set_position((left / width, below / total, (width - left - 0.12) / width,
                             height / total))
        return ax.figure


def _finish(fig, title, own: bool) -> None:
    if title:
        fig.suptitle(title)
    if own:
        fig.tight_layout()


def plot_sample_size(studies, *, axes=None, title: str | None = None):
    """Figures 4/5 of the paper: the population-size study of one or more mutants;
    returns the figure.

    One row per study, two panels: the posterior mean and the posterior variance against
    the population size n. Each shows the estimate (average over R repetitions) and its
    lower and upper MCE bounds, side by side: markers at the median over sub-populations,
    bars from the 2.5th to the 97.5th percentile. ``axes``: a (studies x 2) array of axes.
    """
    with _rc():
        studies = list(studies)
        own = axes is None
        if own:
            width, height = STYLE["panel_size"]
            fig, axes = plt.subplots(len(studies), 2, squeeze=False,
                                     figsize=(2 * width, height * len(studies)))
        else:
            axes = np.asarray(axes, dtype=object).reshape(len(studies), 2)
            fig = axes.flat[0].figure
        _plot_sample_size(studies, axes)
        _finish(fig, title, own)
        return fig


def _plot_sample_size(studies, axes):
    for row, study in zip(axes, studies, strict=True):
        n = np.array([s.n for s in study.sizes], dtype=np.float64)
        step = np.min(np.diff(n)) if n.size > 1 else 10.0
        for ax, what, label in ((row[0], "mean", "posterior mean"),
                                (row[1], "var", "posterior variance")):
            series = ((what, "estimate", STYLE["estimate_color"], 0.0),
                      (f"{what}_lower", "MCE lower bound", STYLE["lower_color"], -1.0),
                      (f"{what}_upper", "MCE upper bound", STYLE["upper_color"], 1.0))
            for quantity, name, color, side in series:
                summary = [s.summary(quantity) for s in study.sizes]
                median = np.array([v["median"] for v in summary])
                errors = [median - [v["low"] for v in summary],
                          [v["high"] for v in summary] - median]
                ax.errorbar(n + side * STYLE["bound_offset"] * step, median, errors, fmt="o",
                            ms=3, capsize=2, color=color, label=name)
            ax.set_xticks(n)
            ax.set_xlabel("population size n")
            ax.set_ylabel(label)
            ax.set_title(f"{study.name}: {label}")
            ax.grid(alpha=0.3)
            if what == "mean":
                ax.set_ylim(-0.02, 1.02)
        row[0].legend(loc="best", fontsize=6, frameon=False)


def plot_motivating(series, *, ax=None, title: str | None = None):
    """The motivating figure: probability that the "unknown" sample is judged mutated
    against the number of instances compared (k vs k); returns the figure.

    ``series`` maps a population name to its :class:`~probmut.repeat.RepeatResult`
    objects, one per k; each repetition's pass rate is a faint dot, the mean a line.
    """
    with _rc():
        own = ax is None
        if own:
            width, height = STYLE["panel_size"]
            fig, ax = plt.subplots(figsize=(1.5 * width, 1.5 * height))
        _plot_motivating(series, ax, title)
        if own:
            ax.figure.tight_layout()
        return ax.figure


def _plot_motivating(series, ax, title):
    for index, (name, results) in enumerate(series.items()):
        color = f"C{index}"
        ks = np.array([r.sample for r in results])
        for k, result in zip(ks, results, strict=True):
            ax.scatter(np.full(result.pass_rates.size, k) + (index - len(series) / 2) * 0.4,
                       result.pass_rates, s=4, color=color, alpha=STYLE["scatter_alpha"])
        ax.plot(ks, [r.mean for r in results], color=color, lw=1.2, label=name)
    ax.set_xlabel("number of sound / unknown instances compared (k vs k)")
    ax.set_ylabel('probability that "unknown" is judged mutated')
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=6, frameon=False)
    if title:
        ax.set_title(title)


def plot_bayes(study, *, axes=None, title: str | None = None):
    """Model-based posteriors (:class:`probmut.bayes.BayesStudy`), ArviZ's
    ``plot_posterior`` style; returns the figure. One row per mutant with the kill
    probability (histogram: it is a share of simulated tests), the mean accuracy
    difference (reference line at 0) and Cohen's d (the kill threshold's ``|d| < effect``
    band shaded as a ROPE when the criterion's effect size is Cohen's d), each with its
    HDI and mean. ``axes``: (mutants x 3) axes.
    """
    import logging

    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    with _rc():
        count = len(study.comparisons)
        width, height = STYLE["panel_size"]
        own = axes is None
        if own:
            fig, axes = plt.subplots(count, 3, figsize=(3 * width, height * count),
                                     squeeze=False)
        else:
            axes = np.asarray(axes, dtype=object).reshape(count, 3)
            fig = axes.flat[0].figure
        _plot_bayes(study, axes)
        if title:
            fig.suptitle(title)
        if own:
            fig.tight_layout(rect=(0, 0, 1, 1 - 0.25 / (height * count)) if title else None)
        return fig


def _plot_bayes(study, axes):
    import arviz as az
    from matplotlib.ticker import MaxNLocator

    criterion = study.settings.criterion
    # The model's d is Cohen's d: shade the threshold only for criteria that use it.
    rope = ((-criterion.effect, criterion.effect) if criterion.spec.effect == "Cohen's d"
            else None)
    for row, comparison in zip(axes, study.comparisons, strict=True):
        histogram = {"kind": "hist", "bins": np.linspace(0, 1, 51)}
        panels = (("kill probability", comparison.kill_draws, histogram),
                  ("mean difference (mutant - healthy)", comparison.diff_draws, {"ref_val": 0.0}),
                  ("Cohen's d", comparison.d_draws, {"rope": rope}))
        for ax, (label, draws, options) in zip(row, panels, strict=True):
            az.plot_posterior({label: draws}, hdi_prob=study.settings.mass, ax=ax,
                              textsize=STYLE["font_size"], **options)
            ax.xaxis.set_major_locator(MaxNLocator(4))
            if label == "kill probability":
                ax.set_xlim(-0.02, 1.02)
            ax.set_title(f"{comparison.name}: {label}"
                         + ("" if comparison.diagnostics.converged else " (NOT CONVERGED)"))


def plot_symptoms(study, *, ax=None, title: str | None = None):
    """Symptoms of a run (:class:`probmut.symptoms.SymptomStudy`): one row per
    population (healthy first), the shares of its instances that were ok, crashed,
    timed out or diverged as stacked bars, the population's symptom written beside it;
    returns the figure.

    >>> from probmut.io.records import InstanceRecord as R
    >>> from probmut.symptoms import symptom_study
    >>> healthy = [R(i, 0.9 + 0.01 * (i % 3)) for i in range(6)]
    >>> study = symptom_study(healthy, {"m": [R(i, 0.1, status="diverged") for i in range(6)]})
    >>> fig = plot_symptoms(study)
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['baseline', 'nan']
    """
    rows = (study.healthy, *study.populations)
    with _rc():
        own = ax is None
        if own:
            width, _ = STYLE["panel_size"]
            fig, ax = plt.subplots(figsize=(2.2 * width, 0.3 * len(rows) + 1.0))
        y = np.arange(len(rows))[::-1]
        left = np.zeros(len(rows))
        for status, color in STYLE["status_colors"].items():
            share = np.array([row.shares[status] for row in rows])
            ax.barh(y, share, left=left, color=color, label=status, height=0.7)
            left += share
        for position, row in zip(y, rows, strict=True):
            ax.text(1.02, position, row.symptom, va="center", fontsize=STYLE["font_size"])
        ax.set_yticks(y, [row.name for row in rows])
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of instances")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=6,
                  frameon=False)
        if title:
            ax.set_title(title, pad=18)
        if own:
            ax.figure.tight_layout()
        return ax.figure


def plot_coverage(study, *, axes=None, title: str | None = None):
    """Coverage (:class:`probmut.coverage.CoverageStudy`): IDC of the whole test set per
    number of important neurons m, one dot per healthy instance (first panel); with a
    correlation, the mean IDC of each random test subset against its killing (second
    panel); returns the figure."""
    correlation = study.correlation
    panels = 2 if correlation is not None else 1
    with _rc():
        fig, grid = _grid(axes, panels, panels)
        ax = grid.flat[0]
        for position, m in enumerate(study.neurons):
            values = study.idc(m)
            jitter = np.linspace(-0.15, 0.15, values.size) if values.size > 1 else np.zeros(1)
            ax.scatter(position + jitter, values, s=8, color=STYLE["estimate_color"],
                       alpha=STYLE["scatter_alpha"] * 2)
            ax.plot([position - 0.25, position + 0.25], [values.mean()] * 2, color="black",
                    lw=1.2)
        ax.set_xticks(range(len(study.neurons)), [f"m={m}" for m in study.neurons])
        ax.set_ylabel("IDC of the test set")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"IDC per instance, {study.layer.split(' ')[0]}")
        ax.grid(alpha=0.3)
        if correlation is not None:
            ax = grid.flat[1]
            ax.scatter(correlation.coverage_values, correlation.killing_values, s=8,
                       color=STYLE["estimate_color"], alpha=0.6)
            what = {"probability": "mean kill probability", "score": "mutation score"}
            ax.set_xlabel(f"mean IDC (m={correlation.neurons}) of the subset")
            ax.set_ylabel(what[correlation.killing])
            ax.set_title(f"{correlation.subsets} subsets of {correlation.subset_size} inputs: "
                         f"tau {correlation.tau:.2f} [{correlation.ci_low:.2f}, "
                         f"{correlation.ci_high:.2f}]")
            ax.grid(alpha=0.3)
        _finish(fig, title, axes is None)
        return fig
