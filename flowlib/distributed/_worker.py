"""The Ray actor that holds many runs on one event loop (one per worker process)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from ..base import TaskResult
from ..batch import BatchTask, RunItem, TeamPool, open_store, resolve_factory, stream_run
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
        reuse_teams: Reset and reuse the teams of finished runs (see
            [`TeamPool`][flowlib.batch.TeamPool]).
    """

    def __init__(self, factory: Any, store_url: str | None, reuse_teams: bool = True) -> None:
        self._factory_ref = factory
        self._store_url = store_url
        self._reuse = reuse_teams
        self._teams: TeamPool | None = None

    def _ready(self) -> TeamPool:
        if self._teams is None:
            factory = resolve_factory(self._factory_ref)
            store = None if self._store_url is None else open_store(self._store_url)
            self._teams = TeamPool(factory, store, reuse=self._reuse)
        return self._teams

    async def check(self) -> str | None:
        """Resolve the factory and build one team; return what failed, or None."""
        from ..batch import build_team

        try:
            teams = self._ready()
            build_team(teams.factory, teams.store)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def stats(self) -> dict[str, int]:
        """This worker process's runs by how they began, and the teams it built."""
        teams = self._ready()
        return {**teams.counts, "teams_built": teams.built}

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        return os.getpid()

    async def run(self, run_id: str, task: BatchTask) -> TaskResult | RunFailedError:
        """Run one task to its end; return its result or its failure."""
        last: RunItem | None = None
        async for item in stream_run(self._ready(), run_id, task, events=False):
            last = item
        assert isinstance(last, (TaskResult, RunFailedError))
        return last

    async def stream(self, run_id: str, task: BatchTask) -> AsyncIterator[RunItem]:
        """Run one task, yielding its items (a Ray streaming generator)."""
        async for item in stream_run(self._ready(), run_id, task):
            yield item
