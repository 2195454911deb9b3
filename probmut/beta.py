"""The Beta maths of the bagged posterior: densities, the mixture of the resamples'
posteriors and its Beta summary (one fit or many at once), credible intervals, the
Hellinger distance, the similarity ratio and P(X > Y).

A resample whose kill test killed ``s`` of ``N`` trials has the posterior ``Beta(s + 1,
N - s + 1)`` (uniform prior); the bagged posterior (:mod:`probmut.bagging`) is the
equal-weight mixture of them, summarised by one Beta: by moment matching (the mixture's
exact mean and variance) or by least squares on a grid (the paper's fit). The summary's
similarity ratio is ``H(summary, sound) / H(summary, mutant)``, the Hellinger distances to
the ideal sound posterior ``Beta(1, N + 1)`` and the ideal mutant posterior ``Beta(N + 1,
1)`` (METHOD.md section 3).

scipy.special only: scipy.stats, .optimize and .integrate would double the start-up time
of every command (METHOD-sized analyses take a fraction of a second after start-up); the
paper's ``curve_fit`` imports scipy.optimize when it is asked for.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from probmut.errors import ProbmutError
from probmut.validation import checked, number

#: A Beta distribution's shape parameter: a positive finite number.
_shape = number(0, math.inf, low_open=True)

FITS = ("moments", "lsq")
INTERVALS = ("hdi", "equal-tailed", "normal")
#: Least-squares solvers: vectorised Levenberg-Marquardt, or scipy's curve_fit per fit.
SOLVERS = ("lm", "curve_fit")


@functools.cache
def _special():
    """scipy.special, imported on first use: the command line imports this module for its
    choices (:data:`FITS`, :data:`INTERVALS`), and every command's start would otherwise
    wait for SciPy (0.15 s warm, more from a cold disk cache)."""
    from scipy import special

    return special


# --- densities, fits, intervals, distances ----------------------------------------------

def beta_pdf(x, a, b):
    """Density of Beta(a, b) at ``x``, in log space.

    >>> float(beta_pdf(0.5, 2, 2))
    1.5
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.exp(_special().xlogy(a - 1, x) + _special().xlog1py(b - 1, -x)
                      - _special().betaln(a, b))


def beta_quantile(q, a, b):
    """Quantile function (inverse cdf) of Beta(a, b)."""
    return _special().betaincinv(a, b, q)


def resample_posteriors(kill_counts, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Beta parameters of each resample's posterior: ``(s + 1, N - s + 1)``."""
    counts = np.asarray(kill_counts, dtype=np.float64)
    return counts + 1.0, trials - counts + 1.0


def mixture_pdf(kill_counts, trials: int, x) -> np.ndarray:
    """Density of the bagged posterior (equal-weight mixture) at ``x``."""
    a, b = resample_posteriors(kill_counts, trials)
    x = np.asarray(x, dtype=np.float64)
    return beta_pdf(x[None, :], a[:, None], b[:, None]).mean(axis=0)


def fit_moments(kill_counts, trials: int) -> tuple[float, float]:
    """Beta with the mixture's exact mean and variance.

    >>> a, b = fit_moments([10] * 5, 100)   # identical resamples: the Beta itself
    >>> round(a, 9), round(b, 9)
    (11.0, 91.0)
    """
    a, b = fit_beta_batch(np.asarray(kill_counts)[None, :], trials, "moments")
    return float(a[0]), float(b[0])


def _beta_density(x, a, b):
    # The paper's parametrisation of the Beta pdf (log-Beta for stability).
    return np.exp(-_special().betaln(a, b)) * x ** (a - 1) * (1 - x) ** (b - 1)


def fit_least_squares(kill_counts, trials: int, grid_step: float = 0.001) -> tuple[float, float]:
    """The paper's fit: least squares of a Beta pdf against the mixture density.

    Grid ``1e-8, 1e-8 + step, ... < 1``; start at the mean resample parameters; bounds
    (0, inf); scipy's ``curve_fit`` with the 'trf' method.
    """
    from scipy import optimize

    a, b = resample_posteriors(kill_counts, trials)
    x = np.arange(1e-8, 1, grid_step)
    target = mixture_pdf(kill_counts, trials, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params, _ = optimize.curve_fit(_beta_density, x, target, p0=[a.mean(), b.mean()],
                                       method="trf", bounds=[0, np.inf], maxfev=2000)
    return float(params[0]), float(params[1])


def fit_beta(kill_counts, trials: int, fit: str = "moments", grid_step: float = 0.001,
             solver: str = "lm") -> tuple[float, float]:
    """Beta summary of the bagged posterior by the chosen fit (see :func:`fit_beta_batch`)."""
    a, b = fit_beta_batch(np.asarray(kill_counts)[None, :], trials, fit, grid_step, solver)
    return float(a[0]), float(b[0])


def beta_mean_var(a: float, b: float) -> tuple[float, float]:
    return a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))


