"""Durable runs: checkpoint records, the store protocol and the stores."""

from ._fold import FoldedRun, base_record, fold
from ._memory import InMemoryCheckpointStore
from ._patch import apply_patch, diff_state
from ._postgres import PostgresCheckpointStore
from ._sqlite import SQLiteCheckpointStore
from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    CheckpointStore,
    RunRecord,
    RunStatus,
    StepKind,
)
from ._url import open_store

__all__ = [
    "CheckpointInfo",
    "CheckpointRecord",
    "CheckpointStore",
    "FoldedRun",
    "InMemoryCheckpointStore",
    "PostgresCheckpointStore",
    "RunRecord",
    "RunStatus",
    "SQLiteCheckpointStore",
    "StepKind",
    "apply_patch",
    "base_record",
    "diff_state",
    "fold",
    "open_store",
]
