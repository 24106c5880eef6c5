"""The Node adapters: one interface over agents, nested teams, function nodes and routers."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

import pytest
from _agents import Fake

from flowlib.agents import FunctionAgent
from flowlib.base import CancellationToken
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import ArgumentTypeError, ContractError, RoutingError
from flowlib.graph import (
    AgentNode,
    FunctionNode,
    Node,
    NodeContext,
    Router,
    RouterNode,
    Routing,
    TeamNode,
    TurnOutput,
    as_node,
)
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
    TextMessage,
    ThoughtEvent,
)
from flowlib.teams import RoundRobinGroupChat


async def run_turn(node: Node, *texts: str) -> tuple[list[Any], TurnOutput]:
    """Drive one turn: the streamed items and the final output (which must come last)."""
    items: list[Any] = []
    async for item in node.turn(
        [TextMessage(content=t, source="user") for t in texts], CancellationToken()
    ):
        items.append(item)
    assert items and isinstance(items[-1], TurnOutput)
    assert not any(isinstance(item, TurnOutput) for item in items[:-1])
    return items[:-1], items[-1]


class Picks(Router):
    def __init__(self, *targets: str, stop: str | None = None, routing: bool = True) -> None:
        super().__init__("router")
        self.targets = list(targets)
        self.stop = stop
        self.routing = routing
        self.resets = 0

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        return Routing(
            targets=self.targets,
            events=[ThoughtEvent(content="thinking", source="router")],
            messages=[TextMessage(content="go", source="router")],
            stop_reason=self.stop,
        )

    async def route_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Routing, None]:
        if self.routing:
            yield await self.route(messages, cancellation_token)

    async def reset(self) -> None:
        self.resets += 1


def router_context() -> NodeContext:
    return NodeContext(
        names=["router", "a", "b", "c"],
        index={"router": 0, "a": 1, "b": 2, "c": 3},
        targets=frozenset({1, 2}),
    )


# --- as_node ----------------------------------------------------------------------------


def test_as_node_picks_the_adapter_by_class() -> None:
    team = RoundRobinGroupChat([Fake("inner")], max_turns=1)
    cases: list[tuple[object, type[Node], str, bool]] = [
        (Fake("a"), AgentNode, "agent", True),
        (FunctionAgent(lambda messages: None, name="f"), FunctionNode, "function", True),
        (team, TeamNode, "team", True),
        (Picks("a"), RouterNode, "router", False),
    ]
    for participant, adapter, kind, counts in cases:
        node = as_node(participant)
        assert type(node) is adapter
        assert node.participant is participant
        assert node.name == participant.name  # type: ignore[attr-defined]
        assert node.kind == kind
        assert node.counts_turn is counts
        assert repr(node) == f"{adapter.__name__}({node.name!r})"


def test_as_node_refuses_what_no_node_can_run() -> None:
    with pytest.raises(ArgumentTypeError, match="cannot run a str") as caught:
        as_node("not an agent")
    assert caught.value.argument == "participant"
    assert isinstance(caught.value, TypeError)


# --- AgentNode --------------------------------------------------------------------------


async def test_agent_node_streams_then_outputs_the_reply() -> None:
    agent = Fake("a", replies=["hello"], thought="hmm")
    node = as_node(agent, NodeContext(factory=MessageFactory()))
    streamed, output = await run_turn(node, "hi")
    assert [type(item) for item in streamed] == [ThoughtEvent]
    assert output.final is not None and output.final.to_text() == "hello"
    assert output.published == [output.final]
    assert output.tail == (output.final,)
    assert [type(item) for item in output.delta] == [ThoughtEvent, TextMessage]
    assert output.selected is None
    assert agent.seen == [["user:hi"]]


async def test_agent_node_lifecycle_and_state_reach_the_agent() -> None:
    agent = Fake("a")
    node = as_node(agent)
    await run_turn(node, "hi")
    assert await node.save_state() == {"type": "FakeState", "turns": 1}
    await node.pause()
    await node.resume()
    await node.reset()
    assert (agent.pauses, agent.resumes, agent.resets, agent.turns) == (1, 1, 1, 0)
    await node.load_state({"type": "FakeState", "turns": 5})
    assert agent.turns == 5


async def test_agent_node_without_a_response_breaks_the_contract() -> None:
    class Silent(Fake):
        async def on_messages_stream(  # type: ignore[override]
            self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
        ) -> AsyncGenerator[Any, None]:
            yield ThoughtEvent(content="...", source=self.name)

    with pytest.raises(ContractError, match=r"Agent `mute`.*without yielding a Response"):
        await run_turn(as_node(Silent("mute")), "hi")


async def test_agent_node_checks_the_messages_with_the_factory() -> None:
    class Odd(TextMessage):
        pass

    class Sends(Fake):
        async def on_messages_stream(  # type: ignore[override]
            self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
        ) -> AsyncGenerator[Any, None]:
            from flowlib.base import Response

            yield Response(chat_message=Odd(content="x", source=self.name))

    # Without a factory nothing is checked; with one, an unregistered type is refused.
    _, output = await run_turn(as_node(Sends("s")), "hi")
    assert isinstance(output.final, Odd)
    with pytest.raises(ValueError, match="Odd"):
        await run_turn(as_node(Sends("s"), NodeContext(factory=MessageFactory())), "hi")


# --- FunctionNode -----------------------------------------------------------------------


async def test_function_node_is_one_call() -> None:
    seen: list[list[str]] = []

    def upper(messages: Sequence[BaseChatMessage]) -> str:
        seen.append([m.to_text() for m in messages])
        return messages[-1].to_text().upper()

    node = as_node(FunctionAgent(upper))
    streamed, output = await run_turn(node, "a", "b")
    assert streamed == []
    assert seen == [["a", "b"]]
    assert output.final is not None and output.final.to_text() == "B"
    assert output.final.source == "upper"
    assert output.published == [output.final] and output.tail == (output.final,)


async def test_function_node_returning_none_publishes_nothing() -> None:
    node = as_node(FunctionAgent(lambda messages: None, name="quiet"))
    streamed, output = await run_turn(node, "a")
    assert streamed == [] and output.published == [] and output.final is None
    assert output.delta == [] and output.tail == ()


async def test_function_node_streams_a_responses_inner_messages() -> None:
    from flowlib.base import Response

    def think(messages: Sequence[BaseChatMessage]) -> Response:
        return Response(
            chat_message=TextMessage(content="done", source="think"),
            inner_messages=[ThoughtEvent(content="step", source="think")],
        )

    streamed, output = await run_turn(as_node(FunctionAgent(think)), "a")
    assert [type(item) for item in streamed] == [ThoughtEvent]
    assert [type(item) for item in output.delta] == [ThoughtEvent, TextMessage]
    assert await as_node(FunctionAgent(think)).save_state() is not None


# --- TeamNode ---------------------------------------------------------------------------


async def test_team_node_runs_the_team_and_reports_the_handover() -> None:
    inner = Fake("inner", replies=["one", "two"])
    team = RoundRobinGroupChat([inner], termination_condition=MaxMessageTermination(2), name="crew")
    handed: list[bool] = []
    node = as_node(team, NodeContext(handed_over=lambda: handed.append(True)))
    assert node.name == "crew"
    streamed, output = await run_turn(node, "task")
    assert handed == [True]
    # The task messages are not streamed or published again; the team's reply is.
    assert [m.to_text() for m in output.published] == ["one"]
    assert output.final is output.published[-1]
    assert [m.to_text() for m in streamed if isinstance(m, BaseChatMessage)] == ["one"]
    assert output.tail == ()


async def test_team_node_lifecycle_and_state_reach_the_team() -> None:
    inner = Fake("inner")
    team = RoundRobinGroupChat([inner], max_turns=1)
    node = as_node(team)
    await run_turn(node, "task")
    state = await node.save_state()
    assert state["agent_states"]["inner"] == {"type": "FakeState", "turns": 1}
    await node.pause()
    await node.resume()
    assert (inner.pauses, inner.resumes) == (1, 1)
    await node.reset()
    assert inner.resets == 1 and inner.turns == 0
    await node.load_state(state)
    assert inner.turns == 1


# --- RouterNode -------------------------------------------------------------------------


async def test_router_node_checks_and_indexes_its_selection() -> None:
    node = as_node(Picks("b", "a", stop="enough"), router_context())
    streamed, output = await run_turn(node, "hi")
    assert output.selected == {1, 2}
    assert output.stop_reason == "enough"
    assert [type(item) for item in streamed] == [ThoughtEvent, TextMessage]
    assert output.published == [streamed[1]] and output.final is streamed[1]
    assert output.delta == streamed


async def test_router_node_refuses_a_target_that_is_not_an_edge() -> None:
    for target in ("c", "nowhere"):
        with pytest.raises(RoutingError, match=f"selected `{target}`.*\\(`a`, `b`\\)"):
            await run_turn(as_node(Picks(target), router_context()), "hi")


async def test_router_node_without_a_routing_breaks_the_contract() -> None:
    with pytest.raises(ContractError, match=r"Router `router`.*without a Routing"):
        await run_turn(as_node(Picks(routing=False), router_context()), "hi")


async def test_router_node_resets_but_has_nothing_to_pause() -> None:
    router = Picks("a")
    node = as_node(router, router_context())
    await node.pause()
    await node.resume()
    await node.reset()
    assert router.resets == 1
    assert await node.save_state() == await router.save_state()
    await node.load_state({})
