"""Atomic fork: a fork interrupted at any write point, by an exception or by a SIGKILLed
process, is whole or absent in the store, and the same fork call made again gives the
fork the uninterrupted call gives."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _fork_team import FaultyConnection, chain, lease_gone, with_fault
from _forked import run_script_async

from flowlib.checkpoint import (
    CheckpointRecord,
    CheckpointStore,
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    RunRecord,
    SQLiteCheckpointStore,
)
from flowlib.errors import CheckpointArgumentError, CheckpointError

CHILD = Path(__file__).parent / "_fork_team.py"


class Injected(CheckpointError):
    """The fault the tests inject."""


@dataclass
class Backend:
    kind: str
    url: str
    opened: list[CheckpointStore] = field(default_factory=list)
    memory: InMemoryCheckpointStore | None = None

    def open(self) -> CheckpointStore:
        store: CheckpointStore
        if self.kind == "memory":
            self.memory = self.memory or InMemoryCheckpointStore()
            return self.memory
        if self.kind == "sqlite":
            store = SQLiteCheckpointStore(self.url.removeprefix("sqlite:///"))
        else:
            store = PostgresCheckpointStore(self.url)
        self.opened.append(store)
        return store


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    url = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 'runs.db'}",
    }.get(request.param) or request.getfixturevalue("postgres_dsn")
    backend = Backend(request.param, url)
    yield backend
    for store in backend.opened:
        await store.close()
    if backend.memory is not None:
        await backend.memory.close()


async def _source(store: CheckpointStore) -> int:
    """Run the source run ``orig`` (A, B, C); the checkpoint after A's turn."""
    await chain(store).run(task="go", run_id="orig")
    return next(h.checkpoint_id for h in await store.history("orig") if h.node == "A")


def _texts(result: Any) -> list[str]:
    return [m.to_text() for m in result.messages]


async def _reference(store: CheckpointStore, at: int) -> tuple[list[str], list[str]]:
    """The uninterrupted fork: its result and the kinds of its checkpoints."""
    result = await chain(store).run(run_id="reference", fork_from=("orig", at))
    return _texts(result), [h.kind for h in await store.history("reference")]


async def _whole_or_absent(store: CheckpointStore, fork: str) -> bool:
    """True if the fork is whole (its run and its base record), False if absent."""
    run = await store.get_run(fork)
    if run is None:
        return False
    records = await store.records(fork)
    assert run.last_checkpoint >= 1, f"a stub of {fork} was left: {run}"
    assert records[0].kind == "base" and records[0].checkpoint_id == 1
    assert run.forked_from is not None
    return True


class FailingStore:
    """Delegates to ``inner``; ``create_run`` raises before it stores anything, or after
    it stored (a reply lost after the commit)."""

    def __init__(self, inner: CheckpointStore, *, after: bool) -> None:
        self.inner = inner
        self.after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        if self.after:
            await self.inner.create_run(run, first=first)
        raise Injected("the store failed (injected)")


async def test_a_fork_failing_in_the_store_is_whole_or_absent_and_retries(
    backend: Backend,
) -> None:
    """Faults around the one write of a fork, on every store: before it (nothing is
    stored), and after it committed with the reply lost (the fork is whole and is used)."""
    store = backend.open()
    at = await _source(store)
    expected = await _reference(store, at)
    for after in (False, True):
        fork = f"fork-{after}"
        faulty = FailingStore(store, after=after)
        if after:  # the fork sees its record stored and goes on
            result = await chain(faulty).run(run_id=fork, fork_from=("orig", at))  # type: ignore[arg-type]
            assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected
            continue
        with pytest.raises(Injected):
            await chain(faulty).run(run_id=fork, fork_from=("orig", at))  # type: ignore[arg-type]
        assert not await _whole_or_absent(store, fork)
        result = await chain(store).run(run_id=fork, fork_from=("orig", at))
        assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected


def _fork_writes(log: list[str]) -> tuple[int, int]:
    """In a logged fork's writes, the numbers (1-based) of the fork's first write and of
    the commit that stores it."""
    first = next(i for i, sql in enumerate(log, 1) if "INSERT INTO flowlib_runs" in sql)
    commit = next(i for i, sql in enumerate(log, 1) if i > first and sql.strip() == "COMMIT")
    return first, commit


class Logging(FaultyConnection):
    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn, 0, lambda: None, after=False)
        self.log: list[str] = []

    def _write(self, sql: str, run: Callable[[], Any]) -> Any:
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "COMMIT")):
            self.log.append(sql)
        return run()


