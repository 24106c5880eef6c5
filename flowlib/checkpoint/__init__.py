"""Durable runs: checkpoint records, the store protocol and the stores.

A store of your own implements [`CheckpointStore`][flowlib.checkpoint.CheckpointStore]
with the shared rules of [`flowlib.checkpoint.rules`][flowlib.checkpoint.rules], names
its URL scheme with [`register_store_scheme`][flowlib.checkpoint.register_store_scheme],
and proves itself with
[`flowlib.testing.check_checkpoint_store`][flowlib.testing.check_checkpoint_store] (see
"Writing a checkpoint store" in docs/extending.md).
"""

import importlib
from typing import Any

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
from ._url import StoreOpener, open_store, register_store_scheme, store_schemes

# The Redis store is written like a store outside flowlib (it imports this package), so
# it is imported when first used (`RedisCheckpointStore` below, or a first `redis://`
# URL): its scheme is registered by the opener's name.
register_store_scheme(
    "redis", "flowlib.checkpoint.redis_store:open_redis_store", example="redis://127.0.0.1:6379/0"
)
register_store_scheme(
    "rediss", "flowlib.checkpoint.redis_store:open_redis_store", example="rediss://host:6380/0"
)


def __getattr__(name: str) -> Any:
    if name == "RedisCheckpointStore":
        return importlib.import_module(".redis_store", __name__).RedisCheckpointStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "RedisCheckpointStore",
    "RunRecord",
    "RunStatus",
    "SQLiteCheckpointStore",
    "StateChange",
    "StepKind",
    "StoreOpener",
    "appended",
    "apply_patch",
    "base_record",
    "diff_state",
    "fold",
    "json_state",
    "open_store",
    "patch_of",
    "register_store_scheme",
    "state_change",
    "store_schemes",
]
