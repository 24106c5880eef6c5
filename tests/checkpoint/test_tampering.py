"""Stores refuse bad data by name: every column of every table, edited to a value that
does not decode or to a plausible one the checksums and the run row's consistency
catch, gives a ``CheckpointError`` naming the table, the run (and the checkpoint), on
SQLite and PostgreSQL, and through the command line as one line."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from flowlib.checkpoint import (
    CheckpointRecord,
    CheckpointStore,
    PostgresCheckpointStore,
    RunRecord,
    SQLiteCheckpointStore,
)
from flowlib.cli import main
from flowlib.errors import CheckpointError

# (table, column, SQL value, words the error says, what a plausible edit is caught by)
EDITS: list[tuple[str, str, str, str]] = [
    ("flowlib_runs", "run_id", "'other'", "checksum"),
    ("flowlib_runs", "team_type", "'Swarm'", "checksum"),
    ("flowlib_runs", "graph_signature", "'sig2'", "checksum"),
    ("flowlib_runs", "graph", "'{not json'", "checksum"),
    ("flowlib_runs", "state_version", "7", "checksum"),
    ("flowlib_runs", "status", "'paused'", "not a run status"),
    ("flowlib_runs", "created_at", "5.0", "checksum"),
    ("flowlib_runs", "updated_at", "'soon'", "`updated_at`"),
    ("flowlib_runs", "last_checkpoint", "2", "`last_checkpoint` holds 2"),
    ("flowlib_runs", "turns", "9", "`turns` holds 9"),
    ("flowlib_runs", "stop_reason", "'edited'", "`stop_reason`"),
    ("flowlib_runs", "forked_from", "'[\"x\"'", "checksum"),
    ("flowlib_runs", "metadata", '\'{"task": "other"}\'', "checksum"),
    ("flowlib_runs", "checksum", "'0000'", "checksum"),
    ("flowlib_records", "run_id", "'other'", "`last_checkpoint`"),
    ("flowlib_records", "checkpoint_id", "checkpoint_id + 10", "`last_checkpoint`"),
    ("flowlib_records", "kind", "'sideways'", "checksum"),
    ("flowlib_records", "turn", "turn + 1", "checksum"),
    ("flowlib_records", "node", "'z'", "checksum"),
    ("flowlib_records", "stop_reason", "'x'", "checksum"),
    ("flowlib_records", "created_at", "created_at + 1", "checksum"),
    ("flowlib_records", "message_count", "5", "checksum"),
    ("flowlib_records", "bookkeeping", "'{\"ready\": '", "checksum"),
    ("flowlib_records", "participants", "'{}'", "checksum"),
    ("flowlib_records", "checksum", "'0000'", "checksum"),
    ("flowlib_messages", "run_id", "'other'", "checksum"),
    ("flowlib_messages", "checkpoint_id", "checkpoint_id + 10", "checksum"),
    ("flowlib_messages", "position", "10 - 9 * position", "checksum"),  # 3: the two swap
    ("flowlib_messages", "node", "'z'", "checksum"),
    ("flowlib_messages", "body", '\'{"content": "forged"}\'', "checksum"),
    ("flowlib_snapshots", "checkpoint_id", "checkpoint_id - 1", "flowlib_snapshots"),
    ("flowlib_snapshots", "body", "replace(body, 'm1', 'mX')", "checksum"),
    ("flowlib_leases", "expires_at", "'never'", "flowlib_leases"),
    # Edits to another valid value, caught by the run row's and the lease's state checksums
    ("flowlib_runs", "status", "'complete'", "`status` holds 'complete'"),
    ("flowlib_runs", "status", "'failed'", "`status` holds 'failed'"),
    ("flowlib_runs", "updated_at", "updated_at + 60", "`updated_at` holds 63.0"),
    ("flowlib_runs", "state_checksum", "'0000'", "checksum"),
    ("flowlib_leases", "owner", "'someone-else'", "`owner` holds 'someone-else'"),
    ("flowlib_leases", "expires_at", "expires_at + 3600", "flowlib_leases"),
    ("flowlib_leases", "checksum", "'0000'", "flowlib_leases"),
]
# Undecodable values where the checksum is not checked: what the decoding says.
UNCHECKED: list[tuple[str, str, str, str]] = [
    ("flowlib_records", "kind", "'sideways'", "not a record kind"),
    ("flowlib_records", "bookkeeping", "'{\"ready\": '", "not valid JSON"),
    ("flowlib_records", "turn", "'many'", "`turn`"),
    ("flowlib_messages", "body", "'[1, 2'", "not valid JSON"),
    ("flowlib_runs", "graph", "'{not json'", "not valid JSON"),
    ("flowlib_runs", "forked_from", "'[\"x\"'", "not valid JSON"),
    ("flowlib_runs", "state_version", "'v2'", "`state_version`"),
]


def _run(run_id: str = "r1") -> RunRecord:
    return RunRecord(
        run_id=run_id,
        team_type="GraphFlow",
        graph_signature="sig",
        graph={"nodes": ["a"]},
        state_version=1,
        created_at=1.0,
        updated_at=1.0,
        forked_from=("parent", 2),
        metadata={"task": "go"},
    )


def _record(checkpoint_id: int) -> CheckpointRecord:
    text = f"m{checkpoint_id}"
    messages = [{"type": "TextMessage", "source": "a", "content": text}]
    if checkpoint_id == 3:
        messages.append({"type": "TextMessage", "source": "a", "content": "m3b"})
    return CheckpointRecord(
        run_id="r1",
        checkpoint_id=checkpoint_id,
        kind="start" if checkpoint_id == 1 else "turn",
        turn=checkpoint_id - 1,
        node=None if checkpoint_id == 1 else "a",
        created_at=float(checkpoint_id),
        messages=messages,
        message_nodes=[None if checkpoint_id == 1 else "a"] * len(messages),
        bookkeeping={"ready": ["a"]},
        participants={"a": {"set": {"seen": checkpoint_id}}},
    )


async def _fill(store: CheckpointStore) -> None:
    await store.create_run(_run())
    for checkpoint_id in (1, 2, 3):
        await store.append(_record(checkpoint_id), status="running")
    await store.acquire_lease("r1", "me", ttl=600)


@pytest.fixture(params=["sqlite", "postgres"])
async def where(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "runs.db")
    else:
        yield "postgres", request.getfixturevalue("postgres_dsn")


def _open(kind: str, where: str, **options: Any) -> CheckpointStore:
    if kind == "sqlite":
        return SQLiteCheckpointStore(where, snapshot_every=2, **options)
    return PostgresCheckpointStore(where, snapshot_every=2, **options)


def _execute(kind: str, where: str, sql: str) -> None:
    if kind == "sqlite":
        with sqlite3.connect(where) as conn:
            conn.execute(sql)
        return
    import psycopg

    with psycopg.connect(where, autocommit=True) as conn:
        conn.execute(sql)


async def _read_everything(store: CheckpointStore) -> None:
    """What resuming and the commands read: the run, the listing, its state, its
    records and history."""
    await store.list_runs()
    run = await store.get_run("r1")
    assert run is not None, "the run is gone"
    await store.load("r1")
    await store.records("r1")
    await store.history("r1")


def _sql_value(kind: str, table: str, value: str) -> str:
    typed = table in ("flowlib_runs", "flowlib_records", "flowlib_leases")
    if kind == "postgres" and typed and value in ("'soon'", "'never'", "'many'", "'v2'"):
        return ""  # PostgreSQL's typed columns refuse these: nothing to read back
    return value


async def _expect_refusal(kind: str, where: str, table: str, column: str, value: str,
                          says: str, **options: Any) -> None:  # fmt: skip
    sql_value = _sql_value(kind, table, value)
    if not sql_value:
        pytest.skip("a typed PostgreSQL column refuses the value itself")
    _execute(kind, where, f"UPDATE {table} SET {column} = {sql_value} WHERE run_id = 'r1'")
    store = _open(kind, where, **options)
    try:
        with pytest.raises(CheckpointError) as refused:
            await _read_everything(store)
    finally:
        await store.close()
    message = str(refused.value)
    assert says in message, message
    assert f"`{table}`" in message or "checksum" in message, message
    assert "run `r1`" in message or "run `other`" in message, message
    assert "another writer" not in message and "writable" not in message, message


@pytest.mark.parametrize(("table", "column", "value", "says"), EDITS)
async def test_an_edited_column_is_refused_by_name(
    where: tuple[str, str], table: str, column: str, value: str, says: str
) -> None:
    kind, path = where
    store = _open(kind, path)
    await _fill(store)
    await store.close()
    if kind == "postgres" and value in ("'soon'", "'never'"):
        pytest.skip("PostgreSQL's typed column refuses the value itself")
    await _expect_refusal(kind, path, table, column, value, says)


@pytest.mark.parametrize(("table", "column", "value", "says"), UNCHECKED)
async def test_an_undecodable_value_is_refused_by_name_without_checksums(
    where: tuple[str, str], table: str, column: str, value: str, says: str
) -> None:
    """Rows written without checksums (an older flowlib, or edited checksums set to
    NULL): the decoding itself names what is wrong."""
    kind, path = where
    if kind == "postgres" and value in ("'many'", "'v2'"):
        pytest.skip("PostgreSQL's typed column refuses the value itself")
    store = _open(kind, path)
    await _fill(store)
    await store.close()
    _execute(kind, path, "UPDATE flowlib_records SET checksum = NULL")
    _execute(kind, path, "UPDATE flowlib_runs SET checksum = NULL")
    await _expect_refusal(kind, path, table, column, value, says)


async def test_an_intact_store_reads_back(where: tuple[str, str]) -> None:
    kind, path = where
    store = _open(kind, path)
    await _fill(store)
    await store.close()
    store = _open(kind, path)
    await _read_everything(store)
    assert [m["content"] for m in (await store.load("r1")).messages] == ["m1", "m2", "m3", "m3b"]
    await store.close()


async def test_a_garbled_sqlite_file_says_so(tmp_path: Path) -> None:
    """(Before: "check the directory is writable".)"""
    path = tmp_path / "runs.db"
    path.write_bytes(b"this is not a database, just some text" * 100)
    store = SQLiteCheckpointStore(path)
    with pytest.raises(CheckpointError, match="not an SQLite database, or it is damaged") as e:
        await store.list_runs()
    assert "writable" not in str(e.value)
    await store.close()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("UPDATE flowlib_runs SET status = 'paused'", "not a run status"),
        ("UPDATE flowlib_messages SET body = '{oops'", "checksum"),
        ("UPDATE flowlib_runs SET last_checkpoint = 7", "`last_checkpoint` holds 7"),
    ],
)
def test_the_command_line_reports_a_tampered_store_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, says: str
) -> None:
    import asyncio

    path = str(tmp_path / "runs.db")

    async def fill() -> None:
        store = SQLiteCheckpointStore(path)
        await _fill(store)
        await store.close()

    asyncio.run(fill())
    _execute("sqlite", path, edit)
    for command in (["runs", "list"], ["runs", "show", "r1"]):
        if command == ["runs", "list"] and "status" not in edit:
            continue
        code = main([*command, "--store", f"sqlite:///{path}"], out=io.StringIO())
        err = capsys.readouterr().err.strip()
        assert code == 1 and says in err, err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
