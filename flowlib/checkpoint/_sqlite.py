"""The embedded default store: one SQLite file, safe for several processes on a machine."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qsl, urlsplit

from .._english import clause
from ..errors import CheckpointArgumentError, CheckpointError
from ._dumps import materialized
from ._fold import FoldedRun, base_record, fold
from ._sql import (
    INFO_COLUMNS,
    RECORD_COLUMNS,
    RUN_COLUMNS,
    RUN_SELECT,
    RUN_TABLES,
    SCHEMA_VERSION,
    SNAPSHOT_DUE,
    SNAPSHOT_EVERY,
    SNAPSHOT_SELECT,
    Dialect,
    SQLListing,
    check_consistent,
    check_last,
    check_snapshot_every,
    info_from_row,
    lease_checksum,
    lease_from_row,
    message_rows,
    newer_schema,
    record_row,
    records_from_rows,
    records_to_fold,
    run_from_row,
    run_row,
    snapshot_body,
    snapshot_due,
    snapshot_from_body,
    state_checksum,
    upgrade,
)
from ._types import CheckpointInfo, CheckpointRecord, Lease, RunRecord, RunStatus
from ._url import register_store_scheme
from .rules import (
    check_acquire,
    check_first,
    check_keep_last,
    check_lease_args,
    check_lease_held,
    check_next,
    check_owner,
    check_upto,
    closed_error,
    first_run,
    lease_lost,
    run_exists,
    unknown_run,
    updated_run,
)

__all__ = ["SQLiteCheckpointStore"]

_log = logging.getLogger("flowlib.checkpoint")

T = TypeVar("T")

_MMAP_SIZE = 1 << 28
"""Bytes of the file SQLite reads through a memory map (``PRAGMA mmap_size``)."""
_DIALECT = Dialect(text="TEXT", real="REAL", bigint="INTEGER", without_rowid=" WITHOUT ROWID")
# One conditional write: insert the lease, or take it over if it is the owner's own or
# expired; `changes()` says whether it was granted.
_ACQUIRE = (
    "INSERT INTO flowlib_leases (run_id, owner, expires_at, checksum) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, "
    "checksum = excluded.checksum "
    "WHERE flowlib_leases.owner = excluded.owner OR flowlib_leases.expires_at <= ?"
)
_UPDATE_RUN = (
    "UPDATE flowlib_runs SET status = ?, turns = ?, stop_reason = ?, last_checkpoint = ?, "
    "updated_at = ?, state_checksum = ? WHERE run_id = ?"
)


class SQLiteCheckpointStore(SQLListing):
    """Checkpoints in one SQLite file (write-ahead log), for one machine.

    Several processes may open the same file: every write is one ``BEGIN IMMEDIATE``
    transaction, so the ``last + 1`` check and the insert are atomic across processes
    (a second writer on a run gets ``CheckpointError``). Within a process the store runs
    sqlite3 on one worker thread of its own, so the event loop never blocks on the disk.

    Args:
        path: The database file (created with its tables if missing), or ``":memory:"``.
        synchronous: ``"NORMAL"`` (default): a committed checkpoint survives the process
            being killed, not a power cut; ``"FULL"``: also a power cut (an fsync per
            checkpoint).
        busy_timeout: Seconds to wait for another process's write lock (also bounds
            the retries of the file's setup when several connections open it at once).
        snapshot_every: Every this many checkpoints of a run, the store also keeps a
            snapshot of the run's whole state (the newest one only), so ``load`` reads
            the snapshot and the records after it, whatever the run's length; 0: none.
        create: Whether a missing file (or one without flowlib's tables) is made into
            an empty store; False (what read-only commands use): the first call raises
            ``CheckpointError`` saying there is no store there, and nothing is created.

    A file written by an older flowlib is upgraded to this version's tables when it is
    first used; one written by a newer flowlib is refused (``CheckpointError``).

    Examples:
        >>> import asyncio
        >>> store = SQLiteCheckpointStore(":memory:")
        >>> asyncio.run(store.list_runs())
        []
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        busy_timeout: float = 30.0,
        snapshot_every: int = SNAPSHOT_EVERY,
        create: bool = True,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise CheckpointArgumentError(
                f"`path` must be a file path or ':memory:', got {type(path).__name__}."
            )
        if synchronous not in ("NORMAL", "FULL"):
            raise CheckpointArgumentError(
                f"`synchronous` must be 'NORMAL' or 'FULL', got {synchronous!r}."
            )
        self.path = os.fspath(path)
        self._synchronous = synchronous
        self._busy_ms = int(busy_timeout * 1000)
        self._create = create
        self._every = check_snapshot_every(snapshot_every)
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="flowlib-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    _param = "?"

    def __repr__(self) -> str:
        return f"SQLiteCheckpointStore({self.path!r})"

    @property
    def url(self) -> str | None:
        """The URL that opens this store in another process (``sqlite:///`` and the
        file's absolute path), or None for ``:memory:`` (it lives in this process)."""
        if self.path in ("", ":memory:"):
            return None
        return "sqlite:///" + os.path.abspath(self.path)

    # -- plumbing ---------------------------------------------------------------------

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise closed_error(self)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run_on_thread, fn)

    def _run_on_thread(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            if self._conn is None:
                if not self._create and not self._exists():
                    raise self._missing()
                self._conn = self._connect()
            return fn(self._conn)
        except sqlite3.Error as exc:
            raise CheckpointError(
                f"SQLite store `{self.path}` failed: {clause(exc)}. {_hint(exc)}"
            ) from exc

    def _exists(self) -> bool:
        return self.path in ("", ":memory:") or os.path.exists(self.path)

    def _missing(self) -> CheckpointError:
        return CheckpointError(
            f"No checkpoint store at `{self.path}`: "
            + (
                "the file does not exist"
                if not self._exists()
                else "the file has no flowlib tables (it is not a flowlib store)"
            )
            + ". Check the path (a relative path is relative to the working directory); "
            "nothing was created."
        )

    def _connect(self) -> sqlite3.Connection:
        """Open the file and make it ready: the busy timeout first, then write-ahead
        logging and the tables, retried while another connection holds the file.

        Several connections may open a new file at once. Switching it to WAL and creating
        the tables both need the write lock, and SQLite does not always wait for it (it
        returns "database is locked" at once where waiting could deadlock), so the setup
        is retried until ``busy_timeout``. Every step is idempotent (WAL is switched on
        only if it is off; ``CREATE ... IF NOT EXISTS`` in one ``BEGIN IMMEDIATE``).
        """
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy_ms / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            # Reads through a memory map: a long run's snapshot (megabytes) is then read
            # without a system call per page (a third of the read time).
            conn.execute(f"PRAGMA mmap_size = {_MMAP_SIZE}")
            deadline = time.monotonic() + self._busy_ms / 1000
            delay = 0.001
            while True:
                try:
                    self._prepare(conn)
                    break
                except sqlite3.OperationalError as exc:
                    if not _busy(exc) or time.monotonic() >= deadline:
                        raise
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        if not self._create and not (
            _has_table(conn, "flowlib_meta") or _has_table(conn, "flowlib_runs")
        ):
            raise self._missing()
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        if str(mode).lower() not in ("wal", "memory"):
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if str(mode).lower() != "wal" and self.path not in ("", ":memory:"):
                raise sqlite3.OperationalError("database is locked (journal_mode not set)")
        if _has_table(conn, "flowlib_meta"):
            row = conn.execute(
                "SELECT value FROM flowlib_meta WHERE key = 'schema_version'"
            ).fetchone()
            if row is not None and row[0] == str(SCHEMA_VERSION):
                return  # the usual case: no write lock needed
        with _transaction(conn):
            version = _schema_version(conn, self.path)
            if version is None and not self._create:
                raise self._missing()
            for statement in upgrade(version, _DIALECT):
                conn.execute(statement)

    # -- the protocol ------------------------------------------------------------------

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        """Store a new run (with its first record in the same transaction, when given).
        Raises ``CheckpointError`` if ``run.run_id`` exists."""
        check_first(run, first)
        row = run_row(first_run(run, first))

        def work(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                if _last(conn, run.run_id) is not None:
                    raise run_exists(run.run_id)
                conn.execute(f"INSERT INTO flowlib_runs ({RUN_COLUMNS}) VALUES ({_q(15)})", row)
                if first is not None:
                    _insert_record(conn, first)

        await self._call(work)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""

        def work(conn: sqlite3.Connection) -> RunRecord | None:
            row = conn.execute(f"{RUN_SELECT} WHERE r.run_id = ?", (run_id,)).fetchone()
            return None if row is None else run_from_row(row)

        return await self._call(work)

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        """Add ``record`` as the run's next checkpoint and update the run, atomically
        (with ``lease_owner``: only while that owner holds an unexpired lease)."""
        row = record_row(record)
        messages = message_rows(record)
        if lease_owner is not None:
            check_owner(lease_owner)

        def work(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                run = _run(conn, record.run_id)
                if lease_owner is not None:
                    held = _lease(conn, record.run_id)
                    check_lease_held(record.run_id, lease_owner, held, now=time.time())
                check_next(run, record)
                conn.execute(
                    f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({_q(11)})", row
                )
                if messages:
                    conn.executemany(
                        "INSERT INTO flowlib_messages VALUES (?, ?, ?, ?, ?)", messages
                    )
                new = updated_run(run, record, status)
                conn.execute(
                    _UPDATE_RUN,
                    (
                        new.status,
                        new.turns,
                        new.stop_reason,
                        new.last_checkpoint,
                        new.updated_at,
                        state_checksum(
                            new.run_id,
                            new.status,
                            new.updated_at,
                            new.last_checkpoint,
                            new.turns,
                            new.stop_reason,
                        ),
                        new.run_id,
                    ),
                )
            if self._every and record.checkpoint_id % self._every == 0:
                self._snapshot(conn, record.run_id, record.checkpoint_id)

        await self._call(work)

    def _snapshot(self, conn: sqlite3.Connection, run_id: str, checkpoint_id: int) -> None:
        """Keep the run's state at ``checkpoint_id`` as its snapshot (after the append
        committed: a snapshot that fails only makes the next ``load`` read more), unless
        the records since the last snapshot are too few bytes yet (``SNAPSHOT_SHARE``)."""
        try:
            with _transaction(conn):
                due = conn.execute(SNAPSHOT_DUE.format(p="?"), (run_id,)).fetchone()
                if not snapshot_due(due):
                    return
                folded = _load(conn, run_id, checkpoint_id)
                conn.execute(
                    "INSERT OR REPLACE INTO flowlib_snapshots (run_id, checkpoint_id, body) "
                    "VALUES (?, ?, ?)",
                    (run_id, checkpoint_id, snapshot_body(folded)),
                )
                conn.execute(
                    "DELETE FROM flowlib_snapshots WHERE run_id = ? AND checkpoint_id < ?",
                    (run_id, checkpoint_id),
                )
        except (sqlite3.Error, CheckpointError) as exc:
            _log.warning("Run `%s`: no snapshot at checkpoint %s: %s", run_id, checkpoint_id, exc)

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """The run's state at checkpoint ``upto`` (default: its last): the newest
        snapshot at or before it, and the records after the snapshot, folded."""

        return materialized(await self.load_to_resume(run_id, upto=upto))

    async def load_to_resume(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """What a team's resume reads: ``load``, except that the thread messages the
        run's snapshot holds stay as their stored JSON text until read (``messages`` is
        then a read-only sequence of dicts that parses each one when first read), so
        the time does not grow with the thread's length."""

        def work(conn: sqlite3.Connection) -> FoldedRun:
            with _transaction(conn, "BEGIN"):
                return _load(conn, run_id, upto)

        return await self._call(work)

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Take the run's lease (see the protocol): one conditional write."""
        expires_at = check_lease_args(run_id, owner, ttl)

        def work(conn: sqlite3.Connection) -> Lease:
            with _transaction(conn):
                now = time.time()
                sealed = lease_checksum(run_id, owner, expires_at)
                granted = conn.execute(_ACQUIRE, (run_id, owner, expires_at, sealed, now)).rowcount
                if granted != 1:  # the conflict was on the row of a live lease
                    check_acquire(run_id, owner, _lease(conn, run_id), now=now)
            return Lease(run_id=run_id, owner=owner, expires_at=expires_at)

        return await self._call(work)

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Extend ``owner``'s lease (see the protocol): one conditional write."""
        expires_at = check_lease_args(run_id, owner, ttl)

        def work(conn: sqlite3.Connection) -> Lease:
            with _transaction(conn):
                renewed = conn.execute(
                    "UPDATE flowlib_leases SET expires_at = ?, checksum = ? "
                    "WHERE run_id = ? AND owner = ?",
                    (expires_at, lease_checksum(run_id, owner, expires_at), run_id, owner),
                ).rowcount
                if renewed != 1:
                    raise lease_lost(run_id, owner, _lease(conn, run_id), now=time.time())
            return Lease(run_id=run_id, owner=owner, expires_at=expires_at)

        return await self._call(work)

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op unless ``owner`` holds it)."""
        check_owner(owner)

        def work(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute(
                    "DELETE FROM flowlib_leases WHERE run_id = ? AND owner = ?", (run_id, owner)
                )

        await self._call(work)

    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's lease (expired or not), or None."""
        return await self._call(lambda conn: _lease(conn, run_id))

    async def records(self, run_id: str, *, upto: int | None = None) -> list[CheckpointRecord]:
        """The run's records in order, up to and including ``upto`` (default: all)."""

        def work(conn: sqlite3.Connection) -> list[CheckpointRecord]:
            with _transaction(conn, "BEGIN"):
                return _read_records(conn, run_id, upto)

        return await self._call(work)

    async def _select(self, sql: str, params: Sequence[object]) -> list[Sequence[Any]]:
        return await self._call(lambda conn: conn.execute(sql, params).fetchall())

    async def history(self, run_id: str) -> list[CheckpointInfo]:
        """The run's checkpoints, oldest first."""

        def work(conn: sqlite3.Connection) -> list[CheckpointInfo]:
            with _transaction(conn, "BEGIN"):
                _run(conn, run_id)
                rows = conn.execute(
                    f"SELECT {INFO_COLUMNS} FROM flowlib_records WHERE run_id = ? "
                    "ORDER BY checkpoint_id",
                    (run_id,),
                ).fetchall()
            return [info_from_row(row, run_id) for row in rows]

        return await self._call(work)

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Fold all but the newest ``keep_last`` records into one ``base`` record; returns
        how many records were removed."""
        keep = check_keep_last(keep_last)

        def work(conn: sqlite3.Connection) -> int:
            with _transaction(conn):
                run = _run(conn, run_id)
                (count,) = conn.execute(
                    "SELECT count(*) FROM flowlib_records WHERE run_id = ?", (run_id,)
                ).fetchone()
                cut = count - keep
                if cut <= 1:
                    return 0
                (cut_id,) = conn.execute(
                    "SELECT checkpoint_id FROM flowlib_records WHERE run_id = ? "
                    "ORDER BY checkpoint_id LIMIT 1 OFFSET ?",
                    (run_id, cut - 1),
                ).fetchone()
                old = _read_records(conn, run_id, cut_id, run=run)
                base = base_record(fold(old), created_at=old[-1].created_at)
                for table in ("flowlib_messages", "flowlib_records", "flowlib_snapshots"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE run_id = ? AND checkpoint_id <= ?",
                        (run_id, cut_id),
                    )
                conn.execute(
                    f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({_q(11)})",
                    record_row(base),
                )
                conn.executemany(
                    "INSERT INTO flowlib_messages VALUES (?, ?, ?, ?, ?)", message_rows(base)
                )
                return int(cut) - 1

        return await self._call(work)

    async def delete(self, run_id: str) -> None:
        """Remove the run and its records (no error if unknown)."""

        def work(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                for table in RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

        await self._call(work)

    async def close(self) -> None:
        """Close the connection; the store cannot be used afterwards."""
        if self._closed:
            return

        def work(conn: sqlite3.Connection) -> None:
            conn.close()

        if self._conn is not None:
            await self._call(work)
            self._conn = None
        self._closed = True
        self._executor.shutdown(wait=False)


class _transaction:
    """``with _transaction(conn):`` runs the block in one transaction (``BEGIN
    IMMEDIATE`` by default: the write lock is taken first, so the reads in the block see
    what the writes are checked against)."""

    def __init__(self, conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> None:
        self._conn = conn
        self._begin = begin

    def __enter__(self) -> None:
        self._conn.execute(self._begin)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
                return
            except BaseException:
                # A failed COMMIT (disk full, I/O error) may leave the transaction open;
                # roll it back so the connection stays usable and nothing is half-kept.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")


_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("not a database", "malformed", "encrypted"),
        "The file is not an SQLite database, or it is damaged: check the path, or "
        "restore the store from a backup.",
    ),
    (
        ("unable to open", "readonly", "read-only"),
        "Check that the file's directory exists and is writable.",
    ),
    (
        ("locked", "busy"),
        "Another process held the database's write lock longer than `busy_timeout`; "
        "retry, or raise `busy_timeout`.",
    ),
    (
        ("no such table", "no such column", "constraint"),
        "The tables do not match flowlib's schema (they were altered, or a row was "
        "edited): restore the store from a backup.",
    ),
    (("disk", "i/o", "full"), "The disk failed or is full; nothing of this call was written."),
)
"""What to do about an SQLite error, by words its message holds (the first match wins)."""


def _hint(exc: sqlite3.Error) -> str:
    """What an SQLite error says about the store, for its message."""
    text = str(exc).lower()
    for words, hint in _HINTS:
        if any(word in text for word in words):
            return hint
    return "Nothing of this call was written."


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def _schema_version(conn: sqlite3.Connection, path: str) -> int | None:
    """The store's schema version (None: no flowlib tables yet)."""
    if _has_table(conn, "flowlib_meta"):
        row = conn.execute("SELECT value FROM flowlib_meta WHERE key = 'schema_version'").fetchone()
        found = None if row is None else row[0]
        if not isinstance(found, str) or not found.isdigit() or int(found) > SCHEMA_VERSION:
            raise newer_schema(f"`{path}`", found)
        return int(found)
    return 1 if _has_table(conn, "flowlib_runs") else None


def _lease(conn: sqlite3.Connection, run_id: str) -> Lease | None:
    row = conn.execute(
        "SELECT owner, expires_at, checksum FROM flowlib_leases WHERE run_id = ?", (run_id,)
    ).fetchone()
    return lease_from_row(run_id, row)


def _insert_record(conn: sqlite3.Connection, record: CheckpointRecord) -> None:
    conn.execute(
        f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({_q(11)})", record_row(record)
    )
    messages = message_rows(record)
    if messages:
        conn.executemany("INSERT INTO flowlib_messages VALUES (?, ?, ?, ?, ?)", messages)


def _q(n: int) -> str:
    return ", ".join("?" * n)


def _last(conn: sqlite3.Connection, run_id: str) -> int | None:
    row = conn.execute(
        "SELECT last_checkpoint FROM flowlib_runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    return None if row is None else int(row[0])


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is SQLite's "database is locked"/"busy" (worth a retry)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _run(conn: sqlite3.Connection, run_id: str) -> RunRecord:
    row = conn.execute(f"{RUN_SELECT} WHERE r.run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise unknown_run(run_id)
    return run_from_row(row)


def _read_records(
    conn: sqlite3.Connection, run_id: str, upto: int | None, *, run: RunRecord | None = None
) -> list[CheckpointRecord]:
    """The run's records up to ``upto`` (default: all)."""
    return records_from_rows(*_record_rows(conn, run or _run(conn, run_id), upto, 0))


def _record_rows(
    conn: sqlite3.Connection, run: RunRecord, upto: int | None, after: int
) -> tuple[list[Any], list[Any]]:
    """The rows of the run's records after checkpoint ``after`` up to ``upto`` (default:
    all), and of their messages (see ``records_from_rows``)."""
    upto = _upto(conn, run, upto)
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM flowlib_records WHERE run_id = ? AND checkpoint_id > ? "
        "AND checkpoint_id <= ? ORDER BY checkpoint_id",
        (run.run_id, after, upto),
    ).fetchall()
    messages = conn.execute(
        "SELECT checkpoint_id, node, body FROM flowlib_messages WHERE run_id = ? AND "
        "checkpoint_id > ? AND checkpoint_id <= ? ORDER BY checkpoint_id, position",
        (run.run_id, after, upto),
    ).fetchall()
    return rows, messages


def _upto(conn: sqlite3.Connection, run: RunRecord, upto: int | None) -> int:
    """``upto``, checked against the run's checkpoints (default: the last)."""
    if upto is None:
        return run.last_checkpoint
    (first,) = conn.execute(
        "SELECT min(checkpoint_id) FROM flowlib_records WHERE run_id = ?", (run.run_id,)
    ).fetchone()
    check_upto(run.run_id, first or 0, run.last_checkpoint, upto)
    return upto


def _load(conn: sqlite3.Connection, run_id: str, upto: int | None) -> FoldedRun:
    run = _run(conn, run_id)
    newest = _newest(conn, run_id)
    check_last(run, newest)
    upto = _upto(conn, run, upto)
    row = conn.execute(SNAPSHOT_SELECT, (run_id, upto)).fetchone()
    start = None if row is None else snapshot_from_body(row[1], run_id, row[0])
    after = 0 if start is None else start.last_checkpoint
    records = records_to_fold(*_record_rows(conn, run, upto, after))
    folded = fold(records, run_id=run_id, start=start)
    check_consistent(run, folded, upto, newest)
    return folded


def _newest(conn: sqlite3.Connection, run_id: str) -> int:
    (newest,) = conn.execute(
        "SELECT max(checkpoint_id) FROM flowlib_records WHERE run_id = ?", (run_id,)
    ).fetchone()
    return int(newest or 0)


def _open_sqlite(url: str, *, create: bool) -> SQLiteCheckpointStore:
    """``sqlite:///runs.db`` (relative), ``sqlite:////abs/runs.db``,
    ``?synchronous=FULL``."""
    parts = urlsplit("sqlite://" + url.partition("://")[2])
    if parts.netloc:
        raise CheckpointArgumentError(
            f"Store URL {url!r} names the host `{parts.netloc}`; a SQLite store is a local "
            "file: `sqlite:///runs.db` (three slashes, relative) or `sqlite:////abs/runs.db`."
        )
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if not path:
        raise CheckpointArgumentError(
            f"Store URL {url!r} names no file; use `sqlite:///runs.db` (relative) or "
            "`sqlite:////abs/path/runs.db`."
        )
    synchronous = "NORMAL"
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key != "synchronous" or value.upper() not in ("NORMAL", "FULL"):
            raise CheckpointArgumentError(
                f"Store URL {url!r}: unknown option `{key}={value}`; the only option is "
                "`synchronous=NORMAL` (the default) or `synchronous=FULL`."
            )
        synchronous = value.upper()
    return SQLiteCheckpointStore(
        path, synchronous="FULL" if synchronous == "FULL" else "NORMAL", create=create
    )


register_store_scheme("sqlite", _open_sqlite, example="sqlite:///runs.db")
