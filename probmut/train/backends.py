"""Where instances run: in this process, in local worker processes, or as Ray tasks.

Every backend offers the same two things: ``map_unordered(fn, calls)``, yielding
``(index, result_or_exception)`` as calls finish (``limited=False``: without the hard
time limit below, for a call that is not an instance), and ``shared`` keyword arguments
(large, read-only: the dataset; given with ``share()``) that reach every call without
being re-sent per call.
Each process that runs calls is set up once, before its first call, by the run's
trainer (``setup(threads)``, :class:`probmut.train.trainers.Trainer`; by default the
Keras trainer's: TensorFlow's thread pools sized to ``threads`` and deterministic ops), so
results are identical whichever backend ran them. :func:`make_backend` builds the one a
run asks for. What a call prints goes to stderr: stdout is the run's own
output (``--json``).

Time limits. A TensorFlow op (or a user's training function) cannot be interrupted
from inside its own process, so a call is stopped two ways: the call itself stops
training at the first batch end past its deadline (``Assignment.timeout``: the instance
is recorded as timed out, its worker lives on), and the worker backends stop a call
still running ``hard_timeout`` seconds after it started (:func:`hard_limit`) by killing its
worker process (a fresh one takes its place) and yield :class:`InstanceTimeout` for it. A
worker process that dies (out of memory, a segfault in native code) yields
:class:`WorkerDied`; the other calls go on. :class:`Serial` runs calls in this process and
has no hard limit. On Ray, a task whose worker or node is lost runs again (Ray's retries);
lost once more it yields :class:`TaskLost`, which a run does not record as the instance's
failure.
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time

from probmut.errors import ProbmutError
from probmut.io.records import one_line
from probmut.train.interrupts import Deferred
from probmut.train.tf_setup import configure_tensorflow


class InstanceTimeout(Exception):
    """A call ran past the hard time limit; its worker process was killed."""


class WorkerDied(Exception):
    """The worker process running a call died before returning."""


class TaskLost(Exception):
    """A Ray task's worker process or node was lost more often than Ray runs it again:
    the call did not fail, it did not run to its end (not the instance's doing)."""


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

    def map_unordered(self, fn, calls, limited: bool = True):
        if not self.ready:
            self.setup(self.threads)
            self.ready = True
        for index, args in enumerate(calls):
            try:
                with contextlib.redirect_stdout(sys.stderr):  # stdout is the run's output
                    outcome = fn(*args, **self.shared)
            except Exception as error:  # one failed instance must not stop the run
                outcome = error
            yield index, outcome


def _worker_main(connection, setup, threads: int) -> None:
    """A worker process: receive the shared arguments once it has started, then run
    ``(fn, args)`` jobs from the pipe until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    sys.stdout = sys.stderr  # the driver's stdout is the run's output (--json): not the calls'
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

    def map_unordered(self, fn, calls, limited: bool = True):
        queue = collections.deque(enumerate(calls))
        hard_timeout = self.hard_timeout if limited else None
        self._grow(min(self.jobs, len(queue)))
        while queue or self.busy:
            self._check_started()
            while self.idle and queue:
                worker = self.idle.pop()
                index, args = queue.popleft()
                worker.connection.send((fn, args))
                self.busy[worker] = (index, time.monotonic())
            wait = None
            if hard_timeout is not None and self.busy:
                first = min(started for _, started in self.busy.values())
                wait = max(0.0, first + hard_timeout - time.monotonic())
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
                elif (hard_timeout is not None
                      and time.monotonic() - started > hard_timeout):
                    self._replace(worker)
                    yield index, InstanceTimeout(
                        f"still running {hard_timeout:g} s after it started; its worker "
                        "process was killed")


def _ray_call(fn, setup, threads, *args, **shared):
    setup(threads)
    with contextlib.redirect_stdout(sys.stderr):  # as the other backends
        return fn(*args, **shared)


#: How often Ray runs a task again whose worker process or node was lost (Ray's
#: ``max_retries``; an exception of the call itself is never retried).
RAY_RETRIES = 3
#: Seconds the Ray backend waits at most for a result before it looks at Ctrl-C again.
_POLL = 0.5
#: Seconds to wait for a reply from a Ray cluster's address before giving up.
CONNECT_TIMEOUT = 5.0
#: Seconds to wait at most for Ray to settle the tasks cancelled when a run stops.
_SETTLE = 30.0


def ray_endpoint(address: str) -> tuple[str, int] | None:
    """The host and port a Ray ``address`` connects to: ``ray://HOST[:PORT]`` (Ray
    Client, port 10001 by default) or ``HOST:PORT``; ``auto`` as Ray resolves it (the
    ``RAY_ADDRESS`` variable or the cluster last started on this machine; None when it
    finds none, which Ray reports itself).

    >>> ray_endpoint("ray://head.example:10002"), ray_endpoint("10.0.0.5:6379")
    (('head.example', 10002), ('10.0.0.5', 6379))
    """
    from urllib.parse import urlsplit

    if address.startswith("ray://"):
        parts = urlsplit(address)
        return parts.hostname or "", parts.port or 10001
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address

            address = canonicalize_bootstrap_address(address)
        except Exception:  # noqa: BLE001  none found, or Ray's internals moved: Ray tells
            return None
        if address is None:
            return None
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ProbmutError(f"{address!r} is not a Ray address: use HOST:PORT, ray://HOST:PORT "
                           "or auto", option="address")
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Refuse at once a Ray ``address`` nothing answers at (Ray itself would try for
    minutes): one line naming the address and why."""
    import socket

    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    try:
        socket.create_connection(endpoint, timeout=timeout).close()
    except OSError as error:
        why = f"no reply within {timeout:g} s" if isinstance(error, TimeoutError) \
            else error.strerror or one_line(error)
        raise ProbmutError(f"cannot reach a Ray cluster at {address!r} ({endpoint[0]}:"
                           f"{endpoint[1]}): {why}; start one there (ray start --head) or give "
                           "its address", option="address") from None


