"""What a drawing shows, independent of the output format.

``build_scene`` reads a graph (or a team, with its nested teams) and an optional run
overlay and decides everything the DOT and Mermaid writers then only spell out: node
kinds and entry points, edge labels (condition, activation group, steps), back edges,
what is highlighted or greyed, and the title. Order is always the graph's insertion
order, so the output is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .._english import a
from ..errors import InvalidTypeError
from ..graph import DiGraph, DiGraphEdge, NodeKind, describe_condition, pattern_of
from ..graph.internal import GraphAnalysis, analyse
from ._path import RunPath, TraceArg, participants_by_name, resolve_path
from ._style import EdgeStatus, NodeStatus, format_steps

__all__ = ["Scene", "SceneEdge", "SceneNode", "SupportsGraph", "build_scene", "graph_of"]


@runtime_checkable
class SupportsGraph(Protocol):
    """Anything drawable besides a [`DiGraph`][flowlib.graph.DiGraph]: an object with a ``graph`` (a
    team)."""

    @property
    def graph(self) -> DiGraph:
        """The compiled graph IR."""
        ...


@dataclass
class SceneNode:
    """A node as drawn.

    Attributes:
        name: The node's name.
        path: Names from the outermost graph down to this node (nested teams first).
        index: Positions along ``path`` (for formats that need plain identifiers).
        inner: The nested team's own scene when the node is a team with a known graph.
    """

    name: str
    path: tuple[str, ...]
    index: tuple[int, ...]
    kind: NodeKind
    entry: bool
    status: NodeStatus
    steps: list[str]
    inner: Scene | None = None

    @property
    def label_lines(self) -> list[str]:
        """The node's name, and its step numbers when it ran."""
        return [self.name, format_steps(self.steps)] if self.steps else [self.name]


@dataclass
class SceneEdge:
    """An edge as drawn: its text, its role in loops and joins, and whether it fired."""

    source: SceneNode
    target: SceneNode
    condition: str
    annotation: str
    steps: list[str]
    conditional: bool
    back: bool
    status: EdgeStatus
    mapped: str = ""  # a map edge: ``map <function>`` (and its concurrency bound)

    @property
    def label_lines(self) -> list[str]:
        """Map, condition, activation group annotation and step numbers, each when
        present."""
        lines = [self.mapped] if self.mapped else []
        if self.condition:
            lines.append(self.condition)
        if self.annotation:
            lines.append(f"[{self.annotation}]")
        if self.steps:
            lines.append(format_steps(self.steps))
        return lines


@dataclass
class Scene:
    """One graph as drawn (the whole drawing, or a nested team's cluster)."""

    title: list[str]
    nodes: list[SceneNode]
    edges: list[SceneEdge]

    @property
    def entries(self) -> list[SceneNode]:
        """The entry nodes, in insertion order."""
        return [node for node in self.nodes if node.entry]

    @property
    def exit(self) -> SceneNode:
        """Where edges leave this graph's cluster: its first leaf, else its last node."""
        sources = {edge.source.name for edge in self.edges}
        return next((n for n in self.nodes if n.name not in sources), self.nodes[-1])


def graph_of(obj: DiGraph | SupportsGraph) -> DiGraph:
    """The graph of ``obj`` (the graph itself or a team's ``graph``).

    Raises:
        TypeError: If ``obj`` is neither.
    """
    if isinstance(obj, DiGraph):
        return obj
    graph = getattr(obj, "graph", None)
    if isinstance(graph, DiGraph):
        return graph
    raise InvalidTypeError(
        f"Cannot draw {a(type(obj).__name__)}: pass a DiGraph or a team (anything with a "
        "`graph` attribute holding a DiGraph), e.g. `to_dot(builder.build())`."
    )


# --- words --------------------------------------------------------------------------------


