"""RayRunner on a local two-CPU Ray cluster: 200 runs, agent errors, a worker SIGKILLed
mid-batch (SQLite and PostgreSQL stores)."""

from __future__ import annotations

import asyncio
import collections
import functools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from _batch_flows import FAIL_ON, NODES, build, lines, transcript  # noqa: E402

from flowlib.base import TaskResult  # noqa: E402
from flowlib.batch import open_store  # noqa: E402
from flowlib.distributed import RayRunner  # noqa: E402
from flowlib.errors import CheckpointArgumentError, InvalidArgumentError, RunFailedError  # noqa: E402

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parents[1]
ROOT = TESTS.parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster whose workers import this worktree's flowlib and the tests."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": f"{ROOT}{os.pathsep}{TESTS}"}},
    )
    try:
        yield
    finally:
        ray.shutdown()


async def reference(tasks: list[str]) -> list[list[str]]:
    """Each task run alone in this process on a fresh team: the one-process reference."""
    return [transcript((await build(think=0).run(task=task)).messages) for task in tasks]


async def test_200_runs_on_two_workers_match_the_one_process_reference(cluster: None) -> None:
    tasks = [f"task-{i}" for i in range(200)]
    async with RayRunner("_batch_flows:build", checkpoint_store=None, workers=2) as runner:
        pids = {await actor.pid.remote() for actor in runner.actors}
        assert len(pids) == 2 and os.getpid() not in pids  # two worker processes
        results = await runner.run_many(tasks)
    assert all(isinstance(r, TaskResult) for r in results)
    assert [transcript(r.messages) for r in results] == await reference(tasks)


async def test_an_agent_error_is_reported_not_retried(cluster: None, tmp_path: Path) -> None:
    factory = functools.partial(build, log_dir=str(tmp_path))
    async with RayRunner(factory, checkpoint_store=None, workers=1) as runner:
        results = await runner.run_many(["ok", FAIL_ON], run_ids=["ok", "bad"])
    assert isinstance(results[0], TaskResult)
    failure = results[1]
    assert isinstance(failure, RunFailedError) and failure.run_id == "bad"
    assert failure.error_type == "RuntimeError"
    assert transcript(failure.partial_result.messages)[:2] == [  # type: ignore[union-attr]
        f"user:{FAIL_ON}",
        f"src:src|{FAIL_ON}",
    ]
    assert lines(tmp_path, "starts.txt").count(f"{FAIL_ON} middle") == 1  # ran once


async def test_stream_many_tags_items_with_their_run(cluster: None) -> None:
    async with RayRunner(build, checkpoint_store=None, workers=2) as runner:
        events = [e async for e in runner.stream_many(["x", "y"], run_ids=["rx", "ry"])]
    for run_id, key in (("rx", "x"), ("ry", "y")):
        mine = [e for e in events if e.run_id == run_id]
        assert [e.done for e in mine] == [False] * (len(mine) - 1) + [True]
        assert transcript([e.item for e in mine[:-1]])[-1] == f"join:join|{key}"


async def test_bad_factories_and_stores_are_refused_up_front(cluster: None) -> None:
    runner = RayRunner("_batch_flows:no_such_function", checkpoint_store=None, workers=1)
    with pytest.raises(InvalidArgumentError, match="no function `no_such_function`"):
        await runner.start()
    with pytest.raises(CheckpointArgumentError, match="lives in one process"):
        RayRunner(build, checkpoint_store="memory://")
    with pytest.raises(InvalidArgumentError, match="max_retries"):
        RayRunner(build, checkpoint_store=None, max_retries=-1)


async def _recorded_turns(store_url: str, run_ids: list[str]) -> set[str]:
    """``"<run> <node>"`` for every turn the store holds as recorded."""
    store = open_store(store_url)
    try:
        recorded: set[str] = set()
        for run_id in run_ids:
            if await store.get_run(run_id) is None:
                continue
            for record in await store.records(run_id):
                if record.kind == "turn" and record.node is not None:
                    recorded.add(f"{run_id} {record.node}")
        return recorded
    finally:
        await store.close()


def _mid_run(recorded: set[str]) -> bool:
    """Whether some run has recorded some of its turns but not all."""
    per_run = collections.Counter(turn.split(" ", 1)[0] for turn in recorded)
    return any(0 < count < len(NODES) for count in per_run.values())


async def _batch_with_a_kill(
    store: str, log_dir: Path, tasks: list[str]
) -> tuple[list[Any], set[str]]:
    """Run ``tasks`` on two workers; SIGKILL one of them once a fifth of the turns ran.

    Returns the results and the turns recorded when the worker died (read right after
    the kill, before Ray has restarted the worker).
    """
    factory = functools.partial(build, log_dir=str(log_dir))
    runner = RayRunner(factory, checkpoint_store=store, workers=2, max_concurrency=10)
    victims_runs = tasks[0::2]  # run i went to worker i % 2
    async with runner:
        victim = await runner.actors[0].pid.remote()
        batch = asyncio.ensure_future(runner.run_many(tasks, run_ids=tasks))
        # A fifth of 5 turns per run, and then a moment when one of the victim's runs has
        # recorded some of its turns but not all: runs go in waves of max_concurrency, and
        # a kill between two waves would leave nothing to resume.
        while len(lines(log_dir, "ends.txt")) < len(tasks) or not _mid_run(
            await _recorded_turns(store, victims_runs)
        ):
            assert not batch.done(), "the batch ended before the worker could be killed"
            await asyncio.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        recorded = await _recorded_turns(store, victims_runs)
        results = await batch
        assert await runner.actors[0].pid.remote() != victim  # Ray restarted the worker
        # The restarted worker took the dead one's runs up from their checkpoints: it
        # resumed the unfinished ones and returned the finished ones from the store.
        stats = await runner.actors[0].stats.remote()
        assert stats["resumed"] + stats["finished_before"] > 0, stats
    return results, recorded


