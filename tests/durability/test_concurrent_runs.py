"""Fifty runs at once on one store (a SQLite file shared by two store objects, then one
PostgreSQL database), each interrupted at a different turn and all resumed at once: every
run's transcript is the uninterrupted one and no finished turn ran twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from _durable import Ledger, StoredRun, Trigger, assert_same_transcript, stored, team_of

from flowlib.checkpoint import (
    CheckpointStore,
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
)
from flowlib.errors import CheckpointError, NodeExecutionError, RunLeaseError
from flowlib.testing.strategies import EdgeSpec, GraphSpec, NodeSpec

RUNS = 50
GUARD = 120.0

# start -> (left, right) -> join -> check; check loops back to start twice, then ends.
SPEC = GraphSpec(
    nodes=(
        NodeSpec("start", outputs=("s1", "s2", "s3")),
        NodeSpec("left", outputs=("l1", "l2", "l3"), yields=(1, 0, 2)),
        NodeSpec("right", outputs=("r1", "r2", "r3"), yields=(0, 2, 1)),
        NodeSpec("join", outputs=("j1", "j2", "j3")),
        NodeSpec("check", outputs=("AGAIN", "AGAIN", "DONE")),
        NodeSpec("finish", outputs=("f",)),
    ),
    edges=(
        EdgeSpec("start", "left"),
        EdgeSpec("start", "right"),
        EdgeSpec("left", "join"),
        EdgeSpec("right", "join"),
        EdgeSpec("join", "check"),
        EdgeSpec("check", "start", condition="AGAIN"),
        EdgeSpec("check", "finish", condition="DONE"),
    ),
    entry="start",
    shape="custom",
)


class Crash(RuntimeError):
    """The interruption."""


async def _reference() -> tuple[StoredRun, list[tuple[str, int]]]:
    store = InMemoryCheckpointStore()
    ledger = Ledger()
    await team_of(SPEC, store, ledger).run(task="go", run_id="ref")
    return await stored(store, "ref"), ledger.read()


def _raise() -> None:
    raise Crash("interrupted")


async def _fifty(stores: list[CheckpointStore]) -> None:
    # The stores open the file at their first use, at the same moment (the new file's
    # setup by several connections at once is checked on its own too:
    # test_opening_a_new_sqlite_file_from_many_connections_at_once).
    want, want_effects = await _reference()
    total = len(want_effects)
    ledgers = [Ledger() for _ in range(RUNS)]

    async def first(i: int) -> None:
        trigger = Trigger(at_turn=i % total, yields=i % 3, fire=_raise)
        team = team_of(SPEC, stores[i % len(stores)], ledgers[i], trigger)
        with pytest.raises(NodeExecutionError):
            await team.run(task="go", run_id=f"run-{i}")
        assert trigger.fired

    async def resume(i: int) -> None:
        team = team_of(SPEC, stores[(i + 1) % len(stores)], ledgers[i])
        result = await team.run(run_id=f"run-{i}")
        assert result.run_id == f"run-{i}"

    await asyncio.wait_for(asyncio.gather(*(first(i) for i in range(RUNS))), GUARD)
    await asyncio.wait_for(asyncio.gather(*(resume(i) for i in range(RUNS))), GUARD)

    runs = await stores[0].list_runs()
    assert sorted(r.run_id for r in runs) == sorted(f"run-{i}" for i in range(RUNS))
    assert {r.status for r in runs} == {"complete"}
    for i in range(RUNS):
        got = await stored(stores[0], f"run-{i}")
        assert_same_transcript(SPEC, got, want)
        effects = ledgers[i].read()
        assert not [e for e, n in Counter(effects).items() if n > 1], f"run-{i} repeated a turn"
        assert sorted(effects) == sorted(want_effects), f"run-{i} lost a turn"


async def test_fifty_interrupted_runs_on_one_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    stores: list[CheckpointStore] = [SQLiteCheckpointStore(db), SQLiteCheckpointStore(db)]
    try:
        await _fifty(stores)
    finally:
        for store in stores:
            await store.close()


async def test_fifty_interrupted_runs_on_one_postgres_database(postgres_dsn: str) -> None:
    stores: list[CheckpointStore] = [
        PostgresCheckpointStore(postgres_dsn),
        PostgresCheckpointStore(postgres_dsn),
    ]
    try:
        await _fifty(stores)
    finally:
        for store in stores:
            await store.close()


async def test_two_processes_resuming_one_run_one_is_refused(tmp_path: Path) -> None:
    """Two teams (two store objects on one file, as two processes would have) resume the
    same interrupted run at once: one continues it, the other is refused with
    RunLeaseError before it runs anything (issue 20: it used to be refused at its first
    write), and the run's transcript is still the uninterrupted one."""
    want, _ = await _reference()
    db = tmp_path / "runs.db"
    first, second = SQLiteCheckpointStore(db), SQLiteCheckpointStore(db)
    try:
        await asyncio.gather(first.list_runs(), second.list_runs())  # both open at once
        ledger = Ledger()
        trigger = Trigger(at_turn=3, fire=_raise)
        with pytest.raises(NodeExecutionError):
            await team_of(SPEC, first, ledger, trigger).run(task="go", run_id="r")
        outcomes = await asyncio.gather(
            team_of(SPEC, first, ledger).run(run_id="r"),
            team_of(SPEC, second, ledger).run(run_id="r"),
            return_exceptions=True,
        )
        # The refusal comes as it is, or as the cause of the node turn whose write failed.
        refused = [
            o
            for o in outcomes
            if isinstance(o, BaseException)
            and (isinstance(o, CheckpointError) or isinstance(o.__cause__, CheckpointError))
        ]
        assert len(refused) == 1, outcomes
        assert len([o for o in outcomes if isinstance(o, BaseException)]) == 1, outcomes
        assert isinstance(refused[0], RunLeaseError), refused[0]
        got = await stored(first, "r")
        assert_same_transcript(SPEC, got, want)
        run = await first.get_run("r")
        assert run is not None and run.status == "complete"
    finally:
        await first.close()
        await second.close()


async def test_opening_a_new_sqlite_file_from_many_connections_at_once(tmp_path: Path) -> None:
    for attempt in range(150):
        stores = [SQLiteCheckpointStore(tmp_path / f"{attempt}.db") for _ in range(6)]
        try:
            await asyncio.gather(*(store.list_runs() for store in stores))
        finally:
            for store in stores:
                await store.close()
