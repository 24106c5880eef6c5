"""Many runs in one process, on one asyncio event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from .._english import counted
from ..base import TaskResult
from ..checkpoint import CheckpointStore
from ..errors import ArgumentTypeError, InvalidArgumentError, RunFailedError
from ._factory import Factory, resolve_factory
from ._run import BatchTask, Results, RunEvent, TeamPool, run_items
from ._stores import open_store

__all__ = ["BatchRunner", "LocalRunner", "check_batch"]

_DONE = object()


def check_batch(tasks: Sequence[BatchTask], run_ids: Sequence[str] | None) -> list[str]:
    """Check a batch's arguments; return one run id per task (new uuid4 hex ids if none).

    Raises:
        ArgumentTypeError: If ``tasks`` or ``run_ids`` is not a sequence (or a run id not
            a string).
        InvalidArgumentError: If ``run_ids`` has another length than ``tasks``, repeats an
            id, or holds an empty one.
    """
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Sequence):
        raise ArgumentTypeError(
            f"`tasks` must be a list of tasks, got {type(tasks).__name__}; for one task "
            "write `[task]`.",
            argument="tasks",
        )
    if run_ids is None:
        return [uuid.uuid4().hex for _ in tasks]
    if isinstance(run_ids, (str, bytes)) or not isinstance(run_ids, Sequence):
        raise ArgumentTypeError(
            f"`run_ids` must be a list of strings, got {type(run_ids).__name__}.",
            argument="run_ids",
        )
    if len(run_ids) != len(tasks):
        raise InvalidArgumentError(
            f"`run_ids` has {counted(len(run_ids), 'id')} for {counted(len(tasks), 'task')}; "
            "give one per task.",
            argument="run_ids",
        )
    seen: set[str] = set()
    for position, run_id in enumerate(run_ids):
        if not isinstance(run_id, str) or not run_id:
            raise InvalidArgumentError(
                f"`run_ids[{position}]` is {run_id!r}; run ids are non-empty strings.",
                argument="run_ids",
            )
        if run_id in seen:
            raise InvalidArgumentError(
                f"`run_ids` repeats `{run_id}`; each run needs its own id.", argument="run_ids"
            )
        seen.add(run_id)
    return list(run_ids)


def check_concurrency(value: int | None, argument: str) -> None:
    """Refuse a concurrency limit that is not None or a positive int."""
    if value is not None and (type(value) is not int or value < 1):
        raise InvalidArgumentError(
            f"`{argument}` must be a positive int or None (no limit), got {value!r}.",
            argument=argument,
        )


class BatchRunner(ABC):
    """What every runner of a batch does the same way: ``run_many`` and ``stream_many``
    check the batch, and ``run_many`` keeps the last item of each run that
    ``stream_many`` yields; a runner gives only how its runs run (``_stream``)."""

    async def run_many(
        self, tasks: Sequence[BatchTask], *, run_ids: Sequence[str] | None = None
    ) -> list[TaskResult | RunFailedError]:
        """Run every task; return one result per task, in the tasks' order.

        A run that fails for its own reason is returned as a
        [`RunFailedError`][flowlib.errors.RunFailedError] (with its partial result) in its
        place; the other runs go on.

        Args:
            tasks: The tasks (strings, chat messages or lists of chat messages).
            run_ids: One id per task (default: new ids). Reuse the ids to resume a batch.
        """
        ids = check_batch(tasks, run_ids)
        results = Results(len(ids))
        if ids:
            async for event in self._stream(ids, tasks, False):
                results.take(event.index, event.item)
        return results.in_order()

    async def stream_many(
        self,
        tasks: Sequence[BatchTask],
        *,
        run_ids: Sequence[str] | None = None,
        events: bool = True,
    ) -> AsyncIterator[RunEvent]:
        """Run every task, yielding each run's messages and events as they happen.

        Items of different runs interleave; each is a [`RunEvent`][flowlib.batch.RunEvent]
        tagged with its run id and task index. A run's last item is its ``TaskResult`` or
        its [`RunFailedError`][flowlib.errors.RunFailedError]. Leaving the loop early, or
        cancelling it, cancels the runs still running.

        Args:
            tasks: The tasks.
            run_ids: One id per task (default: new ids).
            events: False yields only each run's last item.
        """
        ids = check_batch(tasks, run_ids)
        if ids:
            # Closed with this stream (a loop left early), so its runs stop at once.
            async with contextlib.aclosing(self._stream(ids, tasks, events)) as stream:
                async for event in stream:
                    yield event

    @abstractmethod
    def _stream(
        self, ids: Sequence[str], tasks: Sequence[BatchTask], events: bool
    ) -> AsyncGenerator[RunEvent, None]:
        """Run the checked batch, not empty (``ids[i]`` is the run of ``tasks[i]``),
        yielding its items as ``stream_many`` does (``events`` False: only each run's
        last item)."""


class LocalRunner(BatchRunner):
    """Runs a batch of tasks in this process, many runs at once on one event loop.

    Each run gets a fresh team from ``factory``. Agents mostly wait on models, so one
    event loop holds hundreds of runs; a cluster is needed only beyond one machine (see
    [`RayRunner`][flowlib.distributed.RayRunner], which has the same methods).

    Args:
        factory: ``"module:function"``, ``"path/to/file.py:function"`` or a callable; it
            is called as ``factory(checkpoint_store=store)`` for each run (or with no
            arguments when there is no store) and returns a team.
        checkpoint_store: None (no checkpoints), a store object, or a store URL
            (``sqlite:///runs.db``, ``postgresql://...``; opened for each batch and
            closed after it). With a store, finished runs are skipped and unfinished
            ones resume.
        max_concurrency: How many runs run at once (None: all of them).
        reuse_teams: Give a finished run's team, reset, to a later run instead of
            building a new one each time (building costs more CPU than a short run).
            Set False if your factory's teams cannot be reset and reused.

    Raises:
        InvalidArgumentError: If ``factory`` names nothing callable or
            ``max_concurrency`` is not a positive int.

    Examples:
        ```python
        runner = LocalRunner("myflows:build", checkpoint_store="sqlite:///runs.db")
        results = await runner.run_many(["task one", "task two"])
        ```
    """

    def __init__(
        self,
        factory: Factory,
        *,
        checkpoint_store: str | os.PathLike[str] | CheckpointStore | None = None,
        max_concurrency: int | None = None,
        reuse_teams: bool = True,
    ) -> None:
        check_concurrency(max_concurrency, "max_concurrency")
        if checkpoint_store is not None and isinstance(checkpoint_store, (str, os.PathLike)):
            open_store(checkpoint_store)  # checks the URL now; opening is lazy
        self._factory = resolve_factory(factory)
        self._store_spec = checkpoint_store
        self._limit = max_concurrency
        self._reuse = reuse_teams

    @contextlib.asynccontextmanager
    async def _store(self) -> AsyncIterator[CheckpointStore | None]:
        spec = self._store_spec
        if spec is None or not isinstance(spec, (str, os.PathLike)):
            yield spec
            return
        store = open_store(spec)
        try:
            yield store
        finally:
            await store.close()

    async def _stream(
        self, ids: Sequence[str], tasks: Sequence[BatchTask], events: bool
    ) -> AsyncGenerator[RunEvent, None]:
        queue: asyncio.Queue[RunEvent | object] = asyncio.Queue()
        pending = iter(range(len(tasks)))

        async def work(teams: TeamPool) -> None:
            # A fixed pool of workers pulls the next task: no coroutine per waiting task,
            # so a batch of 100,000 tasks costs no more memory than its concurrency.
            for index in pending:
                run = run_items(teams, ids[index], tasks[index], events=events)
                async for item, skipped in run:
                    if events or isinstance(item, (TaskResult, RunFailedError)):
                        await queue.put(RunEvent(ids[index], index, item, skipped))

        async with self._store() as store:
            teams = TeamPool(self._factory, store, reuse=self._reuse)
            count = min(self._limit or len(tasks), len(tasks))
            workers = [asyncio.ensure_future(work(teams)) for _ in range(count)]

            def finished(_: Any) -> None:
                queue.put_nowait(_DONE)

            for worker in workers:
                worker.add_done_callback(finished)
            try:
                remaining = len(workers)
                while remaining:
                    got = await queue.get()
                    if got is _DONE:
                        remaining -= 1
                        continue
                    assert isinstance(got, RunEvent)
                    yield got
                for worker in workers:  # raise what a worker raised (cancellation, bugs)
                    worker.result()
            finally:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
