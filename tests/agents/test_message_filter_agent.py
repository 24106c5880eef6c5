"""MessageFilterAgent: per-source first/last/all filters, delegation to the wrapped
agent, and the documented looping graph A -> B -> A -> B -> C."""

from __future__ import annotations

import asyncio

import pytest
from _agents import Fake, texts
from pydantic import ValidationError

from flowlib.agents import MessageFilterAgent, MessageFilterConfig, PerSourceFilter
from flowlib.base import CancellationToken
from flowlib.conditions import MaxMessageTermination
from flowlib.messages import TextMessage, ThoughtEvent
from flowlib.teams import DiGraphBuilder, GraphFlow

GUARD = 10


def msg(source: str, content: str) -> TextMessage:
    return TextMessage(content=content, source=source)


THREAD = [
    msg("user", "task"),
    msg("A", "a1"),
    msg("B", "b1"),
    msg("A", "a2"),
    msg("user", "more"),
    msg("B", "b2"),
    msg("C", "c1"),
    msg("B", "b3"),
]


def keep(*filters: PerSourceFilter) -> list[str]:
    agent = MessageFilterAgent("F", Fake("F"), MessageFilterConfig(per_source=list(filters)))
    return [m.to_model_text() for m in agent.apply_filter(THREAD)]


def test_first_and_last_counts() -> None:
    assert keep(PerSourceFilter(source="B", position="first", count=2)) == ["b1", "b2"]
    assert keep(PerSourceFilter(source="B", position="last", count=2)) == ["b2", "b3"]
    assert keep(PerSourceFilter(source="B", position="last", count=10)) == ["b1", "b2", "b3"]


def test_no_position_or_no_count_keeps_all_of_the_source() -> None:
    assert keep(PerSourceFilter(source="A")) == ["a1", "a2"]
    assert keep(PerSourceFilter(source="A", position="last")) == ["a1", "a2"]
    assert keep(PerSourceFilter(source="A", count=1)) == ["a1", "a2"]


def test_count_zero_keeps_none() -> None:
    assert keep(PerSourceFilter(source="A", position="last", count=0)) == []
    assert keep(PerSourceFilter(source="A", position="first", count=0)) == []


def test_unlisted_sources_are_dropped_and_order_is_kept() -> None:
    kept = keep(
        PerSourceFilter(source="B", position="last", count=1),
        PerSourceFilter(source="user", position="first", count=1),
    )
    assert kept == ["task", "b3"]  # chronological, not filter order; A and C dropped


def test_overlapping_filters_keep_a_message_once() -> None:
    kept = keep(
        PerSourceFilter(source="user", position="first", count=1),
        PerSourceFilter(source="user"),
    )
    assert kept == ["task", "more"]


def test_filter_validation() -> None:
    with pytest.raises(ValidationError):
        PerSourceFilter(source="A", position="middle")
    with pytest.raises(ValidationError):
        PerSourceFilter(source="A", position="last", count=-1)
    config = MessageFilterConfig(per_source=[PerSourceFilter(source="user", count=1)])
    assert MessageFilterConfig.model_validate(config.model_dump()) == config


async def test_direct_call_passes_only_filtered_messages() -> None:
    inner = Fake("A", ["done"], thought="thinking")
    agent = MessageFilterAgent(
        name="A",
        wrapped_agent=inner,
        filter=MessageFilterConfig(
            per_source=[
                PerSourceFilter(source="user", position="first", count=1),
                PerSourceFilter(source="B", position="last", count=2),
            ]
        ),
    )
    response = await agent.on_messages(THREAD, CancellationToken())
    assert inner.seen == [["user:task", "B:b2", "B:b3"]]
    assert response.chat_message.to_text() == "done"
    streamed = [item async for item in agent.on_messages_stream(THREAD, CancellationToken())]
    assert isinstance(streamed[0], ThoughtEvent)  # the wrapped agent's events come through
    assert inner.seen[1] == ["user:task", "B:b2", "B:b3"]


async def test_run_filters_the_task_messages() -> None:
    inner = Fake("A", ["ok"])
    config = MessageFilterConfig(per_source=[PerSourceFilter(source="user")])
    agent = MessageFilterAgent("A", inner, config)
    result = await agent.run(task=[msg("user", "hi"), msg("spam", "buy now")])
    assert inner.seen == [["user:hi"]]
    assert texts(result.messages) == ["user:hi", "spam:buy now", "A:ok"]


