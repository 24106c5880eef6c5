"""The store for many machines: PostgreSQL through psycopg 3 (async, pooled)."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ..errors import CheckpointArgumentError, CheckpointError, MissingExtraError
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
    Dialect,
    SQLListing,
    check_consistent,
    check_last,
    check_snapshot_every,
    dump,
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
    check_owner,
    check_upto,
    closed_error,
    conflict_error,
    first_run,
    lease_lost,
    run_exists,
    unknown_run,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresCheckpointStore"]

_log = logging.getLogger("flowlib.checkpoint")

_INSERT_RECORD = f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})"
_INSERT_MESSAGE = "INSERT INTO flowlib_messages VALUES (%s, %s, %s, %s, %s)"
_DIALECT = Dialect(text="TEXT", real="DOUBLE PRECISION", bigint="BIGINT", without_rowid="")
# One statement, so one round trip and one implicit transaction: advance the run only if
# its last checkpoint is `id - 1` (and, given a lease owner, only while that owner holds
# an unexpired lease), and insert the record and its messages only if it was advanced.
# Under concurrency PostgreSQL re-checks `last_checkpoint` on the row version a competing
# writer just committed, so exactly one writer advances each id; the lease row is locked
# (FOR SHARE) so a take-over waits for the append, or the append sees the take-over.
_APPEND = """
WITH held AS (
    SELECT 1 FROM flowlib_leases
    WHERE %(owner)s::text IS NOT NULL AND run_id = %(run_id)s AND owner = %(owner)s::text
        AND expires_at > %(now)s
    FOR SHARE
), advanced AS (
    UPDATE flowlib_runs
    SET status = %(status)s, turns = %(turn)s, stop_reason = %(stop_reason)s,
        last_checkpoint = %(checkpoint_id)s, updated_at = %(created_at)s,
        state_checksum = %(state_checksum)s
    WHERE run_id = %(run_id)s AND last_checkpoint = %(checkpoint_id)s - 1
        AND (%(owner)s::text IS NULL OR EXISTS (SELECT 1 FROM held))
    RETURNING run_id
), record AS (
    INSERT INTO flowlib_records (RECORD_COLUMNS)
    SELECT run_id, %(checkpoint_id)s, %(kind)s::text, %(turn)s, %(node)s::text,
        %(stop_reason)s::text, %(created_at)s, %(message_count)s, %(bookkeeping)s::text,
        %(participants)s::text, %(checksum)s::text
    FROM advanced
), messages AS (
    INSERT INTO flowlib_messages (run_id, checkpoint_id, position, node, body)
    SELECT advanced.run_id, %(checkpoint_id)s, m.position - 1, m.node, m.body
    FROM advanced, unnest(%(nodes)s::text[], %(bodies)s::text[]) WITH ORDINALITY
        AS m(node, body, position)
)
SELECT count(*) FROM advanced
""".replace("RECORD_COLUMNS", RECORD_COLUMNS)
_SCHEMA_LOCK = 0x666C6F776C6962  # pg_advisory_xact_lock key: two processes creating tables
# One conditional write: insert the lease, or take it over if it is the owner's own or
# expired; a row comes back only if it was granted.
_ACQUIRE = """
INSERT INTO flowlib_leases AS held (run_id, owner, expires_at, checksum) VALUES (%s, %s, %s, %s)
ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,
    checksum = excluded.checksum
