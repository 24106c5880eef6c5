"""The driver's side of one batch: hand runs to whichever worker has room, collect their
items, take the runs of a dead worker up elsewhere, cancel everything on the way out.

One coroutine per worker loops: it tops its worker up to ``window`` runs from the
batch's queue and collects what the worker's runs produced, both in one Ray call
(``RunWorker.exchange``). A worker that finishes runs sooner asks again sooner, so it
gets more of them. The tasks not yet handed out stay in the driver as indices into the
caller's list: no Ray object, no coroutine and no future per waiting task.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ray.exceptions import ActorDiedError, RayActorError

from ..base import TaskResult
from ..batch import BatchTask, RunItem
from ..errors import RayWorkersError, RunFailedError

__all__ = ["Dispatch", "Worker"]

_log = logging.getLogger("flowlib.distributed")

_WAIT = 1.0
"""How long one exchange waits for items when its worker has nothing new (seconds)."""

_PROBE = 2.0
"""How long a liveness probe of an unanswering worker waits (seconds)."""


@dataclass
class Worker:
    """A worker actor as the driver knows it."""

    handle: Any
    incarnation: str
    name: str
    down_since: float | None = None


Deliver = Callable[[int, RunItem, bool], Awaitable[None]]
"""Takes one item of one run: its index, the item, whether it was found finished."""

Died = Callable[[int, BaseException], Awaitable[RunFailedError]]
"""Builds the failure of a run whose worker died once too often."""


@dataclass
class _Slot:
    """One worker's part in this batch: the runs it holds."""

    worker: Worker
    holding: set[int] = field(default_factory=set)


