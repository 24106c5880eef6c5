"""Durable runs: checkpoint records, the store protocol and the stores."""

from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    CheckpointStore,
    RunRecord,
    RunStatus,
    StepKind,
)

__all__ = [
    "CheckpointInfo",
    "CheckpointRecord",
    "CheckpointStore",
    "RunRecord",
    "RunStatus",
    "StepKind",
]
