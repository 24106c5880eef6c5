"""Batches of runs in one process: many runs of a team on one event loop, checkpointed,
skipped when finished and resumed when not.

[`LocalRunner`][flowlib.batch.LocalRunner] needs nothing beyond flowlib; its twin for a
Ray cluster is [`flowlib.distributed.RayRunner`][flowlib.distributed.RayRunner] (the
``ray`` extra), with the same ``run_many`` / ``stream_many``.
"""

from ._factory import Factory, build_team, resolve_factory
from ._local import LocalRunner
from ._run import (
    BatchTask,
    RunEvent,
    RunItem,
    TeamPool,
    is_finished,
    run_items,
    stored_result,
    stream_run,
)
from ._stores import open_store, store_url

__all__ = [
    "BatchTask",
    "Factory",
    "LocalRunner",
    "RunEvent",
    "RunItem",
    "TeamPool",
    "build_team",
    "is_finished",
    "open_store",
    "resolve_factory",
    "run_items",
    "store_url",
    "stored_result",
    "stream_run",
]