def _termination_name(condition: Any) -> str:
    parts = getattr(condition, "conditions", None)
    name = type(condition).__name__
    if isinstance(parts, (list, tuple)) and name in {
        "AndTerminationCondition",
        "OrTerminationCondition",
    }:
        joiner = " & " if name.startswith("And") else " | "
        return "(" + joiner.join(_termination_name(part) for part in parts) + ")"
    return name


def _bound(obj: Any) -> str:
    if isinstance(obj, DiGraph):
        return "the team's termination condition / max_turns"
    parts: list[str] = []
    condition = getattr(obj, "termination_condition", None)
    if condition is not None:
        parts.append(_termination_name(condition).removeprefix("(").removesuffix(")"))
    max_turns = getattr(obj, "max_turns", None)
    if max_turns is not None:
        parts.append(f"max_turns={max_turns}")
    return " or ".join(parts) if parts else "nothing (no termination condition, no max_turns)"


def _pattern_lines(obj: Any, graph: DiGraph, analysis: GraphAnalysis) -> list[str]:
    pattern = graph.pattern
    if pattern is not None:
        traits = pattern_of(pattern)
        if traits is None:
            return [f"{pattern} pattern"]
        return traits.title_lines(_bound(obj))
    if analysis.has_cycles and not isinstance(obj, DiGraph):
        return [f"loops exit on conditional edges, bounded by {_bound(obj)}"]
    return []


def _heading(obj: Any) -> str | None:
    if isinstance(obj, DiGraph):
        return None
    kind = type(obj).__name__
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or name == kind:
        return kind
    return f"{name} ({kind})"


def _run_line(path: RunPath) -> str:
    if path.step_count == 0:
        return "not run yet"
    steps = f"{path.step_count} step" + ("" if path.step_count == 1 else "s")
    line = f"last run: {steps}"
    if path.stop_reason:
        line += f", stopped: {path.stop_reason}"
    if path.approximate:
        line += " (path rebuilt from the messages)"
    return line


def _condition_text(edge: DiGraphEdge) -> str:
    if edge.label is not None:
        return edge.label
    if edge.condition_function is not None:
        return describe_condition(edge.condition_function)
    return describe_condition(edge.condition)


def _map_text(edge: DiGraphEdge) -> str:
    if not edge.is_map:
        return ""
    name = edge.map or getattr(edge.map_function, "__name__", "map")
    bound = f", {edge.max_concurrency} at once" if edge.max_concurrency else ""
    return f"map {name}: one per item{bound}"


# --- structure ----------------------------------------------------------------------------


def _back_edges(analysis: GraphAnalysis) -> set[int]:
    """Edges that close a cycle in a depth-first walk from the entry nodes.

    Iterative, in insertion order, so the same graph always yields the same edges.
    """
    count = len(analysis.names)
    out: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    for index, (source, target) in enumerate(zip(analysis.sources, analysis.targets, strict=True)):
        out[source].append((index, target))
    state = [0] * count  # 0 unseen, 1 on the current walk, 2 done
    back: set[int] = set()
    for root in [*analysis.entry, *range(count)]:
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, 0)]
        while stack:
            node, position = stack[-1]
            if position == len(out[node]):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, position + 1)
            index, target = out[node][position]
            if state[target] == 1:
                back.add(index)
            elif state[target] == 0:
                state[target] = 1
                stack.append((target, 0))
    return back


def _annotations(graph: DiGraph, analysis: GraphAnalysis) -> list[str]:
    """The activation group text of every edge (empty when there is nothing to say)."""
    size: dict[tuple[int, str], int] = {}
    groups: dict[int, set[str]] = {}
    for target, group in zip(analysis.targets, analysis.edge_groups, strict=True):
        size[(target, group)] = size.get((target, group), 0) + 1
        groups.setdefault(target, set()).add(group)
    texts: list[str] = []
    for edge, target, group, activation in zip(
        analysis.edges,
        analysis.targets,
        analysis.edge_groups,
        analysis.edge_activation,
        strict=True,
    ):
        explicit = bool(edge.activation_group)
        loop = not explicit and group == f"{analysis.names[target]}:loop"
        name = edge.activation_group if explicit else ("loop" if loop else "")
        if size[(target, group)] > 1:
            texts.append(f"{activation}: {name}" if name else activation)
        elif explicit or (loop and len(groups[target]) > 1):
            texts.append(name)
        else:
            texts.append("")
    return texts


