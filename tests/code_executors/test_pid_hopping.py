"""The executor's kill reaches a process that keeps changing its PID (issue 21.3): a
script that forks, lets the parent exit and calls `setsid` every 2-10 ms, keeping the
output pipe, is gone after a timeout, a cancellation, or when it is left running in
the background. The hopper is bounded: a hard cap of 1,500 forks (so at most ~15 s of
life even if the kill failed), and at most two generations alive at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path

import pytest

from flowlib.base import CancellationToken
from flowlib.code_executors import CodeBlock, LocalCommandLineCodeExecutor

ROOT = str(Path(__file__).resolve().parents[2])

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")

HOPPER = """
import os, random, sys, time

CAP = 1500  # hard cap on forks: the test stays bounded even if the kill fails
log = open("hops.log", "a", buffering=1)
print("hopping", flush=True)
for generation in range(CAP):
    if os.fork():
        os._exit(0)  # the parent leaves; the child goes on with a new PID
    os.setsid()  # and a new session: a process-group kill misses it
    log.write(f"{os.getpid()}\\n")
    time.sleep(random.uniform(0.002, 0.010))
os._exit(0)
"""

# Start the hopper, wait until it hops, then end (or keep running past the timeout).
STARTED = "python3 hopper.py &\nwhile [ ! -s hops.log ]; do sleep 0.05; done\nsleep 0.2\n"
BACKGROUND = STARTED + "echo done\n"
FOREGROUND = STARTED + "sleep 90\n"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def logged(work: Path) -> list[int]:
    log = work / "hops.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def survivors(work: Path) -> list[int]:
    """Hoppers still alive 2 s after the executor returned (a killed one is gone by
    then; a surviving one keeps adding new PIDs to the log)."""
    time.sleep(2.0)
    return [pid for pid in logged(work)[-50:] if alive(pid)]


def cleanup(work: Path) -> None:
    """Stop a surviving hopper so a failed test leaves nothing behind."""
    for _ in range(200):
        live = [pid for pid in logged(work)[-20:] if alive(pid)]
        if not live:
            return
        for pid in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        time.sleep(0.01)


@pytest.mark.parametrize("attempt", range(2))
async def test_a_timeout_kills_a_pid_hopping_process(tmp_path: Path, attempt: int) -> None:
    (tmp_path / "hopper.py").write_text(HOPPER)
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=8)
    try:
        result = await executor.execute_code_blocks(
            [CodeBlock(code=FOREGROUND, language="sh")], CancellationToken()
        )
        assert result.exit_code == 124
        assert result.output.startswith("hopping\n")
        assert survivors(tmp_path) == []
    finally:
        cleanup(tmp_path)


async def left_in_the_background(work: Path, hopper: str) -> None:
    """Start ``hopper`` in the background of a block that then ends; check it is gone."""
    (work / "hopper.py").write_text(hopper)
    executor = LocalCommandLineCodeExecutor(work_dir=work, timeout=30)
    try:
        result = await executor.execute_code_blocks(
            [CodeBlock(code=BACKGROUND, language="sh")], CancellationToken()
        )
        assert result.exit_code == 0
        assert result.output.endswith(
            "Note: processes the code left running in the background were stopped.\n"
        )
        assert survivors(work) == []
    finally:
        cleanup(work)


@pytest.mark.parametrize("attempt", range(3))
async def test_a_pid_hopper_left_in_the_background_is_stopped(tmp_path: Path, attempt: int) -> None:
    await left_in_the_background(tmp_path, HOPPER)


async def test_cancellation_kills_a_pid_hopping_process(tmp_path: Path) -> None:
    (tmp_path / "hopper.py").write_text(HOPPER)
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=30)
    token = CancellationToken()
    run = asyncio.ensure_future(
        executor.execute_code_blocks([CodeBlock(code=FOREGROUND, language="sh")], token)
    )
    try:
        for _ in range(1000):  # bounded: 20 s for the hopper to start
            if (tmp_path / "hops.log").exists():
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, 30)
        assert survivors(tmp_path) == []
    finally:
        cleanup(tmp_path)


# Two children per hop until 16 hop at once, each every 2-10 ms. Bounded: each lineage
# hops at most 400 times (so even a failed kill leaves nothing after ~4 s).
BRANCHING = """
import os, random, time

log = open("hops.log", "a", buffering=1)
print("hopping", flush=True)
width = 1
for generation in range(400):
    children = 2 if width < 16 else 1
    for _ in range(children):
        if os.fork() == 0:
            break
    else:
        os._exit(0)  # the parent leaves; its children go on with new PIDs
    width *= children
    os.setsid()
    log.write(f"{os.getpid()}\\n")
    time.sleep(random.uniform(0.002, 0.010))
os._exit(0)
"""


@pytest.mark.slow
async def test_a_hopper_that_forks_two_children_per_hop_is_stopped(tmp_path: Path) -> None:
    await left_in_the_background(tmp_path, BRANCHING)


async def test_code_that_kills_the_process_watching_it_is_not_called_stopped(
    tmp_path: Path,
) -> None:
    # On Linux the block runs under an anchor process that keeps every process it starts
    # as a descendant; code can kill it (same user). The result must not then promise
    # that the background processes were stopped.
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=30)
    # (Only the anchor is killed: the parent is checked first, never the test runner.)
    code = (
        "sleep 30 &\necho $! > child.pid\n"
        "grep -q _anchor.py /proc/$PPID/cmdline && kill -9 $PPID\necho done\n"
    )
    result = await executor.execute_code_blocks(
        [CodeBlock(code=code, language="sh")], CancellationToken()
    )
    child = int((tmp_path / "child.pid").read_text())
    try:
        assert "done\n" in result.output
        assert "were stopped" not in result.output
        assert "could not all be stopped" in result.output
        # ... though the fallback (a group kill and a sweep of the output) got this one.
        for _ in range(250):  # bounded: 5 s
            if not alive(child):
                break
            time.sleep(0.02)
        assert not alive(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, 9)


OWNER = """
import asyncio, sys
from flowlib.base import CancellationToken
from flowlib.code_executors import CodeBlock, LocalCommandLineCodeExecutor

code = "sleep 60 &\\necho $! > child.pid\\nsleep 60\\n"
executor = LocalCommandLineCodeExecutor(work_dir=sys.argv[1], timeout=60)
block = CodeBlock(code=code, language="sh")
asyncio.run(executor.execute_code_blocks([block], CancellationToken()))
"""


@pytest.mark.slow
async def test_what_a_block_started_dies_with_the_process_running_the_executor(
    tmp_path: Path,
) -> None:
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER, str(tmp_path), env={**os.environ, "PYTHONPATH": ROOT}
    )
    pid_file = tmp_path / "child.pid"
    child = 0
    try:
        for _ in range(1500):  # bounded: 30 s for the block to start
            if pid_file.exists() and pid_file.read_text().strip():
                child = int(pid_file.read_text())
                break
            await asyncio.sleep(0.02)
        assert child
        owner.kill()  # SIGKILL: the executor gets no chance to clean up
        await owner.wait()
        for _ in range(500):  # bounded: 10 s
            if not alive(child):
                break
            await asyncio.sleep(0.02)
        assert not alive(child)
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, 9)
