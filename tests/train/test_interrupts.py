"""Ctrl-C during a run (probmut.train.interrupts); the end-to-end interrupted run is in
test_run.py."""

import signal
import sys

from probmut.train.interrupts import Interrupts


def test_a_ctrl_c_swallowed_by_a_finalizer_still_stops_the_run(monkeypatch):
    """A KeyboardInterrupt raised inside a finalizer (TensorFlow runs many) is only
    printed by Python; the run remembers the Ctrl-C and stops after the unit, quietly."""
    printed = []  # what Python would print as "Exception ignored in ..."
    monkeypatch.setattr(sys, "unraisablehook", printed.append)
    # Python's own handler, as in a terminal (a test runner may have installed another)
    runner_handler = signal.signal(signal.SIGINT, signal.default_int_handler)

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    try:
        interrupts = Interrupts()
        try:
            Finalized()  # collected at once: the KeyboardInterrupt is raised in __del__
            assert interrupts.requested
        finally:
            interrupts.restore()
        assert printed == []
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert sys.unraisablehook == printed.append
    finally:
        signal.signal(signal.SIGINT, runner_handler)