WHERE held.owner = excluded.owner OR held.expires_at <= %s
RETURNING owner
"""


class PostgresCheckpointStore(SQLListing):
    """Checkpoints in PostgreSQL, shared by processes on many machines.

    Connections come from a ``psycopg_pool.AsyncConnectionPool`` opened on first use
    (tables are created then if missing). Every write is one transaction; ``append``
    advances the run with a conditional ``UPDATE`` (``last_checkpoint = id - 1``), so of
    two writers on one run exactly one wins and the other gets ``CheckpointError``.

    Needs the ``postgres`` extra: ``pip install 'flowlib[postgres]'``.

    Args:
        dsn: A libpq connection string or URL (``postgresql://user@host:5432/db``).
        min_size: Connections the pool keeps open.
        max_size: Most connections the pool opens (concurrent calls beyond wait).
        connect_timeout: Seconds to wait for a connection (an unreachable server fails
            after this long, with one error).
        snapshot_every: Every this many checkpoints of a run, the store also keeps a
            snapshot of the run's whole state (the newest one only), so ``load`` reads
            the snapshot and the records after it, whatever the run's length; 0: none.
        create: Whether a database without flowlib's tables gets them; False (what
            read-only commands use): the first call raises ``CheckpointError`` saying
            there is no store there, and nothing is created.

    Tables written by an older flowlib are upgraded to this version's when the store is
    first used; tables of a newer flowlib are refused (``CheckpointError``).
    """

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 5.0,
        snapshot_every: int = SNAPSHOT_EVERY,
        create: bool = True,
    ) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise CheckpointArgumentError(
                f"`dsn` must be a PostgreSQL connection string, got {dsn!r}."
            )
        if (
            type(min_size) is not int
            or type(max_size) is not int
            or not 0 <= min_size <= max_size
            or max_size < 1
        ):
            raise CheckpointArgumentError(
                f"Need 0 <= `min_size` <= `max_size` and `max_size` >= 1, got {min_size!r} "
                f"and {max_size!r}."
            )
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError(
                "PostgresCheckpointStore needs psycopg 3 and psycopg-pool: "
                "pip install 'flowlib[postgres]'."
            ) from exc
        self.dsn = dsn
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = connect_timeout
        self._create = create
        self._every = check_snapshot_every(snapshot_every)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False

    _param = "%s"

    def __repr__(self) -> str:
        return f"PostgresCheckpointStore({_redact(self.dsn)!r})"

    @property
    def url(self) -> str:
        """The URL that opens this store in another process: the DSN, as a
        ``postgresql://`` URL (a ``key=value`` DSN is written as URL parameters)."""
        if self.dsn.lower().startswith(("postgresql://", "postgres://")):
            return self.dsn
        from urllib.parse import urlencode

        from psycopg.conninfo import conninfo_to_dict

        return "postgresql://?" + urlencode(
            {key: str(value) for key, value in conninfo_to_dict(self.dsn).items()}
        )

    # -- plumbing ---------------------------------------------------------------------

    async def _open(self) -> AsyncConnectionPool[Any]:
        from psycopg_pool import AsyncConnectionPool

        if self._closed:
            raise closed_error(self)
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                await self._probe()
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self.dsn,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    kwargs={"autocommit": True},
                    open=False,
                )
                try:
                    await pool.open(wait=True, timeout=self._timeout)
                    async with pool.connection() as conn, conn.transaction():
                        await self._prepare(conn)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def _probe(self) -> None:
        """One connection before the pool: an unreachable server, a wrong password or
        database fails here within ``connect_timeout``, as one error (a pool would
        retry in the background and log a warning per attempt until its timeout)."""
        import psycopg

        try:
            conn = await asyncio.wait_for(
                psycopg.AsyncConnection.connect(
                    self.dsn, autocommit=True, connect_timeout=max(1, math.ceil(self._timeout))
                ),
                self._timeout,
            )
        except TimeoutError as exc:
            raise CheckpointError(
                f"PostgreSQL store `{_redact(self.dsn)}`: no connection within "
                f"{self._timeout:g} s. Check that the server is running and reachable "
                "(host, port, firewall)."
            ) from exc
        except psycopg.Error as exc:
            raise _wrapped(self.dsn, exc) from exc
        await conn.close()

    async def _prepare(self, conn: AsyncConnection[Any]) -> None:
        """Create or upgrade the tables (under a lock: several processes may open a new
        database at once)."""
        version = await _schema_version(conn, self.dsn)
        if version == SCHEMA_VERSION:
            return
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        version = await _schema_version(conn, self.dsn)
        if version is None and not self._create:
            raise CheckpointError(
                f"No checkpoint store in PostgreSQL `{_redact(self.dsn)}`: the database "
                "(in its search_path) has no flowlib tables. Check the DSN; nothing was "
                "created."
            )
        for statement in upgrade(version, _DIALECT):
            await conn.execute(statement)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection in autocommit mode: each statement is its own transaction."""
        import psycopg

        try:
            pool = await self._open()
            async with pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise _wrapped(self.dsn, exc) from exc

    @asynccontextmanager
    async def _transaction(self, *, read_only: bool = False) -> AsyncIterator[AsyncConnection[Any]]:
        import psycopg

        try:
            pool = await self._open()
            async with pool.connection() as conn, conn.transaction():
                if read_only:
                    await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield conn
        except psycopg.Error as exc:
            raise _wrapped(self.dsn, exc) from exc

    # -- the protocol ------------------------------------------------------------------

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        """Store a new run (with its first record in the same transaction, when given).
        Raises ``CheckpointError`` if ``run.run_id`` exists."""
        check_first(run, first)
        async with self._transaction() as conn:
            cur = await conn.execute(
                f"INSERT INTO flowlib_runs ({RUN_COLUMNS}) VALUES ({', '.join(['%s'] * 15)}) "
                "ON CONFLICT (run_id) DO NOTHING",
                run_row(first_run(run, first)),
            )
            if cur.rowcount != 1:
                raise run_exists(run.run_id)
            if first is not None:
                await conn.execute(_INSERT_RECORD, record_row(first))
                async with conn.cursor() as cursor:
                    await cursor.executemany(_INSERT_MESSAGE, message_rows(first))

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        async with self._transaction() as conn:
            return await _get_run(conn, run_id)

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        """Add ``record`` as the run's next checkpoint and update the run, atomically
        (with ``lease_owner``: only while that owner holds an unexpired lease)."""
        if lease_owner is not None:
            check_owner(lease_owner)
        row = record_row(record)
        params = {
            "run_id": record.run_id,
            "checkpoint_id": record.checkpoint_id,
            "kind": record.kind,
            "turn": record.turn,
            "node": record.node,
            "stop_reason": record.stop_reason,
            "created_at": record.created_at,
            "message_count": row[7],
            "bookkeeping": row[8],
            "participants": row[9],
            "checksum": row[10],
            "status": status,
            "state_checksum": state_checksum(
                record.run_id,
                status,
                record.created_at,
                record.checkpoint_id,
                record.turn,
                record.stop_reason,
            ),
            "nodes": list(record.message_nodes),
            "bodies": [dump(message) for message in record.messages],
            "owner": lease_owner,
            "now": time.time(),
        }
        async with self._connection() as conn:
            cur = await conn.execute(_APPEND, params)
            advanced = await cur.fetchone()
            if advanced is None or advanced[0] != 1:
                run = await _get_run(conn, record.run_id)
                if run is None:
                    raise unknown_run(record.run_id)
                if lease_owner is not None:
                    held = await _get_lease(conn, record.run_id)
                    check_lease_held(record.run_id, lease_owner, held, now=time.time())
                raise conflict_error(run, record)
        if self._every and record.checkpoint_id % self._every == 0:
            await self._snapshot(record.run_id, record.checkpoint_id)

    async def _snapshot(self, run_id: str, checkpoint_id: int) -> None:
        """Keep the run's state at ``checkpoint_id`` as its snapshot (after the append
        committed: a snapshot that fails only makes the next ``load`` read more), unless
        the records since the last snapshot are too few bytes yet (``SNAPSHOT_SHARE``)."""
        try:
            async with self._transaction() as conn:
                cur = await conn.execute(SNAPSHOT_DUE.format(p="%s"), (run_id,))
                if not snapshot_due(await cur.fetchone()):
                    return
                folded = await _load(conn, run_id, checkpoint_id)
                await conn.execute(
                    "INSERT INTO flowlib_snapshots (run_id, checkpoint_id, body) "
                    "VALUES (%s, %s, %s) ON CONFLICT (run_id, checkpoint_id) DO NOTHING",
                    (run_id, checkpoint_id, snapshot_body(folded)),
                )
                await conn.execute(
                    "DELETE FROM flowlib_snapshots WHERE run_id = %s AND checkpoint_id < %s",
                    (run_id, checkpoint_id),
                )
        except CheckpointError as exc:
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
        async with self._transaction(read_only=True) as conn:
            return await _load(conn, run_id, upto)

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Take the run's lease (see the protocol): one conditional write."""
        expires_at = check_lease_args(run_id, owner, ttl)
        async with self._connection() as conn:
            now = time.time()
            sealed = lease_checksum(run_id, owner, expires_at)
            cur = await conn.execute(_ACQUIRE, (run_id, owner, expires_at, sealed, now))
            if await cur.fetchone() is None:
                held = await _get_lease(conn, run_id)
                if held is None:  # released between the two statements: ask again
                    return await self.acquire_lease(run_id, owner, ttl=ttl)
                check_acquire(run_id, owner, held, now=now)
        return Lease(run_id=run_id, owner=owner, expires_at=expires_at)

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Extend ``owner``'s lease (see the protocol): one conditional write."""
        expires_at = check_lease_args(run_id, owner, ttl)
        async with self._connection() as conn:
            cur = await conn.execute(
                "UPDATE flowlib_leases SET expires_at = %s, checksum = %s "
                "WHERE run_id = %s AND owner = %s",
                (expires_at, lease_checksum(run_id, owner, expires_at), run_id, owner),
            )
            if cur.rowcount != 1:
                raise lease_lost(run_id, owner, await _get_lease(conn, run_id), now=time.time())
        return Lease(run_id=run_id, owner=owner, expires_at=expires_at)

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op unless ``owner`` holds it)."""
        check_owner(owner)
        async with self._connection() as conn:
            await conn.execute(
                "DELETE FROM flowlib_leases WHERE run_id = %s AND owner = %s", (run_id, owner)
            )

    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's lease (expired or not), or None."""
        async with self._connection() as conn:
            return await _get_lease(conn, run_id)

    async def records(self, run_id: str, *, upto: int | None = None) -> list[CheckpointRecord]:
        """The run's records in order, up to and including ``upto`` (default: all)."""
        async with self._transaction(read_only=True) as conn:
            return await _read_records(conn, run_id, upto)

    async def _select(self, sql: str, params: Sequence[object]) -> list[Sequence[Any]]:
        async with self._transaction() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def history(self, run_id: str) -> list[CheckpointInfo]:
        """The run's checkpoints, oldest first."""
        async with self._transaction(read_only=True) as conn:
            if await _get_run(conn, run_id) is None:
                raise unknown_run(run_id)
            cur = await conn.execute(
                f"SELECT {INFO_COLUMNS} FROM flowlib_records WHERE run_id = %s "
                "ORDER BY checkpoint_id",
                (run_id,),
            )
            return [info_from_row(row, run_id) for row in await cur.fetchall()]

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Fold all but the newest ``keep_last`` records into one ``base`` record; returns
        how many records were removed."""
        keep = check_keep_last(keep_last)
        async with self._transaction() as conn:
            run = await _get_run(conn, run_id, lock=True)
            if run is None:
                raise unknown_run(run_id)
            cur = await conn.execute(
                "SELECT checkpoint_id FROM flowlib_records WHERE run_id = %s "
                "ORDER BY checkpoint_id",
                (run_id,),
            )
            ids = [row[0] for row in await cur.fetchall()]
            cut = len(ids) - keep
            if cut <= 1:
                return 0
            cut_id = ids[cut - 1]
            old = await _read_records(conn, run_id, cut_id, run=run)
            base = base_record(fold(old), created_at=old[-1].created_at)
            for table in ("flowlib_messages", "flowlib_records", "flowlib_snapshots"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE run_id = %s AND checkpoint_id <= %s",
                    (run_id, cut_id),
                )
            await conn.execute(_INSERT_RECORD, record_row(base))
            async with conn.cursor() as cursor:
                await cursor.executemany(_INSERT_MESSAGE, message_rows(base))
            return cut - 1

    async def delete(self, run_id: str) -> None:
        """Remove the run and its records (no error if unknown)."""
        async with self._transaction() as conn:
            for table in RUN_TABLES:
                await conn.execute(f"DELETE FROM {table} WHERE run_id = %s", (run_id,))

    async def close(self) -> None:
        """Close the pool; the store cannot be used afterwards."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


