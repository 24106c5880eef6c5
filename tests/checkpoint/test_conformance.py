"""The built-in checkpoint stores (in memory, SQLite, PostgreSQL) against the
conformance suite users run on their own stores (``flowlib.testing.check_checkpoint_store``),
rule by rule; then what only a backend's own tables can show (rows and bytes written,
snapshots, several processes, connection errors).

The PostgreSQL store runs against a real server started by the ``postgres_server``
fixture (tests/_postgres.py), each store in a fresh schema; SQLite against files in
``tmp_path``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flowlib.checkpoint import (
    CheckpointStore,
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    diff_state,
    fold,
)
from flowlib.checkpoint._sql import RECORD_COLUMNS, message_rows, record_row
from flowlib.errors import CheckpointArgumentError, CheckpointError
from flowlib.testing import STORE_RULES, StoreRule, check_checkpoint_store

# The records the conformance suite writes, for the backend tests beside it.
from flowlib.testing._store_rules import _msg, _record, _run, _write


@dataclass
class Backend:
    kind: str
    where: str  # the file or DSN ("" for memory)
    opened: list[CheckpointStore] = field(default_factory=list)
    _memory: InMemoryCheckpointStore | None = None

    def open(self, **options: Any) -> CheckpointStore:
        """A store on the backend: a new one each time (memory: the same one)."""
        store: CheckpointStore
        if self.kind == "memory":
            if self._memory is None:
                self._memory = InMemoryCheckpointStore()
            store = self._memory
        elif self.kind == "sqlite":
            store = SQLiteCheckpointStore(self.where, **options)
        else:
            store = PostgresCheckpointStore(self.where, **options)
        self.opened.append(store)
        return store

    async def fill(self, store: CheckpointStore, run_id: str, start: int, stop: int) -> None:
        """Write checkpoints ``start..stop-1`` quickly: SQL stores get them in one bulk
        transaction (the same rows ``append`` writes), so a long run is cheap to set up."""
        if self.kind == "memory" or stop - start < 100:
            await _write(store, run_id, stop - start, start=start)
            return
        records = [_record(run_id, i) for i in range(start, stop)]
        rows = [record_row(r) for r in records]
        messages = [m for r in records for m in message_rows(r)]
        params = "?" if self.kind == "sqlite" else "%s"
        insert_record = (
            f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({', '.join([params] * 11)})"
        )
        insert_message = f"INSERT INTO flowlib_messages VALUES ({', '.join([params] * 5)})"
        # The bulk rows bypass the append, so the run row's changing columns get no
        # checksum (as a row of schema version 2): the next append writes one.
        advance = (
            f"UPDATE flowlib_runs SET last_checkpoint = {params}, state_checksum = NULL "
            f"WHERE run_id = {params}"
        )
        if self.kind == "sqlite":
            with sqlite3.connect(self.where) as conn:
                conn.executemany(insert_record, rows)
                conn.executemany(insert_message, messages)
                conn.execute(advance, (stop - 1, run_id))
        else:
            import psycopg

            with psycopg.connect(self.where) as conn, conn.cursor() as cur:
                cur.executemany(insert_record, rows)
                cur.executemany(insert_message, messages)
                cur.execute(advance, (stop - 1, run_id))

    def footprint(self, run_id: str) -> tuple[int, int]:
        """(rows, payload bytes) the backend holds for the run's records."""
        if self.kind == "memory":
            assert self._memory is not None
            records = self._memory._records[run_id]
            rows = sum(1 + len(r.messages) for r in records)
            size = sum(
                len(json.dumps([r.messages, r.bookkeeping, r.participants])) for r in records
            )
            return rows, size
        queries = [
            "SELECT count(*), coalesce(sum(length(bookkeeping) + length(participants)), 0) "
            "FROM flowlib_records WHERE run_id = {p}",
            "SELECT count(*), coalesce(sum(length(body)), 0) FROM flowlib_messages "
            "WHERE run_id = {p}",
        ]
        totals = [0, 0]
        if self.kind == "sqlite":
            with sqlite3.connect(self.where) as conn:
                for query in queries:
                    rows, size = conn.execute(query.format(p="?"), (run_id,)).fetchone()
                    totals[0] += rows
                    totals[1] += size
        else:
            import psycopg

            with psycopg.connect(self.where) as conn:
                for query in queries:
                    row = conn.execute(query.format(p="%s"), (run_id,)).fetchone()
                    assert row is not None
                    totals[0] += row[0]
                    totals[1] += row[1]
        return totals[0], totals[1]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], CheckpointStore]:
    """New, empty stores of one kind (SQL stores snapshot every 3 checkpoints, so the
    suite's ``load`` rule reads snapshots too)."""
    if request.param == "memory":
        return InMemoryCheckpointStore
    if request.param == "sqlite":
        files = itertools.count()
        return lambda: SQLiteCheckpointStore(tmp_path / f"{next(files)}.db", snapshot_every=3)
    server = request.getfixturevalue("postgres_server")
    return lambda: PostgresCheckpointStore(server.new_dsn(), snapshot_every=3)


