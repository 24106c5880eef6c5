"""A team whose checkpoint write was refused, or interrupted while another writer wrote
the same checkpoint, never counts the other writer's record as its own (issue 10).

The interleavings are fixed by a store wrapper (no timing): at one checkpoint it first
writes "another writer's" record with the same number (it differs only in
``created_at``), then lets the team's append be refused, or reports the append as
interrupted (a plain ``CheckpointError``, as a lost connection gives) either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest
from _durable import Ledger, assert_same_transcript, stored, team_of

from flowlib.checkpoint import (
    CheckpointInfo,
    CheckpointRecord,
    CheckpointStore,
    FoldedRun,
    InMemoryCheckpointStore,
    Lease,
    PostgresCheckpointStore,
    RunRecord,
    RunStatus,
    SQLiteCheckpointStore,
)
from flowlib.errors import CheckpointConflictError, CheckpointError
from flowlib.testing.strategies import EdgeSpec, GraphSpec, NodeSpec

SPEC = GraphSpec(
    nodes=(
        NodeSpec("a", outputs=("a1",)),
        NodeSpec("b", outputs=("b1",)),
        NodeSpec("c", outputs=("c1",)),
        NodeSpec("d", outputs=("d1",)),
    ),
    edges=(EdgeSpec("a", "b"), EdgeSpec("b", "c"), EdgeSpec("c", "d")),
    entry="a",
    shape="chain",
    expected_steps=("a", "b", "c", "d"),
)
AT = 3  # records: 1 start, 2 a's turn, 3 b's turn, ...

Mode = Literal["refused", "foreign_then_lost", "own_then_lost"]


class Racing:
    """Delegates to ``inner``; the append of checkpoint ``AT`` meets another writer
    (``refused``, ``foreign_then_lost``) or is written and reported lost
    (``own_then_lost``)."""

    def __init__(self, inner: CheckpointStore, mode: Mode) -> None:
        self.inner = inner
        self.mode = mode
        self.raced = False

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        if record.checkpoint_id != AT or self.raced:
            await self.inner.append(record, status=status, lease_owner=lease_owner)
            return
        self.raced = True
        if self.mode == "own_then_lost":
            await self.inner.append(record, status=status, lease_owner=lease_owner)
            raise CheckpointError("connection lost after the commit was sent")
        other = record.model_copy(update={"created_at": record.created_at + 1.0})
        await self.inner.append(other, status="running")
        if self.mode == "refused":
            await self.inner.append(
                record, status=status, lease_owner=lease_owner
            )  # raises: AT is taken
            raise AssertionError("the store accepted a second checkpoint 3")
        raise CheckpointError("connection lost before the reply")

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        await self.inner.create_run(run, first=first)

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        return await self.inner.acquire_lease(run_id, owner, ttl=ttl)

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        return await self.inner.renew_lease(run_id, owner, ttl=ttl)

    async def release_lease(self, run_id: str, owner: str) -> None:
        await self.inner.release_lease(run_id, owner)

    async def get_lease(self, run_id: str) -> Lease | None:
        return await self.inner.get_lease(run_id)

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self.inner.get_run(run_id)

    async def records(self, run_id: str, *, upto: int | None = None) -> Sequence[CheckpointRecord]:
        return await self.inner.records(run_id, upto=upto)

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        return await self.inner.load(run_id, upto=upto)

    async def list_runs(self, **filters: Any) -> Sequence[RunRecord]:
        return await self.inner.list_runs(**filters)

    async def history(self, run_id: str) -> Sequence[CheckpointInfo]:
        return await self.inner.history(run_id)

    async def list_pending(self) -> Sequence[Any]:  # the protocol's method since issue 20
        return await self.inner.list_pending()

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        return await self.inner.prune(run_id, keep_last=keep_last)

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)

    async def close(self) -> None:
        await self.inner.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def inner(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    store: CheckpointStore
    if request.param == "memory":
        store = InMemoryCheckpointStore()
    elif request.param == "sqlite":
        store = SQLiteCheckpointStore(tmp_path / "runs.db")
    else:
        store = PostgresCheckpointStore(request.getfixturevalue("postgres_dsn"))
    try:
        yield store
    finally:
        await store.close()


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes and contexts."""
    found: list[BaseException] = []
    todo = [exc]
    while todo:
        error = todo.pop()
        if any(error is seen for seen in found):
            continue
        found.append(error)
        todo.extend(e for e in (error.__cause__, error.__context__) if e is not None)
    return found


@pytest.mark.parametrize("mode", ["refused", "foreign_then_lost"])
async def test_another_writers_checkpoint_is_never_counted(
    inner: CheckpointStore, mode: Mode
) -> None:
    store = Racing(inner, mode)
    run_id = f"r-{mode}"
    with pytest.raises(Exception) as caught:
        await team_of(SPEC, store, Ledger()).run(task="go", run_id=run_id)
    assert store.raced
    # The team wrote nothing after the other writer's record: its next write (the stop
    # record) was refused instead of following a record that is not its own.
    run = await inner.get_run(run_id)
    assert run is not None and run.last_checkpoint == AT
    records = await inner.records(run_id)
    assert [r.checkpoint_id for r in records] == [1, 2, 3]
    if mode == "refused":  # the refusal is what the run raises
        errors = _chain(caught.value)
        assert any(isinstance(e, CheckpointConflictError) for e in errors), errors


async def test_own_checkpoint_reported_lost_is_counted(inner: CheckpointStore) -> None:
    """The append was written but reported lost: the stored record is this writer's (as
    the store gives it back), so it is counted and the run goes on from it."""
    want_store = InMemoryCheckpointStore()
    await team_of(SPEC, want_store, Ledger()).run(task="go", run_id="ref")
    want = await stored(want_store, "ref")

    store = Racing(inner, "own_then_lost")
    ledger = Ledger()
    with pytest.raises(Exception) as caught:
        await team_of(SPEC, store, ledger).run(task="go", run_id="r")
    assert store.raced
    assert not any(isinstance(e, CheckpointConflictError) for e in _chain(caught.value))
    run = await inner.get_run("r")
    assert run is not None and run.last_checkpoint == AT + 1  # the stop record followed
    records = await inner.records("r")
    assert [r.kind for r in records] == ["start", "turn", "turn", "stop"]

    result = await team_of(SPEC, store, ledger).run(run_id="r")
    assert result.run_id == "r"
    assert_same_transcript(SPEC, await stored(inner, "r"), want)
    assert sorted(ledger.read()) == [("a", 0), ("b", 0), ("c", 0), ("d", 0)]