#: The paper's 97.5% normal quantile, rounded to 1.96 as in its code and figures
#: (``scipy.special.ndtri(0.975)`` is 1.959964).
Z95 = 1.96


def normal_quantile(mass: float) -> float:
    """z of the central normal interval ``+- z sd`` holding ``mass``.

    The paper's 1.96 for 95% (the normal credible interval here and the Monte-Carlo
    error intervals of :mod:`probmut.mce` and :mod:`probmut.sample_size`, which reproduce
    its figures); the exact quantile for any other mass.

    >>> normal_quantile(0.95), round(normal_quantile(0.9), 6)
    (1.96, 1.644854)
    """
    return Z95 if mass == 0.95 else float(_special().ndtri(0.5 + mass / 2))


def credible_interval(a: float, b: float, kind: str = "hdi", mass: float = 0.95):
    """A credible interval of Beta(a, b): highest-density, equal-tailed or the paper's
    normal approximation (mean +- z sd, clipped to [0, 1]; z from :func:`normal_quantile`).

    For a U-shaped Beta (both shapes below 1) the highest-density region is two intervals,
    ``[0, l]`` and ``[u, 1]``; ``"hdi"`` returns the shortest *single* interval holding the
    mass instead, which then reaches 0 or 1: ``[0, Q(mass)]`` or ``[Q(1 - mass), 1]``,
    whichever is shorter (every interval in between is longer).

    >>> [round(v, 4) for v in credible_interval(2, 2, "equal-tailed")]
    [0.0943, 0.9057]
    >>> [round(v, 4) for v in credible_interval(1, 101, "hdi")]
    [0.0, 0.0292]
    >>> [round(v, 4) for v in credible_interval(0.5, 0.3, "hdi")]   # U-shaped
    [0.0129, 1.0]
    """
    if kind == "normal":
        mean, var = beta_mean_var(a, b)
        z = normal_quantile(mass)
        return (float(np.clip(mean - z * math.sqrt(var), 0, 1)),
                float(np.clip(mean + z * math.sqrt(var), 0, 1)))
    tail = 1 - mass
    if kind == "equal-tailed":
        return float(beta_quantile(tail / 2, a, b)), float(beta_quantile(1 - tail / 2, a, b))
    if a < 1 and b < 1:
        # The width Q(q + mass) - Q(q) has local minima at both ends (the density is
        # infinite there) and none inside.
        upper, lower = float(beta_quantile(mass, a, b)), float(beta_quantile(tail, a, b))
        return (0.0, upper) if upper <= 1.0 - lower else (lower, 1.0)
    if a <= 1 and b > 1:
        return 0.0, float(beta_quantile(mass, a, b))
    if b <= 1 and a > 1:
        return float(beta_quantile(tail, a, b)), 1.0
    low = _golden_section_minimum(
        lambda q: beta_quantile(q + mass, a, b) - beta_quantile(q, a, b), 0.0, tail)
    return float(beta_quantile(low, a, b)), float(beta_quantile(low + mass, a, b))


