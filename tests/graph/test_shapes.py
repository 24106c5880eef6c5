"""The graph shapes of the built-in teams, built once in ``flowlib.graph._shapes``."""

from __future__ import annotations

from flowlib.agents import AssistantAgent, FunctionAgent
from flowlib.graph import Router
from flowlib.graph._shapes import hub_graph, node_kind, ring_graph
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import RoundRobinGroupChat, SelectorGroupChat


def agent(name: str) -> AssistantAgent:
    return AssistantAgent(name, ReplayChatCompletionClient(["hi"]), description=name)


def test_ring_graph_links_each_participant_to_the_next() -> None:
    inner = RoundRobinGroupChat([agent("x")], name="inner", max_turns=1)
    graph = ring_graph([agent("a"), FunctionAgent(lambda messages: "f", name="f"), inner])
    assert graph.default_start_node == "a"
    assert {name: [e.target for e in node.edges] for name, node in graph.nodes.items()} == {
        "a": ["f"],
        "f": ["inner"],
        "inner": ["a"],
    }
    assert [node.kind for node in graph.nodes.values()] == ["agent", "function", "team"]
    assert graph.pattern == "round_robin"


def test_hub_graph_routes_through_the_router() -> None:
    graph = hub_graph("hub", [agent("a"), agent("b")], pattern="selector")
    assert graph.default_start_node == "hub"
    assert graph.nodes["hub"].kind == "router"
    assert [e.target for e in graph.nodes["hub"].edges] == ["a", "b"]
    assert all(e.condition is not None for e in graph.nodes["hub"].edges)
    assert [e.target for e in graph.nodes["a"].edges] == ["hub"]
    assert {node.activation for node in graph.nodes.values()} == {"any"}


def test_the_teams_compile_to_the_shapes() -> None:
    a, b = agent("a"), agent("b")
    assert RoundRobinGroupChat([a, b], max_turns=2).graph == ring_graph([a, b])
    team = SelectorGroupChat([a, b], ReplayChatCompletionClient(["a"]), name="t", max_turns=2)
    assert team.graph == hub_graph("t_selector", [a, b], pattern="selector")
    assert node_kind(team.selector) == "router"
    assert isinstance(team.selector, Router)
