"""Running the real ``probmut`` command from the train tests: in a subprocess that imports
this worktree's probmut, from the repository's root."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def env() -> dict:
    """This process's environment, with the repository first on the Python path."""
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def probmut(*args, check=True):
    """``python -m probmut ARGS``; with ``check``, a non-zero exit fails the test."""
    result = subprocess.run([sys.executable, "-m", "probmut", *map(str, args)], cwd=REPO,
                            env=env(), capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"probmut {args} exited {result.returncode}:\n{result.stderr}")
    return result