def _connection_cause(log: str) -> str:
    """What Ray's own log lines say about a failed connection, for the one line: a
    missing or wrong authentication token, else the last reply from the address, else
    nothing.

    >>> _connection_cause("W gcs_client.cc:210: Failed to get cluster ID from GCS server: "
    ...                   "Unauthenticated: RPC error: InvalidAuthToken: Authentication "
    ...                   "token is missing or incorrect")  # doctest: +NORMALIZE_WHITESPACE
    'InvalidAuthToken: Authentication token is missing or incorrect (the cluster uses token
    authentication: set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH, to its token)'
    >>> _connection_cause("W gcs_client.cc:210: Failed to get cluster ID from GCS server: "
    ...                   "RpcError: RPC error: Received http2 header with "
    ...                   "status: 404")  # doctest: +NORMALIZE_WHITESPACE
    'its reply: RpcError: RPC error: Received http2 header with status: 404 (is it the address of a
    Ray head node?)'
    """
    lines = log.splitlines()
    for line in lines:
        if "InvalidAuthToken" in line:
            return (f"{line[line.find('InvalidAuthToken'):].strip()} (the cluster uses token "
                    "authentication: set RAY_AUTH_TOKEN, or RAY_AUTH_TOKEN_PATH, to its token)")
    marker = "Failed to get cluster ID from GCS server: "
    replies = [line[line.find(marker) + len(marker):].strip() for line in lines if marker in line]
    if replies:
        return f"its reply: {replies[-1]} (is it the address of a Ray head node?)"
    return ""


class _StderrCaptured:
    """Ray's native log lines (written to file descriptor 2) go to a file for the block,
    and are written out after it unless :attr:`keep` is False."""

    def __enter__(self):
        import tempfile

        sys.stderr.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        self.keep = True
        return self

    def text(self) -> str:
        self.file.seek(0)
        return self.file.read().decode(errors="replace")

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        if self.keep:
            sys.stderr.write(self.text())
        self.file.close()
        return False


