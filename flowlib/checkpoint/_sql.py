"""What the SQL stores share: the tables, and rows to and from the record types.

Payloads are JSON made by pydantic (``pydantic_core.to_json``), never pickle. A run is
one row of ``runs``; each checkpoint is one row of ``records`` (its bookkeeping and
participant patches) plus one row of ``messages`` per new message. Rows are keyed by
``(run_id, checkpoint_id[, position])``, so an append inserts a few rows at the end of
the run's key range and updates one ``runs`` row: the cost and the bytes written do not
depend on how long the run already is.
"""

from __future__ import annotations

import contextlib
import hashlib
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError
from pydantic_core import from_json, to_json

from ..errors import CheckpointArgumentError, CheckpointError
from ._dumps import MessageDumps
from ._fold import FoldedRun, FoldRow
from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    Lease,
    RunRecord,
    RunStatus,
    StepKind,
)

__all__ = [
    "INFO_COLUMNS",
    "RECORD_COLUMNS",
    "RUN_COLUMNS",
    "RUN_SELECT",
    "RUN_TABLES",
    "SCHEMA_VERSION",
    "SNAPSHOT_DUE",
    "SNAPSHOT_EVERY",
    "SQLITE_SNAPSHOT_SELECT",
    "Dialect",
    "check_consistent",
    "check_last",
    "check_snapshot_every",
    "corrupt",
    "dump",
    "info_from_row",
    "lease_checksum",
    "lease_from_row",
    "load",
    "message_rows",
    "newer_schema",
    "record_row",
    "records_from_rows",
    "records_to_fold",
    "run_from_row",
    "run_row",
    "snapshot_body",
    "snapshot_due",
    "snapshot_from_body",
    "state_checksum",
    "upgrade",
]

RUN_COLUMNS = (
    "run_id, team_type, graph_signature, graph, state_version, status, created_at, "
    "updated_at, last_checkpoint, turns, stop_reason, forked_from, metadata, checksum, "
    "state_checksum"
)
_RUN_STATIC = (0, 1, 2, 3, 4, 6, 11, 12)
"""The columns of a run row that never change after ``create_run`` (its checksum's)."""
RECORD_COLUMNS = (
    "run_id, checkpoint_id, kind, turn, node, stop_reason, created_at, message_count, "
    "bookkeeping, participants, checksum"
)
INFO_COLUMNS = "checkpoint_id, kind, turn, node, stop_reason, created_at, message_count"
_RUN_FIELD_NAMES = tuple(column.strip() for column in RUN_COLUMNS.split(","))[:-2]
"""``RUN_COLUMNS`` as ``RunRecord`` fields (the two checksums are not fields)."""
_INFO_FIELD_NAMES = tuple(column.strip() for column in INFO_COLUMNS.split(","))
RUN_SELECT = (
    "SELECT "
    + ", ".join(f"r.{column.strip()}" for column in RUN_COLUMNS.split(","))
    + ", l.owner, l.expires_at, l.checksum FROM flowlib_runs r "
    "LEFT JOIN flowlib_leases l ON l.run_id = r.run_id"
)
"""A run with its lease: ``RUN_COLUMNS`` then the lease's owner, expiry and checksum."""
RUN_TABLES = (
    "flowlib_messages",
    "flowlib_records",
    "flowlib_snapshots",
    "flowlib_leases",
    "flowlib_runs",
)
"""The tables holding a run's rows, in the order ``delete`` empties them."""

