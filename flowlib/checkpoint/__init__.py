"""Durable runs: checkpoint records, the store protocol and the stores."""

from ._change import (
    IncrementalState,
    Journal,
    StateChange,
    appended,
    json_state,
    patch_of,
    state_change,
)
from ._fold import FoldedRun, base_record, fold
from ._memory import InMemoryCheckpointStore
from ._patch import apply_patch, diff_state
from ._postgres import PostgresCheckpointStore
from ._results import CallRecord, CallResults
from ._sqlite import SQLiteCheckpointStore
from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    CheckpointStore,
    Lease,
    PendingRequestInfo,
    RunRecord,
    RunStatus,
    StepKind,
)
from ._url import open_store

__all__ = [
    "CallRecord",
    "CallResults",
    "CheckpointInfo",
    "CheckpointRecord",
    "CheckpointStore",
    "FoldedRun",
    "InMemoryCheckpointStore",
    "IncrementalState",
    "Journal",
    "Lease",
    "PendingRequestInfo",
    "PostgresCheckpointStore",
    "RunRecord",
    "RunStatus",
    "SQLiteCheckpointStore",
    "StateChange",
    "StepKind",
    "appended",
    "apply_patch",
    "base_record",
    "diff_state",
    "fold",
    "json_state",
    "open_store",
    "patch_of",
    "state_change",
]
