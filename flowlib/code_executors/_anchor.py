"""The process that runs one code block on Linux and can kill all of it.

Run as ``python -I -S _anchor.py <socket fd> <command>...`` (standard library only, so
it starts fast). It makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``),
then starts the command as its child. From then on every process the command starts,
however it forks, double-forks or calls ``setsid``, stays a descendant of this process:
an orphan is handed to the nearest living subreaper ancestor, which is this one, never
to init. So "nothing of the execution is left" is something the kernel can answer:
``waitpid`` says this process has no children (``ECHILD``).

It talks to the executor over a socket (one line per message):

- it sends ``exit <code>`` when the command ends (``<code>`` as
  ``subprocess.Popen.returncode``: negative for a signal);
- it reads ``kill``: stop (SIGSTOP) and SIGKILL every descendant, again and again, until
  ``waitpid`` reports no child is left; then it sends ``stopped`` and exits (or
  ``unsure`` if some were still there after the time limit, or it is not a subreaper);
- it reads ``release``: exit at once, leaving what still runs (it no longer holds the
  output) to init;
- end of file (the executor is gone) or SIGTERM/SIGHUP/SIGINT count as ``kill``.

Its own standard output and error (the block's output pipe) are closed once the command
has started, so it never holds the output itself.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_KILL_SECONDS = 5.0  # the most time spent killing before answering "unsure"


def become_subreaper() -> bool:
    """Ask Linux to hand this process's orphaned descendants to it (not to init)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError, ImportError):
        return False


def descendants(root: int) -> list[int]:
    """Every process below ``root``, parents before their children.

    Read from ``/proc/<pid>/task/<tid>/children`` (each level read after the one above
    it); where the kernel lacks those files, from the parent field of every
    ``/proc/<pid>/stat``. Either way the list can miss a process forked while it is
    read: the caller repeats until ``waitpid`` says nothing is left.
    """
    if os.path.exists(f"/proc/{root}/task/{root}/children"):
        found: list[int] = []
        level = [root]
        while level:
            below: list[int] = []
            for pid in level:
                below.extend(_children_of(pid))
            found.extend(below)
            level = below
        return found
    return _descendants_from_stat(root)


def _children_of(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone
        return []
    children: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as file:
                children.extend(int(child) for child in file.read().split())
        except OSError:
            continue
    return children


def _descendants_from_stat(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    level = [root]
    while level:
        below = [child for pid in level for child in parents.get(pid, [])]
        found.extend(below)
        level = below
    return found


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)


class Anchor:
    def __init__(self, channel: socket.socket, command: list[str]) -> None:
        self.channel = channel
        self.command = command
        self.subreaper = become_subreaper()
        self.me = os.getpid()
        self.script = 0
        self.script_done = False
        self.inbox = b""
        self.stopping = False
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)
        os.set_blocking(self.wake_read, False)
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, self._note)
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(number, self._stop_requested)

    def _note(self, number: int, frame: object) -> None:
        pass

    def _stop_requested(self, number: int, frame: object) -> None:
        self.stopping = True

    def send(self, line: str) -> None:
        try:
            self.channel.sendall(line.encode() + b"\n")
        except OSError:  # the executor is gone
            self.stopping = True

    def start(self) -> None:
        pid = os.fork()
        if pid == 0:  # the command
            try:
                os.execvp(self.command[0], self.command)
            except OSError as error:
                os.write(2, f"cannot run {self.command[0]}: {error}\n".encode())
            os._exit(127)
        self.script = pid
        # Let go of the output: only the command and what it starts hold it now.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)

    def drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.wake_read, 4096)

    def reap(self) -> bool:
        """Collect every child that ended; return whether no child is left at all."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.script and not self.script_done:
                self.script_done = True
                self.send(f"exit {os.waitstatus_to_exitcode(status)}")

    def serve(self) -> int:
        """Wait for the command's end and the executor's word; return the exit status."""
        while True:
            if self.stopping:
                return self.kill_all()
            self.reap()
            ready, _, _ = select.select([self.channel.fileno(), self.wake_read], [], [])
            self.drain_wakeups()
            if self.channel.fileno() in ready:
                data = self.channel.recv(4096)
                if not data:  # the executor is gone: nothing may outlive it
                    self.stopping = True
                    continue
                self.inbox += data
                while b"\n" in self.inbox:
                    line, self.inbox = self.inbox.split(b"\n", 1)
                    if line == b"release":
                        self.reap()
                        return 0
                    if line == b"kill":
                        self.stopping = True

    def kill_all(self) -> int:
        """Stop and kill every descendant until none is left (or time runs out)."""
        ends = time.monotonic() + _KILL_SECONDS
        while not self.reap():
            found = descendants(self.me)
            for pid in found:  # freeze first: a stopped process forks no more
                _signal(pid, signal.SIGSTOP)
            for pid in found:
                _signal(pid, signal.SIGKILL)
            if time.monotonic() > ends:
                self.send("unsure")
                return 1
            # Give the kills a moment to land (a SIGCHLD ends the wait early).
            select.select([self.wake_read], [], [], 0.01 if found else 0.05)
            self.drain_wakeups()
        self.send("stopped" if self.subreaper else "unsure")
        return 0


def main(argv: list[str]) -> int:
    channel = socket.socket(fileno=int(argv[1]))
    channel.set_inheritable(False)
    anchor = Anchor(channel, argv[2:])
    anchor.start()
    return anchor.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
