"""The embedded default store: one SQLite file, safe for several processes on a machine."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, TypeVar
from urllib.parse import parse_qsl, urlsplit

from .._english import clause
from ..errors import CheckpointArgumentError, CheckpointError
from ._sql import SCHEMA_VERSION, SNAPSHOT_EVERY, SQLITE_SNAPSHOT_SELECT, Dialect, upgrade
from ._sql_store import Access, Plan, SQLStore, drive, schema_version
from ._url import register_store_scheme
from .rules import closed_error

__all__ = ["SQLiteCheckpointStore"]

_log = logging.getLogger("flowlib.checkpoint")

T = TypeVar("T")

_MMAP_SIZE = 1 << 28
"""Bytes of the file SQLite reads through a memory map (``PRAGMA mmap_size``)."""
_DIALECT = Dialect(
    text="TEXT",
    real="REAL",
    bigint="INTEGER",
    without_rowid=" WITHOUT ROWID",
    lock_run="",  # a write transaction holds the file's write lock from its start
    snapshot_select=SQLITE_SNAPSHOT_SELECT,
    tables="SELECT name FROM sqlite_master WHERE type = 'table' "
    "AND name IN ('flowlib_meta', 'flowlib_runs')",
)


class SQLiteCheckpointStore(SQLStore):
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
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="flowlib-sqlite")
        self._conn: sqlite3.Connection | None = None
        super().__init__(self.path, _DIALECT, snapshot_every=snapshot_every, create=create)

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

    async def _run(self, plan: Plan[T], access: Access) -> T:
        def work(conn: sqlite3.Connection) -> T:
            if access == "each":
                return drive(conn, plan)
            with _transaction(conn, "BEGIN" if access == "read" else "BEGIN IMMEDIATE"):
                return drive(conn, plan)

        return await self._call(work)

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
            version = drive(conn, schema_version(f"`{self.path}`", _DIALECT.tables))
            if version is None and not self._create:
                raise self._missing()
            for statement in upgrade(version, _DIALECT):
                conn.execute(statement)

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


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is SQLite's "database is locked"/"busy" (worth a retry)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
