"""What every team shares (run, stream, reset, pause, state, stopping), for each team kind.

Each test runs on a RoundRobinGroupChat, a Swarm, a GraphFlow (``a -> b -> a``) and the
team of examples/debate_team.py (``a -> b -> judge -> a``, a team written outside flowlib
on its public extension points) built from the same two agents. Concurrency is driven by
``asyncio.Event``s, never by sleeps.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from _agents import Fake, Recorder

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken, ChatAgent, TaskResult
from flowlib.conditions import ExternalTermination, MaxMessageTermination
from flowlib.errors import NodeExecutionError, StateError
from flowlib.graph import IsHandoff, Not
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    TextMessage,
)
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import BaseGroupChat, DiGraphBuilder, GraphFlow, RoundRobinGroupChat, Swarm

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from debate_team import DebateTeam  # examples/ is not a package: on sys.path above

KINDS = ["round_robin", "swarm", "graph_flow", "debate"]


def make(kind: str, agents: Sequence[ChatAgent], **kwargs: Any) -> BaseGroupChat:
    """A team of ``kind`` over ``agents`` (two of them for graph_flow: ``a -> b -> a``;
    for debate a judge ``judge`` who never gives the verdict joins them)."""
    if kind == "round_robin":
        return RoundRobinGroupChat(agents, **kwargs)
    if kind == "swarm":
        return Swarm(agents, **kwargs)
    if kind == "debate":
        return DebateTeam([*agents, Fake("judge")], **kwargs)
    first, second = agents
    builder = DiGraphBuilder().add_node(first).add_node(second)
    builder.add_edge(first, second).add_edge(second, first, condition=Not(condition=IsHandoff()))
    builder.set_entry_point(first)
    return GraphFlow(builder.get_participants(), builder.build(), **kwargs)


def speakers(kind: str, turns: int, *, start: int = 0) -> list[str]:
    """Who speaks on turns ``start .. start+turns-1`` with agents ``a`` and ``b``.

    Swarm agents that never hand off keep the turn: ``a`` speaks throughout; a debate's
    judge speaks after ``b``.
    """
    if kind == "swarm":
        return ["a"] * turns
    if kind == "debate":
        return [("a", "b", "judge")[(start + i) % 3] for i in range(turns)]
    return ["ab"[(start + i) % 2] for i in range(turns)]


def chat(messages: Sequence[object]) -> list[str]:
    return [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, BaseChatMessage)]


def sources(messages: Sequence[object]) -> list[str]:
    return [m.source for m in messages if isinstance(m, BaseChatMessage)]


def gate_first_turn(started: asyncio.Event, gate: asyncio.Event) -> Callable[..., Any]:
    """A ``Fake`` hook: on turn 0, say it started, then wait until ``gate`` is set."""

    async def hook(agent: Fake, turn: int) -> None:
        if turn == 0:
            started.set()
            await gate.wait()

    return hook


# --- run / run_stream ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_run_stream_yields_what_run_returns(kind: str) -> None:
    team = make(kind, [Fake("a"), Fake("b")], max_turns=3)
    items = [item async for item in team.run_stream(task="go")]
    result = items[-1]
    assert isinstance(result, TaskResult)
    assert not any(isinstance(item, TaskResult) for item in items[:-1])
    assert items[:-1] == list(result.messages)
    assert sources(result.messages) == ["user", *speakers(kind, 3)]
    assert result.stop_reason == "Maximum number of turns 3 reached."

    await team.reset()
    again = await team.run(task="go")
    assert chat(again.messages) == chat(result.messages)
    assert again.stop_reason == result.stop_reason


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "task",
    [
        "go",
        TextMessage(content="go", source="user"),
        [TextMessage(content="context", source="boss"), TextMessage(content="go", source="user")],
    ],
    ids=["str", "message", "list"],
)
async def test_task_forms(kind: str, task: Any) -> None:
    a = Fake("a")
    team = make(kind, [a, Fake("b")], max_turns=1)
    result = await team.run(task=task)
    expected = ["boss:context", "user:go"] if isinstance(task, list) else ["user:go"]
    assert chat(result.messages) == [*expected, "a:a1"]
    assert a.seen == [expected]


@pytest.mark.parametrize("kind", KINDS)
async def test_output_task_messages_false_leaves_the_task_out(kind: str) -> None:
    a = Fake("a")
    team = make(kind, [a, Fake("b")], max_turns=1)
    result = await team.run(task="go", output_task_messages=False)
    assert chat(result.messages) == ["a:a1"]
    assert a.seen == [["user:go"]]  # the agents still get the task


@pytest.mark.parametrize("kind", KINDS)
async def test_run_without_a_task_on_a_fresh_team_starts_with_no_messages(kind: str) -> None:
    a = Fake("a")
    team = make(kind, [a, Fake("b")], max_turns=1)
    result = await team.run()
    assert chat(result.messages) == ["a:a1"]
    assert a.seen == [[]]


@pytest.mark.parametrize("kind", KINDS)
async def test_termination_sees_the_task_then_each_turn(kind: str) -> None:
    recorder = Recorder()
    a = Fake("a", thought="hmm")
    team = make(kind, [a, Fake("b")], termination_condition=recorder, max_turns=2)
    await team.run(task="go")
    second = ["a:hmm", "a:a2"] if kind == "swarm" else ["b:b1"]
    assert recorder.deltas == [["user:go"], ["a:hmm", "a:a1"], second]
    # Reset once at the end of the run, so the next run counts afresh.
    assert recorder.resets == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_termination_condition_is_reset_after_every_run(kind: str) -> None:
    team = make(kind, [Fake("a"), Fake("b")], termination_condition=MaxMessageTermination(2))
    first = await team.run(task="go")
    assert sources(first.messages) == ["user", "a"]
    second = await team.run()
    # The count restarts: two new messages, no task.
    assert sources(second.messages) == speakers(kind, 2, start=1)
    assert second.stop_reason == "Maximum number of messages 2 reached, current message count: 2"


# --- reset, pause, resume -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_reset_clears_the_thread_and_resets_every_participant(kind: str) -> None:
    a, b = Fake("a"), Fake("b")
    team = make(kind, [a, b], max_turns=3)
    await team.run(task="first")
    await team.reset()
    assert (a.resets, b.resets) == (1, 1)
    result = await team.run(task="second")
    # Back at the entry, and nobody sees the first task's messages.
    assert sources(result.messages) == ["user", *speakers(kind, 3)]
    assert a.seen[0] == ["user:second"]


@pytest.mark.parametrize("kind", KINDS)
async def test_reset_works_on_a_team_that_never_ran(kind: str) -> None:
    a = Fake("a")
    team = make(kind, [a, Fake("b")], max_turns=1)
    await team.reset()
    assert a.resets == 1
    assert chat((await team.run(task="go")).messages) == ["user:go", "a:a1"]


@pytest.mark.parametrize("kind", KINDS)
async def test_pause_and_resume_call_every_participant(kind: str) -> None:
    a, b = Fake("a"), Fake("b")
    team = make(kind, [a, b], max_turns=1)
    await team.pause()
    assert [(x.pauses, x.resumes) for x in (a, b)] == [(1, 0), (1, 0)]
    await team.resume()
    assert [(x.pauses, x.resumes) for x in (a, b)] == [(1, 1), (1, 1)]


@pytest.mark.parametrize("kind", KINDS)
async def test_pause_and_resume_during_a_run_do_not_stop_it(kind: str) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    a = Fake("a", before_reply=gate_first_turn(started, gate))
    team = make(kind, [a, Fake("b")], max_turns=2)
    run = asyncio.ensure_future(team.run(task="go"))
    await started.wait()
    await team.pause()
    await team.resume()
    assert (a.pauses, a.resumes) == (1, 1)
    gate.set()
    result = await run
    assert sources(result.messages) == ["user", *speakers(kind, 2)]


async def test_pause_resume_and_reset_reach_the_agents_of_a_nested_team() -> None:
    x, y, z = Fake("x"), Fake("y"), Fake("z")
    inner = RoundRobinGroupChat([x, y], name="inner", max_turns=2)
    team = RoundRobinGroupChat([inner, z], max_turns=2)
    await team.run(task="go")
    await team.pause()
    await team.resume()
    await team.reset()
    assert [(f.pauses, f.resumes, f.resets) for f in (x, y, z)] == [(1, 1, 1)] * 3
    # The inner team was reset too: it starts again with `x`, on the new task only.
    result = await team.run(task="again")
    assert chat(result.messages) == ["user:again", "x:x1", "y:y1", "z:z1"]
    assert x.seen == [["user:again"]]


# --- state --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_save_state_is_json_serialisable_and_versioned(kind: str) -> None:
    team = make(kind, [Fake("a"), Fake("b")], max_turns=3)
    await team.run(task="go")
    state = await team.save_state()
    assert json.loads(json.dumps(state)) == state
    assert state["type"] == "TeamState"
    assert state["version"] == 1
    manager = f"{type(team).__name__}Manager"
    judge = ["judge"] if kind == "debate" else []
    assert list(state["agent_states"]) == ["a", "b", *judge, manager]
    turns = {"swarm": 3, "debate": 1}.get(kind, 2)
    assert state["agent_states"]["a"] == {"type": "FakeState", "turns": turns}
    thread = state["agent_states"][manager]["message_thread"]
    assert [m["source"] for m in thread] == ["user", *speakers(kind, 3)]


@pytest.mark.parametrize("kind", KINDS)
async def test_load_state_into_a_new_team_resumes_exactly(kind: str) -> None:
    original = make(kind, [Fake("a"), Fake("b")], max_turns=3)
    await original.run(task="go")
    state = json.loads(json.dumps(await original.save_state()))

    a, b = Fake("a"), Fake("b")
    restored = make(kind, [a, b], max_turns=3)
    await restored.load_state(state)
    resumed = await restored.run()
    continued = await original.run()
    assert chat(resumed.messages) == chat(continued.messages)
    assert sources(resumed.messages) == speakers(kind, 3, start=3)
    # The restored agents got exactly what they had missed.
    if kind == "swarm":
        assert a.seen == [[], [], []]
    elif kind == "debate":
        assert a.seen[0] == ["b:b1", "judge:judge1"]
        assert b.seen[0] == ["judge:judge1", "a:a2"]
    else:
        assert b.seen[0] == ["a:a2"]
        assert a.seen[0] == ["b:b2"]


async def test_load_state_into_a_team_of_another_kind_is_a_state_error() -> None:
    round_robin = make("round_robin", [Fake("a"), Fake("b")], max_turns=1)
    await round_robin.run(task="go")
    state = await round_robin.save_state()
    swarm = make("swarm", [Fake("a"), Fake("b")], max_turns=1)
    with pytest.raises(StateError, match=r"`RoundRobinGroupChatManager`.*`SwarmManager`"):
        await swarm.load_state(state)


async def test_load_state_with_other_participants_is_a_state_error() -> None:
    team = make("round_robin", [Fake("a"), Fake("b")], max_turns=1)
    await team.run(task="go")
    state = await team.save_state()
    other = make("round_robin", [Fake("a"), Fake("c")], max_turns=1)
    with pytest.raises(StateError, match=r"unknown entries `b`.*missing entries `c`"):
        await other.load_state(state)


async def test_load_state_of_another_version_is_a_state_error() -> None:
    team = make("round_robin", [Fake("a"), Fake("b")], max_turns=1)
    state = dict(await team.save_state())
    state["version"] = 2
    with pytest.raises(StateError, match="version 2"):
        await team.load_state(state)
    with pytest.raises(StateError, match="agent_states"):
        await team.load_state({"type": "TeamState", "version": 1})


async def test_load_state_naming_an_unknown_node_is_a_state_error_and_changes_nothing() -> None:
    team = make("graph_flow", [Fake("a"), Fake("b")], max_turns=1)
    await team.run(task="go")
    state = json.loads(json.dumps(await team.save_state()))
    before = json.dumps(state, sort_keys=True)
    state["agent_states"]["GraphFlowManager"]["ready"] = ["ghost"]
    with pytest.raises(StateError, match="`ghost`"):
        await team.load_state(state)
    assert json.dumps(await team.save_state(), sort_keys=True) == before


# --- stopping from outside ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_external_termination_lets_the_current_turn_finish(kind: str) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    a = Fake("a", before_reply=gate_first_turn(started, gate))
    external = ExternalTermination()
    team = make(kind, [a, Fake("b")], termination_condition=external | MaxMessageTermination(10))
    run = asyncio.ensure_future(team.run(task="go"))
    await started.wait()
    external.set()
    assert not run.done()
    gate.set()
    result = await run
    assert chat(result.messages) == ["user:go", "a:a1"]
    assert result.stop_reason == "External termination requested"
    # The team kept its place: the next run continues after `a`'s turn.
    resumed = await team.run()
    assert sources(resumed.messages)[:2] == speakers(kind, 2, start=1)


@pytest.mark.parametrize("kind", KINDS)
async def test_cancellation_raises_and_the_interrupted_turn_runs_again(kind: str) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    a = Fake("a", before_reply=gate_first_turn(started, gate))
    team = make(kind, [a, Fake("b")], max_turns=2)
    token = CancellationToken()
    run = asyncio.ensure_future(team.run(task="go", cancellation_token=token))
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert a.turns == 0
    gate.set()
    result = await team.run()
    # `a` is re-run on the same messages; nothing was lost or duplicated.
    assert sources(result.messages) == speakers(kind, 2)
    assert a.seen[:2] == [["user:go"], ["user:go"]]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancelled_token_aborts_before_any_turn(kind: str) -> None:
    a = Fake("a")
    team = make(kind, [a, Fake("b")], max_turns=2)
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await team.run(task="go", cancellation_token=token)
    assert a.seen == []


@pytest.mark.parametrize("kind", KINDS)
async def test_reset_run_and_load_state_while_running_are_runtime_errors(kind: str) -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    a = Fake("a", before_reply=gate_first_turn(started, gate))
    team = make(kind, [a, Fake("b")], max_turns=1)
    state = await team.save_state()
    run = asyncio.ensure_future(team.run(task="go"))
    await started.wait()
    with pytest.raises(RuntimeError, match="while it is running"):
        await team.reset()
    with pytest.raises(RuntimeError, match="already running"):
        await team.run(task="again")
    with pytest.raises(RuntimeError, match="while it is running"):
        await team.load_state(state)
    gate.set()
    result = await run
    # The refused calls changed nothing.
    assert chat(result.messages) == ["user:go", "a:a1"]
    assert a.resets == 0
    await team.reset()
    assert a.resets == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_participant_error_keeps_the_state_and_run_retries(kind: str) -> None:
    a = Fake("a", fail=RuntimeError("model down"))
    team = make(kind, [a, Fake("b")], max_turns=2)
    with pytest.raises(NodeExecutionError, match="`a`") as caught:
        await team.run(task="go")
    assert isinstance(caught.value.__cause__, RuntimeError)
    a.fail = None
    result = await team.run()
    assert sources(result.messages) == speakers(kind, 2)
    assert a.seen[:2] == [["user:go"], ["user:go"]]


# --- streaming ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_model_stream_chunks_are_streamed_but_not_kept(kind: str) -> None:
    model = ReplayChatCompletionClient(["Leaves fall slowly."])
    a = AssistantAgent("a", model, model_client_stream=True)
    team = make(kind, [a, Fake("b")], max_turns=1)
    items = [item async for item in team.run_stream(task="A poem?")]
    result = items[-1]
    assert isinstance(result, TaskResult)
    chunks = [i for i in items if isinstance(i, ModelClientStreamingChunkEvent)]
    assert "".join(c.content for c in chunks) == "Leaves fall slowly."
    assert len(chunks) == 3
    final = items[-2]
    assert isinstance(final, TextMessage) and final.content == "Leaves fall slowly."
    assert {c.full_message_id for c in chunks} == {final.id}
    # The result keeps everything but the chunks.
    assert list(result.messages) == [i for i in items[:-1] if i not in chunks]
    assert not any(isinstance(m, ModelClientStreamingChunkEvent) for m in result.messages)
    assert chat(result.messages) == ["user:A poem?", "a:Leaves fall slowly."]


async def test_fake_chunks_are_dropped_from_the_result_of_concurrent_turns() -> None:
    # GraphFlow fan-out: two agents stream at once (turns run as tasks, not inline).
    a = Fake("a", chunks=["x", "y"])
    b = Fake("b", chunks=["z"])
    start = Fake("start")
    builder = DiGraphBuilder().add_node(start).add_node(a).add_node(b)
    builder.add_edge(start, a).add_edge(start, b)
    team = GraphFlow(builder.get_participants(), builder.build())
    items = [item async for item in team.run_stream(task="go")]
    result = items[-1]
    assert isinstance(result, TaskResult)
    streamed = [i.content for i in items if isinstance(i, ModelClientStreamingChunkEvent)]
    assert sorted(streamed) == ["x", "y", "z"]
    assert sorted(sources(result.messages)) == ["a", "b", "start", "user"]
    kept: list[BaseAgentEvent | BaseChatMessage] = list(result.messages)
    assert not any(isinstance(m, ModelClientStreamingChunkEvent) for m in kept)


# --- known bugs outside the team files ----------------------------------------------------


async def test_cancelling_after_an_agent_message_was_streamed_keeps_that_message() -> None:
    model = ReplayChatCompletionClient(["a1", "a2"])
    a = AssistantAgent("a", model, system_message=None)
    b = Fake("b")
    team = make("round_robin", [a, b], max_turns=2)
    token = CancellationToken()
    streamed: list[str] = []
    with pytest.raises(asyncio.CancelledError):
        async for item in team.run_stream(task="go", cancellation_token=token):
            if isinstance(item, BaseChatMessage):
                streamed.append(f"{item.source}:{item.to_text()}")
            if isinstance(item, BaseChatMessage) and item.source == "a":
                token.cancel()
    assert streamed == ["user:go", "a:a1"]
    result = await team.run()
    # `a` finished its turn (its Response was streamed): `b` is next and has seen `a1`;
    # `a`'s model never gets the task twice.
    assert chat(result.messages)[0] == "b:b1"
    assert b.seen[0] == ["user:go", "a:a1"]
    assert all([m.content for m in request].count("go") == 1 for request in model.requests)


async def test_closing_the_stream_stops_the_team_at_once() -> None:
    team = make("round_robin", [Fake("a"), Fake("b")], max_turns=2)
    stream = team.run_stream(task="go")
    first = await stream.__anext__()
    assert isinstance(first, TextMessage)
    await stream.aclose()
    result = await team.run()
    assert sources(result.messages) == ["a", "b"]
