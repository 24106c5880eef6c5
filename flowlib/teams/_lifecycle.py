"""A team's run lifecycle: the one running guard, and the run's lease while it executes.

``RunLifecycle.claim`` marks the team running (one run at a time per team object: the
only "already running" guard; the executor trusts it). With a checkpoint store,
``RunLifecycle.lease`` holds the run's lease in the store for the whole execution:
taken before the first model or tool call, renewed by a heartbeat every ``ttl / 3``
seconds (a timer, never a write per turn), given up when the run stops. A second
executor of the same run, in any process, gets ``RunLeaseError`` before it calls
anything; a lease whose holder died expires after ``ttl`` seconds and may be taken over
(at once when the holder was a process of this machine that no longer exists).
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager, suppress
from typing import Any

from ..checkpoint import CheckpointStore
from ..errors import CheckpointError, RunLeaseError, TeamRunningError

__all__ = ["DEFAULT_LEASE_TTL", "RunLifecycle", "new_owner"]

DEFAULT_LEASE_TTL = 30.0
"""Seconds a run's lease lasts without renewal (renewed every third of it)."""

_ABANDON_SPINS = 8
"""Loop iterations a new run waits for an abandoned ``run_stream`` (left with ``break``)
to start closing; Python closes such a stream through the event loop, in 2 or 3."""


def new_owner() -> str:
    """A lease owner id unique to this executor: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _dead_local(owner: str) -> bool:
    """Whether ``owner`` (``host:pid:random``) names a process of this machine that no
    longer exists. A pid reused by a new process looks alive: the lease then expires."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by another user
        return False
    return False


class RunLifecycle:
    """The running guard and the lease of one team.

    Args:
        team: The team's name (in errors).
        lease_ttl: Seconds a lease lasts without renewal.
    """

    def __init__(self, team: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self._team = team
        self.lease_ttl = lease_ttl
        self._busy = False
        self._closing = False
        self._idle: asyncio.Event | None = None
        self.owner: str | None = None  # the lease owner while an execution holds one
        self.renewals = 0  # heartbeat writes made (tests and benchmarks read it)

    @property
    def busy(self) -> bool:
        """Whether a run of the team is in progress."""
        return self._busy

    async def claim(self) -> None:
        """Mark the team running, first letting an abandoned stream finish closing.

        Raises:
            TeamRunningError: If another run is in progress.
        """
        spins = 0
        while self._busy:
            if self._closing and self._idle is not None:
                await self._idle.wait()
                continue
            if spins >= _ABANDON_SPINS:
                raise TeamRunningError(
                    f"`{self._team}` is already running; wait for the current run to finish "
                    "(or stop it with ExternalTermination or a cancellation token, or close "
                    "its run_stream) before starting another."
                )
            spins += 1
            await asyncio.sleep(0)
        self._busy = True
        self._closing = False
        self._idle = asyncio.Event()

    def closing(self) -> None:
        """The consumer left the stream: a new run may wait for its cleanup."""
        self._closing = True

    def release(self) -> None:
        """The run is over: the team is free."""
        self._busy = False
        if self._idle is not None:
            self._idle.set()

    @asynccontextmanager
    async def lease(self, store: CheckpointStore, run_id: str) -> AsyncIterator[str]:
        """Hold ``run_id``'s lease while the body executes; yields the owner id.

        Raises:
            RunLeaseError: Another executor holds an unexpired lease on the run.
        """
        owner = new_owner()
        ttl = self.lease_ttl
        try:
            await _taken(store.acquire_lease(run_id, owner, ttl=ttl), store, run_id, owner)
        except RunLeaseError as exc:
            # A holder that was a process of this machine and is gone (killed) is not
            # waited for: its lease is released on its behalf (a no-op if it is no longer
            # the holder) and taken, still by one conditional write.
            if exc.holder is None or not _dead_local(exc.holder):
                raise
            await store.release_lease(run_id, exc.holder)
            await _taken(store.acquire_lease(run_id, owner, ttl=ttl), store, run_id, owner)
        self.owner = owner
        heartbeat = asyncio.ensure_future(self._heartbeat(store, run_id, owner, ttl))
        try:
            yield owner
        finally:
            heartbeat.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await heartbeat
            self.owner = None
            # A release that fails leaves a lease that expires by itself.
            with suppress(CheckpointError):
                await store.release_lease(run_id, owner)

    async def _heartbeat(self, store: CheckpointStore, run_id: str, owner: str, ttl: float) -> None:
        """Renew the lease every ``ttl / 3`` seconds. A renewal the store refuses (the
        lease was taken over after it expired) ends the heartbeat: the run's next
        checkpoint write is then refused with ``RunLeaseError``. A failed renewal is
        tried again at the next tick (two more chances before the lease expires)."""
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                await store.renew_lease(run_id, owner, ttl=ttl)
            except RunLeaseError:
                return
            except CheckpointError:
                continue
            self.renewals += 1


async def _taken(acquire: Awaitable[Any], store: CheckpointStore, run_id: str, owner: str) -> None:
    """Take a lease; cancelled while the store writes it, give it back once written.

    A store's write goes on after its caller is cancelled (a SQLite store writes in a
    thread): without this, the lease it granted would hold the run for a whole TTL
    against the next executor, in a process that is alive.
    """
    taking = asyncio.ensure_future(acquire)
    try:
        await asyncio.shield(taking)
    except asyncio.CancelledError:
        with suppress(Exception):
            await taking
            await store.release_lease(run_id, owner)
        raise
