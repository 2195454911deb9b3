"""How many instances must I train? A verdict and fresh-instance predictions from a pilot.

From a *pilot* (a few healthy and mutant instances, from about 20 per side),
:func:`recommend` predicts what the bagged posterior (METHOD.md section 3) would give on
populations of fresh instances, and whether the pilot already settles the decision a large
population would reach:

- fresh instances are the pilot resampled (its deviations stretched to keep the pilot's
  mean and unbiased covariance; paired pilots resampled as pairs), and every simulated
  population is analysed as a real one (the compiled engine; the same B, N, k, criterion
  and Beta fit);
- the verdict's simulated populations of the reference size place that shape at a draw
  from the posterior of the pilot's mean and covariance (a normal model, Jeffreys'
  prior), so p_killed, the share judged killed, carries the pilot's uncertainty;
- when the verdict settles, over one look or several, and how many instances would
  settle it: :mod:`probmut.sequential`.

Every random step derives from the seed (:mod:`probmut.seeds`): each block (one size, or
the verdict) has its own streams, so its numbers do not depend on the other sizes asked
for, on ``threads`` or on the cache. The method, its assumptions and its validation:
docs/recommend.md.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from probmut import seeds, sequential
from probmut.errors import ProbmutError
from probmut.results import Result
from probmut.sequential import CERTAINTY, MORE_SIMULATIONS, POWER, REFERENCE_SIZE
from probmut.validation import renamed

if TYPE_CHECKING:  # the command line reads this module's defaults without the heavy imports
    from probmut.bagging import PosteriorSettings
    from probmut.io.cache import Cache

#: Population sizes of the prediction table, below and above a typical pilot.
DEFAULT_SIZES = (25, 50, 100, 200, 400)
#: Simulated populations per block (per size, and for the verdict's first block).
SIMULATIONS = 100
#: Largest population per side ``needed`` may propose (a run's cap when there is one:
#: training in rounds passes its ``max_instances``).
NEEDED_UP_TO = 1000
#: Largest number of simulated accuracies per side of one size (populations x instances), checked
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


@dataclass(frozen=True, kw_only=True)
class Recommendation(Result):
    """The verdict of a pilot and its predictions for fresh instances (one mutant).

    ``reference_means`` are the posterior means of the verdict's simulated populations
    of the reference size (with the pilot's uncertainty); ``p_killed`` is the share of
    them judged killed and ``p_killed_se`` its Monte-Carlo standard error;
    ``threshold`` is what p_killed had to clear (with its Monte-Carlo error) at this
    look, for ``looks`` planned looks, and ``last_threshold`` what it must clear at the
    plan's last look. ``needed`` is the pilot's size when the verdict is settled;
    ``needed_chance`` the chance that a pilot grown to ``needed`` settles, with the
    pilot's uncertainty (None when ``needed`` is None or the verdict settled). ``reach``
    is the chance that the pilot grown to the plan's last look settles there, with the
    pilot's uncertainty (None when the verdict is settled or this is the last look).
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
    certainty: float = CERTAINTY
    reference: int = REFERENCE_SIZE
    needed_up_to: int = NEEDED_UP_TO
    simulations: int = SIMULATIONS
    paired: bool = False
    seed: int | None = None
    needed_chance: float | None = None
    p_killed_se: float = 0.0
    threshold: float = CERTAINTY
    looks: int = 1
    last_threshold: float = CERTAINTY
    reach: float | None = None

    index = "n"

    @property
    def simulations_used(self) -> int:
        """Simulated populations behind ``p_killed``: ``simulations``, or up to
        :data:`~probmut.sequential.MORE_SIMULATIONS` times more when its bounds left the verdict
        undecided."""
        return len(self.reference_means)

    @property
    def populations_used(self) -> int:
        """Deprecated: :attr:`simulations_used`, its name in probmut 0.2.0."""
        warnings.warn("Recommendation.populations_used is deprecated: it is simulations_used",
                      FutureWarning, stacklevel=2)
        return self.simulations_used

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
                "looks": self.looks, "last_threshold": self.last_threshold,
                "reach": self.reach, "certainty": self.certainty,
                "predicted_mean": self.predicted_mean, "reference_size": self.reference,
                "pilot": list(self.pilot), "population": min(self.pilot),
                "per_size": self.rows(), "message": self.message,
                "needed_up_to": self.needed_up_to, "simulations": self.simulations,
                "simulations_used": self.simulations_used,
                "paired": self.paired, "seed": self.seed, "settings": self.settings.describe()}

    def __str__(self) -> str:
        decision = "judged " + ("killed" if self.leaning else "not killed")
        lines = [f"{self.name}: pilot of {self.pilot[0]} healthy and {self.pilot[1]} mutant "
                 "instances" + (", paired" if self.paired else "")]
        if self.sizes:
            lines[0] += (f"; fresh instances predicted from {self.simulations} simulated "
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


def _shape(rng, pilot: np.ndarray, simulations: int, n: int) -> np.ndarray:
    """``simulations`` x n standardised instances of the pilot's shape: pilot instances picked
    at random with replacement, whitened and stretched so that the populations keep mean 0 and
    identity covariance (P / (P - 1) for the biased sample covariance). ``pilot`` is
    (P, D); returns (simulations, n, D)."""
    size, dimensions = pilot.shape
    deviations = pilot - pilot.mean(axis=0)
    whitened = deviations @ _symmetric_root(np.cov(pilot.T, ddof=1).reshape(
        dimensions, dimensions), -0.5)
    return math.sqrt(size / (size - 1)) * whitened[rng.integers(0, size, (simulations, n))]


def _fresh_instances(rng, pilot: np.ndarray, simulations: int, n: int, uncertain: bool,
                     shape=None):
    """``simulations`` populations of n fresh instances like the ``pilot`` (P, D).

    The pilot's resampled shape (or ``shape(rng, pilot, simulations, n)``, standardised populations
    of another; scripts/validation/pilot_validation.py compares one), placed at the pilot's mean
    and unbiased covariance; with ``uncertain``, at a draw from their posterior under a
    normal model instead (Jeffreys prior: covariance ~ inverse Wishart(P - 1, (P - 1) S),
    mean ~ normal(mean, covariance / P)), one draw per population. Returns (simulations, n, D).

    >>> rng = np.random.default_rng(0)
    >>> pilot = rng.normal(0.9, 0.01, (25, 1))
    >>> fresh = _fresh_instances(rng, pilot, 400, 50, uncertain=False)
    >>> fresh.shape, bool(np.isclose(fresh.std(), pilot.std(ddof=1), rtol=0.02))
    ((400, 50, 1), True)
    """
    size, dimensions = pilot.shape
    centre = np.broadcast_to(pilot.mean(axis=0), (simulations, dimensions))
    root = np.broadcast_to(_symmetric_root(np.cov(pilot.T, ddof=1).reshape(
        dimensions, dimensions)), (simulations, dimensions, dimensions))
    if uncertain:  # Bartlett: W ~ Wishart(P - 1, I / (P - 1)); covariance S^1/2 W^-1 S^1/2
        freedom = size - 1
        bartlett = np.zeros((simulations, dimensions, dimensions))
        for i in range(dimensions):
            bartlett[:, i, i] = np.sqrt(rng.chisquare(freedom - i, simulations))
            bartlett[:, i, :i] = rng.standard_normal((simulations, i))
        wishart = bartlett @ bartlett.transpose(0, 2, 1) / freedom
        root = root @ _symmetric_root(wishart, -0.5)
        centre = centre + np.einsum("rij,rj->ri", root,
                                    rng.standard_normal((simulations, dimensions))
                                    ) / math.sqrt(size)
    standardised = (shape or _shape)(rng, pilot, simulations, n)
    return centre[:, None, :] + np.einsum("rij,rnj->rni", root, standardised)


def _populations(rng, h, m, n: int, simulations: int, paired: bool, uncertain: bool, shape=None):
    """Healthy and mutant rows of ``simulations`` populations of n fresh instances."""
    if paired:
        both = _fresh_instances(rng, np.column_stack([h, m]), simulations, n, uncertain, shape)
        return both[..., 0], both[..., 1]
    return (_fresh_instances(rng, h[:, None], simulations, n, uncertain, shape)[..., 0],
            _fresh_instances(rng, m[:, None], simulations, n, uncertain, shape)[..., 0])


def _analyse(healthy, mutant, settings: PosteriorSettings, paired: bool, seed, threads):
    """Posterior mean, decision and posterior variance of every row."""
    analysed = _analyse_together([(healthy, mutant)], settings, paired, seed, threads)[0]
    return analysed["means"], analysed["killed"], analysed["variances"]


def _analyse_together(rows, settings: PosteriorSettings, paired: bool, seed,
                      threads) -> list[dict]:
    """``"means"``, ``"killed"`` and ``"variances"`` of every simulated population of each
    ``(healthy, mutant)`` pair of rows, their kill tests drawn with the one ``seed``
    (several pairs: :func:`probmut.engine.kill_counts_shared`, their instances drawn
    once; each pair's numbers are those it gets alone)."""
    from probmut.beta import beta_mean_var, fit_beta_batch, ratios_of
    from probmut.engine import kill_counts, kill_counts_shared

    options = {"bootstraps": settings.bootstraps, "trials": settings.trials,
               "sample": settings.sample, "paired": paired, "criterion": settings.criterion,
               "seed": seed, "threads": threads}
    healthy = [np.clip(h, 0, 1) for h, _ in rows]
    mutants = [np.clip(m, 0, 1) for _, m in rows]
    if len(rows) == 1:
        counts = [kill_counts(healthy[0], mutants[0], **options)]
    else:
        shared = all(np.array_equal(healthy[0], h) for h in healthy[1:])
        counts = kill_counts_shared(healthy[0] if shared else np.stack(healthy),
                                    np.stack(mutants), **options)
    analysed = []
    for pair in counts:
        a, b = fit_beta_batch(pair.reshape(len(healthy[0]), -1), settings.trials, settings.fit,
                              settings.grid_step, settings.solver)
        means, variances = beta_mean_var(a, b)
        killed = ratios_of(means, variances, settings.trials) > settings.threshold
        analysed.append({"means": means, "killed": killed, "variances": variances})
    return analysed


# --- the verdict in words ----------------------------------------------------------------------

def _boundary(settings: PosteriorSettings, variance: float) -> float:
    """Posterior mean at which the decision flips, for a posterior of this variance."""
    from probmut.beta import ratios_of

    low, high = 1e-6, 1 - 1e-6
    for _ in range(60):  # ratios_of: ratio_of's numbers, a third of its time for one
        middle = (low + high) / 2
        spread = min(variance, 0.5 * middle * (1 - middle))
        if ratios_of([middle], [spread], settings.trials)[0] > settings.threshold:
            high = middle
        else:
            low = middle
    return (low + high) / 2


def _message(verdict, p_killed, se, threshold, looks, certainty, needed, mean, boundary,
             reference, needed_up_to, pilot, needed_chance):
    band = f"{mean['median']:.2f} [{mean['low']:.2f}, {mean['high']:.2f}]"
    over_looks = (f" (this look's threshold in a plan that keeps wrong settled verdicts at "
                  f"most {1 - certainty:.2g} over {looks} looks)" if looks > 1 else "")
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
    if needed <= needed_up_to:
        return why + f" About {needed} instances per side would settle it {odds}."
    return (why + f" It would take about {needed} instances per side {odds}, more than "
            f"{needed_up_to}: report the posterior mean and its interval instead.")


@renamed(jobs="threads", populations="simulations")
def recommend(healthy, mutant, settings: PosteriorSettings | None = None, *,
              sizes=DEFAULT_SIZES, simulations: int = SIMULATIONS, certainty: float = CERTAINTY,
              reference: int = REFERENCE_SIZE, needed_up_to: int = NEEDED_UP_TO,
              looks=None, paired: bool = False, seed=None, threads: int | None = None,
              cache: Cache | None = None, progress: bool = False,
              name: str | None = None) -> Recommendation:
    """The verdict of a pilot and its predictions for fresh instances (module notes).

    Parameters
    ----------
    healthy, mutant : Population or array_like
        The pilot: two :class:`~probmut.population.Population` or their accuracies, each
        at least the sample size k.
    settings : PosteriorSettings, optional
        How every simulated population is analysed (default :class:`PosteriorSettings`:
        B = N = 100, k = 20).
    sizes : sequence of int, optional
        The population sizes n per side of the prediction table (each at least k; empty
        for the verdict alone).
    simulations : int, optional
        The simulated populations per size, and for the verdict's first block.
    certainty : float, optional
        With one look, the predicted probability at which the verdict is settled; over
        ``looks``, ``1 - certainty`` bounds the chance of a wrong settled verdict.
    reference : int, optional
        The size of "a large population", whose decision the verdict predicts.
    needed_up_to : int, optional
        The largest population per side ``needed`` may propose.
    looks : sequence of int, optional
        The instances per side at which the verdict is looked at, in increasing order,
        this pilot's size (the smaller side) among them (default: this pilot only); see
        :func:`probmut.sequential.settle_threshold`.
    paired : bool, optional
        Model-level mutation: ids drawn jointly (populations aligned by id).
    seed : int, SeedSequence, Generator or None, optional
        The same seed gives the same numbers, for any ``threads``.
    threads : int, optional
        Engine threads (None: all cores); the numbers do not depend on them.
    cache : Cache, optional
        A :class:`~probmut.io.cache.Cache` to reuse blocks across runs.
    progress : bool, optional
        Show progress on stderr (see :func:`probmut.progress.progress`).
    name : str, optional
        The mutant's name in the output (default: the mutant population's).

    Returns
    -------
    Recommendation

    Raises
    ------
    ProbmutError
        For a pilot smaller than k per side (a paired one: under 3 instances), sizes,
        reference or needed_up_to under k, fewer than 10 populations, more simulated accuracies
        than :data:`MAX_SIMULATED`, a plan of looks out of order, under k, without this
        pilot's size or too fine to integrate (:data:`probmut.sequential.MAX_PLAN_WORK`),
        a certainty outside (0.5, 1), a threshold that ``MORE_SIMULATIONS`` times the
        populations cannot reach, populations that do not pair, or an unusable seed.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h, m = rng.normal(0.99, 0.002, 25), rng.normal(0.986, 0.002, 25)
    >>> advice = recommend(h, m, sizes=(25, 100), simulations=40, seed=1)
    >>> advice.verdict, [s.n for s in advice.sizes], advice.simulations_used
    ('killed', [25, 100], 160)
    """
    from probmut.io.cache import Cache

    settings, h, m, name, sizes, looks, threshold, last_threshold = _recommend_iv(
        healthy, mutant, settings, sizes, simulations, certainty, reference, needed_up_to, looks,
        paired, name, progress)
    pilot = min(h.size, m.size)
    verdict, verdict_blocks, predictions = _simulations(
        h, m, settings, sizes, simulations, threshold, reference, paired,
        seeds.seed_sequence(seed), cache or Cache(None), threads, name, progress)
    means, variances = (np.concatenate([b[field] for b in verdict_blocks])
                        for field in ("means", "variances"))
    killed, used = sequential.killed_of(verdict_blocks)
    p_killed = killed / used
    se = math.sqrt(p_killed * (1 - p_killed) / used)
    boundary = _boundary(settings, float(np.median(variances)))
    needed, needed_chance, reach = pilot, None, None
    if verdict == "not settled":
        needed, needed_chance, reach = _needed(p_killed, used, h, m, looks, threshold,
                                               last_threshold, reference, needed_up_to)
    message = _message(verdict, p_killed, se, threshold, len(looks), certainty, needed,
                       _median_and_band(means), boundary, reference, needed_up_to, pilot,
                       needed_chance)
    if needed is not None and needed > needed_up_to:
        needed, needed_chance = None, None
    return Recommendation(
        name=name, verdict=verdict, needed=needed, p_killed=p_killed, reference_means=means,
        sizes=tuple(predictions), pilot=(h.size, m.size), message=message, settings=settings,
        certainty=certainty, reference=reference, needed_up_to=needed_up_to,
        simulations=simulations,
        paired=paired, seed=seed, needed_chance=needed_chance, p_killed_se=se,
        threshold=threshold, looks=len(looks), last_threshold=last_threshold, reach=reach)


def _simulations(h, m, settings, sizes, simulations, threshold, reference, paired, root,
                 cache, threads, name, progress):
    """:func:`recommend`'s simulated populations, one progress bar for them: the verdict
    (populations of the ``reference`` size, doubled until it settles or
    ``MORE_SIMULATIONS`` times as many) with its blocks, then one block per size of the
    prediction table."""
    from probmut.progress import progress as progress_display

    def simulate(role, n, block=0, count=simulations):
        stored = simulate_block(h, m, settings, role=role, n=n, block=block, count=count,
                                paired=paired, root=root, cache=cache, threads=threads)
        if block:
            bar.total += 1  # a block that doubles the populations behind p_killed
        bar.update()
        return stored

    # the verdict may double its populations until MORE_SIMULATIONS times the populations
    most = 1 + len(sizes) + math.ceil(math.log2(MORE_SIMULATIONS))
    with progress_display(1 + len(sizes), f"recommend {name}", enabled=progress,
                          unit="block", most=most) as bar:
        verdict, verdict_blocks = sequential.settle(
            lambda block, count: simulate("verdict", reference, block, count), threshold,
            simulations)
        predictions = []
        for n in sizes:
            block = simulate("size", n)
            predictions.append(SizePrediction(n, block["means"], block["killed"]))
    return verdict, verdict_blocks, predictions


def _needed(p_killed, used, h, m, looks, threshold, last_threshold, reference, needed_up_to):
    """For a verdict not settled: the instances per side that would settle it (None: no
    size would), the chance that this pilot grown to that size does, and the chance that
    the plan's last look settles it (None when this pilot is that look)."""
    effective = 2 / (1 / h.size + 1 / m.size)  # the pilot's size for a difference
    needed = sequential.needed(p_killed, used, effective, threshold, reference, needed_up_to)
    needed_chance = reach = None
    if needed is not None:
        needed_chance = float(sequential.settle_chance(
            p_killed, used, effective, threshold, reference, needed, grown=True))
    if min(h.size, m.size) < looks[-1]:
        reach = float(sequential.settle_chance(p_killed, used, effective, last_threshold,
                                               reference, looks[-1], grown=True))
    return needed, needed_chance, reach


def _recommend_iv(healthy, mutant, settings, sizes, simulations, certainty, reference,
                  needed_up_to, looks, paired, name, progress):
    """:func:`recommend`'s input validation, in the order its errors are reported: the
    pilot, the sizes and populations, the plan of looks and its thresholds. Returns the
    settings, the pilot's healthy and mutant accuracies, the name, the sorted sizes, the
    plan, this look's threshold and the plan's last one."""
    from probmut.bagging import PosteriorSettings
    from probmut.population import aligned

    settings = settings or PosteriorSettings()
    healthy, mutant = aligned(healthy, mutant, paired)
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
    if simulations < 10:
        raise ProbmutError(f"simulations must be at least 10, got {simulations}",
                           option="simulations")

    def largest_block(simulations):
        """The largest block: a size's, or the last doubling of the verdict's populations."""
        blocks = [(simulations, n) for n in sizes]
        blocks.append((MORE_SIMULATIONS // 2 * simulations, reference))
        return max(blocks, key=lambda block: block[0] * block[1])

    count, largest = largest_block(simulations)
    if count * largest > MAX_SIMULATED:
        fewer = largest_block(min(simulations, SIMULATIONS))  # the option to blame: fits without it
        raise ProbmutError(
            f"{count:,} simulated populations of {largest:,} instances per side exceed the "
            f"limit of {MAX_SIMULATED:,} accuracies per side and size; lower the sizes or "
            "the simulations", option="simulations" if fewer[0] * fewer[1] <= MAX_SIMULATED else
            "reference" if largest == reference else "sizes")
    if reference < k or needed_up_to < k:
        raise ProbmutError(f"the reference size and needed-up-to must be at least k = {k}")
    pilot = min(h.size, m.size)
    looks = sequential.planned((pilot,) if looks is None else looks)
    if looks[0] < k:
        raise ProbmutError(f"the planned looks must be at least the sample size k = {k}; got "
                           f"{list(looks)}", option="looks")
    if pilot not in looks:
        raise ProbmutError(f"the planned looks {list(looks)} leave out this pilot's {pilot} "
                           "instances per side: this verdict is one of the looks, and a plan "
                           "without it would settle it at another look's threshold; add "
                           f"{pilot} to the looks", option="looks")
    threshold = sequential.settle_threshold(pilot, looks, reference, certainty,
                                            progress=progress)
    last_threshold = sequential.settle_threshold(looks[-1], looks, reference, certainty)
    most = MORE_SIMULATIONS * simulations
    if sequential.bounds(most, most)[0] < last_threshold:
        raise ProbmutError(
            f"the verdict's threshold {last_threshold:.4g} is out of reach of {most} simulated "
            f"populations ({MORE_SIMULATIONS} times --simulations): raise the simulations or "
            "lower the certainty", option="simulations")
    return settings, h, m, name or mutant.name, sizes, looks, threshold, last_threshold


def simulate_block(h, m, settings: PosteriorSettings, *, role: str, n: int, block: int,
                   count: int, paired: bool, root: np.random.SeedSequence,
                   cache: Cache, threads=None) -> dict:
    """One block of ``count`` simulated populations of n fresh instances per side of the
    pilot ``h``, ``m``, analysed (and cached).

    ``role`` is "verdict" (the pilot's uncertainty included; block 0, then the blocks that
    double the total) or "size" (a prediction). Each block populations from streams of its own
    under ``root`` (the ``"recommend ..."`` roles of :mod:`probmut.seeds`), so its numbers
    do not depend on the other blocks.

    Returns
    -------
    dict
        ``"means"``, ``"killed"`` and ``"variances"``: one value per population.
    """
    key = _block_key(h, m, settings, role, n, block, count, paired, root)
    stored = cache.get(key, shapes=_block_shapes(count))
    if stored is None:
        rows, engine_stream = _block_rows(h, m, role, n, block, count, paired, root)
        stored = _analyse_together([rows], settings, paired, engine_stream, threads)[0]
        cache.put(key, **stored)
    return stored


def _block_key(h, m, settings, role, n, block, count, paired, root) -> str:
    """The cache key of a block (:func:`simulate_block`): everything its numbers depend on."""
    from probmut.io.cache import cache_key

    extra = () if block == 0 else (block,)
    return cache_key("recommend", METHOD, h, m, paired, settings, count, root.entropy,
                     root.spawn_key, role, n, *extra)


def _block_shapes(count: int) -> dict:
    return {"means": (count,), "killed": (count,), "variances": (count,)}


def _block_rows(h, m, role, n, block, count, paired, root):
    """A block's simulated ``(healthy, mutant)`` rows and the stream of its kill tests: the
    same stream for every pilot of one ``root``, ``role``, ``n`` and ``block``."""
    first = "recommend verdict" if role == "verdict" else "recommend size"
    sequence = (seeds.stream(root, "recommend verdict more", n, block) if block
                else seeds.stream(root, first, n))
    draw_stream, engine_stream = seeds.split(sequence, 2)
    rows = _populations(np.random.default_rng(draw_stream), h, m, n, count, paired,
                        uncertain=role == "verdict")
    return rows, engine_stream


#: Most pilots whose blocks :func:`simulate_verdicts` analyses in one call of the engine
#: (their simulated accuracies are held at once: 160 KB a pilot per 100 populations).
MOST_TOGETHER = 128


@dataclass
class _Pilot:
    """One pilot of :func:`simulate_verdicts`: as :func:`recommend` validates it, the
    threshold its verdict must clear, and its blocks so far."""

    h: np.ndarray
    m: np.ndarray
    paired: bool
    settings: PosteriorSettings
    threshold: float
    blocks: list


def simulate_verdicts(pilots, settings: PosteriorSettings | None = None, *, seed=None,
                      threads: int | None = None, cache: Cache | None = None,
                      done=None):
    """The simulated blocks behind the verdicts of many pilots, computed together: a cache
    from which ``recommend(healthy, mutant, settings, sizes=(), paired=paired, seed=seed,
    cache=it)`` reads every block of each pilot, so that it gives what it gives alone.

    The pilots' verdicts draw their kill tests alike (one seed, the reference size, the
    same blocks), so each round of blocks (the first, then those that double the
    populations of the pilots not yet settled) is analysed for many pilots at once
    (:func:`probmut.engine.kill_counts_shared`), about three times faster for a campaign's
    mutants than one pilot at a time (docs/report.md).

    Parameters
    ----------
    pilots : iterable of (healthy, mutant, paired)
        The pilots: what :func:`recommend` takes as its first two arguments, and whether
        they pair. A pilot that :func:`recommend` refuses is left to it (it says why).
    settings, seed, threads
        As :func:`recommend`'s.
    cache : Cache, optional
        Where blocks are read from and written to (none: kept in memory only).
    done : callable, optional
        Called with 1 as each pilot's last block is computed (e.g. a progress bar's
        ``update``).

    Returns
    -------
    probmut.io.cache.MemoryCache
        Every block, in memory, in front of ``cache``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> h = rng.normal(0.99, 0.002, 40)
    >>> pilots = [(h, rng.normal(0.99 - drop, 0.002, 40), False) for drop in (0.004, 0.0)]
    >>> blocks = simulate_verdicts(pilots, seed=1)
    >>> [recommend(a, b, sizes=(), seed=1, cache=blocks).verdict for a, b, _ in pilots]
    ['killed', 'not killed']
    """
    from probmut.io.cache import Cache, MemoryCache

    kept, root, waiting = MemoryCache(cache or Cache(None)), seeds.seed_sequence(seed), []
    for healthy, mutant, paired in pilots:
        try:
            with warnings.catch_warnings():  # recommend warns again, where it is called
                warnings.simplefilter("ignore")
                checked, h, m, *_, threshold, _ = _recommend_iv(
                    healthy, mutant, settings, (), SIMULATIONS, CERTAINTY, REFERENCE_SIZE,
                    NEEDED_UP_TO, None, paired, None, False)
        except ProbmutError:
            continue
        waiting.append(_Pilot(h, m, paired, checked, threshold, []))
    block, count = 0, SIMULATIONS
    while waiting:
        _simulate_together(waiting, block, count, root, kept, threads)
        settled = [sequential.settled_after(p.blocks, p.threshold, SIMULATIONS) is not None
                   for p in waiting]
        for _ in range(sum(settled) if done else 0):
            done(1)
        waiting = [p for p, over in zip(waiting, settled, strict=True) if not over]
        block, count = block + 1, sequential.killed_of(waiting[0].blocks)[1] if waiting else 0
    return kept


def _simulate_together(pilots: list[_Pilot], block: int, count: int, root, cache,
                       threads) -> None:
    """Add each pilot's verdict block ``block`` (``count`` populations of the reference
    size) to its blocks: from ``cache``, else simulated with the others that pair alike
    and share its settings, :data:`MOST_TOGETHER` at a time."""
    missing: dict[tuple, list] = {}
    for pilot in pilots:
        key = _block_key(pilot.h, pilot.m, pilot.settings, "verdict", REFERENCE_SIZE, block,
                         count, pilot.paired, root)
        stored = cache.get(key, shapes=_block_shapes(count))
        if stored is None:
            missing.setdefault((pilot.paired, pilot.settings), []).append((pilot, key))
        pilot.blocks.append(stored)
    for (paired, settings), alike in missing.items():
        calls = -(-len(alike) // MOST_TOGETHER)  # as few as can be, of even sizes
        for call in range(calls):
            batch = alike[call * len(alike) // calls:(call + 1) * len(alike) // calls]
            drawn = [_block_rows(p.h, p.m, "verdict", REFERENCE_SIZE, block, count, paired, root)
                     for p, _ in batch]
            analysed = _analyse_together([rows for rows, _ in drawn], settings, paired,
                                         drawn[0][1], threads)
            for (pilot, key), stored in zip(batch, analysed, strict=True):
                cache.put(key, **stored)
                pilot.blocks[-1] = stored
