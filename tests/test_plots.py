"""Figures in the matplotlib manner: drawn on the caller's axes, figure returned, no
global state changed, written only by save()."""

import subprocess
import sys

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from probmut.bagging import PosteriorSettings, study_from_kill_counts  # noqa: E402
from probmut.plots import plot_posteriors, save  # noqa: E402


def _study():
    return study_from_kill_counts(np.full(20, 5), [np.full(20, 90), np.full(20, 50)],
                                  ["healthy", "a", "b"], PosteriorSettings(bootstraps=20))


def test_draws_on_the_callers_axes_and_returns_their_figure():
    fig, axes = plt.subplots(1, 3)
    assert plot_posteriors(_study(), axes=axes) is fig
    assert axes[1].get_title().startswith("a: mean")
    plt.close(fig)


def test_leaves_global_settings_alone():
    before = dict(plt.rcParams)
    plt.close(plot_posteriors(_study()))
    assert dict(plt.rcParams) == before


def test_save_writes_the_format_of_the_suffix(tmp_path):
    path = save(plot_posteriors(_study()), tmp_path / "sub" / "fig.svg")
    assert path.read_text().lstrip().startswith("<?xml")


def test_importing_the_module_chooses_no_backend():
    code = ("import matplotlib\n"
            "chosen = []\n"
            "matplotlib.use = lambda *a, **k: chosen.append(a)\n"
            "import probmut.plots\n"
            "raise SystemExit(1 if chosen else 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