@pytest.mark.parametrize("rule", STORE_RULES)
async def test_built_in_stores_keep_the_rule(
    make_store: Callable[[], CheckpointStore], rule: StoreRule
) -> None:
    await check_checkpoint_store(make_store, rules=[rule])


async def test_the_memory_store_passes_the_whole_suite() -> None:
    await check_checkpoint_store(InMemoryCheckpointStore)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "memory":
        where = ""
    elif request.param == "sqlite":
        where = str(tmp_path / "runs.db")
    else:
        where = request.getfixturevalue("postgres_dsn")
    backend = Backend(request.param, where)
    try:
        yield backend
    finally:
        for store in backend.opened:
            await store.close()


async def test_a_deleted_run_leaves_no_rows(backend: Backend) -> None:
    if backend.kind == "memory":
        pytest.skip("the in-memory store has no rows")
    store = backend.open()
    await store.create_run(_run("r1"))
    await store.create_run(_run("r2"))
    await _write(store, "r1", 3)
    await _write(store, "r2", 1)
    await store.delete("r1")
    await store.delete("never")  # unknown: no error
    assert await store.get_run("r1") is None
    assert backend.footprint("r1") == (0, 0)
    assert backend.footprint("r2")[0] == 2


@pytest.mark.timeout(600)  # a hang guard: 32 s of 120 in a whole run at load ~20
async def test_bytes_per_record_do_not_grow_with_the_run(backend: Backend) -> None:
    """The same record costs the same rows and bytes at checkpoint 10 and 10,000."""
    store = backend.open()
    await store.create_run(_run())
    deltas = []
    checkpoint_id = 1
    for target in (10, 10_000):
        await backend.fill(store, "r1", checkpoint_id, target)
        before = backend.footprint("r1")
        await store.append(_record("r1", target, text="same payload"), status="running")
        after = backend.footprint("r1")
        deltas.append((after[0] - before[0], after[1] - before[1]))
        checkpoint_id = target + 1
    assert deltas[0] == deltas[1]
    assert deltas[0][0] == 2  # one record row, one message row
    assert 0 < deltas[0][1] < 400


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from flowlib.checkpoint import CheckpointRecord, SQLiteCheckpointStore
    from flowlib.errors import CheckpointError

    async def main(path, name):
        store = SQLiteCheckpointStore(path)
        won = []
        for checkpoint_id in range(1, 41):
            while True:  # wait until the previous id is written, then race for this one
                run = await store.get_run("shared")
                if run.last_checkpoint >= checkpoint_id - 1:
                    break
                await asyncio.sleep(0.001)
            record = CheckpointRecord(
                run_id="shared", checkpoint_id=checkpoint_id, kind="turn", turn=checkpoint_id,
                created_at=0.0, messages=[{"from": name}], message_nodes=[name],
            )
            try:
                await store.append(record, status="running")
                won.append(checkpoint_id)
            except CheckpointError:
                pass
        await store.close()
        print(" ".join(map(str, won)))

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def test_sqlite_is_safe_for_several_processes(tmp_path: Path) -> None:
    """Four processes race to append the same ids to one run: one wins each id."""
    path = str(tmp_path / "shared.db")
    store = SQLiteCheckpointStore(path)
    await store.create_run(_run("shared"))
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _WRITER,
            path,
            f"p{i}",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    outputs = [await p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err.decode() for _, err in outputs]
    won = [int(x) for out, _ in outputs for x in out.split()]
    assert sorted(won) == list(range(1, 41))  # every id written exactly once
    records = await store.records("shared")
    assert [r.checkpoint_id for r in records] == list(range(1, 41))
    winners = {int(x): f"p{i}" for i, (out, _) in enumerate(outputs) for x in out.split()}
    assert all(r.message_nodes == [winners[r.checkpoint_id]] for r in records)
    await store.close()


