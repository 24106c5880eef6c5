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
- end of file (the executor is gone) counts as ``kill``.

Its own standard output and error (the block's output pipe) are closed once the command
has started, so it never holds the output itself.
"""

from __future__ import annotations

import os
import select
import sys
import time

try:  # the C module: `signal` imports `enum`, which doubles this process's start-up
    from _signal import SIGKILL, SIGSTOP  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - not CPython
    from signal import SIGKILL, SIGSTOP

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
    try:
        os.kill(pid, number)
    except (ProcessLookupError, PermissionError):  # gone, or not ours to signal
        return


class Anchor:
    def __init__(self, channel: int, command: list[str]) -> None:
        self.channel = channel
        self.command = command
        self.subreaper = become_subreaper()
        self.me = os.getpid()
        self.script = 0
        self.script_ended: int | None = None  # a descriptor readable once it ended
        self.script_done = False
        self.inbox = b""
        self.stopping = False

    def send(self, line: str) -> None:
        data = line.encode() + b"\n"
        try:
            while data:
                data = data[os.write(self.channel, data) :]
        except OSError:  # the executor is gone
            self.stopping = True

    def start(self) -> None:
        # posix_spawn (no fork of this interpreter): the command inherits the output on
        # 1 and 2; the channel is not inheritable.
        try:
            self.script = os.posix_spawnp(self.command[0], self.command, os.environ)
        except OSError as error:
            os.write(2, f"cannot run {self.command[0]}: {error}\n".encode())
            self.script_done = True
            self.send("exit 127")
        else:
            try:
                self.script_ended = os.pidfd_open(self.script)
            except (AttributeError, OSError):  # Linux before 5.3: poll instead
                self.script_ended = None
        # Let go of the output: only the command and what it starts hold it now.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)

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
        while not self.stopping:
            self.reap()
            waiting = [self.channel]
            if self.script_ended is not None and not self.script_done:
                waiting.append(self.script_ended)
            # Without a pidfd, look for the command's end every 50 ms.
            poll = None if self.script_done or self.script_ended is not None else 0.05
            ready, _, _ = select.select(waiting, [], [], poll)
            if self.channel not in ready:
                continue
            try:
                data = os.read(self.channel, 4096)
            except OSError:
                data = b""
            if not data:  # the executor is gone: nothing may outlive it
                break
            self.inbox += data
            while b"\n" in self.inbox:
                line, self.inbox = self.inbox.split(b"\n", 1)
                if line == b"release":
                    self.reap()
                    return 0
                if line == b"kill":
                    self.stopping = True
        return self.kill_all()

    def kill_all(self) -> int:
        """Stop and kill every descendant until none is left (or time runs out)."""
        ends = time.monotonic() + _KILL_SECONDS
        while not self.reap():
            found = descendants(self.me)
            for pid in found:  # freeze first: a stopped process forks no more
                _signal(pid, SIGSTOP)
            for pid in found:
                _signal(pid, SIGKILL)
            if time.monotonic() > ends:
                self.send("unsure")
                return 1
            time.sleep(0.002 if found else 0.01)  # give the kills a moment to land
        self.send("stopped" if self.subreaper else "unsure")
        return 0


def main(argv: list[str]) -> int:
    channel = int(argv[1])  # a socket: read and written as a plain descriptor
    os.set_inheritable(channel, False)
    anchor = Anchor(channel, argv[2:])
    anchor.start()
    return anchor.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
