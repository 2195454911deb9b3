"""When a pilot's verdict settles: the threshold p_killed must clear at each planned look,
the Monte-Carlo bound that must clear it, and the chance of settling later.

A verdict (:func:`probmut.recommend.recommend`) reads p_killed, the share of simulated
large populations judged killed. It is read in a latent normal model: from n instances
per side the effect is estimated with variance 1/n (in units of the instances' spread), a
fresh reference population decides by the sign of its own estimate (variance
1/reference), and p_killed is the predictive probability of that decision. In this model

- :func:`sequential_error` is the largest chance over true effects that a verdict looked
  at after each of several looks ends settled and wrong, computed by numerical
  integration over the nested looks (the group-sequential recursion of Armitage,
  McPherson and Rowe);
- :func:`settle_threshold` is the threshold of one look in a plan, the smallest of the
  shape :data:`SHAPE` that keeps that chance at most :data:`SPEND` times ``1 - certainty``;
- :func:`settle_chance` and :func:`needed` read how likely, and from how many instances,
  a verdict that is not settled would settle.

The verdict is ``killed`` when a one-sided Clopper-Pearson bound on p_killed clears the
threshold (:func:`verdict_of`), adding simulated populations while the bounds leave it
undecided (:func:`settle`). The method, its calibration and its validation against fresh
populations: docs/recommend.md, *Settling over repeated looks* and *Instances needed*.
"""

from __future__ import annotations

import math

import numpy as np

from probmut.errors import ProbmutError

#: "A large population": the paper's 200 instances per side, whose decision a verdict
#: predicts.
REFERENCE_SIZE = 200
#: One look settles when p_killed reaches this certainty (how it was chosen:
#: docs/recommend.md); over several looks ``1 - CERTAINTY`` bounds the chance of a wrong
#: settled verdict at any true effect (:func:`settle_threshold`).
CERTAINTY = 0.95
#: :func:`needed` asks a verdict from n instances to be settled with this probability.
POWER = 0.8
#: One-sided confidence of the Monte-Carlo bounds on p_killed that a verdict uses.
CONFIDENCE = 0.95
#: A verdict simulates up to this many times its first block's populations while the
#: bounds on p_killed leave it undecided (blocks doubling the total: 1, 2, 4, 8 times).
MORE_SIMULATIONS = 8
#: The thresholds' shape over the looks: on the latent scale the threshold at a look of n
#: instances is ``z (n / n_last) ** -SHAPE``, never below the certainty; 0 is the same
#: threshold at every look (why: docs/recommend.md).
SHAPE = 0.0
#: The latent model's budget, as a multiple of ``1 - certainty``. 1: the model's own
#: guarantee. The real verdict spends less than the model allows away from the boundary
#: but nearly all of it at the coin toss, so no budget is added (how this was measured:
#: docs/validation.md).
SPEND = 1.0

#: True effects at which :func:`sequential_error` looks for the largest error, as q, the
#: chance that a fresh reference population is judged killed (the rule is symmetric: q
#: below 0.5 mirrors these).
_TRUTHS = np.linspace(0.5, 0.99, 25)
#: :func:`needed` looks this many times beyond the larger of the pilot and the cap.
_SEARCH = 100


# --- the plan of looks ------------------------------------------------------------------

def planned(looks) -> tuple[int, ...]:
    """The planned looks as given: positive instance counts in increasing order, each
    once (a plan out of order or with a repeat is refused, not guessed at).

    Returns
    -------
    tuple of int

    Raises
    ------
    ProbmutError
        For an empty plan, a look below 1, or looks out of order or repeated.

    Examples
    --------
    >>> planned(range(20, 50, 10))
    (20, 30, 40)
    >>> planned([50, 40])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: the planned looks must be given in increasing order, each once; got
    [50, 40]
    """
    looks = tuple(int(n) for n in looks)
    if not looks or looks[0] < 1:
        raise ProbmutError(f"the planned looks must be positive numbers of instances, got "
                           f"{list(looks) or 'none'}", option="looks")
    if any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
        raise ProbmutError(f"the planned looks must be given in increasing order, each once; "
                           f"got {list(looks)}", option="looks")
    return looks


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


