"""The graph IR (DiGraph, DiGraphNode, DiGraphEdge), its conditions and DiGraphBuilder."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from _agents import Fake

from flowlib.agents import FunctionAgent
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import (
    ConditionSerializationError,
    CycleWithoutExitError,
    DuplicateNodeError,
    GraphError,
    UnknownNodeError,
)
from flowlib.graph import (
    AllOf,
    AnyOf,
    CallableCondition,
    Contains,
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    HandoffTo,
    Not,
    Regex,
)
from flowlib.messages import BaseChatMessage, HandoffMessage, TextMessage
from flowlib.teams import DiGraphBuilder, GraphFlow


def msg(text: str, source: str = "a") -> TextMessage:
    return TextMessage(content=text, source=source)


def graph(edges: Sequence[tuple[str, str]], *, nodes: Sequence[str] = (), **kw: object) -> DiGraph:
    """A DiGraph from ``(source, target)`` pairs; nodes in first-mention order."""
    names: list[str] = list(nodes)
    for s, t in edges:
        for n in (s, t):
            if n not in names:
                names.append(n)
    return DiGraph(
        nodes={
            n: DiGraphNode(name=n, edges=[DiGraphEdge(target=t) for s, t in edges if s == n])
            for n in names
        },
        **kw,  # type: ignore[arg-type]
    )


def loop_graph() -> DiGraph:
    """a -> b -> c -> b (c -> b conditional), c -> d on "done"."""
    return DiGraph(
        nodes={
            "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b")]),
            "b": DiGraphNode(name="b", edges=[DiGraphEdge(target="c")]),
            "c": DiGraphNode(
                name="c",
                edges=[
                    DiGraphEdge(target="b", condition="again"),
                    DiGraphEdge(target="d", condition="done"),
                ],
            ),
            "d": DiGraphNode(name="d"),
        }
    )


# --- fields -------------------------------------------------------------------------------


def test_edge_defaults() -> None:
    edge = DiGraphEdge(target="b")
    assert edge.target == "b"
    assert edge.condition is None
    assert edge.condition_function is None
    assert edge.activation_group == ""
    assert edge.activation_condition is None
    assert edge.label is None
    assert edge.is_conditional is False


def test_edge_callable_condition_moves_to_condition_function() -> None:
    def is_yes(m: BaseChatMessage) -> bool:
        return "yes" in m.to_model_text()

    edge = DiGraphEdge(target="b", condition=is_yes)
    assert edge.condition is None
    assert edge.condition_function is is_yes
    assert edge.is_conditional is True


def test_edge_string_and_object_conditions_stay_in_condition() -> None:
    assert DiGraphEdge(target="b", condition="x").condition == "x"
    assert DiGraphEdge(target="b", condition=Contains(text="x")).condition == Contains(text="x")
    assert DiGraphEdge(target="b", condition="x").is_conditional is True


def test_edge_condition_from_dict_builds_condition_object() -> None:
    edge = DiGraphEdge.model_validate(
        {"target": "b", "condition": {"kind": "regex", "pattern": "^ok", "ignore_case": True}}
    )
    assert edge.condition == Regex(pattern="^ok", ignore_case=True)


def test_node_defaults() -> None:
    node = DiGraphNode(name="a")
    assert node.name == "a"
    assert node.edges == []
    assert node.activation == "all"
    assert node.kind == "agent"
    # The default list is not shared between nodes.
    DiGraphNode(name="x").edges.append(DiGraphEdge(target="y"))
    assert DiGraphNode(name="z").edges == []


def test_digraph_fields() -> None:
    g = graph([("a", "b")], default_start_node="a")
    assert list(g.nodes) == ["a", "b"]
    assert g.default_start_node == "a"
    assert graph([("a", "b")]).default_start_node is None


# --- check_condition ----------------------------------------------------------------------


def test_check_condition_none_always_fires() -> None:
    assert DiGraphEdge(target="b").check_condition(msg("")) is True
    assert DiGraphEdge(target="b").check_condition(msg("anything")) is True


def test_check_condition_string_is_substring_of_model_text() -> None:
    edge = DiGraphEdge(target="b", condition="APPROVE")
    assert edge.check_condition(msg("I APPROVE this")) is True
    assert edge.check_condition(msg("approve")) is False  # case-sensitive
    assert edge.check_condition(msg("")) is False


def test_check_condition_callable() -> None:
    calls: list[str] = []

    def long_enough(m: BaseChatMessage) -> bool:
        calls.append(m.to_model_text())
        return len(m.to_model_text()) > 3

    edge = DiGraphEdge(target="b", condition=long_enough)
    assert edge.check_condition(msg("abcd")) is True
    assert edge.check_condition(msg("abc")) is False
    assert calls == ["abcd", "abc"]


def test_check_condition_callable_result_is_coerced_to_bool() -> None:
    edge = DiGraphEdge(target="b", condition=lambda m: m.to_model_text())  # type: ignore[arg-type,return-value]
    assert edge.check_condition(msg("x")) is True
    assert edge.check_condition(msg("")) is False


def test_check_condition_contains() -> None:
    edge = DiGraphEdge(target="b", condition=Contains(text="yes"))
    assert edge.check_condition(msg("oh yes")) is True
    assert edge.check_condition(msg("no")) is False


def test_check_condition_regex() -> None:
    edge = DiGraphEdge(target="b", condition=Regex(pattern=r"score: \d+"))
    assert edge.check_condition(msg("final score: 42")) is True
    assert edge.check_condition(msg("score: none")) is False
    assert (
        DiGraphEdge(target="b", condition=Regex(pattern="^ok$")).check_condition(msg("OK")) is False
    )
    insensitive = DiGraphEdge(target="b", condition=Regex(pattern="^ok$", ignore_case=True))
    assert insensitive.check_condition(msg("OK")) is True


def test_check_condition_handoff_to() -> None:
    edge = DiGraphEdge(target="b", condition=HandoffTo(target="b"))
    to_b = HandoffMessage(content="over to b", target="b", source="a")
    to_c = HandoffMessage(content="over to b", target="c", source="a")
    assert edge.check_condition(to_b) is True
    assert edge.check_condition(to_c) is False
    # A plain text that mentions the target is not a handoff.
    assert edge.check_condition(msg("handoff to b")) is False


def test_check_condition_not_any_all() -> None:
    not_stop = DiGraphEdge(target="b", condition=Not(condition=Contains(text="stop")))
    assert not_stop.check_condition(msg("go on")) is True
    assert not_stop.check_condition(msg("please stop")) is False

    either = DiGraphEdge(target="b", condition=AnyOf(conditions=[Contains(text="x"), "y"]))
    assert either.check_condition(msg("x")) is True
    assert either.check_condition(msg("y")) is True
    assert either.check_condition(msg("z")) is False

    both = DiGraphEdge(
        target="b", condition=AllOf(conditions=[Contains(text="x"), Regex(pattern="y$")])
    )
    assert both.check_condition(msg("x and y")) is True
    assert both.check_condition(msg("y and x")) is False
    assert both.check_condition(msg("x")) is False

    nested = DiGraphEdge(
        target="b",
        condition=Not(condition=AnyOf(conditions=["bad", AllOf(conditions=["a", "b"])])),
    )
    assert nested.check_condition(msg("fine")) is True
    assert nested.check_condition(msg("bad")) is False
    assert nested.check_condition(msg("a b")) is False
    assert nested.check_condition(msg("a")) is True


def test_condition_objects_are_callable() -> None:
    assert Contains(text="x")(msg("xx")) is True
    assert Not(condition="x")(msg("xx")) is False


def test_callable_placeholder_refuses_to_check() -> None:
    placeholder = CallableCondition(name="is_yes")
    with pytest.raises(ConditionSerializationError, match="`is_yes`"):
        placeholder.check(msg("yes"))


# --- documented queries -------------------------------------------------------------------


def test_get_parents() -> None:
    g = graph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    assert g.get_parents() == {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}


def test_get_parents_counts_loop_back_edges() -> None:
    assert loop_graph().get_parents() == {"a": [], "b": ["a", "c"], "c": ["b"], "d": ["c"]}


def test_get_start_nodes_without_default() -> None:
    g = graph([("a", "c"), ("b", "c"), ("c", "d")])
    assert g.get_start_nodes() == {"a", "b"}
    assert g.entry_nodes() == ["a", "b"]


def test_get_start_nodes_with_default_start_node() -> None:
    g = graph([("a", "c"), ("b", "c")], default_start_node="b")
    assert g.get_start_nodes() == {"b"}
    assert g.entry_nodes() == ["b"]


def test_get_start_nodes_of_a_loop_with_entry_point() -> None:
    g = DiGraph(
        nodes={
            "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b")]),
            "b": DiGraphNode(name="b", edges=[DiGraphEdge(target="a", condition="again")]),
        },
        default_start_node="a",
    )
    assert g.get_start_nodes() == {"a"}


def test_get_leaf_nodes() -> None:
    assert graph([("a", "b"), ("a", "c"), ("b", "d")]).get_leaf_nodes() == {"c", "d"}
    assert loop_graph().get_leaf_nodes() == {"d"}
    assert graph([], nodes=["solo"]).get_leaf_nodes() == {"solo"}


def test_get_has_cycles() -> None:
    assert graph([("a", "b"), ("b", "c")]).get_has_cycles() is False
    assert loop_graph().get_has_cycles() is True
    self_loop = DiGraph(
        nodes={
            "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b")]),
            "b": DiGraphNode(name="b", edges=[DiGraphEdge(target="b", condition="again")]),
        }
    )
    assert self_loop.get_has_cycles() is True


def test_has_cycles_with_exit_true_false_and_raises() -> None:
    assert loop_graph().has_cycles_with_exit() is True
    assert graph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]).has_cycles_with_exit() is False
    no_exit = graph([("a", "b"), ("b", "c"), ("c", "b")])
    with pytest.raises(CycleWithoutExitError) as info:
        no_exit.has_cycles_with_exit()
    assert isinstance(info.value, ValueError)
    assert set(info.value.nodes) == {"b", "c"}


def test_graph_validate_passes_and_fails() -> None:
    loop_graph().graph_validate()
    graph([("a", "b")]).graph_validate()
    with pytest.raises(GraphError):
        graph([("a", "b"), ("b", "a")], default_start_node="a").graph_validate()
    # allow_unconditional_cycles is how round-robin style teams opt out of the exit rule.
    graph([("a", "b"), ("b", "a")], default_start_node="a").graph_validate(
        allow_unconditional_cycles=True
    )


def test_get_remaining_map_dag() -> None:
    g = graph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    assert g.get_remaining_map() == {"b": {"b": 1}, "c": {"c": 1}, "d": {"d": 2}}


def test_get_remaining_map_loop_aware_default_groups() -> None:
    # b is entered from a (outside its loop) and from c (inside): two default groups.
    assert loop_graph().get_remaining_map() == {
        "b": {"b": 1, "b:loop": 1},
        "c": {"c:loop": 1},
        "d": {"d": 1},
    }


def test_get_remaining_map_self_loop_and_explicit_groups() -> None:
    g = DiGraph(
        nodes={
            "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b")]),
            "b": DiGraphNode(
                name="b",
                edges=[
                    DiGraphEdge(target="b", condition="again"),
                    DiGraphEdge(target="c1", condition="fan"),
                    DiGraphEdge(target="c2", condition="fan"),
                ],
            ),
            "c1": DiGraphNode(name="c1", edges=[DiGraphEdge(target="b", activation_group="back")]),
            "c2": DiGraphNode(name="c2", edges=[DiGraphEdge(target="b", activation_group="back")]),
        }
    )
    assert g.get_remaining_map() == {
        "b": {"b": 1, "b:loop": 1, "back": 2},
        "c1": {"c1:loop": 1},
        "c2": {"c2:loop": 1},
    }


# --- dump / load --------------------------------------------------------------------------


def rich_graph() -> DiGraph:
    return DiGraph(
        nodes={
            "a": DiGraphNode(
                name="a",
                edges=[
                    DiGraphEdge(target="b", condition="plain", label="go to b"),
                    DiGraphEdge(target="c", condition=Regex(pattern="^c", ignore_case=True)),
                    DiGraphEdge(
                        target="d",
                        condition=Not(condition=AnyOf(conditions=["x", HandoffTo(target="d")])),
                    ),
                ],
                kind="router",
            ),
            "b": DiGraphNode(
                name="b",
                edges=[
                    DiGraphEdge(target="e", activation_group="join", activation_condition="any")
                ],
            ),
            "c": DiGraphNode(
                name="c",
                edges=[
                    DiGraphEdge(
                        target="e",
                        condition=AllOf(conditions=[Contains(text="1"), "2"]),
                        activation_group="join",
                        activation_condition="any",
                    )
                ],
                kind="function",
            ),
            "d": DiGraphNode(name="d", edges=[DiGraphEdge(target="e")], kind="team"),
            "e": DiGraphNode(name="e", activation="any"),
        },
        default_start_node="a",
    )


def test_dump_json_load_round_trip() -> None:
    original = rich_graph()
    original.graph_validate()
    text = json.dumps(original.dump())
    loaded = DiGraph.load(json.loads(text))
    assert loaded.model_dump() == original.model_dump()
    assert loaded.dump() == original.dump()
    assert loaded.default_start_node == "a"
    assert loaded.nodes["a"].kind == "router"
    assert loaded.nodes["e"].activation == "any"
    edges = loaded.nodes["a"].edges
    assert edges[0].condition == "plain" and edges[0].label == "go to b"
    assert isinstance(edges[1].condition, Regex)
    assert edges[1].condition == Regex(pattern="^c", ignore_case=True)
    assert isinstance(edges[2].condition, Not)
    # The loaded conditions still work.
    assert edges[1].check_condition(msg("Cat")) is True
    assert edges[2].check_condition(msg("x")) is False
    assert edges[2].check_condition(msg("y")) is True
    joined = loaded.nodes["c"].edges[0]
    assert (joined.activation_group, joined.activation_condition) == ("join", "any")
    assert joined.check_condition(msg("1 2")) is True
    assert joined.check_condition(msg("1")) is False
    loaded.graph_validate()


def test_dump_marks_callable_conditions() -> None:
    def is_yes(m: BaseChatMessage) -> bool:
        return "yes" in m.to_model_text()

    g = DiGraph(
        nodes={
            "a": DiGraphNode(
                name="a",
                edges=[DiGraphEdge(target="b", condition=is_yes), DiGraphEdge(target="c")],
            ),
            "b": DiGraphNode(name="b"),
            "c": DiGraphNode(name="c"),
        }
    )
    data = json.loads(json.dumps(g.dump()))
    first, second = data["nodes"]["a"]["edges"]
    assert first["condition"] == {"kind": "callable", "name": "is_yes", "serializable": False}
    assert "condition_function" not in first
    assert second["condition"] is None


def test_load_restores_callable_conditions_by_name() -> None:
    def is_yes(m: BaseChatMessage) -> bool:
        return "yes" in m.to_model_text()

    g = DiGraph(
        nodes={
            "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b", condition=is_yes)]),
            "b": DiGraphNode(name="b"),
        }
    )
    data = json.loads(json.dumps(g.dump()))

    def replacement(m: BaseChatMessage) -> bool:
        return m.to_model_text() == "ok"

    loaded = DiGraph.load(data, conditions={"is_yes": replacement})
    edge = loaded.nodes["a"].edges[0]
    assert edge.condition is None
    assert edge.condition_function is replacement
    assert edge.check_condition(msg("ok")) is True
    assert edge.check_condition(msg("yes")) is False
    # Dumping again marks it again: nothing is silently dropped.
    assert loaded.dump()["nodes"]["a"]["edges"][0]["condition"]["kind"] == "callable"


def test_load_without_the_callable_raises() -> None:
    def is_yes(m: BaseChatMessage) -> bool:
        return "yes" in m.to_model_text()

    g = DiGraph(
        nodes={
            "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b", condition=is_yes)]),
            "b": DiGraphNode(name="b"),
        }
    )
    data = g.dump()
    with pytest.raises(ConditionSerializationError) as info:
        DiGraph.load(data)
    assert isinstance(info.value, ValueError)
    assert "`a -> b`" in str(info.value)
    assert "`is_yes`" in str(info.value)
    assert info.value.edges == (("a", "b"),)
    with pytest.raises(ConditionSerializationError, match="`is_yes`"):
        DiGraph.load(data, conditions={"other": is_yes})


def test_load_unknown_condition_kind_is_a_value_error_naming_the_kind() -> None:
    data = graph([("a", "b")]).dump()
    data["nodes"]["a"]["edges"][0]["condition"] = {"kind": "telepathy"}
    with pytest.raises(ValueError, match="`telepathy`"):
        DiGraph.load(data)


def test_load_unknown_condition_kind_raises_condition_serialization_error() -> None:
    data = graph([("a", "b")]).dump()
    data["nodes"]["a"]["edges"][0]["condition"] = {"kind": "telepathy"}
    with pytest.raises(ConditionSerializationError, match="telepathy"):
        DiGraph.load(data)


def test_team_graph_dump_round_trips() -> None:
    builder = DiGraphBuilder()
    builder.add_node(Fake("A")).add_node(Fake("B")).add_node(Fake("C"))
    builder.add_edge("A", "B").add_edge("B", "C", condition="go")
    builder.add_edge("B", "A", condition=Contains(text="again")).set_entry_point("A")
    team = GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(10),
    )
    data = json.loads(json.dumps(team.graph.dump()))
    assert DiGraph.load(data).model_dump() == team.graph.model_dump()


# --- builder ------------------------------------------------------------------------------


def test_builder_every_method_chains() -> None:
    a, b, c = Fake("a"), Fake("b"), Fake("c")
    builder = DiGraphBuilder()
    assert builder.add_node(a) is builder
    assert builder.add_node(b, activation="any") is builder
    assert builder.add_node(c) is builder
    assert builder.add_edge(a, b) is builder
    assert builder.add_conditional_edges(b, {"yes": c}) is builder
    assert builder.set_entry_point(a) is builder


def test_builder_builds_expected_graph() -> None:
    a, b, c = Fake("a"), Fake("b"), Fake("c")
    g = (
        DiGraphBuilder()
        .add_node(a)
        .add_node(b, activation="any")
        .add_node(c)
        .add_edge(a, "b")
        .add_edge("a", c, condition="go", activation_group="g", activation_condition="all")
        .add_edge(b, c, activation_group="g", activation_condition="all", label="L")
        .set_entry_point("a")
        .build()
    )
    assert isinstance(g, DiGraph)
    assert list(g.nodes) == ["a", "b", "c"]
    assert g.default_start_node == "a"
    assert g.nodes["b"].activation == "any"
    assert [
        (e.target, e.condition, e.activation_group, e.activation_condition, e.label)
        for e in g.nodes["a"].edges
    ] == [
        ("b", None, "", None, None),
        ("c", "go", "g", "all", None),
    ]
    assert g.nodes["b"].edges[0].label == "L"
    assert g.nodes["c"].edges == []


def test_builder_add_conditional_edges() -> None:
    builder = DiGraphBuilder()
    for name in ("router", "yes_path", "no_path"):
        builder.add_node(Fake(name))
    builder.add_conditional_edges("router", {"yes": "yes_path", "no": Fake("no_path")})
    edges = builder.build().nodes["router"].edges
    assert [(e.target, e.condition) for e in edges] == [("yes_path", "yes"), ("no_path", "no")]
    assert edges[0].check_condition(msg("yes")) is True
    assert edges[0].check_condition(msg("no")) is False


def test_builder_add_conditional_edges_unknown_target() -> None:
    builder = DiGraphBuilder().add_node(Fake("a"))
    with pytest.raises(UnknownNodeError, match="`missing`"):
        builder.add_conditional_edges("a", {"x": "missing"})


def test_builder_set_entry_point_with_agent_or_name() -> None:
    a, b = Fake("a"), Fake("b")

    def make() -> DiGraphBuilder:
        builder = DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b)
        return builder.add_edge(b, a, condition="again")

    assert make().set_entry_point(a).build().default_start_node == "a"
    assert make().set_entry_point("a").build().default_start_node == "a"
    assert (
        DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b).build().default_start_node is None
    )


def test_builder_get_participants_in_insertion_order() -> None:
    agents = [Fake("z"), Fake("a"), Fake("m")]
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    assert builder.get_participants() == agents
    assert builder.get_participants() is not builder.get_participants()


def test_builder_functions_as_nodes() -> None:
    def draft(messages: Sequence[BaseChatMessage]) -> str:
        return "draft"

    async def review(messages: Sequence[BaseChatMessage]) -> str:
        return "ok"

    builder = (
        DiGraphBuilder()
        .add_node(draft)
        .add_node(review)
        .add_node(lambda messages: "done", name="finish")
        .add_edge("draft", "review")
        .add_edge(review, "finish")
    )
    participants = builder.get_participants()
    assert [p.name for p in participants] == ["draft", "review", "finish"]
    assert all(isinstance(p, FunctionAgent) for p in participants)
    assert participants[0].func is draft  # type: ignore[union-attr]
    g = builder.build()
    assert [g.nodes[n].kind for n in g.nodes] == ["function", "function", "function"]
    assert g.nodes["draft"].edges[0].target == "review"


def test_builder_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError, match="name"):
        DiGraphBuilder().add_node(lambda messages: "x")


def test_builder_node_kinds() -> None:
    inner_builder = DiGraphBuilder().add_node(Fake("x"))
    inner = GraphFlow(inner_builder.get_participants(), inner_builder.build(), name="inner")

    def step(messages: Sequence[BaseChatMessage]) -> str:
        return "s"

    builder = (
        DiGraphBuilder()
        .add_node(Fake("agent"))
        .add_node(inner)
        .add_node(step)
        .add_node(FunctionAgent(step, name="wrapped"))
        .add_node(Fake("picker"), kind="router")
        .add_edge("agent", "inner")
        .add_edge("inner", "step")
        .add_edge("step", "wrapped")
        .add_edge("wrapped", "picker")
    )
    g = builder.build()
    assert {n: g.nodes[n].kind for n in g.nodes} == {
        "agent": "agent",
        "inner": "team",
        "step": "function",
        "wrapped": "function",
        "picker": "router",
    }
    assert builder.get_participants()[1] is inner


def test_builder_add_edge_unknown_nodes() -> None:
    builder = DiGraphBuilder().add_node(Fake("a"))
    with pytest.raises(UnknownNodeError) as info:
        builder.add_edge("a", "ghost")
    assert isinstance(info.value, ValueError)
    assert "`ghost`" in str(info.value)
    assert info.value.nodes == ("ghost",)
    with pytest.raises(UnknownNodeError, match="`ghost`"):
        builder.add_edge("ghost", "a")
    with pytest.raises(UnknownNodeError, match="`stranger`"):
        builder.add_edge("a", Fake("stranger"))
    with pytest.raises(UnknownNodeError, match="`nowhere`"):
        builder.set_entry_point("nowhere")
    # The failed calls left no edge behind.
    assert builder.build().nodes["a"].edges == []


def test_builder_duplicate_node() -> None:
    builder = DiGraphBuilder().add_node(Fake("a"))
    with pytest.raises(DuplicateNodeError) as info:
        builder.add_node(Fake("a"))
    assert isinstance(info.value, ValueError)
    assert "`a`" in str(info.value)

    def a(messages: Sequence[BaseChatMessage]) -> str:
        return "x"

    with pytest.raises(DuplicateNodeError, match="`a`"):
        builder.add_node(a)


def test_builder_build_validates() -> None:
    builder = DiGraphBuilder().add_node(Fake("a")).add_node(Fake("b"))
    builder.add_edge("a", "b").add_edge("b", "a").set_entry_point("a")
    with pytest.raises(CycleWithoutExitError):
        builder.build()


def test_builder_build_returns_a_snapshot() -> None:
    builder = DiGraphBuilder().add_node(Fake("a")).add_node(Fake("b")).add_node(Fake("c"))
    builder.add_edge("a", "b")
    first = builder.build()
    builder.add_edge("b", "c")
    assert first.nodes["b"].edges == []
    assert builder.build().nodes["b"].edges[0].target == "c"