SCHEMA_VERSION = 3
"""The version of the tables this code writes, kept in ``flowlib_meta``.

1. ``flowlib_runs``, ``flowlib_records``, ``flowlib_messages`` (before versions were
   kept: a store with ``flowlib_runs`` and no ``flowlib_meta`` is version 1).
2. Adds ``flowlib_meta``, ``flowlib_leases``, ``flowlib_snapshots``, a ``checksum``
   column on ``flowlib_runs`` and ``flowlib_records``, and an index on
   ``flowlib_runs.updated_at``.
3. Adds ``flowlib_runs.state_checksum`` (the columns every append changes) and
   ``flowlib_leases.checksum``, so an edit of a run's status, update time or lease owner
   to another valid value is detected too.
"""


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL databases, as data: the type names of the tables,
    the row lock a prune takes on its run (PostgreSQL), the query of a run's newest
    snapshot at or before a checkpoint (two ``?``), and the query of which of
    ``flowlib_meta`` and ``flowlib_runs`` exist."""

    text: str
    real: str
    bigint: str
    without_rowid: str
    lock_run: str
    snapshot_select: str
    tables: str


def _v1(d: Dialect) -> list[str]:
    """The version 1 tables (as flowlib created them before schema versions)."""
    text, real, bigint, without_rowid = d.text, d.real, d.bigint, d.without_rowid
    return [
        f"""CREATE TABLE IF NOT EXISTS flowlib_runs (
            run_id {text} PRIMARY KEY,
            team_type {text} NOT NULL,
            graph_signature {text} NOT NULL,
            graph {text} NOT NULL,
            state_version {bigint} NOT NULL,
            status {text} NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            last_checkpoint {bigint} NOT NULL,
            turns {bigint} NOT NULL,
            stop_reason {text},
            forked_from {text},
            metadata {text} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS flowlib_runs_created ON flowlib_runs (created_at)",
        f"""CREATE TABLE IF NOT EXISTS flowlib_records (
            run_id {text} NOT NULL,
            checkpoint_id {bigint} NOT NULL,
            kind {text} NOT NULL,
            turn {bigint} NOT NULL,
            node {text},
            stop_reason {text},
            created_at {real} NOT NULL,
            message_count {bigint} NOT NULL,
            bookkeeping {text} NOT NULL,
            participants {text} NOT NULL,
            PRIMARY KEY (run_id, checkpoint_id)){without_rowid}""",
        f"""CREATE TABLE IF NOT EXISTS flowlib_messages (
            run_id {text} NOT NULL,
            checkpoint_id {bigint} NOT NULL,
            position {bigint} NOT NULL,
            node {text},
            body {text} NOT NULL,
            PRIMARY KEY (run_id, checkpoint_id, position)){without_rowid}""",
    ]


def _v2(d: Dialect) -> list[str]:
    """Version 1 to 2."""
    return [
        f"""CREATE TABLE flowlib_meta (
            key {d.text} PRIMARY KEY,
            value {d.text} NOT NULL)""",
        "INSERT INTO flowlib_meta (key, value) VALUES ('schema_version', '1')",
        f"""CREATE TABLE flowlib_leases (
            run_id {d.text} PRIMARY KEY,
            owner {d.text} NOT NULL,
            expires_at {d.real} NOT NULL)""",
        f"""CREATE TABLE flowlib_snapshots (
            run_id {d.text} NOT NULL,
            checkpoint_id {d.bigint} NOT NULL,
            body {d.text} NOT NULL,
            PRIMARY KEY (run_id, checkpoint_id)){d.without_rowid}""",
        f"ALTER TABLE flowlib_runs ADD COLUMN checksum {d.text}",
        f"ALTER TABLE flowlib_records ADD COLUMN checksum {d.text}",
        "CREATE INDEX flowlib_runs_updated ON flowlib_runs (updated_at)",
    ]


def _v3(d: Dialect) -> list[str]:
    """Version 2 to 3."""
    return [
        f"ALTER TABLE flowlib_runs ADD COLUMN state_checksum {d.text}",
        f"ALTER TABLE flowlib_leases ADD COLUMN checksum {d.text}",
    ]


_STEPS = {1: _v1, 2: _v2, 3: _v3}
"""For each version, the statements that make it from the version before (1: from
nothing)."""


def upgrade(found: int | None, d: Dialect) -> list[str]:
    """The statements that bring a store at version ``found`` (None: no tables yet) to
    ``SCHEMA_VERSION``, ending with the version update; empty if it is there already."""
    start = 0 if found is None else found
    if start >= SCHEMA_VERSION:
        return []
    statements = [s for version in range(start + 1, SCHEMA_VERSION + 1) for s in _STEPS[version](d)]
    statements.append(
        f"UPDATE flowlib_meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version'"
    )
    return statements


def newer_schema(where: str, found: object) -> CheckpointError:
    """The refusal of a store whose tables a newer flowlib wrote (or that are not
    flowlib's)."""
    if isinstance(found, str) and found.isdigit():
        return CheckpointError(
            f"Store {where} has schema version {found}, written by a newer flowlib; this "
            f"flowlib reads up to version {SCHEMA_VERSION}. Upgrade flowlib to open it "
            "(stores are upgraded, never downgraded)."
        )
    return CheckpointError(
        f"Store {where}: table `flowlib_meta` holds the schema version {found!r}, which is "
        "not a version number; the table was edited or is not flowlib's. Restore it from "
        f"a backup, or set it to '{SCHEMA_VERSION}' if the tables are flowlib's own."
    )


def dump(value: Any) -> str:
    return to_json(value).decode()


