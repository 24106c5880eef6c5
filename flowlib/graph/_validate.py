"""Build-time validation of a `DiGraph`, with networkx doing the graph analysis.

One pass, linear in nodes + edges, no Python recursion and no process-wide side effects.
`analyse()` indexes the graph once (names, edge targets, the effective activation
group of every edge) and hands the structure to networkx on a ``networkx.DiGraph`` view
of the IR (node numbers, insertion order): a topological sort recognises a DAG, strongly
connected components find the loops, a breadth-first search from the start nodes finds
what is reachable, and ``find_cycle`` shows one loop without a conditional edge.
`validate_graph()` runs every rule on that analysis and returns it, so the
executor's plan is compiled from the same pass.

Rules, each a [`GraphError`][flowlib.errors.GraphError] subclass whose message names the
offending nodes or edges and says how to fix it:

- the graph has nodes; each node's key equals its ``name``;
- every edge target and the entry point are nodes;
- there is a start node, and every node is reachable from the start nodes;
- every cycle has a conditional edge (equivalently, the unconditional edges form a DAG);
  one offending cycle is shown as ``a -> b -> a``;
- the edges of one activation group agree on ``all``/``any``;
- a map edge is the only edge into its target, is not a self-loop and does not lead to
  a router (docs/graph-semantics.md, "Map edges");
- a team whose graph loops has a termination condition or ``max_turns``
  (`check_loop_bounded()`, applied when ``has_termination`` is given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ..errors import (
    ActivationConflictError,
    CycleWithoutExitError,
    EmptyGraphError,
    GraphError,
    MapEdgeConflictError,
    NoStartNodeError,
    UnboundedLoopError,
    UnknownNodeError,
    UnreachableNodeError,
)
from ._conditions import Contains, EdgeCondition, Not, as_condition, check_condition
from ._ir import EdgeIR, GraphIR, NodeIR
from ._patterns import pattern_of

__all__ = [
    "EdgeIR",
    "GraphAnalysis",
    "GraphIR",
    "GraphWarning",
    "NodeIR",
    "analyse",
    "check_cycles_have_exits",
    "check_loop_bounded",
    "graph_warnings",
    "index_view",
    "validate_graph",
]

_SHOWN = 10  # how many names an error message lists before "and N more"


@dataclass
class GraphAnalysis:
    """What one pass over a graph learns; the executor compiles its plan from it."""

    names: list[str]
    index: dict[str, int]
    sources: list[int] = field(default_factory=list)  # per edge, in iter_edges order
    targets: list[int] = field(default_factory=list)
    edges: list[EdgeIR] = field(default_factory=list)
    scc: list[int] = field(default_factory=list)  # node -> component id
    cyclic: set[int] = field(default_factory=set)  # ids of components that loop
    edge_groups: list[str] = field(default_factory=list)
    edge_activation: list[str] = field(default_factory=list)
    entry: list[int] = field(default_factory=list)

    @property
    def has_cycles(self) -> bool:
        """Whether any cycle exists (self-loops included)."""
        return bool(self.cyclic)

    def in_loop(self, edge_index: int) -> bool:
        """Whether the edge runs inside a loop (source and target in one cyclic component)."""
        source, target = self.sources[edge_index], self.targets[edge_index]
        return self.scc[source] == self.scc[target] and self.scc[target] in self.cyclic

    def looping_nodes(self) -> list[str]:
        """The names of the nodes that lie on some cycle, in insertion order."""
        return [
            name for name, comp in zip(self.names, self.scc, strict=True) if comp in self.cyclic
        ]


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(f"`{name}`" for name in items[:_SHOWN])
    extra = len(items) - _SHOWN
    return shown + (f" and {extra} more" if extra > 0 else "")


_NO_ATTRIBUTES: dict[str, object] = {}


class _IndexView(nx.DiGraph):  # type: ignore[type-arg]
    """A ``networkx.DiGraph`` whose nodes and edges carry no attributes.

    They all share one empty attribute dict instead of one each, so a 100,000-node view
    costs two small dicts per node (successors, predecessors). The view is only read.
    """

    def node_attr_dict_factory(self) -> dict[str, object]:
        return _NO_ATTRIBUTES

    def edge_attr_dict_factory(self) -> dict[str, object]:
        return _NO_ATTRIBUTES


def index_view(analysis: GraphAnalysis) -> nx.DiGraph[int]:
    """A ``networkx.DiGraph`` view of the analysed IR on node numbers.

    Node ``i`` is ``analysis.names[i]``; parallel edges are merged (the analysis keeps
    them all) and carry no data. Nodes are added in insertion order, so traversals are
    deterministic. Treat it as read-only.
    """
    view: nx.DiGraph[int] = _IndexView()
    view.add_nodes_from(range(len(analysis.names)))
    view.add_edges_from(zip(analysis.sources, analysis.targets, strict=True))
    return view


def analyse(graph: GraphIR) -> GraphAnalysis:
    """Index ``graph``: edges by number, components, default activation groups (the
    analysis of its latest validation, if the graph has not changed since).

    Raises:
        EmptyGraphError, GraphError, UnknownNodeError: When the graph cannot be indexed.
    """
    cache: dict[tuple[Any, ...], GraphAnalysis] | None = getattr(graph, "validation_cache", None)
    if cache:
        fingerprint = _fingerprint(graph)
        for key, analysis in cache.items():
            if key[2] == fingerprint:
                return analysis
    return _analyse(graph)[0]


def _analyse(graph: GraphIR) -> tuple[GraphAnalysis, nx.DiGraph[int]]:
    if not graph.nodes:
        raise EmptyGraphError(
            "The graph has no nodes; add at least one with `DiGraphBuilder.add_node(agent)`."
        )
    names = list(graph.nodes)
    index = {name: position for position, name in enumerate(names)}
    for key, node in graph.nodes.items():
        if node.name != key:
            raise GraphError(
                f"Node stored under `{key}` is named `{node.name}`; the key of "
                "`DiGraph.nodes` must equal the node's name.",
                nodes=[key, node.name],
            )
    analysis = GraphAnalysis(names=names, index=index)
    sources, targets, edges = analysis.sources, analysis.targets, analysis.edges
    for source, edge in graph.iter_edges():
        target = index.get(edge.target)
        if target is None:
            raise UnknownNodeError(
                f"Edge `{source} -> {edge.target}` points at `{edge.target}`, which is not a "
                f"node of the graph; add it with `add_node(...)` or fix the edge. "
                f"Nodes: {_names(names)}.",
                nodes=[edge.target],
                edges=[(source, edge.target)],
            )
        if edge.condition is not None or edge.condition_function is not None:
            check_condition(
                edge.condition_function or edge.condition, source=source, target=edge.target
            )
        sources.append(index[source])
        targets.append(target)
        edges.append(edge)

    view = index_view(analysis)
    if graph.default_start_node is not None:
        start = index.get(graph.default_start_node)
        if start is None:
            raise UnknownNodeError(
                f"The entry point `{graph.default_start_node}` is not a node of the graph; "
                f"call `set_entry_point()` with one of {_names(names)}.",
                nodes=[graph.default_start_node],
            )
        analysis.entry = [start]
    else:
        analysis.entry = [node for node, degree in view.in_degree() if degree == 0]

    analysis.scc = _components(view, analysis.cyclic)
    _assign_groups(graph, analysis)
    return analysis, view


def _components(view: nx.DiGraph[int], cyclic: set[int]) -> list[int]:
    """Strongly connected components; fills ``cyclic`` with the ids of looping ones.

    A DAG (the common case) is recognised by networkx's linear topological sort and
    needs no more. Trivial components keep the node's own number as id; looping
    components (two or more nodes, or a self-loop) get ids from the node count up.
    """
    count = view.number_of_nodes()
    component = list(range(count))
    if nx.is_directed_acyclic_graph(view):
        return component
    number = count
    for members in nx.strongly_connected_components(view):
        if len(members) > 1:
            for member in members:
                component[member] = number
            cyclic.add(number)
            number += 1
    for node, _ in nx.selfloop_edges(view):
        cyclic.add(component[node])
    return component


def _assign_groups(graph: GraphIR, analysis: GraphAnalysis) -> None:
    """Give every edge its effective activation group and condition.

    Explicit groups are kept. An edge without one joins the target's default group:
    ``"<target>"`` for edges from outside the target's loop, ``"<target>:loop"`` for edges
    from inside it (loop-back edges, self-loops), so a loop re-enters a node without
    waiting for the edge that first entered it.
    """
    names, scc, cyclic = analysis.names, analysis.scc, analysis.cyclic
    node_activation = [node.activation for node in graph.nodes.values()]
    groups, activations = analysis.edge_groups, analysis.edge_activation
    for edge, source, target in zip(
        analysis.edges, analysis.sources, analysis.targets, strict=True
    ):
        if edge.activation_group:
            groups.append(edge.activation_group)
        elif cyclic and scc[source] == scc[target] and scc[target] in cyclic:
            groups.append(f"{names[target]}:loop")
        else:
            groups.append(names[target])
        activations.append(edge.activation_condition or node_activation[target])


def check_cycles_have_exits(graph: GraphIR, analysis: GraphAnalysis) -> None:
    """Raise if some cycle has no conditional edge; show one such cycle.

    A cycle without a conditional edge exists exactly when the unconditional edges inside
    looping components do not form a DAG. The cycle shown runs through the
    first-inserted node that lies on such a cycle and is shown from it.

    Raises:
        CycleWithoutExitError: Naming the cycle, e.g. ``a -> b -> a``.
    """
    del graph  # the analysis holds everything; kept for the documented signature
    if not analysis.cyclic:
        return
    scc, cyclic = analysis.scc, analysis.cyclic
    plain: nx.DiGraph[int] = nx.DiGraph()
    plain.add_edges_from(
        (source, target)
        for source, target, edge in zip(
            analysis.sources, analysis.targets, analysis.edges, strict=True
        )
        if not edge.is_conditional and scc[source] == scc[target] and scc[source] in cyclic
    )
    if nx.is_directed_acyclic_graph(plain):
        return
    looping = {node for node, _ in nx.selfloop_edges(plain)}
    for members in nx.strongly_connected_components(plain):
        if len(members) > 1:
            looping |= members
    first = min(looping)
    if plain.has_edge(first, first):
        cycle = [first]
    else:
        inside = plain.subgraph(
            next(c for c in nx.strongly_connected_components(plain) if first in c)
        )
        after = min(inside.successors(first))
        cycle = [first, *nx.shortest_path(inside, after, first)[:-1]]
    _raise_cycle([analysis.names[n] for n in cycle])


def _raise_cycle(cycle_names: list[str]) -> None:
    if len(cycle_names) <= 2 * _SHOWN:
        shown = " -> ".join([*cycle_names, cycle_names[0]])
    else:  # a long cycle: its start and end, and how many nodes lie between
        skipped = len(cycle_names) - 2 * _SHOWN
        head, tail = cycle_names[:_SHOWN], cycle_names[-_SHOWN:]
        shown = " -> ".join([*head, f"... {skipped} more ...", *tail, cycle_names[0]])
    count = len(cycle_names)
    edges = [(cycle_names[i], cycle_names[(i + 1) % count]) for i in range(count)]
    raise CycleWithoutExitError(
        f"The cycle `{shown}` has no conditional edge, so once entered it never ends. Give "
        "one of its edges a condition (e.g. `add_edge(..., condition='APPROVE')`) and an "
        "exit edge out of the loop, or use a team bounded by a termination condition.",
        nodes=cycle_names,
        edges=edges,
    )


def check_loop_bounded(
    analysis: GraphAnalysis,
    *,
    has_termination: bool,
    max_turns: int | None,
    team: str = "the team",
) -> None:
    """Raise if the graph loops but the team has neither a termination condition nor
    ``max_turns``: a loop whose exit never matches would run forever.

    Args:
        analysis: The graph's analysis (from `validate_graph()` or `analyse()`).
        has_termination: Whether the team has a termination condition.
        max_turns: The team's turn limit, if any.
        team: The team's name, for the message.

    Raises:
        UnboundedLoopError: Naming the looping nodes and the two ways to bound them.
    """
    if not analysis.has_cycles or has_termination or max_turns is not None:
        return
    looping = analysis.looping_nodes()
    raise UnboundedLoopError(
        f"The graph of `{team}` loops through {_names(looping)} but the team has neither a "
        "termination_condition nor max_turns, so a loop whose exit never matches would run "
        "forever. Pass e.g. `termination_condition=MaxMessageTermination(20)` or "
        "`max_turns=50`.",
        nodes=looping,
    )


def validate_graph(
    graph: GraphIR,
    *,
    allow_unconditional_cycles: bool | None = None,
    allow_unreachable: bool | None = None,
    has_termination: bool | None = None,
    max_turns: int | None = None,
    team: str = "the team",
) -> GraphAnalysis:
    """Validate ``graph`` and return its analysis.

    Both ``allow_*`` arguments default to what the graph's pattern allows (its
    [`GraphPattern`][flowlib.graph.GraphPattern] traits): a round-robin ring may loop
    without a conditional edge, and a swarm may start at any participant.

    Args:
        graph: The graph to check.
        allow_unconditional_cycles: Accept cycles without a conditional edge (teams whose
            loop is bounded by their termination condition, such as round-robin).
        allow_unreachable: Accept nodes unreachable from the start nodes (teams that can
            start a run at any node, such as a swarm resumed by a handoff task).
        has_termination: For a team's graph: whether the team has a termination
            condition. When given, a looping graph must be bounded by it or by
            ``max_turns`` (`check_loop_bounded()`), except a pattern whose loops have no
            exit (a round-robin ring), which may be built without a bound and is checked
            when it runs.
        max_turns: The team's turn limit (with ``has_termination``).
        team: The team's name, for the unbounded-loop message.

    Raises:
        GraphError: A subclass naming the offending nodes/edges and the fix.
    """
    traits = pattern_of(graph.pattern)
    if allow_unconditional_cycles is None:
        allow_unconditional_cycles = traits is not None and traits.loops_without_exit
    if allow_unreachable is None:
        allow_unreachable = traits is not None and traits.start_anywhere
    # A ring that may loop without an exit is checked when it runs, not for a bound.
    bounded = has_termination is not None and not (traits is not None and traits.loops_without_exit)
    # A graph validated before, unchanged since, under the same rules: its analysis is
    # kept on it (`DiGraph` has a slot for it), so building a team from a graph the
    # builder has just validated does not run networkx again.
    cache: dict[tuple[Any, ...], GraphAnalysis] | None = getattr(graph, "validation_cache", None)
    key: tuple[Any, ...] | None = None
    if cache is not None:
        key = (allow_unconditional_cycles, allow_unreachable, _fingerprint(graph))
        analysis = cache.get(key)
        if analysis is not None:
            if bounded:
                check_loop_bounded(
                    analysis, has_termination=bool(has_termination), max_turns=max_turns, team=team
                )
            return analysis
    analysis = _validated(graph, allow_unconditional_cycles, allow_unreachable)
    if cache is not None and key is not None:
        cache.clear()  # only the latest: a graph changed since is validated again
        cache[key] = analysis
    if bounded:
        check_loop_bounded(
            analysis, has_termination=bool(has_termination), max_turns=max_turns, team=team
        )
    return analysis


def _fingerprint(graph: GraphIR) -> tuple[Any, ...]:
    """Everything validation reads of ``graph``, by value or identity (conditions and
    map functions by identity): equal fingerprints, equal analyses. Linear, and cheap
    next to the analysis (two comprehensions, no call per node)."""
    nodes = [
        (key, node.name, node.activation, node.kind, len(node.edges))
        for key, node in graph.nodes.items()
    ]
    edges = [
        (
            id(edge),
            edge.target,
            edge.condition if isinstance(edge.condition, str) else id(edge.condition),
            id(edge.condition_function),
            edge.activation_group,
            edge.activation_condition,
            getattr(edge, "map", None),
            id(getattr(edge, "map_function", None)),
            getattr(edge, "max_concurrency", None),
        )
        for node in graph.nodes.values()
        for edge in node.edges
    ]
    return (graph.default_start_node, graph.pattern, tuple(nodes), tuple(edges))


def _validated(
    graph: GraphIR, allow_unconditional_cycles: bool, allow_unreachable: bool
) -> GraphAnalysis:
    """The analysis of ``graph`` after every check but the loop bound's."""
    analysis, view = _analyse(graph)
    names = analysis.names
    if not analysis.entry:
        raise NoStartNodeError(
            "No node can start: every node has an incoming edge. Mark the first node with "
            f"`set_entry_point(...)` (one of {_names(names)}).",
            nodes=names[:_SHOWN],
        )

    if not allow_unreachable:
        reached = [False] * len(names)
        for layer in nx.bfs_layers(view, analysis.entry):
            for node in layer:
                reached[node] = True
        unreachable = [names[i] for i, ok in enumerate(reached) if not ok]
        if unreachable:
            starts = _names([names[i] for i in analysis.entry])
            raise UnreachableNodeError(
                f"Nodes {_names(unreachable)} cannot be reached from the start node(s) "
                f"{starts}; add an edge into them or remove them.",
                nodes=unreachable,
            )

    if not allow_unconditional_cycles:
        check_cycles_have_exits(graph, analysis)
    _check_activation_conflicts(analysis)
    _check_map_edges(graph, analysis)
    return analysis


