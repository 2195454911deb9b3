"""Where instances run: in this process, in local worker processes, or as Ray tasks.

Every backend offers the same two things: ``map_unordered(fn, calls)``, yielding
``(index, result_or_exception)`` as calls finish, and ``shared`` keyword arguments
(large, read-only: the dataset) that reach every call without being re-sent per call.
Each worker process sizes TensorFlow's thread pools to ``threads`` and turns on
deterministic ops, so results are identical whichever backend ran them.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed

from probmut.errors import ProbmutError
from probmut.train.instance import configure_tensorflow


def cpu_count() -> int:
    """CPUs this process may use (respects affinity masks and containers' cpusets)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Serial:
    """Run calls one after another in this process (``--jobs 1``)."""

    def __init__(self, threads: int, shared: dict):
        configure_tensorflow(threads)
        self.shared = shared

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map_unordered(self, fn, calls):
        for index, args in enumerate(calls):
            try:
                yield index, fn(*args, **self.shared)
            except Exception as error:  # one failed instance must not stop the run
                yield index, error


_WORKER_SHARED: dict = {}


def _init_worker(threads: int, shared: dict) -> None:
    configure_tensorflow(threads)
    _WORKER_SHARED.update(shared)


def _call_with_shared(fn, *args):
    return fn(*args, **_WORKER_SHARED)


class LocalPool:
    """``jobs`` spawned worker processes on this machine (``--jobs J``)."""

    def __init__(self, jobs: int, threads: int, shared: dict):
        self.pool = ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker, initargs=(threads, shared))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.pool.shutdown(wait=True, cancel_futures=True)
        return False

    def map_unordered(self, fn, calls):
        futures = {self.pool.submit(_call_with_shared, fn, *args): index
                   for index, args in enumerate(calls)}
        try:
            for future in as_completed(futures):
                error = future.exception()
                yield futures[future], error if error is not None else future.result()
        finally:
            for future in futures:
                future.cancel()


def _ray_call(fn, threads, *args, **shared):
    configure_tensorflow(threads)
    return fn(*args, **shared)


class RayBackend:
    """Each call is a Ray task requesting ``cpus`` CPUs and ``gpus`` GPUs (``--backend ray``).

    Connects to ``address`` (an existing cluster, e.g. ``auto`` or ``ray://head:10001``)
    or starts a local Ray instance; reuses a Ray session the caller already started.
    Shared arguments go once into Ray's object store.
    """

    def __init__(self, address: str | None, cpus: float, gpus: float, threads: int,
                 shared: dict):
        try:
            import ray
        except ImportError:
            raise ProbmutError("--backend ray needs Ray: pip install 'probmut[ray]'") from None
        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, ValueError) as error:
                raise ProbmutError(f"cannot connect to Ray at {address!r}: {error}") from None
            self.started = True
        self.remote = ray.remote(num_cpus=cpus, num_gpus=gpus)(_ray_call)
        self.threads = threads
        self.shared = {key: ray.put(value) for key, value in shared.items()}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.started:
            self.ray.shutdown()
        return False

    def map_unordered(self, fn, calls):
        ray = self.ray
        refs = {self.remote.remote(fn, self.threads, *args, **self.shared): index
                for index, args in enumerate(calls)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                try:
                    yield refs[done[0]], ray.get(done[0])
                except ray.exceptions.RayTaskError as error:
                    yield refs[done[0]], error.as_instanceof_cause()
                except ray.exceptions.RayError as error:  # worker or node lost
                    yield refs[done[0]], error
        finally:
            for ref in pending:
                ray.cancel(ref)
