"""A headless Chromium (Debian's) driven over the DevTools protocol, for the tests of the
pages flowlib writes or serves (tests/render/test_run_page.py, tests/studio/)."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class DevTools:
    """A minimal DevTools-protocol client for one page of a headless Chromium."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            reply = json.loads(self._socket.recv(timeout=30))
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")


@pytest.fixture
def browser() -> Iterator[DevTools]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed; run scripts/bootstrap.sh")
    profile = tempfile.mkdtemp(prefix="flowlib-chromium-")
    # Chromium's log goes to a file (a pipe nobody reads could fill and block it); the
    # DevTools address is read from there.
    log_path = Path(profile) / "stderr.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--window-size=1280,900",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline and process.poll() is None:
            found = re.search(
                r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", log_path.read_text()
            )
            if found:
                port = int(found.group(1))
            else:
                time.sleep(0.05)
        assert port is not None, "chromium did not start its DevTools server"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        from websockets.sync.client import connect

        with connect(page["webSocketDebuggerUrl"], max_size=None) as socket:
            yield DevTools(socket)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


def open_page(browser: DevTools, url: str) -> None:
    browser.call("Page.navigate", url=url)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = browser.evaluate("document.readyState + ' ' + location.href")
        if state == f"complete {url}":
            return
        time.sleep(0.05)
    raise AssertionError(f"the page did not load: {url}")


def wait_for(browser: DevTools, expression: str, *, timeout: float = 60) -> Any:
    """Evaluate ``expression`` until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = browser.evaluate(expression)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never true: {expression} (last: {value!r})")


def screenshot(browser: DevTools, path: Path) -> None:
    """Save the page as a PNG."""
    import base64

    data = browser.call("Page.captureScreenshot", format="png")["data"]
    path.write_bytes(base64.b64decode(data))
