"""The SQL stores' protocol, written once: each call is a plan of statements, which the
SQLite store runs on its worker thread and the PostgreSQL store on a pooled connection.

A plan is a generator: it yields a `Statement` (SQL with ``?`` placeholders) and is sent
back its `Answer` (the rows, and how many rows a write changed), so the same code reads
and checks the rows whether the driver is sync (sqlite3, `drive`) or async (psycopg,
`drive_async`, which gives it ``%s`` for ``?``). What else differs between the databases is
data (`Dialect`): the row lock a prune takes, how a snapshot's body is read, and how the
tables are listed.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from abc import abstractmethod
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from ..errors import CheckpointError
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
    Dialect,
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
)
from ._types import CheckpointInfo, CheckpointRecord, Lease, RunRecord, RunStatus
from .rules import (
    RunFilter,
    RunListing,
    check_acquire,
    check_first,
    check_keep_last,
    check_lease_args,
    check_lease_held,
    check_next,
    check_owner,
    check_upto,
    first_run,
    lease_lost,
    run_exists,
    unknown_run,
    updated_run,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "Access",
    "Plan",
    "SQLStore",
    "checked_append",
    "drive",
    "drive_async",
    "schema_version",
]

T = TypeVar("T")

_log = logging.getLogger("flowlib.checkpoint")


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a plan: SQL with ``?`` placeholders and its parameters (with
    ``many``: a list of parameter rows, run as one batch)."""

    sql: str
    params: Sequence[Any] = ()
    many: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """What a statement gave back: its rows, and how many rows it changed (a write)."""

    rows: list[Sequence[Any]]
    count: int


Plan = Generator[Statement, Answer, T]
"""A store call's statements in order, each sent back its `Answer`; returns the result."""

Access = Literal["read", "write", "each"]
"""How a plan runs: ``read``, one consistent read-only transaction; ``write``, one
transaction; ``each``, every statement on its own (a plan whose one write is atomic by
itself, and whose reads only explain a refusal)."""


class Running(Generic[T]):
    """Drives a plan: iterate over it for its statements, give each its `answer`, then
    read `result`.

    ``for statement in run: run.answer(execute(statement))``: the one loop of both
    drivers, whether ``execute`` is sync or awaited."""

    def __init__(self, plan: Plan[T]) -> None:
        self._plan = plan
        self._answer = Answer([], -1)
        self.result: T

    def answer(self, answer: Answer) -> None:
        """The answer to the statement just given."""
        self._answer = answer

    def __iter__(self) -> Iterator[Statement]:
        try:
            statement = next(self._plan)
            while True:
                yield statement
                statement = self._plan.send(self._answer)
        except StopIteration as done:
            self.result = done.value


def drive(conn: sqlite3.Connection, plan: Plan[T]) -> T:
    """Run ``plan`` on a sqlite3 connection (in the thread that owns it)."""
    run = Running(plan)
    for statement in run:
        if statement.many:
            run.answer(Answer([], conn.executemany(statement.sql, statement.params).rowcount))
        else:
            cursor = conn.execute(statement.sql, statement.params)
            run.answer(Answer(cursor.fetchall(), cursor.rowcount))
    return run.result


async def drive_async(conn: AsyncConnection[Any], plan: Plan[T]) -> T:
    """Run ``plan`` on a psycopg connection (whose placeholder is ``%s``)."""
    run = Running(plan)
    for statement in run:
        sql = statement.sql.replace("?", "%s")
        if statement.many:
            async with conn.cursor() as many:
                await many.executemany(sql, statement.params)
            run.answer(Answer([], -1))
        else:
            cursor = await conn.execute(sql, statement.params)
            rows = await cursor.fetchall() if cursor.description is not None else []
            run.answer(Answer(rows, cursor.rowcount))
    return run.result


def _first(answer: Answer) -> Sequence[Any] | None:
    return answer.rows[0] if answer.rows else None


