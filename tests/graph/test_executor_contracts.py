"""A participant or router that breaks its contract is a named flowlib error (issue 9.7)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

import pytest
from _agents import Fake

from flowlib.base import CancellationToken
from flowlib.errors import ContractError, NodeExecutionError, RoutingError
from flowlib.graph import (
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    ExecutionPlan,
    GraphExecutor,
    Router,
    Routing,
    Selected,
    validate_graph,
)
from flowlib.messages import BaseAgentEvent, BaseChatMessage, MessageFactory, TextMessage


class Picks(Router):
    def __init__(self, target: str | None) -> None:
        super().__init__("router")
        self.target = target

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        return Routing(targets=[self.target] if self.target else [])

    async def route_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Routing, None]:
        if self.target is None:
            return  # no Routing at all
        yield await self.route(messages, cancellation_token)


def executor(router: Router) -> GraphExecutor:
    graph = DiGraph(
        nodes={
            "router": DiGraphNode(
                name="router",
                kind="router",
                edges=[DiGraphEdge(target="a", condition=Selected(target="a"))],
            ),
            "a": DiGraphNode(name="a"),
        }
    )
    plan = ExecutionPlan(graph, validate_graph(graph))
    return GraphExecutor(
        plan,
        [router, Fake("a")],
        termination_condition=None,
        max_turns=None,
        message_factory=MessageFactory(),
    )


async def run(router: Router) -> NodeExecutionError:
    with pytest.raises(NodeExecutionError) as caught:
        async for _ in executor(router).run_stream([TextMessage(content="go", source="u")]):
            pass
    return caught.value


async def test_a_router_selecting_a_non_target_is_a_routing_error() -> None:
    error = await run(Picks("zed"))
    assert isinstance(error.__cause__, RoutingError) and isinstance(error.__cause__, ValueError)
    assert "`zed`" in str(error.__cause__) and "`a`" in str(error.__cause__)


async def test_a_router_stream_without_a_routing_is_a_contract_error() -> None:
    error = await run(Picks(None))
    assert isinstance(error.__cause__, ContractError)
    assert "ended without a Routing" in str(error.__cause__)