def load(text: str) -> Any:
    return from_json(text)


def run_row(run: RunRecord) -> tuple[Any, ...]:
    """The ``RUN_COLUMNS`` row of a run (its checksum covers the columns that never
    change)."""
    row = (
        run.run_id,
        run.team_type,
        run.graph_signature,
        dump(run.graph),
        run.state_version,
        run.status,
        run.created_at,
        run.updated_at,
        run.last_checkpoint,
        run.turns,
        run.stop_reason,
        None if run.forked_from is None else dump(list(run.forked_from)),
        dump(run.metadata),
    )
    return (
        *row,
        checksum([row[i] for i in _RUN_STATIC], []),
        state_checksum(
            run.run_id, run.status, run.updated_at, run.last_checkpoint, run.turns, run.stop_reason
        ),
    )


def state_checksum(
    run_id: str,
    status: str,
    updated_at: float,
    last_checkpoint: int,
    turns: int,
    stop_reason: str | None,
) -> str:
    """The checksum of the run row's columns that every append changes."""
    values = [run_id, status, float(updated_at), int(last_checkpoint), int(turns), stop_reason]
    return checksum(values, [])


def lease_checksum(run_id: str, owner: str, expires_at: float) -> str:
    """The checksum of a lease row."""
    return checksum([run_id, owner, float(expires_at)], [])


_RUN_FIELDS = {
    "run_id": "run_id", "team_type": "team_type", "graph_signature": "graph_signature",
    "graph": "graph", "state_version": "state_version", "status": "status",
    "created_at": "created_at", "updated_at": "updated_at",
    "last_checkpoint": "last_checkpoint", "turns": "turns", "stop_reason": "stop_reason",
    "forked_from": "forked_from", "metadata": "metadata",
}  # fmt: skip


def corrupt(
    table: str, run_id: object, checkpoint_id: object, column: str, what: str
) -> CheckpointError:
    """The refusal of a stored row that does not decode (edited, damaged or foreign)."""
    where = f"run `{run_id}`" + (
        f", checkpoint {checkpoint_id}" if checkpoint_id is not None else ""
    )
    return CheckpointError(
        f"Table `{table}`, {where}: column `{column}` {what}. The row was changed outside "
        "flowlib (edited, damaged, or written by another program); restore the store from a "
        f"backup, or remove the run (`flowlib runs delete {run_id} --store ...`)."
    )


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json(text: object, table: str, run_id: object, checkpoint_id: object, column: str) -> Any:
    if not isinstance(text, str):
        raise corrupt(table, run_id, checkpoint_id, column, f"holds {_show(text)}, not JSON text")
    try:
        return from_json(text)
    except ValueError as exc:
        raise corrupt(
            table, run_id, checkpoint_id, column, f"is not valid JSON ({exc}): {_show(text)}"
        ) from None


