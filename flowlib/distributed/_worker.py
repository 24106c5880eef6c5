"""The Ray actor that holds many runs on one event loop (one per worker process)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from ..base import TaskResult
from ..batch import BatchTask, RunItem, open_store, resolve_factory, stream_run
from ..checkpoint import CheckpointStore
from ..errors import RunFailedError

__all__ = ["RunWorker"]


class RunWorker:
    """Runs batch tasks for a [`RayRunner`][flowlib.distributed.RayRunner].

    Ray creates it in a worker process (as an async actor, so its methods share the
    process's event loop) and restarts it when the process dies; the store is opened
    from its URL in the worker, on first use.

    Args:
        factory: The team factory (a reference string or a picklable callable).
        store_url: The store's URL, or None (no checkpoints).
    """

    def __init__(self, factory: Any, store_url: str | None) -> None:
        self._factory_ref = factory
        self._store_url = store_url
        self._store: CheckpointStore | None = None
        self._factory: Any = None

    def _ready(self) -> tuple[Any, CheckpointStore | None]:
        if self._factory is None:
            self._factory = resolve_factory(self._factory_ref)
        if self._store is None and self._store_url is not None:
            self._store = open_store(self._store_url)
        return self._factory, self._store

    async def check(self) -> str | None:
        """Resolve the factory and build one team; return what failed, or None."""
        from ..batch import build_team

        try:
            factory, store = self._ready()
            build_team(factory, store)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        return os.getpid()

    async def run(self, run_id: str, task: BatchTask) -> TaskResult | RunFailedError:
        """Run one task to its end; return its result or its failure."""
        factory, store = self._ready()
        last: RunItem | None = None
        async for item in stream_run(factory, store, run_id, task):
            last = item
        assert isinstance(last, (TaskResult, RunFailedError))
        return last

    async def stream(self, run_id: str, task: BatchTask) -> AsyncIterator[RunItem]:
        """Run one task, yielding its items (a Ray streaming generator)."""
        factory, store = self._ready()
        async for item in stream_run(factory, store, run_id, task):
            yield item