def _golden_section_minimum(f, low: float, high: float, tolerance: float = 1e-12) -> float:
    """Minimum of a unimodal function on [low, high] by golden-section search."""
    ratio = (math.sqrt(5) - 1) / 2
    c, d = high - ratio * (high - low), low + ratio * (high - low)
    fc, fd = f(c), f(d)
    while high - low > tolerance:
        if fc < fd:
            high, d, fd = d, c, fc
            c = high - ratio * (high - low)
            fc = f(c)
        else:
            low, c, fc = c, d, fd
            d = low + ratio * (high - low)
            fd = f(d)
    return (low + high) / 2


@checked(a1=_shape, b1=_shape, a2=_shape, b2=_shape)
def hellinger(a1: float, b1: float, a2: float, b2: float) -> float:
    """Hellinger distance between Beta(a1, b1) and Beta(a2, b2), in log space; exactly 0
    when it is zero to working precision.

    ``H^2 = 1 - exp(L)``, ``L = ln B((a1+a2)/2, (b1+b2)/2) - (ln B(a1,b1) + ln B(a2,b2))/2``
    (the log of the Bhattacharyya coefficient), clipped to [0, 1].

    Returns
    -------
    float
        H in [0, 1].

    Raises
    ------
    ProbmutError
        For a shape that is not a positive finite number.

    Notes
    -----
    For nearby Betas ``L`` is tiny while the log-Beta functions are made of log-gamma
    values of the size of ``(a + b) ln(a + b)``: millions for N = 100,000 trials. Each of
    the nine log-gamma values ``g`` (three per log-Beta; weights 1, 1/2, 1/2) is within
    ``2u (|g| + 1)`` of its exact value for the rounding of its argument (the relative
    change ``u`` of ``x`` moves ``ln Gamma(x)`` by ``u x psi(x)``, and ``|x psi(x)| <= 2
    (|ln Gamma(x)| + 1)`` for ``x >= 0.5``) and as much again for its evaluation (SciPy's
    log-Beta and log-gamma are accurate to a couple of ulps), and summing nine terms
    adds at most ``8u`` times the sum of their sizes (Higham, *Accuracy and Stability of
    Numerical Algorithms*, section 4.2). So the computed ``L`` is within

        ``12 u S``, ``S = sum_i w_i (|ln Gamma(z_i)| + 1)``, ``u = 2^-53``,

    of the exact one (tests/test_beta.py checks the bound against an independent
    computation of ``L`` from trigamma integrals, for shapes up to 10^7). A computed
    ``H^2 = -expm1(L)`` within that bound is rounding noise: the distance is 0 (a
    posterior equal to an ideal one), and a ratio with it in the denominator is infinite.

    >>> hellinger(3, 4, 3, 4)
    0.0
    >>> hellinger(100_001, 1, 100_001 + 1e-9, 1)   # equal to working precision
    0.0
    >>> round(hellinger(1, 101, 101, 1), 6)
    1.0
    """
    return _distance(*_log_coefficient(a1, b1, a2, b2))


def _log_coefficient(a1, b1, a2, b2):
    """:func:`hellinger`'s log Bhattacharyya coefficient and the size of the log-gamma
    values it is made of (its rounding bound's scale), of numbers or arrays alike."""
    special = _special()
    middle = ((a1 + a2) / 2, (b1 + b2) / 2)
    log_coefficient = special.betaln(*middle) - 0.5 * (special.betaln(a1, b1)
                                                       + special.betaln(a2, b2))
    size = (_log_beta_size(*middle) + 0.5 * _log_beta_size(a1, b1)
            + 0.5 * _log_beta_size(a2, b2))
    return log_coefficient, size


def _distance(log_coefficient: float, size: float) -> float:
    """The Hellinger distance from its log Bhattacharyya coefficient: 0 within rounding
    (see :func:`hellinger`)."""
    squared = -math.expm1(log_coefficient)
    if squared <= _LOG_BETA_ERROR * size:
        return 0.0
    return float(math.sqrt(min(squared, 1.0)))


#: The rounding bound of :func:`hellinger`'s log Bhattacharyya coefficient, per unit of
#: the size of its log-gamma values: 12 u (see its Notes).
_LOG_BETA_ERROR = 12 * 2.0**-53


