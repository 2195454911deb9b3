"""The torch trainer's tests (probmut.train.torch). They skip where torch is not
installed, except where ``PROBMUT_REQUIRE_TORCH`` is set (CI: .ci/run), where a missing
torch fails them: CI runs them for real, never skipped."""

import os

import pytest


def torch_or_skip():
    """torch; the test skipped without it, or failed with ``PROBMUT_REQUIRE_TORCH`` set."""
    if os.environ.get("PROBMUT_REQUIRE_TORCH"):
        import torch  # an ImportError fails the test: CI must run it

        return torch
    return pytest.importorskip("torch")
