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
from typing import Any

from pydantic_core import from_json, to_json

from ._types import CheckpointInfo, CheckpointRecord, RunRecord

__all__ = [
    "INFO_COLUMNS",
    "RECORD_COLUMNS",
    "RUN_COLUMNS",
    "dump",
    "info_from_row",
    "load",
    "message_rows",
    "record_row",
    "records_from_rows",
    "run_from_row",
    "run_row",
    "schema",
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


def schema(*, text: str, real: str, bigint: str, without_rowid: str) -> list[str]:
    """The ``CREATE`` statements, in the SQL dialect's type names."""
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
    )


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
