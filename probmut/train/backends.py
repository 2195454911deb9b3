"""Where instances run: in this process, in local worker processes, or as Ray tasks.

Every backend offers the same two things: ``map_unordered(fn, calls)``, yielding
``(index, result_or_exception)`` as calls finish, and ``shared`` keyword arguments
(large, read-only: the dataset; given with ``share()``) that reach every call without
being re-sent per call.
Each process that runs calls is set up once, before its first call, by the run's
trainer (``setup(threads)``, :class:`probmut.train.trainers.Trainer`; by default the
Keras trainer's: TensorFlow's thread pools sized to ``threads`` and deterministic ops), so
results are identical whichever backend ran them. :func:`make_backend` builds the one a
run asks for.

Time limits. A TensorFlow op (or a user's training function) cannot be interrupted
from inside its own process, so a call is stopped two ways: the call itself stops
training at the first batch end past its deadline (``Assignment.timeout``: the instance
is recorded as timed out, its worker lives on), and the worker backends stop a call
still running ``hard_timeout`` seconds after it started (:func:`hard_limit`) by killing its worker process (a
fresh one takes its place) and yield :class:`InstanceTimeout` for it. A worker
process that dies (out of memory, a segfault in native code) yields
:class:`WorkerDied`; the other calls go on. :class:`Serial` runs calls in this
process and has no hard limit.
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time

from probmut.errors import ProbmutError
from probmut.io.records import one_line
from probmut.train.tf_setup import configure_tensorflow


class InstanceTimeout(Exception):
    """A call ran past the hard time limit; its worker process was killed."""


class WorkerDied(Exception):
    """The worker process running a call died before returning."""


def hard_limit(timeout: float) -> float:
    """Seconds after which a worker backend kills a call given ``timeout``: the
    timeout plus a grace of half of it (at least 10 s) for the call to stop itself.

    >>> hard_limit(60), hard_limit(4)
    (90.0, 14.0)
    """
    return timeout + max(10.0, 0.5 * timeout)


def cpu_count() -> int:
    """CPUs this process may use (respects affinity masks and containers' cpusets)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def make_backend(kind: str = "local", *, jobs: int = 1, threads: int = 1,
                 timeout: float | None = None, address: str | None = None,
                 cpus_per_task: float | None = None, gpus_per_task: float = 0,
                 setup=configure_tensorflow):
    """The backend a run asks for, not yet entered: :class:`Serial` for one job in this
    process, a :class:`LocalPool` of ``jobs`` worker processes, which start at once (they
    run ``setup``, e.g. import TensorFlow, while the caller prepares the data), or a
    :class:`RayBackend` (``address``; ``cpus_per_task`` default ``threads``). With a
    ``timeout`` (seconds per instance) a local run uses worker processes even for one job,
    so that an instance stuck inside TensorFlow can be killed (:func:`hard_limit`). Give
    the shared arguments with ``share()`` before the first call.

    >>> make_backend(jobs=1, threads=1)
    Serial(threads=1)
    """
    hard = None if timeout is None else hard_limit(timeout)
    if kind == "ray":
        return RayBackend(address, cpus_per_task or threads, gpus_per_task, threads,
                          hard_timeout=hard, setup=setup)
    if kind != "local":
        raise ProbmutError(f"unknown backend {kind!r}; use local or ray", option="backend")
    if address is not None:
        raise ProbmutError("an address is for the ray backend", option="address")
    if jobs == 1 and timeout is None:
        return Serial(threads, setup=setup)
    return LocalPool(jobs, threads, hard_timeout=hard, setup=setup).start()


class Serial:
    """Run calls one after another in this process (``--jobs 1``), set up by ``setup``
    before the first (default: TensorFlow's,
    :func:`probmut.train.tf_setup.configure_tensorflow`), so that a run that never calls
    its backend sets nothing up."""

    def __init__(self, threads: int, shared: dict | None = None, setup=configure_tensorflow):
        self.threads = threads
        self.shared = dict(shared or {})
        self.setup = setup
        self.ready = False

    def __repr__(self) -> str:
        return f"Serial(threads={self.threads})"

    def share(self, **values) -> None:
        """Arguments every call gets (large, read-only: the dataset)."""
        self.shared.update(values)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map_unordered(self, fn, calls):
        if not self.ready:
            self.setup(self.threads)
            self.ready = True
        for index, args in enumerate(calls):
            try:
                yield index, fn(*args, **self.shared)
            except Exception as error:  # one failed instance must not stop the run
                yield index, error


