"""Stop a local Ray cluster's processes when the process that started it dies.

When a driver that started a local cluster (``ray.init()`` with no address) is killed
(SIGKILL, OOM), Ray's node processes notice the lost driver at different times: the
workers and the raylet within a few seconds, but its dashboard and runtime-env agents
lived on for about 65 s here. ``flowlib batch --ray local`` killed and run again then
competes with them. So connecting starts this small watcher: while the driver lives it
notes, once a second, the Ray processes the driver's process tree holds (by command
line: Ray's own binaries and ``ray::`` processes); when the driver is gone it kills the
ones still running (each checked by its start time, so a reused pid is left alone).

Run as ``python -I path/to/_reaper.py DRIVER_PID [PID:START ...]`` (standard library only,
so it starts at once); Linux only (it reads /proc).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["start_reaper"]

_started: dict[int, subprocess.Popen[bytes]] = {}  # driver pid -> its watcher (one each)


def _stat(pid: int) -> tuple[int, int] | None:
    """``(parent pid, start time)`` of ``pid``, or None if it is gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, UnicodeDecodeError):
        return ""


def _is_ray(cmdline: str) -> bool:
    return cmdline.startswith("ray::") or "/ray/" in cmdline or "ray-dashboard" in cmdline


def ray_descendants(root: int) -> dict[int, int]:
    """The Ray processes under ``root``: pid -> start time."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                children.setdefault(found[0], []).append(int(entry))
                starts[int(entry)] = found[1]
    tree: dict[int, int] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in starts and pid != os.getpid() and _is_ray(_cmdline(pid)):
            tree[pid] = starts[pid]
        todo.extend(children.get(pid, []))
    return tree


def watch(driver: int, noted: dict[int, int], *, every: float = 1.0) -> list[int]:
    """Note the driver's Ray processes (``noted``: those known at the start, pid ->
    start time) until the driver dies, then kill the ones left; returns the pids killed."""
    while os.getppid() == driver:
        try:
            noted.update(ray_descendants(driver))
            noted = {pid: start for pid, start in noted.items() if _stat(pid) is not None}
        except Exception:  # a /proc entry read mid-change: the next tick sees it whole
            pass
        time.sleep(every)
    killed = []
    for pid, start in noted.items():
        found = _stat(pid)
        if found is not None and found[1] == start:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
    return killed


def start_reaper() -> None:
    """Start the watcher for this process's local cluster (once; Linux only)."""
    driver = os.getpid()
    if driver in _started or not os.path.isdir("/proc"):
        return
    # The processes known now go along: a driver killed before the watcher's first look
    # still has its cluster stopped. The file runs as a script (the standard library
    # only), so the watcher is up in milliseconds, not after importing flowlib.
    known = [f"{pid}:{start}" for pid, start in ray_descendants(driver).items()]
    _started[driver] = subprocess.Popen(
        [sys.executable, "-I", str(Path(__file__)), str(driver), *known],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C meant for the driver does not stop it first
    )


if __name__ == "__main__":
    pairs = (item.split(":") for item in sys.argv[2:])
    watch(int(sys.argv[1]), {int(pid): int(start) for pid, start in pairs})