def _read_run(run_id: str, *, lock: str = "") -> Plan[RunRecord | None]:
    """The run with its lease, or None (``lock``: the dialect's row lock, if any)."""
    row = _first((yield Statement(f"{RUN_SELECT} WHERE r.run_id = ?{lock}", (run_id,))))
    return None if row is None else run_from_row(row)


def _existing_run(run_id: str, *, lock: str = "") -> Plan[RunRecord]:
    """The run; raises ``unknown_run`` if there is none."""
    run = yield from _read_run(run_id, lock=lock)
    if run is None:
        raise unknown_run(run_id)
    return run


def _read_lease(run_id: str) -> Plan[Lease | None]:
    """The run's lease (expired or not), or None."""
    sql = "SELECT owner, expires_at, checksum FROM flowlib_leases WHERE run_id = ?"
    return lease_from_row(run_id, _first((yield Statement(sql, (run_id,)))))


def _inserting(record: CheckpointRecord) -> Plan[None]:
    """Insert a record and its messages."""
    yield Statement(
        f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({_marks(11)})",
        record_row(record),
    )
    messages = message_rows(record)
    if messages:
        yield Statement("INSERT INTO flowlib_messages VALUES (?, ?, ?, ?, ?)", messages, many=True)


def _marks(count: int) -> str:
    return ", ".join(["?"] * count)


def schema_version(where: str, tables: str) -> Plan[int | None]:
    """The store's schema version (None: no flowlib tables yet); ``tables``: the
    dialect's query of which of ``flowlib_meta`` and ``flowlib_runs`` exist."""
    found_tables = {row[0] for row in (yield Statement(tables)).rows}
    if "flowlib_meta" in found_tables:
        sql = "SELECT value FROM flowlib_meta WHERE key = 'schema_version'"
        row = _first((yield Statement(sql)))
        found = None if row is None else row[0]
        if not isinstance(found, str) or not found.isdigit() or int(found) > SCHEMA_VERSION:
            raise newer_schema(where, found)
        return int(found)
    return 1 if "flowlib_runs" in found_tables else None


def _upto(run: RunRecord, upto: int | None) -> Plan[int]:
    """``upto``, checked against the run's checkpoints (default: the last)."""
    if upto is None:
        return run.last_checkpoint
    sql = "SELECT min(checkpoint_id) FROM flowlib_records WHERE run_id = ?"
    row = _first((yield Statement(sql, (run.run_id,))))
    check_upto(run.run_id, (row[0] if row else None) or 0, run.last_checkpoint, upto)
    return upto


def _record_rows(
    run: RunRecord, upto: int | None, after: int
) -> Plan[tuple[list[Sequence[Any]], list[Sequence[Any]]]]:
    """The rows of the run's records after checkpoint ``after`` up to ``upto`` (default:
    all), and of their messages (see ``records_from_rows``)."""
    upto = yield from _upto(run, upto)
    span = (run.run_id, after, upto)
    records = yield Statement(
        f"SELECT {RECORD_COLUMNS} FROM flowlib_records WHERE run_id = ? AND checkpoint_id > ? "
        "AND checkpoint_id <= ? ORDER BY checkpoint_id",
        span,
    )
    messages = yield Statement(
        "SELECT checkpoint_id, node, body FROM flowlib_messages WHERE run_id = ? AND "
        "checkpoint_id > ? AND checkpoint_id <= ? ORDER BY checkpoint_id, position",
        span,
    )
    return records.rows, messages.rows


def _read_records(
    run_id: str, upto: int | None, *, run: RunRecord | None = None
) -> Plan[list[CheckpointRecord]]:
    """The run's records up to ``upto`` (default: all)."""
    if run is None:
        run = yield from _existing_run(run_id)
    return records_from_rows(*(yield from _record_rows(run, upto, 0)))


