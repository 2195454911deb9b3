"""Figures, drawn from result objects only (computation never draws).

Every function takes computed results and a path, writes the figure (PNG by default,
any format matplotlib knows from the suffix) and returns the path.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from probmut.posterior import PosteriorStudy, mixture_pdf, resample_posteriors  # noqa: E402

#: One place for the look of every figure.
STYLE = {"dpi": 150, "panel_size": (3.2, 2.4), "resample_color": "0.6",
         "fit_color": "tab:blue", "mixture_color": "black", "font_size": 8}


def _save(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=STYLE["dpi"], bbox_inches="tight")
    plt.close(fig)
    return path


def plot_posteriors(study: PosteriorStudy, path, title: str | None = None) -> Path:
    """Figure 3 of the paper: one panel per population (baseline first).

    Each panel shows the B per-resample Beta posteriors (faint), their mixture (dashed),
    the Beta summary with its credible interval shaded and its mean (vertical line).
    """
    plt.rcParams.update({"font.size": STYLE["font_size"]})
    count = len(study.populations)
    columns = min(3, count)
    rows = math.ceil(count / columns)
    width, height = STYLE["panel_size"]
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows),
                             squeeze=False, sharex=True)
    x = np.linspace(0.0005, 0.9995, 1000)
    for ax, post in zip(axes.flat, study.populations, strict=False):
        a_b, b_b = resample_posteriors(post.kill_counts, post.trials)
        for a, b in set(zip(a_b.tolist(), b_b.tolist(), strict=True)):
            ax.plot(x, stats.beta.pdf(x, a, b), color=STYLE["resample_color"], lw=0.5, alpha=0.25)
        ax.plot(x, mixture_pdf(post.kill_counts, post.trials, x), ls="--",
                color=STYLE["mixture_color"], lw=1, label="bagged (mixture)")
        fitted = stats.beta.pdf(x, post.alpha, post.beta)
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
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    axes.flat[0].legend(loc="upper right", fontsize=6, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)