def _log_beta_size(a, b):
    """``|ln Gamma(a)| + |ln Gamma(b)| + |ln Gamma(a + b)| + 3``: the size of the log-gamma
    values that ``ln B(a, b)`` is made of (see :func:`hellinger`); numbers or arrays."""
    special = _special()
    return abs(special.gammaln(a)) + abs(special.gammaln(b)) + abs(special.gammaln(a + b)) + 3


@checked(a1=_shape, b1=_shape, a2=_shape, b2=_shape)
def prob_greater(a1: float, b1: float, a2: float, b2: float) -> float:
    """P(X > Y) for independent X ~ Beta(a1, b1), Y ~ Beta(a2, b2).

    The integral of ``pdf_X(t) cdf_Y(t)`` over [0, 1], split at 1/2 and computed on
    each half from its endpoint (``t`` on the lower half, ``1 - t`` on the upper one, so
    that both tails keep their digits) by Gauss-Legendre quadrature on pieces cut at both
    distributions' quantiles (1e-12 to 1 - 1e-12). A shape below 1 makes ``pdf_X``
    infinite at that endpoint; there the variable ``v = w^(1/shape) / 2`` removes the
    singularity. Agrees with the closed form for integer shapes of Y to about 1e-11 for
    shapes from 0.03 to 1000, U-shaped Betas included (tests/test_beta.py).

    Returns
    -------
    float
        P(X > Y) in [0, 1].

    Raises
    ------
    ProbmutError
        For a shape that is not a positive finite number.

    Examples
    --------
    >>> round(prob_greater(2, 1, 1, 1), 12)     # max of two uniforms vs one: 2/3
    0.666666666667
    >>> round(prob_greater(0.5, 0.5, 1, 1), 12)  # arcsine vs uniform: 1/2 by symmetry
    0.5
    """
    log_beta = _special().betaln(a1, b1)
    levels = np.array([1e-12, 1e-9, 1e-6, 1e-3, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999,
                       1 - 1e-6, 1 - 1e-9, 1 - 1e-12])
    # Cuts as distances from 0 (lower half) and from 1 (upper half: mirrored quantiles).
    shapes = ((a1, b1), (a2, b2))
    from_zero = np.concatenate([_special().betaincinv(a, b, levels) for a, b in shapes])
    from_one = np.concatenate([_special().betaincinv(b, a, levels) for a, b in shapes])
    lower = _half_integral(a1, b1, log_beta, from_zero, lambda t: _special().betainc(a2, b2, t))
    upper = _half_integral(b1, a1, log_beta, from_one, lambda s: _special().betaincc(b2, a2, s))
    return float(min(max(lower + upper, 0.0), 1.0))


def _half_integral(near: float, far: float, log_beta: float, cuts, cdf) -> float:
    # Integral over v in [0, 1/2] of v^(near-1) (1-v)^(far-1) / B cdf(v) dv: v is the
    # distance to the endpoint whose shape is `near`.
    nodes, weights = _gauss_legendre()
    cuts = np.r_[0.0, cuts[(cuts > 0) & (cuts < 0.5)], 0.5]
    if near < 1:   # v = w^(1/near) / 2: v^(near-1) dv = 2^-near / near dw
        cuts = (2 * cuts) ** near
    edges = np.unique(cuts)
    left, right = edges[:-1, None], edges[1:, None]
    x = (right - left) / 2 * nodes[None, :] + (right + left) / 2
    if near < 1:
        v = 0.5 * x ** (1 / near)
        log_density = -near * math.log(2) - math.log(near) + _special().xlog1py(far - 1, -v)
    else:
        v = x
        log_density = _special().xlogy(near - 1, v) + _special().xlog1py(far - 1, -v)
    values = np.exp(log_density - log_beta) * cdf(v)
    return float(np.sum((right - left) / 2 * weights[None, :] * values))


@functools.cache
def _gauss_legendre(points: int = 64):
    return np.polynomial.legendre.leggauss(points)


# --- many Beta summaries at once (Monte-Carlo error and sample-size studies) -------------

