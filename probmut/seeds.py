"""Every random stream of probmut, from the seed and a named role.

A seed (a non-negative int, a :class:`numpy.random.SeedSequence`, a
:class:`numpy.random.Generator` or None) becomes one root :class:`~numpy.random.SeedSequence`
(:func:`seed_sequence`). Each computation draws from the stream of its *role*, a row of
:data:`ROLES`, found under that root by the role's key and the role's parts (a size, a
block, a mutant's name): :func:`stream`, or :func:`generator` for a NumPy generator,
:func:`seed_of` for a plain integer seed handed to another library, :func:`kernel_key` for
the compiled engine. A stream depends on the seed, the role and its parts alone, never on
the order of the calls, on other computations or on the number of workers.

A role's stream is laid out in one of two ways:

- ``"spawn"``: NumPy's spawn keys, ``SeedSequence(root.entropy, spawn_key=root.spawn_key
  + key + parts)``, the child that :meth:`~numpy.random.SeedSequence.spawn` would give,
  without its counter (the same call gives the same stream however often it is made);
- ``"entropy"``: ``SeedSequence([seed, *key, *parts])`` for an integer seed: the
  instance seeds of training and the stacked trainer's data order, whose numbers every
  trained instance depends on.

A part that is a string (a mutant's name) enters as its CRC-32. The keys are those each
computation has always used, so the numbers of every documented output stay as they were;
a new role takes a key that no role of its computation uses. The engine's own streams (one
xoshiro256** per bootstrap task, seeded by SplitMix64 from the task's index) are derived
inside its compiled kernels from the two words of :func:`kernel_key`.

Examples
--------
>>> draw = lambda: generator(42, "repeat", 3).integers(0, 100, 3).tolist()
>>> draw() == draw()
True
>>> stream(42, "recommend verdict", 200).spawn_key
(1, 200)
>>> seed_of(0, "instance", 3, "healthy")
211249393
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from probmut.errors import ProbmutError

#: The seed of every command's ``--seed`` and of :func:`probmut.train.train_populations`
#: when none is given (the PMT paper's scripts use 42).
DEFAULT_SEED = 42


@dataclass(frozen=True)
class Role:
    """One row of :data:`ROLES`: where a computation's stream lies under the root.

    ``key`` comes before the parts the caller gives (``parts`` names them); ``layout`` is
    ``"spawn"`` or ``"entropy"`` (module notes); ``bits`` is the width of the integer
    :func:`seed_of` gives (32 or 64), None for a role used only as a stream.
    """

    name: str
    key: tuple[int, ...]
    parts: tuple[str, ...]
    what: str
    layout: str = "spawn"
    bits: int | None = None


#: Every role, by name.
ROLES = {r.name: r for r in (
    Role(name="bagged posterior", key=(), parts=(),
         what="the kill tests of every population pair of a bagged posterior (one key for "
              "all pairs)"),
    Role(name="monte-carlo error", key=(), parts=(),
         what="the R repetitions of the bagged posterior's kill tests"),
    Role(name="repeat", key=(), parts=("repetition",),
         what="one repetition of the motivating experiment: its pools and its tests"),
    Role(name="paper repeat", key=(), parts=("population", "k"), layout="entropy",
         what="the seed of the replication's motivating experiment, per population and k"),
    Role(name="sample-size draws", key=(0,), parts=("size index",),
         what="which instances the sub-populations of one size hold"),
    Role(name="sample-size tests", key=(1,), parts=(),
         what="the kill tests of every sub-population (rows kept apart by the engine)"),
    Role(name="recommend size", key=(0,), parts=("instances",),
         what="a prediction's simulated populations of n per side, split in two: the "
              "fresh instances and the kill tests"),
    Role(name="recommend verdict", key=(1,), parts=("instances",),
         what="the verdict's first block of simulated populations, split as above"),
    Role(name="recommend verdict more", key=(2,), parts=("instances", "block"),
         what="a block the verdict adds while its bounds leave it undecided, split as above"),
    Role(name="verdict", key=(), parts=("mutant", "look"), bits=64,
         what="the seed of one mutant's verdict at one look of train --until-settled"),
    Role(name="bayes sampler", key=(0,), parts=(), bits=32,
         what="the seed of the NUTS sampler (nutpie or PyMC)"),
    Role(name="bayes tests", key=(1,), parts=("chunk",),
         what="the kill tests simulated for one chunk of posterior draws"),
    Role(name="campaign draws", key=(0,), parts=("name",),
         what="joint draws of the kill probabilities of a campaign (the score: 'score')"),
    Role(name="campaign kill curve", key=(1,), parts=("mutation",),
         what="the posterior draws behind one mutation's kill curve"),
    Role(name="campaign operator score", key=(2,), parts=("mutation",),
         what="joint draws of the kill probabilities of one operator's mutants (its score)"),
    Role(name="score resamples", key=(3,), parts=("block",),
         what="a block of resamples train --until-score adds to decide whether the score "
              "is settled (block 1, 2, ...; the first is the analysis seed's own)"),
    Role(name="coverage subsets", key=(), parts=(),
         what="the random test subsets of coverage against killing"),
    Role(name="coverage bootstrap", key=(), parts=(),
         what="the bootstrap of Kendall's tau between coverage and killing"),
    Role(name="instance", key=(), parts=("instance", "population"), layout="entropy", bits=32,
         what="the seed of one trained instance (its weights, data and mutation draws)"),
    Role(name="data order", key=(1,), parts=(), layout="entropy",
         what="a stacked member's order of the training data (a torch instance's too), "
              "from its instance seed"),
    Role(name="initial weights", key=(2,), parts=(), layout="entropy", bits=64,
         what="a torch instance's initial weights, from its instance seed"),
    Role(name="dropout masks", key=(3,), parts=(), layout="entropy", bits=64,
         what="a torch instance's dropout masks, from its instance seed"),
)}


def seed_sequence(seed) -> np.random.SeedSequence:
    """The root of every random stream of probmut, from any seed a user may give.

    Parameters
    ----------
    seed : int, sequence of int, SeedSequence, Generator or None
        A non-negative int (or a sequence of them), a :class:`numpy.random.SeedSequence`
        (returned as it is), a :class:`numpy.random.Generator` (a fresh key is drawn from
        it, as scikit-learn uses a ``random_state``) or None (fresh entropy).

    Returns
    -------
    numpy.random.SeedSequence

    Raises
    ------
    ProbmutError
        For a negative, fractional or otherwise unusable seed.

    Examples
    --------
    >>> seed_sequence(42).entropy
    42
    >>> entropy = lambda: seed_sequence(np.random.default_rng(1)).entropy
    >>> entropy() == entropy()
    True
    >>> seed_sequence(-5)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: a seed must be a non-negative integer, a SeedSequence, a Generator
    or None; got -5
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2**63, size=4).tolist())
    try:
        return np.random.SeedSequence(seed)
    except (TypeError, ValueError, OverflowError):
        raise ProbmutError("a seed must be a non-negative integer, a SeedSequence, a Generator "
                           f"or None; got {seed!r}", option="seed") from None


