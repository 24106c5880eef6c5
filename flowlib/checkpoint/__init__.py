"""Durable runs: checkpoint records, the store protocol and the stores."""

from ._fold import FoldedRun, base_record, fold
from ._memory import InMemoryCheckpointStore
from ._patch import apply_patch, diff_state
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
    "FoldedRun",
    "InMemoryCheckpointStore",
    "RunRecord",
    "RunStatus",
    "StepKind",
    "apply_patch",
    "base_record",
    "diff_state",
    "fold",
]
