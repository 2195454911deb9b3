"""Figures, drawn from result objects only (computation never draws).

In the matplotlib/ArviZ manner: every function takes computed results, draws on the
axes it is given (``ax=`` or ``axes=``; new ones otherwise) and returns the figure;
:func:`save` writes it (any format matplotlib knows, from the suffix). Looks come from
:data:`STYLE` through ``rc_context``, never by changing global settings, and importing
this module does not choose a backend (the command line picks Agg).

>>> import numpy as np
>>> from probmut.posterior import PosteriorSettings, study_from_kill_counts
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
from matplotlib.collections import LineCollection

from probmut.posterior import (
    PosteriorStudy,
    beta_pdf,
    mixture_pdf,
    resample_posteriors,
)

#: One place for the look of every figure.
STYLE = {"dpi": 150, "report_dpi": 100, "panel_size": (3.2, 2.4), "resample_color": "0.6",
         "fit_color": "tab:blue", "mixture_color": "black", "font_size": 8,
         # Figures 4/5: the estimate and its lower/upper MCE bounds, side by side.
         "estimate_color": "tab:blue", "lower_color": "tab:green", "upper_color": "tab:orange",
         "bound_offset": 0.25,
         # Motivating figure: one color per population (matplotlib's cycle).
         "scatter_alpha": 0.25,
         # Symptoms: one color per instance status.
         "status_colors": {"ok": "tab:green", "crashed": "tab:red", "timed out": "tab:orange",
                           "diverged": "tab:purple"}}


def _rc():
    return plt.rc_context({"font.size": STYLE["font_size"]})


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
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    axes.flat[0].legend(loc="upper right", fontsize=6, frameon=False)
    _finish(fig, title, own)
    return fig


def _posterior_panel(ax, study, post):
    """One population's panel of Figure 3 (see :func:`plot_posteriors`)."""
    # Denser near 0 and 1, where the posteriors of clear cases are narrow spikes.
    x = 0.5 - 0.5 * np.cos(np.linspace(0.002, np.pi - 0.002, 800))
    a_b, b_b = resample_posteriors(post.kill_counts, post.trials)
    pairs = np.unique(np.column_stack([a_b, b_b]), axis=0)
    curves = beta_pdf(x[None, :], pairs[:, :1], pairs[:, 1:])
    ax.add_collection(LineCollection(
        np.stack([np.broadcast_to(x, curves.shape), curves], axis=-1),
        colors=STYLE["resample_color"], linewidths=0.5, alpha=0.25))
    ax.plot(x, mixture_pdf(post.kill_counts, post.trials, x), ls="--",
            color=STYLE["mixture_color"], lw=1, label="bagged (mixture)")
    fitted = beta_pdf(x, post.alpha, post.beta)
    ax.plot(x, fitted, color=STYLE["fit_color"], lw=1.5,
            label=f"Beta({post.alpha:.3g}, {post.beta:.3g})")
    inside = (x >= post.ci_low) & (x <= post.ci_high)
    ax.fill_between(x[inside], fitted[inside], color=STYLE["fit_color"], alpha=0.25,
                    label=f"{study.settings.mass:.0%} interval")
    ax.axvline(post.mean, color=STYLE["fit_color"], lw=1, ls=":")
    verdict = ("baseline" if post is study.baseline
               else "killed" if post.killed else "not killed")
    ax.set_title(f"{post.name}: mean {post.mean:.3f}, ratio {post.ratio:.4g} ({verdict})")
    ax.set_xlim(0, 1)
    top = np.nanmax(np.where(np.isfinite(fitted), fitted, np.nan))
    ax.set_ylim(0, 1.15 * max(top, 1.0))
    ax.set_xlabel("kill probability")
    ax.set_ylabel("density")