def _check_map_edges(graph: GraphIR, analysis: GraphAnalysis) -> None:
    """A map edge's target is reached by that edge only (so its instances and the join
    after them are unambiguous); no map self-loop; no map into a router."""
    edges = analysis.edges
    maps = [i for i, edge in enumerate(edges) if getattr(edge, "is_map", False)]
    if not maps:
        return
    names = analysis.names
    incoming: dict[int, list[int]] = {}
    for position, target in enumerate(analysis.targets):
        incoming.setdefault(target, []).append(position)
    for position in maps:
        source, target = analysis.sources[position], analysis.targets[position]
        shown = f"`{names[source]} -> {names[target]}`"
        if source == target:
            raise MapEdgeConflictError(
                f"The map edge {shown} is a self-loop; a map edge starts instances of "
                "another node. Map into a separate node.",
                nodes=[names[source]],
                edges=[(names[source], names[target])],
            )
        if graph.nodes[names[target]].kind == "router":
            raise MapEdgeConflictError(
                f"The map edge {shown} leads to a router; instances of a router would "
                "route the same run several times. Map into an agent or function node.",
                nodes=[names[target]],
                edges=[(names[source], names[target])],
            )
        others = [e for e in incoming[target] if e != position]
        if others:
            listed = ", ".join(
                f"`{names[analysis.sources[e]]} -> {names[target]}`" for e in others[:_SHOWN]
            )
            raise MapEdgeConflictError(
                f"Node `{names[target]}` is the target of the map edge {shown} and also of "
                f"{listed}; a map target runs one instance per item of its map edge, so "
                "another edge into it would make its join ambiguous. Lead the other edge "
                "into the node after the map (the reduce), or map into a node of its own.",
                nodes=[names[target]],
                edges=[(names[analysis.sources[e]], names[target]) for e in [position, *others]],
            )


