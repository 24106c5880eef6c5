"""The Ray actor that holds many runs on one event loop (one per worker process).

The driver talks to it in batches: one ``exchange`` call hands it new runs and brings
back every item its runs produced since the last call, so the number of Ray calls
grows with the number of round trips, not with the number of runs or events.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..base import TaskResult
from ..batch import BatchTask, RunItem, TeamPool, open_store, resolve_factory, run_items
from ..errors import RunFailedError

__all__ = ["RunWorker"]

Submitted = tuple[int, str, BatchTask]
"""A run handed to a worker: its index in the batch, its run id and its task."""

Produced = tuple[int, RunItem, bool]
"""An item a run produced: its index, the item, and whether the run was found finished
in the store (on its last item)."""

_LINGER = 0.002
"""After the first item, how long an exchange waits for more (seconds): items of runs
whose turns end together cross in one call instead of one call each."""

_FORGOTTEN = 1024
"""How many cancelled batch ids a worker remembers (to refuse late submissions)."""


@dataclass
class _Batch:
    """One batch's runs on this worker, and the items not yet collected."""

    events: bool
    runs: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    outbox: list[Produced] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class RunWorker:
    """Runs batch tasks for a [`RayRunner`][flowlib.distributed.RayRunner].

    Ray creates it in a worker process (as an async actor, so its methods share the
    process's event loop) and restarts it when the process dies; the store is opened
    from its URL in the worker, on first use. Each batch's runs are asyncio tasks of
    this process, at most ``max_runs`` at once over all batches; the runs beyond wait
    for a slot.

    Args:
        factory: The team factory (a reference string or a picklable callable).
        store_url: The store's URL, or None (no checkpoints).
        reuse_teams: Reset and reuse the teams of finished runs (see
            [`TeamPool`][flowlib.batch.TeamPool]).
        max_runs: Runs at once in this worker.
    """

    def __init__(
        self,
        factory: Any,
        store_url: str | None,
        reuse_teams: bool = True,
        max_runs: int = 1000,
    ) -> None:
        self._factory_ref = factory
        self._store_url = store_url
        self._reuse = reuse_teams
        self._max_runs = max_runs
        self._teams: TeamPool | None = None
        self._slots: asyncio.Semaphore | None = None
        self._batches: dict[str, _Batch] = {}
        self._cancelled: dict[str, None] = {}
        # A new value for each start of the process: the driver compares it to tell a
        # restarted worker (which lost its runs) from one that was only slow to answer.
        self.incarnation = uuid.uuid4().hex

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

    async def hello(self) -> str:
        """This process's incarnation (the driver's liveness probe)."""
        return self.incarnation

    async def stats(self) -> dict[str, int]:
        """This worker process's runs by how they began, the teams it built, the runs it
        holds now, and the CPU time the process has used (``cpu_ms``)."""
        teams = self._ready()
        holding = sum(len(batch.runs) for batch in self._batches.values())
        cpu_ms = int(time.process_time() * 1000)
        return {**teams.counts, "teams_built": teams.built, "holding": holding, "cpu_ms": cpu_ms}

    async def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        return os.getpid()

    async def node(self) -> str:
        """The id of the Ray node this worker runs on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    async def exchange(
        self, batch_id: str, submit: list[Submitted], events: bool, wait: float
    ) -> tuple[str, list[Produced]]:
        """Start the submitted runs, then return the items produced so far.

        Waits up to ``wait`` seconds for the first item (and a moment for more).

        Returns:
            This process's incarnation and the items, oldest first.
        """
        if batch_id in self._cancelled:
            return self.incarnation, []
        batch = self._batches.get(batch_id)
        if batch is None:
            batch = self._batches[batch_id] = _Batch(events)
        if submit:
            teams = self._ready()
            if self._slots is None:
                self._slots = asyncio.Semaphore(self._max_runs)
            for index, run_id, task in submit:
                if index not in batch.runs:
                    run = self._run(teams, batch, index, run_id, task)
                    batch.runs[index] = asyncio.ensure_future(run)
        if not batch.outbox and wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(batch.wake.wait(), wait)
            if batch.outbox and batch.runs:
                await asyncio.sleep(_LINGER)
        items, batch.outbox = batch.outbox, []
        batch.wake.clear()
        if not batch.runs and self._batches.get(batch_id) is batch:
            del self._batches[batch_id]  # all its runs ended and their items went out
        return self.incarnation, items

    async def _run(
        self, teams: TeamPool, batch: _Batch, index: int, run_id: str, task: BatchTask
    ) -> None:
        assert self._slots is not None
        try:
            async with self._slots:
                async for item, skipped in run_items(teams, run_id, task, events=batch.events):
                    done = isinstance(item, (TaskResult, RunFailedError))
                    if batch.events or done:
                        batch.outbox.append((index, item, skipped))
                        batch.wake.set()
        finally:
            batch.runs.pop(index, None)

    async def cancel(self, batch_id: str) -> int:
        """Cancel every run of a batch on this worker and wait until each has stopped
        (a cancelled run records its stop, so running the batch again resumes it); later
        submissions to the batch are refused.

        Returns:
            How many runs were cancelled.
        """
        self._cancelled[batch_id] = None
        while len(self._cancelled) > _FORGOTTEN:
            del self._cancelled[next(iter(self._cancelled))]
        batch = self._batches.pop(batch_id, None)
        if batch is None:
            return 0
        runs = list(batch.runs.values())
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        batch.wake.set()
        return len(runs)