def plot_posterior(study: PosteriorStudy, name: str, *, ax=None, title: str | None = None):
    """One population's panel of Figure 3 (``name``: a population of ``study``, e.g. a
    mutant of a campaign report); returns the figure.

    >>> import numpy as np
    >>> from probmut.posterior import PosteriorSettings, study_from_kill_counts
    >>> study = study_from_kill_counts(np.full(20, 5), [np.full(20, 90)], ["healthy", "m"],
    ...                                PosteriorSettings(bootstraps=20))
    >>> plot_posterior(study, "m").axes[0].get_title()
    'm: mean 0.892, ratio 1.029 (killed)'
    """
    post = next((p for p in study.populations if p.name == name), None)
    if post is None:
        raise ValueError(f"no population {name!r} in the study")
    with _rc():
        own = ax is None
        if own:
            fig, ax = plt.subplots(figsize=STYLE["panel_size"])
        _posterior_panel(ax, study, post)
        ax.legend(loc="upper right", fontsize=6, frameon=False)
        _finish(ax.figure, title, own)
        return ax.figure


def plot_kill_curve(curve, *, ax=None, title: str | None = None):
    """One operator's kill probability against its magnitude
    (:class:`probmut.campaign.KillCurve`); returns the figure.

    Each magnitude's posterior mean with its credible interval; for ordered magnitudes
    the isotonic fit (line), the level that counts as killed (dashed) and the smallest
    (or largest) killed magnitude with its interval (vertical line, shaded band, clipped
    to the tested range); categories in the manifest's order, without a fit. The healthy
    population against itself is the dotted line.

    >>> import numpy as np
    >>> from probmut.campaign import kill_curve
    >>> from probmut.posterior import PosteriorSettings, summarize
    >>> rows = {m: summarize(m, np.full(40, c), PosteriorSettings(bootstraps=40))
    ...         for m, c in (("10", 10), ("20", 30), ("30", 70))}
    >>> fig = plot_kill_curve(kill_curve("op", rows, seed=1))
    >>> fig.axes[0].get_xlabel(), len(fig.axes[0].lines) > 0
    ('magnitude', True)
    """
    with _rc():
        own = ax is None
        if own:
            width, height = STYLE["panel_size"]
            fig, ax = plt.subplots(figsize=(1.3 * width, height))
        ordered = curve.values is not None
        x = curve.values if ordered else np.arange(len(curve.magnitudes), dtype=float)
        color = STYLE["estimate_color"]
        if curve.baseline is not None:
            ax.axhline(curve.baseline, color=STYLE["resample_color"], ls=":", lw=1,
                       label="healthy vs healthy")
        ax.axhline(curve.level, color=STYLE["mixture_color"], ls="--", lw=0.8,
                   label=f"kill probability {curve.level:g}")
        ax.errorbar(x, curve.means, [curve.means - curve.ci_low, curve.ci_high - curve.means],
                    fmt="o", ms=3, capsize=2, color=color,
                    label=f"posterior mean, {curve.mass:.0%} interval")
        if curve.fitted is not None:
            ax.plot(x, curve.fitted, color=color, lw=1.2,
                    label=f"isotonic fit ({curve.direction})")
            edges = {-np.inf: x.min(), np.inf: x.max()}
            low = edges.get(curve.threshold_low, curve.threshold_low)
            high = edges.get(curve.threshold_high, curve.threshold_high)
            side = "largest" if curve.direction == "decreasing" else "smallest"
            ax.axvspan(low, high, color=STYLE["upper_color"], alpha=0.2,
                       label=f"{side} killed magnitude, {curve.mass:.0%} interval")
            if np.isfinite(curve.threshold):
                ax.axvline(curve.threshold, color=STYLE["upper_color"], lw=1.2)
        if not ordered:
            ax.set_xticks(x, curve.magnitudes, rotation=30, ha="right")
        ax.set_xlabel(curve.axis)
        ax.set_ylabel("kill probability")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.38 if ordered else -0.55),
                  ncol=2, fontsize=6, frameon=False)
        ax.set_title(title or curve.mutation)
        if own:
            ax.figure.tight_layout()
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
        panels = (("kill probability", comparison.kill_draws, {"kind": "hist", "bins": np.linspace(0, 1, 51)}),
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