async def test_sqlite_path_errors_are_checkpoint_errors(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "missing-dir" / "runs.db")
    with pytest.raises(CheckpointError, match="missing-dir"):
        await store.list_runs()
    await store.close()
    with pytest.raises(CheckpointArgumentError, match="path"):
        SQLiteCheckpointStore(42)  # type: ignore[arg-type]


async def test_postgres_connection_errors_are_checkpoint_errors() -> None:
    store = PostgresCheckpointStore(
        "postgresql://nobody:secret@127.0.0.1:1/none", connect_timeout=1.0
    )
    with pytest.raises(CheckpointError) as caught:
        await store.list_runs()
    assert "secret" not in str(caught.value)
    await store.close()


def test_diff_state_is_what_records_carry() -> None:
    """The helper records above use the patch format diff_state makes."""
    assert (
        diff_state({"ctx": [_msg("m1")]}, {"ctx": [_msg("m1"), _msg("m2")]})
        == (_record("r", 2).participants["a"])
    )


# --- load: snapshots ---------------------------------------------------------------------


def _snapshot_ids(backend: Backend, run_id: str) -> list[int]:
    query = "SELECT checkpoint_id FROM flowlib_snapshots WHERE run_id = {p} ORDER BY 1"
    if backend.kind == "sqlite":
        with sqlite3.connect(backend.where) as conn:
            return [r[0] for r in conn.execute(query.format(p="?"), (run_id,))]
    import psycopg

    with psycopg.connect(backend.where) as conn:
        return [r[0] for r in conn.execute(query.format(p="%s"), (run_id,))]


async def test_load_equals_folding_every_record(backend: Backend) -> None:
    """``load`` (a snapshot every 3 checkpoints, and the records after it) gives what
    folding all records gives, at every checkpoint, before and after a prune; the store
    keeps the newest snapshot only."""
    if backend.kind == "memory":
        pytest.skip("the in-memory store keeps no snapshots (the suite checks its load)")
    store = backend.open(snapshot_every=3)
    await store.create_run(_run())
    await _write(store, "r1", 10)
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == [9]  # the newest only
    for upto in (None, *range(1, 11)):
        expected = fold(await store.records("r1", upto=upto))
        assert await store.load("r1", upto=upto) == expected, upto
    folded = await store.load("r1")
    folded.messages.clear()  # the caller's copy: the store is not changed
    assert len((await store.load("r1")).messages) == 10

    assert await store.prune("r1", keep_last=4) == 5  # 1..6 folded into a base at 6
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == [9]
    for upto in (None, 6, 8, 9, 10):
        assert await store.load("r1", upto=upto) == fold(await store.records("r1", upto=upto))
    await _write(store, "r1", 3, start=11)  # a snapshot at 12 replaces the one at 9
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == [12]
    assert await store.load("r1") == fold(await store.records("r1"))
    with pytest.raises(CheckpointError, match="pruned"):
        await store.load("r1", upto=5)
    with pytest.raises(CheckpointArgumentError, match="no checkpoint"):
        await store.load("r1", upto=14)
    with pytest.raises(CheckpointError, match="Unknown run"):
        await store.load("nope")
    await store.delete("r1")
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == []


async def test_load_reads_only_what_follows_the_snapshot(backend: Backend) -> None:
    """A record before the newest snapshot is not read by ``load``: once it is gone
    from the table, ``load`` still gives the whole state."""
    if backend.kind == "memory":
        pytest.skip("the in-memory store folds its records in place")
    store = backend.open(snapshot_every=5)
    await store.create_run(_run())
    await _write(store, "r1", 7)
    whole = await store.load("r1")
    query = "DELETE FROM flowlib_records WHERE run_id = 'r1' AND checkpoint_id <= 5"
    if backend.kind == "sqlite":
        with sqlite3.connect(backend.where) as conn:
            conn.execute(query)
    else:
        import psycopg

        with psycopg.connect(backend.where) as conn:
            conn.execute(query)
    assert await store.load("r1") == whole