async def _get_run(
    conn: AsyncConnection[Any], run_id: str, *, lock: bool = False
) -> RunRecord | None:
    cur = await conn.execute(
        f"{RUN_SELECT} WHERE r.run_id = %s{' FOR UPDATE OF r' if lock else ''}", (run_id,)
    )
    row = await cur.fetchone()
    return None if row is None else run_from_row(row)


async def _get_lease(conn: AsyncConnection[Any], run_id: str) -> Lease | None:
    cur = await conn.execute(
        "SELECT owner, expires_at, checksum FROM flowlib_leases WHERE run_id = %s", (run_id,)
    )
    return lease_from_row(run_id, await cur.fetchone())


async def _schema_version(conn: AsyncConnection[Any], dsn: str) -> int | None:
    """The store's schema version (None: no flowlib tables yet)."""
    # A query of the catalog, not to_regclass(): it sees tables another process created
    # while this one waited for the schema lock (to_regclass may use an older catalog
    # snapshot, and CREATE TABLE then fails on the table that exists).
    cur = await conn.execute(
        "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
        "AND tablename IN ('flowlib_meta', 'flowlib_runs')"
    )
    tables = {row[0] for row in await cur.fetchall()}
    has_meta, has_runs = "flowlib_meta" in tables, "flowlib_runs" in tables
    if has_meta:
        cur = await conn.execute("SELECT value FROM flowlib_meta WHERE key = 'schema_version'")
        found_row = await cur.fetchone()
        found = None if found_row is None else found_row[0]
        if not isinstance(found, str) or not found.isdigit() or int(found) > SCHEMA_VERSION:
            raise newer_schema(f"`{_redact(dsn)}`", found)
        return int(found)
    return 1 if has_runs else None


