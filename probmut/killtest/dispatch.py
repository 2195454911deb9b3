"""The compiled dispatch of the kill criteria: :func:`decide` runs the registry's test
(:data:`~probmut.killtest.criteria.CRITERIA`) chosen by its id and applies the criterion's
rule. The scalar and batched API (:mod:`probmut.killtest.api`) and the Monte-Carlo engine
(:mod:`probmut.engine`) share it.
"""

from __future__ import annotations

import math

import numba

from probmut.compiled import compiled
from probmut.killtest.criteria import CRITERIA, KINDS
from probmut.killtest.kernels import _is_constant, pooled_z_of_moments, pooled_z_of_sums


def _dispatch_chain(kernels, index: int = 0):
    # Compiled `dispatch(kind, x, y)` that runs kernels[kind]: a chain of inlined tests
    # built from the registry, so adding a criterion needs no edit here.
    kernel = kernels[index]
    if index == len(kernels) - 1:
        @numba.njit(nogil=True, inline="always")
        def last(kind, x, y):
            return kernel(x, y)
        return last
    rest = _dispatch_chain(kernels, index + 1)

    @numba.njit(nogil=True, inline="always")
    def step(kind, x, y):
        if kind == index:
            return kernel(x, y)
        return rest(kind, x, y)
    return step


_dispatch = _dispatch_chain([c.kernel for c in CRITERIA.values()])


@compiled(nogil=True, inline="always")
def _effect_passes(up, down, effect, direction):
    # up: the effect in the mutant-worse sense; down: in the mutant-better sense.
    if direction == 0:
        return max(up, down) >= effect
    if direction == 1:
        return up >= effect
    return down >= effect


@compiled(nogil=True, inline="always")
def decide(kind, x, y, p_max, effect, direction):
    """One kill test: ``(p, effect_size, killed)`` for samples ``x`` (healthy), ``y`` (mutant).

    Compiled; ``kind, p_max, effect, direction`` are :meth:`KillCriterion.kernel_args`.
    The effect size is the criterion's (:data:`CRITERIA`): Cohen's d, A12, d_z or r_rb.
    Paired criteria read ``x[i], y[i]`` as a pair.

    >>> import numpy as np
    >>> from probmut.killtest import KillCriterion
    >>> x, y = np.array([0.90, 0.91, 0.92, 0.91]), np.array([0.85, 0.86, 0.84, 0.86])
    >>> kind, p_max, effect, direction = KillCriterion(kind="mannwhitney").kernel_args()
    >>> p, a12, killed = decide(kind, x, y, p_max, effect, direction)
    >>> round(p, 4), a12, killed
    (0.0284, 1.0, True)
    """
    p, up, down = _dispatch(kind, x, y)
    return p, up, p <= p_max and _effect_passes(up, down, effect, direction)


#: The kernel id of DeepCrime's test, the default criterion.
DEEPCRIME = KINDS.index("deepcrime")


@compiled(nogil=True, inline="always")
def deepcrime_killed(x, y, sum_x, sum_y, p_max, effect, direction, tail):
    """``decide(DEEPCRIME, x, y, ...)[2]``, the same verdict bit for bit, with less work
    (docs/benchmarks.md): given the sums of ``x`` and ``y`` (in index order), which the
    engine adds up while it draws the samples, and ``tail``, the
    :func:`~probmut.killtest.kernels.normal_tail_bounds` of ``p_max``: the p-value is
    computed only where the effect passes and ``|z|`` is close to the boundary.

    >>> import numpy as np
    >>> from probmut.killtest import KillCriterion
    >>> from probmut.killtest.kernels import normal_tail_bounds
    >>> x, y = np.array([0.90, 0.91, 0.92, 0.91]), np.array([0.85, 0.86, 0.84, 0.86])
    >>> kind, p_max, effect, direction = KillCriterion().kernel_args()
    >>> killed = deepcrime_killed(x, y, x.sum(), y.sum(), p_max, effect, direction,
    ...                           normal_tail_bounds(p_max))
    >>> kind == DEEPCRIME, killed == decide(kind, x, y, p_max, effect, direction)[2]
    (True, True)
    """
    z, d = pooled_z_of_sums(x, y, sum_x, sum_y)
    return deepcrime_killed_of(z, d, p_max, effect, direction, tail)


@compiled(nogil=True, inline="always")
def deepcrime_killed_of(z, d, p_max, effect, direction, tail):
    """:func:`deepcrime_killed` given the test's z statistic and Cohen's d."""
    if not _effect_passes(d, -d, effect, direction):
        return False
    a = abs(z) / math.sqrt(2.0)
    low, high = tail
    if a > high:
        return True
    if a < low:
        return False
    return math.erfc(a) <= p_max


@compiled(nogil=True, inline="always", error_model="numpy")
def deepcrime_killed_across(mx, ssx, my, ssy, k, p_max, effect, direction, tail, unsure,
                            kills):
    """Add to ``kills[q]`` the verdict of DeepCrime's test of every pair ``q`` of samples of
    ``k`` with means ``mx[q], my[q]`` and sums of squared deviations ``ssx[q], ssy[q]``:
    :func:`deepcrime_killed_of` of :func:`~probmut.killtest.kernels.pooled_z_of_moments`,
    bit for bit. The pairs are tested side by side (one loop of the same arithmetic,
    which the compiler turns into vector instructions); the few whose verdict that loop
    cannot be sure of (degenerate samples, ``|z|`` within the tail bounds, NaN) are
    marked in ``unsure`` and decided one at a time by the scalar path.

    >>> import numpy as np
    >>> from probmut.killtest import KillCriterion
    >>> from probmut.killtest.kernels import normal_tail_bounds
    >>> _, p_max, effect, direction = KillCriterion().kernel_args()
    >>> tail = normal_tail_bounds(p_max)
    >>> mx, ssx = np.full(4, 0.90), np.array([1e-3, 1e-3, 0.0, 1e-3])
    >>> my, ssy = np.array([0.89, 0.90, 0.90, 0.898]), np.array([1e-3, 1e-3, 0.0, 1e-3])
    >>> kills = np.zeros(4, np.int64)
    >>> deepcrime_killed_across(mx, ssx, my, ssy, 20, p_max, effect, direction, tail,
    ...                         np.zeros(4, np.bool_), kills)
    >>> one = [deepcrime_killed_of(*pooled_z_of_moments(mx[q], ssx[q], 20, my[q], ssy[q],
    ...                                                 20), p_max, effect, direction, tail)
    ...        for q in range(4)]
    >>> kills.tolist(), [int(v) for v in one]
    ([1, 0, 0, 0], [1, 0, 0, 0])
    """
    low, high = tail
    spread = math.sqrt(1.0 / k + 1.0 / k)
    for q in range(mx.shape[0]):  # no branch: vector instructions
        diff = mx[q] - my[q]
        sp = math.sqrt((ssx[q] + ssy[q]) / (k + k - 2))
        a = abs(diff / (sp * spread)) / math.sqrt(2.0)
        passes = _effect_passes(diff / sp, -(diff / sp), effect, direction)
        constant = _is_constant(ssx[q], k, mx[q]) & _is_constant(ssy[q], k, my[q])
        kills[q] += passes & (a > high) & ~constant
        unsure[q] = constant | (passes & (a >= low) & (a <= high)) | (a != a)
    for q in range(mx.shape[0]):
        if unsure[q]:
            z, d = pooled_z_of_moments(mx[q], ssx[q], k, my[q], ssy[q], k)
            kills[q] += deepcrime_killed_of(z, d, p_max, effect, direction, tail)
