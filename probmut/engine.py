"""The Monte-Carlo engine: kill counts of B x N kill tests (DeepCrime's by default),
compiled.

This is the only hot code of probmut. One kernel serves every study, and a second the
pairs that share their draws:

- the bagged posterior (METHOD.md section 3): 1 population pair, 1 repetition, B x N;
- the Monte-Carlo error (section 5): R repetitions of B x N;
- the sample-size study (section 6): S sub-populations x R x B x N;
- many population pairs that draw alike (:func:`kill_counts_shared`: a campaign's
  verdicts, whose simulated populations share the seed and sizes): the positions drawn
  once for all the pairs, each pair's counts those it gets alone.

Each bootstrap resample is one *task* with its own random stream, derived from the
seed and the task's index alone: the seed's two words (:func:`probmut.seeds.kernel_key`)
hashed with the index through SplitMix64 into a xoshiro256** state. Tasks run in parallel
threads (numba ``prange``), so the numbers depend on the seed only, never on the number of
workers. Long work is split into kernel calls of a fraction of a second (blocks of tasks,
and slices of their trials when a task is long, its stream and draws kept between calls),
so that Ctrl-C and progress displays get their turn; the split never changes the numbers.

Why numba: the kernel is a tight loop of small random draws and sums (about 40 random
integers and 80 flops per test); numba compiles it to native code with threads and an
on-disk cache, without a C toolchain on the user's machine.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from probmut.compiled import compiled
from probmut.errors import ProbmutError
from probmut.killtest.criteria import KillCriterion
from probmut.killtest.dispatch import (
    DEEPCRIME,
    decide,
    deepcrime_killed,
    deepcrime_killed_across,
)
from probmut.killtest.kernels import normal_tail_bounds
from probmut.seeds import kernel_key
from probmut.validation import (
    accuracies,
    checked,
    flag,
    function,
    instance,
    integer,
    optional,
    renamed,
    seed,
    threads,
)

_MASK32 = np.uint64(0xFFFFFFFF)
#: Largest bootstraps, trials, repetitions or sample size (32-bit draws, int64 counts).
MAX_COUNT = 2**31 - 1
#: Largest number of bootstrap resamples in one call: its kill counts take 8 bytes each
#: (1 GiB at the limit).
MAX_RESAMPLES = 2**27
#: Work of one kernel call per thread, in random draws (a k-vs-k test draws 2k positions
#: and takes about as long as 2k + 8 draws): about 0.1 s of one core. The kernel does not
#: return to Python before it is done, so this bounds how long Ctrl-C and a progress
#: display wait; the calls' overhead is tens of microseconds each.
CALL_WORK = 2 * 10**7
#: Largest memory of the tasks kept between calls (their resamples and streams).
CALL_MEMORY = 2**24


@compiled(inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@compiled(inline="always")
def _splitmix64(x):
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@compiled()
def _seed_state(key0, key1, task):
    """xoshiro256** state of one task, four words: SplitMix64 of (key, task index)."""
    x = key0 ^ _splitmix64(key1 + np.uint64(task))
    s0 = _splitmix64(x)
    s1 = _splitmix64(s0 + np.uint64(1))
    s2 = _splitmix64(s1 + np.uint64(2))
    s3 = _splitmix64(s2 + np.uint64(3))
    return s0, s1, s2, s3


@compiled(inline="always")
def _next(s0, s1, s2, s3):
    """One xoshiro256** output and the next state, ``(output, s0, s1, s2, s3)``: the state
    travels as four words, not an array in memory, so that it stays in registers."""
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@compiled(inline="always")
def _below(n, s0, s1, s2, s3):
    """Uniform integer in [0, n) without bias (Lemire's multiply-and-reject, 32-bit) and
    the next state, ``(integer, s0, s1, s2, s3)``."""
    bound = np.uint64(n)
    output, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    m = (output >> np.uint64(32)) * bound
    low = m & _MASK32
    if low < bound:
        threshold = (np.uint64(0x100000000) - bound) % bound
        while low < threshold:
            output, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
            m = (output >> np.uint64(32)) * bound
            low = m & _MASK32
    return np.int64(m >> np.uint64(32)), s0, s1, s2, s3


@compiled(parallel=True)
def _kill_count_kernel(healthy, mutant, paired, per_set, first_task, count, trials_from,
                       trials_to, sample, kind, p_max, effect, direction, key0, key1,
                       first_stream, states, h_boot, m_boot, out):
    # Task = one bootstrap resample of one repetition of one population pair. This call
    # runs trials [trials_from, trials_to) of tasks first_task ... first_task + count - 1.
    # When their trials take several calls, the rows of states, h_boot and m_boot keep
    # each task's random stream and resample between calls; otherwise (no rows) they are
    # the task's own, as small and hot in cache as can be. A task's stream depends on
    # its global index (first_stream + task) only, so any split of the work into calls
    # and any number of threads give the same counts.
    # A trial draws its k instances by a partial Fisher-Yates shuffle of the resample
    # itself, which stays shuffled into the next trial: its first k values are the
    # sample, tested where they lie.
    n_h = healthy.shape[1]
    n_m = mutant.shape[1]
    kept = states.shape[0] > 0
    tail = normal_tail_bounds(p_max)  # where DeepCrime's p-value must be computed
    for slot in prange(count):
        task = first_task + slot
        s = task // per_set
        if kept:
            h_draw, m_draw = h_boot[slot], m_boot[slot]
        else:
            h_draw, m_draw = np.empty(n_h), np.empty(n_m)
        if trials_from == 0:  # the task's stream, and its bootstrap resample
            s0, s1, s2, s3 = _seed_state(key0, key1, first_stream + task)
            for i in range(n_h):
                j, s0, s1, s2, s3 = _below(n_h, s0, s1, s2, s3)
                h_draw[i] = healthy[s, j]
                if paired:  # one resample of instance ids, used on both sides
                    m_draw[i] = mutant[s, j]
            if not paired:
                for i in range(n_m):
                    j, s0, s1, s2, s3 = _below(n_m, s0, s1, s2, s3)
                    m_draw[i] = mutant[s, j]
            out[task] = 0
        else:  # kept: the stream where the task's last call left it
            s0, s1, s2, s3 = states[slot, 0], states[slot, 1], states[slot, 2], states[slot, 3]
        x, y = h_draw[:sample], m_draw[:sample]
        kills = 0
        for _ in range(trials_from, trials_to):
            # Each side's sum is added up as its sample is drawn, in index order: the
            # sums DeepCrime's test takes, without a pass of its own over the samples.
            sum_x = 0.0
            sum_y = 0.0
            for i in range(sample):
                j, s0, s1, s2, s3 = _below(n_h - i, s0, s1, s2, s3)
                j += i
                value = h_draw[j]
                h_draw[j] = h_draw[i]
                h_draw[i] = value
                sum_x += value
                if paired:  # the same k ids on both sides
                    value = m_draw[j]
                    m_draw[j] = m_draw[i]
                    m_draw[i] = value
                    sum_y += value
            if not paired:
                for i in range(sample):
                    j, s0, s1, s2, s3 = _below(n_m - i, s0, s1, s2, s3)
                    j += i
                    value = m_draw[j]
                    m_draw[j] = m_draw[i]
                    m_draw[i] = value
                    sum_y += value
            if kind == DEEPCRIME:
                kills += deepcrime_killed(x, y, sum_x, sum_y, p_max, effect, direction, tail)
            else:
                kills += decide(kind, x, y, p_max, effect, direction)[2]
        if kept:
            states[slot, 0], states[slot, 1], states[slot, 2], states[slot, 3] = s0, s1, s2, s3
        out[task] += kills


#: Fewest pairs :func:`_shared_draws_kernel` tests side by side (one loop across the
#: pairs, in vector instructions): fewer do not fill the loop's vectors, and are padded.
SIDE_BY_SIDE = 8


@compiled(inline="always")
def _draw(order, holds, drawn, sample, s0, s1, s2, s3):
    # A trial's partial Fisher-Yates shuffle of a resample's positions ``order`` (as
    # _kill_count_kernel shuffles the resample itself, with the same draws): the
    # instances it brings to the front, in ``drawn``, and the stream's next state.
    n = order.shape[0]
    for i in range(sample):
        j, s0, s1, s2, s3 = _below(n - i, s0, s1, s2, s3)
        j += i
        position = order[j]
        order[j] = order[i]
        order[i] = position
        drawn[i] = holds[position]
    return s0, s1, s2, s3


@compiled(inline="always")
def _four_moments(rows, q, drawn, sample):
    # The means and sums of squared deviations of pair q's samples rows[drawn[t], q] of
    # four trials t = 0 ... 3 (rows: a set's instances x pairs), each summed in index
    # order as DeepCrime's test sums them (probmut.killtest.kernels.pooled_z_of_sums):
    # four chains of additions side by side, which the core overlaps; the same numbers
    # as one sample at a time.
    sum_a = sum_b = sum_c = sum_d = 0.0
    for i in range(sample):
        sum_a += rows[drawn[0, i], q]
        sum_b += rows[drawn[1, i], q]
        sum_c += rows[drawn[2, i], q]
        sum_d += rows[drawn[3, i], q]
    mean_a, mean_b, mean_c, mean_d = sum_a / sample, sum_b / sample, sum_c / sample, sum_d / sample
    sum_a = sum_b = sum_c = sum_d = 0.0
    for i in range(sample):
        sum_a += (rows[drawn[0, i], q] - mean_a) * (rows[drawn[0, i], q] - mean_a)
        sum_b += (rows[drawn[1, i], q] - mean_b) * (rows[drawn[1, i], q] - mean_b)
        sum_c += (rows[drawn[2, i], q] - mean_c) * (rows[drawn[2, i], q] - mean_c)
        sum_d += (rows[drawn[3, i], q] - mean_d) * (rows[drawn[3, i], q] - mean_d)
    return mean_a, sum_a, mean_b, sum_b, mean_c, sum_c, mean_d, sum_d


@compiled(inline="always", error_model="numpy")
def _moments_across(rows, drawn, sample, means, squares):
    # The mean and the sum of squared deviations of every pair's sample rows[drawn[i], q]
    # (rows: a set's instances x pairs), each summed in index order as _four_moments
    # sums it, the pairs side by side (one loop across them: vector instructions).
    pairs = rows.shape[1]
    for q in range(pairs):
        means[q] = 0.0
        squares[q] = 0.0
    for i in range(sample):
        row = rows[drawn[i]]
        for q in range(pairs):
            means[q] += row[q]
    for q in range(pairs):
        means[q] = means[q] / sample
    for i in range(sample):
        row = rows[drawn[i]]
        for q in range(pairs):
            squares[q] += (row[q] - means[q]) * (row[q] - means[q])


@compiled(parallel=True, error_model="numpy")
def _shared_draws_kernel(healthy, mutants, paired, per_set, first_task, count, trials, sample,
                         kind, p_max, effect, direction, key0, key1, out):
    # _kill_count_kernel's tasks for Q population pairs at once that draw alike: the same
    # sizes, seed and tasks draw the same positions, whatever the accuracies, so each task
    # draws them once (which instance each resample position holds, and which positions
    # each trial's partial Fisher-Yates shuffle brings to the front; four trials at a
    # time) and tests every pair on them, the pairs side by side. healthy is (S, n_h, 1),
    # the same for every pair (its samples' means and spreads taken once, four trials
    # side by side), or (S, n_h, Q), each pair's; mutants (S, n_m, Q); out (Q, tasks). A
    # sample's values are those the single kernel's shuffled resample holds, summed in
    # the same order, so every count equals its pair's alone.
    pairs = mutants.shape[2]
    shared = healthy.shape[2] == 1
    n_h = healthy.shape[1]
    n_m = mutants.shape[1]
    tail = normal_tail_bounds(p_max)
    for slot in prange(count):
        task = first_task + slot
        s = task // per_set
        s0, s1, s2, s3 = _seed_state(key0, key1, task)
        h_holds, m_holds = np.empty(n_h, np.int32), np.empty(n_m, np.int32)
        for i in range(n_h):
            j, s0, s1, s2, s3 = _below(n_h, s0, s1, s2, s3)
            h_holds[i] = j
            if paired:
                m_holds[i] = j
        if not paired:
            for i in range(n_m):
                j, s0, s1, s2, s3 = _below(n_m, s0, s1, s2, s3)
                m_holds[i] = j
        h_order, m_order = np.arange(n_h), np.arange(n_m)
        # four trials' samples (the last four cut short: the rows left read old draws)
        h_drawn, m_drawn = np.zeros((4, sample), np.int32), np.zeros((4, sample), np.int32)
        x, y = np.empty(sample), np.empty(sample)
        means_x, squares_x = np.empty(pairs), np.empty(pairs)
        means_y, squares_y = np.empty(pairs), np.empty(pairs)
        unsure, kills = np.empty(pairs, np.bool_), np.zeros(pairs, np.int64)
        for first in range(0, trials, 4):
            size = min(4, trials - first)
            for t in range(size):
                s0, s1, s2, s3 = _draw(h_order, h_holds, h_drawn[t], sample, s0, s1, s2, s3)
                if paired:  # the same ids on both sides
                    for i in range(sample):
                        m_drawn[t, i] = m_holds[h_order[i]]
                else:
                    s0, s1, s2, s3 = _draw(m_order, m_holds, m_drawn[t], sample, s0, s1, s2,
                                           s3)
            if kind != DEEPCRIME:
                for q in range(pairs):
                    for t in range(size):
                        for i in range(sample):
                            x[i] = healthy[s, h_drawn[t, i], 0 if shared else q]
                            y[i] = mutants[s, m_drawn[t, i], q]
                        kills[q] += decide(kind, x, y, p_max, effect, direction)[2]
                continue
            if shared:
                healthy_four = _four_moments(healthy[s], 0, h_drawn, sample)
            for t in range(size):
                _moments_across(mutants[s], m_drawn[t], sample, means_y, squares_y)
                if shared:
                    for q in range(pairs):
                        means_x[q] = healthy_four[2 * t]
                        squares_x[q] = healthy_four[2 * t + 1]
                else:
                    _moments_across(healthy[s], h_drawn[t], sample, means_x, squares_x)
                deepcrime_killed_across(means_x, squares_x, means_y, squares_y, sample,
                                        p_max, effect, direction, tail, unsure, kills)
        for q in range(pairs):
            out[q, task] = kills[q]


def _calls(tasks: int, trials: int, sample: int, n_h: int, n_m: int,
           threads: int) -> tuple[int, int]:
    """How the work is split into kernel calls of about ``CALL_WORK`` per thread: tasks
    per call and trials per call. Whole tasks when one fits a thread's share; else
    ``threads`` tasks at a time (all busy), a slice of their trials per call.

    >>> _calls(tasks=100, trials=100, sample=20, n_h=200, n_m=200, threads=2)   # one call
    (100, 100)
    >>> _calls(tasks=3000, trials=100_000, sample=20, n_h=200, n_m=200, threads=2)
    (8, 100000)
    >>> _calls(tasks=3000, trials=10**7, sample=20, n_h=200, n_m=200, threads=2)
    (2, 416666)
    """
    budget = CALL_WORK * threads
    per_test = 2 * sample + 8
    whole = n_h + n_m + trials * per_test
    if whole * threads <= budget:
        return min(tasks, budget // whole), trials
    block = min(tasks, threads, max(1, CALL_MEMORY // (8 * (n_h + n_m) + 32)))
    return block, min(trials, max(1, budget // (block * per_test)))


def set_threads(threads: int | None) -> int:
    """Use ``threads`` threads in the kernels (None or 0: all cores). Returns the count."""
    available = numba.config.NUMBA_NUM_THREADS
    count = available if not threads else int(threads)
    if count < 1:
        raise ProbmutError(f"threads must be at least 1, got {threads}", option="threads")
    numba.set_num_threads(min(count, available))
    return count


def _as_sets(array: np.ndarray) -> np.ndarray:
    """Checked accuracies (:func:`probmut.validation.accuracies`), one set per row."""
    return np.ascontiguousarray(array[None, :] if array.ndim == 1 else array)


def _count(minimum: int):
    return integer(minimum, MAX_COUNT)


def _sets(healthy, mutant, paired: bool, sample: int, per_set: int):
    """The populations as 2-D arrays of sets (one per row), refused where the sets do not
    match, do not pair, are smaller than the sample or ask for more than
    :data:`MAX_RESAMPLES` resamples (``per_set``: resamples of each set)."""
    h, m = _as_sets(healthy), _as_sets(mutant)
    if h.shape[0] != m.shape[0]:
        raise ProbmutError(f"{h.shape[0]} healthy sets but {m.shape[0]} mutant sets")
    if paired and h.shape != m.shape:
        raise ProbmutError("paired populations must have the same instances; sizes "
                           f"{h.shape[1]} and {m.shape[1]}")
    smallest = min(h.shape[1], m.shape[1])
    if sample > smallest:
        raise ProbmutError(
            f"cannot draw {sample} instances without replacement from a population of "
            f"{smallest}; use a sample size k <= {smallest}", option="sample")
    resamples = h.shape[0] * per_set
    if resamples > MAX_RESAMPLES:
        raise ProbmutError(
            f"{resamples:,} bootstrap resamples in one call (populations x repetitions x "
            f"bootstraps) exceed the limit of {MAX_RESAMPLES:,}; lower the bootstraps or the "
            "repetitions", option="bootstraps")
    return h, m


def _run_kernel(h, m, paired: bool, per_set: int, trials: int, sample: int, criterion,
                key: tuple[int, int], first_set: int, report) -> np.ndarray:
    """The kill counts of every resample of every set (flat, set by set), computed by the
    compiled kernel in calls of a fraction of a second (:func:`_calls`), each call's kill
    tests counted to ``report``."""
    tasks = h.shape[0] * per_set
    out = np.empty(tasks, dtype=np.int64)
    block, trial_step = _calls(tasks, trials, sample, h.shape[1], m.shape[1],
                               numba.get_num_threads())
    rows = block if trial_step < trials else 0  # tasks whose trials take several calls
    states = np.empty((rows, 4), dtype=np.uint64)
    h_boot, m_boot = np.empty((rows, h.shape[1])), np.empty((rows, m.shape[1]))
    for first in range(0, tasks, block):
        count = min(block, tasks - first)
        for trials_from in range(0, trials, trial_step):
            trials_to = min(trials, trials_from + trial_step)
            _kill_count_kernel(h, m, paired, per_set, first, count, trials_from, trials_to,
                               sample, *criterion.kernel_args(), *key, first_set * per_set,
                               states, h_boot, m_boot, out)
            if report is not None:
                report(count * (trials_to - trials_from))
    return out


@renamed(jobs="threads")
@checked(healthy=accuracies, mutant=accuracies, bootstraps=_count(1), trials=_count(1),
         sample=_count(2), repetitions=_count(1), paired=flag,
         criterion=optional(instance(KillCriterion)), seed=seed, threads=threads,
         first_set=integer(0), report=optional(function))
def kill_counts(healthy, mutant, *, bootstraps: int = 100, trials: int = 100, sample: int = 20,
                repetitions: int = 1, paired: bool = False,
                criterion: KillCriterion | None = None, seed=None,
                threads: int | None = None, first_set: int = 0, report=None) -> np.ndarray:
    """Number of kills in ``trials`` k-vs-k kill tests, per bootstrap resample.

    Parameters
    ----------
    healthy, mutant : array_like, shape (n,) or (S, n)
        The accuracies: 1-D for one population, 2-D for S populations, one per row (e.g.
        the sub-populations of a sample-size study). Paired data must be aligned by
        instance id (see :func:`probmut.population.pair`).
    bootstraps, trials, sample : int, optional
        B, N and k of METHOD.md section 3.
    repetitions : int, optional
        R independent repetitions of the whole bagging (section 5).
    paired : bool, optional
        Model-level mutation: resample ids once and draw the same ids on both sides.
    criterion : KillCriterion, optional
        The kill rule (default :class:`~probmut.killtest.KillCriterion`, the DeepCrime
        test); its ``kind`` selects the test, dispatched inside the kernel. A paired
        criterion (``paired-t``, ``wilcoxon``) needs ``paired=True``.
    seed : int, SeedSequence, Generator or None, optional
        See :func:`probmut.seeds.kernel_key`: the same seed gives the same counts, for any
        ``threads``.
    threads : int, optional
        The threads to use (None: all cores).
    first_set : int, optional
        The index of the first row of ``healthy`` within a larger study split into
        several calls (e.g. for progress or resumable chunks): the counts of row ``i`` are
        those that row ``first_set + i`` would get in one call with the same seed.
    report : callable, optional
        Called after each kernel call with the number of kill tests it ran (e.g. a
        progress bar's ``update``). The work is split into calls of a fraction of a
        second (see :func:`_calls`), so Ctrl-C interrupts within about that time; the
        split never changes the counts.

    Returns
    -------
    numpy.ndarray of int, shape (S, R, B)
        The kill counts, squeezed of the axes that were not asked for: ``(B,)`` for one
        population pair and one repetition, ``(R, B)`` with repetitions.

    Raises
    ------
    ProbmutError
        For accuracies that are not finite or not one or two dimensional, populations that
        do not pair, counts out of range, a sample size larger than a population, a paired
        criterion on independent populations, or an unusable seed.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> h, m = rng.normal(0.99, 0.001, 200), rng.normal(0.985, 0.001, 200)
    >>> counts = kill_counts(h, m, bootstraps=10, trials=100, seed=7)
    >>> counts.shape, int(counts.min())
    ((10,), 100)
    """
    criterion = criterion or KillCriterion()
    criterion.require_pairing(paired)
    h, m = _sets(healthy, mutant, paired, sample, int(repetitions) * int(bootstraps))
    single = healthy.ndim == 1
    key = kernel_key(seed)
    set_threads(threads)
    out = _run_kernel(h, m, bool(paired), int(repetitions) * int(bootstraps), int(trials),
                      int(sample), criterion, key, int(first_set), report)
    out = out.reshape(h.shape[0], repetitions, bootstraps)
    if single:
        out = out[0]
        if repetitions == 1:
            out = out[0]
    return out


@checked(bootstraps=_count(1), trials=_count(1), sample=_count(2), paired=flag,
         criterion=optional(instance(KillCriterion)), seed=seed, threads=threads)
def kill_counts_shared(healthy, mutants, *, bootstraps: int = 100, trials: int = 100,
                       sample: int = 20, paired: bool = False,
                       criterion: KillCriterion | None = None, seed=None,
                       threads: int | None = None) -> np.ndarray:
    """:func:`kill_counts` of Q population pairs of the same sizes with the same seed, the
    instances drawn once for all of them.

    The positions a task draws depend on the sizes, the seed and the task alone, not on
    the accuracies; so pairs that share them (a campaign's mutants, each verdict's simulated
    populations, :mod:`probmut.recommend`) need draw them only once: each pair's counts are
    those :func:`kill_counts` gives it alone, for a fraction of the work when Q is large.

    Parameters
    ----------
    healthy : array_like, shape (S, n_h) or (Q, S, n_h)
        Every pair's healthy sets (one array: the same for every pair), or each pair's.
    mutants : array_like, shape (Q, S, n_m)
        Each pair's mutant sets.
    bootstraps, trials, sample, paired, criterion, seed, threads
        As :func:`kill_counts`.

    Returns
    -------
    numpy.ndarray of int, shape (Q, S, B)
        ``[q]`` is ``kill_counts(healthy or healthy[q], mutants[q], ...)``.

    Raises
    ------
    ProbmutError
        As :func:`kill_counts`, and for sets whose shapes differ between the pairs.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> h, m = rng.normal(0.99, 0.002, (3, 50)), rng.normal(0.988, 0.002, (2, 3, 50))
    >>> shared = kill_counts_shared(h, m, bootstraps=4, trials=20, seed=7)
    >>> alone = [kill_counts(h, m[q], bootstraps=4, trials=20, seed=7)[:, 0] for q in range(2)]
    >>> shared.shape, bool(np.array_equal(shared, alone))
    ((2, 3, 4), True)
    """
    criterion = criterion or KillCriterion()
    criterion.require_pairing(paired)
    h, m = np.asarray(healthy, dtype=np.float64), np.asarray(mutants, dtype=np.float64)
    if m.ndim != 3 or h.ndim not in (2, 3) or h.shape[-2] != m.shape[1] or (
            h.ndim == 3 and h.shape[0] != m.shape[0]):
        raise ProbmutError(f"healthy sets of shape {h.shape} and mutant sets of shape {m.shape} "
                           "are not (S, n) or (Q, S, n) and (Q, S, n)")
    for q in range(m.shape[0]):  # each pair refused as kill_counts refuses it
        _sets(accuracies(h if h.ndim == 2 else h[q], "healthy"), accuracies(m[q], "mutants"),
              paired, sample, bootstraps)
    key, count = kernel_key(seed), set_threads(threads)
    tasks = m.shape[1] * int(bootstraps)
    per_task = h.shape[-1] + m.shape[2] + trials * (2 * sample + 8) * (1 + m.shape[0])
    # each pair alone: where one task would hold Ctrl-C too long, or where so few pairs
    # share the draws that the padding below would cost more than they save
    if per_task > CALL_WORK or m.shape[0] < SIDE_BY_SIDE // 2:
        return np.stack([kill_counts(h if h.ndim == 2 else h[q], m[q], bootstraps=bootstraps,
                                     trials=trials, sample=sample, paired=paired,
                                     criterion=criterion, seed=seed, threads=threads)
                         .reshape(m.shape[1], bootstraps) for q in range(m.shape[0])])
    # each set's instances x pairs: a sample's values of every pair side by side; fewer
    # than SIDE_BY_SIDE pairs are padded with copies of the last (their counts dropped)
    pad = [-1] * max(0, SIDE_BY_SIDE - m.shape[0])
    h = h[:, :, None] if h.ndim == 2 else h[list(range(h.shape[0])) + pad].transpose(1, 2, 0)
    h = np.ascontiguousarray(h)
    m_by_set = np.ascontiguousarray(m[list(range(m.shape[0])) + pad].transpose(1, 2, 0))
    out = np.empty((m_by_set.shape[2], tasks), dtype=np.int64)
    block = max(1, CALL_WORK * count // per_task)
    for first in range(0, tasks, block):
        _shared_draws_kernel(h, m_by_set, bool(paired), int(bootstraps), first,
                             min(block, tasks - first), int(trials), int(sample),
                             *criterion.kernel_args(), *key, out)
    return out[:m.shape[0]].reshape(m.shape[0], m.shape[1], bootstraps)