async def _read_records(
    conn: AsyncConnection[Any], run_id: str, upto: int | None, *, run: RunRecord | None = None
) -> list[CheckpointRecord]:
    """The run's records up to ``upto`` (default: all)."""
    run = run or await _get_run(conn, run_id)
    if run is None:
        raise unknown_run(run_id)
    return records_from_rows(*await _record_rows(conn, run, upto, 0))


async def _record_rows(
    conn: AsyncConnection[Any], run: RunRecord, upto: int | None, after: int
) -> tuple[list[Any], list[Any]]:
    """The rows of the run's records after checkpoint ``after`` up to ``upto`` (default:
    all), and of their messages (see ``records_from_rows``)."""
    upto = await _upto(conn, run, upto)
    cur = await conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM flowlib_records WHERE run_id = %s "
        "AND checkpoint_id > %s AND checkpoint_id <= %s ORDER BY checkpoint_id",
        (run.run_id, after, upto),
    )
    rows = await cur.fetchall()
    cur = await conn.execute(
        "SELECT checkpoint_id, node, body FROM flowlib_messages WHERE run_id = %s "
        "AND checkpoint_id > %s AND checkpoint_id <= %s ORDER BY checkpoint_id, position",
        (run.run_id, after, upto),
    )
    return rows, await cur.fetchall()


