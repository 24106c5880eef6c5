"""Compile a validated [`DiGraph`][flowlib.graph.DiGraph] into the executor's index-based plan.

The IR is convenient to build, dump and draw; the plan is what the executor walks on its
hot path: nodes and groups are integers, out-edges are lists, and each edge's condition
is reduced to "always", "substring" or "predicate" so a completion checks its edges with
no dictionary lookups and computes the message text at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..messages import BaseChatMessage
from ._conditions import EdgeCondition
from ._model import DiGraph
from ._validate import GraphAnalysis

__all__ = ["ALWAYS", "PREDICATE", "SUBSTRING", "ExecutionPlan", "PlanEdge", "PlanGroup"]

ALWAYS, SUBSTRING, PREDICATE = 0, 1, 2


@dataclass(slots=True)
class PlanEdge:
    """One edge of the plan."""

    index: int
    source: int
    target: int
    group: int
    test: int  # ALWAYS, SUBSTRING or PREDICATE
    text: str
    predicate: Callable[[BaseChatMessage], bool] | None


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
            test, text, predicate = ALWAYS, "", None
            if edge.condition_function is not None:
                test, predicate = PREDICATE, edge.condition_function
            elif isinstance(edge.condition, str):
                test, text = SUBSTRING, edge.condition
            elif isinstance(edge.condition, EdgeCondition):
                test, predicate = PREDICATE, edge.condition.check
            plan_edge = PlanEdge(position, source, target, group_id, test, text, predicate)
            self.edges.append(plan_edge)
            self.out_edges[source].append(plan_edge)
        self.group_ids = group_ids

    def describe_edge(self, edge: PlanEdge) -> str:
        """``source -> target`` for messages."""
        return f"{self.names[edge.source]} -> {self.names[edge.target]}"
