"""Build-time validation: every rule raises its flowlib.errors class, naming the culprits."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import pytest
from _agents import Fake

from flowlib.conditions import MaxMessageTermination
from flowlib.errors import (
    ActivationConflictError,
    CycleWithoutExitError,
    DuplicateNodeError,
    EmptyGraphError,
    FlowlibError,
    GraphError,
    NoStartNodeError,
    ParticipantMismatchError,
    UnboundedLoopError,
    UnknownNodeError,
    UnreachableNodeError,
)
from flowlib.graph import DiGraph, DiGraphEdge, DiGraphNode, validate_graph
from flowlib.teams import DiGraphBuilder, GraphFlow

Edge = tuple[str, str] | tuple[str, str, str]


def make(edges: Sequence[Edge], *, nodes: Sequence[str] = (), start: str | None = None) -> DiGraph:
    """A DiGraph from ``(source, target[, condition])``; nodes in first-mention order."""
    names: list[str] = list(nodes)
    for edge in edges:
        for n in edge[:2]:
            if n not in names:
                names.append(n)
    return DiGraph(
        nodes={
            n: DiGraphNode(
                name=n,
                edges=[
                    DiGraphEdge(target=e[1], condition=e[2] if len(e) == 3 else None)  # type: ignore[misc]
                    for e in edges
                    if e[0] == n
                ],
            )
            for n in names
        },
        default_start_node=start,
    )


def shown_cycle(message: str) -> list[str]:
    """The first backticked ``x -> y -> ... -> x`` cycle in ``message``, as a node list."""
    for quoted in re.findall(r"`([^`]*)`", message):
        parts = quoted.split(" -> ")
        if len(parts) >= 2 and parts[0] == parts[-1]:
            return parts
    raise AssertionError(f"no cycle shown in: {message}")


def is_rotation(cycle: list[str], expected: list[str]) -> bool:
    body = cycle[:-1]
    return len(body) == len(expected) and any(
        body == expected[i:] + expected[:i] for i in range(len(expected))
    )


def assert_graph_error(exc: BaseException, cls: type[GraphError]) -> None:
    assert type(exc) is cls
    assert isinstance(exc, ValueError)
    assert isinstance(exc, FlowlibError)


def flow(graph: DiGraph, names: Sequence[str] | None = None, **kw: object) -> GraphFlow:
    agents = [Fake(n) for n in (names if names is not None else list(graph.nodes))]
    return GraphFlow(agents, graph, **kw)  # type: ignore[arg-type]


# --- graph rules ----------------------------------------------------------------------------


def test_empty_graph() -> None:
    with pytest.raises(EmptyGraphError) as info:
        DiGraph(nodes={}).graph_validate()
    assert_graph_error(info.value, EmptyGraphError)
    assert "add_node" in str(info.value)
    with pytest.raises(EmptyGraphError):
        DiGraphBuilder().build()


def test_node_key_must_equal_name() -> None:
    g = DiGraph(nodes={"a": DiGraphNode(name="b")})
    with pytest.raises(GraphError) as info:
        g.graph_validate()
    assert "`a`" in str(info.value) and "`b`" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_edge_to_unknown_node() -> None:
    g = make([("a", "b")])
    g.nodes["b"].edges.append(DiGraphEdge(target="ghost"))
    with pytest.raises(UnknownNodeError) as info:
        g.graph_validate()
    assert_graph_error(info.value, UnknownNodeError)
    assert "`b -> ghost`" in str(info.value)
    assert info.value.edges == (("b", "ghost"),)
    assert info.value.nodes == ("ghost",)


def test_unknown_entry_point() -> None:
    with pytest.raises(UnknownNodeError) as info:
        make([("a", "b")], start="zz").graph_validate()
    assert_graph_error(info.value, UnknownNodeError)
    assert "`zz`" in str(info.value)
    # The message lists the nodes it could have been.
    assert "`a`" in str(info.value) and "`b`" in str(info.value)


def test_no_start_node() -> None:
    g = make([("a", "b"), ("b", "a", "again")])
    with pytest.raises(NoStartNodeError) as info:
        g.graph_validate()
    assert_graph_error(info.value, NoStartNodeError)
    assert "set_entry_point" in str(info.value)
    assert "`a`" in str(info.value) and "`b`" in str(info.value)
    # An entry point fixes it.
    make([("a", "b"), ("b", "a", "again")], start="a").graph_validate()


def test_unreachable_nodes_behind_a_parentless_loop() -> None:
    g = make([("a", "b"), ("c", "d"), ("d", "c", "again")])
    with pytest.raises(UnreachableNodeError) as info:
        g.graph_validate()
    assert_graph_error(info.value, UnreachableNodeError)
    assert info.value.nodes == ("c", "d")
    assert "`c`" in str(info.value) and "`d`" in str(info.value)
    assert "`a`" in str(info.value)  # names the start node it searched from
    assert "`b`" not in str(info.value)


def test_unreachable_node_with_entry_point() -> None:
    g = make([("a", "b")], nodes=["a", "b", "lonely"], start="a")
    with pytest.raises(UnreachableNodeError) as info:
        g.graph_validate()
    assert info.value.nodes == ("lonely",)
    assert "`lonely`" in str(info.value)


def test_cycle_without_conditional_edge_names_the_cycle() -> None:
    g = make([("a", "b"), ("b", "c"), ("c", "a")], start="a")
    with pytest.raises(CycleWithoutExitError) as info:
        g.graph_validate()
    assert_graph_error(info.value, CycleWithoutExitError)
    cycle = shown_cycle(str(info.value))
    assert is_rotation(cycle, ["a", "b", "c"]), cycle
    assert set(info.value.nodes) == {"a", "b", "c"}
    assert set(info.value.edges) == {("a", "b"), ("b", "c"), ("c", "a")}
    assert "condition" in str(info.value)  # says how to fix it


def test_cycle_without_conditional_edge_is_shown_from_its_first_node() -> None:
    g = make([("a", "b"), ("b", "c"), ("c", "a")], start="a")
    with pytest.raises(CycleWithoutExitError, match=re.escape("`a -> b -> c -> a`")):
        g.graph_validate()


def test_inner_cycle_without_exit_inside_a_loop_with_exit() -> None:
    # a -> b -> c -> a has the conditional c -> a, but b <-> c has no condition at all.
    g = make(
        [("a", "b"), ("b", "c"), ("c", "b"), ("c", "a", "again"), ("c", "d", "done")], start="a"
    )
    with pytest.raises(CycleWithoutExitError) as info:
        g.graph_validate()
    assert shown_cycle(str(info.value)) == ["b", "c", "b"]
    assert set(info.value.nodes) == {"b", "c"}


def test_self_loop_without_condition() -> None:
    g = make([("a", "b"), ("b", "b"), ("b", "c", "done")])
    with pytest.raises(CycleWithoutExitError) as info:
        g.graph_validate()
    assert "`b -> b`" in str(info.value)
    assert info.value.nodes == ("b",)
    assert info.value.edges == (("b", "b"),)


def test_self_loop_with_condition_is_fine() -> None:
    make([("a", "b"), ("b", "b", "again"), ("b", "c", "done")]).graph_validate()


def test_cycle_with_conditional_edge_is_fine() -> None:
    make([("a", "b"), ("b", "c"), ("c", "b", "again"), ("c", "d", "done")]).graph_validate()


def test_conflicting_activation_conditions_in_one_group() -> None:
    g = DiGraph(
        nodes={
            "a": DiGraphNode(
                name="a",
                edges=[
                    DiGraphEdge(target="b"),
                    DiGraphEdge(target="c"),
                ],
            ),
            "b": DiGraphNode(
                name="b",
                edges=[DiGraphEdge(target="d", activation_group="g", activation_condition="all")],
            ),
            "c": DiGraphNode(
                name="c",
                edges=[DiGraphEdge(target="d", activation_group="g", activation_condition="any")],
            ),
            "d": DiGraphNode(name="d"),
        }
    )
    with pytest.raises(ActivationConflictError) as info:
        g.graph_validate()
    assert_graph_error(info.value, ActivationConflictError)
    text = str(info.value)
    for part in ("`g`", "`d`", "`b -> d`", "`c -> d`", "`all`", "`any`"):
        assert part in text, part
    assert info.value.nodes == ("d",)
    assert set(info.value.edges) == {("b", "d"), ("c", "d")}


def test_conflict_with_node_default_activation_in_default_group() -> None:
    # d's activation is "any"; one edge of its default group insists on "all".
    g = make([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    g.nodes["d"].activation = "any"
    g.nodes["b"].edges[0].activation_condition = "all"
    with pytest.raises(ActivationConflictError) as info:
        g.graph_validate()
    assert "`b -> d`" in str(info.value) and "`c -> d`" in str(info.value)


def test_same_explicit_condition_in_different_groups_is_fine() -> None:
    g = make([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    g.nodes["b"].edges[0].activation_group = "g1"
    g.nodes["b"].edges[0].activation_condition = "all"
    g.nodes["c"].edges[0].activation_group = "g2"
    g.nodes["c"].edges[0].activation_condition = "any"
    g.graph_validate()


def test_builder_build_raises_the_same_errors() -> None:
    builder = DiGraphBuilder()
    for n in ("a", "b", "c"):
        builder.add_node(Fake(n))
    builder.add_edge("a", "b").add_edge("b", "c").add_edge("c", "b")
    with pytest.raises(CycleWithoutExitError) as info:
        builder.build()
    assert shown_cycle(str(info.value)) == ["b", "c", "b"]


def test_validate_graph_returns_analysis() -> None:
    analysis = validate_graph(make([("a", "b"), ("b", "b", "again")]))
    assert analysis.names == ["a", "b"]
    assert analysis.has_cycles is True
    assert analysis.edge_groups == ["b", "b:loop"]


# --- team rules ---------------------------------------------------------------------------


def test_duplicate_participants() -> None:
    g = make([("A", "B")])
    with pytest.raises(DuplicateNodeError) as info:
        GraphFlow([Fake("A"), Fake("B"), Fake("A")], g)
    assert_graph_error(info.value, DuplicateNodeError)
    assert "`A`" in str(info.value)
    assert info.value.nodes == ("A",)


def test_no_participants() -> None:
    with pytest.raises(ValueError, match="participant"):
        GraphFlow([], make([("A", "B")]))


def test_participant_graph_mismatch() -> None:
    g = make([("A", "B")])
    with pytest.raises(ParticipantMismatchError) as info:
        GraphFlow([Fake("A"), Fake("C")], g)
    assert_graph_error(info.value, ParticipantMismatchError)
    text = str(info.value)
    assert "`B`" in text and "`C`" in text
    assert "`A`" not in text
    assert set(info.value.nodes) == {"B", "C"}


def test_participant_missing_from_graph_only() -> None:
    with pytest.raises(ParticipantMismatchError, match="`B`"):
        GraphFlow([Fake("A")], make([("A", "B")]))
    with pytest.raises(ParticipantMismatchError, match="`extra`"):
        GraphFlow([Fake("A"), Fake("B"), Fake("extra")], make([("A", "B")]))


def test_team_validates_the_graph() -> None:
    with pytest.raises(CycleWithoutExitError):
        flow(make([("A", "B"), ("B", "A")], start="A"), max_turns=3)
    with pytest.raises(UnknownNodeError, match="`Z`"):
        flow(make([("A", "B")], start="Z"), names=["A", "B"])


def test_cyclic_team_needs_termination_or_max_turns() -> None:
    g = make([("A", "B"), ("B", "C"), ("C", "B", "again"), ("C", "D", "done")])
    with pytest.raises(UnboundedLoopError) as info:
        flow(g)
    assert_graph_error(info.value, UnboundedLoopError)
    text = str(info.value)
    assert "termination_condition" in text and "max_turns" in text
    assert set(info.value.nodes) == {"B", "C"}
    assert "`GraphFlow`" in text
    # Either bound is enough.
    flow(g, max_turns=10)
    flow(g, termination_condition=MaxMessageTermination(10))


def test_self_loop_team_needs_termination_or_max_turns() -> None:
    g = make([("A", "B"), ("B", "B", "again"), ("B", "C", "done")])
    with pytest.raises(UnboundedLoopError) as info:
        flow(g, name="selfie")
    assert "`selfie`" in str(info.value)
    assert info.value.nodes == ("B",)


def test_acyclic_team_needs_no_bound() -> None:
    flow(make([("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")]))


@pytest.mark.parametrize("bad", [0, -1])
def test_max_turns_must_be_at_least_one(bad: int) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        flow(make([("A", "B")]), max_turns=bad)


def test_runtime_is_refused() -> None:
    with pytest.raises(ValueError, match="runtime"):
        flow(make([("A", "B")]), runtime=object())


# --- scale --------------------------------------------------------------------------------

N = 100_000


@pytest.fixture(scope="module")
def chain_nodes() -> Iterator[list[DiGraphNode]]:
    """The 100k-node chain's first N - 1 nodes, built once for the three tests below
    (about 2 s of CPU each time): a `DiGraph` holds the nodes it is given and keeps its
    validation cache on itself, so each test's graph is new while the nodes are shared.
    Each test adds its own last node; none changes these (checked at the end)."""
    names = [f"n{i}" for i in range(N)]
    nodes = [
        DiGraphNode(name=name, edges=[DiGraphEdge(target=names[i + 1])])
        for i, name in enumerate(names[:-1])
    ]
    yield nodes
    assert all(
        [(e.target, e.condition) for e in node.edges] == [(f"n{i + 1}", None)]
        for i, node in enumerate(nodes)
    )


def chain(nodes: list[DiGraphNode], *, back: str | None = None) -> DiGraph:
    """A chain of ``nodes`` and one node more; ``back``: an edge from it to the first."""
    last = DiGraphNode(name=f"n{len(nodes)}")
    if back is not None:
        last.edges.append(DiGraphEdge(target=nodes[0].name, condition=back or None))
    return DiGraph(
        nodes={**{node.name: node for node in nodes}, last.name: last},
        default_start_node=nodes[0].name if back is not None else None,
    )


@pytest.mark.timeout(600)  # a hang guard: 16x the time seen with four workers on two cores
def test_validate_100k_node_chain(chain_nodes: list[DiGraphNode]) -> None:
    g = chain(chain_nodes)
    g.graph_validate()
    analysis = validate_graph(g)
    assert len(analysis.names) == N
    assert analysis.has_cycles is False
    assert g.get_start_nodes() == {"n0"}
    assert g.get_leaf_nodes() == {f"n{N - 1}"}


@pytest.mark.timeout(600)  # a hang guard: 16x the time seen with four workers on two cores
def test_validate_100k_node_loop_with_exit(chain_nodes: list[DiGraphNode]) -> None:
    g = chain(chain_nodes, back="again")
    g.graph_validate()
    assert g.has_cycles_with_exit() is True
    remaining = g.get_remaining_map()
    assert remaining["n0"] == {"n0:loop": 1}
    assert remaining[f"n{N - 1}"] == {f"n{N - 1}:loop": 1}


@pytest.mark.timeout(600)  # a hang guard: 16x the time seen with four workers on two cores
def test_validate_100k_node_loop_without_exit_names_the_cycle(
    chain_nodes: list[DiGraphNode],
) -> None:
    g = chain(chain_nodes, back="")  # "" -> condition None: an unconditional back edge
    with pytest.raises(CycleWithoutExitError) as info:
        g.graph_validate()
    assert len(info.value.nodes) == N
    assert f"n{N - 1} -> n0" in str(info.value)


# The team's own validation on a graph 25x Python's recursion limit; the 100k-node
# validations are the three tests above (docs/choices.md, "The test command's speed").
N_TEAM = 25_000


@pytest.mark.timeout(600)  # a hang guard: 16x the time seen with four workers on two cores
def test_validate_25k_node_team() -> None:
    # Function nodes make a 25k-node team cheap to build; the team validates the graph.
    builder = DiGraphBuilder()
    previous: str | None = None
    for i in range(N_TEAM):
        name = f"f{i}"
        builder.add_node(lambda messages: None, name=name)
        if previous is not None:
            builder.add_edge(previous, name)
        previous = name
    team = GraphFlow(builder.get_participants(), builder.build())
    assert len(team.graph.nodes) == N_TEAM