def sequential_error(thresholds, looks, reference: int = REFERENCE_SIZE) -> float:
    """Largest chance over true effects that a verdict looked at after each of ``looks``
    instances per side, settled when p_killed reaches ``thresholds`` (one per look, in
    increasing order of the looks, or one for all), ends settled and contradicted by a
    fresh population of ``reference`` per side, in the latent normal model (module
    notes; the Monte-Carlo error of p_killed aside).

    Returns
    -------
    float

    Raises
    ------
    ProbmutError
        For a plan of looks :func:`planned` refuses.

    Examples
    --------
    >>> round(sequential_error(0.95, [20]), 3), round(sequential_error(0.95, range(20, 201, 10)), 3)
    (0.042, 0.118)
    """
    from scipy import special

    return float(_wrong_settled(special.ndtri(np.asarray(thresholds, dtype=float)),
                                planned(looks), reference).max())


#: The largest plan of looks integrated: the grid points of the consecutive looks'
#: densities multiplied together (:func:`plan_work`), about ten seconds of one core (a
#: verdict over 199 looks from 20 to 2,000 instances per side). Finer plans grow faster
#: than their number of looks (2,000 looks, one per instance, are about 80 times this).
MAX_PLAN_WORK = 2 * 10**8
#: The largest z the thresholds are searched over (:func:`_last_z`).
_HIGHEST_Z = 8.0


def plan_work(looks, reference: int = REFERENCE_SIZE) -> int:
    """The work of integrating a plan of looks (:func:`_wrong_settled` at the highest z
    searched): the sum over consecutive looks of the product of their grids' sizes.

    >>> plan_work(range(20, 201, 10)) < MAX_PLAN_WORK < plan_work(range(20, 2001, 1))
    True
    """
    n = np.asarray(looks, dtype=float)
    half = _HIGHEST_Z * np.sqrt(n + n * n / reference)
    steps = np.diff(n)
    sizes = [2 * math.ceil(h / (math.sqrt(step) / 4) / 2) + 1
             for h, step in zip(half[:-1], steps, strict=True)]
    return int(sum(a * b for a, b in zip(sizes, sizes[1:], strict=False)))


def _last_z(looks: tuple, reference: int, budget: float, shape: float, floor: float, *,
            progress: bool = False) -> float:
    """The z of the thresholds ``max(floor, Phi(z (n / n_last) ** -shape))`` at which
    :func:`sequential_error` is ``budget`` (0 when the floor alone keeps it lower), computed
    once per plan; ``progress``: lines counting the integrations over the looks when they
    take seconds."""
    from probmut.progress import ANALYSIS_DELAY
    from probmut.progress import progress as progress_display

    key = (looks, reference, budget, shape, floor)
    if key not in _LAST_Z:
        if (work := plan_work(looks, reference)) > MAX_PLAN_WORK:
            raise ProbmutError(
                f"a plan of {len(looks):,} looks up to {looks[-1]:,} instances per side is too "
                f"fine to integrate ({work / MAX_PLAN_WORK:.0f} times the most this takes, "
                "about ten seconds); look less often (e.g. every 10 instances) or up to fewer "
                "instances", option="looks")
        with progress_display(0, f"thresholds over {len(looks)} looks", enabled=progress,
                              unit="integration", delay=ANALYSIS_DELAY) as bar:
            _LAST_Z[key] = _solve_last_z(looks, reference, budget, shape, floor, bar.update)
    return _LAST_Z[key]


#: :func:`_last_z` of every plan met so far in this process.
_LAST_Z: dict = {}


def _solve_last_z(looks, reference, budget, shape, floor, report) -> float:
    from scipy import optimize, special

    lowest = special.ndtri(floor) if floor > 0.5 else -np.inf
    scale = (np.asarray(looks, dtype=float) / looks[-1]) ** -shape

    def excess(z):
        error = _wrong_settled(np.maximum(lowest, z * scale), looks, reference).max()
        report(1)
        return error - budget

    if excess(0) <= 0:
        return 0.0
    return float(optimize.brentq(excess, 0, _HIGHEST_Z, xtol=1e-6))


def plan_thresholds(looks, reference: int = REFERENCE_SIZE, *, budget: float,
                    shape: float = SHAPE, floor: float = 0.5) -> np.ndarray:
    """Thresholds on p_killed, one per look of ``looks``, of the form
    ``max(floor, Phi(z (n / n_last) ** -shape))`` with the smallest z at which the
    latent model's worst chance of a wrong settled verdict (:func:`sequential_error`)
    is ``budget``: the family the rule is chosen from.

    Returns
    -------
    numpy.ndarray
        One threshold per look.

    Raises
    ------
    ProbmutError
        For a plan of looks :func:`planned` refuses.

    Examples
    --------
    >>> plan_thresholds([20, 200], budget=0.05, shape=0).round(4).tolist()
    [0.9504, 0.9504]
    """
    from scipy import special

    looks = planned(looks)
    z = _last_z(looks, int(reference), float(budget), float(shape), float(floor))
    return np.maximum(floor, special.ndtr(z * (np.asarray(looks) / looks[-1]) ** -shape))


