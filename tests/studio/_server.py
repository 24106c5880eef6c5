"""Start a real ``flowlib studio`` process for a test and talk to it over HTTP."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FLOWS = str(Path(__file__).with_name("flows.py"))
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    """A running studio: its address (``http://127.0.0.1:PORT``) and token, if any."""

    base: str
    token: str | None
    process: subprocess.Popen[str]
    printed: str

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        token: bool = True,
    ) -> tuple[int, Any]:
        """Send a request; returns ``(status, decoded JSON or text)``."""
        sent = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("content-type", "application/json")
        if token and self.token is not None:
            sent.setdefault("authorization", f"Bearer {self.token}")
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                status, raw = reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode()

    def get(self, path: str) -> Any:
        status, data = self.request("GET", path)
        assert status == 200, (status, data)
        return data


@contextmanager
def studio(store: str, *flows: str, host: str = "127.0.0.1") -> Iterator[Served]:
    """``flowlib studio --store STORE FLOWS... --host HOST --port 0`` until the block ends."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    env.pop("FLOWLIB_STUDIO_TOKEN", None)
    command = [sys.executable, "-m", "flowlib", "studio", "--store", store, *flows]
    process = subprocess.Popen(
        [*command, "--host", host, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    printed = ""
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        found = None
        while found is None and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 0.5)
            if ready:
                line = process.stdout.readline()
                if not line and process.poll() is not None:
                    break
                printed += line
                found = re.search(r"http://(\S+?):(\d+)/(?:\?token=(\S+))?", printed)
        assert found is not None, f"flowlib studio did not print its address:\n{printed}"
        port, token = found.group(2), found.group(3)
        yield Served(f"http://127.0.0.1:{port}", token, process, printed)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