class Dispatch:
    """Runs one batch over the workers; ``run()`` returns when every run has ended.

    Args:
        workers: The runner's workers.
        ids: One run id per task.
        tasks: The tasks.
        events: Whether the runs' messages and events cross too (or only results).
        deliver: Called with every item, in the order each worker produced them.
        died: Builds a run's failure after its worker died ``max_retries + 1`` times.
        window: Runs handed to one worker at once (its slots plus a few queued there,
            so it does not idle for a round trip).
        max_retries: How often a run is taken up again after its worker died.
        lost_after: How long a worker may not answer before its runs are taken up
            elsewhere (seconds).
        give_up: How long no worker may answer before the batch fails (seconds).
    """

    def __init__(
        self,
        workers: Sequence[Worker],
        ids: Sequence[str],
        tasks: Sequence[BatchTask],
        *,
        events: bool,
        deliver: Deliver,
        died: Died,
        window: int,
        max_retries: int,
        lost_after: float,
        give_up: float,
    ) -> None:
        self.batch_id = uuid.uuid4().hex
        self._slots = [_Slot(worker) for worker in workers]
        self._ids = ids
        self._tasks = tasks
        self._events = events
        self._deliver = deliver
        self._died = died
        self._window = window
        self._max_retries = max_retries
        self._lost_after = lost_after
        self._give_up = give_up
        self._queue: collections.deque[int] = collections.deque(range(len(tasks)))
        self._deaths: dict[int, int] = {}
        self._left = len(tasks)
        self._changed = asyncio.Event()  # work was queued again, or the batch ended

    async def run(self) -> None:
        """Run the batch; on any exit but the end of every run (cancellation, an error
        of the caller), cancel the runs still on the workers."""
        if not self._left:
            return
        loops = [asyncio.ensure_future(self._drive(slot)) for slot in self._slots]
        try:
            await asyncio.gather(*loops)
        finally:
            for loop in loops:
                loop.cancel()
            await asyncio.gather(*loops, return_exceptions=True)

    async def cancel(self, timeout: float) -> int:
        """Cancel the batch's runs on every worker, waiting up to ``timeout`` seconds
        for them to stop (each records its stop). Returns how many stopped."""
        calls = [slot.worker.handle.cancel.remote(self.batch_id) for slot in self._slots]
        done, pending = await asyncio.wait(
            [asyncio.ensure_future(_awaited(call)) for call in calls], timeout=timeout
        )
        for call in pending:
            call.cancel()
        if pending:
            _log.warning(
                "%d of %d workers did not confirm within %.0f s that the batch's runs "
                "stopped; their runs are stopped when the workers answer.",
                len(pending),
                len(calls),
                timeout,
            )
        stopped = 0
        for call in done:
            if not call.cancelled() and call.exception() is None:
                stopped += int(call.result())
        return stopped

    def _take(self, room: int) -> list[int]:
        taken: list[int] = []
        while self._queue and len(taken) < room:
            taken.append(self._queue.popleft())
        return taken

    async def _lost(self, slot: _Slot, exc: BaseException) -> None:
        """The worker lost the runs it held (it died, or stopped answering): queue them
        again, or fail those whose worker died once too often."""
        lost, slot.holding = sorted(slot.holding), set()
        again: list[int] = []
        for index in lost:
            deaths = self._deaths.get(index, 0) + 1
            self._deaths[index] = deaths
            if deaths > self._max_retries:
                self._left -= 1
                await self._deliver(index, await self._died(index, exc), False)
            else:
                again.append(index)
        self._queue.extendleft(reversed(again))  # before the runs not yet begun
        self._changed.set()

    async def _revive(self, slot: _Slot) -> bool:
        """Probe a worker that did not answer; True once it answers again."""
        worker = slot.worker
        try:
            incarnation = await asyncio.wait_for(_awaited(worker.handle.hello.remote()), _PROBE)
        except (RayActorError, TimeoutError) as exc:
            now = time.monotonic()
            down = now - (worker.down_since or now)
            if all(
                s.worker.down_since is not None and now - s.worker.down_since > self._give_up
                for s in self._slots
            ):
                raise RayWorkersError(
                    f"No worker has answered for {self._give_up:.0f} s (the last: "
                    f"{type(exc).__name__}: {exc}); the batch cannot go on. Runs that "
                    "checkpointed resume when the batch runs again."
                ) from exc
            if slot.holding and _gone(exc):  # the process that held them is dead
                await self._lost(slot, exc)
            if slot.holding and down > self._lost_after:
                _log.warning(
                    "%s has not answered for %.0f s; its runs go elsewhere", worker.name, down
                )
                await self._lost(slot, exc)
            await asyncio.sleep(min(1.0, _PROBE))
            return False
        if incarnation != worker.incarnation:  # restarted: the runs it held are gone
            worker.incarnation = incarnation
            if slot.holding:
                await self._lost(slot, RuntimeError(f"{worker.name} restarted"))
        worker.down_since = None
        return True

    async def _drive(self, slot: _Slot) -> None:
        worker = slot.worker
        while self._left > 0:
            if worker.down_since is not None and not await self._revive(slot):
                continue
            submit = self._take(self._window - len(slot.holding))
            if not submit and not slot.holding:
                self._changed.clear()
                await self._changed.wait()
                continue
            slot.holding.update(submit)
            batch = [(i, self._ids[i], self._tasks[i]) for i in submit]
            call = worker.handle.exchange.remote(self.batch_id, batch, self._events, _WAIT)
            try:
                incarnation, items = await _awaited(call)
            except RayActorError as exc:
                _log.info("%s did not answer (%s); probing it", worker.name, type(exc).__name__)
                worker.down_since = time.monotonic()
                if _gone(exc):  # its process is gone, and its runs with it
                    await self._lost(slot, exc)
                continue
            if incarnation != worker.incarnation:
                # The worker restarted since the last call: only this call's runs are
                # on it; the ones it held before are lost.
                worker.incarnation = incarnation
                before = slot.holding - set(submit)
                slot.holding = before
                if before:
                    await self._lost(slot, RuntimeError(f"{worker.name} restarted"))
                slot.holding = set(submit)
            for index, item, skipped in items:
                done = isinstance(item, (TaskResult, RunFailedError))
                if done:
                    if index not in slot.holding:
                        continue  # a run already given up on; its result came late
                    slot.holding.discard(index)
                    self._left -= 1
                elif index not in slot.holding:
                    continue
                await self._deliver(index, item, skipped)
        self._changed.set()  # wake the idle loops: the batch is over


def _gone(exc: BaseException) -> bool:
    """Whether a Ray error says the actor's process is dead (it died, or Ray is
    restarting it), not merely slow or unreachable."""
    if isinstance(exc, ActorDiedError):
        return True
    return isinstance(exc, RayActorError) and "actor is restarting" in str(exc)


async def _awaited(ref: Any) -> Any:
    """Await a Ray object ref (a local one, or a Ray Client one over ``ray://``)."""
    future = getattr(ref, "future", None)
    if future is not None and type(ref).__name__ == "ClientObjectRef":
        return await asyncio.wrap_future(future())
    return await ref
