"""Explicit run entry points and leases (issue 20 items 3 and 5).

``start_run``, ``resume_run``, ``continue_run`` and ``fork_run`` each say what they want;
an id the store lacks, a run with no records or an entry point that does not fit the
run is refused by name, creating nothing and calling no model. A run being executed
holds a lease: a second executor is refused before any model call, in both durability
modes; a dead executor's lease expires and is taken over; the heartbeat renews it on a
timer, not per turn.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from _bounded import build

from flowlib.checkpoint import CheckpointStore, InMemoryCheckpointStore, SQLiteCheckpointStore
from flowlib.errors import (
    RunExistsError,
    RunLeaseError,
    RunNotFoundError,
    RunStatusError,
)
from flowlib.teams import BaseGroupChat

CALLS = 10_000


def team(
    store: CheckpointStore, calls: list[int] | None = None, bound: str = "max_turns"
) -> BaseGroupChat:
    return build("round_robin", bound, store, calls if calls is not None else [CALLS])


def spent(calls: list[int]) -> int:
    return CALLS - calls[0]


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    opened = SQLiteCheckpointStore(tmp_path / "runs.db")
    yield opened
    await opened.close()


async def test_resuming_an_unknown_id_raises_creates_nothing_and_calls_no_model(
    store: CheckpointStore,
) -> None:
    calls = [CALLS]
    with pytest.raises(RunNotFoundError, match="job-42-typo") as caught:
        await team(store, calls).resume_run("job-42-typo")
    assert caught.value.run_id == "job-42-typo"
    with pytest.raises(RunNotFoundError):
        await team(store, calls).continue_run("job-42-typo", "more")
    with pytest.raises(RunNotFoundError):
        await team(store, calls).run(run_id="job-42-typo")  # run() with no task: the same
    with pytest.raises(RunNotFoundError):
        await team(store, calls).fork_run("job-42-typo", at=1, run_id="f")
    assert await store.list_runs() == []
    assert await store.get_lease("job-42-typo") is None
    assert spent(calls) == 0


async def test_resuming_a_finished_run_returns_its_result_and_spends_nothing(
    store: CheckpointStore,
) -> None:
    done = await team(store).start_run("start", run_id="r")
    assert done.stop_reason == "Maximum number of turns 5 reached."
    calls = [CALLS]
    again = await team(store, calls).resume_run("r")
    assert again.stop_reason == done.stop_reason
    assert [m.to_text() for m in again.messages] == [m.to_text() for m in done.messages]
    assert spent(calls) == 0
    history = len(await store.history("r"))
    # run(run_id=...) with no task on a *stopped* run continues it: a new budget.
    more = await team(store, calls).continue_run("r")
    assert len(more.messages) == 5 and spent(calls) == 5
    assert len(await store.history("r")) > history


async def test_a_run_with_no_records_is_an_error_not_a_taskless_run(
    store: CheckpointStore,
) -> None:
    stub = team(store)
    from flowlib.teams._stored_runs import StoredRuns

    assert isinstance(stub._stored_runs, StoredRuns)
    await store.create_run(stub._stored_runs.record("stub", None))  # died before its first write
    calls = [CALLS]
    with pytest.raises(RunStatusError, match="no records"):
        await team(store, calls).resume_run("stub")
    with pytest.raises(RunStatusError, match="no records"):
        await team(store, calls).run(run_id="stub")
    assert spent(calls) == 0
    started = await team(store, calls).start_run("start", run_id="stub")  # started again
    assert started.stop_reason == "Maximum number of turns 5 reached."


async def test_start_refuses_an_existing_run_and_continue_refuses_an_interrupted_one(
    store: CheckpointStore,
) -> None:
    await team(store).start_run("start", run_id="r")
    calls = [CALLS]
    with pytest.raises(RunExistsError):
        await team(store, calls).start_run("again", run_id="r")
    failing = [2]
    with pytest.raises(Exception, match="down"):
        await team(store, failing).start_run("start", run_id="broken")
    with pytest.raises(RunStatusError, match="resume it") as caught:
        await team(store, calls).continue_run("broken", "more")
    assert caught.value.status == "failed"
    assert spent(calls) == 0
    resumed = await team(store, calls).resume_run("broken")
    assert resumed.stop_reason == "Maximum number of turns 5 reached."
    assert spent(calls) == 3  # the budget continued: 2 turns before, 3 now


async def test_a_fork_of_a_finished_run_at_its_last_checkpoint_runs_nothing(
    store: CheckpointStore,
) -> None:
    done = await team(store).start_run("start", run_id="r")
    last = (await store.history("r"))[-1].checkpoint_id
    calls = [CALLS]
    fork = await team(store, calls).fork_run("r", at=last, run_id="f")
    assert fork.stop_reason == done.stop_reason
    assert spent(calls) == 0
    same = await team(store, calls).run(run_id="f2", fork_from=("r", last))  # one meaning
    assert same.stop_reason == done.stop_reason and spent(calls) == 0
    more = await team(store, calls).fork_run("r", at=last, run_id="f3", task="more")
    assert more.stop_reason == "Maximum number of turns 5 reached." and spent(calls) == 5


# --- leases -------------------------------------------------------------------------------


class Gate:
    """Holds the first model call of a run until released (a long turn in flight)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()


