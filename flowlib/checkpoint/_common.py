"""Checks and updates every store shares, so the stores agree on what they refuse."""

from __future__ import annotations

from ..errors import CheckpointArgumentError, CheckpointConflictError, CheckpointError
from ._types import CheckpointInfo, CheckpointRecord, RunRecord, RunStatus

__all__ = [
    "check_keep_last",
    "check_next",
    "check_upto",
    "closed_error",
    "conflict_error",
    "info_of",
    "unknown_run",
    "updated_run",
]


def closed_error(store: object) -> CheckpointError:
    return CheckpointError(
        f"{type(store).__name__} is closed; open a new store to read or write runs."
    )


def unknown_run(run_id: str) -> CheckpointError:
    return CheckpointError(
        f"Unknown run `{run_id}`: no such run in this store (see `store.list_runs()`)."
    )


def check_next(run: RunRecord, record: CheckpointRecord) -> None:
    """Refuse a record that is not exactly the run's next checkpoint."""
    if record.checkpoint_id != run.last_checkpoint + 1:
        raise conflict_error(run, record)


def conflict_error(run: RunRecord, record: CheckpointRecord) -> CheckpointConflictError:
    """The refusal of ``record``, which does not follow ``run``'s last checkpoint."""
    expected = run.last_checkpoint + 1
    return CheckpointConflictError(
        f"Run `{run.run_id}`: checkpoint {record.checkpoint_id} cannot follow "
        f"{run.last_checkpoint} (expected {expected}). Another writer has advanced the "
        "run, or a record was skipped; resume from the store instead of writing on."
    )


def updated_run(run: RunRecord, record: CheckpointRecord, status: RunStatus) -> RunRecord:
    """The run after ``record`` was appended with ``status``."""
    return run.model_copy(
        update={
            "status": status,
            "turns": record.turn,
            "stop_reason": record.stop_reason,
            "last_checkpoint": record.checkpoint_id,
            "updated_at": record.created_at,
        }
    )


def check_keep_last(keep_last: object) -> int:
    if type(keep_last) is not int or keep_last < 0:
        raise CheckpointArgumentError(
            f"`keep_last` must be an int >= 0 (the newest records to keep), got {keep_last!r}."
        )
    return keep_last


def info_of(record: CheckpointRecord) -> CheckpointInfo:
    return CheckpointInfo(
        checkpoint_id=record.checkpoint_id,
        kind=record.kind,
        turn=record.turn,
        node=record.node,
        stop_reason=record.stop_reason,
        created_at=record.created_at,
        message_count=len(record.messages),
    )


def check_upto(run_id: str, first: int, last: int, upto: int) -> None:
    """Refuse a checkpoint that does not exist or was pruned into a ``base`` record
    (``first``/``last``: the oldest and newest ids the run still has; 0 if none)."""
    if type(upto) is not int or upto < 1 or upto > last:
        raise CheckpointArgumentError(
            f"Run `{run_id}` has no checkpoint {upto!r} (its checkpoints are 1..{last})."
        )
    if upto < first:
        raise CheckpointError(
            f"Run `{run_id}`: checkpoint {upto} was pruned; the oldest left is {first}."
        )