def _check_activation_conflicts(analysis: GraphAnalysis) -> None:
    names = analysis.names
    # "<target number> <group>" -> the first edge's activation. String keys, not tuples:
    # strings are not tracked by the garbage collector, so a big graph triggers no full
    # collection here.
    first: dict[str, str] = {}
    for position, activation in enumerate(analysis.edge_activation):
        key = f"{analysis.targets[position]} {analysis.edge_groups[position]}"
        if first.setdefault(key, activation) != activation:
            break
    else:
        return
    target, group = analysis.targets[position], analysis.edge_groups[position]
    by_condition: dict[str, list[int]] = {}
    for position, edge_target in enumerate(analysis.targets):
        if edge_target == target and analysis.edge_groups[position] == group:
            by_condition.setdefault(analysis.edge_activation[position], []).append(position)
    parts = []
    conflict_edges: list[tuple[str, str]] = []
    for condition, positions in sorted(by_condition.items()):
        pairs = [(names[analysis.sources[p]], names[target]) for p in positions]
        conflict_edges.extend(pairs)
        parts.append(f"`{condition}` ({', '.join(f'`{s} -> {t}`' for s, t in pairs)})")
    raise ActivationConflictError(
        f"Activation group `{group}` of node `{names[target]}` mixes "
        f"{' and '.join(parts)}; give every edge of one group the same "
        "activation_condition, or put them in different activation groups.",
        nodes=[names[target]],
        edges=conflict_edges,
    )


