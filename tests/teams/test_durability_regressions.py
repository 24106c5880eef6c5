"""Issue 10's six problems, each as a regression test: finished turns are never lost or
repeated, state saved or loaded mid-way is consistent, stops and early exits leave the
team usable at once, and a failed run hands back what it produced.

Agents are instant scripted fakes (``tests/_agents.py``); timing is never relied on:
moments are fixed with ``asyncio.Event``s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from _agents import Fake, texts

from flowlib.base import CancellationToken, TaskResult
from flowlib.conditions import ExternalTermination
from flowlib.errors import NodeExecutionError, StateError, TeamRunningError
from flowlib.graph import COMPLETE_REASON
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat

GUARD = 30  # seconds; only reached when a run deadlocks


def flow_of(agents: Sequence[Any], edges: Sequence[tuple[str, str]], **kw: Any) -> GraphFlow:
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for source, target in edges:
        builder.add_edge(source, target)
    return GraphFlow(builder.get_participants(), builder.build(), **kw)


async def run(flow: GraphFlow | RoundRobinGroupChat, **kw: Any) -> TaskResult:
    return await asyncio.wait_for(flow.run(**kw), GUARD)


# --- 1. a finished parallel turn is never thrown away -------------------------------------


def meeting(action: Any = None) -> tuple[Any, Any]:
    """Two hooks: the first waits; the second arrives, wakes the first, then ``action``.

    Both wake-ups are scheduled before the executor hears of the second node, so the first
    node's finished turn is already queued when the second one's outcome is seen.
    """
    gate = asyncio.Event()

    async def first(agent: Fake, turn: int) -> None:
        if turn == 0:
            await gate.wait()

    async def second(agent: Fake, turn: int) -> None:
        if not gate.is_set():  # only the first time
            gate.set()
            await action()

    return first, second


async def test_finished_sibling_is_recorded_when_another_node_raises() -> None:
    async def boom() -> None:
        raise RuntimeError("boom")

    first, second = meeting(boom)
    a, b, c = Fake("A"), Fake("B", before_reply=first), Fake("C", before_reply=second)
    flow = flow_of([a, b, c], [("A", "B"), ("A", "C")])
    with pytest.raises(NodeExecutionError):
        await run(flow, task="go")
    result = await run(flow)
    assert b.turns == 1  # B never ran again
    assert texts(result.messages) == ["C:C1"]
    state = await flow.save_state()
    thread = state["agent_states"]["GraphFlowManager"]["message_thread"]
    assert [f"{m['source']}:{m['content']}" for m in thread] == [
        "user:go",
        "A:A1",
        "B:B1",
        "C:C1",
    ]


async def test_finished_sibling_is_recorded_when_the_run_is_cancelled() -> None:
    token = CancellationToken()
    hold = asyncio.Event()

    async def cancel_then_wait() -> None:
        token.cancel()
        await hold.wait()

    first, second = meeting(cancel_then_wait)
    a, b, c = Fake("A"), Fake("B", before_reply=first), Fake("C", before_reply=second)
    flow = flow_of([a, b, c], [("A", "B"), ("A", "C")])
    with pytest.raises(asyncio.CancelledError):
        await run(flow, task="go", cancellation_token=token)
    hold.set()
    result = await run(flow)
    assert b.turns == 1
    assert texts(result.messages) == ["C:C1"]


# --- 2. save_state during a run ---------------------------------------------------------


async def test_save_state_during_a_run_marks_running_nodes_to_run_again() -> None:
    gate, started = asyncio.Event(), asyncio.Event()

    async def hold(agent: Fake, turn: int) -> None:
        started.set()
        await gate.wait()

    flow = flow_of([Fake("A"), Fake("B", before_reply=hold)], [("A", "B")])
    running = asyncio.ensure_future(flow.run(task="go"))
    await asyncio.wait_for(started.wait(), GUARD)
    state = await flow.save_state()
    gate.set()
    await asyncio.wait_for(running, GUARD)

    b2 = Fake("B")
    fresh = flow_of([Fake("A"), b2], [("A", "B")])
    await fresh.load_state(state)
    result = await run(fresh)
    assert texts(result.messages) == ["B:B1"]
    assert b2.seen == [["user:go", "A:A1"]]


# --- 3. load_state validates before it changes anything ---------------------------------


async def test_failed_load_state_changes_nothing() -> None:
    flow = flow_of([Fake("A"), Fake("B")], [("A", "B")])
    await run(flow, task="first")
    good = await flow.save_state()
    other = flow_of([Fake("A"), Fake("B")], [("A", "B")])
    await run(other, task="second")
    bad = await other.save_state()
    bad["agent_states"]["B"] = {"type": "FakeState"}  # no "turns": B's load_state raises
    with pytest.raises(StateError, match="`B`"):
        await flow.load_state(bad)
    assert await flow.save_state() == good


@pytest.mark.parametrize("cursor", [-1, 99])
async def test_out_of_range_cursor_is_refused(cursor: int) -> None:
    flow = flow_of([Fake("A"), Fake("B")], [("A", "B")])
    await run(flow, task="first")
    good = await flow.save_state()
    bad = await flow.save_state()
    bad["agent_states"]["GraphFlowManager"]["cursors"]["B"] = cursor
    with pytest.raises(StateError, match="cursor"):
        await flow.load_state(bad)
    assert await flow.save_state() == good


# --- 4. ExternalTermination during the last node ----------------------------------------


async def test_external_termination_during_the_last_node_does_not_restart() -> None:
    stop = ExternalTermination()

    async def set_stop(agent: Fake, turn: int) -> None:
        stop.set()

    a, b = Fake("A"), Fake("B", before_reply=set_stop)
    flow = flow_of([a, b], [("A", "B")], termination_condition=stop)
    first = await run(flow, task="go")
    assert texts(first.messages) == ["user:go", "A:A1", "B:B1"]
    assert first.stop_reason is not None and "External" in first.stop_reason
    again = await run(flow)
    assert texts(again.messages) == []
    assert again.stop_reason is not None and again.stop_reason.startswith(COMPLETE_REASON)
    assert (a.turns, b.turns) == (1, 1)


# --- 5. leaving run_stream early --------------------------------------------------------


async def test_run_right_after_leaving_run_stream_early() -> None:
    team = RoundRobinGroupChat([Fake("A"), Fake("B")], max_turns=4)
    async for item in team.run_stream(task="go"):
        if getattr(item, "source", None) == "A":
            break
    result = await run(team)
    assert texts(result.messages)


async def test_run_right_after_leaving_a_nested_run_stream_early() -> None:
    inner = RoundRobinGroupChat([Fake("X"), Fake("Y")], max_turns=2, name="inner")
    outer = flow_of([Fake("A"), inner], [("A", "inner")])
    async for item in outer.run_stream(task="go"):
        if getattr(item, "source", None) == "X":
            break
    result = await run(outer)
    assert texts(result.messages)


async def test_a_stream_still_held_open_is_a_running_team() -> None:
    team = RoundRobinGroupChat([Fake("A"), Fake("B")], max_turns=4)
    stream = team.run_stream(task="go")
    async for _ in stream:
        break
    with pytest.raises(TeamRunningError, match="already running"):
        await run(team)
    await stream.aclose()
    assert (await run(team)).stop_reason is not None


# --- 6. the error carries the partial result --------------------------------------------


async def test_error_carries_partial_result() -> None:
    flow = flow_of(
        [Fake("A"), Fake("B"), Fake("C", fail=RuntimeError("boom"))], [("A", "B"), ("B", "C")]
    )
    with pytest.raises(NodeExecutionError) as caught:
        await run(flow, task="go")
    partial = caught.value.partial_result  # type: ignore[attr-defined]
    assert isinstance(partial, TaskResult)
    assert texts(partial.messages) == ["user:go", "A:A1", "B:B1"]
    assert partial.run_id is not None