def _worker_main(connection, setup, threads: int) -> None:
    """A worker process: receive the shared arguments once it has started, then run
    ``(fn, args)`` jobs from the pipe until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    setup(threads)
    connection.send(_READY)  # start-up (importing TensorFlow) is not part of any call
    try:
        shared = connection.recv()
    except EOFError:
        return
    while True:
        try:
            job = connection.recv()
        except EOFError:
            return
        if job is None:  # done: skip TensorFlow's seconds of teardown, nothing is left to save
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        fn, args = job
        try:
            outcome = fn(*args, **shared)
        except Exception as error:
            outcome = error
        try:
            connection.send(outcome)
        except Exception as error:  # a result or exception that does not pickle
            connection.send(RuntimeError(f"cannot return the result: {one_line(error)}"))


_READY = "ready"


class _Worker:
    def __init__(self, context, setup, threads: int):
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, setup, threads),
                                       daemon=True)
        self.process.start()
        child.close()

    def stop(self, kill: bool = False) -> None:
        if not kill:
            try:
                self.connection.send(None)
            except (OSError, ValueError):
                kill = True
            self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


class LocalPool:
    """``jobs`` spawned worker processes on this machine (``--jobs J``).

    With ``hard_timeout`` a call still running that many seconds after it was handed
    to a worker is stopped by killing the worker (see the module notes). Each worker
    runs ``setup(threads)`` once before its first call (the trainer's; default:
    TensorFlow's thread pools and deterministic ops), then receives ``shared``.
    :meth:`start` starts the workers early, so that they set up (import TensorFlow) while
    the caller prepares ``shared`` (filled in before the first :meth:`map_unordered`).
    """

    def __init__(self, jobs: int, threads: int, shared: dict | None = None,
                 hard_timeout: float | None = None, setup=configure_tensorflow):
        self.setup = setup
        self.jobs = jobs
        self.threads = threads
        self.shared = dict(shared or {})
        self.hard_timeout = hard_timeout
        self.context = multiprocessing.get_context("spawn")
        self.starting: list[_Worker] = []
        self.idle: list[_Worker] = []
        self.busy: dict[_Worker, tuple[int, float]] = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for worker in self.idle:
            worker.stop()
        for worker in [*self.starting, *self.busy]:
            worker.stop(kill=True)
        self.starting, self.idle, self.busy = [], [], {}
        return False

    def _replace(self, worker: _Worker) -> None:
        del self.busy[worker]
        worker.stop(kill=True)
        self.starting.append(_Worker(self.context, self.setup, self.threads))

    def start(self) -> LocalPool:
        """Start the workers now, before any call (each begins its set-up)."""
        self._grow(self.jobs)
        return self

    def share(self, **values) -> None:
        """Arguments every call gets (large, read-only: the dataset); each worker receives
        them once, before its first call."""
        self.shared.update(values)

    def _grow(self, count: int) -> None:
        """Start workers until there are ``count`` (starting, idle or busy)."""
        while len(self.starting) + len(self.idle) + len(self.busy) < count:
            self.starting.append(_Worker(self.context, self.setup, self.threads))

    def _check_started(self) -> None:
        for worker in list(self.starting):
            if worker.connection.poll():
                try:
                    ready = worker.connection.recv() == _READY
                except (EOFError, OSError):
                    ready = False
                if not ready:
                    raise ProbmutError(f"a worker process failed to start (exit code "
                                       f"{worker.process.exitcode})")
                worker.connection.send(self.shared)
                self.starting.remove(worker)
                self.idle.append(worker)
            elif not worker.process.is_alive():
                raise ProbmutError(f"a worker process failed to start (exit code "
                                   f"{worker.process.exitcode})")

    def map_unordered(self, fn, calls):
        queue = collections.deque(enumerate(calls))
        self._grow(min(self.jobs, len(queue)))
        while queue or self.busy:
            self._check_started()
            while self.idle and queue:
                worker = self.idle.pop()
                index, args = queue.popleft()
                worker.connection.send((fn, args))
                self.busy[worker] = (index, time.monotonic())
            wait = None
            if self.hard_timeout is not None and self.busy:
                first = min(started for _, started in self.busy.values())
                wait = max(0.0, first + self.hard_timeout - time.monotonic())
            handles = [w.connection for w in [*self.busy, *self.starting]]
            handles += [w.process.sentinel for w in [*self.busy, *self.starting]]
            multiprocessing.connection.wait(handles, timeout=wait)
            for worker, (index, started) in list(self.busy.items()):
                if worker.connection.poll():
                    try:
                        outcome = worker.connection.recv()
                    except (EOFError, OSError):
                        pass  # died while sending: handled below
                    else:
                        del self.busy[worker]
                        self.idle.append(worker)
                        yield index, outcome
                        continue
                if not worker.process.is_alive():
                    code = worker.process.exitcode
                    self._replace(worker)
                    yield index, WorkerDied(f"the worker process died (exit code {code})")
                elif (self.hard_timeout is not None
                      and time.monotonic() - started > self.hard_timeout):
                    self._replace(worker)
                    yield index, InstanceTimeout(
                        f"still running {self.hard_timeout:g} s after it started; its worker "
                        "process was killed")


def _ray_call(fn, setup, threads, *args, **shared):
    setup(threads)
    return fn(*args, **shared)


class RayBackend:
    """Each call is a Ray task requesting ``cpus`` CPUs and ``gpus`` GPUs (``--backend ray``).

    Connects to ``address`` (an existing cluster, e.g. ``auto`` or ``ray://head:10001``)
    or starts a local Ray instance; reuses a Ray session the caller already started.
    Shared arguments go once into Ray's object store. With ``hard_timeout``, only as
    many tasks as the cluster's CPUs can run at once are submitted, so that a task runs
    from its submission, and a task still running ``hard_timeout`` seconds later is
    force-cancelled (its worker process killed). Each task runs ``setup(threads)`` first
    (the trainer's; default: TensorFlow's, once per worker process).
    """

    def __init__(self, address: str | None, cpus: float, gpus: float, threads: int,
                 shared: dict | None = None, hard_timeout: float | None = None,
                 setup=configure_tensorflow):
        try:
            import ray
        except ImportError:
            raise ProbmutError("the ray backend needs Ray: pip install 'probmut[ray]'",
                               option="backend") from None
        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, ValueError) as error:
                raise ProbmutError(f"cannot connect to Ray at {address!r}: {error}",
                                   option="address") from None
            except OSError as error:  # e.g. its socket paths under a long TMPDIR
                raise ProbmutError(f"cannot start Ray: {error} (a shorter TMPDIR, or "
                                   "--address of a running cluster, avoids long socket "
                                   "paths)", option="backend") from None
            self.started = True
        self.remote = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=0)(_ray_call)
        self.cpus = cpus
        self.threads = threads
        self.setup = setup
        self.hard_timeout = hard_timeout
        self.shared = {}
        self.share(**(shared or {}))

    def share(self, **values) -> None:
        """Arguments every call gets, put once into Ray's object store."""
        self.shared.update({key: self.ray.put(value) for key, value in values.items()})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.started:
            self.ray.shutdown()
        return False

    def _slots(self, calls: int) -> int:
        if self.hard_timeout is None:
            return calls
        return max(1, int(self.ray.cluster_resources().get("CPU", 1) // max(self.cpus, 1e-9)))

    def map_unordered(self, fn, calls):
        ray = self.ray
        calls = list(calls)
        slots = self._slots(len(calls))
        pending: dict = {}  # ref -> (index, submitted)
        submitted = 0
        try:
            while pending or submitted < len(calls):
                while submitted < len(calls) and len(pending) < slots:
                    ref = self.remote.remote(fn, self.setup, self.threads, *calls[submitted],
                                             **self.shared)
                    pending[ref] = (submitted, time.monotonic())
                    submitted += 1
                wait = None
                if self.hard_timeout is not None:
                    first = min(started for _, started in pending.values())
                    wait = max(0.0, first + self.hard_timeout - time.monotonic())
                done, _ = ray.wait(list(pending), num_returns=1, timeout=wait)
                for ref in done:
                    index, _ = pending.pop(ref)
                    try:
                        yield index, ray.get(ref)
                    except ray.exceptions.RayTaskError as error:
                        yield index, error.as_instanceof_cause()
                    except ray.exceptions.RayError as error:  # worker or node lost
                        yield index, WorkerDied(one_line(error))
                for ref, (index, started) in list(pending.items()):
                    if (self.hard_timeout is not None
                            and time.monotonic() - started > self.hard_timeout):
                        ray.cancel(ref, force=True)
                        del pending[ref]
                        yield index, InstanceTimeout(
                            f"still running {self.hard_timeout:g} s after it started; its Ray "
                            "task was cancelled")
        finally:
            for ref in pending:
                ray.cancel(ref)