def settle_threshold(n: int, looks, reference: int = REFERENCE_SIZE,
                     certainty: float = CERTAINTY, *, progress: bool = False) -> float:
    """The certainty p_killed must reach to settle a verdict from n instances per side, when
    the verdict is looked at after each of ``looks`` instances per side: thresholds of
    the shape :data:`SHAPE`, the smallest at which :func:`sequential_error` is at most
    :data:`SPEND` times ``1 - certainty``, and never below ``certainty`` itself (the threshold of
    a single look).

    Returns
    -------
    float

    Raises
    ------
    ProbmutError
        For a certainty outside (0.5, 1), a plan of looks :func:`planned` refuses, or one
        too fine to integrate (:data:`MAX_PLAN_WORK`).

    Examples
    --------
    >>> settle_threshold(20, [20])
    0.95
    >>> looks = range(20, 201, 10)
    >>> [round(settle_threshold(n, looks), 4) for n in (20, 30, 100, 200)]
    [0.9778, 0.9778, 0.9778, 0.9778]
    """
    from scipy import special

    if not 0.5 < certainty < 1:
        raise ProbmutError(f"the verdict certainty must be in (0.5, 1), got {certainty}",
                           option="certainty")
    looks = planned(looks)
    z = _last_z(looks, int(reference), SPEND * (1 - float(certainty)), SHAPE, float(certainty),
                progress=progress)
    return float(max(certainty, special.ndtr(z * (n / looks[-1]) ** -SHAPE)))


# --- one look: p_killed with its Monte-Carlo error ----------------------------------------

