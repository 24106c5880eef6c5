"""Exactly-once side effects: a table of call results by idempotency key, beside a
checkpoint store.

A tool that acts on the world (charges a card, sends an e-mail, appends a row) records
"started" under its call's key (``flowlib.tools.call_key()``) before it acts and "done
with result R" after; the re-run of that call after a crash finds R and returns it
instead of acting again. The one window a table alone cannot close is a crash after the
effect and before "done" is recorded: the re-run then asks the tool's ``lookup`` whether
the effect happened (the key written into the row, the e-mail's header, the payment
provider's idempotency key); without a ``lookup`` it acts again (at-least-once).

The table lives where the store's runs live: ``flowlib_call_results`` in the SQLite file
or the PostgreSQL schema, a dict shared by everything that uses one
``InMemoryCheckpointStore`` object.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sqlite3
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .._english import a
from ..errors import CheckpointArgumentError, CheckpointError
from ._memory import InMemoryCheckpointStore
from ._postgres import PostgresCheckpointStore
from ._sqlite import SQLiteCheckpointStore
from ._types import CheckpointStore

__all__ = ["CallRecord", "CallResults"]

TABLE = "flowlib_call_results"
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, state TEXT NOT NULL, "
    "result TEXT, started_at DOUBLE PRECISION NOT NULL, done_at DOUBLE PRECISION)"
)
CallState = Literal["started", "done"]


@dataclass(frozen=True)
class CallRecord:
    """What the table holds for one key.

    Attributes:
        key: The call's idempotency key.
        state: ``started`` (an attempt began; it may or may not have acted) or ``done``.
        result: The recorded result (JSON), when done.
        started_at: When the first attempt began (seconds since the epoch).
        done_at: When the result was recorded.
    """

    key: str
    state: CallState
    result: Any = None
    started_at: float = 0.0
    done_at: float | None = None


class _Backend:
    async def get(self, key: str) -> CallRecord | None:
        raise NotImplementedError

    async def start(self, key: str, now: float) -> None:
        raise NotImplementedError

    async def finish(self, key: str, result: str, now: float) -> None:
        raise NotImplementedError

    async def forget(self, key: str) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        return None


def _record(row: tuple[Any, ...] | None) -> CallRecord | None:
    if row is None:
        return None
    key, state, result, started, done = row
    return CallRecord(key, state, None if result is None else json.loads(result), started, done)


_MEMORY: weakref.WeakKeyDictionary[InMemoryCheckpointStore, dict[str, tuple[Any, ...]]] = (
    weakref.WeakKeyDictionary()
)


class _Memory(_Backend):
    def __init__(self, rows: dict[str, tuple[Any, ...]]) -> None:
        self._rows = rows

    async def get(self, key: str) -> CallRecord | None:
        return _record(self._rows.get(key))

    async def start(self, key: str, now: float) -> None:
        self._rows.setdefault(key, (key, "started", None, now, None))

    async def finish(self, key: str, result: str, now: float) -> None:
        row = self._rows.get(key)
        if row is None or row[1] != "done":
            started = row[3] if row is not None else now
            self._rows[key] = (key, "done", result, started, now)

    async def forget(self, key: str) -> None:
        self._rows.pop(key, None)


class _SQL(_Backend):
    """The table's four statements, written once; a dialect gives its placeholder
    (``?`` or ``%s``) and a way to run one statement."""

    _param: ClassVar[str]

    async def _call(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The statement's row (None: no row, or none returned)."""
        raise NotImplementedError

    async def get(self, key: str) -> CallRecord | None:
        p = self._param
        return _record(await self._call(f"SELECT * FROM {TABLE} WHERE key = {p}", (key,)))

    async def start(self, key: str, now: float) -> None:
        p = self._param
        await self._call(
            f"INSERT INTO {TABLE} (key, state, started_at) VALUES ({p}, 'started', {p}) "
            "ON CONFLICT (key) DO NOTHING",
            (key, now),
        )

    async def finish(self, key: str, result: str, now: float) -> None:
        p = self._param
        await self._call(
            f"INSERT INTO {TABLE} (key, state, result, started_at, done_at) "
            f"VALUES ({p}, 'done', {p}, {p}, {p}) ON CONFLICT (key) DO UPDATE SET "
            "state = 'done', result = excluded.result, done_at = excluded.done_at "
            f"WHERE {TABLE}.state <> 'done'",
            (key, result, now, now),
        )

    async def forget(self, key: str) -> None:
        await self._call(f"DELETE FROM {TABLE} WHERE key = {self._param}", (key,))


class _SQLite(_SQL):
    """Its own connection to the store's file (WAL: readers and writers of the store's
    tables are not blocked), on one worker thread."""

    _param = "?"

    def __init__(self, path: str, busy_ms: int = 30_000) -> None:
        self._path = path
        self._busy_ms = busy_ms
        self._conn: sqlite3.Connection | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="flowlib-call-results")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(_SCHEMA)
        return conn

    async def _call(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        def run() -> tuple[Any, ...] | None:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                row: tuple[Any, ...] | None = self._conn.execute(sql, params).fetchone()
                return row
            except sqlite3.Error as exc:
                raise CheckpointError(
                    f"Call results in SQLite file `{self._path}` failed: {exc}."
                ) from exc

        return await asyncio.get_running_loop().run_in_executor(self._thread, run)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, conn.close)
        self._thread.shutdown(wait=False)


