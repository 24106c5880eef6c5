"""``flowlib batch --ray local`` interrupted with Ctrl-C (SIGINT): the runs on the workers
record their stop before the command exits, and the batch run again completes them."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from _batch_flows import NODES, build, lines, transcript  # noqa: E402

from flowlib.batch import LocalRunner, open_store  # noqa: E402

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
ROOT = TESTS.parent
MARK = "flowlib-worker-says-hello-from"


async def _statuses(url: str, run_ids: list[str]) -> collections.Counter[str]:
    store = open_store(url)
    try:
        counts: collections.Counter[str] = collections.Counter()
        for run_id in run_ids:
            record = await store.get_run(run_id)
            counts["absent" if record is None else str(record.status)] += 1
        return counts
    finally:
        await store.close()


@pytest.mark.timeout(1800)
async def test_ctrl_c_stops_the_runs_on_the_workers_and_a_rerun_completes_them(
    tmp_path: Path,
) -> None:
    flows = tmp_path / "flows.py"
    # The factory prints a line on each worker: Ray's log_to_driver brings it to the
    # command's output, as Ray users expect.
    flows.write_text(
        "import os\nfrom _batch_flows import build as _build\n\n\n"
        "def build(**options):\n"
        f"    print({MARK!r}, os.getpid(), flush=True)\n"
        f"    return _build(log_dir={str(tmp_path)!r}, **options)\n",
        encoding="utf-8",
    )
    ids = [f"q{i}" for i in range(60)]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": t, "run_id": t}) + "\n" for t in ids), "utf-8")
    url = f"sqlite:///{tmp_path}/runs.db"
    argv = [sys.executable, "-m", "flowlib", "batch", f"{flows}:build", str(tasks)]
    argv += ["--store", url, "--out", str(tmp_path / "out.jsonl"), "--ray", "local"]
    argv += ["--workers", "1", "--concurrency", "4", "--no-dashboard"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS), str(tmp_path)])}
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    attempts = 1
    try:
        deadline = time.monotonic() + 600
        while len(lines(tmp_path, "ends.txt")) < 40:
            if child.poll() is not None:
                out, err = child.communicate()
                # Ray gives a node 30 s to start, which an overloaded machine can miss.
                assert b"try again" in err and attempts < 5, (out, err)
                attempts += 1
                child = subprocess.Popen(
                    argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                )
            assert time.monotonic() < deadline, "the batch did not get going"
            await asyncio.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=240)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode != 0 and b"interrupted" in err, (out, err)
    statuses = await _statuses(url, ids)
    # The runs that began recorded their stop before the workers went away.
    assert statuses["running"] == 0, statuses
    # The worker's print reached the command's output, prefixed with the worker's pid.
    printed = [line for line in (out + err).decode().splitlines() if MARK in line]
    printed = [line for line in printed if "pid=" in line]  # not the driver's own
    assert printed, (out, err)
    worker_pid = printed[0].split()[-1]
    assert f"pid={worker_pid}" in printed[0] and worker_pid != str(child.pid), printed
    assert statuses["stopped"] + statuses["complete"] > 0, statuses
    ends_before = len(lines(tmp_path, "ends.txt"))
    assert ends_before < len(ids) * len(NODES)
    results = await LocalRunner(
        f"{flows}:build", checkpoint_store=url, max_concurrency=20
    ).run_many(ids, run_ids=ids)
    reference = [transcript((await build(think=0).run(task=t)).messages) for t in ids]
    assert [transcript(r.messages) for r in results] == reference  # type: ignore[union-attr]
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert sorted(ends) == sorted(f"{t} {n}" for t in ids for n in NODES)
    assert max(ends.values()) <= 2


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
