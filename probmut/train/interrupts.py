"""Ctrl-C during a run: stop after the unit of work in progress, even when TensorFlow
swallows the KeyboardInterrupt (:class:`Interrupts`)."""

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
