"""How many instances must I train? A verdict and fresh-instance predictions from a pilot.

From a *pilot* (a few healthy and mutant instances, from about 20 per side) this module
predicts what the bagged posterior (METHOD.md section 3) would give on populations of
*fresh* instances, and whether the pilot already settles the decision a large population
would reach. The method, its assumptions and its validation on the bundled data:
docs/recommend.md.

Model of fresh instances
    The pilot resampled: an instance is a pilot instance picked at random (with
    replacement), its deviation from the pilot's mean stretched by sqrt(P / (P - 1)) so
    that instances keep the pilot's mean and unbiased covariance. Paired (model-level)
    pilots are resampled as (healthy, mutant) pairs, so a fresh pair keeps the pairing.
    (A smoothed resample, with a normal kernel jitter, predicted the measured bands less
    well on the bundled data: docs/recommend.md, table (d).)

Predictions per population size n
    ``draws`` simulated populations of n fresh instances per side, each analysed exactly
    as a real one (the compiled engine; the same B, N, k, criterion and Beta fit): the
    95% band of their posterior means, and the share judged as a large population
    would be. These describe fresh instances *if the mutant is as the pilot shows*.

Verdict: the pilot's own uncertainty
    Where the shape's location and spread come from is uncertain too: for the verdict,
    each simulated population of ``reference`` instances (200, the paper's size) places
    the pilot's shape at a draw from the posterior of the mean and covariance under a
    normal model (Jeffreys prior: covariance from an inverse Wishart with P - 1 degrees
    of freedom around the pilot's, mean normal around the pilot's with covariance / P).
    The share of these populations judged killed is the predicted probability that a
    large population is killed (``p_killed``). ``killed`` when it is at least the
    threshold, ``not killed`` when at most 1 minus it, else ``not settled``; with one
    look, the threshold is ``level`` (below). (Resampling the pilot
    instead, a double bootstrap, was measured to be overconfident: it cannot see that a
    small pilot's spread is often too small; docs/recommend.md.)

Settling over repeated looks
    A verdict looked at again after every round of training (``train --until-settled``)
    gets more chances to settle by luck: with a fixed level of 0.95, 19 looks (20, 30,
    ..., 200 instances per side) end wrongly settled on about 12% of the paths of a
    mutant at the decision boundary. The rule controls the whole sequence. In a latent
    normal model of the verdict (the model of ``needed``: an effect estimate with
    variance 1/n from n instances, a reference population deciding by the sign of its
    own estimate, with variance 1/reference, and p_killed the predictive probability
    of that decision), :func:`sequential_error` computes exactly, by numerical
    integration over the nested looks (the group-sequential recursion of Armitage,
    McPherson and Rowe), the largest chance over true effects that a path ends with a
    settled verdict that a fresh reference population contradicts. The thresholds, one
    per look, relax towards the last look with the shape :data:`SHAPE` and are the
    smallest of that shape that keep this chance at most ``1 - level`` over the planned
    looks (:func:`settle_threshold`; never below ``level``): 0.95 for one look; for the
    19 looks of the command line's defaults, 0.9945 at 20 instances per side down to
    0.95 from 180 on. The Monte-Carlo error of p_killed is inside the rule: the verdict is
    ``killed`` when a one-sided 95% Clopper-Pearson bound on p_killed clears the
    threshold, and when the bound leaves it undecided, more populations are simulated
    (up to ``MORE_DRAWS`` times ``draws``). The validation against fresh populations:
    docs/recommend.md.

Instances needed
    For a verdict that is not settled: the smallest n at which a verdict computed from n
    instances per side would be settled with probability 0.8, if the truth is what the
    pilot estimates. A latent-normal reading of the verdict: the predicted probability
    p of a kill is ``Phi(t)`` for a latent effect t in units of its current spread;
    that spread has a part from the pilot (variance proportional to 1/P) and a part
    from the large population itself (1/reference). A pilot of n has latent estimate
    ``N(t, (1/n) / (1/P + 1/reference))`` and settles when it is at least
    ``Phi^-1(threshold)`` of its own spread away from 0. When no n up to 100 times
    ``max_instances`` does so with probability 0.8, the kill probability sits too close
    to the decision boundary: even a perfectly known mutant would split populations of
    ``reference`` instances between both decisions. ``needed_chance`` is the chance
    that the pilot grown to ``needed`` settles, with the pilot's own uncertainty: given
    the pilot, the grown pilot's latent estimate is ``N(t, (1/P - 1/n) / (1/P +
    1/reference))`` (its P instances kept, the truth uncertain). On the bundled data it
    is the better reading: 0.69 predicted, 60% observed, where ``needed`` promises 0.8
    (docs/recommend.md).

Every random step derives from the seed; each block (one size, or the verdict) has its
own streams, so its numbers do not depend on the other sizes asked for, on ``jobs`` or
on the cache.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from probmut.errors import ProbmutError
from probmut.results import Result

if TYPE_CHECKING:  # the command line reads this module's defaults without the heavy imports
    from probmut.bagging import PosteriorSettings
    from probmut.io.cache import Cache

#: Population sizes of the prediction table, below and above a typical pilot.
DEFAULT_SIZES = (25, 50, 100, 200, 400)
#: "A large population": the paper's 200 instances per side.
REFERENCE_SIZE = 200
#: One look settles when the predicted probability of the large-population decision
#: reaches this level: the smallest of 0.85, 0.9, 0.925, 0.95 and 0.975 at which settled
#: verdicts agreed with the whole populations in at least 98% of the MNIST pilots of 25
#: and of 50 instances (docs/recommend.md); the other models validate it. Over several
#: looks, ``1 - LEVEL`` is the largest chance of a wrong settled verdict at any true
#: effect (:func:`settle_threshold`).
LEVEL = 0.95
#: ``needed`` asks a verdict from n instances to be settled with this probability.
POWER = 0.8
#: Simulated populations per block (per size, and for the verdict's first block).
DRAWS = 100
#: One-sided confidence of the Monte-Carlo bounds on p_killed that the verdict uses.
CONFIDENCE = 0.95
#: The verdict simulates up to this many times ``draws`` populations when the bounds on
#: p_killed leave it undecided (blocks doubling the total: 1, 2, 4, 8 times ``draws``).
MORE_DRAWS = 8
#: Largest population per side ``needed`` may propose.
MAX_INSTANCES = 1000
#: Largest number of simulated accuracies per side of one size (draws x instances), checked
#: before any is drawn: a few arrays of this many take a few hundred MiB.
MAX_SIMULATED = 2**24
#: Names the simulation in cache keys: a change of method does not reuse old blocks.
METHOD = "resampled shape, normal-model posterior 2"


def _median_and_band(values) -> dict:
    return {"median": float(np.median(values)), "low": float(np.quantile(values, 0.025)),
            "high": float(np.quantile(values, 0.975))}


@dataclass(frozen=True)
class SizePrediction:
    """Simulated fresh populations of n instances per side: their posterior means and
    decisions (killed or not) under the bagged posterior."""

    n: int
    means: np.ndarray
    killed: np.ndarray

    @property
    def band(self) -> tuple[float, float]:
        """The 95% band (2.5th and 97.5th percentiles) of the posterior mean."""
        return float(np.quantile(self.means, 0.025)), float(np.quantile(self.means, 0.975))

    @property
    def mean_band(self) -> float:
        low, high = self.band
        return high - low

    @property
    def killed_share(self) -> float:
        return float(self.killed.mean())

    def agreement(self, killed: bool) -> float:
        """Share of the populations that reach the decision ``killed``."""
        return self.killed_share if killed else 1.0 - self.killed_share

    def to_dict(self, killed: bool) -> dict:
        low, high = self.band
        return {"n": self.n, "median": float(np.median(self.means)), "band_low": low,
                "band_high": high, "mean_band": self.mean_band,
                "agreement": self.agreement(killed), "killed_share": self.killed_share}


@dataclass(frozen=True)
class Recommendation(Result):
    """The verdict of a pilot and its predictions for fresh instances (one mutant).

    ``reference_means`` are the posterior means of the verdict's simulated populations
    of the reference size (with the pilot's uncertainty); ``p_killed`` is the share of
    them judged killed and ``p_killed_se`` its Monte-Carlo standard error;
    ``threshold`` is what p_killed had to clear (with its Monte-Carlo error) at this
    look, for ``looks`` planned looks. ``needed`` is the pilot's size when the verdict
    is settled; ``needed_chance`` the chance that a pilot grown to ``needed`` settles,
    with the pilot's uncertainty (None when ``needed`` is None or the verdict settled).
    """

    name: str
    verdict: str
    needed: int | None
    p_killed: float
    reference_means: np.ndarray
    sizes: tuple[SizePrediction, ...]
    pilot: tuple[int, int]
    message: str
    settings: PosteriorSettings
    level: float = LEVEL
    reference: int = REFERENCE_SIZE
    max_instances: int = MAX_INSTANCES
    draws: int = DRAWS
    paired: bool = False
    seed: int | None = None
    needed_chance: float | None = None
    p_killed_se: float = 0.0
    threshold: float = LEVEL
    looks: int = 1

    index = "n"

    @property
    def draws_used(self) -> int:
        """Simulated populations behind ``p_killed`` (``draws`` or more: module notes)."""
        return len(self.reference_means)

    @property
    def leaning(self) -> bool:
        """The decision the pilot leans to (killed if ``p_killed >= 0.5``)."""
        return self.p_killed >= 0.5

    @property
    def predicted_mean(self) -> dict:
        """Median and 95% band of the posterior mean of a large population, with the
        pilot's uncertainty."""
        return _median_and_band(self.reference_means)

    def rows(self) -> list[dict]:
        return [s.to_dict(self.leaning) for s in self.sizes]

    def to_dict(self) -> dict:
        return {"name": self.name, "verdict": self.verdict, "needed": self.needed,
                "needed_chance": self.needed_chance, "p_killed": self.p_killed,
                "p_killed_se": self.p_killed_se, "threshold": self.threshold,
                "looks": self.looks, "level": self.level,
                "predicted_mean": self.predicted_mean, "reference_size": self.reference,
                "pilot": list(self.pilot), "population": min(self.pilot),
                "per_size": self.rows(), "message": self.message,
                "max_instances": self.max_instances, "draws": self.draws,
                "draws_used": self.draws_used,
                "paired": self.paired, "seed": self.seed, "settings": self.settings.describe()}

    def __str__(self) -> str:
        decision = "judged " + ("killed" if self.leaning else "not killed")
        lines = [f"{self.name}: pilot of {self.pilot[0]} healthy and {self.pilot[1]} mutant "
                 "instances" + (", paired" if self.paired else "")]
        if self.sizes:
            lines[0] += (f"; fresh instances predicted from {self.draws} simulated "
                         "populations per size")
            lines.append(f"{'n':>5}  {'posterior mean [95% band]':<26}{'band':>7}{decision:>19}")
        for row in self.rows():
            lines.append(f"{row['n']:>5}  {row['median']:.3f} [{row['band_low']:.3f}, "
                         f"{row['band_high']:.3f}]{'':<5}{row['mean_band']:>7.3f}"
                         f"{row['agreement']:>19.0%}")
        verdict = "KILLED" if self.verdict == "killed" else self.verdict
        lines.append(f"verdict: {verdict}: {self.message}")
        return "\n".join(lines)


# --- the model of fresh instances ---------------------------------------------------------

def _symmetric_root(matrices: np.ndarray, power: float = 0.5) -> np.ndarray:
    """``matrices ** power`` of symmetric positive semi-definite (..., D, D) matrices
    (negative powers act on the non-zero eigenvalues only: a pseudo-inverse root)."""
    values, vectors = np.linalg.eigh(matrices)
    values = np.clip(values, 0, None)
    scale = np.max(values, axis=-1, keepdims=True)
    kept = values > 1e-12 * np.where(scale > 0, scale, 1)
    powered = np.where(kept, np.where(kept, values, 1) ** power, 0)
    return np.einsum("...ij,...j,...kj->...ik", vectors, powered, vectors)


def _shape(rng, sample: np.ndarray, draws: int, n: int) -> np.ndarray:
    """``draws`` x n standardised instances of the pilot's shape: pilot instances picked
    at random with replacement, whitened and stretched so that the draws keep mean 0 and
    identity covariance (P / (P - 1) for the biased sample covariance). ``sample`` is
    (P, D); returns (draws, n, D)."""
    size, dimensions = sample.shape
    deviations = sample - sample.mean(axis=0)
    whitened = deviations @ _symmetric_root(np.cov(sample.T, ddof=1).reshape(
        dimensions, dimensions), -0.5)
    return math.sqrt(size / (size - 1)) * whitened[rng.integers(0, size, (draws, n))]


def _fresh_instances(rng, sample: np.ndarray, draws: int, n: int, uncertain: bool,
                     shape=None):
    """``draws`` populations of n fresh instances like the pilot ``sample`` (P, D).

    The pilot's resampled shape (or ``shape(rng, sample, draws, n)``, standardised draws
    of another; scripts/validation/pilot_validation.py compares one), placed at the pilot's mean
    and unbiased covariance; with ``uncertain``, at a draw from their posterior under a
    normal model instead (Jeffreys prior: covariance ~ inverse Wishart(P - 1, (P - 1) S),
    mean ~ normal(mean, covariance / P)), one draw per population. Returns (draws, n, D).

    >>> rng = np.random.default_rng(0)
    >>> sample = rng.normal(0.9, 0.01, (25, 1))
    >>> fresh = _fresh_instances(rng, sample, 400, 50, uncertain=False)
    >>> fresh.shape, bool(np.isclose(fresh.std(), sample.std(ddof=1), rtol=0.02))
    ((400, 50, 1), True)
    """
    size, dimensions = sample.shape
    centre = np.broadcast_to(sample.mean(axis=0), (draws, dimensions))
    root = np.broadcast_to(_symmetric_root(np.cov(sample.T, ddof=1).reshape(
        dimensions, dimensions)), (draws, dimensions, dimensions))
    if uncertain:  # Bartlett: W ~ Wishart(P - 1, I / (P - 1)); covariance S^1/2 W^-1 S^1/2
        freedom = size - 1
        bartlett = np.zeros((draws, dimensions, dimensions))
        for i in range(dimensions):
            bartlett[:, i, i] = np.sqrt(rng.chisquare(freedom - i, draws))
            bartlett[:, i, :i] = rng.standard_normal((draws, i))
        wishart = bartlett @ bartlett.transpose(0, 2, 1) / freedom
        root = root @ _symmetric_root(wishart, -0.5)
        centre = centre + np.einsum("rij,rj->ri", root,
                                    rng.standard_normal((draws, dimensions))) / math.sqrt(size)
    standardised = (shape or _shape)(rng, sample, draws, n)
    return centre[:, None, :] + np.einsum("rij,rnj->rni", root, standardised)


def _populations(rng, h, m, n: int, draws: int, paired: bool, uncertain: bool, shape=None):
    """Healthy and mutant rows of ``draws`` populations of n fresh instances."""
    if paired:
        both = _fresh_instances(rng, np.column_stack([h, m]), draws, n, uncertain, shape)
        return both[..., 0], both[..., 1]
    return (_fresh_instances(rng, h[:, None], draws, n, uncertain, shape)[..., 0],
            _fresh_instances(rng, m[:, None], draws, n, uncertain, shape)[..., 0])


def _analyse(healthy, mutant, settings: PosteriorSettings, paired: bool, seed, jobs):
    """Posterior mean, decision and posterior variance of every row."""
    from probmut.beta import beta_mean_var, fit_beta_batch, ratios_of
    from probmut.engine import kill_counts

    counts = kill_counts(np.clip(healthy, 0, 1), np.clip(mutant, 0, 1),
                         bootstraps=settings.bootstraps, trials=settings.trials,
                         sample=settings.sample, paired=paired, criterion=settings.criterion,
                         seed=seed, jobs=jobs).reshape(len(healthy), -1)
    a, b = fit_beta_batch(counts, settings.trials, settings.fit, settings.grid_step,
                          settings.solver)
    means, variances = beta_mean_var(a, b)
    killed = ratios_of(means, variances, settings.trials) > settings.threshold
    return means, killed, variances


# --- the verdict over repeated looks ----------------------------------------------------------

#: True effects at which :func:`sequential_error` looks for the largest error, as q, the
#: chance that a fresh reference population is judged killed (the rule is symmetric, so
#: q below 0.5 mirrors these; the largest error lies near q = 0.55 to 0.65).
_TRUTHS = np.linspace(0.5, 0.99, 25)


def _simpson(half: float, spacing: float):
    """Points at most ``spacing`` apart on [-half, half] and their Simpson weights."""
    count = 2 * math.ceil(half / spacing / 2) + 1
    points = np.linspace(-half, half, count)
    weights = np.ones(count)
    weights[1:-1:2], weights[2:-1:2] = 4, 2
    return points, weights * (points[1] - points[0] if count > 1 else 0) / 3


def _wrong_settled(z, looks: tuple, reference: int) -> np.ndarray:
    """Chance of ending with a wrong settled verdict at each truth of ``_TRUTHS``, in the
    latent model (module notes), when the look at ``looks[j]`` settles as soon as the
    latent estimate is ``z[j]`` predictive standard deviations from the boundary
    (p_killed >= Phi(z[j])); ``z`` may be one number for every look.

    The sum Y of n unit-variance effect estimates (drift x per instance) continues while
    |Y| < b_n = z sqrt(n + n^2 / reference). Its sub-density over the continuing paths
    is carried from look to look on Simpson grids at x = 0 and tilted to each truth x
    by the likelihood ratio exp(x Y - n x^2 / 2); the chances to leave upwards (killed)
    and downwards (not killed) at each look are integrated in closed form.
    """
    from scipy import special

    n = np.asarray(looks, dtype=float)
    bound = np.broadcast_to(z, n.shape) * np.sqrt(n + n * n / reference)
    x = special.ndtri(_TRUTHS)[:, None] / math.sqrt(reference)
    up = special.ndtr((n[0] * x[:, 0] - bound[0]) / math.sqrt(n[0]))
    down = special.ndtr((-bound[0] - n[0] * x[:, 0]) / math.sqrt(n[0]))
    if n.size > 1:
        steps = np.diff(n)
        y, weights = _simpson(bound[0], math.sqrt(steps[0]) / 4)
        density = np.exp(-y * y / (2 * n[0])) / math.sqrt(2 * math.pi * n[0])
        for j in range(1, n.size):
            spread = math.sqrt(steps[j - 1])
            mass = density * weights * np.exp(x * y - n[j - 1] * x * x / 2)
            moved = y + steps[j - 1] * x
            up = up + np.sum(mass * special.ndtr((moved - bound[j]) / spread), axis=1)
            down = down + np.sum(mass * special.ndtr((-bound[j] - moved) / spread), axis=1)
            if j < n.size - 1:
                following, weights_next = _simpson(bound[j], math.sqrt(steps[j]) / 4)
                kernel = np.exp(-(following[:, None] - y) ** 2 / (2 * steps[j - 1]))
                density = kernel @ (density * weights) / (spread * math.sqrt(2 * math.pi))
                y, weights = following, weights_next
    return (1 - _TRUTHS) * up + _TRUTHS * down


def _planned(looks) -> tuple[int, ...]:
    """The planned looks as given: positive instance counts in increasing order, each
    once (a plan out of order or with a repeat is refused, not guessed at).

    >>> _planned(range(20, 50, 10))
    (20, 30, 40)
    >>> _planned([50, 40])
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: the planned looks must be given in increasing order, each once; got [50, 40]
    """
    looks = tuple(int(n) for n in looks)
    if not looks or looks[0] < 1:
        raise ProbmutError(f"the planned looks must be positive numbers of instances, got "
                           f"{list(looks) or 'none'}", option="looks")
    if any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ProbmutError(f"the planned looks must be given in increasing order, each once; "
                           f"got {list(looks)}", option="looks")
    return looks


def sequential_error(thresholds, looks, reference: int = REFERENCE_SIZE) -> float:
    """Largest chance over true effects that a verdict looked at after each of ``looks``
    instances per side, settled when p_killed reaches ``thresholds`` (one per look, in
    increasing order of the looks, or one for all), ends settled and contradicted by a
    fresh population of ``reference`` per side, in the latent normal model (module
    notes; the Monte-Carlo error of p_killed aside).

    >>> round(sequential_error(0.95, [20]), 3), round(sequential_error(0.95, range(20, 201, 10)), 3)
    (0.042, 0.118)
    """
    from scipy import special

    return float(_wrong_settled(special.ndtri(np.asarray(thresholds, dtype=float)),
                                _planned(looks), reference).max())


#: The thresholds' shape over the looks: on the latent scale the threshold at a look of n
#: instances is ``z (n / n_last) ** -SHAPE`` (never below the level). 0: the same
#: threshold at every look. Thresholds relaxing towards the last look (0.2, the rule
#: before) spend the latent model's budget late, which the real verdict does not repay:
#: on the same paths they settled clear mutants later and left as many wrong settled
#: verdicts (docs/recommend.md, calibration).
SHAPE = 0.0
#: The latent model's budget is this many times the verdict's (1 - level): the real
#: verdict spends less than the latent model allows (its Monte-Carlo bound, and a
#: predictive probability less extreme than the model's), and the rule is calibrated to
#: the real verdict's measured error, not to the model's: at 1.5 the worst measured wrong
#: share over effects and three shapes of populations stays within 1 - level
#: (scripts/validation/sequential_validation.py; docs/recommend.md).
SPEND = 1.5


@functools.lru_cache(maxsize=256)
def _last_z(looks: tuple, reference: int, budget: float, shape: float, floor: float) -> float:
    """The z of the thresholds ``max(floor, Phi(z (n / n_last) ** -shape))`` at which
    :func:`sequential_error` is ``budget`` (0 when the floor alone keeps it lower)."""
    from scipy import optimize, special

    lowest = special.ndtri(floor) if floor > 0.5 else -np.inf
    scale = (np.asarray(looks, dtype=float) / looks[-1]) ** -shape

    def excess(z):
        return _wrong_settled(np.maximum(lowest, z * scale), looks, reference).max() - budget

    if excess(0) <= 0:
        return 0.0
    return float(optimize.brentq(excess, 0, 8, xtol=1e-6))


def plan_thresholds(looks, reference: int = REFERENCE_SIZE, *, budget: float,
                    shape: float = SHAPE, floor: float = 0.5) -> np.ndarray:
    """Thresholds on p_killed, one per look of ``looks`` (sorted), of the form
    ``max(floor, Phi(z (n / n_last) ** -shape))`` with the smallest z at which the
    latent model's worst chance of a wrong settled verdict (:func:`sequential_error`)
    is ``budget``.

    >>> plan_thresholds([20, 200], budget=0.05, shape=0).round(4).tolist()
    [0.9504, 0.9504]
    """
    from scipy import special

    looks = _planned(looks)
    z = _last_z(looks, int(reference), float(budget), float(shape), float(floor))
    return np.maximum(floor, special.ndtr(z * (np.asarray(looks) / looks[-1]) ** -shape))


def settle_threshold(n: int, looks, reference: int = REFERENCE_SIZE,
                     level: float = LEVEL) -> float:
    """The level p_killed must reach to settle a verdict from n instances per side, when
    the verdict is looked at after each of ``looks`` instances per side: thresholds of
    the shape :data:`SHAPE`, the smallest at which :func:`sequential_error` is at most
    :data:`SPEND` times ``1 - level``, and never below ``level`` itself (the threshold of
    a single look).

    >>> settle_threshold(20, [20])
    0.95
    >>> looks = range(20, 201, 10)
    >>> [round(settle_threshold(n, looks), 4) for n in (20, 30, 100, 200)]
    [0.9676, 0.9676, 0.9676, 0.9676]
    """
    from scipy import special

    if not 0.5 < level < 1:
        raise ProbmutError(f"the verdict level must be in (0.5, 1), got {level}", option="level")
    looks = _planned(looks)
    z = _last_z(looks, int(reference), SPEND * (1 - float(level)), SHAPE, float(level))
    return float(max(level, special.ndtr(z * (n / looks[-1]) ** -SHAPE)))

def verdict_seed(seed, name: str, look: int) -> int:
    """The seed of one mutant's verdict at one look of a run: derived from the run's seed,
    the mutant's name and the look (instances per side), so that the verdicts of a
    campaign, and of one mutant at successive looks, simulate independent populations
    and their Monte-Carlo errors are not correlated.

    >>> verdict_seed(42, "change_label_3.12", 20) != verdict_seed(42, "change_label_3.12", 30)
    True
    """
    from probmut.engine import seed_sequence

    root = seed_sequence(seed)
    return int(np.random.SeedSequence(root.entropy, spawn_key=(
        *root.spawn_key, zlib.crc32(name.encode()), int(look))).generate_state(1, np.uint64)[0])


def _bounds(killed: int, draws: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (of this confidence) on p_killed from ``killed`` of
    ``draws`` simulated populations.

    >>> [round(b, 4) for b in _bounds(100, 100)]
    [0.9705, 1.0]
    """
    from scipy.stats import beta

    low = 0.0 if killed == 0 else float(beta.ppf(1 - confidence, killed, draws - killed + 1))
    high = 1.0 if killed == draws else float(beta.ppf(confidence, killed + 1, draws - killed))
    return low, high


def _call(killed: int, draws: int, threshold: float,
          confidence: float = CONFIDENCE) -> str | None:
    """The verdict from ``killed`` of ``draws`` populations, or None while the bounds on
    p_killed leave it undecided (one of them on the far side of a threshold)."""
    low, high = _bounds(killed, draws, confidence)
    if low >= threshold:
        return "killed"
    if high <= 1 - threshold:
        return "not killed"
    if high < threshold and low > 1 - threshold:
        return "not settled"
    return None


# --- the instances needed ---------------------------------------------------------------------

def _boundary(settings: PosteriorSettings, variance: float) -> float:
    """Posterior mean at which the decision flips, for a posterior of this variance."""
    from probmut.beta import ratio_of

    low, high = 1e-6, 1 - 1e-6
    for _ in range(60):
        middle = (low + high) / 2
        spread = min(variance, 0.5 * middle * (1 - middle))
        if ratio_of(middle, spread, settings.trials) > settings.threshold:
            high = middle
        else:
            low = middle
    return (low + high) / 2


#: ``needed`` looks this many times beyond the larger of the pilot and the cap.
_SEARCH = 100


def settle_chance(p_killed: float, draws: int, pilot: float, threshold: float,
                   reference: int, n, grown: bool):
    """Chance that a verdict from n instances per side is settled (module notes: Instances
    needed), read from a pilot's ``p_killed`` (a share of ``draws`` populations): if the
    truth is the pilot's estimate, or (``grown``) for the pilot grown to n, its
    uncertainty included. ``n`` may be an array of sizes above the pilot's.

    >>> round(float(settle_chance(0.06, 100, 25, 0.95, 200, 70, grown=False)), 2)
    0.8
    >>> round(float(settle_chance(0.06, 100, 25, 0.95, 200, 70, grown=True)), 2)
    0.74
    """
    from scipy import special

    p = min(max(p_killed, 0.5 / draws), 1 - 0.5 / draws)
    latent = abs(float(special.ndtri(p)))
    unit = 1 / pilot + 1 / reference
    n = np.asarray(n, dtype=float)
    spread = np.sqrt((1 / n + 1 / reference) / unit)
    noise = np.sqrt(((1 / pilot - 1 / n) if grown else 1 / n) / unit)
    return special.ndtr((latent - special.ndtri(threshold) * spread) / noise)


def _needed(p_killed: float, draws: int, pilot: float, threshold: float, reference: int,
            max_instances: int) -> int | None:
    """Instances per side that would settle the verdict (module notes), ignoring the cap;
    None if no size up to ``_SEARCH`` times the cap would.

    >>> _needed(0.10, 100, 25, 0.95, 200, 1000), _needed(0.35, 100, 25, 0.95, 200, 1000)
    (114, None)
    """
    n = np.arange(math.floor(pilot) + 1, _SEARCH * max(max_instances, math.ceil(pilot)) + 1)
    chance = settle_chance(p_killed, draws, pilot, threshold, reference, n, grown=False)
    reached = np.flatnonzero(chance >= POWER)
    return int(n[reached[0]]) if reached.size else None


def _message(verdict, p_killed, se, threshold, looks, level, needed, mean, boundary,
             reference, max_instances, pilot, needed_chance):
    band = f"{mean['median']:.2f} [{mean['low']:.2f}, {mean['high']:.2f}]"
    over_looks = (f" (this look's threshold in a plan that keeps wrong settled verdicts at "
                  f"most {1 - level:.2g} over {looks} looks)" if looks > 1 else "")
    if verdict != "not settled":
        share = p_killed if verdict == "killed" else 1 - p_killed
        return (f"a large population ({reference} per side) would be judged {verdict} with "
                f"predicted probability {share:.2f} (standard error {se:.2f}), at least "
                f"{threshold:.3g} with its Monte-Carlo error{over_looks}, the uncertainty of the "
                f"{pilot}-instance pilot included; its posterior mean would be about {band}.")
    why = (f"a large population ({reference} per side) would be judged killed with predicted "
           f"probability {p_killed:.2f} (standard error {se:.2f}): with its Monte-Carlo error, "
           f"neither at most {1 - threshold:.2g} nor at least {threshold:.3g}{over_looks}; its "
           f"posterior mean would be about {band}, decision boundary {boundary:.2f}.")
    if needed is None:
        return (why + " At the pilot's estimate the kill probability sits so close to the "
                f"boundary that populations of {reference} split between both decisions "
                "however well the mutant is known: more instances sharpen the estimate but do "
                "not settle the decision; report the posterior mean and its interval instead.")
    odds = (f"(with probability {POWER:g} if the kill probability is the pilot's estimate; "
            f"about {needed_chance:.2f} for this pilot grown to that size, its uncertainty "
            "included)")
    if needed <= max_instances:
        return why + f" About {needed} instances per side would settle it {odds}."
    return (why + f" It would take about {needed} instances per side {odds}, more than "
            f"{max_instances}: report the posterior mean and its interval instead.")


def recommend(healthy, mutant, settings: PosteriorSettings | None = None, *,
              sizes=DEFAULT_SIZES, draws: int = DRAWS, level: float = LEVEL,
              reference: int = REFERENCE_SIZE, max_instances: int = MAX_INSTANCES,
              looks=None, paired: bool = False, seed=None, jobs: int | None = None,
              cache: Cache | None = None, progress: bool = False,
              name: str | None = None) -> Recommendation:
    """The verdict of a pilot and its predictions for fresh instances (module notes).

    Parameters
    ----------
    healthy, mutant : the pilot: :class:`~probmut.io.populations.Population` or arrays
        of accuracies, each at least the sample size k.
    settings : how every simulated population is analysed (default
        :class:`PosteriorSettings`: B = N = 100, k = 20).
    sizes : population sizes n per side of the prediction table (each at least k;
        empty for the verdict alone).
    draws : simulated populations per size, and for the verdict's first block.
    level : with one look, the predicted probability at which the verdict is settled;
        over ``looks``, ``1 - level`` bounds the chance of a wrong settled verdict.
    reference : size of "a large population", whose decision the verdict predicts.
    max_instances : largest population per side ``needed`` may propose.
    looks : the instances per side at which the verdict is looked at, in increasing
        order, this pilot's size (the smaller side) among them (default: this pilot
        only); see :func:`settle_threshold`.
    paired : model-level mutation: ids drawn jointly (populations aligned by id).
    seed, jobs : same seed, same numbers, for any ``jobs``.
    cache : a :class:`~probmut.io.cache.Cache` to reuse blocks across runs.
    progress : show progress on stderr (see :func:`probmut.progress.progress`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h, m = rng.normal(0.99, 0.002, 25), rng.normal(0.986, 0.002, 25)
    >>> advice = recommend(h, m, sizes=(25, 100), draws=40, seed=1)
    >>> advice.verdict, [s.n for s in advice.sizes], advice.draws_used
    ('killed', [25, 100], 160)
    """
    from probmut.bagging import PosteriorSettings
    from probmut.engine import seed_sequence
    from probmut.io.cache import Cache
    from probmut.io.populations import aligned
    from probmut.progress import progress as progress_display

    settings = settings or PosteriorSettings()
    healthy, mutant = aligned(healthy, mutant, paired)
    name = name or mutant.name
    h, m = healthy.values, mutant.values
    k = settings.sample
    if min(h.size, m.size) < k:
        raise ProbmutError(
            f"the pilot holds {h.size} healthy and {m.size} mutant instances, fewer than the "
            f"sample size k = {k}: train at least {k} per side (or lower --sample)",
            option="sample")
    if paired and h.size < 3:  # the (healthy, mutant) covariance needs 2 degrees of freedom
        raise ProbmutError(f"a paired pilot needs at least 3 instances, got {h.size}")
    sizes = sorted({int(n) for n in sizes})
    if sizes and sizes[0] < k:
        raise ProbmutError(f"population sizes must be at least the sample size k = {k}; got "
                           f"{sizes}", option="sizes")
    if draws < 10:
        raise ProbmutError(f"draws must be at least 10, got {draws}", option="draws")
    def largest_block(draws):
        """The largest block: a size's, or the last doubling of the verdict's populations."""
        blocks = [(draws, n) for n in sizes] + [(MORE_DRAWS // 2 * draws, reference)]
        return max(blocks, key=lambda block: block[0] * block[1])

    count, largest = largest_block(draws)
    if count * largest > MAX_SIMULATED:
        fewer = largest_block(min(draws, DRAWS))  # the option to blame: fits without it
        raise ProbmutError(
            f"{count:,} simulated populations of {largest:,} instances per side exceed the "
            f"limit of {MAX_SIMULATED:,} accuracies per side and size; lower the sizes or "
            "the draws", option="draws" if fewer[0] * fewer[1] <= MAX_SIMULATED else
            "reference" if largest == reference else "sizes")
    if reference < k or max_instances < k:
        raise ProbmutError(f"the reference size and max instances must be at least k = {k}")
    pilot = min(h.size, m.size)
    looks = _planned((pilot,) if looks is None else looks)
    if looks[0] < k:
        raise ProbmutError(f"the planned looks must be at least the sample size k = {k}; got "
                           f"{list(looks)}", option="looks")
    if pilot not in looks:
        raise ProbmutError(f"the planned looks {list(looks)} leave out this pilot's {pilot} "
                           "instances per side: this verdict is one of the looks, and a plan "
                           "without it would settle it at another look's threshold; add "
                           f"{pilot} to the looks", option="looks")
    threshold = settle_threshold(pilot, looks, reference, level)
    lowest = settle_threshold(looks[-1], looks, reference, level)
    if _bounds(MORE_DRAWS * draws, MORE_DRAWS * draws)[0] < lowest:
        raise ProbmutError(
            f"the verdict's threshold {lowest:.4g} is out of reach of {MORE_DRAWS * draws} "
            f"simulated populations ({MORE_DRAWS} times the draws): raise the draws or lower "
            "the level", option="draws")
    root = seed_sequence(seed)
    cache = cache or Cache(None)

    def simulate(role, n, block=0, count=draws):
        stored = simulate_block(h, m, settings, role=role, n=n, block=block, count=count,
                                paired=paired, root=root, cache=cache, jobs=jobs)
        if block:
            bar.total += 1  # a block that doubles the populations behind p_killed
        bar.update()
        return stored

    # the verdict may double its populations until MORE_DRAWS times the draws
    most = 1 + len(sizes) + math.ceil(math.log2(MORE_DRAWS))
    with progress_display(1 + len(sizes), f"recommend {name}", enabled=progress,
                          unit="block", most=most) as bar:
        verdict, verdict_blocks = _settle(
            lambda block, count: simulate("verdict", reference, block, count), threshold,
            draws)
        predictions = []
        for n in sizes:
            block = simulate("size", n)
            predictions.append(SizePrediction(n, block["means"], block["killed"]))
    means, variances = (np.concatenate([b[field] for b in verdict_blocks])
                        for field in ("means", "variances"))
    killed, used = _killed_of(verdict_blocks)
    p_killed = killed / used
    se = math.sqrt(p_killed * (1 - p_killed) / used)
    boundary = _boundary(settings, float(np.median(variances)))
    needed, needed_chance = pilot, None
    if verdict == "not settled":
        effective = 2 / (1 / h.size + 1 / m.size)  # the pilot's size for a difference
        needed = _needed(p_killed, used, effective, threshold, reference, max_instances)
        if needed is not None:
            needed_chance = float(settle_chance(p_killed, used, effective, threshold,
                                                 reference, needed, grown=True))
    message = _message(verdict, p_killed, se, threshold, len(looks), level, needed,
                       _median_and_band(means), boundary, reference, max_instances, pilot,
                       needed_chance)
    if needed is not None and needed > max_instances:
        needed, needed_chance = None, None
    return Recommendation(name, verdict, needed, p_killed, means, tuple(predictions),
                          (h.size, m.size), message, settings, level, reference,
                          max_instances, draws, paired, seed, needed_chance, se, threshold,
                          len(looks))


def simulate_block(h, m, settings: PosteriorSettings, *, role: str, n: int, block: int,
                   count: int, paired: bool, root: np.random.SeedSequence,
                   cache: Cache, jobs=None) -> dict:
    """One block of ``count`` simulated populations of n fresh instances per side of the
    pilot ``h``, ``m``, analysed (cached): ``role`` "verdict" (the pilot's uncertainty
    included; block 0, then the blocks that double the total) or "size" (a prediction).
    Each block has its own streams from ``root``. Returns {"means", "killed",
    "variances"}, one value per population."""
    from probmut.io.cache import cache_key

    extra = () if block == 0 else (block,)
    key = cache_key("recommend", METHOD, h, m, paired, settings, count, root.entropy,
                    root.spawn_key, role, n, *extra)
    stored = cache.get(key, shapes={"means": (count,), "killed": (count,),
                                    "variances": (count,)})
    if stored is None:
        draw_stream, engine_stream = np.random.SeedSequence(
            root.entropy, spawn_key=root.spawn_key + ((2, n, block) if block else
                                                      (int(role == "verdict"), n))).spawn(2)
        rows = _populations(np.random.default_rng(draw_stream), h, m, n, count, paired,
                            uncertain=role == "verdict")
        means, killed, variances = _analyse(*rows, settings, paired, engine_stream, jobs)
        stored = {"means": means, "killed": killed, "variances": variances}
        cache.put(key, **stored)
    return stored


def _settle(simulate, threshold: float, draws: int, confidence: float = CONFIDENCE):
    """The verdict and the blocks of simulated populations behind it: ``simulate(block,
    count)`` gives block number ``block`` of ``count`` populations (a dict whose
    "killed" says which were judged killed); blocks are added, doubling the total,
    while the bounds on p_killed leave the verdict undecided, up to ``MORE_DRAWS``
    times ``draws`` (then: not settled)."""
    blocks = [simulate(0, draws)]
    while (verdict := _call(*_killed_of(blocks), threshold, confidence)) is None:
        used = _killed_of(blocks)[1]
        if used >= MORE_DRAWS * draws:
            return "not settled", blocks
        blocks.append(simulate(len(blocks), used))
    return verdict, blocks


def _killed_of(blocks) -> tuple[int, int]:
    """Populations judged killed, and simulated, over the verdict's blocks."""
    return (int(sum(np.count_nonzero(b["killed"]) for b in blocks)),
            sum(len(b["killed"]) for b in blocks))
