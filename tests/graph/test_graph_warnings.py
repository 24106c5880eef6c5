"""graph_warnings: cheap static checks for flows that validate but are likely wrong."""

from __future__ import annotations

from collections.abc import Sequence

from flowlib.graph import (
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    HandoffTo,
    Not,
    Regex,
    graph_warnings,
    validate_graph,
)


def _graph(
    edges: Sequence[tuple[str, str, object]], *, activation: str = "all", start: str | None = None
) -> DiGraph:
    nodes: dict[str, DiGraphNode] = {}
    for source, target, _ in edges:
        for name in (source, target):
            nodes.setdefault(name, DiGraphNode(name=name, activation=activation))  # type: ignore[arg-type]
    for source, target, condition in edges:
        nodes[source].edges.append(DiGraphEdge(target=target, condition=condition))  # type: ignore[arg-type]
    graph = DiGraph(nodes=nodes, default_start_node=start)
    validate_graph(graph)
    return graph


def _kinds(graph: DiGraph) -> list[tuple[str, tuple[str, ...]]]:
    return [(w.kind, w.nodes) for w in graph_warnings(graph)]


def test_all_join_fed_by_exclusive_branches_of_one_source() -> None:
    graph = _graph([("A", "B", "left"), ("A", "C", "right"), ("B", "D", None), ("C", "D", None)])
    assert _kinds(graph) == [("exclusive_join", ("D", "A")), ("no_fallback", ("A",))]
    join = graph_warnings(graph)[0]
    assert join.edges == (("B", "D"), ("C", "D"))
    assert "`D` waits for all of `B -> D`, `C -> D`" in join.message
    assert "`A`" in join.message


def test_branches_through_longer_chains_are_traced_back() -> None:
    graph = _graph(
        [
            ("A", "B", "left"),
            ("A", "C", Not(condition="left")),
            ("B", "B2", None),
            ("B2", "D", None),
            ("C", "D", None),
        ]
    )
    assert _kinds(graph) == [("exclusive_join", ("D", "A"))]


def test_an_any_join_and_a_plain_fan_out_are_fine() -> None:
    any_join = _graph(
        [("A", "B", "left"), ("A", "C", Not(condition="left")), ("B", "D", None), ("C", "D", None)],
        activation="any",
    )
    fan_out = _graph([("A", "B", None), ("A", "C", None), ("B", "D", None), ("C", "D", None)])
    same_condition = _graph(
        [("A", "B", "go"), ("A", "C", "go"), ("B", "D", None), ("C", "D", None), ("A", "E", None)]
    )
    assert _kinds(any_join) == _kinds(fan_out) == _kinds(same_condition) == []


def test_a_conditional_node_with_a_fallback_is_fine() -> None:
    unconditional = _graph([("A", "B", "yes"), ("A", "C", None)])
    negated = _graph(
        [("A", "B", Regex(pattern="ok")), ("A", "C", Not(condition=Regex(pattern="ok")))]
    )
    substring_and_not = _graph([("A", "B", "yes"), ("A", "C", Not(condition="yes"))])
    assert _kinds(unconditional) == _kinds(negated) == _kinds(substring_and_not) == []


def test_a_conditional_node_without_fallback() -> None:
    def approved(message: object) -> bool:
        return True

    graph = _graph([("A", "B", "yes"), ("A", "C", approved)])
    (warning,) = graph_warnings(graph)
    assert warning.kind == "no_fallback" and warning.nodes == ("A",)
    assert warning.edges == (("A", "B"), ("A", "C"))


def test_swarm_and_router_edges_are_not_judged() -> None:
    swarm = DiGraph(
        nodes={
            "a": DiGraphNode(
                name="a", edges=[DiGraphEdge(target="b", condition=HandoffTo(target="b"))]
            ),
            "b": DiGraphNode(
                name="b", edges=[DiGraphEdge(target="a", condition=HandoffTo(target="a"))]
            ),
        },
        default_start_node="a",
        pattern="swarm",
    )
    assert graph_warnings(swarm) == []
