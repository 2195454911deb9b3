"""Worker backends without TensorFlow: a call that hangs or kills its worker is reported
for that call only, and the run goes on (plain Python functions; no training)."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from probmut.errors import ProbmutError
from probmut.train.backends import (
    RAY_RETRIES,
    InstanceTimeout,
    LocalPool,
    RayBackend,
    TaskLost,
    WorkerDied,
)

REPO = Path(__file__).resolve().parents[2]


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
        raise OSError("validate_socket_filename failed: AF_UNIX path length cannot exceed "
                      "107 bytes")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(ProbmutError, match="cannot start Ray: validate_socket_filename.*TMPDIR"):
        RayBackend(None, 1, 0, 1, {})


def attempt(folder, *, offset):
    """A call that counts its attempts in ``folder``, each named by the Ray node it runs
    on: the first waits until ``folder/go`` exists (or it is lost with its node)."""
    import ray

    folder = Path(folder)
    number = len(list(folder.glob("attempt*"))) + 1
    (folder / f"attempt{number}").write_text(ray.get_runtime_context().get_node_id())
    while number == 1 and not (folder / "go").exists():
        time.sleep(0.05)
    return number + offset


@pytest.fixture(scope="module")
def ray_cluster():
    """A real Ray cluster on this machine, this process its driver: a head without CPUs
    (so that every call runs on a node the tests can remove) and nodes of one CPU added
    by the tests."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        ray.init(address=cluster.address, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def with_nodes(cluster, count: int):
    while len(cluster.worker_nodes) < count:
        cluster.add_node(num_cpus=1)
    return cluster


@pytest.mark.slow
def test_a_ray_task_whose_node_is_lost_runs_again_and_is_never_a_crash(ray_cluster, tmp_path):
    """Two nodes, each running one of two calls. The node of the first call is removed
    (then the second call returns, freeing its node). With Ray's retries the first call
    runs again on the node left and returns; without any it is lost (TaskLost, one line),
    not a failure of its own."""
    def lose_a_node(first, second):
        while not ((first / "attempt1").exists() and (second / "attempt1").exists()):
            time.sleep(0.05)
        lost = (first / "attempt1").read_text()
        ray_cluster.remove_node(next(n for n in ray_cluster.worker_nodes if n.node_id == lost))
        (first / "go").touch()
        (second / "go").touch()

    outcomes = {}
    for retries in (0, RAY_RETRIES):
        with_nodes(ray_cluster, 2)  # added here: Ray starts a node in the main thread only
        folders = [tmp_path / f"{retries}-{i}" for i in range(2)]
        for folder in folders:
            folder.mkdir()
        loser = threading.Thread(target=lose_a_node, args=folders)
        loser.start()
        with RayBackend(None, 1, 0, 1, {"offset": 100}, setup=no_setup,
                        retries=retries) as backend:
            outcomes[retries] = dict(backend.map_unordered(
                attempt, [(str(folder),) for folder in folders]))
        loser.join()
    assert outcomes[RAY_RETRIES] == {0: 102, 1: 101}  # the first ran again, on the node left
    lost = outcomes[0][0]
    assert isinstance(lost, TaskLost) and str(lost).startswith("NodeDiedError: "), lost
    assert "\n" not in str(lost) and len(str(lost)) < 200
    assert outcomes[0][1] == 101


def stubborn(folder, number, *, offset):
    """A call that runs 1.5 s (but the first), deaf to KeyboardInterrupt, as TensorFlow
    can be; ``finished{number}`` in ``folder`` says that it ran to its end."""
    end = time.monotonic() + (1.5 if number else 0.0)
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except KeyboardInterrupt:  # a plain ray.cancel raises it in the task
            pass
    (Path(folder) / f"finished{number}").touch()
    return number + offset


