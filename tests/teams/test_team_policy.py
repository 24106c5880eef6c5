"""The explicit team policy (issue 9.5): check a task, route it without side effects,
describe a dead end."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _agents import Fake, texts

from flowlib.errors import ArgumentTypeError, InvalidArgumentError, InvalidValueError
from flowlib.graph import DiGraph
from flowlib.messages import BaseChatMessage, HandoffMessage, TextMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import (
    BaseGroupChat,
    DiGraphBuilder,
    MagenticOneGroupChat,
    SelectorGroupChat,
    Swarm,
    TaskContext,
    TeamPolicy,
)
from flowlib.testing import ScriptedAgent


def task(text: str = "go") -> list[BaseChatMessage]:
    return [TextMessage(content=text, source="user")]


async def test_magentic_one_routing_changes_nothing() -> None:
    coder = ScriptedAgent("coder", ["c"])
    team = MagenticOneGroupChat([coder], ReplayChatCompletionClient([]))
    before = await team.orchestrator.save_state()
    assert team.policy.route_task(task()) == ["MagenticOneOrchestrator"]
    assert await team.orchestrator.save_state() == before
    assert not team.orchestrator.has_task
    team.policy.start_task(task())  # the one step that prepares the orchestrator
    assert team.orchestrator.has_task


async def test_magentic_one_refuses_a_run_with_no_task_under_way() -> None:
    team = MagenticOneGroupChat([ScriptedAgent("coder", ["c"])], ReplayChatCompletionClient([]))
    with pytest.raises(InvalidValueError, match="no task under way"):
        await team.run()


def test_swarm_checks_the_task_against_the_context_it_is_given() -> None:
    a, b = Fake("a"), Fake("b")
    team = Swarm([a, b], max_turns=5)
    policy = team.policy
    to_user = HandoffMessage(source="a", target="user", content="ask")
    context = TaskContext(["a", "b"], [to_user], running=False)
    with pytest.raises(InvalidArgumentError, match="does not know who continues"):
        policy.check_task([], context)
    policy.check_task([], TaskContext(["a", "b"], [], running=False))  # nothing to continue
    back = HandoffMessage(source="user", target="b", content="answer")
    policy.check_task([back], context)
    assert policy.route_task([back]) == ["b"]
    assert policy.route_task(task()) is None
    with pytest.raises(InvalidArgumentError, match="not a participant"):
        policy.check_task([HandoffMessage(source="user", target="zed", content="x")], context)
    dead = HandoffMessage(source="a", target="b", content="x")
    assert "declared handoffs" in (policy.describe_dead_end("a", dead) or "")
    assert policy.describe_dead_end("a", TextMessage(content="x", source="a")) is None


def test_selector_routes_a_new_task_to_its_router_and_lists_its_speakers() -> None:
    team = SelectorGroupChat([Fake("a"), Fake("b")], ReplayChatCompletionClient(["a"]), max_turns=5)
    assert team.policy.route_task(task()) == [team.selector.name]
    assert team.selector.speakers == ["a", "b"]


class FirstIsB(TeamPolicy):
    def __init__(self) -> None:
        self.started: list[str] = []

    def check_task(self, task: Sequence[BaseChatMessage], context: TaskContext) -> None:
        if any(m.to_text() == "bad" for m in task):
            raise InvalidArgumentError("no bad tasks", argument="task")

    def route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        return ["b"]

    def start_task(self, task: Sequence[BaseChatMessage]) -> None:
        self.started.extend(m.to_text() for m in task)


def chain(policy: TeamPolicy | None) -> tuple[BaseGroupChat, Fake, Fake]:
    a, b = Fake("a"), Fake("b")
    graph: DiGraph = DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b).build()
    team = BaseGroupChat(
        name="t",
        description="d",
        participants=[a, b],
        graph=graph,
        policy=policy,
        allow_unreachable=True,
    )
    return team, a, b


async def test_a_custom_policy_checks_starts_and_routes_the_tasks() -> None:
    policy = FirstIsB()
    team, a, b = chain(policy)
    assert team.policy is policy
    with pytest.raises(InvalidArgumentError, match="no bad tasks"):
        await team.run(task="bad")
    assert policy.started == [] and a.seen == [] and b.seen == []  # refused: nothing changed
    result = await team.run(task="go")
    assert texts(result.messages) == ["user:go", "b:b1"]
    assert policy.started == ["go"]


async def test_the_default_policy_starts_at_the_entry() -> None:
    team, _, _ = chain(None)
    assert type(team.policy) is TeamPolicy
    result = await team.run(task="go")
    assert texts(result.messages) == ["user:go", "a:a1", "b:b1"]


def test_a_policy_of_the_wrong_type_is_named() -> None:
    with pytest.raises(ArgumentTypeError, match="policy"):
        chain("first")  # type: ignore[arg-type]