def _mixture_on_grid(counts: np.ndarray, trials: int, x: np.ndarray) -> np.ndarray:
    # Mixture densities of many rows of kill counts: the counts take only N + 1 values, so
    # each row's mixture is its histogram times the N + 1 possible resample posteriors.
    histogram = np.zeros((counts.shape[0], trials + 1))
    np.add.at(histogram, (np.repeat(np.arange(counts.shape[0]), counts.shape[1]),
                          counts.ravel()), 1.0 / counts.shape[1])
    k = np.arange(trials + 1, dtype=np.float64)
    return histogram @ beta_pdf(x[None, :], k[:, None] + 1, trials - k[:, None] + 1)


def _least_squares_batch(counts: np.ndarray, trials: int, grid_step: float,
                         max_iterations: int = 200):
    """Levenberg-Marquardt on all rows at once, in (log a, log b); NaN where not converged."""
    x = np.arange(1e-8, 1, grid_step)
    log_x, log_1mx = np.log(x), np.log1p(-x)
    target = _mixture_on_grid(counts, trials, x)
    a0, b0 = resample_posteriors(counts, trials)
    params = np.log(np.column_stack([a0.mean(axis=1), b0.mean(axis=1)]))
    damping = np.full(len(counts), 1e-3)
    done = np.zeros(len(counts), dtype=bool)

    def residuals(p, rows):
        a, b = np.exp(p[:, 0])[:, None], np.exp(p[:, 1])[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            f = np.exp((a - 1) * log_x + (b - 1) * log_1mx - _special().betaln(a, b))
        return f, a, b, f - target[rows]

    for _ in range(max_iterations):
        rows = np.flatnonzero(~done)
        if rows.size == 0:
            break
        p = params[rows]
        f, a, b, r = residuals(p, rows)
        cost = np.einsum("ij,ij->i", r, r)
        both = _special().digamma(a + b)
        ju = f * a * (log_x - _special().digamma(a) + both)
        jv = f * b * (log_1mx - _special().digamma(b) + both)
        huu, hvv = np.einsum("ij,ij->i", ju, ju), np.einsum("ij,ij->i", jv, jv)
        huv = np.einsum("ij,ij->i", ju, jv)
        gu, gv = np.einsum("ij,ij->i", ju, r), np.einsum("ij,ij->i", jv, r)
        lam = damping[rows]
        duu, dvv = huu * (1 + lam), hvv * (1 + lam)
        det = duu * dvv - huv**2
        step = np.column_stack([(-dvv * gu + huv * gv) / det, (huv * gu - duu * gv) / det])
        trial = p + step
        _, _, _, r_new = residuals(trial, rows)
        cost_new = np.einsum("ij,ij->i", r_new, r_new)
        better = np.isfinite(cost_new) & (cost_new <= cost) & np.all(np.isfinite(step), axis=1)
        params[rows[better]] = trial[better]
        damping[rows] = np.where(better, lam * 0.3, lam * 10)
        small = np.max(np.abs(step), axis=1) < 1e-10
        done[rows] = (better & small) | (damping[rows] > 1e12)
    a, b = np.exp(params[:, 0]), np.exp(params[:, 1])
    a[~done] = np.nan
    return a, b


def fit_beta_batch(kill_counts, trials: int, fit: str = "moments", grid_step: float = 0.001,
                   solver: str = "lm") -> tuple[np.ndarray, np.ndarray]:
    """Beta summaries of many bagged posteriors at once, one per row of kill counts.

    The same fits as :func:`fit_moments` and :func:`fit_least_squares`, vectorised over
    rows. The least-squares fit with ``solver="lm"`` runs Levenberg-Marquardt on every
    row at once (in ``log a, log b``, from the paper's starting point) to the minimum of
    the same objective; a row that does not converge falls back to ``curve_fit``.
    ``curve_fit`` stops earlier (relative cost change 1e-8), so the two agree to about
    1e-5 relative in (a, b), with the LM cost never higher. ``solver="curve_fit"`` runs
    the paper's ``curve_fit`` on each row (exact reproduction, one row at a time; their
    speeds: docs/benchmarks.md).

    Examples
    --------
    >>> counts = np.array([[10, 12, 8, 11], [50, 55, 45, 52]])
    >>> a, b = fit_beta_batch(counts, 100, "lsq", 0.01)
    >>> bool(np.allclose([a[1], b[1]], fit_least_squares(counts[1], 100, 0.01), rtol=1e-7))
    True
    """
    counts = np.asarray(kill_counts, dtype=np.int64)
    if counts.ndim != 2:
        raise ProbmutError("kill counts for a batch of fits must be 2-D (fits x resamples)")
    if fit == "moments":
        # The mixture's mean, its complement and its variance (mean of the variances plus
        # variance of the means), each summed from positive terms: no cancellation, so
        # equal resamples give their own Beta to a few ulps, whatever N.
        a, b = resample_posteriors(counts, trials)
        total = a + b
        means = a / total
        mean, complement = means.mean(axis=1), (b / total).mean(axis=1)
        variance = ((a * b / (total**2 * (total + 1))).mean(axis=1)
                    + ((means - mean[:, None]) ** 2).mean(axis=1))
        common = mean * complement / variance - 1
        return mean * common, complement * common
    if fit != "lsq":
        raise ProbmutError(f"unknown Beta fit {fit!r}; choose one of {', '.join(FITS)}")
    if solver not in SOLVERS:
        raise ProbmutError(f"unknown least-squares solver {solver!r}; choose one of "
                           f"{', '.join(SOLVERS)}")
    if solver == "lm":
        a, b = _least_squares_batch(counts, trials, grid_step)
    else:
        a, b = np.full(len(counts), np.nan), np.full(len(counts), np.nan)
    for row in np.flatnonzero(~np.isfinite(a)):
        a[row], b[row] = fit_least_squares(counts[row], trials, grid_step)
    return a, b


# --- the similarity ratio -----------------------------------------------------------------

def ideal_distances(a: float, b: float, trials: int) -> tuple[float, float]:
    """Hellinger distances of Beta(a, b) to the ideal sound posterior ``Beta(1, N + 1)``
    and to the ideal mutant posterior ``Beta(N + 1, 1)``, ``N = trials``.

    >>> ideal_distances(1, 101, 100)
    (0.0, 1.0)
    """
    return hellinger(a, b, 1, trials + 1), hellinger(a, b, trials + 1, 1)


def similarity_ratio(h_sound: float, h_mutant: float) -> float:
    """``H_sound / H_mutant``, infinite when the posterior is the ideal mutant one; above
    the threshold (1 by default) means killed.

    >>> similarity_ratio(0.5, 0.25), similarity_ratio(1.0, 0.0)
    (2.0, inf)
    """
    return h_sound / h_mutant if h_mutant > 0 else math.inf


def ratio_of(mean: float, var: float, trials: int) -> float:
    """Similarity ratio of the Beta with this mean and variance (moment matching).

    >>> ratio_of(0.99, 0.0001, 100) > 1 > ratio_of(0.01, 0.0001, 100)
    True
    """
    common = mean * (1 - mean) / var - 1
    a, b = mean * common, (1 - mean) * common
    return similarity_ratio(*ideal_distances(a, b, trials))


def ratios_of(means, variances, trials: int) -> np.ndarray:
    """:func:`ratio_of` of many posteriors at once, the very same numbers: the log-Beta
    and log-gamma functions run on whole arrays (most of the time of one ratio).

    >>> ratios_of([0.99, 0.01], [0.0001, 0.0001], 100).tolist() == [
    ...     ratio_of(0.99, 0.0001, 100), ratio_of(0.01, 0.0001, 100)]
    True
    """
    means, variances = np.asarray(means, dtype=np.float64), np.asarray(variances, np.float64)
    common = means * (1 - means) / variances - 1
    a, b = means * common, (1 - means) * common
    def distances(a2, b2):
        logs, sizes = (np.asarray(v).tolist() for v in _log_coefficient(a, b, a2, b2))
        return [_distance(log, size) for log, size in zip(logs, sizes, strict=True)]

    return np.array([similarity_ratio(s, m) for s, m in zip(
        distances(1, trials + 1), distances(trials + 1, 1), strict=True)])
