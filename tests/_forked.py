"""Run a test's child script as a fork of a process that has already imported flowlib.

The SIGKILL and crash tests run small scripts (``python CHILD.py ARGS``) that kill
themselves at a chosen point and are then resumed by another run of the script. Started
with ``subprocess``, each of those processes spends most of its CPU (~1.8 s of ~2 s) on
``import flowlib`` and its dependencies, and the suite starts about a hundred of them.
:func:`run_script` runs the same script with the same arguments in a fresh process forked
from a *zygote*: a server process (one per pytest process, started on first use) that
imported the heavy modules once and then only forks. The child is a real, separate
process: it opens its own stores and files, SIGKILLs itself exactly as before, and its
exit status (``-9`` for SIGKILL) comes back as ``returncode``. What differs from a new
interpreter (docs/choices.md, "The test command's speed"): the modules in ``PRELOAD`` are
already imported, and every child of one zygote shares its hash seed.

The zygote's children are not the test process's children, so their CPU time is added to
the timeout budget's count (tests/_budget.py) by hand.

Protocol (one JSON object a line): the client writes ``{"script", "args", "paths", "env",
"clean_env", "cwd", "stdout", "stderr"}``; the zygote forks, answers ``{"pid": N}`` at once and
``{"returncode": R, "cpu": S}`` when the child has ended.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# What the child scripts import (tests/durability/_*_child.py, tests/checkpoint's fork
# child, the examples); importing them in a new interpreter is what the zygote saves.
PRELOAD = (
    "flowlib.agents",
    "flowlib.base",
    "flowlib.checkpoint",
    "flowlib.conditions",
    "flowlib.messages",
    "flowlib.models",
    "flowlib.teams",
    "flowlib.testing",
    "flowlib.testing.strategies",
    "flowlib.tools",
    "flowlib.ui",
)


# ---------------------------------------------------------------- the test process's side


class _Zygote:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            ready = self._answer(self.proc, 300.0)
            if not ready.get("ready"):
                raise RuntimeError(f"the test zygote did not start: {ready}")
        return self.proc

    @staticmethod
    def _answer(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
        assert proc.stdout is not None
        readable, _, _ = select.select([proc.stdout], [], [], timeout)
        if not readable:
            return {}
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the test zygote ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self, request: dict[str, Any]) -> int:
        """Fork a child for ``request``; the zygote is this caller's until :meth:`wait`."""
        if not self.lock.acquire(timeout=600):
            raise RuntimeError("the test zygote is still serving another child")
        try:
            proc = self._start()
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            return int(self._answer(proc, 60.0)["pid"])
        except BaseException:
            self.lock.release()
            raise

    def wait(self, pid: int, timeout: float) -> tuple[int, float]:
        """The child's exit status and CPU seconds; past ``timeout`` it is killed and
        ``subprocess.TimeoutExpired`` raised."""
        try:
            assert self.proc is not None
            answer = self._answer(self.proc, timeout)
            if not answer:  # the child ran past the timeout: kill it, then report that
                os.kill(pid, signal.SIGKILL)
                answer = self._answer(self.proc, 60.0)
                _count_cpu(float(answer.get("cpu", 0.0)))
                raise subprocess.TimeoutExpired(str(pid), timeout)
            return int(answer["returncode"]), float(answer["cpu"])
        finally:
            self.lock.release()

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stdout is not None
            self.proc.stdout.close()


_ZYGOTE = _Zygote()
atexit.register(_ZYGOTE.close)


def _count_cpu(seconds: float) -> None:
    try:
        from _budget import count_child_cpu
    except ImportError:  # run outside this test suite
        return
    count_child_cpu(seconds)


def _read(path: str) -> str:
    """A child's output (none if it was killed before it opened the file)."""
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""