async def test_lifecycle_and_state_are_delegated() -> None:
    inner = Fake("A", ["x"])
    agent = MessageFilterAgent("A", inner, MessageFilterConfig(per_source=[]))
    token = CancellationToken()
    await agent.on_messages([], token)
    assert await agent.save_state() == {"type": "FakeState", "turns": 1}
    await agent.load_state({"type": "FakeState", "turns": 5})
    assert inner.turns == 5
    await agent.on_pause(token)
    await agent.on_resume(token)
    await agent.on_reset(token)
    await agent.close()
    assert (inner.pauses, inner.resumes, inner.resets, inner.turns) == (1, 1, 1, 0)
    assert agent.description == inner.description
    assert agent.produced_message_types == inner.produced_message_types
    assert agent.wrapped_agent is inner and agent.filter.per_source == []


async def test_looping_graph_each_node_sees_only_what_it_needs() -> None:
    """The documented A -> B -> A -> B -> C graph: A sees the task and B's last reply,
    B the task, A's last reply and its own last replies (none reach it: an agent is
    never sent its own messages), C the task and B's last reply."""
    a_inner = Fake("A", ["draft 1", "draft 2"])
    b_inner = Fake("B", ["review 1: loop", "review 2: exit"])
    c_inner = Fake("C", ["final"])
    agent_a = MessageFilterAgent(
        name="A",
        wrapped_agent=a_inner,
        filter=MessageFilterConfig(
            per_source=[
                PerSourceFilter(source="user", position="first", count=1),
                PerSourceFilter(source="B", position="last", count=1),
            ]
        ),
    )
    agent_b = MessageFilterAgent(
        name="B",
        wrapped_agent=b_inner,
        filter=MessageFilterConfig(
            per_source=[
                PerSourceFilter(source="user", position="first", count=1),
                PerSourceFilter(source="A", position="last", count=1),
                PerSourceFilter(source="B", position="last", count=10),
            ]
        ),
    )
    agent_c = MessageFilterAgent(
        name="C",
        wrapped_agent=c_inner,
        filter=MessageFilterConfig(
            per_source=[
                PerSourceFilter(source="user", position="first", count=1),
                PerSourceFilter(source="B", position="last", count=1),
            ]
        ),
    )
    builder = DiGraphBuilder()
    builder.add_node(agent_a).add_node(agent_b).add_node(agent_c)
    builder.add_edge(agent_a, agent_b)
    builder.add_edge(agent_b, agent_c, condition="exit")
    builder.add_edge(agent_b, agent_a, condition="loop")
    builder.set_entry_point(agent_a)
    team = GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(20),
    )
    result = await asyncio.wait_for(team.run(task="Write a haiku."), GUARD)
    assert texts(result.messages) == [
        "user:Write a haiku.",
        "A:draft 1",
        "B:review 1: loop",
        "A:draft 2",
        "B:review 2: exit",
        "C:final",
    ]
    assert a_inner.seen == [["user:Write a haiku."], ["B:review 1: loop"]]
    assert b_inner.seen == [["user:Write a haiku.", "A:draft 1"], ["A:draft 2"]]
    # C gets the whole thread as new messages; the filter cuts it to the task and B's last.
    assert c_inner.seen == [["user:Write a haiku.", "B:review 2: exit"]]


async def test_fan_in_node_keeps_only_the_latest_of_each_peer() -> None:
    """A node fed by a loop receives many messages per turn; the filter trims them."""
    writer = Fake("writer", ["v1", "v2", "v3 done"])
    critic_inner = Fake("critic", ["again", "again", "fine"])
    judge_inner = Fake("judge", ["verdict"])
    judge = MessageFilterAgent(
        "judge",
        judge_inner,
        MessageFilterConfig(
            per_source=[
                PerSourceFilter(source="user", position="first", count=1),
                PerSourceFilter(source="writer", position="last", count=1),
            ]
        ),
    )
    builder = DiGraphBuilder().add_node(writer).add_node(critic_inner).add_node(judge)
    builder.add_edge(writer, critic_inner)
    builder.add_edge(critic_inner, writer, condition="again")
    builder.add_edge(critic_inner, judge, condition="fine")
    builder.set_entry_point(writer)
    team = GraphFlow(builder.get_participants(), builder.build(), max_turns=20)
    await asyncio.wait_for(team.run(task="Write."), GUARD)
    assert judge_inner.seen == [["user:Write.", "writer:v3 done"]]
    assert len(critic_inner.seen) == 3


async def test_reset_through_team_resets_wrapped_agent() -> None:
    inner = Fake("solo", ["one", "two"])
    agent = MessageFilterAgent("solo", inner, MessageFilterConfig(per_source=[]))
    builder = DiGraphBuilder().add_node(agent)
    team = GraphFlow(builder.get_participants(), builder.build())
    result = await asyncio.wait_for(team.run(task="x"), GUARD)
    assert [m.source for m in result.messages] == ["user", "solo"]
    assert inner.seen == [[]]  # the task came from `user`, which no filter lets through
    await team.reset()
    assert inner.resets == 1 and inner.turns == 0
