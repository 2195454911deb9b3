"""A watchdog over a loader that may download: a download that never starts (no route, a
DNS or proxy hang) is given up after a timeout instead of hanging the run."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

#: Seconds a download may take to start before it is given up (``--download-timeout``).
DOWNLOAD_TIMEOUT = 30.0


class DownloadTimeout(Exception):
    """A download did not start within the timeout."""


def watched(load, timeout: float, targets: list[Path]):
    """Run ``load()`` with a watchdog: if none of ``targets`` has been (re)written within
    ``timeout`` seconds while ``load`` still runs, raise :class:`DownloadTimeout` (the
    download never started: no route, a DNS or proxy hang). Sockets opened meanwhile
    time out after ``timeout`` seconds without data, so a stalled download fails too."""
    def stamp(path):
        try:
            status = path.stat()
            return status.st_mtime_ns, status.st_size
        except FileNotFoundError:
            return None

    before = [stamp(p) for p in targets]
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = load()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        worker = threading.Thread(target=run, name="probmut-download", daemon=True)
        worker.start()
        deadline = time.monotonic() + timeout
        while worker.is_alive():
            worker.join(0.05)
            started = any(stamp(p) != b for p, b in zip(targets, before, strict=True))
            if worker.is_alive() and not started and time.monotonic() > deadline:
                raise DownloadTimeout
    finally:
        socket.setdefaulttimeout(previous)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
