"""Batches of runs on a Ray cluster: async actors holding many runs each."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

import ray

from ..base import TaskResult
from ..batch import BatchTask, Factory, RunEvent, RunItem, store_url, stored_result
from ..batch.internal import BatchRunner, check_concurrency, factory_reference
from ..checkpoint import CheckpointStore
from ..errors import ArgumentTypeError, InvalidArgumentError, RunFailedError
from ._cluster import connect, placeable, wait_ready
from ._dispatch import Dispatch, Worker, _awaited
from ._worker import RunWorker

__all__ = ["RayRunner"]

_END = object()


def _factory_reference(factory: Factory, working_dir: str | None) -> Factory:
    reference = factory_reference(factory)
    if reference is None:
        return factory
    where, name = reference
    if not where.endswith(".py"):
        return factory
    path = os.path.abspath(where)
    if working_dir is not None:
        # Workers run in their copy of the working_dir: name the file inside it.
        root = os.path.abspath(working_dir)
        if os.path.commonpath([root, path]) == root:
            return f"{os.path.relpath(path, root)}:{name}"
    return f"{path}:{name}"  # workers on this machine start in another directory


def _of_type(value: Any, kind: type[Any], argument: str, wanted: str) -> None:
    """Refuse a value (other than None) that is not of ``kind``."""
    if value is not None and not isinstance(value, kind):
        raise ArgumentTypeError(
            f"`{argument}` must be {wanted}, got {type(value).__name__}.", argument=argument
        )


def _positive(value: float | None, argument: str, *, zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(
            f"`{argument}` must be a number, got {type(value).__name__}.", argument=argument
        )
    if value < 0 or (value == 0 and not zero):
        raise InvalidArgumentError(
            f"`{argument}` must be {'>= 0' if zero else '> 0'}, got {value!r}.", argument=argument
        )


def _check_actor_runtime_env(runtime_env: Mapping[str, Any]) -> None:
    """Refuse local folders in a runtime_env for actors: Ray uploads them only for a job
    (``ray.init(runtime_env=...)``)."""
    local: list[str] = []
    working_dir = runtime_env.get("working_dir")
    if isinstance(working_dir, str) and "://" not in working_dir:
        local.append(f"working_dir={working_dir!r}")
    for module in runtime_env.get("py_modules") or []:
        if isinstance(module, str) and "://" not in module:
            local.append(f"py_modules: {module!r}")
    if local:
        raise InvalidArgumentError(
            f"`runtime_env` names local folders ({', '.join(local)}) but this process "
            "joined Ray before the runner did, and Ray uploads local folders only for a "
            "job: pass `runtime_env` to your `ray.init(...)`, or let the runner join "
            "(`address=...` without calling `ray.init` first), or give a URI "
            "(`s3://...`, `gs://...`, `https://.../code.zip`).",
            argument="runtime_env",
        )


class RayRunner(BatchRunner):
    """Runs a batch of tasks on a Ray cluster, durably.

    The runner starts ``workers`` Ray actors; each holds up to ``max_concurrency`` runs
    at once on its own event loop (agents mostly wait on models). The driver hands runs
    to whichever worker has room, a few more than its ``max_concurrency`` so it never
    idles for a round trip, and keeps the rest; results and events come back in
    batches, one Ray call per batch. Each run checkpoints to ``checkpoint_store`` after
    every turn. When a worker process dies (or stops answering for ``lost_after``
    seconds), its runs are taken up by the workers that answer, Ray restarts it, and a
    run is retried up to ``max_retries`` times; a retried run finds its checkpoints and
    resumes after its last recorded turn, so finished turns do not run again (in
    ``stream_many``, its items go on from there: a turn that was in flight may show
    again). A run that fails for its own reason (an agent raised) is not retried: it
    comes back as a [`RunFailedError`][flowlib.errors.RunFailedError] with its partial
    result.

    Cancelling ``run_many`` or ``stream_many`` (or leaving ``stream_many`` early)
    cancels the batch's runs on the workers and waits up to ``cancel_timeout`` seconds
    for them to stop: each records its stop, so the batch run again resumes them.

    The same methods as [`LocalRunner`][flowlib.batch.LocalRunner]: moving a batch to a
    cluster changes only the runner.

    Args:
        factory: ``"module:function"`` (importable on the workers),
            ``"path/to/file.py:function"`` (a file the workers can read, or a file inside
            ``runtime_env``'s ``working_dir``) or a picklable callable; called on a
            worker as ``factory(checkpoint_store=store)`` per run.
        checkpoint_store: A store URL (``postgresql://...`` for a cluster of several
            machines, ``sqlite:///path.db`` on one machine), a SQLite or PostgreSQL store
            object (reopened on each worker from its URL), or None (no checkpoints: a
            retried run starts over).
        address: The cluster to join (``"auto"``, ``"host:6379"``,
            ``"ray://host:10001"``); None starts a local cluster, or uses the one this
            process already joined.
        max_concurrency: Runs one worker holds at once (None: 1,000).
        max_retries: How often a run is retried after its worker died.
        workers: How many worker actors (None: as many as the cluster's CPUs hold, at
            ``num_cpus`` each).
        reuse_teams: Reset and reuse the teams of finished runs on each worker (see
            [`TeamPool`][flowlib.batch.TeamPool]).
        runtime_env: Ray's runtime environment for the workers, e.g.
            ``{"working_dir": ".", "pip": ["mypkg"]}`` (ships code and installs packages).
            When the runner joins Ray it is the job's (``ray.init(runtime_env=...)``);
            when this process had joined before, it goes to the worker actors, where
            Ray takes folders only as URIs.
        num_cpus: CPUs each worker reserves (a fraction is allowed).
        num_gpus: GPUs each worker reserves.
        resources: Custom resources each worker reserves (``{"big_node": 1}``): workers go
            only to nodes that have them.
        scheduling_strategy: Where Ray puts the workers: ``"SPREAD"`` (over the nodes),
            ``"DEFAULT"``, or a Ray strategy object (a placement group's, a node
            affinity).
        include_dashboard: When the runner starts or joins Ray: Ray's dashboard on, off
            or (None) as Ray decides.
        log_to_driver: When the runner starts or joins Ray: print the workers' output
            here (Ray's default), or not.
        connect_timeout: Seconds to wait for something to answer at ``address``.
        ready_timeout: Seconds to wait for every worker to be placed and build a team.
        cancel_timeout: Seconds to wait for the workers to stop a cancelled batch's runs.
        lost_after: Seconds a worker may not answer before its runs go to other workers.

    Raises:
        InvalidArgumentError: If an argument is out of range, or
            [`CheckpointArgumentError`][flowlib.errors.CheckpointArgumentError] if the
            store cannot be reopened on a worker (an in-memory store). At the first
            batch (or ``start()``): [`RayConnectionError`][flowlib.errors.RayConnectionError]
            if nothing answers at ``address`` (within ``connect_timeout``),
            [`RayWorkersError`][flowlib.errors.RayWorkersError] if the cluster cannot hold
            the workers (at once) or they are not ready within ``ready_timeout``.

    Examples:
        ```python
        runner = RayRunner("myflows:build", checkpoint_store="postgresql://db/runs",
                           address="auto", runtime_env={"working_dir": "."})
        async with runner:
            results = await runner.run_many(tasks)
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
        runtime_env: Mapping[str, Any] | None = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
        resources: Mapping[str, float] | None = None,
        scheduling_strategy: Any = "SPREAD",
        include_dashboard: bool | None = None,
        log_to_driver: bool = True,
        connect_timeout: float = 10.0,
        ready_timeout: float = 120.0,
        cancel_timeout: float = 30.0,
        lost_after: float = 30.0,
    ) -> None:
        check_concurrency(max_concurrency, "max_concurrency")
        check_concurrency(workers, "workers")
        if type(max_retries) is not int or max_retries < 0:
            raise InvalidArgumentError(
                f"`max_retries` must be an int >= 0, got {max_retries!r}.",
                argument="max_retries",
            )
        _of_type(address, str, "address", "a string such as 'auto'")
        _of_type(runtime_env, Mapping, "runtime_env", "a dict such as {'working_dir': '.'}")
        _of_type(resources, Mapping, "resources", "a dict of resource name to amount")
        _positive(num_cpus, "num_cpus", zero=True)
        _positive(num_gpus, "num_gpus", zero=True)
        for name in ("connect_timeout", "ready_timeout", "cancel_timeout", "lost_after"):
            _positive(locals()[name], name)
        if resources is not None:
            for name, amount in resources.items():
                if name in ("CPU", "GPU"):
                    raise InvalidArgumentError(
                        f"`resources` names `{name}`: pass it as `num_{name.lower()}s`.",
                        argument="resources",
                    )
                _positive(amount, f"resources[{name!r}]", zero=True)
        self._runtime_env = dict(runtime_env) if runtime_env is not None else None
        working_dir = (self._runtime_env or {}).get("working_dir")
        self._factory = _factory_reference(
            factory, working_dir if isinstance(working_dir, str) else None
        )
        self._store_url = None if checkpoint_store is None else store_url(checkpoint_store)
        self._address = address
        self._max_concurrency = max_concurrency or 1000
        self._max_retries = max_retries
        self._workers = workers
        self._reuse = reuse_teams
        self._per_worker = {"CPU": float(num_cpus), "GPU": float(num_gpus)}
        self._per_worker.update({k: float(v) for k, v in (resources or {}).items()})
        self._scheduling = scheduling_strategy
        self._dashboard = include_dashboard
        self._log_to_driver = log_to_driver
        self._connect_timeout = connect_timeout
        self._ready_timeout = ready_timeout
        self._cancel_timeout = cancel_timeout
        self._lost_after = lost_after
        self._actors: list[Worker] = []
        self._started_ray = False
        self._starting: asyncio.Lock | None = None

    @property
    def actors(self) -> list[Any]:
        """The worker actors' handles (empty before the first batch)."""
        return [worker.handle for worker in self._actors]

    async def start(self) -> None:
        """Join (or start) the cluster and start the workers; the first batch does it
        if you do not. Returns when every worker has built a team.

        Raises:
            RayConnectionError: If nothing answers at ``address`` within
                ``connect_timeout`` seconds.
            RayWorkersError: If the cluster cannot hold the workers, or they are not all
                ready within ``ready_timeout`` seconds.
            InvalidArgumentError: If a worker cannot build a team from the factory (the
                message says why).
        """
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if not self._actors:
                await self._start()

    async def _start(self) -> None:
        self._started_ray = connect(
            self._address,
            timeout=self._connect_timeout,
            include_dashboard=self._dashboard,
            log_to_driver=self._log_to_driver,
            runtime_env=self._runtime_env,
        )
        try:
            if not self._started_ray and self._runtime_env is not None:
                _check_actor_runtime_env(self._runtime_env)
            cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
            each = self._per_worker["CPU"]
            count = self._workers or max(1, int(cpus // each) if each else int(cpus))
            placeable(count, self._per_worker)
            options: dict[str, Any] = {
                "num_cpus": self._per_worker["CPU"],
                "num_gpus": self._per_worker["GPU"],
                "max_restarts": -1,
                "max_task_retries": 0,  # the driver takes a dead worker's runs up itself
                "max_concurrency": 64,  # Ray calls at once (runs are asyncio tasks)
                "scheduling_strategy": self._scheduling,
            }
            custom = {k: v for k, v in self._per_worker.items() if k not in ("CPU", "GPU")}
            if custom:
                options["resources"] = custom
            if self._runtime_env is not None and not self._started_ray:
                # Ray was joined before: the environment goes to the workers themselves
                # (when the runner joins, it is the job's, given to `ray.init`).
                options["runtime_env"] = self._runtime_env
            actor: Any = ray.remote(RunWorker).options(**options)
            args = (self._factory, self._store_url, self._reuse, self._max_concurrency)
            handles = [actor.remote(*args) for _ in range(count)]
            try:
                problems = await wait_ready(handles, self._ready_timeout, self._per_worker)
            except BaseException:
                for handle in handles:
                    ray.kill(handle)
                raise
            if any(problems):
                for handle in handles:
                    ray.kill(handle)
                problem = next(p for p in problems if p)
                raise InvalidArgumentError(
                    f"A Ray worker cannot build a team from `factory`: {problem}",
                    argument="factory",
                )
            incarnations = await asyncio.gather(*(_awaited(h.hello.remote()) for h in handles))
        except BaseException:
            self._disconnect()
            raise
        self._actors = [
            Worker(handle, incarnation, f"worker {i}")
            for i, (handle, incarnation) in enumerate(zip(handles, incarnations, strict=True))
        ]

    def _disconnect(self) -> None:
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    async def close(self) -> None:
        """Stop the workers; disconnect from Ray if the runner connected (a local cluster
        it started stops)."""
        for worker in self._actors:
            ray.kill(worker.handle)
        self._actors = []
        self._disconnect()

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

    def _dispatch(
        self,
        ids: Sequence[str],
        tasks: Sequence[BatchTask],
        events: bool,
        deliver: Any,
    ) -> Dispatch:
        async def died(index: int, exc: BaseException) -> RunFailedError:
            return await self._died(ids[index], exc)

        window = self._max_concurrency + max(1, self._max_concurrency // 4)
        return Dispatch(
            self._actors,
            ids,
            tasks,
            events=events,
            deliver=deliver,
            died=died,
            window=window,
            max_retries=self._max_retries,
            lost_after=self._lost_after,
            give_up=self._ready_timeout,
        )

    async def _run(self, dispatch: Dispatch) -> None:
        """Run a dispatch; cancel its runs on the workers unless it ran to its end."""
        ended = False
        try:
            await dispatch.run()
            ended = True
        finally:
            if not ended:
                await dispatch.cancel(self._cancel_timeout)

    async def _stream(
        self, ids: Sequence[str], tasks: Sequence[BatchTask], events: bool
    ) -> AsyncGenerator[RunEvent, None]:
        await self.start()
        # Bounded: a consumer that stops reading stops the workers' loops, so no more
        # runs are handed out until it reads again.
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=4 * self._max_concurrency)

        async def deliver(index: int, item: RunItem, skipped: bool) -> None:
            await queue.put(RunEvent(ids[index], index, item, skipped))

        dispatch = self._dispatch(ids, tasks, events, deliver)
        failed: list[BaseException] = []

        async def produce() -> None:
            try:
                await self._run(dispatch)
            except Exception as exc:  # raised in the consumer's task, below
                failed.append(exc)
            await queue.put(_END)

        batch = asyncio.ensure_future(produce())
        try:
            while (got := await queue.get()) is not _END:
                yield got
            if failed:
                raise failed[0]
        finally:
            if not batch.done():
                batch.cancel()
            await asyncio.gather(batch, return_exceptions=True)
