"""Stopping what a script started: its process group, and whatever still holds its output."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["kill_group", "kill_pipe_holders"]


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (the script runs as a session leader)."""
    try:
        if os.name == "posix":
            os.killpg(pid, signal.SIGKILL)
        else:  # pragma: no cover - not exercised on POSIX CI
            os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


_QUIET_SWEEPS = 3  # sweeps in a row that must find no holder before the kill is done
_QUIET_SECONDS = 0.25  # ... and for at least this long
_SWEEP_SECONDS = 5.0  # the most time spent sweeping


def kill_pipe_holders(inode: int) -> bool:
    """SIGKILL every other process that holds the pipe with this inode open, until
    none is left.

    Only processes the script started can hold its output pipe (they inherited it), so
    this reaches the ones that left its process group (``setsid``, double fork) without
    touching anything else. One pass over ``/proc`` is not enough: a process that forks
    and lets its parent exit every few milliseconds has a new PID by the time the pass
    reaches it (issue 21.3). So the sweep repeats until three passes in a row find no
    holder for a quarter of a second; each holder found is stopped (SIGSTOP, so it forks
    no more) and killed at once.
    Needs ``/proc`` (Linux); elsewhere it does nothing and the executor stops reading
    instead.

    Returns:
        Whether nothing holds the pipe any more (False: a holder was still found after
        5 s of sweeping, or there is no ``/proc`` to look in).
    """
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - not Linux
        return False
    wanted = f"pipe:[{inode}]"
    quiet_since: float | None = None
    quiet_sweeps = 0
    ends = time.monotonic() + _SWEEP_SECONDS
    while True:
        now = time.monotonic()
        if quiet_since is not None and (
            quiet_sweeps >= _QUIET_SWEEPS and now - quiet_since >= _QUIET_SECONDS
        ):
            return True
        if now > ends:
            return False
        if _sweep(proc, wanted):
            quiet_since, quiet_sweeps = None, 0
        else:
            quiet_since = now if quiet_since is None else quiet_since
            quiet_sweeps += 1


def _sweep(proc: Path, wanted: str) -> bool:
    """One pass over ``/proc``, newest PIDs first (a hopper's next PID is a new one);
    each holder is stopped and killed at once, before it can fork again. Returns
    whether a holder was found."""
    own = os.getpid()
    pids = sorted((int(n) for n in os.listdir(proc) if n.isdigit()), reverse=True)
    found = False
    for pid in pids:
        if pid == own:
            continue
        try:
            descriptors = os.listdir(proc / str(pid) / "fd")
        except OSError:  # gone, or not ours to look at
            continue
        base = proc / str(pid) / "fd"
        if any(_link(base / fd) == wanted for fd in descriptors):
            _signal(pid, signal.SIGSTOP)  # no more forks
            _signal(pid, signal.SIGKILL)
            found = True
    return found


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed since it was listed
        return ""