def _loading(run_id: str, upto: int | None, dialect: Dialect) -> Plan[FoldedRun]:
    """The run's state at ``upto``: its newest snapshot at or before it, and the records
    after the snapshot, folded (checked against the run row)."""
    run = yield from _existing_run(run_id)
    sql = "SELECT max(checkpoint_id) FROM flowlib_records WHERE run_id = ?"
    row = _first((yield Statement(sql, (run_id,))))
    newest = int((row[0] if row else 0) or 0)
    check_last(run, newest)
    upto = yield from _upto(run, upto)
    row = _first((yield Statement(dialect.snapshot_select, (run_id, upto))))
    start = None if row is None else snapshot_from_body(row[1], run_id, row[0])
    after = 0 if start is None else start.last_checkpoint
    records = records_to_fold(*(yield from _record_rows(run, upto, after)))
    folded = fold(records, run_id=run_id, start=start)
    check_consistent(run, folded, upto, newest)
    return folded


def _snapshotting(run_id: str, checkpoint_id: int, dialect: Dialect) -> Plan[None]:
    """Keep the run's state at ``checkpoint_id`` as its snapshot, unless the records since
    the last snapshot are too few bytes yet (``SNAPSHOT_SHARE``)."""
    if not snapshot_due(_first((yield Statement(SNAPSHOT_DUE, (run_id,))))):
        return
    folded = yield from _loading(run_id, checkpoint_id, dialect)
    yield Statement(
        "INSERT INTO flowlib_snapshots (run_id, checkpoint_id, body) VALUES (?, ?, ?) "
        "ON CONFLICT (run_id, checkpoint_id) DO NOTHING",
        (run_id, checkpoint_id, snapshot_body(folded)),
    )
    yield Statement(
        "DELETE FROM flowlib_snapshots WHERE run_id = ? AND checkpoint_id < ?",
        (run_id, checkpoint_id),
    )


def checked_append(record: CheckpointRecord, lease_owner: str | None) -> Plan[RunRecord]:
    """The run ``record`` is appended to, once the append's rules hold: the run exists,
    ``lease_owner`` (if given) holds its unexpired lease, and ``record`` is its next
    checkpoint."""
    run = yield from _existing_run(record.run_id)
    if lease_owner is not None:
        held = yield from _read_lease(record.run_id)
        check_lease_held(record.run_id, lease_owner, held, now=time.time())
    check_next(run, record)
    return run


def _appending(record: CheckpointRecord, status: RunStatus, lease_owner: str | None) -> Plan[None]:
    """Check the append's rules, insert the record, advance the run."""
    run = yield from checked_append(record, lease_owner)
    yield from _inserting(record)
    new = updated_run(run, record, status)
    sealed = state_checksum(
        new.run_id, new.status, new.updated_at, new.last_checkpoint, new.turns, new.stop_reason
    )
    changed = (new.status, new.turns, new.stop_reason, new.last_checkpoint, new.updated_at)
    yield Statement(_UPDATE_RUN, (*changed, sealed, new.run_id))


_UPDATE_RUN = (
    "UPDATE flowlib_runs SET status = ?, turns = ?, stop_reason = ?, last_checkpoint = ?, "
    "updated_at = ?, state_checksum = ? WHERE run_id = ?"
)


def _creating(run: RunRecord, first: CheckpointRecord | None) -> Plan[None]:
    created = yield Statement(
        f"INSERT INTO flowlib_runs ({RUN_COLUMNS}) VALUES ({_marks(15)}) "
        "ON CONFLICT (run_id) DO NOTHING",
        run_row(first_run(run, first)),
    )
    if created.count != 1:
        raise run_exists(run.run_id)
    if first is not None:
        yield from _inserting(first)


# One conditional write: insert the lease, or take it over if it is the owner's own or
# expired; it changes a row only if the lease was granted.
_ACQUIRE = (
    "INSERT INTO flowlib_leases (run_id, owner, expires_at, checksum) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, "
    "checksum = excluded.checksum "
    "WHERE flowlib_leases.owner = excluded.owner OR flowlib_leases.expires_at <= ?"
)


