"""For the train tests that start a process of their own (a fresh interpreter, or one a
signal stops); the others run the command through the ``cli`` fixture (tests/conftest.py).
The process imports this worktree's probmut and runs from the repository's root."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def env() -> dict:
    """This process's environment, with the repository first on the Python path."""
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