async def _sqlite_points(path: str, at: int) -> tuple[int, int]:
    """Where the fork's writes are among the writes of a fork call on ``path``."""
    store = SQLiteCheckpointStore(path)
    await store.list_runs()
    assert store._conn is not None
    logging = Logging(store._conn)
    await with_fault(store, logging)
    await chain(store).run(run_id="logged", fork_from=("orig", at))
    await store.close()
    return _fork_writes(logging.log)


async def test_a_sqlite_fork_failing_at_every_write_is_whole_or_absent(tmp_path: Path) -> None:
    """An I/O error at each write statement of the fork (before it runs, and after the
    commit): the fork is whole or absent, and the same call again gives the same fork."""
    path = str(tmp_path / "runs.db")
    store = SQLiteCheckpointStore(path)
    at = await _source(store)
    expected = await _reference(store, at)
    first, commit = await _sqlite_points(path, at)
    assert commit - first >= 2  # the run, its record, its messages, the commit
    for point in range(1, commit + 1):
        for after in (False, True) if point == commit else (False,):
            fork = f"fork-{point}-{after}"
            faulty = SQLiteCheckpointStore(path)
            await faulty.list_runs()
            assert faulty._conn is not None

            def fail() -> None:
                raise sqlite3.OperationalError("disk I/O error (injected)")

            connection = FaultyConnection(faulty._conn, point, fail, after=after)
            await with_fault(faulty, connection)
            if after:  # committed, then the reply was lost: the fork finds its record
                result = await chain(faulty).run(run_id=fork, fork_from=("orig", at))
                assert connection.fired
                assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected
                await faulty.close()
                continue
            with pytest.raises(CheckpointError, match="disk I/O error"):
                await chain(faulty).run(run_id=fork, fork_from=("orig", at))
            assert connection.fired
            assert not await _whole_or_absent(store, fork)
            # The failed store's connection is still usable, and the same call succeeds.
            await faulty.list_runs()
            await faulty.close()
            result = await chain(store).run(run_id=fork, fork_from=("orig", at))
            assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected
    await store.close()


async def _wait_line(proc: asyncio.subprocess.Process, text: str) -> None:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert text in line.decode(), line


@pytest.mark.timeout(600)  # a hang guard: 16x the time seen with four workers on two cores
async def test_a_sqlite_fork_killed_at_every_write_is_whole_or_absent(tmp_path: Path) -> None:
    """The forking process is SIGKILLed at each write of the fork, and right after its
    commit; the fork is whole or absent, and the same call again gives the same fork."""
    path = str(tmp_path / "runs.db")
    store = SQLiteCheckpointStore(path)
    at = await _source(store)
    expected = await _reference(store, at)
    first, commit = await _sqlite_points(path, at)
    outcomes = []
    for point in range(first, commit + 1):
        for after in (False, True) if point == commit else (False,):
            fork = f"fork-{point}-{after}"
            # A fork of a process that has flowlib imported (tests/_forked.py), not a
            # new interpreter: the same script, SIGKILLed for real, without the import.
            done = await run_script_async(
                CHILD,
                f"sqlite:///{path}",
                "orig",
                str(at),
                fork,
                str(point),
                "after" if after else "before",
                paths=sys.path,
                timeout=120,
            )
            assert done.returncode == -9, done.stderr
            whole = await _whole_or_absent(store, fork)
            outcomes.append(whole)
            assert whole == after
            await lease_gone(store, fork)
            result = await chain(store).run(run_id=fork, fork_from=("orig", at))
            assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected
    assert outcomes == [False] * (commit - first + 1) + [True]
    await store.close()


_FAULTS = """
CREATE TABLE fault (point TEXT NOT NULL, action TEXT NOT NULL);
CREATE FUNCTION fault_fire() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM fault WHERE point = TG_ARGV[0] AND action = 'raise') THEN
        RAISE EXCEPTION 'injected fault at %', TG_ARGV[0];
    END IF;
    IF EXISTS (SELECT 1 FROM fault WHERE point = TG_ARGV[0] AND action = 'stall') THEN
        PERFORM pg_sleep(120);
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER fault_runs BEFORE INSERT ON flowlib_runs
    FOR EACH ROW EXECUTE FUNCTION fault_fire('runs');
CREATE TRIGGER fault_records BEFORE INSERT ON flowlib_records
    FOR EACH ROW EXECUTE FUNCTION fault_fire('records');
CREATE TRIGGER fault_messages BEFORE INSERT ON flowlib_messages
    FOR EACH ROW EXECUTE FUNCTION fault_fire('messages');
CREATE CONSTRAINT TRIGGER fault_commit AFTER INSERT ON flowlib_records
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fault_fire('commit');
"""
_POINTS = ("runs", "records", "messages", "commit")


