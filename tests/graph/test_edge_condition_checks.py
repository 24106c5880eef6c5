"""Edge conditions that could never work are rejected at build time (issue 11.6), with
a flowlib error naming the edge; bad activation/group/condition values are named too."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from _agents import Fake

from flowlib.errors import (
    ArgumentTypeError,
    FlowlibError,
    GraphError,
    InvalidArgumentError,
    InvalidConditionError,
)
from flowlib.graph import AllOf, AnyOf, DiGraph, DiGraphEdge, DiGraphNode, Not, Regex
from flowlib.messages import BaseChatMessage, TextMessage
from flowlib.teams import DiGraphBuilder, GraphFlow


def builder() -> DiGraphBuilder:
    return DiGraphBuilder().add_node(Fake("a", ["x"])).add_node(Fake("b", ["y"]))


async def async_condition(message: BaseChatMessage) -> bool:
    return False


class AsyncCallable:
    async def __call__(self, message: BaseChatMessage) -> bool:
        return False


@pytest.mark.parametrize(
    "condition",
    [
        async_condition,
        functools.partial(async_condition),
        AsyncCallable(),
    ],
    ids=["async-def", "partial", "async-call"],
)
def test_async_condition_is_rejected_at_add_edge(condition: Any) -> None:
    graph = builder()
    with pytest.raises(InvalidConditionError, match=r"Edge `a -> b`: the condition .* is async"):
        graph.add_edge("a", "b", condition=condition)
    assert graph.nodes["a"].edges == []  # nothing half-added


def test_async_condition_is_rejected_when_the_graph_is_built_directly() -> None:
    edge = DiGraphEdge(target="b", condition=async_condition)
    graph = DiGraph(
        nodes={"a": DiGraphNode(name="a", edges=[edge]), "b": DiGraphNode(name="b", edges=[])}
    )
    with pytest.raises(InvalidConditionError, match="`a -> b`") as caught:
        GraphFlow([Fake("a", ["x"]), Fake("b", ["y"])], graph=graph)
    assert caught.value.edges == (("a", "b"),)


@pytest.mark.parametrize(
    "condition",
    [
        Regex(pattern="(("),
        Not(condition=Regex(pattern="[")),
        AnyOf(conditions=["ok", {"kind": "regex", "pattern": "(?P<"}]),
        AllOf(conditions=[Not(condition=Regex(pattern="*"))]),
    ],
    ids=["plain", "not", "any_of-dict", "nested"],
)
def test_regex_that_does_not_compile_fails_at_build(condition: Any) -> None:
    graph = builder()
    with pytest.raises(
        InvalidConditionError, match=r"Edge `a -> b`: the regex condition"
    ) as caught:
        graph.add_edge("a", "b", condition=condition)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, GraphError)


def test_regex_in_a_loaded_graph_fails_at_validation() -> None:
    graph = builder().add_edge("a", "b", condition=Regex(pattern="ok")).build()
    data = graph.dump()
    data["nodes"]["a"]["edges"][0]["condition"]["pattern"] = "(("
    loaded = DiGraph.load(data)
    with pytest.raises(InvalidConditionError, match="`a -> b`"):
        loaded.graph_validate()


async def test_valid_conditions_still_route() -> None:
    graph = (
        DiGraphBuilder()
        .add_node(Fake("a", ["go left"]))
        .add_node(Fake("left", ["L"]))
        .add_node(Fake("right", ["R"]))
        .add_edge("a", "left", condition=Regex(pattern=r"\bleft\b"))
        .add_edge("a", "right", condition=lambda m: "right" in m.to_model_text())
    )
    team = GraphFlow(graph.get_participants(), graph=graph.build())
    result = await asyncio.wait_for(team.run(task="start"), 30)
    assert [m.source for m in result.messages] == ["user", "a", "left"]


@pytest.mark.parametrize(
    ("kwargs", "error", "argument"),
    [
        ({"condition": 5}, ArgumentTypeError, "condition"),
        ({"activation_condition": "some"}, InvalidArgumentError, "activation_condition"),
        ({"activation_group": 3}, ArgumentTypeError, "activation_group"),
        ({"label": ["x"]}, ArgumentTypeError, "label"),
    ],
)
def test_bad_edge_values_are_named(
    kwargs: dict[str, Any], error: type[FlowlibError], argument: str
) -> None:
    graph = builder()
    with pytest.raises(error, match=f"`{argument}`") as caught:
        graph.add_edge("a", "b", **kwargs)
    assert caught.value.argument == argument  # type: ignore[attr-defined]
    assert graph.nodes["a"].edges == []


def test_bad_node_values_are_named() -> None:
    graph = DiGraphBuilder()
    with pytest.raises(InvalidArgumentError, match="`activation` must be") as caught:
        graph.add_node(Fake("a", ["x"]), activation="every")  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError)
    with pytest.raises(InvalidArgumentError, match="`kind` must be one of"):
        graph.add_node(Fake("a", ["x"]), kind="robot")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="`agent` must be a ChatAgent"):
        graph.add_node(42)  # type: ignore[arg-type]
    assert graph.nodes == {}


def test_sync_callable_objects_and_strings_pass() -> None:
    class Sync:
        def __call__(self, message: BaseChatMessage) -> bool:
            return True

    graph = builder().add_edge("a", "b", condition=Sync()).build()
    assert graph.nodes["a"].edges[0].check_condition(TextMessage(content="x", source="a"))


def test_a_regex_that_ran_still_dumps_whole() -> None:
    # Checking used to cache the compiled pattern in the instance dict, after which
    # pydantic dumped the edge's condition as {"kind": "regex"}: the pattern was lost.
    graph = builder().add_edge("a", "b", condition=Regex(pattern="x", ignore_case=True)).build()
    assert graph.nodes["a"].edges[0].check_condition(TextMessage(content="X", source="a"))
    dumped = graph.dump()["nodes"]["a"]["edges"][0]["condition"]
    assert dumped == {"kind": "regex", "pattern": "x", "ignore_case": True}
    assert DiGraph.load(graph.dump()).dump() == graph.dump()
