"""The run overlay: which nodes ran and which edges fired, at which steps.

A drawing can be given a [`RunTrace`][flowlib.graph.RunTrace] (exact), ``True`` (the team's
own last ``trace``) or a [`TaskResult`][flowlib.base.TaskResult]. A ``TaskResult`` holds only
messages, so the path is rebuilt from them: every chat message from a node is one of its
turns (consecutive messages from inside a nested team are one turn of that team), and the
edges whose conditions match a turn's message fired. When the team's own trace took the
same steps, that exact trace is used instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base import TaskResult
from ..errors import InvalidTypeError, InvalidValueError
from ..graph import DiGraph, EdgeRule, RunTrace, edge_rules, fire_edges
from ..messages import BaseChatMessage

__all__ = ["RunPath", "TraceArg", "participants_by_name", "path_from_trace", "resolve_path"]

TraceArg = RunTrace | TaskResult | bool | None
"""What ``trace=`` accepts."""


@dataclass
class RunPath:
    """A run overlay in drawing terms; steps count from 1."""

    node_steps: dict[str, list[int]]
    edge_steps: list[list[int]]  # by edge index in ``graph.iter_edges()`` order
    step_count: int
    stop_reason: str | None
    approximate: bool = False
    nested: bool = False  # nested teams are overlaid with their own last ``trace``
    prefix: str = ""  # a nested team's steps read ``#<outer step>.<own step>``

    def label(self, step: int) -> str:
        """How step ``step`` is written (without the ``#``)."""
        return f"{self.prefix}{step}"


def _edge_ends(graph: DiGraph) -> list[tuple[str, str]]:
    return [(source, edge.target) for source, edge in graph.iter_edges()]


def path_from_trace(graph: DiGraph, trace: RunTrace) -> RunPath:
    """Turn a [`RunTrace`][flowlib.graph.RunTrace] of ``graph`` into an overlay.

    Raises:
        ValueError: If the trace was recorded on a graph with other nodes or edges.
    """
    if trace.names != list(graph.nodes) or trace.edge_ends != _edge_ends(graph):
        raise InvalidValueError(
            "The trace was recorded on a different graph (its nodes or edges differ from "
            "the drawing's); pass the trace of this team's own run, e.g. `trace=True`."
        )
    node_steps: dict[str, list[int]] = {name: [] for name in graph.nodes}
    for step, node in enumerate(trace.step_nodes, start=1):
        node_steps[trace.names[node]].append(step)
    edge_steps: list[list[int]] = [[] for _ in trace.edge_ends]
    for step, edge in trace.fired:
        edge_steps[edge].append(step + 1)
    return RunPath(node_steps, edge_steps, len(trace.step_nodes), trace.stop_reason)


def _members(team: Any) -> list[str]:
    """Every participant name inside ``team``, nested teams included (no recursion)."""
    names: list[str] = []
    stack = [team]
    while stack:
        current = stack.pop()
        for participant in getattr(current, "participants", None) or ():
            name = getattr(participant, "name", None)
            if isinstance(name, str):
                names.append(name)
            if isinstance(getattr(participant, "graph", None), DiGraph):
                stack.append(participant)
    return names


def participants_by_name(obj: Any) -> dict[str, Any]:
    """The participants of a team by name (empty for a bare graph)."""
    found: dict[str, Any] = {}
    for participant in getattr(obj, "participants", None) or ():
        name = getattr(participant, "name", None)
        if isinstance(name, str):
            found[name] = participant
    return found


def _rebuild(obj: Any, graph: DiGraph, result: TaskResult) -> RunPath:
    owner = {name: name for name in graph.nodes}
    participants = participants_by_name(obj)
    for name, graph_node in graph.nodes.items():
        if graph_node.kind == "team" and name in participants:
            for member in _members(participants[name]):
                owner.setdefault(member, name)
    turns: list[tuple[str, BaseChatMessage]] = []
    previous: str | None = None
    for message in result.messages:
        if not isinstance(message, BaseChatMessage):
            continue
        node = owner.get(message.source)
        if node is None:
            previous = None
            continue
        if node == previous and graph.nodes[node].kind == "team":
            turns[-1] = (node, message)  # a nested team's turn publishes many messages
        else:
            turns.append((node, message))
        previous = node

    own = getattr(obj, "trace", None)
    if isinstance(own, RunTrace) and own.steps == [node for node, _ in turns]:
        exact = path_from_trace(graph, own)
        exact.stop_reason = result.stop_reason
        return exact

    names = list(graph.nodes)
    index = {name: number for number, name in enumerate(names)}
    rules = edge_rules(graph)
    node_steps: dict[str, list[int]] = {name: [] for name in names}
    edge_steps: list[list[int]] = [[] for _ in graph.iter_edges()]
    for position, (node, message) in enumerate(turns):
        step = position + 1
        node_steps[node].append(step)
        following = turns[position + 1][0] if position + 1 < len(turns) else None
        out = rules[index[node]]
        # A router's choice is not in its message: the next turn's node is the one chosen.
        selected = {index[following]} if following is not None else set()
        fired = fire_edges(
            out,
            message,
            selected=selected if graph.nodes[node].kind == "router" else None,
            check=_never_raises,
        )
        for rule, ok in zip(out, fired, strict=True):
            if ok:
                edge_steps[rule.index].append(step)
    return RunPath(node_steps, edge_steps, len(turns), result.stop_reason, approximate=True)


def _never_raises(rule: EdgeRule, message: BaseChatMessage) -> bool:
    assert rule.predicate is not None
    try:
        return bool(rule.predicate(message))
    except Exception:  # a drawing never fails on a condition that raises
        return False


def resolve_path(obj: Any, graph: DiGraph, trace: TraceArg) -> RunPath | None:
    """The overlay for ``trace=`` (None when there is none to draw).

    Raises:
        TypeError: If ``trace`` has the wrong type, or is ``True`` for an object without
            its own ``trace``.
        ValueError: If the trace belongs to another graph.
    """
    if trace is None or trace is False:
        return None
    if trace is True:
        own = getattr(obj, "trace", None)
        if not isinstance(own, RunTrace):
            raise InvalidTypeError(
                "`trace=True` draws the team's own last run, but "
                f"{type(obj).__name__} has no `trace`; pass a team, or pass the RunTrace "
                "or TaskResult itself."
            )
        path = path_from_trace(graph, own)
        path.nested = True
        return path
    if isinstance(trace, RunTrace):
        return path_from_trace(graph, trace)
    if isinstance(trace, TaskResult):
        return _rebuild(obj, graph, trace)
    raise InvalidTypeError(
        f"`trace` must be a RunTrace, a TaskResult, True or None, not {type(trace).__name__}."
    )