def _invalid(
    exc: ValidationError, table: str, run_id: object, checkpoint_id: object, names: dict[str, str]
) -> CheckpointError:
    """A pydantic refusal as a ``corrupt`` error naming the column."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else "?"
    column = names.get(field, field)
    if field == "status":
        what = f"holds {_show(error['input'])}, not a run status ({', '.join(get_args(RunStatus))})"
    elif field == "kind":
        what = f"holds {_show(error['input'])}, not a record kind ({', '.join(get_args(StepKind))})"
    else:
        what = f"holds {_show(error['input'])}: {error['msg'].lower()}"
    return corrupt(table, run_id, checkpoint_id, column, what)


def checksum(values: Sequence[Any], messages: Sequence[tuple[Any, Any]]) -> str:
    """A record's checksum: its columns and its messages' (node, body), as stored."""
    return hashlib.blake2b(to_json([list(values), messages]), digest_size=16).hexdigest()


def run_from_row(row: Sequence[Any]) -> RunRecord:
    """A run from a ``RUN_SELECT`` row (``CheckpointError`` naming the column if a value
    does not decode)."""
    run_id = row[0]
    table = "flowlib_runs"
    if row[13] is not None and row[13] != checksum([row[i] for i in _RUN_STATIC], []):
        raise CheckpointError(
            f"Table `{table}`, run `{run_id}`: the run's row does not match its checksum "
            "(one of run_id, team_type, graph_signature, graph, state_version, created_at, "
            "forked_from, metadata was changed after flowlib wrote it). Restore the store "
            f"from a backup, or remove the run (`flowlib runs delete {run_id} --store ...`)."
        )
    forked = row[11]
    forked_from = None if forked is None else _json(forked, table, run_id, None, "forked_from")
    if forked_from is not None and not (isinstance(forked_from, list) and len(forked_from) == 2):
        raise corrupt(
            table, run_id, None, "forked_from", f"holds {_show(forked)}, not [run, checkpoint]"
        )
    fields = dict(zip(_RUN_FIELD_NAMES, row, strict=False))
    fields.update(  # the columns that hold JSON
        graph=_json(row[3], table, run_id, None, "graph"),
        forked_from=None if forked_from is None else tuple(forked_from),
        metadata=_json(row[12], table, run_id, None, "metadata"),
    )
    try:
        run = RunRecord.model_validate(fields, strict=False)
    except ValidationError as exc:
        raise _invalid(exc, table, run_id, None, _RUN_FIELDS) from None
    if run.last_checkpoint < 0 or run.turns < 0:
        column = "last_checkpoint" if run.last_checkpoint < 0 else "turns"
        raise corrupt(table, run_id, None, column, f"holds {_show(getattr(run, column))}, below 0")
    _check_state(run, row[14])
    if row[15] is not None:
        lease = lease_from_row(run_id, row[15:18])
        assert lease is not None
        run.lease_owner, run.lease_expires_at = lease.owner, lease.expires_at
    return run


def _check_state(run: RunRecord, stored: object) -> None:
    """Refuse a run row whose changing columns do not match their checksum (rows written
    before schema version 3 have none)."""
    if stored is None:
        return
    values = (run.status, run.updated_at, run.last_checkpoint, run.turns, run.stop_reason)
    if stored == state_checksum(run.run_id, *values):
        return
    held = ", ".join(
        f"`{column}` holds {_show(value)}"
        for column, value in zip(
            ("status", "updated_at", "last_checkpoint", "turns", "stop_reason"), values, strict=True
        )
    )
    raise CheckpointError(
        f"Table `flowlib_runs`, run `{run.run_id}`: the run's row does not match its checksum "
        f"({held}: one of them was changed after flowlib wrote it). Restore the store from "
        f"a backup, or remove the run (`flowlib runs delete {run.run_id} --store ...`)."
    )


def lease_from_row(run_id: str, row: Sequence[Any] | None) -> Lease | None:
    """A lease from an ``(owner, expires_at, checksum)`` row (the checksum None for a
    lease written before schema version 3)."""
    if row is None:
        return None
    try:
        lease = Lease(run_id=run_id, owner=row[0], expires_at=row[1])
    except ValidationError as exc:
        raise _invalid(exc, "flowlib_leases", run_id, None, {}) from None
    if row[2] is not None and row[2] != lease_checksum(run_id, lease.owner, lease.expires_at):
        raise CheckpointError(
            f"Table `flowlib_leases`, run `{run_id}`: the lease does not match its checksum "
            f"(`owner` holds {_show(lease.owner)}, `expires_at` holds {lease.expires_at}: "
            "one of them was changed after flowlib wrote it). Delete the lease row (the run "
            "is then free to resume) or restore a backup."
        )
    return lease


def record_row(record: CheckpointRecord) -> tuple[Any, ...]:
    """The ``RECORD_COLUMNS`` row of a record (its checksum covers its messages too)."""
    values = (
        record.run_id,
        record.checkpoint_id,
        record.kind,
        record.turn,
        record.node,
        record.stop_reason,
        record.created_at,
        len(record.messages),
        dump(record.bookkeeping),
        dump(record.participants),
    )
    messages = [
        (node, dump(message))
        for message, node in zip(record.messages, record.message_nodes, strict=True)
    ]
    return (*values, checksum(values, messages))


def message_rows(record: CheckpointRecord) -> list[tuple[Any, ...]]:
    return [
        (record.run_id, record.checkpoint_id, position, node, dump(message))
        for position, (message, node) in enumerate(
            zip(record.messages, record.message_nodes, strict=True)
        )
    ]


def records_from_rows(
    rows: Sequence[Sequence[Any]],
    messages: Sequence[Sequence[Any]],
    *,
    verify: bool = True,
    to_fold: bool = False,
) -> list[CheckpointRecord]:
    """Records from ``RECORD_COLUMNS`` rows and ``(checkpoint_id, node, body)`` message
    rows, both in checkpoint order. A value that does not decode, a message count that
    does not match, or (with ``verify``) a checksum that does not match raises
    ``CheckpointError`` naming the table, run, checkpoint and column.

    ``to_fold``: the records are only folded (``load``), and folding keeps the newest
    non-empty bookkeeping: the others are given as ``{}``, not parsed (each record's
    checksum still covers them). Parsing them was a third of a resume's records' time.
    """
    raw: dict[Any, list[tuple[Any, Any]]] = {}
    for checkpoint_id, node, body in messages:
        raw.setdefault(checkpoint_id, []).append((node, body))
    kept = len(rows) - 1  # the row whose bookkeeping is parsed when folding
    if to_fold:
        while kept > 0 and rows[kept][8] == "{}":
            kept -= 1
    records = []
    for index, row in enumerate(rows):
        run_id, checkpoint_id = row[0], row[1]
        stored = raw.get(checkpoint_id, [])
        if verify and row[10] is not None and row[10] != checksum(row[:10], stored):
            raise CheckpointError(
                f"Table `flowlib_records`, run `{run_id}`, checkpoint {checkpoint_id}: the "
                "record (or one of its messages in `flowlib_messages`) does not match its "
                "checksum: it was changed after flowlib wrote it. Restore the store from a "
                f"backup, or remove the run (`flowlib runs delete {run_id} --store ...`)."
            )
        if row[7] != len(stored):
            raise corrupt(
                "flowlib_messages",
                run_id,
                checkpoint_id,
                "body",
                f"rows number {len(stored)}, but the record in `flowlib_records` has "
                f"message_count {_show(row[7])}: message rows were added or removed",
            )
        nodes = []
        bodies = []
        for position, (node, body) in enumerate(stored):
            if node is not None and not isinstance(node, str):
                raise corrupt(
                    "flowlib_messages",
                    run_id,
                    checkpoint_id,
                    "node",
                    f"holds {_show(node)} at position {position}, not a node name",
                )
            message = _json(body, "flowlib_messages", run_id, checkpoint_id, "body")
            if not isinstance(message, dict):
                raise corrupt(
                    "flowlib_messages",
                    run_id,
                    checkpoint_id,
                    "body",
                    f"holds {_show(body)} at position {position}, not a message object",
                )
            bodies.append(message)
            nodes.append(node)
        bookkeeping: Any = {}
        if not to_fold or index == kept:
            bookkeeping = _json(row[8], "flowlib_records", run_id, checkpoint_id, "bookkeeping")
            if to_fold and not bookkeeping:  # an empty one written otherwise than "{}"
                return records_from_rows(rows, messages, verify=verify)
        fields = dict(
            run_id=run_id,
            checkpoint_id=checkpoint_id,
            kind=row[2],
            turn=row[3],
            node=row[4],
            stop_reason=row[5],
            created_at=row[6],
            messages=bodies,
            message_nodes=nodes,
            bookkeeping=bookkeeping,
            participants=_json(row[9], "flowlib_records", run_id, checkpoint_id, "participants"),
        )
        try:
            records.append(CheckpointRecord.model_validate(fields))
        except ValidationError as exc:
            raise _invalid(exc, "flowlib_records", run_id, checkpoint_id, {}) from None
    return records


_KINDS = frozenset(get_args(StepKind))


def records_to_fold(
    rows: Sequence[Sequence[Any]], messages: Sequence[Sequence[Any]]
) -> list[CheckpointRecord] | list[FoldRow]:
    """``records_from_rows(rows, messages, to_fold=True)``, as ``FoldRow``s when every row
    is as flowlib writes it (checksum matching, values of their types): no model is built
    per record, which was half of a record's load. Any other row takes the way of
    ``records_from_rows``, whose errors name the problem."""
    raw: dict[Any, list[tuple[Any, Any]]] = {}
    for checkpoint_id, node, body in messages:
        raw.setdefault(checkpoint_id, []).append((node, body))
    kept = len(rows) - 1  # the row whose bookkeeping is parsed (see records_from_rows)
    while kept > 0 and rows[kept][8] == "{}":
        kept -= 1
    found: list[FoldRow] = []
    for index, row in enumerate(rows):
        run_id, checkpoint_id, kind, turn, node, stop_reason, created_at = row[:7]
        stored = raw.get(checkpoint_id, [])
        if not (
            type(row[10]) is str
            and type(run_id) is str
            and type(checkpoint_id) is int
            and checkpoint_id >= 1
            and kind in _KINDS
            and type(turn) is int
            and turn >= 0
            and (node is None or type(node) is str)
            and (stop_reason is None or type(stop_reason) is str)
            and type(created_at) in (float, int)
            and row[7] == len(stored)
            and all(n is None or type(n) is str for n, _ in stored)
            and row[10] == checksum(row[:10], stored)
        ):
            return records_from_rows(rows, messages, to_fold=True)
        try:
            participants = from_json(row[9]) if type(row[9]) is str else None
            bookkeeping = from_json(row[8]) if index == kept and type(row[8]) is str else {}
            bodies = [from_json(body) if type(body) is str else None for _, body in stored]
        except ValueError:
            return records_from_rows(rows, messages, to_fold=True)
        if (
            type(participants) is not dict
            or type(bookkeeping) is not dict
            or (index == kept and not bookkeeping)
            or not all(type(body) is dict for body in bodies)
        ):
            return records_from_rows(rows, messages, to_fold=True)
        found.append(
            FoldRow(
                run_id,
                checkpoint_id,
                kind,
                turn,
                stop_reason,
                bodies,  # type: ignore[arg-type]  # each checked a dict above
                [n for n, _ in stored],
                bookkeeping,
                participants,
            )
        )
    return found


def info_from_row(row: Sequence[Any], run_id: str = "?") -> CheckpointInfo:
    try:
        return CheckpointInfo.model_validate(dict(zip(_INFO_FIELD_NAMES, row, strict=True)))
    except ValidationError as exc:
        raise _invalid(exc, "flowlib_records", run_id, row[0], {}) from None


SQLITE_SNAPSHOT_SELECT = (
    "SELECT checkpoint_id, CASE WHEN typeof(body) = 'text' THEN CAST(body AS BLOB) ELSE body "
    "END FROM flowlib_snapshots WHERE run_id = ? AND checkpoint_id <= ? "
    "ORDER BY checkpoint_id DESC LIMIT 1"
)
"""SQLite: a run's newest snapshot at or before a checkpoint, its text as UTF-8 bytes: the
checksum is over the bytes, and the message lines are decoded alone (no 7 MB decode
and encode again)."""

SNAPSHOT_FORMAT = "v2"
"""The prefix of a snapshot body in the current format (see ``snapshot_body``)."""


def snapshot_body(folded: FoldedRun) -> str:
    """A run's folded state as stored in ``flowlib_snapshots.body``.

    ``v2 <crc> <text>``: ``<crc>`` is the CRC-32 of ``<text>`` (8 hex digits), and
    ``<text>`` is lines of JSON: a header (the state without its messages and
    participants, plus ``types``: the message types of the thread), the participants'
    states, then one line per thread message. JSON never holds a raw newline, so a
    reader splits the lines without parsing the messages, and keeps them as text until
    they are read (`MessageDumps`); messages kept as text are written back as they are.
    """
    messages = folded.messages
    types: set[Any] = set()
    lines: list[str] = []
    loose: Iterable[Any] = messages
    if isinstance(messages, MessageDumps):
        types.update(messages.types)
        block, count, loose = messages.lines()
        if count:
            lines.append(block)  # the lines of the snapshot it was read from, as they were
    for item in loose:
        if type(item) is str:
            lines.append(item)
        else:
            types.add(item.get("type"))
            lines.append(dump(item))
    header = {
        "run_id": folded.run_id,
        "message_nodes": folded.message_nodes,
        "bookkeeping": folded.bookkeeping,
        "turn": folded.turn,
        "last_checkpoint": folded.last_checkpoint,
        "last_kind": folded.last_kind,
        "stop_reason": folded.stop_reason,
        "types": sorted(types, key=repr),
    }
    text = "\n".join([dump(header), dump(folded.participants), *lines])
    return f"{SNAPSHOT_FORMAT} {zlib.crc32(text.encode()):08x} {text}"


def snapshot_from_body(
    body: object, run_id: str, checkpoint_id: object, *, verify: bool = True
) -> FoldedRun:
    """The state a ``flowlib_snapshots.body`` holds (its messages kept as text until
    read), checked against its checksum and the row's keys; bodies of the two earlier
    formats (a BLAKE2b checksum and one JSON object; before that, the JSON alone) are
    read too."""
    table = "flowlib_snapshots"
    prefix = SNAPSHOT_FORMAT + " "
    if isinstance(body, bytes) and not body.startswith(prefix.encode()):
        with contextlib.suppress(UnicodeDecodeError):  # else refused below: not a snapshot
            body = body.decode()
    if isinstance(body, bytes) or (isinstance(body, str) and body.startswith(prefix)):
        # SQLite reads a body as the UTF-8 bytes of its text (``SQLITE_SNAPSHOT_SELECT``).
        folded, problem = _snapshot_lines(body, verify=verify)
    else:
        if isinstance(body, str) and body.startswith("{"):  # before snapshots had a checksum
            body = " " * 33 + body
            verify = False
        if not isinstance(body, str) or body[32:33] != " ":
            raise corrupt(
                table, run_id, checkpoint_id, "body", f"holds {_show(body)}, not a snapshot"
            )
        text = body[33:]
        if verify and hashlib.blake2b(text.encode(), digest_size=16).hexdigest() != body[:32]:
            folded, problem = _EMPTY, _MISMATCH
        else:
            try:
                folded, problem = _snapshot_state(text)
            except ValueError as exc:
                folded, problem = _EMPTY, f"is not valid JSON ({exc})"
    if problem is _MISMATCH:
        raise CheckpointError(
            f"Table `{table}`, run `{run_id}`, checkpoint {checkpoint_id}: the snapshot does "
            "not match its checksum: it was changed after flowlib wrote it. Delete the "
            "snapshot row (the run's records still hold everything) or restore a backup."
        )
    if problem is not None:
        raise corrupt(table, run_id, checkpoint_id, "body", f"does not decode: {problem}")
    if folded.run_id != run_id or folded.last_checkpoint != checkpoint_id:
        raise corrupt(
            table,
            run_id,
            checkpoint_id,
            "body",
            f"holds the state of run `{folded.run_id}` at checkpoint {folded.last_checkpoint}",
        )
    return folded


_EMPTY = FoldedRun.model_construct(run_id="")
_MISMATCH = "does not match its checksum"


def _snapshot_lines(body: str | bytes, *, verify: bool) -> tuple[FoldedRun, str | None]:
    """A ``v2`` snapshot's state, and what is wrong with it, if anything (``body``: its
    text, or the UTF-8 bytes of it)."""
    # Offsets, not slices: a slice of a 7 MB body is a 7 MB copy.
    start = len(SNAPSHOT_FORMAT) + 1
    end = start + 8
    if _ascii(body[end : end + 1]) != " ":
        return _EMPTY, "no checksum"
    if verify:
        data = memoryview(body if isinstance(body, bytes) else body.encode())[end + 1 :]
        if f"{zlib.crc32(data):08x}" != _ascii(body[start:end]):
            return _EMPTY, _MISMATCH
    newline: Any = b"\n" if isinstance(body, bytes) else "\n"
    first = body.find(newline, end)
    second = body.find(newline, first + 1) if first >= 0 else -1
    if first < 0:
        return _EMPTY, "no participants line"
    try:
        header = from_json(body[end + 1 : first])
        participants = from_json(body[first + 1 : len(body) if second < 0 else second])
    except ValueError as exc:
        return _EMPTY, f"is not valid JSON ({exc})"
    if not isinstance(header, dict):
        return _EMPTY, "the header is not a JSON object"
    header["participants"] = participants
    for name, kind in _SNAPSHOT_TYPES.items():
        if name != "messages" and type(header.get(name)) is not kind:
            return _EMPTY, f"field `{name}` is not {kind.__name__}"
    types = header.get("types")
    if type(types) is not list or not all(t is None or type(t) is str for t in types):
        return _EMPTY, "field `types` is not a list of message types"
    count = len(header["message_nodes"])
    if (second < 0) != (count == 0):
        return _EMPTY, "messages and message_nodes do not match"
    problem = _check_tail(header)
    if problem is not None:
        return _EMPTY, problem
    fields = {k: v for k, v in header.items() if k in FoldedRun.model_fields}
    # The message lines stay one text (their number is checked when one is read).
    block = body[second + 1 :] if count else ""
    if isinstance(block, bytes):
        try:
            block = block.decode()
        except UnicodeDecodeError as exc:
            return _EMPTY, f"is not UTF-8 text ({exc})"
    fields["messages"] = MessageDumps.of_lines(block, count, types)
    return FoldedRun.model_construct(**fields), None


def _ascii(text: str | bytes) -> str:
    return text.decode("ascii", "replace") if isinstance(text, bytes) else text


_SNAPSHOT_TYPES = {
    "run_id": str,
    "messages": list,
    "message_nodes": list,
    "bookkeeping": dict,
    "participants": dict,
    "turn": int,
    "last_checkpoint": int,
}


def _check_tail(data: dict[str, Any]) -> str | None:
    last_kind = data.get("last_kind")
    if last_kind is not None and last_kind not in get_args(StepKind):
        return f"field `last_kind` holds {last_kind!r}"
    reason = data.get("stop_reason")
    if reason is not None and not isinstance(reason, str):
        return "field `stop_reason` is not a string"
    return None


def _snapshot_state(text: str) -> tuple[FoldedRun, str | None]:
    """A snapshot's ``FoldedRun`` (the format before ``v2``: one JSON object), its
    fields' types checked by hand (validating the whole state with pydantic would take
    twice as long as parsing it, for values that are plain JSON and whose checksum was
    just verified); and what is wrong, if anything."""
    data = from_json(text)
    if not isinstance(data, dict):
        return _EMPTY, "not a JSON object"
    for name, kind in _SNAPSHOT_TYPES.items():
        if type(data.get(name)) is not kind:
            return _EMPTY, f"field `{name}` is not {kind.__name__}"
    if len(data["messages"]) != len(data["message_nodes"]) or not all(
        type(m) is dict for m in data["messages"]
    ):
        return _EMPTY, "messages and message_nodes do not match"
    problem = _check_tail(data)
    if problem is not None:
        return _EMPTY, problem
    fields = {k: v for k, v in data.items() if k in FoldedRun.model_fields}
    return FoldedRun.model_construct(**fields), None


SNAPSHOT_EVERY = 200
"""Records between two automatic snapshots of a run's state, at least (see ``load``)."""

