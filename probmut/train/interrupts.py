"""Ctrl-C during a run: stop after the unit of work in progress, even when TensorFlow
swallows the KeyboardInterrupt (:class:`Interrupts`), and hold it back where a
KeyboardInterrupt raised half-way would leave a library in a broken state
(:class:`Deferred`: importing Ray, connecting to it, submitting and cancelling its tasks)."""

from __future__ import annotations

import signal
import sys
import threading


class Interrupts:
    """Ctrl-C stops a run even when TensorFlow swallows it: a KeyboardInterrupt raised
    inside a finalizer (TensorFlow runs many) is only printed as "Exception ignored", so
    SIGINT is also remembered (``requested``, which the run checks after each unit), and
    such a swallowed KeyboardInterrupt is not printed. Only in the main thread, and only
    over Python's own SIGINT handler; :meth:`restore` puts back what was there."""

    def __init__(self):
        self.requested = False
        self._previous = None
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handler), sys.unraisablehook
            sys.unraisablehook = self._unraisable

    def _handler(self, signum, frame):
        self.requested = True
        raise KeyboardInterrupt

    def _unraisable(self, info):
        if not issubclass(info.exc_type, KeyboardInterrupt):
            self._previous[1](info)

    def restore(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous[0])
            sys.unraisablehook = self._previous[1]
            self._previous = None


class Deferred:
    """Hold Ctrl-C back while :meth:`held` is on: SIGINT is only remembered
    (``requested``), and :meth:`release` gives it to the handler it would have met, in
    this process's main thread, from plain Python code. Outside the main thread, or where
    SIGINT is not handled by Python code (ignored, or the default action), it does
    nothing.

    >>> before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own
    >>> deferred = Deferred()
    >>> with deferred.held():
    ...     signal.raise_signal(signal.SIGINT)   # Ctrl-C while held: only remembered
    >>> deferred.requested
    True
    >>> try:
    ...     deferred.release()                 # now it interrupts
    ... except KeyboardInterrupt:
    ...     print("interrupted")
    interrupted
    >>> _ = signal.signal(signal.SIGINT, before)

    (The first line makes the example's SIGINT Python's, wherever it runs: a shell's
    background job starts with SIGINT ignored, and then ``held`` has nothing to hold.)
    """

    def __init__(self):
        self.requested = False
        self._previous = None

    def _handler(self, signum, frame):
        self.requested = True

    def hold(self) -> None:
        """Remember SIGINT from now on instead of handling it (until :meth:`unhold`)."""
        if self._previous is not None or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):
            self._previous = previous
            signal.signal(signal.SIGINT, self._handler)

    def unhold(self) -> None:
        """Handle SIGINT again as before :meth:`hold`; a Ctrl-C held back stays in
        ``requested``."""
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def held(self):
        """A block during which SIGINT is held back (:meth:`hold`, :meth:`unhold`)."""
        return _Held(self)

    def release(self) -> None:
        """Give a Ctrl-C held back to the handler it would have met (Python's raises
        KeyboardInterrupt here)."""
        self.unhold()
        if self.requested:
            self.requested = False
            signal.raise_signal(signal.SIGINT)


class _Held:
    def __init__(self, deferred: Deferred):
        self.deferred = deferred

    def __enter__(self):
        self.deferred.hold()
        return self.deferred

    def __exit__(self, *exc):
        self.deferred.unhold()
        return False
