"""Every choice the PMT paper made, in one place.

probmut's defaults differ from the paper where there is better practice (the exact p,
a moment-matched Beta, a highest-density interval, the textbook jackknife); the paper's
choices stay reachable as settings presets, used by ``--paper`` and by
:func:`probmut.replicate.replicate`:

- the kill test: p rounded to 3 decimals (DeepCrime reads it from statsmodels' printed
  summary), alpha 0.05, two-sided ``|d| >= 0.5``;
- the bagged posterior's Beta summary: least squares of the Beta pdf against the
  mixture density on the grid of step 0.001 (scipy's ``curve_fit``), interval mean +-
  1.96 sd;
- the Monte-Carlo error: the same fit on the coarser grid of step 0.01, the jackknife
  with leave-one-out sums divided by R (see :mod:`probmut.mce`);
- the population-size study: sizes 25..190 of 200 instances, 30 sub-populations,
  R = 100 repetitions, and the configurations of Figures 4/5;
- the motivating experiment: MNIST delete_training_data, 100 tests per repetition, 50
  repetitions, k = 20 (and 20..90 for its figure).

Examples
--------
>>> posterior_settings().fit, posterior_settings().interval, mce_settings().grid_step
('lsq', 'normal', 0.01)
>>> criterion().describe()
'p rounded to 3 decimals < 0.05 and |d| >= 0.5'
"""

from __future__ import annotations

from dataclasses import replace

from probmut.bagging import PosteriorSettings
from probmut.killtest import KillCriterion

#: Grid step of the least-squares Beta fit of the bagged posterior (Figure 3).
FIT_GRID = 0.001
#: Grid step of the least-squares fit in the paper's MCE code (coarser).
MCE_GRID = 0.01
#: Population sizes of the paper's population-size study (of 200 instances).
SIZES = (25, 50, 75, 100, 125, 150, 175, 190)
#: Sub-populations per size and repetitions R of the population-size study.
SUBPOPULATIONS = 30
REPETITIONS = 100
#: Figures 4/5: (model, mutation, magnitudes).
SAMPLE_SIZE_CONFIGS = (("mnist", "delete_training_data", ("3.1", "9.29", "30.93")),
                       ("mnist", "change_label", ("3.12",)),
                       ("movie_recomm", "change_label", ("3.12",)),
                       ("lenet", "change_label", ("3.12",)))
#: The motivating experiment (METHOD.md section 2): mutation, tests per repetition,
#: repetitions, and the k of its figure.
MOTIVATING = ("mnist", "delete_training_data")
MOTIVATING_TESTS = 100
MOTIVATING_REPETITIONS = 50
MOTIVATING_KS = tuple(range(20, 95, 5))


def criterion(kind: str = "deepcrime") -> KillCriterion:
    """The paper's kill rule: alpha 0.05, two-sided medium effect, p rounded to 3
    decimals (with DeepCrime's test unless another ``kind`` is asked for)."""
    return KillCriterion(alpha=0.05, effect=None, direction="two-sided", round_p=3, kind=kind)


def posterior_settings(**overrides) -> PosteriorSettings:
    """The paper's bagged posterior: least squares on the 0.001 grid (``curve_fit``),
    mean +- 1.96 sd, p rounded, the paper's jackknife for repetitions."""
    base = PosteriorSettings(fit="lsq", grid_step=FIT_GRID, interval="normal",
                             criterion=criterion(), jackknife="paper", solver="curve_fit")
    return replace(base, **overrides)


def mce_settings(**overrides) -> PosteriorSettings:
    """The paper's MCE code: :func:`posterior_settings` with the 0.01 fit grid."""
    return posterior_settings(**({"grid_step": MCE_GRID} | overrides))


def study_settings(**overrides) -> PosteriorSettings:
    """The paper's population-size study: :func:`mce_settings`, with the least-squares
    fits of its 24,000 repetitions per size run by the vectorised solver, which reaches
    the same minimum as ``curve_fit`` to about 1e-5 relative (see
    :func:`probmut.beta.fit_beta_batch`)."""
    return mce_settings(**({"solver": "lm"} | overrides))
