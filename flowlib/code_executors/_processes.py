"""Running a script so that all of it can be stopped.

On Linux a script runs under an *anchor* (``_anchor.py``): a small child subreaper that
starts it and keeps every process it starts as a descendant, so a kill can go on until
the kernel reports none is left. Elsewhere the script runs directly as a session leader;
its process group is killed, and (where there is ``/proc``) every process still holding
its output.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from pathlib import Path

__all__ = ["Execution", "kill_group", "kill_pipe_holders", "start_execution"]

_ANCHOR = Path(__file__).with_name("_anchor.py")
_ANSWER_SECONDS = 15.0  # how long to wait for the anchor's answer to `kill` (it gives up at 5 s)


class Execution:
    """One running script, however it was started."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def exited(self) -> int:
        """Wait for the script to end; its exit code (negative: killed by that signal)."""
        return await self.process.wait()

    async def kill(self, pipe_inode: int) -> bool:
        """Kill the script and what it started; whether nothing of it is left.

        Args:
            pipe_inode: The inode of the script's output pipe: processes still holding it
                are the script's, wherever they moved.
        """
        kill_group(self.process.pid)
        return await asyncio.to_thread(kill_pipe_holders, pipe_inode)

    def release(self) -> None:
        """The script ended and let go of its output: leave what it still runs alone."""

    def kill_now(self) -> None:
        """Start killing at once, without waiting (for ``stop()``)."""
        kill_group(self.process.pid)

    async def close(self) -> None:
        """Free what watching the script took (after `kill` or `release`)."""


class _Anchored(Execution):
    """A script under the anchor; see ``_anchor.py`` for what the two sides say."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        super().__init__(process)
        self._writer = writer
        loop = asyncio.get_running_loop()
        self._exit: asyncio.Future[int] = loop.create_future()
        self._answer: asyncio.Future[bool] = loop.create_future()
        self._listening = asyncio.ensure_future(self._listen(reader))

    async def _listen(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                word, _, value = line.decode().strip().partition(" ")
                if word == "exit" and not self._exit.done():
                    self._exit.set_result(int(value))
                elif word in ("stopped", "unsure") and not self._answer.done():
                    self._answer.set_result(word == "stopped")
        except (OSError, ValueError):  # a broken channel counts as the anchor being gone
            pass
        # The anchor is gone. If it never said the script ended, the script (or
        # something else) killed it: report its own end instead.
        if not self._answer.done():
            self._answer.set_result(False)
        if not self._exit.done():
            self._exit.set_result(await self.process.wait())

    async def exited(self) -> int:
        return await asyncio.shield(self._exit)

    def _say(self, word: str) -> None:
        if not self._writer.is_closing():
            with contextlib.suppress(OSError):
                self._writer.write(word.encode() + b"\n")

    async def kill(self, pipe_inode: int) -> bool:
        self._say("kill")
        try:
            stopped = await asyncio.wait_for(asyncio.shield(self._answer), _ANSWER_SECONDS)
        except asyncio.TimeoutError:
            stopped = False
        if not stopped:
            # The anchor could not finish (or was killed): fall back to what needs no
            # anchor. Its PID names its process group, which the kernel does not hand out
            # again while a member lives, even after the anchor itself is gone.
            kill_group(self.process.pid)
            await asyncio.to_thread(kill_pipe_holders, pipe_inode)
        return stopped

    def release(self) -> None:
        self._say("release")

    def kill_now(self) -> None:
        self._say("kill")

    async def close(self) -> None:
        self._writer.close()  # an anchor told nothing yet takes this as `kill`
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()
        # The anchor ends at once after `release`, and after `kill` once it answered.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.process.wait(), _ANSWER_SECONDS)
        self._listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._listening


async def start_execution(command: list[str], cwd: Path, output_fd: int) -> Execution:
    """Start ``command`` in ``cwd`` with stdout and stderr on ``output_fd`` (under the
    anchor on Linux)."""
    common: dict[str, object] = {
        "cwd": cwd,
        "stdin": asyncio.subprocess.DEVNULL,
        "stdout": output_fd,
        "stderr": asyncio.subprocess.STDOUT,
        # Its own process group, so a group kill reaches what the script started.
        "start_new_session": os.name == "posix",
    }
    # The anchor needs Linux and a Python to run it (not a frozen app's executable).
    anchored = sys.platform.startswith("linux") and bool(sys.executable)
    if not anchored or getattr(sys, "frozen", False):  # pragma: no cover - not on Linux CI
        return Execution(await asyncio.create_subprocess_exec(*command, **common))  # type: ignore[arg-type]
    ours, theirs = socket.socketpair()
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            str(_ANCHOR),
            str(theirs.fileno()),
            *command,
            pass_fds=(theirs.fileno(),),
            **common,  # type: ignore[arg-type]
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    reader, writer = await asyncio.open_unix_connection(sock=ours)
    return _Anchored(process, reader, writer)


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
