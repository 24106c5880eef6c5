"""What flowlib's other packages use of ``flowlib.checkpoint``'s private modules
(not public API)."""

from ._dumps import MessageDumps
from ._fold import FoldedRun, base_record
from ._fork import fork_run
from ._patch import Patch
from ._postgres import PostgresCheckpointStore
from ._sqlite import SQLiteCheckpointStore
from ._types import CheckpointStore, HumanRequest

__all__ = [
    "HumanRequest",
    "MessageDumps",
    "Patch",
    "base_record",
    "fork_run",
    "load_to_resume",
]


async def load_to_resume(store: CheckpointStore, run_id: str) -> FoldedRun:
    """``store.load(run_id)`` for a resume: the SQL stores keep the messages of the run's
    snapshot as their stored text (``MessageDumps``), parsed when first read."""
    if isinstance(store, SQLiteCheckpointStore | PostgresCheckpointStore):
        return await store.load_to_resume(run_id)
    return await store.load(run_id)
