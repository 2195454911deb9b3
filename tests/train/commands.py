"""For the train tests that start a process of their own (a fresh interpreter, or one a
signal stops); the others run the command through the ``cli`` fixture (tests/conftest.py).
The process imports this worktree's probmut and runs from the repository's root."""

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def env() -> dict:
    """This process's environment, with the repository first on the Python path."""
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def kill_interrupt_resume(argv: list[str], records: Callable[[], list[Path]]) -> int:
    """Run ``argv`` (a ``probmut train`` command) and SIGKILL it once ``records()`` lists
    two instance records, run it again and Ctrl-C it after two more, then run it a third
    time to its end. Checked: the exit codes, the records of the killed run kept
    untouched, the resume's count of instances already done. Returns that count; the
    caller compares the run's files with a run never stopped."""
    from tests.conftest import interruptible

    def stop_after(count: int, stop: int) -> tuple[int, str]:
        process = subprocess.Popen(argv, cwd=REPO, env=env(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
        deadline = time.monotonic() + 300
        while len(records()) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=120)
        return process.returncode, stderr

    code, _ = stop_after(2, signal.SIGKILL)
    assert code == -signal.SIGKILL
    kept = {p: p.stat().st_mtime_ns for p in records()}
    code, stderr = stop_after(len(kept) + 2, signal.SIGINT)
    assert code == 130 and "interrupted; completed work is kept" in stderr, stderr
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())  # not trained again
    done = len(records())
    assert len(kept) < done
    resumed = subprocess.run(argv, cwd=REPO, env=env(), capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done} were already done" in resumed.stdout
    return done