def _acquiring(run_id: str, owner: str, expires_at: float) -> Plan[Lease]:
    sealed = lease_checksum(run_id, owner, expires_at)
    while True:
        now = time.time()
        granted = yield Statement(_ACQUIRE, (run_id, owner, expires_at, sealed, now))
        if granted.count == 1:
            break
        held = yield from _read_lease(run_id)
        if held is not None:  # None: released between the two statements; ask again
            check_acquire(run_id, owner, held, now=now)
            break
    return Lease(run_id=run_id, owner=owner, expires_at=expires_at)


def _renewing(run_id: str, owner: str, expires_at: float) -> Plan[Lease]:
    renewed = yield Statement(
        "UPDATE flowlib_leases SET expires_at = ?, checksum = ? WHERE run_id = ? AND owner = ?",
        (expires_at, lease_checksum(run_id, owner, expires_at), run_id, owner),
    )
    if renewed.count != 1:
        held = yield from _read_lease(run_id)
        raise lease_lost(run_id, owner, held, now=time.time())
    return Lease(run_id=run_id, owner=owner, expires_at=expires_at)


def _releasing(run_id: str, owner: str) -> Plan[None]:
    sql = "DELETE FROM flowlib_leases WHERE run_id = ? AND owner = ?"
    yield Statement(sql, (run_id, owner))


def _history(run_id: str) -> Plan[list[CheckpointInfo]]:
    yield from _existing_run(run_id)
    sql = f"SELECT {INFO_COLUMNS} FROM flowlib_records WHERE run_id = ? ORDER BY checkpoint_id"
    return [info_from_row(row, run_id) for row in (yield Statement(sql, (run_id,))).rows]


def _pruning(run_id: str, keep: int, dialect: Dialect) -> Plan[int]:
    run = yield from _existing_run(run_id, lock=dialect.lock_run)
    sql = "SELECT count(*) FROM flowlib_records WHERE run_id = ?"
    count = int((yield Statement(sql, (run_id,))).rows[0][0])
    cut = count - keep
    if cut <= 1:
        return 0
    sql = "SELECT checkpoint_id FROM flowlib_records WHERE run_id = ? ORDER BY checkpoint_id "
    cut_id = (yield Statement(sql + "LIMIT 1 OFFSET ?", (run_id, cut - 1))).rows[0][0]
    old = yield from _read_records(run_id, cut_id, run=run)
    base = base_record(fold(old), created_at=old[-1].created_at)
    for table in ("flowlib_messages", "flowlib_records", "flowlib_snapshots"):
        sql = f"DELETE FROM {table} WHERE run_id = ? AND checkpoint_id <= ?"
        yield Statement(sql, (run_id, cut_id))
    yield from _inserting(base)
    return cut - 1


def _deleting(run_id: str) -> Plan[None]:
    for table in RUN_TABLES:
        yield Statement(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))


def _filter_sql(filters: RunFilter) -> tuple[str, list[object]]:
    """The ``WHERE ... ORDER BY ... LIMIT`` of a filtered listing and its parameters."""
    where: list[str] = []
    params: list[object] = []
    if filters.statuses is not None:
        where.append(f"r.status IN ({', '.join(['?'] * len(filters.statuses))})")
        params.extend(filters.statuses)
    if filters.updated_since is not None:
        where.append("r.updated_at >= ?")
        params.append(filters.updated_since)
    if filters.flow is not None:
        where.append("(r.team_type = ? OR r.graph_signature = ?)")
        params.extend([filters.flow, filters.flow])
    if filters.after is not None:
        where.append("(r.created_at < ? OR (r.created_at = ? AND r.run_id > ?))")
        params.extend([filters.after[0], filters.after[0], filters.after[1]])
    sql = (
        " WHERE " + " AND ".join(where) if where else ""
    ) + " ORDER BY r.created_at DESC, r.run_id"
    if filters.limit is not None:
        sql += " LIMIT ?"
        params.append(filters.limit)
    return sql, params


def _selecting(filters: RunFilter) -> Plan[list[RunRecord]]:
    where, params = _filter_sql(filters)
    return [run_from_row(row) for row in (yield Statement(f"{RUN_SELECT}{where}", params)).rows]


