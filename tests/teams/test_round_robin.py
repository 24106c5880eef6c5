"""RoundRobinGroupChat: a ring of participants on the one graph executor.

Scripted agents (no models) unless the model matters; the Appendix B scenarios with
``AssistantAgent`` live in ``test_team_scenarios.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from flowlib.base import CancellationToken, TaskResult, Team
from flowlib.conditions import MaxMessageTermination, SourceMatchTermination, TextMentionTermination
from flowlib.errors import CycleWithoutExitError, DuplicateNodeError, UnboundedLoopError
from flowlib.graph import validate_graph
from flowlib.messages import BaseChatMessage, SelectSpeakerEvent, TextMessage
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import ScriptedAgent


def chat(messages: Sequence[object]) -> list[str]:
    """``source:text`` of every chat message (events left out)."""
    return [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, BaseChatMessage)]


def seen(agent: ScriptedAgent) -> list[list[str]]:
    """What ``agent`` was given on each of its turns, as ``source:text``."""
    return [chat(turn) for turn in agent.seen]


def trio(
    **kwargs: object,
) -> tuple[RoundRobinGroupChat, ScriptedAgent, ScriptedAgent, ScriptedAgent]:
    a = ScriptedAgent("a", [f"a{i}" for i in range(1, 10)])
    b = ScriptedAgent("b", [f"b{i}" for i in range(1, 10)])
    c = ScriptedAgent("c", [f"c{i}" for i in range(1, 10)])
    return RoundRobinGroupChat([a, b, c], **kwargs), a, b, c  # type: ignore[arg-type]


# --- the compiled graph -------------------------------------------------------------------


def test_graph_is_a_ring_in_participant_order() -> None:
    team, *_ = trio(max_turns=3)
    graph = team.graph
    assert graph.pattern == "round_robin"
    assert list(graph.nodes) == ["a", "b", "c"]
    assert graph.default_start_node == "a"
    ends = [(n.name, e.target, e.condition) for n in graph.nodes.values() for e in n.edges]
    assert ends == [("a", "b", None), ("b", "c", None), ("c", "a", None)]
    assert {n.kind for n in graph.nodes.values()} == {"agent"}
    validate_graph(graph, allow_unconditional_cycles=True)
    # The ring is a loop without a conditional edge: only the team's bound makes it legal.
    with pytest.raises(CycleWithoutExitError, match="`a -> b -> c -> a`"):
        validate_graph(graph, allow_unconditional_cycles=False)
    validate_graph(graph)  # a round-robin ring's pattern allows its loop by default


def test_single_participant_is_a_self_loop() -> None:
    team = RoundRobinGroupChat([ScriptedAgent("solo", ["x"])], max_turns=1)
    node = team.graph.nodes["solo"]
    assert [(e.target, e.condition) for e in node.edges] == [("solo", None)]
    validate_graph(team.graph, allow_unconditional_cycles=True)


def test_nested_team_is_a_team_node() -> None:
    inner = RoundRobinGroupChat([ScriptedAgent("x", ["x"])], name="inner", max_turns=1)
    team = RoundRobinGroupChat([inner, ScriptedAgent("y", ["y"])], max_turns=2)
    assert [(n.name, n.kind) for n in team.graph.nodes.values()] == [
        ("inner", "team"),
        ("y", "agent"),
    ]
    assert team.participants == [inner, team.participants[1]]


def test_defaults() -> None:
    team, *_ = trio(max_turns=1)
    assert team.name == "RoundRobinGroupChat" == RoundRobinGroupChat.DEFAULT_NAME
    assert team.description == "A team of agents." == RoundRobinGroupChat.DEFAULT_DESCRIPTION
    assert team.component_type == "team"
    assert team.max_turns == 1
    assert team.termination_condition is None
    named, *_ = trio(max_turns=1, name="writers", description="They write.")
    assert (named.name, named.description) == ("writers", "They write.")


# --- construction errors ------------------------------------------------------------------


def test_no_participants_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least one participant"):
        RoundRobinGroupChat([], max_turns=1)


def test_duplicate_names_are_a_value_error() -> None:
    with pytest.raises(DuplicateNodeError, match="`a`") as caught:
        RoundRobinGroupChat([ScriptedAgent("a", []), ScriptedAgent("a", [])], max_turns=1)
    assert isinstance(caught.value, ValueError)


def test_neither_termination_nor_max_turns_is_an_unbounded_loop_when_run() -> None:
    # AutoGen allows building it (to dump it, or to run it until cancelled); the unbounded
    # loop is reported when it runs, before any turn.
    team = RoundRobinGroupChat([ScriptedAgent("a", []), ScriptedAgent("b", [])])
    with pytest.raises(UnboundedLoopError, match="termination_condition nor max_turns") as caught:
        asyncio.run(team.run(task="go"))
    assert team.trace.steps == []
    assert isinstance(caught.value, ValueError)
    assert "`a`" in str(caught.value) and "`b`" in str(caught.value)
    # Either bound is enough.
    RoundRobinGroupChat([ScriptedAgent("a", [])], max_turns=5)
    RoundRobinGroupChat([ScriptedAgent("a", [])], termination_condition=MaxMessageTermination(5))


@pytest.mark.parametrize("max_turns", [0, -1])
def test_max_turns_must_be_positive(max_turns: int) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        RoundRobinGroupChat([ScriptedAgent("a", [])], max_turns=max_turns)


def test_runtime_is_rejected() -> None:
    with pytest.raises(ValueError, match="runtime"):
        RoundRobinGroupChat([ScriptedAgent("a", [])], max_turns=1, runtime=object())


# --- running ------------------------------------------------------------------------------


async def test_participants_speak_in_list_order() -> None:
    team, *_ = trio(max_turns=5)
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a:a1", "b:b1", "c:c1", "a:a2", "b:b2"]
    assert result.stop_reason == "Maximum number of turns 5 reached."
    assert team.trace.steps == ["a", "b", "c", "a", "b"]


async def test_every_agent_sees_every_message_since_its_last_turn() -> None:
    team, a, b, c = trio(max_turns=5)
    await team.run(task="go")
    assert seen(a) == [["user:go"], ["b:b1", "c:c1"]]
    assert seen(b) == [["user:go", "a:a1"], ["c:c1", "a:a2"]]
    assert seen(c) == [["user:go", "a:a1", "b:b1"]]


async def test_single_participant_loops_until_max_turns() -> None:
    solo = ScriptedAgent("solo", ["one", "two", "three"])
    team = RoundRobinGroupChat([solo], max_turns=3)
    result = await team.run(task="count")
    assert chat(result.messages) == ["user:count", "solo:one", "solo:two", "solo:three"]
    assert result.stop_reason == "Maximum number of turns 3 reached."
    # Its own messages are never given back to it.
    assert seen(solo) == [["user:count"], [], []]


async def test_resume_after_max_turns_continues_with_the_next_speaker() -> None:
    team, *_ = trio(max_turns=2)
    first = await team.run(task="go")
    second = await team.run()
    third = await team.run()
    assert chat(first.messages) == ["user:go", "a:a1", "b:b1"]
    assert chat(second.messages) == ["c:c1", "a:a2"]
    assert chat(third.messages) == ["b:b2", "c:c2"]
    # max_turns counts per run: every run stops for the same reason after 2 turns.
    assert {r.stop_reason for r in (first, second, third)} == {"Maximum number of turns 2 reached."}


async def test_resume_after_termination_continues_with_the_next_speaker() -> None:
    team, _a, _b, c = trio(termination_condition=SourceMatchTermination(["b"]))
    first = await team.run(task="go")
    assert chat(first.messages) == ["user:go", "a:a1", "b:b1"]
    assert first.stop_reason == "'b' answered"
    second = await team.run()
    # The condition was reset after the first run; it fires again on b's next answer.
    assert chat(second.messages) == ["c:c1", "a:a2", "b:b2"]
    assert second.stop_reason == "'b' answered"
    assert seen(c) == [["user:go", "a:a1", "b:b1"]]


async def test_new_task_keeps_the_context_and_the_turn_order() -> None:
    team, a, _b, c = trio(max_turns=2)
    await team.run(task="write")
    result = await team.run(task="now translate")
    assert chat(result.messages) == ["user:now translate", "c:c1", "a:a2"]
    # The next speaker sees the earlier messages it missed and the new task.
    assert seen(c) == [["user:write", "a:a1", "b:b1", "user:now translate"]]
    assert seen(a)[-1] == ["b:b1", "user:now translate", "c:c1"]


async def test_max_turns_and_termination_whichever_comes_first() -> None:
    team, *_ = trio(max_turns=4, termination_condition=TextMentionTermination("c1"))
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a:a1", "b:b1", "c:c1"]
    assert result.stop_reason == "Text 'c1' mentioned"
    result = await team.run()
    assert chat(result.messages) == ["a:a2", "b:b2", "c:c2", "a:a3"]
    assert result.stop_reason == "Maximum number of turns 4 reached."


async def test_termination_on_the_task_itself_runs_no_turn() -> None:
    team, a, *_ = trio(termination_condition=TextMentionTermination("STOP"))
    result = await team.run(task="STOP right there")
    assert chat(result.messages) == ["user:STOP right there"]
    assert result.stop_reason == "Text 'STOP' mentioned"
    assert a.turns == 0


async def test_emit_team_events_streams_a_select_speaker_event_before_each_turn() -> None:
    team, *_ = trio(max_turns=4, emit_team_events=True, name="ring")
    items = [item async for item in team.run_stream(task="go")]
    result = items[-1]
    assert isinstance(result, TaskResult)
    events = [m for m in result.messages if isinstance(m, SelectSpeakerEvent)]
    assert [(e.source, e.content) for e in events] == [
        ("ring", ["a"]),
        ("ring", ["b"]),
        ("ring", ["c"]),
        ("ring", ["a"]),
    ]
    # Each event comes right before its speaker's message, in the stream and the result.
    kinds = [
        f"select:{m.content[0]}" if isinstance(m, SelectSpeakerEvent) else m.source
        for m in result.messages
    ]
    assert kinds == ["user", "select:a", "a", "select:b", "b", "select:c", "c", "select:a", "a"]
    assert items[:-1] == list(result.messages)


async def test_no_team_events_by_default() -> None:
    team, *_ = trio(max_turns=3)
    result = await team.run(task="go")
    assert not any(isinstance(m, SelectSpeakerEvent) for m in result.messages)


# --- nesting ------------------------------------------------------------------------------


async def test_nested_team_takes_one_turn_and_publishes_all_its_messages() -> None:
    x = ScriptedAgent("x", ["x1", "x2", "x3"])
    y = ScriptedAgent("y", ["y1", "y2", "y3"])
    inner = RoundRobinGroupChat([x, y], name="inner", max_turns=2)
    z = ScriptedAgent("z", ["z1", "z2"])
    outer = RoundRobinGroupChat([inner, z], max_turns=3)
    result = await outer.run(task="go")
    assert chat(result.messages) == ["user:go", "x:x1", "y:y1", "z:z1", "x:x2", "y:y2"]
    assert result.stop_reason == "Maximum number of turns 3 reached."
    # The outer team broadcasts the inner team's messages; the inner team gets the outer
    # messages it missed as its task (and keeps its own thread between runs).
    assert seen(z) == [["user:go", "x:x1", "y:y1"]]
    assert seen(x) == [["user:go"], ["y:y1", "z:z1"]]
    assert seen(y) == [["user:go", "x:x1"], ["z:z1", "x:x2"]]


async def test_nested_team_inner_termination_and_resume_order() -> None:
    x = ScriptedAgent("x", ["x1", "x2", "x3"])
    y = ScriptedAgent("y", ["y1 DONE", "y2 DONE", "y3"])
    inner = RoundRobinGroupChat(
        [x, y], name="inner", termination_condition=TextMentionTermination("DONE")
    )
    z = ScriptedAgent("z", ["z1", "z2"])
    outer = RoundRobinGroupChat([z, inner], max_turns=4)
    result = await outer.run(task="go")
    # The inner team stops on each DONE; the outer condition never saw it (none set).
    assert chat(result.messages) == [
        "user:go",
        "z:z1",
        "x:x1",
        "y:y1 DONE",
        "z:z2",
        "x:x2",
        "y:y2 DONE",
    ]


async def test_deeply_nested_teams() -> None:
    leaf = ScriptedAgent("leaf", ["l1", "l2"])
    level2 = RoundRobinGroupChat([leaf], name="level2", max_turns=1)
    level1 = RoundRobinGroupChat([level2], name="level1", max_turns=1)
    top = RoundRobinGroupChat([level1, ScriptedAgent("top", ["t1"])], max_turns=3)
    result = await top.run(task="go")
    assert chat(result.messages) == ["user:go", "leaf:l1", "top:t1", "leaf:l2"]
    assert isinstance(top.participants[0], Team)


async def test_run_stream_matches_run() -> None:
    team, *_ = trio(max_turns=3)
    streamed = [item async for item in team.run_stream(task=TextMessage(content="go", source="me"))]
    assert chat(streamed[:-1]) == ["me:go", "a:a1", "b:b1", "c:c1"]
    await team.reset()
    result = await team.run(task=TextMessage(content="go", source="me"))
    assert chat(result.messages) == chat(streamed[:-1])
    assert isinstance(streamed[-1], TaskResult)
    assert result.stop_reason == streamed[-1].stop_reason


async def test_cancelled_nested_team_does_not_get_its_task_twice() -> None:
    gate, started = asyncio.Event(), asyncio.Event()

    class WaitingAgent(ScriptedAgent):
        """Waits at ``gate`` on its first turn."""

        async def _before_reply(self, turn: int) -> None:
            if turn == 0:
                started.set()
                await gate.wait()

    x = WaitingAgent("x", ["x1", "x2"])
    y = ScriptedAgent("y", ["y1"])
    inner = RoundRobinGroupChat([x, y], name="inner", max_turns=2)
    outer = RoundRobinGroupChat([inner, ScriptedAgent("z", ["z1"])], max_turns=2)
    token = CancellationToken()
    run = asyncio.ensure_future(outer.run(task="go", cancellation_token=token))
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    gate.set()
    result = await outer.run()
    assert chat(result.messages) == ["x:x1", "y:y1", "z:z1"]
    assert seen(x) == [["user:go"]]
    assert seen(y) == [["user:go", "x:x1"]]