class Forked:
    """A child started by :func:`start_script`: ``pid``, :meth:`kill` and :meth:`wait`
    (which must be called: the zygote serves one child at a time)."""

    def __init__(self, request: dict[str, Any], folder: tempfile.TemporaryDirectory[str]):
        self.request = request
        self._folder = folder
        self._done = False
        self.pid = _ZYGOTE.start(request)

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc: object) -> None:
        """A child not waited for yet (the test failed first) is killed and reaped, so
        the zygote can serve the next test."""
        if not self._done:
            self.kill()
            self.wait(60)

    def kill(self) -> None:
        """SIGKILL the child (from outside, as a user's ``kill -9`` would)."""
        os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float = 100.0) -> subprocess.CompletedProcess[str]:
        """Wait for the child to end (see :func:`run_script`)."""
        self._done = True
        try:
            code, cpu = _ZYGOTE.wait(self.pid, timeout)
            _count_cpu(cpu)
            out, err = (_read(self.request[name]) for name in ("stdout", "stderr"))
            argv = [sys.executable, self.request["script"], *self.request["args"]]
            return subprocess.CompletedProcess(argv, code, out, err)
        finally:
            self._folder.cleanup()

    async def wait_async(self, timeout: float = 100.0) -> subprocess.CompletedProcess[str]:
        """:meth:`wait` from a coroutine (in a thread)."""
        import asyncio

        return await asyncio.to_thread(self.wait, timeout)


def start_script(
    script: Path | str,
    *args: str,
    paths: Sequence[Path | str] = (),
    env: Mapping[str, str] | None = None,
    clean_env: bool = False,
    cwd: Path | str | None = None,
) -> Forked:
    """Start ``python SCRIPT ARGS`` as a fork of the zygote (see :func:`run_script`)."""
    folder = tempfile.TemporaryDirectory(prefix="flowlib-fork-")
    request = {
        "script": str(Path(script).resolve()),
        "args": [str(arg) for arg in args],
        "paths": [str(path) for path in paths],
        "env": dict(env or {}),
        "clean_env": clean_env,
        "cwd": None if cwd is None else str(cwd),
        "stdout": str(Path(folder.name, "stdout")),
        "stderr": str(Path(folder.name, "stderr")),
    }
    try:
        return Forked(request, folder)
    except BaseException:
        folder.cleanup()
        raise


def run_script(
    script: Path | str,
    *args: str,
    paths: Sequence[Path | str] = (),
    env: Mapping[str, str] | None = None,
    clean_env: bool = False,
    cwd: Path | str | None = None,
    timeout: float = 100.0,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, script, *args], capture_output=True, text=True)`` in a
    fork of the zygote. ``paths`` go in front of ``sys.path`` (after the script's folder,
    as ``PYTHONPATH`` would); ``env`` is set in the child's ``os.environ``, which holds
    nothing else with ``clean_env`` (as ``subprocess.run(..., env=env)``); the child starts
    in ``cwd`` if given. A child still running after ``timeout`` seconds is killed and
    ``subprocess.TimeoutExpired`` raised."""
    child = start_script(script, *args, paths=paths, env=env, clean_env=clean_env, cwd=cwd)
    return child.wait(timeout)


async def run_script_async(
    script: Path | str, *args: str, **options: Any
) -> subprocess.CompletedProcess[str]:
    """:func:`run_script` from a coroutine (in a thread; the zygote runs one child at a
    time)."""
    import asyncio

    return await asyncio.to_thread(run_script, script, *args, **options)


# ---------------------------------------------------------------------- the zygote's side


def _child(request: dict[str, Any], channel: IO[str]) -> None:
    """In the forked child: become ``python SCRIPT ARGS`` and run it to its end."""
    import runpy

    os.close(channel.fileno())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (the process's stdin)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    if request.get("clean_env"):
        os.environ.clear()
    os.environ.update(request["env"])
    if request.get("cwd"):
        os.chdir(request["cwd"])
    script = request["script"]
    sys.argv = [script, *request["args"]]
    sys.path[0:0] = [str(Path(script).parent), *request["paths"]]
    # Leaves through SystemExit (a script's own exit included), so the interpreter ends
    # as after ``python SCRIPT``: atexit handlers, threads joined, streams flushed.
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)


def main() -> None:
    import importlib

    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a module printing while imported must not write into the channel
    for name in PRELOAD:
        importlib.import_module(name)
    channel.write(json.dumps({"ready": True}) + "\n")
    channel.flush()
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, channel)
        channel.write(json.dumps({"pid": pid}) + "\n")
        channel.flush()
        _, status, usage = os.wait4(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        cpu = usage.ru_utime + usage.ru_stime
        channel.write(json.dumps({"returncode": code, "cpu": cpu}) + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