def _word(part) -> int:
    """A part of a stream's key as an integer: a string by its CRC-32."""
    return zlib.crc32(part.encode()) if isinstance(part, str) else int(part)


def stream(seed, role: str, *parts) -> np.random.SeedSequence:
    """The stream of ``role`` (a name of :data:`ROLES`) and its ``parts`` under ``seed``.

    Parameters
    ----------
    seed : int, sequence of int, SeedSequence, Generator or None
        Anything :func:`seed_sequence` takes; an integer for a role of the ``"entropy"``
        layout.
    role : str
        The role's name.
    *parts : int or str
        As many as the role names (a string enters as its CRC-32).

    Returns
    -------
    numpy.random.SeedSequence

    Raises
    ------
    ProbmutError
        For an unknown role, the wrong number of parts, or a seed the role cannot take.

    Examples
    --------
    >>> stream(7, "repeat", 2).spawn_key == np.random.SeedSequence(7).spawn(3)[2].spawn_key
    True
    """
    spec = ROLES.get(role)
    if spec is None:
        raise ProbmutError(f"unknown random-stream role {role!r}; one of {', '.join(ROLES)}")
    if len(parts) != len(spec.parts):
        raise ProbmutError(f"the {role!r} stream takes {len(spec.parts)} part(s) "
                           f"({', '.join(spec.parts) or 'none'}), got {len(parts)}")
    words = (*spec.key, *(_word(p) for p in parts))
    if spec.layout == "entropy":
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ProbmutError(f"the {role!r} stream needs a non-negative integer seed, got "
                               f"{seed!r}", option="seed")
        return np.random.SeedSequence([int(seed), *words])
    root = seed_sequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, *words),
                                  pool_size=root.pool_size)


def split(sequence: np.random.SeedSequence, count: int) -> list[np.random.SeedSequence]:
    """``count`` independent streams under ``sequence``: the children
    :meth:`~numpy.random.SeedSequence.spawn` gives a sequence that has spawned none, whatever
    ``sequence`` has spawned before.

    Returns
    -------
    list of numpy.random.SeedSequence

    Examples
    --------
    >>> [s.spawn_key for s in split(np.random.SeedSequence(1, spawn_key=(4,)), 2)]
    [(4, 0), (4, 1)]
    """
    return [np.random.SeedSequence(sequence.entropy, spawn_key=(*sequence.spawn_key, i),
                                   pool_size=sequence.pool_size) for i in range(count)]


def generator(seed, role: str, *parts) -> np.random.Generator:
    """A NumPy generator on :func:`stream` ``(seed, role, *parts)``.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ProbmutError
        As :func:`stream`.
    """
    return np.random.default_rng(stream(seed, role, *parts))


def seed_of(seed, role: str, *parts) -> int:
    """An integer seed for another library (Keras, nutpie, PyMC, a nested study): the
    first word of :func:`stream` ``(seed, role, *parts)``, of the role's ``bits``.

    Returns
    -------
    int

    Raises
    ------
    ProbmutError
        As :func:`stream`, and for a role that gives no integer seed.

    Examples
    --------
    >>> seed_of(42, "verdict", "change_label_3.12", 20)
    17277798139819798761
    """
    bits = ROLES[role].bits if role in ROLES else None
    sequence = stream(seed, role, *parts)
    if bits is None:
        raise ProbmutError(f"the {role!r} role is a stream, not an integer seed")
    return int(sequence.generate_state(1, np.uint64 if bits == 64 else np.uint32)[0])


def kernel_key(seed) -> tuple[np.uint64, np.uint64]:
    """The two 64-bit words from which the compiled engine derives every task's stream:
    the first two words of ``seed``'s :func:`seed_sequence`.

    Returns
    -------
    tuple of two numpy.uint64

    Raises
    ------
    ProbmutError
        As :func:`seed_sequence`.

    Examples
    --------
    >>> kernel_key(42) == kernel_key(np.random.SeedSequence(42))
    True
    """
    words = seed_sequence(seed).generate_state(2, dtype=np.uint64)
    return np.uint64(words[0]), np.uint64(words[1])
