"""The report's figures (probmut.report.figures, drawn by probmut.plots), checked where
matplotlib lays out their texts: none covers another, none is smaller than 9 CSS px at
the page's size, a phone shows each unshrunk; a U-shaped posterior keeps its curve in
view; the overview tells outcomes by shape, in parts; forked drawing workers draw the
figures one process draws."""

import itertools
import subprocess
import sys

import pytest


def _texts(fig) -> list:
    """Every text matplotlib draws in ``fig``: (text, box in pixels, size in points)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = [*fig.texts, *(t for legend in fig.legends for t in legend.get_texts())]
    for ax in fig.axes:
        found += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.get_legend():
            found += ax.get_legend().get_texts()
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            found += [label for place, label in zip(axis.get_majorticklocs(),
                                                    axis.get_majorticklabels(), strict=True)
                      if low - 1e-9 <= place <= high + 1e-9]
    return [(t.get_text(), t.get_window_extent(renderer), t.get_fontsize()) for t in found
            if t.get_visible() and t.get_text().strip()]


def check_texts(fig) -> None:
    """No text of the figure covers another or leaves the figure, and none is under 9 CSS
    px where the page shows the figure at its own size (1 pt = 4/3 px)."""
    texts = _texts(fig)
    assert texts
    frame = fig.bbox
    for text, box, size in texts:
        assert size * 4 / 3 >= 9, (text, size)
        assert (box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1
                and box.y1 <= frame.y1 + 1), (text, box, frame)
    for (a, first, _), (b, second, _) in itertools.combinations(texts, 2):
        across = min(first.x1, second.x1) - max(first.x0, second.x0)
        up = min(first.y1, second.y1) - max(first.y0, second.y0)
        assert across <= 0.5 or up <= 0.5, (a, b, first, second)


def test_no_text_of_a_figure_covers_another(mnist_campaign, mnist_dc, synthetic):
    """Every figure of the report (operators with numbers and with long category names,
    posteriors of every shape, the overview), as matplotlib lays out its texts."""
    import matplotlib.pyplot as plt

    from probmut.plots import plot_campaign, plot_kill_curve, plot_posterior

    drawings = [lambda: plot_campaign(mnist_campaign), lambda: plot_campaign(synthetic[1])]
    drawings += [lambda c=c, legend=legend: plot_kill_curve(c, legend=legend)
                 for c in mnist_campaign.curves for legend in (False, True)]
    posteriors = (*mnist_campaign.mutants[::4], *mnist_dc.mutants[::5],
                  *(m for m in synthetic[1].mutants if m.posterior is not None))
    drawings += [lambda m=m, legend=legend: plot_posterior(m.study, m.posterior.name,
                                                           title="", legend=legend)
                 for m in posteriors for legend in (False, True)]
    for draw in drawings:
        fig = draw()
        check_texts(fig)
        assert fig.get_size_inches()[0] * 96 <= 358   # a phone shows it unshrunk
        plt.close(fig)


def test_a_u_shaped_posterior_keeps_its_curve_and_interval_in_view(mnist_dc):
    """The bundled DeepCrime populations (20 vs 20, k = 20): every resample kills always
    or never, and the Beta summary's density runs to infinity at 0 and 1. The density
    axis is capped at the mixture's height, so the mixture reaches most of it, the capped
    summary is said, and the interval bar spans the interval."""
    import matplotlib.pyplot as plt

    from probmut.plots import plot_posterior

    m = next(m for m in mnist_dc.mutants if m.name == "change_label_3.12")
    p = m.posterior
    assert p.alpha < 0.1 and p.beta < 0.1
    fig = plot_posterior(m.study, p.name, title="")
    ax = fig.axes[0]
    parts = {line.get_gid(): line for line in ax.lines}
    top = ax.get_ylim()[1]
    assert max(parts["bagged-mixture"].get_ydata()) > 0.8 * top
    assert "axis capped" in " ".join(t.get_text() for t in ax.texts)
    assert list(parts["interval"].get_xdata()) == [p.ci_low, p.ci_high]
    # issue 56: the mean's line stops below the "axis capped" label, never across it
    fig.canvas.draw()
    label = next(t for t in ax.texts if "axis capped" in t.get_text()).get_window_extent()
    mean = parts["mean"].get_window_extent(fig.canvas.get_renderer())
    assert label.x0 < mean.x0 < label.x1 and mean.y1 < label.y0
    plt.close(fig)


def test_the_overview_tells_outcomes_by_shape_and_keeps_its_axis_near(synthetic):
    """Issue 56: the overview marked outcomes by colour only, and for 300 mutants was one
    figure 4844 px tall with its axis at the bottom. Each outcome has its own marker, and
    the overview is one figure per operator, 40 mutants at most (each with its axis)."""
    import types

    import matplotlib.pyplot as plt

    from probmut.plots import plot_campaign
    from probmut.report.assets import OUTCOME_COLORS, OUTCOME_MARKERS
    from probmut.report.figures import OVERVIEW_ROWS, overview_parts

    folder, found = synthetic
    fig = plot_campaign(found)
    by_colour = {matplotlib_colour(c): o for o, c in OUTCOME_COLORS.items()}
    marked = {(by_colour[matplotlib_colour(line.get_color())], line.get_marker())
              for line in fig.axes[0].lines if line.get_marker() not in ("None", None, "")}
    outcomes = {m.outcome for m in found.mutants if m.posterior is not None}
    assert marked == {(o, OUTCOME_MARKERS[o]) for o in outcomes} and len(outcomes) >= 2
    plt.close(fig)
    assert len(set(OUTCOME_MARKERS.values())) == len(OUTCOME_MARKERS)
    many = types.SimpleNamespace(mutants=[types.SimpleNamespace(mutation=op) for op in
                                          ["a"] * 95 + ["b"] * 3])
    parts = overview_parts(many)
    assert [len(p) for p in parts] == [32, 32, 31, 3]
    assert all(len(p) <= OVERVIEW_ROWS for p in parts)
    assert sorted(i for p in parts for i in p) == list(range(98))


def matplotlib_colour(colour) -> tuple:
    from matplotlib.colors import to_rgb

    return tuple(round(c, 3) for c in to_rgb(colour))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux")
def test_drawing_workers_draw_the_same_figures_as_one_process():
    """In a process with no other Python thread (the command line), the figures are drawn
    by forked workers, started before the campaign is computed (as the command line
    does) or after (the engine's native threads started), and are the figures one
    process draws, byte for byte. (A test runner's process has threads of its own, where
    the page's figures are drawn in-process: this runs in a fresh one.)"""
    script = "\n".join([
        "from probmut.campaign import summarize_campaign",
        "from probmut.report import Drawing, figure_keys",
        "with Drawing(jobs=2) as drawing:",
        "    assert drawing.pool is not None",
        "    campaign = summarize_campaign(model='mnist_dc', verdicts=False)",
        "    drawing.draw(campaign, ('operator',))",
        "    drawing.draw(campaign, ('overview',))",
        "    before = drawing.wait()",
        "with Drawing(jobs=2) as drawing:",
        "    drawing.draw(campaign)",
        "    after = drawing.wait()",
        "with Drawing(jobs=1) as drawing:",
        "    assert drawing.pool is None",
        "    drawing.draw(campaign)",
        "    one = drawing.wait()",
        "print(len(one), len(figure_keys(campaign)), before == one, after == one)"])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.stdout.split() == ["8", "8", "True", "True"], done.stderr
