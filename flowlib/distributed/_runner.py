"""Batches of runs on a Ray cluster: async actors holding many runs each."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

from ..base import TaskResult
from ..batch import BatchTask, Factory, RunEvent, RunItem, store_url, stored_result
from ..batch._local import check_batch, check_concurrency
from ..checkpoint import CheckpointStore
from ..errors import ArgumentTypeError, InvalidArgumentError, RunFailedError
from ._worker import RunWorker

__all__ = ["RayRunner"]

_DONE = object()
_DIED = (RayActorError, WorkerCrashedError)


def _factory_reference(factory: Factory) -> Factory:
    if callable(factory):
        return factory
    if not isinstance(factory, str):
        raise ArgumentTypeError(
            f"`factory` must be a 'module:function' string or a picklable callable, got "
            f"{type(factory).__name__}.",
            argument="factory",
        )
    where, sep, name = factory.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise InvalidArgumentError(
            f"`factory` {factory!r} is not `module:function` or `path/to/file.py:function`.",
            argument="factory",
        )
    if where.endswith(".py"):  # workers on this machine start in another directory
        return f"{os.path.abspath(where)}:{name}"
    return factory


class RayRunner:
    """Runs a batch of tasks on a Ray cluster, durably.

    The runner starts ``workers`` Ray actors; each holds up to ``max_concurrency`` runs
    at once on its own event loop (agents mostly wait on models). Run ``i`` goes to
    worker ``i % workers``. Each run checkpoints to ``checkpoint_store`` after every
    turn. When a worker process dies, Ray restarts it and retries its runs (up to
    ``max_retries`` times each); a retried run finds its checkpoints and resumes after
    its last recorded turn, so finished turns do not run again. A run that fails for its
    own reason (an agent raised) is not retried: it comes back as a
    [`RunFailedError`][flowlib.errors.RunFailedError] with its partial result.

    The same methods as [`LocalRunner`][flowlib.batch.LocalRunner]: moving a batch to a
    cluster changes only the runner.

    Args:
        factory: ``"module:function"`` (importable on the workers),
            ``"path/to/file.py:function"`` (a file the workers can read) or a picklable
            callable; called on a worker as ``factory(checkpoint_store=store)`` per run.
        checkpoint_store: A store URL (``postgresql://...`` for a cluster of several
            machines, ``sqlite:///path.db`` on one machine), a SQLite or PostgreSQL store
            object (reopened on each worker from its URL), or None (no checkpoints: a
            retried run starts over).
        address: The cluster to join (``"auto"``, ``"ray://host:10001"``, ...); None
            starts a local cluster, or uses the one this process already joined.
        max_concurrency: Runs one worker holds at once (None: Ray's default for async
            actors, 1,000).
        max_retries: How often a run is retried after its worker died.
        workers: How many worker actors (None: one per CPU of the cluster). Each takes
            one CPU.
        reuse_teams: Reset and reuse the teams of finished runs on each worker (see
            [`TeamPool`][flowlib.batch.TeamPool]).

    Raises:
        InvalidArgumentError: If an argument is out of range (at the first batch: if no
            cluster answers at ``address``), or
            [`CheckpointArgumentError`][flowlib.errors.CheckpointArgumentError] if the
            store cannot be reopened on a worker (an in-memory store).

    Examples:
        ```python
        runner = RayRunner("myflows:build", checkpoint_store="postgresql://db/runs",
                           address="auto")
        results = await runner.run_many(tasks)
        await runner.close()
        ```
    """

    def __init__(
        self,
        factory: Factory,
        *,
        checkpoint_store: str | os.PathLike[str] | CheckpointStore | None,
        address: str | None = None,
        max_concurrency: int | None = None,
        max_retries: int = 3,
        workers: int | None = None,
        reuse_teams: bool = True,
    ) -> None:
        check_concurrency(max_concurrency, "max_concurrency")
        check_concurrency(workers, "workers")
        if type(max_retries) is not int or max_retries < 0:
            raise InvalidArgumentError(
                f"`max_retries` must be an int >= 0, got {max_retries!r}.",
                argument="max_retries",
            )
        if address is not None and not isinstance(address, str):
            raise ArgumentTypeError(
                f"`address` must be a string such as 'auto', got {type(address).__name__}.",
                argument="address",
            )
        self._factory = _factory_reference(factory)
        self._store_url = None if checkpoint_store is None else store_url(checkpoint_store)
        self._address = address
        self._max_concurrency = max_concurrency or 1000
        self._max_retries = max_retries
        self._workers = workers
        self._reuse = reuse_teams
        self._actors: list[Any] = []
        self._started_ray = False

    @property
    def actors(self) -> list[Any]:
        """The worker actors' handles (empty before the first batch)."""
        return list(self._actors)

    async def start(self) -> None:
        """Join (or start) the cluster and start the workers; the first batch does it
        if you do not.

        Raises:
            InvalidArgumentError: If a worker cannot build a team from the factory (the
                message says why).
        """
        if self._actors:
            return
        if not ray.is_initialized():
            try:
                ray.init(address=self._address, include_dashboard=False, log_to_driver=False)
            except ConnectionError as exc:
                raise InvalidArgumentError(
                    f"No Ray cluster at `{self._address}`: {exc}. Start one (`ray start "
                    "--head`), or pass `address=None` for a local cluster.",
                    argument="address",
                ) from exc
            self._started_ray = True
        cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
        count = self._workers or max(1, int(cpus))
        actor: Any = ray.remote(RunWorker).options(
            num_cpus=1,
            max_restarts=-1,
            max_task_retries=self._max_retries,
            max_concurrency=self._max_concurrency,
            scheduling_strategy="SPREAD",
        )
        actors: list[Any] = [
            actor.remote(self._factory, self._store_url, self._reuse) for _ in range(count)
        ]
        problems = await asyncio.gather(*(a.check.remote() for a in actors))
        if any(problems):
            self._actors = actors
            await self.close()
            problem = next(p for p in problems if p)
            raise InvalidArgumentError(
                f"A Ray worker cannot build a team from `factory`: {problem}",
                argument="factory",
            )
        self._actors = actors

    async def close(self) -> None:
        """Stop the workers; disconnect from Ray if the runner connected (a local cluster
        it started stops)."""
        for handle in self._actors:
            ray.kill(handle)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    async def __aenter__(self) -> RayRunner:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _died(self, run_id: str, exc: BaseException) -> RunFailedError:
        partial: TaskResult | None = None
        if self._store_url is not None:
            from ..batch import open_store

            store = open_store(self._store_url)
            try:
                if await store.get_run(run_id) is not None:
                    partial = await stored_result(store, run_id)
            finally:
                await store.close()
        return RunFailedError(
            run_id,
            "WorkerDied",
            f"its worker died {self._max_retries + 1} times ({type(exc).__name__}: {exc})",
            partial_result=partial or TaskResult(messages=[]),
        )

    def _task_failed(self, run_id: str, exc: RayTaskError) -> RunFailedError:
        cause = exc.cause if isinstance(exc.cause, BaseException) else exc
        return RunFailedError(
            run_id,
            type(cause).__name__,
            str(cause),
            partial_result=TaskResult(messages=[]),
            traceback=str(exc),
        )

    async def _await(self, run_id: str, ref: Any) -> TaskResult | RunFailedError:
        try:
            result: TaskResult | RunFailedError = await ref
        except _DIED as exc:
            return await self._died(run_id, exc)
        except RayTaskError as exc:
            return self._task_failed(run_id, exc)
        return result

    async def run_many(
        self, tasks: Sequence[BatchTask], *, run_ids: Sequence[str] | None = None
    ) -> list[TaskResult | RunFailedError]:
        """Run every task on the cluster; return one result per task, in order.

        A run that failed (its own error, or its worker died more than ``max_retries``
        times) is a [`RunFailedError`][flowlib.errors.RunFailedError] in its place.

        Args:
            tasks: The tasks (strings, chat messages or lists of chat messages).
            run_ids: One id per task (default: new ids). Reuse the ids to resume a batch.
        """
        ids = check_batch(tasks, run_ids)
        await self.start()
        count = len(self._actors)
        refs = [
            self._actors[i % count].run.remote(run_id, task)
            for i, (run_id, task) in enumerate(zip(ids, tasks, strict=True))
        ]
        waits = (self._await(run_id, ref) for run_id, ref in zip(ids, refs, strict=True))
        return list(await asyncio.gather(*waits))

    async def _stream_one(
        self, index: int, run_id: str, task: BatchTask, queue: asyncio.Queue[Any], events: bool
    ) -> None:
        actor = self._actors[index % len(self._actors)]
        try:
            if events:
                # Not retried by Ray: a retried stream of a resumed run yields other items
                # than the first attempt did; below, the run resumes as a plain call.
                stream = actor.stream.options(num_returns="streaming", max_task_retries=0)
                generator = stream.remote(run_id, task)
                async for ref in generator:
                    item: RunItem = await ref
                    await queue.put(RunEvent(run_id, index, item))
                return
        except _DIED:
            pass  # the run resumes below from its last checkpoint; its result follows
        except RayTaskError as exc:
            await queue.put(RunEvent(run_id, index, self._task_failed(run_id, exc)))
            return
        final = await self._await(run_id, actor.run.remote(run_id, task))
        await queue.put(RunEvent(run_id, index, final))

    async def stream_many(
        self,
        tasks: Sequence[BatchTask],
        *,
        run_ids: Sequence[str] | None = None,
        events: bool = True,
    ) -> AsyncIterator[RunEvent]:
        """Run every task on the cluster, yielding each run's items as they happen.

        Each is a [`RunEvent`][flowlib.batch.RunEvent] tagged with its run id and task
        index; a run's last item is its ``TaskResult`` or its
        [`RunFailedError`][flowlib.errors.RunFailedError]. When a worker dies, its runs
        resume elsewhere and only their final results follow.

        Args:
            tasks: The tasks.
            run_ids: One id per task (default: new ids).
            events: False yields only each run's last item.
        """
        ids = check_batch(tasks, run_ids)
        if not tasks:
            return
        await self.start()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        consumers = [
            asyncio.ensure_future(self._stream_one(i, ids[i], tasks[i], queue, events))
            for i in range(len(tasks))
        ]
        for consumer in consumers:
            consumer.add_done_callback(lambda _: queue.put_nowait(_DONE))
        try:
            remaining = len(consumers)
            while remaining:
                got = await queue.get()
                if got is _DONE:
                    remaining -= 1
                    continue
                yield got
            for consumer in consumers:
                consumer.result()
        finally:
            for consumer in consumers:
                consumer.cancel()
            await asyncio.gather(*consumers, return_exceptions=True)