def _build(
    obj: Any,
    graph: DiGraph,
    path: RunPath | None,
    *,
    forced: NodeStatus | None,
    outer_path: tuple[str, ...],
    outer_index: tuple[int, ...],
    heading: str | None,
) -> Scene:
    analysis = analyse(graph)
    participants = participants_by_name(obj)
    entry = set(analysis.entry)
    traced = path is not None or forced is not None
    nodes: list[SceneNode] = []
    for position, (name, node) in enumerate(graph.nodes.items()):
        numbers = path.node_steps.get(name, []) if path is not None else []
        steps = [path.label(n) for n in numbers] if path is not None else []
        status: NodeStatus
        if forced is not None:
            status = forced
        elif path is None:
            status = "plain"
        else:
            status = "visited" if steps else "unvisited"
        scene_node = SceneNode(
            name=name,
            path=(*outer_path, name),
            index=(*outer_index, position),
            kind=node.kind,
            entry=position in entry,
            status=status,
            steps=steps,
        )
        member = participants.get(name)
        member_graph = getattr(member, "graph", None)
        if node.kind == "team" and isinstance(member_graph, DiGraph):
            inner_path: RunPath | None = None
            if path is not None and path.nested and status == "visited":
                inner_path = resolve_path(member, member_graph, True)
                if inner_path is not None:  # its own last run: the node's last turn
                    inner_path.prefix = steps[-1] + "."
            scene_node.inner = _build(
                member,
                member_graph,
                inner_path,
                forced="unvisited" if status == "unvisited" else None,
                outer_path=scene_node.path,
                outer_index=scene_node.index,
                heading=_heading(member) or name,
            )
        nodes.append(scene_node)

    back = _back_edges(analysis)
    annotations = _annotations(graph, analysis)
    edges: list[SceneEdge] = []
    for index, (source, edge) in enumerate(graph.iter_edges()):
        steps = [path.label(n) for n in path.edge_steps[index]] if path is not None else []
        edge_status: EdgeStatus = ("fired" if steps else "unfired") if traced else "plain"
        edges.append(
            SceneEdge(
                source=nodes[analysis.index[source]],
                target=nodes[analysis.index[edge.target]],
                condition=_condition_text(edge),
                annotation=annotations[index],
                steps=steps,
                conditional=edge.is_conditional,
                back=index in back,
                status=edge_status,
                mapped=_map_text(edge),
            )
        )

    title = [heading] if heading else []
    title.extend(_pattern_lines(obj, graph, analysis))
    if path is not None:
        title.append(_run_line(path))
    return Scene(title=title, nodes=nodes, edges=edges)


def build_scene(
    obj: DiGraph | SupportsGraph, *, trace: TraceArg = None, title: str | None = None
) -> Scene:
    """Decide what the drawing of ``obj`` shows.

    Args:
        obj: A graph or a team.
        trace: The run overlay (see [`flowlib.render.to_dot`][flowlib.render.to_dot]).
        title: Replaces the heading (the team's name and class).

    Raises:
        TypeError: If ``obj`` or ``trace`` cannot be drawn.
        ValueError: If the trace belongs to another graph.
        GraphError: If the graph cannot be indexed (e.g. an edge to an unknown node).
    """
    graph = graph_of(obj)
    path = resolve_path(obj, graph, trace)
    return _build(
        obj,
        graph,
        path,
        forced=None,
        outer_path=(),
        outer_index=(),
        heading=title if title is not None else _heading(obj),
    )