SNAPSHOT_SHARE = 16
"""A run's next snapshot also waits until the records written since its last one hold at
least 1/16 of that snapshot's bytes. A snapshot rewrites the whole state, so without this
a long run would spend more on snapshots with every turn; with it, the snapshot work per
append is at most about sixteen times the append's own bytes, whatever the run's length,
and ``load`` reads the snapshot and at most about a sixteenth of its size in records more
(1/8 before: a 10,000-turn run's whole CPU was the same within noise, its resume a third
cheaper; docs/choices.md)."""

SNAPSHOT_DUE = """
SELECT s.size, coalesce(
    (SELECT sum(length(r.bookkeeping) + length(r.participants)) FROM flowlib_records r
     WHERE r.run_id = s.run_id AND r.checkpoint_id > s.checkpoint_id), 0) + coalesce(
    (SELECT sum(length(m.body)) FROM flowlib_messages m
     WHERE m.run_id = s.run_id AND m.checkpoint_id > s.checkpoint_id), 0)
FROM (SELECT run_id, checkpoint_id, length(body) AS size FROM flowlib_snapshots
      WHERE run_id = ? ORDER BY checkpoint_id DESC LIMIT 1) s
"""
"""The size of a run's newest snapshot and the bytes of the records written after it (no
row: no snapshot yet)."""


