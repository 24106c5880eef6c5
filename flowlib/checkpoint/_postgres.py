"""The store for many machines: PostgreSQL through psycopg 3 (async, pooled)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import CheckpointArgumentError, CheckpointError, MissingExtraError
from ._sql import (
    RECORD_COLUMNS,
    SCHEMA_VERSION,
    SNAPSHOT_EVERY,
    Dialect,
    dump,
    record_row,
    state_checksum,
    upgrade,
)
from ._sql_store import Access, Plan, SQLStore, checked_append, drive_async, schema_version
from ._types import CheckpointRecord, RunStatus
from ._url import register_store_scheme
from .rules import closed_error, conflict_error

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresCheckpointStore"]

T = TypeVar("T")

_DIALECT = Dialect(
    text="TEXT",
    real="DOUBLE PRECISION",
    bigint="BIGINT",
    without_rowid="",
    # A prune locks its run's row: an append waits for it, or it for the append.
    lock_run=" FOR UPDATE OF r",
    snapshot_select="SELECT checkpoint_id, body FROM flowlib_snapshots WHERE run_id = ? "
    "AND checkpoint_id <= ? ORDER BY checkpoint_id DESC LIMIT 1",
    # A query of the catalog, not to_regclass(): it sees tables another process created
    # while this one waited for the schema lock (to_regclass may use an older catalog
    # snapshot, and CREATE TABLE then fails on the table that exists).
    tables="SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
    "AND tablename IN ('flowlib_meta', 'flowlib_runs')",
)
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


class PostgresCheckpointStore(SQLStore):
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
        self._pool: AsyncConnectionPool[Any] | None = None
        self._opening: asyncio.Lock | None = None
        super().__init__(_redact(dsn), _DIALECT, snapshot_every=snapshot_every, create=create)

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
        where = f"`{self._where}`"
        version = await drive_async(conn, schema_version(where, _DIALECT.tables))
        if version == SCHEMA_VERSION:
            return
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        version = await drive_async(conn, schema_version(where, _DIALECT.tables))
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

    async def _run(self, plan: Plan[T], access: Access) -> T:
        if access == "each":
            async with self._connection() as conn:
                return await drive_async(conn, plan)
        async with self._transaction(read_only=access == "read") as conn:
            return await drive_async(conn, plan)

    # -- the protocol (the rest is SQLStore's) -------------------------------------------

    async def _append(
        self, record: CheckpointRecord, status: RunStatus, lease_owner: str | None
    ) -> None:
        """One conditional statement (``_APPEND``); when it changes nothing, the rules
        say why."""
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
                run = await drive_async(conn, checked_append(record, lease_owner))
                raise conflict_error(run, record)  # it held only once another writer had won

    async def close(self) -> None:
        """Close the pool; the store cannot be used afterwards."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


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
