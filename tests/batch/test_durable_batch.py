"""Batches with a checkpoint store: finished runs are skipped, unfinished ones resume."""

from __future__ import annotations

import asyncio
import collections
import functools
from pathlib import Path
from typing import Any

from _batch_flows import FAIL_ON, NODES, build, lines, transcript

from flowlib.base import TaskResult
from flowlib.batch import LocalRunner, TeamPool, open_store, stream_run
from flowlib.checkpoint import CheckpointRecord, RunStatus, SQLiteCheckpointStore
from flowlib.errors import RunFailedError


async def reference(tasks: list[str]) -> list[list[str]]:
    return [transcript((await build(think=0).run(task=task)).messages) for task in tasks]


async def test_a_rerun_skips_finished_runs(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(5)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    url = f"sqlite:///{tmp_path}/runs.db"
    first = await LocalRunner(factory, checkpoint_store=url).run_many(tasks, run_ids=tasks)
    ends = lines(tmp_path, "ends.txt")
    assert len(ends) == 5 * len(NODES)
    again = await LocalRunner(factory, checkpoint_store=url).run_many(tasks, run_ids=tasks)
    assert lines(tmp_path, "ends.txt") == ends  # nothing ran again
    assert [transcript(r.messages) for r in again] == [transcript(r.messages) for r in first]
    assert [transcript(r.messages) for r in again] == await reference(tasks)
    assert all(
        isinstance(r, TaskResult) and r.run_id == t for r, t in zip(again, tasks, strict=True)
    )


async def test_a_cancelled_batch_resumes_without_repeating_finished_turns(tmp_path: Path) -> None:
    tasks = [f"c{i}" for i in range(20)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    batch = asyncio.ensure_future(
        LocalRunner(factory, checkpoint_store=store, max_concurrency=5).run_many(
            tasks, run_ids=tasks
        )
    )
    while len(lines(tmp_path, "ends.txt")) < 30:
        await asyncio.sleep(0.005)
    batch.cancel()
    await asyncio.gather(batch, return_exceptions=True)
    before = collections.Counter(lines(tmp_path, "ends.txt"))
    assert 30 <= sum(before.values()) < 100
    results = await LocalRunner(factory, checkpoint_store=store).run_many(tasks, run_ids=tasks)
    await store.close()
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert sorted(ends) == sorted(f"{t} {n}" for t in tasks for n in NODES)
    assert max(ends.values()) == 1  # cancelled turns had not finished; finished ones stayed


async def test_a_failed_run_resumes_at_the_failed_node(tmp_path: Path) -> None:
    factory = functools.partial(build, log_dir=str(tmp_path))
    url = f"sqlite:///{tmp_path}/runs.db"
    for _ in range(2):
        [result] = await LocalRunner(factory, checkpoint_store=url).run_many(
            [FAIL_ON], run_ids=["f"]
        )
        assert isinstance(result, RunFailedError)
    starts = collections.Counter(lines(tmp_path, "starts.txt"))
    assert starts[f"{FAIL_ON} src"] == 1  # recorded before the failure: not run again
    assert starts[f"{FAIL_ON} middle"] == 2  # the failed node is retried


class Killed(Exception):
    """Stands for the worker dying at a store write."""


class DiesAtAppend(SQLiteCheckpointStore):
    """A store whose ``append`` number ``at`` (1-based) and every later one raise."""

    def __init__(self, path: Path, at: int) -> None:
        super().__init__(path)
        self.at = at
        self.appends = 0

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        self.appends += 1
        if self.appends >= self.at:
            raise Killed(record.kind)
        await super().append(record, status=status, lease_owner=lease_owner)


async def die(path: Path, at: int) -> None:
    dying = DiesAtAppend(path, at)
    try:
        await build(checkpoint_store=dying, think=0).run(task="x", run_id="dead")
    except Exception as exc:  # the run's error wraps the store's
        assert "Killed" in repr(exc) or isinstance(exc.__cause__, Killed), exc
    else:  # pragma: no cover - the store raised
        raise AssertionError("the run did not die")
    finally:
        await dying.close()


async def test_a_run_killed_right_after_its_first_record_resumes_with_its_task(
    tmp_path: Path,
) -> None:
    await die(tmp_path / "runs.db", at=2)  # the first record is written, the second not
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    [first] = await store.records("dead")
    assert first.kind == "start" and [m["content"] for m in first.messages] == ["x"]
    teams = TeamPool(functools.partial(build, think=0), store)
    items = [item async for item in stream_run(teams, "dead", "x")]
    await store.close()
    assert isinstance(items[-1], TaskResult)
    assert transcript(items[-1].messages) == (await reference(["x"]))[0]
    assert teams.counts == {"started": 0, "resumed": 1, "finished_before": 0}


async def test_a_run_killed_before_its_first_record_starts_with_its_task(tmp_path: Path) -> None:
    await die(tmp_path / "runs.db", at=1)
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    run = await store.get_run("dead")
    assert run is not None and run.last_checkpoint == 0
    teams = TeamPool(functools.partial(build, think=0), store)
    items = [item async for item in stream_run(teams, "dead", "x")]
    await store.close()
    assert isinstance(items[-1], TaskResult)
    assert transcript(items[-1].messages) == (await reference(["x"]))[0]
    assert teams.counts == {"started": 1, "resumed": 0, "finished_before": 0}


async def test_open_store_round_trip_for_sqlite_urls(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/runs.db")
    assert await store.list_runs() == []
    await store.close()


async def test_a_store_that_fails_fails_the_runs_not_the_batch(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    await store.close()  # every call now raises CheckpointError
    results = await LocalRunner(build, checkpoint_store=store).run_many(["a", "b"])
    assert [type(r).__name__ for r in results] == ["RunFailedError", "RunFailedError"]
    assert all(r.error_type == "CheckpointError" for r in results)  # type: ignore[union-attr]


async def test_a_run_with_every_turn_but_no_stop_record_is_resumed_not_skipped(
    tmp_path: Path,
) -> None:
    import io
    import json

    from flowlib.cli import main

    await die(tmp_path / "runs.db", at=len(NODES) + 2)  # start and every turn; no stop
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    records = await store.records("dead")
    run = await store.get_run("dead")
    await store.close()
    assert [r.kind for r in records].count("turn") == len(NODES)
    assert run is not None and run.status == "running"
    url = f"sqlite:///{tmp_path}/runs.db"
    events = [
        e
        async for e in LocalRunner(build, checkpoint_store=url).stream_many(["x"], run_ids=["dead"])
    ]
    assert events[-1].done and not events[-1].skipped  # it had to record its stop
    # Now it is finished: the next time it is skipped, and the CLI's summary says which.
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task": "x", "run_id": "dead"}) + "\n", encoding="utf-8")
    argv = ["batch", f"{Path(__file__).parents[1]}/_batch_flows.py:build", str(tasks)]
    argv += ["--store", url, "--out", str(tmp_path / "out.jsonl")]
    report = io.StringIO()
    assert await asyncio.to_thread(main, argv, out=report) == 0
    assert "done     1 (1 already finished in the store)" in report.getvalue()
    again = [
        e
        async for e in LocalRunner(build, checkpoint_store=url).stream_many(["x"], run_ids=["dead"])
    ]
    assert again[-1].skipped


async def test_the_cli_counts_a_run_resumed_to_its_stop_as_run_not_skipped(
    tmp_path: Path,
) -> None:
    import io
    import json

    from flowlib.cli import main

    await die(tmp_path / "runs.db", at=len(NODES) + 2)  # start and every turn; no stop
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task": "x", "run_id": "dead"}) + "\n", encoding="utf-8")
    argv = ["batch", f"{Path(__file__).parents[1]}/_batch_flows.py:build", str(tasks)]
    argv += ["--store", f"sqlite:///{tmp_path}/runs.db", "--out", str(tmp_path / "out.jsonl")]
    report = io.StringIO()
    assert await asyncio.to_thread(main, argv, out=report) == 0
    assert "done     1 (0 already finished in the store)" in report.getvalue()


async def test_runs_cancelled_as_they_complete_stay_complete(tmp_path: Path) -> None:
    """The batch is cancelled just as its first wave of runs ends (every turn's work done):
    a run that had recorded its completion stop must not also record a "cancelled" stop,
    or the next batch would run its whole flow again."""
    tasks = [f"e{i}" for i in range(16)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    url = f"sqlite:///{tmp_path}/runs.db"
    batch = asyncio.ensure_future(
        LocalRunner(factory, checkpoint_store=url, max_concurrency=8).run_many(tasks, run_ids=tasks)
    )
    while len(lines(tmp_path, "ends.txt")) < 8 * len(NODES):
        await asyncio.sleep(0.005)
    batch.cancel()
    await asyncio.gather(batch, return_exceptions=True)
    again = await LocalRunner(factory, checkpoint_store=url).run_many(tasks, run_ids=tasks)
    assert [transcript(r.messages) for r in again] == await reference(tasks)
    assert max(collections.Counter(lines(tmp_path, "ends.txt")).values()) <= 2


class SlowLeaseStore(SQLiteCheckpointStore):
    """Takes a lease slowly, as a loaded machine does: the write goes on in the store's
    thread whatever happens to the caller (as ``run_in_executor`` work does)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.inside = asyncio.Event()

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Any:
        taking = asyncio.ensure_future(super().acquire_lease(run_id, owner, ttl=ttl))
        self.inside.set()
        await asyncio.sleep(0.3)
        return await taking


async def test_a_run_cancelled_while_taking_its_lease_runs_again_at_once(tmp_path: Path) -> None:
    """A batch cancelled while a run takes its lease: the lease the store granted after
    the cancel is given back, so the batch run again at once does not find the run held
    by a live owner for the lease's 30 s (its run failed with RunLeaseError)."""
    store = SlowLeaseStore(tmp_path / "runs.db")
    runner = LocalRunner(functools.partial(build, think=0), checkpoint_store=store)
    try:
        batch = asyncio.ensure_future(runner.run_many(["l0"], run_ids=["l0"]))
        await store.inside.wait()
        batch.cancel()
        await asyncio.gather(batch, return_exceptions=True)
        assert batch.cancelled()
        await asyncio.sleep(0.5)  # the store's write has long ended
        [result] = await runner.run_many(["l0"], run_ids=["l0"])
        assert isinstance(result, TaskResult), getattr(result, "traceback", result)
        assert transcript(result.messages) == (await reference(["l0"]))[0]
    finally:
        await store.close()