class _Postgres(_SQL):
    """Its own connection to the store's database (the table in its ``search_path``)."""

    _param = "%s"

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._conn: Any = None
        self._lock = asyncio.Lock()

    async def _call(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        import psycopg

        async with self._lock:
            try:
                if self._conn is None:
                    self._conn = await psycopg.AsyncConnection.connect(self._dsn, autocommit=True)
                    await self._conn.execute(_SCHEMA)
                cursor = await self._conn.execute(sql, params)
                if cursor.description is None:
                    return None
                row: tuple[Any, ...] | None = await cursor.fetchone()
                return row
            except psycopg.Error as exc:
                conn, self._conn = self._conn, None
                if conn is not None:
                    await conn.close()
                raise CheckpointError(f"Call results in PostgreSQL failed: {exc}") from exc

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


class CallResults:
    """Results of side-effecting calls by idempotency key, stored beside ``store``'s runs.

    Use it in a tool with the call's key ([`call_key`][flowlib.tools.call_key]), so a call
    that finished before a crash returns its recorded result on resume instead of acting
    twice:

    ```python
    results = CallResults(store)          # the team's checkpoint store

    async def charge(card: str, cents: int) -> str:
        return await results.once(call_key(), lambda: bank.charge(card, cents))
    ```

    Args:
        store: An [`InMemoryCheckpointStore`][flowlib.checkpoint.InMemoryCheckpointStore]
            (a table shared by every ``CallResults`` on that object, gone with the
            process), a [`SQLiteCheckpointStore`][flowlib.checkpoint.SQLiteCheckpointStore]
            on a file (the table ``flowlib_call_results`` in that file) or a
            [`PostgresCheckpointStore`][flowlib.checkpoint.PostgresCheckpointStore] (the
            table in its schema).

    Raises:
        CheckpointArgumentError: For another kind of store, or SQLite's ``:memory:``.
    """

    def __init__(self, store: CheckpointStore) -> None:
        backend: _Backend
        if isinstance(store, InMemoryCheckpointStore):
            backend = _Memory(_MEMORY.setdefault(store, {}))
        elif isinstance(store, SQLiteCheckpointStore):
            if store.path in ("", ":memory:"):
                raise CheckpointArgumentError(
                    "CallResults needs a SQLite store on a file (an in-memory SQLite database "
                    "cannot be shared with a second connection); give the store a path."
                )
            backend = _SQLite(store.path)
        elif isinstance(store, PostgresCheckpointStore):
            backend = _Postgres(store.dsn)
        else:
            raise CheckpointArgumentError(
                f"CallResults keeps its table beside an InMemoryCheckpointStore, "
                f"SQLiteCheckpointStore or PostgresCheckpointStore, not {a(type(store).__name__)}."
            )
        self._backend = backend
        self._store = store

    def __repr__(self) -> str:
        return f"CallResults({self._store!r})"

    async def get(self, key: str) -> CallRecord | None:
        """What is recorded under ``key``, if anything."""
        return await self._backend.get(_check_key(key))

    async def start(self, key: str) -> None:
        """Record that an attempt of the call ``key`` begins (kept if already there)."""
        await self._backend.start(_check_key(key), time.time())

    async def record(self, key: str, result: Any) -> Any:
        """Record the call ``key`` as done with ``result`` (JSON); return the recorded
        result: ``result``, or the one recorded first if another attempt finished first.

        Raises:
            CheckpointArgumentError: If ``result`` is not JSON-serialisable.
        """
        key = _check_key(key)
        try:
            text = json.dumps(result)
        except (TypeError, ValueError) as exc:
            raise CheckpointArgumentError(
                f"The result of call `{key}` cannot be recorded: it must be JSON-serialisable "
                f"({exc}); return a string, number, list or dict (the call's effect did happen)."
            ) from exc
        await self._backend.finish(key, text, time.time())
        stored = await self._backend.get(key)
        return stored.result if stored is not None else result

    async def forget(self, key: str) -> None:
        """Remove ``key`` (the call will act again)."""
        await self._backend.forget(_check_key(key))

    async def once(
        self,
        key: str,
        action: Callable[[], Any],
        *,
        lookup: Callable[[], Any] | None = None,
    ) -> Any:
        """Run ``action`` once per ``key``; return its (recorded) result.

        - ``key`` done: return the recorded result; ``action`` does not run.
        - ``key`` started but not done (an earlier attempt was interrupted, maybe after it
          acted): call ``lookup()`` (if given); a result other than None means the effect
          happened: it is recorded and returned. Otherwise ``action`` runs again.
        - else: record "started", run ``action``, record its result, return it.

        ``action`` and ``lookup`` may be plain or async functions (of no arguments).
        The result must be JSON-serialisable (it is stored as JSON and comes back as
        JSON: a tuple comes back as a list).

        Raises:
            CheckpointArgumentError: If the result is not JSON-serialisable.
            CheckpointError: If the table cannot be read or written.
        """
        key = _check_key(key)
        found = await self._backend.get(key)
        if found is not None and found.state == "done":
            return found.result
        if found is not None and lookup is not None:
            happened = await _call(lookup)
            if happened is not None:
                return await self.record(key, happened)
        if found is None:
            await self._backend.start(key, time.time())
        result = await _call(action)
        return await self.record(key, result)

    async def close(self) -> None:
        """Close the table's own connection (the store is not closed)."""
        await self._backend.close()


async def _call(function: Callable[[], Any]) -> Any:
    value = function()
    if inspect.isawaitable(value):
        value = await value
    return value


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise CheckpointArgumentError(
            f"A call result's key must be a non-empty string (flowlib.tools.call_key()), "
            f"not {key!r}."
        )
    return key