def _lost(error: BaseException) -> TaskLost:
    """The one line of a Ray system failure: its type and its first sentence."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    sentence = text.split(". ")[0].rstrip(".")
    return TaskLost(f"{type(error).__name__}: {sentence}" if sentence else type(error).__name__)


class RayBackend:
    """Each call is a Ray task requesting ``cpus`` CPUs and ``gpus`` GPUs (``--backend ray``).

    Connects to ``address`` (an existing cluster, e.g. ``auto`` or ``ray://head:10001``;
    one nothing answers at is refused at once, :func:`check_reachable`) or starts a local
    Ray instance; reuses a Ray session the caller already started. Shared arguments go
    once into Ray's object store. Each task runs ``setup(threads)`` first (the
    trainer's; default: TensorFlow's, once per worker process). With ``hard_timeout``,
    only as many tasks as the cluster's CPUs can run at once are submitted, so that a
    task runs from its submission, and a task still running ``hard_timeout`` seconds
    later is force-cancelled (its worker process killed).

    A task whose worker process or node is lost is run again by Ray (``retries`` times,
    :data:`RAY_RETRIES`); lost once more, it yields :class:`TaskLost`: the instance did
    not fail, it is left for the next run. Ctrl-C is held back while Ray submits,
    connects or cancels (a KeyboardInterrupt inside its core worker has aborted the
    process) and taken between waits: the tasks still running are cancelled and waited
    for before the KeyboardInterrupt goes on.
    """

    def __init__(self, address: str | None, cpus: float, gpus: float, threads: int,
                 shared: dict | None = None, hard_timeout: float | None = None,
                 setup=configure_tensorflow, retries: int = RAY_RETRIES):
        self.interrupts = Deferred()
        with self.interrupts.held():
            self.ray = self._connect(address)
        self.interrupts.release()
        self.started = self._started
        self.remote = self.ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=retries,
                                      retry_exceptions=False)(_ray_call)
        self.setup = setup
        self.cpus = cpus
        self.threads = threads
        self.hard_timeout = hard_timeout
        self.shared = {}
        self.share(**(shared or {}))

    def _connect(self, address: str | None):
        """Ray, connected (or started); ``_started`` says whether this backend did it."""
        try:
            import ray
        except ImportError:
            raise ProbmutError("the ray backend needs Ray: pip install 'probmut[ray]'",
                               option="backend") from None
        self._started = False
        if ray.is_initialized():
            return ray
        if address is not None:
            check_reachable(address)
        try:
            with _StderrCaptured() as log:
                try:
                    ray.init(address=address, log_to_driver=False)
                except (ConnectionError, ValueError) as error:
                    cause = _connection_cause(log.text())
                    log.keep = not cause
                    raise ProbmutError(f"cannot connect to Ray at {address!r}: "
                                       f"{cause or error}", option="address") from None
        except OSError as error:  # e.g. its socket paths under a long TMPDIR
            raise ProbmutError(f"cannot start Ray: {error} (a shorter TMPDIR, or "
                               "--address of a running cluster, avoids long socket "
                               "paths)", option="backend") from None
        self._started = True
        return ray

    def share(self, **values) -> None:
        """Arguments every call gets, put once into Ray's object store."""
        with self.interrupts.held():
            self.shared.update({key: self.ray.put(value) for key, value in values.items()})
        self.interrupts.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.started:
            with self.interrupts.held():
                self.ray.shutdown()
            self.interrupts.unhold()  # the run ends anyway
        return False

    def _slots(self, calls: int, hard_timeout: float | None) -> int:
        if hard_timeout is None:
            return calls
        return max(1, int(self.ray.cluster_resources().get("CPU", 1) // max(self.cpus, 1e-9)))

    def _stop(self, pending: dict) -> None:
        """Cancel the tasks still pending and wait for Ray to settle each (so that no
        result comes back while Ray shuts down)."""
        refs = list(pending)
        for ref in refs:
            self.ray.cancel(ref, force=True)
        if refs:
            self.ray.wait(refs, num_returns=len(refs), timeout=_SETTLE)

    def _outcome(self, ref):
        """A finished task's result, its own exception, or :class:`TaskLost`."""
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as error:
            return error.as_instanceof_cause()
        except ray.exceptions.RayError as error:  # worker or node lost, more than retried
            return _lost(error)

    def map_unordered(self, fn, calls, limited: bool = True):
        ray = self.ray
        calls = list(calls)
        hard_timeout = self.hard_timeout if limited else None
        slots = self._slots(len(calls), hard_timeout)
        pending: dict = {}  # ref -> (index, submitted)
        submitted = 0
        self.interrupts.hold()
        try:
            while pending or submitted < len(calls):
                while submitted < len(calls) and len(pending) < slots:
                    ref = self.remote.remote(fn, self.setup, self.threads, *calls[submitted],
                                             **self.shared)
                    pending[ref] = (submitted, time.monotonic())
                    submitted += 1
                wait = _POLL
                if hard_timeout is not None:
                    first = min(started for _, started in pending.values())
                    wait = min(wait, max(0.0, first + hard_timeout - time.monotonic()))
                done, _ = ray.wait(list(pending), num_returns=1, timeout=wait)
                if self.interrupts.requested:  # held back: taken here, outside Ray's calls
                    self.interrupts.requested = False
                    raise KeyboardInterrupt
                finished = []
                for ref in done:
                    index, _ = pending.pop(ref)
                    finished.append((index, self._outcome(ref)))
                for ref, (index, started) in list(pending.items()):
                    if (hard_timeout is not None
                            and time.monotonic() - started > hard_timeout):
                        ray.cancel(ref, force=True)
                        del pending[ref]
                        finished.append((index, InstanceTimeout(
                            f"still running {hard_timeout:g} s after it started; its Ray "
                            "task was cancelled")))
                for item in finished:  # the caller's code runs with Ctrl-C as it was
                    self.interrupts.unhold()
                    yield item
                    self.interrupts.hold()
        finally:
            self.interrupts.hold()
            self._stop(pending)
            self.interrupts.unhold()
        self.interrupts.release()  # a Ctrl-C while the last tasks were settled
