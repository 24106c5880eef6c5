"""What the SQL stores share: the tables, and rows to and from the record types.

Payloads are JSON made by pydantic (``pydantic_core.to_json``), never pickle. A run is
one row of ``runs``; each checkpoint is one row of ``records`` (its bookkeeping and
participant patches) plus one row of ``messages`` per new message. Rows are keyed by
``(run_id, checkpoint_id[, position])``, so an append inserts a few rows at the end of
the run's key range and updates one ``runs`` row: the cost and the bytes written do not
depend on how long the run already is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json, to_json

from ..errors import CheckpointError
from ._fold import FoldedRun
from ._types import CheckpointInfo, CheckpointRecord, Lease, RunRecord

__all__ = [
    "INFO_COLUMNS",
    "RECORD_COLUMNS",
    "RUN_COLUMNS",
    "RUN_SELECT",
    "SCHEMA_VERSION",
    "Dialect",
    "dump",
    "info_from_row",
    "lease_from_row",
    "load",
    "message_rows",
    "newer_schema",
    "record_row",
    "records_from_rows",
    "run_from_row",
    "run_row",
    "snapshot_body",
    "snapshot_from_body",
    "upgrade",
]

RUN_COLUMNS = (
    "run_id, team_type, graph_signature, graph, state_version, status, created_at, "
    "updated_at, last_checkpoint, turns, stop_reason, forked_from, metadata"
)
RECORD_COLUMNS = (
    "run_id, checkpoint_id, kind, turn, node, stop_reason, created_at, message_count, "
    "bookkeeping, participants"
)
INFO_COLUMNS = "checkpoint_id, kind, turn, node, stop_reason, created_at, message_count"
RUN_SELECT = (
    "SELECT "
    + ", ".join(f"r.{column.strip()}" for column in RUN_COLUMNS.split(","))
    + ", l.owner, l.expires_at FROM flowlib_runs r "
    "LEFT JOIN flowlib_leases l ON l.run_id = r.run_id"
)
"""A run with its lease: ``RUN_COLUMNS`` then the lease's owner and expiry."""

SCHEMA_VERSION = 2
"""The version of the tables this code writes, kept in ``flowlib_meta``.

1. ``flowlib_runs``, ``flowlib_records``, ``flowlib_messages`` (before versions were
   kept: a store with ``flowlib_runs`` and no ``flowlib_meta`` is version 1).
2. Adds ``flowlib_meta``, ``flowlib_leases``, ``flowlib_snapshots``, a ``checksum``
   column on ``flowlib_runs`` and ``flowlib_records``, and an index on
   ``flowlib_runs.updated_at``.
"""


@dataclass(frozen=True)
class Dialect:
    """A SQL dialect's type names."""

    text: str
    real: str
    bigint: str
    without_rowid: str


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


_STEPS = {1: _v1, 2: _v2}
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
    return (
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


def run_from_row(row: Sequence[Any]) -> RunRecord:
    """A run from a ``RUN_SELECT`` row."""
    forked = row[11]
    return RunRecord(
        run_id=row[0],
        team_type=row[1],
        graph_signature=row[2],
        graph=load(row[3]),
        state_version=row[4],
        status=row[5],
        created_at=row[6],
        updated_at=row[7],
        last_checkpoint=row[8],
        turns=row[9],
        stop_reason=row[10],
        forked_from=None if forked is None else tuple(load(forked)),
        metadata=load(row[12]),
        lease_owner=row[13],
        lease_expires_at=row[14],
    )


def lease_from_row(run_id: str, row: Sequence[Any] | None) -> Lease | None:
    """A lease from an ``(owner, expires_at)`` row."""
    return None if row is None else Lease(run_id=run_id, owner=row[0], expires_at=row[1])


def record_row(record: CheckpointRecord) -> tuple[Any, ...]:
    return (
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


def message_rows(record: CheckpointRecord) -> list[tuple[Any, ...]]:
    return [
        (record.run_id, record.checkpoint_id, position, node, dump(message))
        for position, (message, node) in enumerate(
            zip(record.messages, record.message_nodes, strict=True)
        )
    ]


def records_from_rows(
    rows: Sequence[Sequence[Any]], messages: Sequence[Sequence[Any]]
) -> list[CheckpointRecord]:
    """Records from ``RECORD_COLUMNS`` rows and ``(checkpoint_id, node, body)`` message
    rows, both in checkpoint order."""
    by_checkpoint: dict[int, tuple[list[dict[str, Any]], list[str | None]]] = {}
    for checkpoint_id, node, body in messages:
        bodies, nodes = by_checkpoint.setdefault(checkpoint_id, ([], []))
        bodies.append(load(body))
        nodes.append(node)
    records = []
    for row in rows:
        bodies, nodes = by_checkpoint.get(row[1], ([], []))
        records.append(
            CheckpointRecord(
                run_id=row[0],
                checkpoint_id=row[1],
                kind=row[2],
                turn=row[3],
                node=row[4],
                stop_reason=row[5],
                created_at=row[6],
                messages=bodies,
                message_nodes=nodes,
                bookkeeping=load(row[8]),
                participants=load(row[9]),
            )
        )
    return records


def info_from_row(row: Sequence[Any]) -> CheckpointInfo:
    return CheckpointInfo(
        checkpoint_id=row[0],
        kind=row[1],
        turn=row[2],
        node=row[3],
        stop_reason=row[4],
        created_at=row[5],
        message_count=row[6],
    )


def snapshot_body(folded: FoldedRun) -> str:
    """A run's folded state as stored in ``flowlib_snapshots.body``."""
    return folded.model_dump_json()


def snapshot_from_body(body: str) -> FoldedRun:
    return FoldedRun.model_validate_json(body)
