"""A run whose own lease expired because its renewals came late (a loaded machine or
store), and that nobody took over, goes on: the checkpoint write renews the lease and is
made once more. A run another executor took over is still refused."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from flowlib.agents import FunctionAgent
from flowlib.checkpoint import InMemoryCheckpointStore, Lease
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import RunLeaseError
from flowlib.messages import BaseChatMessage, TextMessage
from flowlib.teams import RoundRobinGroupChat

TTL = 0.3


class LateRenewals(InMemoryCheckpointStore):
    """Every renewal waits 1 s, more than a lease lasts (it queues behind other writes)."""

    def __init__(self) -> None:
        super().__init__()
        self.take_over = False

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        await asyncio.sleep(1.0)
        if self.take_over:  # another executor takes the expired lease first
            await self.acquire_lease(run_id, "someone-else", ttl=60)
        return await super().renew_lease(run_id, owner, ttl=ttl)


def _agent(name: str) -> FunctionAgent:
    async def reply(messages: Sequence[BaseChatMessage]) -> BaseChatMessage:
        await asyncio.sleep(2 * TTL)  # the lease expires during the turn
        return TextMessage(content=f"{name} {len(messages)}", source=name)

    return FunctionAgent(reply, name=name)


def _team(store: InMemoryCheckpointStore) -> RoundRobinGroupChat:
    team = RoundRobinGroupChat(
        [_agent("a"), _agent("b")],
        termination_condition=MaxMessageTermination(3),
        checkpoint_store=store,
    )
    team.lease_ttl = TTL
    return team


async def test_a_run_whose_own_lease_expired_goes_on() -> None:
    store = LateRenewals()
    result = await _team(store).run(task="go", run_id="r1")
    assert [m.source for m in result.messages] == ["user", "a", "b"]
    run = await store.get_run("r1")
    assert run is not None and run.status == "stopped"  # by its condition, resumable


async def test_a_run_taken_over_meanwhile_is_still_refused() -> None:
    store = LateRenewals()
    store.take_over = True
    with pytest.raises(RunLeaseError, match="someone-else"):
        await _team(store).run(task="go", run_id="r2")
