"""Stopping what a script started: its process group, and whatever still holds its output."""

from __future__ import annotations

import os
import signal
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


def kill_pipe_holders(inode: int) -> list[int]:
    """SIGKILL every other process that holds the pipe with this inode open.

    Only processes the script started can hold its output pipe (they inherited it), so
    this reaches the ones that left its process group (``setsid``, double fork) without
    touching anything else. Needs ``/proc`` (Linux); elsewhere it does nothing and the
    executor stops reading instead.

    Returns:
        The process ids that were killed.
    """
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - not Linux
        return []
    wanted = f"pipe:[{inode}]"
    own = os.getpid()
    killed: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            descriptors = list((entry / "fd").iterdir())
        except OSError:  # gone, or not ours to look at
            continue
        if any(_link(fd) == wanted for fd in descriptors):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed since it was listed
        return ""
