"""The kill probability against the magnitude: an isotonic fit of the posterior means
and where it crosses ``KILLED_AT``, the smallest killed magnitude with its interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from probmut.campaign.score import DRAWS, posterior_draws
from probmut.results import Result, plain
from probmut.seeds import generator

#: Kill probability at which a magnitude counts as killed on the fitted curve.
KILLED_AT = 0.5


def magnitude_values(magnitudes) -> tuple[np.ndarray | None, str]:
    """Numbers to order magnitudes by, and the axis they make: the magnitudes themselves
    when they are numbers; for pairs ``A_B`` (weights_fuzzing's ``0.05_1``) the one part
    that varies; else None (categories: an activation, an optimiser). A ``@TARGET``
    suffix is ignored when every magnitude has the same one.

    >>> magnitude_values(["3.1", "9.29", "30.93"])
    (array([ 3.1 ,  9.29, 30.93]), 'magnitude')
    >>> magnitude_values(["0.05_0.1", "0.05_1", "0.05_2"])
    (array([0.1, 1. , 2. ]), 'magnitude 0.05_x')
    >>> magnitude_values(["elu", "tanh"])
    (None, 'categories')
    """
    texts = [str(m) for m in magnitudes]
    if len({t.partition("@")[2] for t in texts}) == 1:
        texts = [t.partition("@")[0] for t in texts]
    try:
        parts = np.array([[float(p) for p in t.split("_")] for t in texts])
    except ValueError:  # a word, or pairs of different lengths
        return None, "categories"
    if not np.all(np.isfinite(parts)):
        return None, "categories"
    varying = [j for j in range(parts.shape[1]) if np.unique(parts[:, j]).size > 1]
    if parts.shape[1] == 1:
        return parts[:, 0], "magnitude"
    if len(varying) != 1:
        return None, "categories"
    shown = texts[0].split("_")
    shown[varying[0]] = "x"
    return parts[:, varying[0]], f"magnitude {'_'.join(shown)}"


def isotonic(values, weights=None) -> np.ndarray:
    """Increasing isotonic regression along the last axis (weighted least squares), by
    the max-min formula ``fit_i = max over j <= i of min over k >= i of mean(y[j..k])``
    (Barlow et al. 1972), for many rows at once.

    >>> isotonic([1.0, 3.0, 2.0, 4.0]).tolist()
    [1.0, 2.5, 2.5, 4.0]
    >>> from scipy.optimize import isotonic_regression
    >>> y, w = np.array([0.3, 0.1, 0.6, 0.5, 0.9]), np.array([1.0, 4.0, 1.0, 2.0, 1.0])
    >>> bool(np.allclose(isotonic(y, w), isotonic_regression(y, weights=w).x))
    True
    """
    y = np.asarray(values, dtype=np.float64)
    w = np.ones_like(y) if weights is None else np.broadcast_to(
        np.asarray(weights, dtype=np.float64), y.shape)
    zero = np.zeros(y.shape[:-1] + (1,))
    sum_w = np.concatenate([zero, np.cumsum(w, axis=-1)], axis=-1)
    sum_wy = np.concatenate([zero, np.cumsum(w * y, axis=-1)], axis=-1)
    size = y.shape[-1]
    fit = np.empty_like(y)
    for i in range(size):
        # means[..., j, k] of the blocks y[j..k] with j <= i <= k
        means = ((sum_wy[..., None, i + 1:] - sum_wy[..., :i + 1, None])
                 / (sum_w[..., None, i + 1:] - sum_w[..., :i + 1, None]))
        fit[..., i] = means.min(axis=-1).max(axis=-1)
    return fit


def first_killed(values, killed_at: float = KILLED_AT) -> np.ndarray:
    """For each row of ``values`` (kill probabilities at increasing magnitudes), the index
    of the first magnitude at which its increasing isotonic fit (unweighted) reaches
    ``killed_at``; the row's length where it never does. Without computing the fit: with
    ``S_m`` the sums of the first m values less ``killed_at``, the fit at i (the max-min
    formula of :func:`isotonic`) reaches it iff some block mean ``y[j..k]`` (j <= i <= k)
    does for every k, i.e. iff ``min over k > i of S_k >= min over j <= i of S_j``: two
    running minima, linear in the number of magnitudes (the fit of every draw is cubic).

    >>> rows = [[0.2, 0.4, 0.8], [0.6, 0.7, 0.9], [0.1, 0.2, 0.3], [0.7, 0.1, 0.9]]
    >>> first_killed(rows).tolist()         # the last row's fit is [0.4, 0.4, 0.9]
    [2, 0, 3, 2]
    """
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    size = values.shape[-1]
    sums = np.concatenate([np.zeros(values.shape[:-1] + (1,)),
                           np.cumsum(values - killed_at, axis=-1)], axis=-1)
    before = np.minimum.accumulate(sums[..., :size], axis=-1)            # j <= i
    after = np.minimum.accumulate(sums[..., :0:-1], axis=-1)[..., ::-1]  # k > i
    reached = after >= before
    return np.where(reached.any(axis=-1), reached.argmax(axis=-1), size)


def _gaps(x, first) -> tuple[np.ndarray, np.ndarray]:
    """The tested magnitudes around each crossing: the last not killed and the first
    killed (``-inf`` where killed at the first, ``inf`` where at none)."""
    x = np.concatenate([[-np.inf], np.asarray(x, dtype=np.float64), [np.inf]])
    return x[first], x[first + 1]


@dataclass(frozen=True)
class KillCurve(Result):
    """One operator's kill probability against its magnitudes, and where it reaches
    ``killed_at`` (see the module notes). Arrays run over ``magnitudes``, ordered by their
    ``values`` (None for categories, which get no fit). ``gap``: the two tested
    magnitudes, next to each other, between which the fit crosses ``killed_at`` (the last
    not killed and the first killed; for a decreasing fit the last killed and the first
    not killed), ``-inf`` or ``inf`` where it crosses below the smallest or above the
    largest; ``threshold_low`` and ``threshold_high``: the interval of the crossing,
    which holds wherever in its gap the curve crosses (None without a fit); ``p_every``
    and ``p_none`` the shares of the draws killed at every tested magnitude and at none.
    ``excluded``: flagged or unanalysed magnitudes, not fitted."""

    mutation: str
    magnitudes: tuple[str, ...]
    values: np.ndarray | None
    axis: str
    means: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    fitted: np.ndarray | None = None
    direction: str | None = None
    gap: tuple[float, float] | None = None
    threshold_low: float | None = None
    threshold_high: float | None = None
    p_every: float | None = None
    p_none: float | None = None
    excluded: tuple[str, ...] = ()
    baseline: float | None = None
    killed_at: float = KILLED_AT
    mass: float = 0.95

    index = "magnitude"

    def _where(self, value: float) -> str:
        """A tested magnitude by its name, or beyond them."""
        if value == -math.inf:
            return f"below {self.magnitudes[0]}"
        if value == math.inf:
            return f"above {self.magnitudes[-1]}"
        return self.magnitudes[int(np.flatnonzero(self.values == value)[0])]

    def describe_gap(self) -> str:
        """Where the fit crosses ``killed_at``, in words: between two tested magnitudes,
        or beyond them."""
        low, high = self.gap
        if low == -math.inf or high == math.inf:
            return self._where(low if low == -math.inf else high)
        return f"between {self._where(low)} and {self._where(high)}"

    def describe_threshold(self) -> str:
        """The smallest (or largest) killed magnitude with its interval, in words."""
        if not self.magnitudes:
            return "no analysed, unflagged magnitude: no fit"
        if self.values is None:
            return "categorical magnitudes: no order, no smallest killed magnitude"
        if self.gap is None:
            return "fewer than two analysed magnitudes: no fit"
        side = "largest" if self.direction == "decreasing" else "smallest"
        axis = "" if self.axis == "magnitude" else f" ({self.axis})"
        return (f"{side} killed magnitude{axis}: {self.describe_gap()}, "
                f"{self.mass:.0%} interval [{self._where(self.threshold_low)}, "
                f"{self._where(self.threshold_high)}]; killed at every tested magnitude in "
                f"{self.p_every:.0%} of the draws, at none in {self.p_none:.0%}")

    def describe_brief(self) -> str:
        """:meth:`describe_threshold` in short, for a table whose column names it: the gap
        and the interval."""
        if self.gap is None:
            return ("categories: no order" if self.values is None and self.magnitudes
                    else "no fit")
        return (f"{self.describe_gap()}; [{self._where(self.threshold_low)}, "
                f"{self._where(self.threshold_high)}]")

    def rows(self) -> list[dict]:
        fitted = [None] * len(self.magnitudes) if self.fitted is None else self.fitted
        return [{"magnitude": m, "value": None if self.values is None else self.values[i],
                 "mean": self.means[i], "ci_low": self.ci_low[i], "ci_high": self.ci_high[i],
                 "fitted": fitted[i]} for i, m in enumerate(self.magnitudes)]

    def to_dict(self) -> dict:
        low, high = self.gap or (None, None)
        return plain({"mutation": self.mutation, "axis": self.axis,
                      "direction": self.direction, "killed_at": self.killed_at,
                      "threshold": {"gap_low": _number(low), "gap_high": _number(high),
                                    "ci_low": _number(self.threshold_low),
                                    "ci_high": _number(self.threshold_high),
                                    "killed_at_every_magnitude": self.p_every,
                                    "killed_at_none": self.p_none,
                                    "text": self.describe_threshold()},
                      "magnitudes": self.rows(), "excluded": list(self.excluded),
                      "baseline": self.baseline})

    def __str__(self) -> str:
        return f"{self.mutation}: {self.describe_threshold()}"


def _average_ranks(values) -> np.ndarray:
    """Ranks from 1, ties given their average rank (``scipy.stats.rankdata``'s default,
    without importing scipy.stats: a second of the report's start-up).

    >>> _average_ranks([0.3, 0.1, 0.3, 0.2]).tolist()
    [3.5, 1.0, 3.5, 2.0]
    """
    _, inverse, counts = np.unique(np.asarray(values), return_inverse=True,
                                   return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2)[inverse.ravel()]


def _spearman_sign(x, y) -> float:
    """Sign of the rank correlation of x and y (average ranks for ties; 0 if undefined)."""
    rx, ry = _average_ranks(x), _average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float(np.sign(np.sum(rx * ry)))


def kill_curve(mutation: str, posteriors: dict, *, excluded=(), baseline=None,
               killed_at: float = KILLED_AT, draws: int = DRAWS, mass: float = 0.95,
               seed=None) -> KillCurve:
    """The kill probability of one operator against its magnitudes, and its smallest
    killed magnitude with its interval (see the module notes).

    Parameters
    ----------
    mutation : str
        The operator's name (it also keys the random stream).
    posteriors : dict of str to PopulationPosterior
        Magnitude -> :class:`~probmut.bagging.PopulationPosterior`: the magnitudes to fit
        (analysed and not flagged).
    excluded : sequence of str, optional
        The operator's other magnitudes, listed but not fitted.
    baseline : float, optional
        The healthy population's posterior mean (healthy against itself), drawn for
        reference.
    killed_at : float, optional
        The kill probability that counts as killed.
    draws : int, optional
        The joint posterior draws of the interval.
    mass : float, optional
        The interval's probability mass.
    seed : int, SeedSequence, Generator or None, optional
        The same seed gives the same interval.

    Returns
    -------
    KillCurve
        The fitted curve, its direction, and the smallest (or, decreasing, largest) killed
        magnitude: the gap between tested magnitudes where the fit crosses, and its
        interval; no fit when the magnitudes are not numbers.

    Raises
    ------
    ProbmutError
        For posteriors of different numbers of resamples or trials.

    Examples
    --------
    >>> from probmut.bagging import PosteriorSettings, summarize
    >>> rows = {m: summarize(m, np.full(40, c), PosteriorSettings(bootstraps=40))
    ...         for m, c in (("10", 10), ("20", 30), ("30", 70), ("40", 95))}
    >>> curve = kill_curve("op", rows, seed=1)
    >>> curve.direction, curve.describe_gap()     # the fit reaches 1/2 between 20 and 30
    ('increasing', 'between 20 and 30')
    """
    names = list(posteriors)
    values, axis = magnitude_values(names)
    order = np.argsort(values, kind="stable") if values is not None else np.arange(len(names))
    names = [names[i] for i in order]
    rows = [posteriors[name] for name in names]
    means = np.array([p.mean for p in rows])
    common = dict(mutation=mutation, magnitudes=tuple(names), axis=axis, means=means,
                  ci_low=np.array([p.ci_low for p in rows]),
                  ci_high=np.array([p.ci_high for p in rows]), excluded=tuple(excluded),
                  baseline=baseline, killed_at=killed_at, mass=mass)
    if values is None or len(rows) < 2:
        return KillCurve(values=None if values is None else values[order], **common)
    values = values[order]
    decreasing = _spearman_sign(values, means) < 0
    # A decreasing curve is an increasing one on the reversed (negated) magnitudes.
    flip = slice(None, None, -1) if decreasing else slice(None)
    x = (-1.0 if decreasing else 1.0) * values[flip]
    weights = 1.0 / np.array([p.var for p in rows])[flip]
    fitted = isotonic(means[flip], weights)
    reached = fitted >= killed_at
    gap = _gaps(x, np.array([reached.argmax() if reached.any() else len(x)]))
    drawn = posterior_draws(rows[flip], draws,
                            generator(seed, "campaign kill curve", mutation))
    first = first_killed(drawn, killed_at)
    lows, highs = _gaps(x, first)
    if decreasing:
        gap, lows, highs = (-gap[1], -gap[0]), -highs, -lows
    tail = (1 - mass) / 2
    return KillCurve(values=values, fitted=fitted[flip],
                     direction="decreasing" if decreasing else "increasing",
                     gap=(float(gap[0][0]), float(gap[1][0])),
                     threshold_low=float(np.quantile(lows, tail, method="inverted_cdf")),
                     threshold_high=float(np.quantile(highs, 1 - tail, method="inverted_cdf")),
                     p_every=float(np.mean(first == 0)), p_none=float(np.mean(first == len(x))),
                     **common)


def _number(value):
    """A magnitude in JSON: the number, or "below"/"above" the tested magnitudes."""
    if value is None or math.isfinite(value):
        return value
    return "below" if value < 0 else "above"