# --- static warnings ------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphWarning:
    """A likely mistake that validation alone cannot prove (see
    [`graph_warnings`][flowlib.graph.graph_warnings]).

    Attributes:
        kind: ``"exclusive_join"`` or ``"no_fallback"``.
        nodes: The nodes it is about.
        edges: The ``(source, target)`` edges it is about.
        message: What may go wrong and how to fix it.
    """

    kind: str
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    message: str

    def __str__(self) -> str:
        return self.message


def _key_of(condition: object) -> object:
    """A comparable key for a condition (a substring and ``Contains`` of it are equal)."""
    if isinstance(condition, str):
        return ("contains", condition)
    if isinstance(condition, Contains):
        return ("contains", condition.text)
    if isinstance(condition, EdgeCondition):
        return condition.model_dump_json()
    return ("callable", id(condition)) if condition is not None else None


def _condition_key(edge: EdgeIR) -> object:
    return _key_of(edge.condition_function or edge.condition)


def _complement(edge: EdgeIR) -> object:
    """The key of the condition this edge's condition negates, if it is a ``Not``."""
    condition = edge.condition
    return _key_of(as_condition(condition.condition)) if isinstance(condition, Not) else None


def _branch_edge(analysis: GraphAnalysis, edge_index: int, incoming: list[list[int]]) -> int:
    """Walk back from an edge through unconditional single-entry nodes to the edge whose
    condition decides whether it can fire (the edge itself if it is conditional)."""
    seen: set[int] = set()
    current = edge_index
    while not analysis.edges[current].is_conditional:
        source = analysis.sources[current]
        if len(incoming[source]) != 1 or source in seen:
            return -1
        seen.add(source)
        current = incoming[source][0]
    return current


