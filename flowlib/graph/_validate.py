"""Build-time validation of a [`DiGraph`][flowlib.graph.DiGraph].

One pass, linear in nodes + edges, no Python recursion. ``analyse`` indexes the graph
once (names, edge targets, strongly connected components, the effective activation group
of every edge); [`validate_graph`][flowlib.graph.validate_graph] runs every rule on that analysis
and returns it, so the executor's plan is compiled from the same pass.

Rules, each a [`GraphError`][flowlib.errors.GraphError] subclass whose message names the
offending nodes or edges and says how to fix it:

- the graph has nodes; each node's key equals its ``name``;
- every edge target and the entry point are nodes;
- there is a start node, and every node is reachable from the start nodes;
- every cycle has a conditional edge (equivalently, the unconditional edges form a DAG);
  one offending cycle is shown as ``a -> b -> a``;
- the edges of one activation group agree on ``all``/``any``.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import (
    ActivationConflictError,
    CycleWithoutExitError,
    EmptyGraphError,
    GraphError,
    NoStartNodeError,
    UnknownNodeError,
    UnreachableNodeError,
)
from ._model import DiGraph, DiGraphEdge

__all__ = ["GraphAnalysis", "analyse", "check_cycles_have_exits", "validate_graph"]

_SHOWN = 10  # how many names an error message lists before "and N more"


@dataclass
class GraphAnalysis:
    """What one pass over a graph learns; the executor compiles its plan from it."""

    names: list[str]
    index: dict[str, int]
    sources: list[int] = field(default_factory=list)  # per edge, in iter_edges order
    targets: list[int] = field(default_factory=list)
    edges: list[DiGraphEdge] = field(default_factory=list)
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


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while indexing a graph.

    Indexing allocates a few containers per node; on a large graph each allocation burst
    would trigger collections that walk every live object (the graph's own pydantic
    models included), turning a linear pass into a much slower one. Nothing here creates
    reference cycles, so pausing is safe; the previous state is restored.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(f"`{name}`" for name in items[:_SHOWN])
    extra = len(items) - _SHOWN
    return shown + (f" and {extra} more" if extra > 0 else "")


def analyse(graph: DiGraph) -> GraphAnalysis:
    """Index ``graph``: edges by number, components, default activation groups.

    Raises:
        EmptyGraphError, GraphError, UnknownNodeError: When the graph cannot be indexed.
    """
    with _no_gc():
        return _analyse(graph)


def _analyse(graph: DiGraph) -> GraphAnalysis:
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
        sources.append(index[source])
        targets.append(target)
        edges.append(edge)

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
        has_parent = [False] * len(names)
        for target in targets:
            has_parent[target] = True
        analysis.entry = [i for i, parented in enumerate(has_parent) if not parented]

    analysis.scc = _components(len(names), sources, targets, analysis.cyclic)
    _assign_groups(graph, analysis)
    return analysis


def _components(count: int, sources: list[int], targets: list[int], cyclic: set[int]) -> list[int]:
    """Strongly connected components; fills ``cyclic`` with the ids of looping ones.

    A DAG (the common case) is recognised by a linear topological sort and needs no more.
    Otherwise the nodes that cannot lie on a cycle are peeled off from both ends (no
    unvisited predecessor, or no remaining successor), and the components of what is left
    are found with an iterative Tarjan walk. Trivial components keep the node's own
    number as id; looping components get ids from ``count`` up.
    """
    successors: list[list[int]] = [[] for _ in range(count)]
    indegree = [0] * count
    for source, target in zip(sources, targets, strict=True):
        successors[source].append(target)
        indegree[target] += 1
    queue = deque(i for i in range(count) if indegree[i] == 0)
    peeled = [False] * count
    while queue:
        node = queue.popleft()
        peeled[node] = True
        for nxt in successors[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                queue.append(nxt)
    component = list(range(count))
    if all(peeled):
        return component

    # Peel from the other end: a node with no successor left cannot be on a cycle.
    outdegree = [0] * count
    predecessors: list[list[int]] = [[] for _ in range(count)]
    for source, target in zip(sources, targets, strict=True):
        if not peeled[source] and not peeled[target]:
            outdegree[source] += 1
            predecessors[target].append(source)
    queue = deque(i for i in range(count) if not peeled[i] and outdegree[i] == 0)
    while queue:
        node = queue.popleft()
        peeled[node] = True
        for previous in predecessors[node]:
            outdegree[previous] -= 1
            if outdegree[previous] == 0:
                queue.append(previous)
    core = [i for i in range(count) if not peeled[i]]
    for number, members in enumerate(_tarjan(core, successors, peeled), start=count):
        if len(members) > 1:
            for member in members:
                component[member] = number
            cyclic.add(number)
    for source, target in zip(sources, targets, strict=True):
        if source == target:
            cyclic.add(component[source])
    return component


def _tarjan(nodes: list[int], successors: list[list[int]], skip: list[bool]) -> list[list[int]]:
    """Tarjan's strongly connected components over ``nodes``, without recursion.

    Successors marked in ``skip`` are ignored.
    """
    count = len(successors)
    order = [-1] * count  # discovery number, -1 while unvisited
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    found: list[list[int]] = []
    counter = 0
    for root in nodes:
        if order[root] >= 0:
            continue
        order[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, 0)]
        while work:
            node, position = work[-1]
            following = successors[node]
            if position < len(following):
                work[-1] = (node, position + 1)
                nxt = following[position]
                if skip[nxt]:
                    continue
                if order[nxt] < 0:
                    order[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack[nxt] = True
                    work.append((nxt, 0))
                elif on_stack[nxt] and order[nxt] < low[node]:
                    low[node] = order[nxt]
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[node] < low[parent]:
                    low[parent] = low[node]
            if low[node] == order[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    members.append(member)
                    if member == node:
                        break
                found.append(members)
    return found


def _assign_groups(graph: DiGraph, analysis: GraphAnalysis) -> None:
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


def check_cycles_have_exits(graph: DiGraph, analysis: GraphAnalysis) -> None:
    """Raise if some cycle has no conditional edge; show one such cycle.

    Raises:
        CycleWithoutExitError: Naming the cycle, e.g. ``a -> b -> a``.
    """
    if not analysis.cyclic:
        return
    names = analysis.names
    # Unconditional edges inside looping components; a cycle without exit is a cycle of
    # these, and it exists exactly when they do not form a DAG.
    succ: dict[int, list[int]] = {}
    pred: dict[int, list[int]] = {}
    indegree: dict[int, int] = {}
    for position, edge in enumerate(analysis.edges):
        if edge.is_conditional:
            continue
        source, target = analysis.sources[position], analysis.targets[position]
        if analysis.scc[source] != analysis.scc[target] or analysis.scc[source] not in (
            analysis.cyclic
        ):
            continue
        succ.setdefault(source, []).append(target)
        pred.setdefault(target, []).append(source)
        indegree[target] = indegree.get(target, 0) + 1
        indegree.setdefault(source, 0)
    queue = deque(node for node, degree in indegree.items() if degree == 0)
    while queue:
        node = queue.popleft()
        for nxt in succ.get(node, ()):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                queue.append(nxt)
    stuck = {node for node, degree in indegree.items() if degree > 0}
    if not stuck:
        return
    # Every stuck node has a stuck predecessor: walk back until a node repeats.
    walk: list[int] = []
    position_of: dict[int, int] = {}
    node = min(stuck)
    while node not in position_of:
        position_of[node] = len(walk)
        walk.append(node)
        node = next(p for p in pred[node] if p in stuck)
    cycle = list(reversed(walk[position_of[node] :]))
    first = cycle.index(min(cycle))  # show it from its first-inserted node
    cycle = cycle[first:] + cycle[:first]
    cycle_names = [names[n] for n in cycle]
    if len(cycle_names) <= 2 * _SHOWN:
        shown = " -> ".join([*cycle_names, cycle_names[0]])
    else:  # a long cycle: its start and end, and how many nodes lie between
        skipped = len(cycle_names) - 2 * _SHOWN
        head, tail = cycle_names[:_SHOWN], cycle_names[-_SHOWN:]
        shown = " -> ".join([*head, f"... {skipped} more ...", *tail, cycle_names[0]])
    edges = [(cycle_names[i], cycle_names[(i + 1) % len(cycle)]) for i in range(len(cycle))]
    raise CycleWithoutExitError(
        f"The cycle `{shown}` has no conditional edge, so once entered it never ends. Give "
        "one of its edges a condition (e.g. `add_edge(..., condition='APPROVE')`) and an "
        "exit edge out of the loop, or use a team bounded by a termination condition.",
        nodes=cycle_names,
        edges=edges,
    )


def validate_graph(
    graph: DiGraph,
    *,
    allow_unconditional_cycles: bool | None = None,
    allow_unreachable: bool | None = None,
) -> GraphAnalysis:
    """Validate ``graph`` and return its analysis.

    Both ``allow_*`` arguments default to what the graph's ``pattern`` needs: a round-robin
    ring may loop without a conditional edge, and a swarm may start at any participant.

    Args:
        graph: The graph to check.
        allow_unconditional_cycles: Accept cycles without a conditional edge (teams whose
            loop is bounded by their termination condition, such as round-robin).
        allow_unreachable: Accept nodes unreachable from the start nodes (teams that can
            start a run at any node, such as a swarm resumed by a handoff task).

    Raises:
        GraphError: A subclass naming the offending nodes/edges and the fix.
    """
    if allow_unconditional_cycles is None:
        allow_unconditional_cycles = graph.pattern == "round_robin"
    if allow_unreachable is None:
        allow_unreachable = graph.pattern == "swarm"
    with _no_gc():
        return _validate(graph, allow_unconditional_cycles, allow_unreachable)


def _validate(
    graph: DiGraph, allow_unconditional_cycles: bool, allow_unreachable: bool
) -> GraphAnalysis:
    analysis = _analyse(graph)
    names = analysis.names
    if not analysis.entry:
        raise NoStartNodeError(
            "No node can start: every node has an incoming edge. Mark the first node with "
            f"`set_entry_point(...)` (one of {_names(names)}).",
            nodes=names[:_SHOWN],
        )

    successors: list[list[int]] = [[] for _ in names]
    for source, target in zip(analysis.sources, analysis.targets, strict=True):
        successors[source].append(target)
    reached = [False] * len(names)
    queue = deque(analysis.entry)
    for start in analysis.entry:
        reached[start] = True
    while queue:
        node = queue.popleft()
        for nxt in successors[node]:
            if not reached[nxt]:
                reached[nxt] = True
                queue.append(nxt)
    unreachable = [names[i] for i, ok in enumerate(reached) if not ok]
    if unreachable and not allow_unreachable:
        starts = _names([names[i] for i in analysis.entry])
        raise UnreachableNodeError(
            f"Nodes {_names(unreachable)} cannot be reached from the start node(s) {starts}; "
            "add an edge into them or remove them.",
            nodes=unreachable,
        )

    if not allow_unconditional_cycles:
        check_cycles_have_exits(graph, analysis)

    conditions: dict[tuple[int, str], dict[str, list[int]]] = {}
    for position, group in enumerate(analysis.edge_groups):
        key = (analysis.targets[position], group)
        by_condition = conditions.setdefault(key, {})
        by_condition.setdefault(analysis.edge_activation[position], []).append(position)
    for (target, group), by_condition in conditions.items():
        if len(by_condition) < 2:
            continue
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
    return analysis