async def _check_no_finished_turn_ran_twice(
    results: list[Any], recorded: set[str], tasks: list[str], log_dir: Path
) -> None:
    failures = [r.traceback for r in results if not isinstance(r, TaskResult)]
    assert not failures, "\n".join(failures)
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    ends = collections.Counter(lines(log_dir, "ends.txt"))
    every_turn = sorted(f"{t} {n}" for t in tasks for n in NODES)
    assert sorted(ends) == every_turn  # every turn of every run finished
    assert recorded, "no turn of the killed worker's runs was recorded before the kill"
    # A turn recorded before the kill never ran again ...
    assert [turn for turn in recorded if ends[turn] != 1] == []
    # ... only turns in flight (done but not yet recorded) may have run a second time.
    assert max(ends.values()) <= 2


async def test_a_killed_worker_resumes_its_runs_from_sqlite(cluster: None, tmp_path: Path) -> None:
    tasks = [f"k{i}" for i in range(200)]
    store = f"sqlite:///{tmp_path}/runs.db"
    results, recorded = await _batch_with_a_kill(store, tmp_path, tasks)
    await _check_no_finished_turn_ran_twice(results, recorded, tasks, tmp_path)


async def test_a_killed_worker_resumes_its_runs_from_postgres(
    cluster: None, tmp_path: Path, postgres_dsn: str
) -> None:
    tasks = [f"p{i}" for i in range(200)]
    results, recorded = await _batch_with_a_kill(postgres_dsn, tmp_path, tasks)
    await _check_no_finished_turn_ran_twice(results, recorded, tasks, tmp_path)


def test_cli_batch_on_ray_then_rerun(cluster: None, tmp_path: Path) -> None:
    import io
    import json

    from flowlib.cli import main

    tasks = tmp_path / "evals.jsonl"
    tasks.write_text("".join(json.dumps(f"q{i}") + "\n" for i in range(30)), encoding="utf-8")
    out = tmp_path / "results.jsonl"
    argv = [
        "batch",
        f"{TESTS}/_batch_flows.py:build",
        str(tasks),
        "--store",
        f"sqlite:///{tmp_path}/runs.db",
        "--ray",
        "local",
        "--workers",
        "2",
        "--concurrency",
        "10",
        "--out",
        str(out),
    ]
    report = io.StringIO()
    assert main(argv, out=report) == 0
    assert "done     30 (0 already finished in the store)" in report.getvalue()
    rows = sorted(
        (json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["index"]
    )
    assert [r["turns"] for r in rows] == [5] * 30
    assert [r["messages"][-1]["content"] for r in rows] == [f"join|q{i}" for i in range(30)]
    report = io.StringIO()
    assert main(argv, out=report) == 0
    assert "done     30 (30 already finished in the store)" in report.getvalue()


async def test_stream_many_survives_a_killed_worker(cluster: None, tmp_path: Path) -> None:
    tasks = [f"s{i}" for i in range(60)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    store = f"sqlite:///{tmp_path}/runs.db"
    runner = RayRunner(factory, checkpoint_store=store, workers=2, max_concurrency=5)
    finals: dict[str, Any] = {}
    killed = False
    async with runner:
        victim = await runner.actors[0].pid.remote()
        async for event in runner.stream_many(tasks, run_ids=tasks):
            if event.done:
                assert event.run_id not in finals  # one result per run
                finals[event.run_id] = event.item
            if not killed and len(lines(tmp_path, "ends.txt")) >= 60:
                os.kill(victim, signal.SIGKILL)
                killed = True
        assert killed and await runner.actors[0].pid.remote() != victim
    assert sorted(finals) == sorted(tasks)
    results = [finals[t] for t in tasks]
    assert all(isinstance(r, TaskResult) for r in results)
    assert [transcript(r.messages) for r in results] == await reference(tasks)


async def test_runs_whose_worker_died_too_often_fail_then_resume(
    cluster: None, tmp_path: Path
) -> None:
    tasks = [f"d{i}" for i in range(30)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    store = f"sqlite:///{tmp_path}/runs.db"
    runner = RayRunner(factory, checkpoint_store=store, workers=1, max_concurrency=5, max_retries=0)
    async with runner:
        victim = await runner.actors[0].pid.remote()
        batch = asyncio.ensure_future(runner.run_many(tasks, run_ids=tasks))
        while len(lines(tmp_path, "ends.txt")) < 20:
            await asyncio.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        first = await batch
    died = [r for r in first if isinstance(r, RunFailedError)]
    assert died and all(r.error_type == "WorkerDied" for r in died)
    assert any(r.partial_result.messages for r in died)  # type: ignore[union-attr]
    again = RayRunner(factory, checkpoint_store=store, workers=1, max_concurrency=5)
    async with again:
        results = await again.run_many(tasks, run_ids=tasks)
    assert [transcript(r.messages) for r in results] == await reference(tasks)  # type: ignore[union-attr]
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert max(ends.values()) <= 2 and len(ends) == len(tasks) * len(NODES)
