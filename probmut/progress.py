"""Progress of long runs on stderr: a live bar on a terminal, plain lines elsewhere.

Logs and CI capture stderr without a terminal; a live bar would fill them with control
characters, and no output at all looks like a hang. :func:`progress` gives a tqdm bar on
a terminal and otherwise a :class:`LineProgress`, which prints one line when the run
starts, then at most one line every ``interval`` seconds, and one line at the end.
Both take the same calls (``update``, ``set_postfix``, ``write``, ``close``, ``with``).
With a ``delay``, neither shows anything before that many seconds have passed: work
that is over sooner prints nothing.

The time left is estimated from the pace since the first step finished, never from the
start: the first step also pays for what happens once (compiling the kernels, loading
TensorFlow), and counting it promised minutes for work done seconds later. Work whose
step count may grow as it runs (a verdict that needs more simulated populations) says
so at the start, with the most it can take.
"""

from __future__ import annotations

import sys
import time

#: Seconds after which an analysis shows its progress: quicker ones print nothing.
ANALYSIS_DELAY = 2.0


class LineProgress:
    """tqdm's interface, as plain lines on stderr (see the module doc).

    >>> import io
    >>> stream = io.StringIO()
    >>> with LineProgress(4, "demo", stream=stream, interval=0) as bar:
    ...     bar.update(2)
    ...     bar.update(2)
    >>> print(stream.getvalue().splitlines()[-1])
    demo: 4/4 (100%) done
    >>> with LineProgress(4, "quick", stream=stream, delay=60) as bar:   # over before 60 s
    ...     bar.update(4)
    >>> "quick" in stream.getvalue()
    False
    >>> LineProgress(6, "grows", unit="block", stream=stream, most=9).close()
    >>> print(stream.getvalue().splitlines()[-2])
    grows: 6 blocks to do (up to 9 if it needs more)
    >>> with LineProgress(0, "open-ended", unit="integration", stream=stream) as bar:
    ...     bar.update(3)
    >>> print(stream.getvalue().splitlines()[-1])
    open-ended: 3 integrations done
    """

    def __init__(self, total: int, desc: str, unit: str = "step", stream=None,
                 interval: float = 10.0, delay: float = 0.0, most: int | None = None):
        self.total, self.desc, self.unit = total, desc, unit
        self.stream = stream or sys.stderr
        self.interval = interval
        self.delay = delay
        self.n = 0
        self.postfix = ""
        self.start = self.last = time.monotonic()
        self.paced: tuple[float, int] | None = None  # time and count at the first step's end
        self.closed = False
        self.shown = not delay
        more = f" (up to {most:,} if it needs more)" if most is not None and most > total else ""
        if self.shown:
            self._line(f"{desc}: {total:,} {unit}s to do{more}" if total else f"{desc}: started")

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _status(self) -> str:
        if not self.total:  # a count of steps not known in advance
            return f"{self.desc}: {self.n:,} {self.unit}s, {time.monotonic() - self.start:.0f} s"
        share = f" ({self.n / self.total:.0%})"
        now = time.monotonic()
        elapsed = now - self.start
        rest = ""
        if self.paced is not None and self.paced[1] < self.n < self.total:
            pace = (now - self.paced[0]) / (self.n - self.paced[1])  # the first step left out
            rest = f", about {pace * (self.total - self.n):.0f} s left"
        postfix = f" [{self.postfix}]" if self.postfix else ""
        return f"{self.desc}: {self.n:,}/{self.total:,}{share}, {elapsed:.0f} s{rest}{postfix}"

    def update(self, count: int = 1) -> None:
        self.n += count
        now = time.monotonic()
        if self.paced is None:
            self.paced = now, self.n
        if self.total and self.n >= self.total:
            return
        if self.shown and now - self.last >= self.interval or (
                not self.shown and now - self.start >= self.delay):
            self.shown, self.last = True, now
            self._line(self._status())

    def set_postfix(self, refresh: bool = False, **values) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def write(self, text: str, file=None) -> None:
        self._line(text)

    def close(self, ending: str = "done") -> None:
        if not self.closed:
            self.closed = True
            if not self.shown:
                return
            postfix = f" [{self.postfix}]" if self.postfix else ""
            done = (f"{self.n:,}/{self.total:,} ({self.n / self.total:.0%})" if self.total
                    else f"{self.n:,} {self.unit}s")
            self._line(f"{self.desc}: {done} {ending}{postfix}".replace(":  ", ": "))

    def __enter__(self):
        return self

    def __exit__(self, kind, *exc):
        self.close("done" if kind is None else "stopped")
        return False


class _Silent(LineProgress):
    """No progress output (``--quiet``); :meth:`write`'s messages still show."""

    def __init__(self, total: int = 0, *args, **kwargs):
        self.total, self.n, self.closed = total, 0, True
        self.stream = sys.stderr

    def update(self, count: int = 1) -> None:
        self.n += count

    def set_postfix(self, refresh: bool = False, **values) -> None:
        pass


def progress(total: int, desc: str, *, enabled: bool = True, unit: str = "step",
             unit_scale: bool = False, delay: float = 0.0, most: int | None = None):
    """A progress display for ``total`` steps: tqdm on a terminal, lines otherwise,
    nothing when ``enabled`` is False, nor before ``delay`` seconds. ``most``: the most
    steps there can be when the work may add some as it runs (``total`` grows then); a
    ``total`` of 0: the count is not known in advance (steps are counted, not shared).

    >>> with progress(3, "quiet", enabled=False) as bar:
    ...     bar.update(3)
    """
    if not enabled:
        return _Silent(total)
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total or None, desc=desc, unit=unit, unit_scale=unit_scale, leave=False,
                    file=sys.stderr, dynamic_ncols=True, delay=delay)
    return LineProgress(total, desc, unit, delay=delay, most=most)
