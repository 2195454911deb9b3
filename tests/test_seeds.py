"""Every random stream from the seed and a named role (probmut.seeds)."""

import zlib

import numpy as np
import pytest

from probmut import seeds
from probmut.errors import ProbmutError


def _child(seed, *key):
    """A spawn-key child of the seed's root, written out with NumPy alone."""
    root = np.random.SeedSequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=key)


def _crc(name):
    return zlib.crc32(name.encode())


#: Each role, one call of it, and the stream every computation derived before the roles
#: existed (their numbers are those of the documented outputs and of trained instances).
LEGACY = {
    "bagged posterior": ((), lambda s: np.random.SeedSequence(s)),
    "monte-carlo error": ((), lambda s: np.random.SeedSequence(s)),
    "repeat": ((2,), lambda s: np.random.SeedSequence(s).spawn(3)[2]),
    "paper repeat": ((1, 20), lambda s: np.random.SeedSequence([s, 1, 20])),
    "sample-size draws": ((2,), lambda s: np.random.SeedSequence(s).spawn(2)[0].spawn(3)[2]),
    "sample-size tests": ((), lambda s: np.random.SeedSequence(s).spawn(2)[1]),
    "recommend size": ((50,), lambda s: _child(s, 0, 50)),
    "recommend verdict": ((200,), lambda s: _child(s, 1, 200)),
    "recommend verdict more": ((200, 3), lambda s: _child(s, 2, 200, 3)),
    "verdict": (("change_label_3.12", 20), lambda s: _child(s, _crc("change_label_3.12"), 20)),
    "bayes sampler": ((), lambda s: np.random.SeedSequence(s).spawn(2)[0]),
    "bayes tests": ((2,), lambda s: np.random.SeedSequence(s).spawn(2)[1].spawn(3)[2]),
    "campaign draws": (("score",), lambda s: _child(s, 0, _crc("score"))),
    "campaign kill curve": (("lr",), lambda s: _child(s, 1, _crc("lr"))),
    "campaign operator score": (("lr",), lambda s: _child(s, 2, _crc("lr"))),
    "score resamples": ((1,), lambda s: _child(s, 3, 1)),
    "coverage subsets": ((), lambda s: np.random.SeedSequence(s)),
    "coverage bootstrap": ((), lambda s: np.random.SeedSequence(s)),
    "instance": ((3, "healthy"), lambda s: np.random.SeedSequence([s, 3, _crc("healthy")])),
    "data order": ((), lambda s: np.random.SeedSequence([s, 1])),
    "initial weights": ((), lambda s: np.random.SeedSequence([s, 2])),
    "dropout masks": ((), lambda s: np.random.SeedSequence([s, 3])),
}


def test_every_role_keeps_the_stream_it_had():
    """A role whose derivation changed would change the numbers of every output (and of
    every trained instance) that uses it: each is pinned to the expression it replaced."""
    assert set(LEGACY) == set(seeds.ROLES)
    for role, (parts, legacy) in LEGACY.items():
        got = seeds.stream(42, role, *parts).generate_state(4)
        assert np.array_equal(got, legacy(42).generate_state(4)), role


def test_integer_seeds_are_those_given_to_keras_nutpie_and_the_verdicts():
    # the instance seeds of every trained population, and train --until-settled's
    # verdict streams, as recorded before the roles (docs/training.md, docs/recommend.md)
    assert seeds.seed_of(0, "instance", 3, "healthy") == 211249393
    assert seeds.seed_of(42, "instance", 7, "change_label_40") == 1389374883
    assert seeds.seed_of(42, "verdict", "change_label_3.12", 20) == 17277798139819798761
    assert seeds.seed_of(5, "bayes sampler") == int(
        np.random.SeedSequence(5).spawn(2)[0].generate_state(1)[0])
    with pytest.raises(ProbmutError, match="a stream, not an integer seed"):
        seeds.seed_of(5, "repeat", 1)


def test_a_stream_depends_on_its_seed_role_and_parts_alone():
    root = np.random.SeedSequence(9)
    first = seeds.stream(root, "repeat", 1).generate_state(2)
    root.spawn(5)  # what the root has spawned before does not matter
    assert np.array_equal(first, seeds.stream(root, "repeat", 1).generate_state(2))
    assert not np.array_equal(first, seeds.stream(root, "repeat", 2).generate_state(2))
    assert not np.array_equal(first, seeds.stream(10, "repeat", 1).generate_state(2))
    parent = seeds.stream(9, "recommend size", 25)
    parent.spawn(1)
    assert [s.spawn_key for s in seeds.split(parent, 2)] == [(0, 25, 0), (0, 25, 1)]
    # a Generator or None gives a root once; its streams follow from that root
    assert seeds.seed_sequence(np.random.default_rng(1)).entropy == seeds.seed_sequence(
        np.random.default_rng(1)).entropy


@pytest.mark.parametrize(("call", "message"), [
    (lambda: seeds.stream(1, "bootstrap"), "unknown random-stream role 'bootstrap'"),
    (lambda: seeds.stream(1, "repeat"), "takes 1 part"),
    (lambda: seeds.stream(None, "instance", 0, "healthy"), "needs a non-negative integer"),
    (lambda: seeds.stream(-1, "repeat", 0), "a seed must be a non-negative integer"),
])
def test_bad_roles_and_seeds_are_refused_in_one_line(call, message):
    with pytest.raises(ProbmutError, match=message):
        call()


def test_the_default_seed_is_set_once():
    """Every command's --seed, the training library's and the replication's default are
    probmut.seeds.DEFAULT_SEED; the report's is the run's recorded seed (None), and
    DEFAULT_SEED for populations of no run."""
    import argparse
    import inspect

    from probmut.cli import build_parser
    from probmut.replicate import replicate
    from probmut.train.trainer import SEED

    commands = next(a for a in build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    defaults = {name: action.default for name, parser in commands.items()
                for action in parser._actions if "--seed" in action.option_strings}
    assert defaults.pop("report") is None
    assert len(defaults) >= 9 and set(defaults.values()) == {seeds.DEFAULT_SEED}
    from probmut.campaign import summarize_campaign

    assert summarize_campaign(model="mnist_dc", verdicts=False).seed == seeds.DEFAULT_SEED
    assert SEED == seeds.DEFAULT_SEED == inspect.signature(replicate).parameters["seed"].default