def gated(store: CheckpointStore, gate: Gate, durability: str, calls: list[int]) -> BaseGroupChat:
    flow = build("round_robin", "max_turns", store, calls)
    flow._durability = durability  # type: ignore[assignment]
    if flow._stored_runs is not None:
        flow._stored_runs._durability = durability  # type: ignore[assignment]
    for agent in flow.participants:
        client = agent._model_client  # type: ignore[union-attr]
        original = client.create

        async def slow(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            gate.entered.set()
            await gate.release.wait()
            return await _original(*args, **kwargs)

        client.create = slow
    return flow


@pytest.mark.parametrize("durability", ["sync", "exit"])
@pytest.mark.parametrize("executors", [2, 3])
async def test_concurrent_executors_of_one_run_exactly_one_executes(
    tmp_path: Path, durability: str, executors: int
) -> None:
    path = tmp_path / "runs.db"
    setup = SQLiteCheckpointStore(path)
    failing = [1]  # interrupted after its first turn
    with pytest.raises(Exception, match="down"):
        await build("round_robin", "max_turns", setup, failing).start_run("start", run_id="r")
    await setup.close()
    stores = [SQLiteCheckpointStore(path) for _ in range(executors)]  # as separate processes
    gate = Gate()
    counters = [[CALLS] for _ in range(executors)]
    flows = [gated(s, gate, durability, c) for s, c in zip(stores, counters, strict=True)]
    first = asyncio.ensure_future(flows[0].resume_run("r"))
    await asyncio.wait_for(gate.entered.wait(), 30)  # the first executes its first turn
    others = await asyncio.gather(
        *(flow.resume_run("r") for flow in flows[1:]), return_exceptions=True
    )
    assert all(isinstance(o, RunLeaseError) for o in others), others
    assert all(spent(c) == 0 for c in counters[1:])  # refused before any model call
    gate.release.set()
    result = await first
    assert result.stop_reason == "Maximum number of turns 5 reached."
    assert spent(counters[0]) == 4  # the rest of the budget, once
    for s in stores:
        await s.close()


async def test_an_expired_lease_of_a_dead_executor_is_taken_over(store: CheckpointStore) -> None:
    failing = [1]
    with pytest.raises(Exception, match="down"):
        await team(store, failing).start_run("start", run_id="r")
    await store.acquire_lease("r", "dead-host:1:00000000", ttl=0.2)  # it died holding it
    calls = [CALLS]
    with pytest.raises(RunLeaseError) as caught:
        await team(store, calls).resume_run("r")
    assert caught.value.holder == "dead-host:1:00000000"
    assert spent(calls) == 0
    while (lease := await store.get_lease("r")) is not None and lease.expires_at > time.time():
        await asyncio.sleep(0.05)
    result = await team(store, calls).resume_run("r")
    assert result.stop_reason == "Maximum number of turns 5 reached." and spent(calls) == 4
    assert await store.get_lease("r") is None  # released at the stop


async def test_the_heartbeat_renews_on_a_timer_not_per_turn() -> None:
    store = InMemoryCheckpointStore()
    renewals: list[float] = []
    appends: list[int] = []
    renew = store.renew_lease
    append = store.append

    async def counting_renew(run_id: str, owner: str, *, ttl: float) -> Any:
        renewals.append(time.monotonic())
        return await renew(run_id, owner, ttl=ttl)

    async def counting_append(record: Any, **kwargs: Any) -> None:
        appends.append(record.checkpoint_id)
        await append(record, **kwargs)

    store.renew_lease = counting_renew  # type: ignore[method-assign]
    store.append = counting_append  # type: ignore[method-assign]
    fast = build("round_robin", "max_turns", store)
    await fast.start_run("start", run_id="fast")
    assert renewals == []  # 5 turns in far less than ttl/3: no renewal write at all
    assert len(appends) == 7  # start, 5 turns, stop: the checkpoints only
    slow = build("round_robin", "max_turns", store)
    slow.lease_ttl = 1.2
    for agent in slow.participants:
        client = agent._model_client  # type: ignore[union-attr]

        async def sleepy(*args: Any, _original: Any = client.create, **kwargs: Any) -> Any:
            await asyncio.sleep(0.3)  # 5 turns take longer than the lease: renewed meanwhile
            return await _original(*args, **kwargs)

        client.create = sleepy
    result = await slow.start_run("start", run_id="slow")
    assert result.stop_reason == "Maximum number of turns 5 reached."
    assert len(renewals) >= 2  # every ttl/3 while it ran, however many turns