class SQLStore(RunListing):
    """The protocol of a SQL store, written once over plans: the store gives its
    `Dialect`, how it runs a plan (`_run`) and its ``append``."""

    def __init__(self, where: str, dialect: Dialect, *, snapshot_every: int, create: bool) -> None:
        self._where = where
        """The file or server, as messages name it (a DSN without its password)."""
        self._dialect = dialect
        self._every = check_snapshot_every(snapshot_every)
        self._create = create
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where!r})"

    @abstractmethod
    async def _run(self, plan: Plan[T], access: Access) -> T:
        """Run ``plan`` as ``access`` says (raises ``CheckpointError`` like every call)."""

    async def _append(
        self, record: CheckpointRecord, status: RunStatus, lease_owner: str | None
    ) -> None:
        """``append``'s checks and writes, atomically: here, one write transaction, which
        must hold the store's write lock from its start (SQLite's ``BEGIN IMMEDIATE``)."""
        await self._run(_appending(record, status, lease_owner), "write")

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        """Add ``record`` as the run's next checkpoint and update the run, atomically
        (with ``lease_owner``: only while that owner holds an unexpired lease)."""
        if lease_owner is not None:
            check_owner(lease_owner)
        await self._append(record, status, lease_owner)
        if not self._every or record.checkpoint_id % self._every:
            return
        # After the append committed: a snapshot that fails only makes the next `load`
        # read more.
        plan = _snapshotting(record.run_id, record.checkpoint_id, self._dialect)
        try:
            await self._run(plan, "write")
        except CheckpointError as exc:
            _log.warning(
                "Run `%s`: no snapshot at checkpoint %s: %s",
                record.run_id,
                record.checkpoint_id,
                exc,
            )

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        """Store a new run (with its first record in the same transaction, when given).
        Raises ``CheckpointError`` if ``run.run_id`` exists."""
        check_first(run, first)
        await self._run(_creating(run, first), "write")

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        return await self._run(_read_run(run_id), "each")

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """The run's state at checkpoint ``upto`` (default: its last): the newest
        snapshot at or before it, and the records after the snapshot, folded."""
        return materialized(await self.load_to_resume(run_id, upto=upto))

    async def load_to_resume(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """What a team's resume reads: ``load``, except that the thread messages the
        run's snapshot holds stay as their stored JSON text until read (``messages`` is
        then a read-only sequence of dicts that parses each one when first read), so
        the time does not grow with the thread's length."""
        return await self._run(_loading(run_id, upto, self._dialect), "read")

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Take the run's lease (see the protocol): one conditional write."""
        expires_at = check_lease_args(run_id, owner, ttl)
        return await self._run(_acquiring(run_id, owner, expires_at), "each")

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Extend ``owner``'s lease (see the protocol): one conditional write."""
        expires_at = check_lease_args(run_id, owner, ttl)
        return await self._run(_renewing(run_id, owner, expires_at), "each")

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op unless ``owner`` holds it)."""
        check_owner(owner)
        await self._run(_releasing(run_id, owner), "each")

    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's lease (expired or not), or None."""
        return await self._run(_read_lease(run_id), "each")

    async def records(self, run_id: str, *, upto: int | None = None) -> list[CheckpointRecord]:
        """The run's records in order, up to and including ``upto`` (default: all)."""
        return await self._run(_read_records(run_id, upto), "read")

    async def select_runs(self, filters: RunFilter) -> list[RunRecord]:
        """The runs ``filters`` keeps, selected by the database (see ``RunListing``)."""
        return await self._run(_selecting(filters), "each")

    async def history(self, run_id: str) -> list[CheckpointInfo]:
        """The run's checkpoints, oldest first."""
        return await self._run(_history(run_id), "read")

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Fold all but the newest ``keep_last`` records into one ``base`` record; returns
        how many records were removed."""
        keep = check_keep_last(keep_last)
        return await self._run(_pruning(run_id, keep, self._dialect), "write")

    async def delete(self, run_id: str) -> None:
        """Remove the run and its records (no error if unknown)."""
        await self._run(_deleting(run_id), "write")
