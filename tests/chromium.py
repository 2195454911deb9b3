"""A small driver of headless Chromium for the report's browser tests.

It speaks the Chrome DevTools Protocol over ``--remote-debugging-pipe``: JSON messages
separated by NUL bytes on two pipes that the browser reads as file descriptor 3 and
writes as 4. That needs nothing but the standard library and Debian's ``chromium``
package: no websocket client, no driver binary, nothing downloaded (Playwright and
Selenium fetch browsers or drivers of their own, pyppeteer a websocket stack).

With a page open it records what the tests check: uncaught exceptions and console or
log errors, and the URL of every request the page makes.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

#: Why a browser test skips on a machine without it (CI installs it: .ci/run).
MISSING = ("Debian's chromium is not installed (apt-get install chromium; .ci/run installs "
           "it)")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
         "--mute-audio", "--remote-debugging-pipe")


def executable() -> str | None:
    """The system's Chromium, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    """The browser died, timed out, or answered a command with an error."""


class Chromium:
    """A headless Chromium with one page; use as a context manager.

    ``load(path)`` opens a local file and waits for its load event; ``evaluate(js)``
    returns a JavaScript expression's value; ``click(selector)``, ``type(text)`` and
    ``press(key)`` send real mouse and keyboard input; ``screenshot()`` returns PNG bytes;
    ``resize(width, height)`` sets the viewport, ``scripts(False)`` turns JavaScript off
    for the pages loaded next.
    """

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60.0):
        binary = executable()
        if binary is None:
            raise BrowserError(MISSING)
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="probmut-chromium-")
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()

        def descriptors():  # in the child: the pipes become fds 3 (commands) and 4 (replies)
            command, reply = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(command, 3)
            os.dup2(reply, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=descriptors)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        try:
            targets = self.send("Target.getTargets")["targetInfos"]
            page = next(t for t in targets if t["type"] == "page")
            self.session = self.send("Target.attachToTarget", targetId=page["targetId"],
                                     flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable", session=True)
            self.resize(width, height)
        except BaseException:
            self.close()
            raise

    # --- the protocol -------------------------------------------------------------------

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe (exit {self.process.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: bool = False, **params) -> dict:
        """Send one command (to the page with ``session``) and return its result."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") != self._next_id:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error']}")
            return reply.get("result", {})

    def wait_for(self, method: str) -> dict:
        """The first event ``method`` (already received or the next to come)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events:
                if event.get("method") == method:
                    return event["params"]
            self.events.append(self._message(deadline))

    # --- the page -----------------------------------------------------------------------

    def load(self, path, fragment: str = "") -> None:
        """Open a local file (at ``#fragment``) and wait until it has loaded (images
        included). The page is loaded afresh even when it is already open (a new
        fragment alone would only scroll it)."""
        for url in ("about:blank",
                    Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else "")):
            self.events.clear()
            self.send("Page.navigate", session=True, url=url)
            self.wait_for("Page.loadEventFired")

    def resize(self, width: int, height: int) -> None:
        """The viewport's size in CSS pixels (a phone's: 390 x 844), at one device pixel
        per CSS pixel."""
        self.width, self.height = width, height
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def scripts(self, enabled: bool) -> None:
        """Turn the pages' JavaScript on or off (for the pages loaded next)."""
        self.send("Emulation.setScriptExecutionDisabled", session=True, value=not enabled)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-serialisable)."""
        result = self.send("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real left click at the middle of the first element matching ``selector``."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1],
                      button="left", clickCount=1)

    def type(self, text: str) -> None:
        """Type ``text`` into the focused element, as a keyboard would."""
        self.send("Input.insertText", session=True, text=text)

    def press(self, key: str = " ", code: str = "Space", keycode: int = 32) -> None:
        """Press and release one key (default: the space bar; "Enter", "Enter", 13 for
        Enter) on the focused element."""
        typed = {"Enter": "\r"}.get(key, key if len(key) == 1 else "")
        for kind, text in (("keyDown", typed), ("keyUp", "")):
            self.send("Input.dispatchKeyEvent", session=True, type=kind, key=key, code=code,
                      text=text, windowsVirtualKeyCode=keycode, nativeVirtualKeyCode=keycode)

    def screenshot(self, clip: dict | None = None) -> bytes:
        """The viewport (or ``clip``: x, y, width, height in CSS pixels) as PNG bytes."""
        options = {"format": "png"}
        if clip:
            options |= {"clip": clip | {"scale": 1}, "captureBeyondViewport": True}
        return base64.b64decode(self.send("Page.captureScreenshot", session=True,
                                          **options)["data"])

    @property
    def errors(self) -> list[str]:
        """Uncaught exceptions, and console and log messages at the error level."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description")
                             or details.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description", "")))
                                      for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    @property
    def requests(self) -> list[str]:
        """The URL of every request the page made."""
        return [event["params"]["request"]["url"] for event in self.events
                if event.get("method") == "Network.requestWillBeSent"]

    # --- the end ------------------------------------------------------------------------

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send("Browser.close")
            except (BrowserError, OSError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for descriptor in (self._read, self._write):
            try:
                os.close(descriptor)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