def snapshot_due(row: Sequence[Any] | None) -> bool:
    """Whether a run whose ``SNAPSHOT_DUE`` row is ``row`` gets a new snapshot."""
    return row is None or int(row[1]) * SNAPSHOT_SHARE >= int(row[0])


def check_snapshot_every(every: object) -> int:
    if type(every) is not int or every < 0:
        raise CheckpointArgumentError(
            f"`snapshot_every` must be an int >= 0 (records between two snapshots of a "
            f"run's state; 0: none), got {every!r}."
        )
    return every


_FIX = (
    "The row was edited or the store is damaged (a running writer never leaves it so); "
    "restore the store from a backup, or set the column back to match the records."
)


def check_last(run: RunRecord, newest: int) -> None:
    """Refuse a run row whose ``last_checkpoint`` is not its newest record's (``newest``:
    the highest stored checkpoint id): an edit, not another writer."""
    if newest != run.last_checkpoint:
        raise CheckpointError(
            f"Table `flowlib_runs`, run `{run.run_id}`: column `last_checkpoint` holds "
            f"{run.last_checkpoint}, but the run's newest record in `flowlib_records` is "
            f"checkpoint {newest}. {_FIX}"
        )


def check_consistent(run: RunRecord, folded: FoldedRun, upto: int, newest: int) -> None:
    """Refuse a run row that disagrees with its newest record (an edited ``turns`` or
    ``stop_reason``)."""
    where = f"Table `flowlib_runs`, run `{run.run_id}`"
    fix = _FIX
    check_last(run, newest)
    if upto != run.last_checkpoint or newest == 0:
        return
    # Each append sets these from the record it appends.
    for column, stored, recorded in (
        ("turns", run.turns, folded.turn),
        ("stop_reason", run.stop_reason, folded.stop_reason),
    ):
        if stored != recorded:
            raise CheckpointError(
                f"{where}: column `{column}` holds {stored!r}, but the run's newest record "
                f"(checkpoint {folded.last_checkpoint}) says {recorded!r}. {fix}"
            )
