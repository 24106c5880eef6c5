"""The executor's kill reaches a process that keeps changing its PID (issue 21.3): a
script that forks, lets the parent exit and calls `setsid` every 2-10 ms, keeping the
output pipe, is gone after a timeout, a cancellation, or when it is left running in
the background. The hopper is bounded: a hard cap of 1,500 forks (so at most ~15 s of
life even if the kill failed), and at most two generations alive at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import pytest

from flowlib.base import CancellationToken
from flowlib.code_executors import CodeBlock, LocalCommandLineCodeExecutor

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


@pytest.mark.parametrize("attempt", range(3))
async def test_a_pid_hopper_left_in_the_background_is_stopped(tmp_path: Path, attempt: int) -> None:
    (tmp_path / "hopper.py").write_text(HOPPER)
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=30)
    try:
        result = await executor.execute_code_blocks(
            [CodeBlock(code=BACKGROUND, language="sh")], CancellationToken()
        )
        assert result.exit_code == 0
        assert result.output.endswith(
            "Note: processes the code left running in the background were stopped.\n"
        )
        assert survivors(tmp_path) == []
    finally:
        cleanup(tmp_path)


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
