"""Schema versions: a store written by an older flowlib is upgraded when opened, one of a
newer flowlib is refused by name, and a read-only open creates nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from flowlib.agents import AssistantAgent
from flowlib.checkpoint import PostgresCheckpointStore, SQLiteCheckpointStore, fold
from flowlib.checkpoint._sql import SCHEMA_VERSION
from flowlib.errors import CheckpointError
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import RoundRobinGroupChat

DATA = Path(__file__).parent / "data"


def _team(store: SQLiteCheckpointStore, **kw: object) -> RoundRobinGroupChat:
    """The team ``data/make_schema_v1.py`` ran."""
    agents = [
        AssistantAgent(name, ReplayChatCompletionClient([f"{name}{i}" for i in range(8)]))
        for name in ("x", "y")
    ]
    return RoundRobinGroupChat(agents, checkpoint_store=store, **kw)  # type: ignore[arg-type]


def _version(path: Path) -> str | None:
    with sqlite3.connect(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "flowlib_meta" not in tables:
            return None
        return str(conn.execute("SELECT value FROM flowlib_meta").fetchone()[0])


async def test_a_store_of_schema_version_1_is_upgraded_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    shutil.copy(DATA / "schema_v1.db", path)
    assert _version(path) is None  # written before versions were kept
    store = SQLiteCheckpointStore(path)
    runs = {run.run_id: run for run in await store.list_runs()}
    assert _version(path) == str(SCHEMA_VERSION)
    assert sorted(runs) == ["done", "fork", "talk"]
    assert runs["fork"].forked_from == ("talk", 2)
    assert [h.kind for h in await store.history("done")] == ["base", "turn", "stop"]
    talk = fold(await store.records("talk"))
    assert [m["content"] for m in talk.messages] == ["start", "x0", "y0", "x1"]

    result = await _team(store, max_turns=2).run(run_id="talk")  # resumes after max_turns
    assert [m.source for m in result.messages] == ["y", "x"]
    lease = await store.acquire_lease("talk", "me", ttl=5)  # the new tables work
    assert (await store.get_lease("talk")) == lease
    await store.close()
    again = SQLiteCheckpointStore(path)  # opening an upgraded store again changes nothing
    assert len(await again.list_runs()) == 3
    await again.close()


async def test_a_newer_schema_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = SQLiteCheckpointStore(path)
    await store.list_runs()
    await store.close()
    for value, match in ((str(SCHEMA_VERSION + 1), "newer flowlib"), ("x", "not a version")):
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE flowlib_meta SET value = ?", (value,))
        newer = SQLiteCheckpointStore(path)
        with pytest.raises(CheckpointError, match=match):
            await newer.list_runs()
        await newer.close()


async def test_a_read_only_open_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    store = SQLiteCheckpointStore(missing, create=False)
    with pytest.raises(CheckpointError, match=r"No checkpoint store at .*typo\.db.*does not exist"):
        await store.list_runs()
    await store.close()
    assert not missing.exists()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE unrelated (x)")
    store = SQLiteCheckpointStore(other, create=False)
    with pytest.raises(CheckpointError, match="no flowlib tables"):
        await store.list_runs()
    await store.close()
    with sqlite3.connect(other) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["unrelated"]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


async def test_postgres_schema_upgrade_and_read_only_open(postgres_dsn: str) -> None:
    import psycopg

    reader = PostgresCheckpointStore(postgres_dsn, create=False)
    with pytest.raises(CheckpointError, match="no flowlib tables"):
        await reader.list_runs()
    await reader.close()
    # Version 1 tables, as an older flowlib made them, holding a run.
    from flowlib.checkpoint._postgres import _DIALECT
    from flowlib.checkpoint._sql import _v1

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('flowlib_runs')").fetchone() == (None,)
        for statement in _v1(_DIALECT):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO flowlib_runs VALUES ('old', 'T', 'sig', '{}', 1, 'stopped', 1.0, 2.0, "
            "0, 0, NULL, NULL, '{}')"
        )
    store = PostgresCheckpointStore(postgres_dsn, create=False)
    (run,) = await store.list_runs()
    assert run.run_id == "old" and run.lease_owner is None
    await store.acquire_lease("old", "me", ttl=5)
    await store.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM flowlib_meta").fetchone() == (str(SCHEMA_VERSION),)
        conn.execute("UPDATE flowlib_meta SET value = '99'")
    newer = PostgresCheckpointStore(postgres_dsn)
    with pytest.raises(CheckpointError, match="schema version 99"):
        await newer.list_runs()
    await newer.close()