def _set_fault(dsn: str, point: str | None, action: str = "raise") -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM fault")
        if point is not None:
            conn.execute("INSERT INTO fault VALUES (%s, %s)", (point, action))


async def test_a_postgres_fork_failing_at_every_write_is_whole_or_absent(
    postgres_dsn: str,
) -> None:
    """A server-side error at each write of the fork (each insert, and the commit): the
    fork is absent, and the same call again gives the same fork."""
    import psycopg

    store = PostgresCheckpointStore(postgres_dsn)
    at = await _source(store)
    expected = await _reference(store, at)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(_FAULTS)
    for point in _POINTS:
        fork = f"fork-{point}"
        _set_fault(postgres_dsn, point)
        with pytest.raises(CheckpointError, match=f"injected fault at {point}"):
            await chain(store).run(run_id=fork, fork_from=("orig", at))
        _set_fault(postgres_dsn, None)
        assert not await _whole_or_absent(store, fork)
        await lease_gone(store, fork)
        result = await chain(store).run(run_id=fork, fork_from=("orig", at))
        assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected
    await store.close()


@pytest.mark.timeout(600)  # a hang guard: 16x the time seen with four workers on two cores
async def test_a_postgres_fork_killed_at_every_write_is_whole_or_absent(
    postgres_dsn: str,
) -> None:
    """The forking process is SIGKILLed while the server executes each write of the
    fork (stalled there by a trigger); the server rolls the fork back, and the same call
    again gives the same fork."""
    import psycopg

    store = PostgresCheckpointStore(postgres_dsn)
    at = await _source(store)
    expected = await _reference(store, at)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(_FAULTS)
    # The server notices a dead client within 0.1 s even in the middle of a statement.
    child_dsn = (
        postgres_dsn.replace("options=", "options=-cclient_connection_check_interval%3D100%20")
        + "&application_name=forkchild"
    )
    for point in _POINTS:
        fork = f"fork-{point}"
        _set_fault(postgres_dsn, point, "stall")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(CHILD),
            child_dsn,
            "orig",
            str(at),
            fork,
            "0",
            "before",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        await _wait_line(proc, "forking")
        deadline = time.monotonic() + 60
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            while True:  # wait until the child's fork is stalled at the point
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'forkchild' AND wait_event = 'PgSleep'"
                ).fetchone()
                if row is not None and row[0] > 0:
                    break
                assert time.monotonic() < deadline, "the child never reached the fault"
                await asyncio.sleep(0.05)
            proc.kill()
            await proc.wait()
            _set_fault(postgres_dsn, None)
            while True:  # the server ends the dead client's transaction
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'forkchild'"
                ).fetchone()
                if row is not None and row[0] == 0:
                    break
                assert time.monotonic() < deadline, "the server kept the dead client"
                await asyncio.sleep(0.05)
        assert not await _whole_or_absent(store, fork)
        await lease_gone(store, fork)
        result = await chain(store).run(run_id=fork, fork_from=("orig", at))
        assert (_texts(result), [h.kind for h in await store.history(fork)]) == expected
    await store.close()


async def test_a_stub_fork_of_an_older_flowlib_is_completed(backend: Backend) -> None:
    """A fork killed between its two writes by an older flowlib left the run without a
    record; the same fork call completes it."""
    store = backend.open()
    at = await _source(store)
    expected = await _reference(store, at)
    stub = (await store.get_run("reference")) or pytest.fail("no reference")
    await store.create_run(
        stub.model_copy(update={"run_id": "stub", "last_checkpoint": 0, "status": "running"})
    )
    result = await chain(store).run(run_id="stub", fork_from=("orig", at))
    assert (_texts(result), [h.kind for h in await store.history("stub")]) == expected


async def test_a_fork_that_ran_on_or_another_run_is_not_forked_again(backend: Backend) -> None:
    store = backend.open()
    at = await _source(store)
    await _reference(store, at)
    with pytest.raises(CheckpointArgumentError, match="has run on since"):
        await chain(store).run(run_id="reference", fork_from=("orig", at))
    with pytest.raises(CheckpointArgumentError, match="already exists"):
        await chain(store).run(run_id="reference", fork_from=("orig", at + 1))
    with pytest.raises(CheckpointArgumentError, match="already exists"):
        await chain(store).run(run_id="orig", fork_from=("orig", at))
