"""Worker backends without TensorFlow: a call that hangs or kills its worker is reported
for that call only, and the run goes on (plain Python functions; no training)."""

import os
import time

import pytest

from probmut.errors import ProbmutError
from probmut.train.backends import InstanceTimeout, LocalPool, RayBackend, WorkerDied


def no_setup(threads):
    pass


def work(kind, value, *, offset):
    if kind == "hang":
        time.sleep(3600)
    if kind == "die":
        os._exit(7)
    if kind == "raise":
        raise ValueError(f"bad value {value}")
    return value + offset


CALLS = [("ok", 1), ("hang", 2), ("ok", 3), ("die", 4), ("raise", 5), ("ok", 6)]


def test_local_pool_kills_a_hanging_call_and_survives_a_dying_worker():
    start = time.monotonic()
    with LocalPool(2, 1, {"offset": 100}, hard_timeout=2.0, setup=no_setup) as pool:
        outcomes = dict(pool.map_unordered(work, CALLS))
    assert time.monotonic() - start < 60  # the hanging call did not hang the run
    assert [outcomes[i] for i in (0, 2, 5)] == [101, 103, 106]
    assert isinstance(outcomes[1], InstanceTimeout) and "2 s" in str(outcomes[1])
    assert isinstance(outcomes[3], WorkerDied) and "exit code 7" in str(outcomes[3])
    assert isinstance(outcomes[4], ValueError) and "bad value 5" in str(outcomes[4])


def test_without_a_limit_every_call_returns_and_workers_are_reused():
    calls = [("ok", k) for k in range(5)]
    with LocalPool(2, 1, {"offset": 0}, setup=no_setup) as pool:
        assert sorted(v for _, v in pool.map_unordered(work, calls)) == list(range(5))
        workers = [w.process for w in pool.idle + pool.starting]
        assert len(workers) == 2
        assert sorted(v for _, v in pool.map_unordered(work, calls[:2])) == [0, 1]
        assert {w.process.pid for w in pool.idle + pool.starting} == {p.pid for p in workers}
    assert not any(p.is_alive() for p in workers)  # stopped on exit


def test_ray_that_cannot_start_is_one_line_naming_the_cause(monkeypatch):
    """Ray refuses socket paths over 107 bytes (a long TMPDIR): a ProbmutError, not
    Ray's traceback."""
    ray = pytest.importorskip("ray")

    def refuse(**_):
        raise OSError("validate_socket_filename failed: AF_UNIX path length cannot exceed 107 bytes")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(ProbmutError, match="cannot start Ray: validate_socket_filename.*TMPDIR"):
        RayBackend(None, 1, 0, 1, {})