async def _upto(conn: AsyncConnection[Any], run: RunRecord, upto: int | None) -> int:
    """``upto``, checked against the run's checkpoints (default: the last)."""
    if upto is None:
        return run.last_checkpoint
    cur = await conn.execute(
        "SELECT min(checkpoint_id) FROM flowlib_records WHERE run_id = %s", (run.run_id,)
    )
    first = await cur.fetchone()
    check_upto(run.run_id, (first[0] if first else None) or 0, run.last_checkpoint, upto)
    return upto


async def _load(conn: AsyncConnection[Any], run_id: str, upto: int | None) -> FoldedRun:
    run = await _get_run(conn, run_id)
    if run is None:
        raise unknown_run(run_id)
    cur = await conn.execute(
        "SELECT max(checkpoint_id) FROM flowlib_records WHERE run_id = %s", (run_id,)
    )
    found = await cur.fetchone()
    newest = int((found[0] if found else 0) or 0)
    check_last(run, newest)
    upto = await _upto(conn, run, upto)
    cur = await conn.execute(
        "SELECT checkpoint_id, body FROM flowlib_snapshots WHERE run_id = %s "
        "AND checkpoint_id <= %s ORDER BY checkpoint_id DESC LIMIT 1",
        (run_id, upto),
    )
    row = await cur.fetchone()
    start = None if row is None else snapshot_from_body(row[1], run_id, row[0])
    after = 0 if start is None else start.last_checkpoint
    records = records_to_fold(*await _record_rows(conn, run, upto, after))
    folded = fold(records, run_id=run_id, start=start)
    check_consistent(run, folded, upto, newest)
    return folded


def _open_postgres(url: str, *, create: bool) -> PostgresCheckpointStore:
    """``postgresql://user:pw@host:5432/db`` (or ``postgres://``): the URL is the DSN."""
    if not url.partition("://")[2]:
        raise CheckpointArgumentError(
            f"Store URL {url!r} names no PostgreSQL server; use e.g. "
            "`postgresql://user@127.0.0.1:5432/db`."
        )
    return PostgresCheckpointStore(url, create=create)


register_store_scheme("postgresql", _open_postgres, example="postgresql://user@host:5432/db")
register_store_scheme("postgres", _open_postgres, example="postgres://user@host:5432/db")


def _wrapped(dsn: str, exc: BaseException) -> CheckpointError:
    import psycopg

    detail = " ".join(_redact(str(exc)).split())  # libpq's message spans lines
    if isinstance(exc, psycopg.OperationalError):
        hint = "Check that the server is running and reachable, and the DSN's user and database."
    elif isinstance(exc, psycopg.errors.InsufficientPrivilege):
        hint = "The DSN's user needs the right to create and write flowlib's tables."
    else:
        hint = "Check the server's log for the statement that failed."
    return CheckpointError(f"PostgreSQL store `{_redact(dsn)}` failed: {detail}. {hint}")


def _redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    import re

    dsn = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)