def graph_warnings(graph: GraphIR, analysis: GraphAnalysis | None = None) -> list[GraphWarning]:
    """Cheap checks for flows that validate but are likely wrong; no run needed.

    - ``exclusive_join``: an ``all`` join whose incoming edges depend on different
      conditions of one source (directly, or through nodes reached only that way); when
      one reply matches one of them but not the other, the join waits forever.
    - ``no_fallback``: a node whose outgoing edges are all conditional, with neither an
      unconditional edge nor a condition and its ``Not``; a reply that matches none ends
      the run there. Routers and swarms decide their edges themselves and are skipped.

    [`flowlib.testing.explore`][flowlib.testing.explore] confirms (or refutes) both by
    running the flow with stand-ins.

    Args:
        graph: A graph that passed [`validate_graph`][flowlib.graph.validate_graph].
        analysis: Its analysis, if already computed.

    Returns:
        The warnings, in graph order.
    """
    if analysis is None:
        analysis = analyse(graph)
    names = analysis.names
    found: list[GraphWarning] = []
    incoming: list[list[int]] = [[] for _ in names]
    groups: dict[tuple[int, str], list[int]] = {}
    for position, target in enumerate(analysis.targets):
        incoming[target].append(position)
        groups.setdefault((target, analysis.edge_groups[position]), []).append(position)
    for (target, group), members in groups.items():
        if len(members) < 2 or analysis.edge_activation[members[0]] != "all":
            continue
        by_source: dict[int, dict[object, int]] = {}
        for member in members:
            branch = _branch_edge(analysis, member, incoming)
            if branch >= 0:
                key = _condition_key(analysis.edges[branch])
                by_source.setdefault(analysis.sources[branch], {}).setdefault(key, member)
        for source, keyed in by_source.items():
            if len(keyed) < 2:
                continue
            pairs = [(names[analysis.sources[m]], names[target]) for m in keyed.values()]
            shown = ", ".join(f"`{s} -> {t}`" for s, t in pairs)
            found.append(
                GraphWarning(
                    "exclusive_join",
                    (names[target], names[source]),
                    tuple(pairs),
                    f"`{names[target]}` waits for all of {shown} (activation group "
                    f"`{group}`), which depend on different conditions of `{names[source]}`; "
                    f"a reply that matches only some leaves `{names[target]}` waiting "
                    "forever. Use activation_condition='any' if one branch is enough.",
                )
            )
    kinds = [node.kind for node in graph.nodes.values()]
    traits = pattern_of(graph.pattern)
    if not (traits is not None and traits.ends_on_no_match):
        out: list[list[int]] = [[] for _ in names]
        for position, source in enumerate(analysis.sources):
            out[source].append(position)
        for node, edges in enumerate(out):
            if not edges or kinds[node] == "router":
                continue
            if any(not analysis.edges[e].is_conditional for e in edges):
                continue
            keys = {_condition_key(analysis.edges[e]) for e in edges}
            if any(_complement(analysis.edges[e]) in keys for e in edges):
                continue
            pairs = [(names[node], names[analysis.targets[e]]) for e in edges]
            shown = ", ".join(f"`{s} -> {t}`" for s, t in pairs)
            found.append(
                GraphWarning(
                    "no_fallback",
                    (names[node],),
                    tuple(pairs),
                    f"every edge out of `{names[node]}` is conditional ({shown}) and none is "
                    "a fallback; a reply that matches none ends the run at "
                    f"`{names[node]}`. Add an edge without a condition, or the `Not` of "
                    "another edge's condition.",
                )
            )
    return found
