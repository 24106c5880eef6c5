"""``flowlib batch --ray local`` SIGKILLed: the local cluster it started goes with it.

(Ctrl-C on ``flowlib batch --ray``: tests/distributed/test_ray_runner.py, on that module's
cluster.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")


pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
ROOT = TESTS.parent


def _ray_processes_under(root: int) -> dict[int, str]:
    """Ray's processes in ``root``'s process tree: pid -> command line."""
    from flowlib.distributed._reaper import _cmdline, ray_descendants

    return {pid: _cmdline(pid) for pid in ray_descendants(root)}


def _alive(pid: int) -> bool:
    from flowlib.distributed._reaper import _stat

    return _stat(pid) is not None


@pytest.mark.timeout(1200)
async def test_a_killed_command_leaves_no_ray_process_behind(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(f"k{i}") + "\n" for i in range(400)), "utf-8")
    out = tmp_path / "out.jsonl"
    argv = [sys.executable, "-m", "flowlib", "batch", f"{TESTS}/_batch_flows.py:build"]
    argv += [str(tasks), "--store", f"sqlite:///{tmp_path}/runs.db", "--out", str(out)]
    argv += ["--ray", "local", "--workers", "1", "--concurrency", "4"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    log = tmp_path / "stderr.txt"
    with log.open("wb") as stderr:
        child = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    ray_processes: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 400
        while not (out.exists() and out.stat().st_size > 0):
            if child.poll() is not None:
                said = log.read_text()
                # Ray gives a node 30 s to start, which an overloaded machine can miss.
                assert "try again" in said, said[-2000:]
                pytest.skip(f"the local cluster did not start: {said[-500:]}")
            assert time.monotonic() < deadline, "the batch did not get going"
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)  # every agent up
        ray_processes = _ray_processes_under(child.pid)
        assert any("RuntimeEnvAgent" in c or "DashboardAgent" in c for c in ray_processes.values())
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        # Ray alone left its dashboard and runtime-env agents for about 65 s here; the
        # watcher flowlib starts with a local cluster kills what is left within seconds.
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in ray_processes) and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
        left = {pid: c for pid, c in ray_processes.items() if _alive(pid)}
        assert not left, left
    finally:
        if child.poll() is None:
            child.kill()
        for pid in ray_processes:  # whatever a failed assertion left
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
