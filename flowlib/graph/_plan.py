"""Compile a validated [`DiGraph`][flowlib.graph.DiGraph] into the executor's index-based plan.

The IR is convenient to build, dump and draw; the plan is what the executor walks on its
hot path: nodes and groups are integers, out-edges are lists, and each edge's condition
is reduced to "always", "substring" or "predicate" so a completion checks its edges with
no dictionary lookups and computes the message text at most once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._fire import ALWAYS, PREDICATE, SUBSTRING, EdgeRule, edge_rule
from ._model import DiGraph, MapFunction
from ._validate import GraphAnalysis

__all__ = ["ALWAYS", "PREDICATE", "SUBSTRING", "ExecutionPlan", "PlanEdge", "PlanGroup"]


@dataclass(slots=True)
class PlanEdge(EdgeRule):
    """One edge of the plan: its rule, its activation group and, for a map edge, its map
    function and concurrency bound."""

    group: int = -1
    mapper: MapFunction | None = None
    max_concurrency: int | None = None


@dataclass(slots=True)
class PlanGroup:
    """One activation group: the incoming edges of ``target`` that share a name."""

    index: int
    target: int
    name: str
    any: bool
    edges: list[int]


class ExecutionPlan:
    """The executor's view of a graph. Built once per team."""

    def __init__(self, graph: DiGraph, analysis: GraphAnalysis) -> None:
        self.graph = graph
        self.analysis = analysis
        self.names = analysis.names
        self.index = analysis.index
        self.entry = list(analysis.entry)
        self.kinds = [graph.nodes[name].kind for name in self.names]
        self.groups: list[PlanGroup] = []
        self.edges: list[PlanEdge] = []
        self.out_edges: list[list[PlanEdge]] = [[] for _ in self.names]
        # Per node, the map edge that leads to it (validation: its only incoming edge).
        self.map_in: list[PlanEdge | None] = [None] * len(self.names)
        group_ids: dict[tuple[int, str], int] = {}
        for position, edge in enumerate(analysis.edges):
            source, target = analysis.sources[position], analysis.targets[position]
            key = (target, analysis.edge_groups[position])
            group_id = group_ids.get(key)
            if group_id is None:
                group_id = len(self.groups)
                group_ids[key] = group_id
                self.groups.append(
                    PlanGroup(
                        index=group_id,
                        target=target,
                        name=key[1],
                        any=analysis.edge_activation[position] == "any",
                        edges=[],
                    )
                )
            self.groups[group_id].edges.append(position)
            rule = edge_rule(edge, index=position, source=source, target=target)
            plan_edge = PlanEdge(
                rule.index, source, target, rule.test, rule.text, rule.predicate, group_id
            )
            mapper = getattr(edge, "map_function", None)
            if mapper is not None or getattr(edge, "map", None) is not None:
                plan_edge.mapper = mapper if mapper is not None else _unloaded(edge)
                plan_edge.max_concurrency = getattr(edge, "max_concurrency", None)
                self.map_in[target] = plan_edge
            self.edges.append(plan_edge)
            self.out_edges[source].append(plan_edge)
        self.group_ids = group_ids

    def describe_edge(self, edge: PlanEdge) -> str:
        """``source -> target`` for messages."""
        return f"{self.names[edge.source]} -> {self.names[edge.target]}"


def _unloaded(edge: object) -> MapFunction:
    """A map edge built from data without its function: it fails when it would map."""
    name = getattr(edge, "map", None)

    def missing(message: object) -> list[str]:
        raise LookupError(
            f"the map function `{name}` was not given back when the graph was loaded; pass "
            f"`maps={{'{name}': func}}`"
        )

    return missing