def bounds(killed: int, simulations: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (of this confidence) on p_killed from ``killed`` of
    ``simulations`` simulated populations.

    Returns
    -------
    (low, high) : tuple of float

    Examples
    --------
    >>> [round(b, 4) for b in bounds(100, 100)]
    [0.9705, 1.0]
    """
    from scipy import special  # betaincinv: the Beta quantile, without scipy.stats's import

    low = (0.0 if killed == 0
           else float(special.betaincinv(killed, simulations - killed + 1, 1 - confidence)))
    high = (1.0 if killed == simulations
            else float(special.betaincinv(killed + 1, simulations - killed, confidence)))
    return low, high


def verdict_of(killed: int, simulations: int, threshold: float,
               confidence: float = CONFIDENCE) -> str | None:
    """The verdict from ``killed`` of ``simulations`` populations at this threshold.

    Returns
    -------
    str or None
        ``"killed"`` when the lower bound on p_killed clears the threshold, ``"not
        killed"`` when the upper bound is under 1 minus it, ``"not settled"`` when both
        bounds lie between, None while a bound straddles a threshold (more populations
        may decide it).

    Examples
    --------
    >>> verdict_of(100, 100, 0.95), verdict_of(50, 100, 0.95), verdict_of(97, 100, 0.95)
    ('killed', 'not settled', None)
    """
    low, high = bounds(killed, simulations, confidence)
    if low >= threshold:
        return "killed"
    if high <= 1 - threshold:
        return "not killed"
    if high < threshold and low > 1 - threshold:
        return "not settled"
    return None


def killed_of(blocks) -> tuple[int, int]:
    """Populations judged killed, and simulated, over a verdict's blocks (dicts whose
    ``"killed"`` says which populations were judged killed).

    Returns
    -------
    (killed, simulated) : tuple of int
    """
    return (int(sum(np.count_nonzero(b["killed"]) for b in blocks)),
            sum(len(b["killed"]) for b in blocks))


def settle(simulate, threshold: float, simulations: int, confidence: float = CONFIDENCE):
    """The verdict and the blocks of simulated populations behind it.

    ``simulate(block, count)`` gives block number ``block`` of ``count`` populations (a
    dict whose ``"killed"`` says which were judged killed). Blocks are added, doubling the
    total, while the bounds on p_killed leave the verdict undecided, up to
    :data:`MORE_SIMULATIONS` times ``simulations`` (then: not settled).

    Returns
    -------
    (verdict, blocks) : tuple of str and list of dict

    Examples
    --------
    >>> verdict, blocks = settle(lambda block, count: {"killed": [True] * count}, 0.99, 100)
    >>> verdict, killed_of(blocks)
    ('killed', (400, 400))
    """
    blocks = [simulate(0, simulations)]
    while (verdict := settled_after(blocks, threshold, simulations, confidence)) is None:
        blocks.append(simulate(len(blocks), killed_of(blocks)[1]))
    return verdict, blocks


def settled_after(blocks, threshold: float, simulations: int,
                  confidence: float = CONFIDENCE) -> str | None:
    """:func:`settle`'s verdict after these ``blocks``, or None while it takes another
    block (of as many populations as these hold: the total doubles).

    >>> settled_after([{"killed": [True] * 100}], 0.95, 100)
    'killed'
    """
    verdict = verdict_of(*killed_of(blocks), threshold, confidence)
    if verdict is None and killed_of(blocks)[1] >= MORE_SIMULATIONS * simulations:
        return "not settled"
    return verdict


# --- later looks: the chance of settling ------------------------------------------------------

def settle_chance(p_killed: float, simulations: int, pilot: float, threshold: float,
                  reference: int, n, grown: bool):
    """Chance that a verdict from n instances per side is settled, read from a pilot's
    ``p_killed`` (a share of ``simulations`` populations) on the latent scale.

    p_killed = Phi(t) for a latent effect t in units of its current spread, which has a
    part from the pilot (variance 1/P) and a part from the reference population
    (1/reference). If the truth is the pilot's estimate, a pilot of n has latent estimate
    ``N(t, (1/n) / (1/P + 1/reference))``; ``grown``: the pilot grown to n, its P
    instances kept and the truth uncertain, has ``N(t, (1/P - 1/n) / (1/P +
    1/reference))``. It settles when it is at least ``Phi^-1(threshold)`` of its own
    spread from 0.

    Parameters
    ----------
    p_killed : float
        The pilot's p_killed.
    populations : int
        The simulated populations behind ``p_killed``.
    pilot : float
        The pilot's size P (for a difference of two sides: their harmonic mean).
    threshold : float
        What p_killed must clear at n.
    reference : int
        The reference population's size.
    n : int or array_like of int
        A size above the pilot's, or an array of them.
    grown : bool
        The pilot grown to n (its uncertainty included), else a fresh pilot of n.

    Returns
    -------
    float or numpy.ndarray
        One chance per size, shaped as ``n``.

    Examples
    --------
    >>> round(float(settle_chance(0.06, 100, 25, 0.95, 200, 70, grown=False)), 2)
    0.8
    >>> round(float(settle_chance(0.06, 100, 25, 0.95, 200, 70, grown=True)), 2)
    0.74
    """
    from scipy import special

    p = min(max(p_killed, 0.5 / simulations), 1 - 0.5 / simulations)
    latent = abs(float(special.ndtri(p)))
    unit = 1 / pilot + 1 / reference
    n = np.asarray(n, dtype=float)
    spread = np.sqrt((1 / n + 1 / reference) / unit)
    noise = np.sqrt(((1 / pilot - 1 / n) if grown else 1 / n) / unit)
    return special.ndtr((latent - special.ndtri(threshold) * spread) / noise)


def needed(p_killed: float, simulations: int, pilot: float, threshold: float, reference: int,
           needed_up_to: int) -> int | None:
    """Instances per side at which a verdict would settle with probability :data:`POWER`
    if the truth is the pilot's estimate (:func:`settle_chance`, not ``grown``), searched
    up to ``_SEARCH`` times the larger of the pilot and ``needed_up_to``.

    Returns
    -------
    int or None
        None when no size up to there does: the kill probability sits so close to the
        decision boundary that even a perfectly known mutant would split reference
        populations between both decisions.

    Examples
    --------
    >>> needed(0.10, 100, 25, 0.95, 200, 1000), needed(0.35, 100, 25, 0.95, 200, 1000)
    (114, None)
    """
    n = np.arange(math.floor(pilot) + 1, _SEARCH * max(needed_up_to, math.ceil(pilot)) + 1)
    chance = settle_chance(p_killed, simulations, pilot, threshold, reference, n, grown=False)
    reached = np.flatnonzero(chance >= POWER)
    return int(n[reached[0]]) if reached.size else None