@pytest.mark.slow
def test_ctrl_c_on_a_ray_run_stops_its_tasks_and_leaves_ray_usable(ray_cluster, tmp_path):
    """Ctrl-C at three moments (submitting, waiting, while the caller handles a result)
    ends in a KeyboardInterrupt out of the backend, every task not yet returned is
    stopped (none runs to its end afterwards, although it ignores KeyboardInterrupt), and
    Ray goes on working (one Ctrl-C in six used to abort Ray's core worker)."""
    with_nodes(ray_cluster, 2)
    python_handler = signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's
    try:
        with RayBackend(None, 1, 0, 1, {"offset": 0}, setup=no_setup) as backend:
            for moment in (0.0, 0.45, 1.0):
                folder = tmp_path / str(moment)
                folder.mkdir()
                calls = [(str(folder), number) for number in range(8)]
                returned = []
                with pytest.raises(KeyboardInterrupt):
                    threading.Timer(moment, os.kill, (os.getpid(), signal.SIGINT)).start()
                    for _, outcome in backend.map_unordered(stubborn, calls):
                        returned.append(outcome)
                        time.sleep(0.3)  # the caller's work on a result
                time.sleep(2.0)  # longer than a call: any left running would finish
                finished = sorted(int(p.name[8:]) for p in folder.glob("finished*"))
                assert finished in ([], [0]) and returned in ([], [0]), (moment, finished)
            calls = [(str(tmp_path), number) for number in (0, 0)]
            assert [v for _, v in backend.map_unordered(stubborn, calls)] == [0, 0]
    finally:
        signal.signal(signal.SIGINT, python_handler)


def test_a_ray_address_nothing_answers_at_is_refused_at_once(monkeypatch):
    """Ray tries a wrong address 20 times for about 41 s each (13.7 minutes): refused
    at once, in one line naming it."""
    pytest.importorskip("ray")
    import socket

    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    import ray

    # as from the command line, with no session of this module's cluster to reuse
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ProbmutError, match=rf"^cannot reach a Ray cluster at '{address}' "
                           rf"\(127.0.0.1:{port}\): Connection refused; start one there"):
            RayBackend(address, 1, 0, 1, {})
    with pytest.raises(ProbmutError, match="'head' is not a Ray address"):
        RayBackend("head", 1, 0, 1, {})


def test_a_cluster_refusing_the_clients_token_is_named_in_the_one_line(monkeypatch, capfd):
    """A cluster with token authentication that the client has no token for: Ray ends in
    "Failed to connect" and says why only in its native log lines (on file descriptor 2),
    20 of them; the one line names the cause, and those lines are not repeated."""
    ray = pytest.importorskip("ray")
    import socket

    def refuse(**_):
        for _ in range(3):
            os.write(2, b"[W gcs_client.cc:210] Failed to get cluster ID from GCS server: "
                        b"Unauthenticated: RPC error: InvalidAuthToken: Authentication token "
                        b"is missing or incorrect\n")
        raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:1")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with socket.create_server(("127.0.0.1", 0)) as server:  # it answers, as the cluster does
        address = f"127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(ProbmutError, match=rf"^cannot connect to Ray at '{address}': "
                           "InvalidAuthToken: Authentication token is missing or incorrect "
                           r"\(the cluster uses token authentication: set RAY_AUTH_TOKEN"):
            RayBackend(address, 1, 0, 1, {})
    assert "InvalidAuthToken" not in capfd.readouterr().err


def test_a_call_that_is_not_an_instance_runs_without_the_time_limit():
    """``limited=False`` (the checks before training): a call running past the hard
    limit is not killed."""
    with LocalPool(1, 1, {"offset": 100}, hard_timeout=0.5, setup=no_setup) as pool:
        assert dict(pool.map_unordered(slow, [(1,)], limited=False)) == {0: 101}
        assert isinstance(dict(pool.map_unordered(slow, [(1,)]))[0], InstanceTimeout)


def slow(value, *, offset):
    time.sleep(1.5)
    return value + offset
