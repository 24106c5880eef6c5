"""Hypothesis strategies for graphs: valid specs of every shape, and invalid ones.

A strategy here generates a [`GraphSpec`][flowlib.testing.specs.GraphSpec]: plain, printable
data (node names, edges, each node's scripted replies) that builds the real thing on demand, so when
hypothesis
shrinks a failure it prints a graph you can read and paste into a test:

    from hypothesis import given
    from flowlib.testing import check_run, RunTimeline
    from flowlib.testing.strategies import GraphSpec, valid_graphs

    @given(valid_graphs())
    def test_my_property(spec: GraphSpec) -> None:
        team = spec.team()          # a GraphFlow of ScriptedAgents
        ...

Valid shapes: [`chains`][flowlib.testing.strategies.chains],
[`fan_outs`][flowlib.testing.strategies.fan_outs], [`joins`][flowlib.testing.strategies.joins],
[`loops_with_exit`][flowlib.testing.strategies.loops_with_exit],
[`dags`][flowlib.testing.strategies.dags],
[`dags_with_back_edges`][flowlib.testing.strategies.dags_with_back_edges], and
[`valid_graphs`][flowlib.testing.strategies.valid_graphs] for any of them. Every valid spec's agents
are scripted so that its run ends by itself: loops say their exit keyword after a few rounds, and
[`GraphSpec.run_bound`][flowlib.testing.specs.GraphSpec.run_bound] is a proven upper bound on
the number of turns (teams built by [`GraphSpec.team`][flowlib.testing.specs.GraphSpec.team]
use it as ``max_turns``).

[`invalid_graphs`][flowlib.testing.strategies.invalid_graphs] generates
[`InvalidGraphCase`][flowlib.testing.specs.InvalidGraphCase] values: a spec with one defect,
the [`GraphError`][flowlib.errors.GraphError] subclass it must raise, and the node names the error
message must show.

Keywords in replies and conditions are upper case or in angle brackets (``"REVISE"``,
``"<k3>"``) and node names are lower case, so a name never matches a condition by
accident. This module needs ``hypothesis`` (``pip install hypothesis``).
"""

from __future__ import annotations

import operator
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from itertools import pairwise

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - hypothesis is a dev dependency
    raise ImportError(
        "flowlib.testing.strategies needs hypothesis; install it with `pip install hypothesis` "
        "(or `pip install flowlib[dev]`)."
    ) from exc

from ..errors import (
    ActivationConflictError,
    ConditionSerializationError,
    CycleWithoutExitError,
    DuplicateNodeError,
    EmptyGraphError,
    GraphError,
    InvalidValueError,
    NoStartNodeError,
    ParticipantMismatchError,
    UnboundedLoopError,
    UnknownNodeError,
    UnreachableNodeError,
)
from ..graph import Contains, Regex
from . import specs
from .specs import DEFAULT_MAX_TURNS as DEFAULT_MAX_TURNS  # re-exported: see __all__
from .specs import (
    Activation,
    Condition,
    EdgeSpec,
    GraphSpec,
    InvalidGraphCase,
    MapGraphSpec,
    NodeSpec,
    TextCheck,
    cyclic_nodes,
    reachable,
    reply_text,
)

__all__ = [
    "chains",
    "conditions",
    "dags",
    "dags_with_back_edges",
    "fan_outs",
    "interleaved",
    "invalid_graphs",
    "joins",
    "loops_with_exit",
    "map_graphs",
    "node_names",
    "valid_graphs",
]
__all__ += specs.__all__  # the spec types are re-exported here

# --- building blocks --------------------------------------------------------------------


# One name: exactly the strings IDENTIFIER matches (``[a-z][a-z0-9_]{0,5}``), a first
# letter and up to five more characters. Drawn from the pieces rather than with
# ``st.from_regex(IDENTIFIER)``, which draws the same strings at about twice the cost
# (names are a large part of what a graph property test generates). Shrinks to ``"a"``.
_NAME = st.builds(
    operator.add,
    st.sampled_from(string.ascii_lowercase),
    st.text(alphabet=string.ascii_lowercase + string.digits + "_", max_size=5),
)


def node_names(min_size: int = 1, max_size: int = 6) -> st.SearchStrategy[list[str]]:
    """Unique lower-case identifiers usable as agent names, in random (not sorted) order."""
    return st.lists(_NAME, min_size=min_size, max_size=max_size, unique=True)


def conditions(keyword: str) -> st.SearchStrategy[Condition]:
    """Every condition form that fires exactly when ``keyword`` is in the reply: the
    string itself, ``Contains``, ``Regex`` and a callable
    ([`TextCheck`][flowlib.testing.specs.TextCheck])."""
    return st.sampled_from(
        [keyword, Contains(text=keyword), Regex(pattern=re.escape(keyword)), TextCheck(keyword)]
    )


def _fresh_name(draw: st.DrawFn, taken: Iterable[str]) -> str:
    used = set(taken)
    name: str = draw(_NAME.filter(lambda n: n not in used))
    return name


@st.composite
def chains(draw: st.DrawFn, *, min_nodes: int = 1, max_nodes: int = 6) -> GraphSpec:
    """A chain ``a -> b -> c``: unconditional edges, each node runs exactly once."""
    names = draw(node_names(min_nodes, max_nodes))
    edges = tuple(EdgeSpec(s, t) for s, t in pairwise(names))
    entry = names[0] if draw(st.booleans()) else None
    return GraphSpec(
        nodes=tuple(NodeSpec(name) for name in names),
        edges=edges,
        entry=entry,
        shape="chain",
        expected_steps=tuple(names),
    )


def _branches(
    draw: st.DrawFn, taken: list[str], max_branches: int, max_length: int, min_branches: int
) -> list[list[str]]:
    count = draw(st.integers(min_branches, max_branches))
    lengths = [draw(st.integers(1, max_length)) for _ in range(count)]
    names = draw(node_names(sum(lengths), sum(lengths)).filter(lambda ns: not set(ns) & set(taken)))
    branches, start = [], 0
    for length in lengths:
        branches.append(names[start : start + length])
        start += length
    return branches


@st.composite
def fan_outs(draw: st.DrawFn, *, max_branches: int = 4, max_branch_length: int = 2) -> GraphSpec:
    """A root fanning out to parallel branches (chains) that never meet again.

    Every node runs exactly once; the branch heads start in edge order.
    """
    root = draw(node_names(1, 1))
    branches = _branches(draw, root, max_branches, max_branch_length, 1)
    edges = [EdgeSpec(root[0], branch[0]) for branch in branches]
    for branch in branches:
        edges.extend(EdgeSpec(s, t) for s, t in pairwise(branch))
    names = root + [name for branch in branches for name in branch]
    return GraphSpec(
        nodes=tuple(NodeSpec(name) for name in names), edges=tuple(edges), shape="fan_out"
    )


@st.composite
def joins(draw: st.DrawFn, *, max_branches: int = 4, max_branch_length: int = 2) -> GraphSpec:
    """A fan-out whose branches meet again in a join node, optionally followed by a tail.

    The join is ``all`` (runs once, after every branch) or ``any`` (set on the node or on
    its edges; it may run once per branch that finishes while no sibling is in flight).
    """
    root = draw(node_names(1, 1))
    branches = _branches(draw, root, max_branches, max_branch_length, 2)
    taken = root + [name for branch in branches for name in branch]
    rest = draw(node_names(1, 2).filter(lambda ns: not set(ns) & set(taken)))
    join, tail = rest[0], rest[1:]
    kind: Activation = draw(st.sampled_from(["all", "any"]))
    on_edges = kind == "any" and draw(st.booleans())
    edges = [EdgeSpec(root[0], branch[0]) for branch in branches]
    for branch in branches:
        edges.extend(EdgeSpec(s, t) for s, t in pairwise(branch))
    for branch in branches:
        edges.append(EdgeSpec(branch[-1], join, activation_condition="any" if on_edges else None))
    edges.extend(EdgeSpec(s, t) for s, t in pairwise([join, *tail]))
    repeatable = kind == "any"
    nodes = [NodeSpec(name) for name in taken]
    nodes.append(
        NodeSpec(
            join,
            then="ok" if repeatable else None,
            activation="any" if kind == "any" and not on_edges else "all",
        )
    )
    nodes.extend(NodeSpec(name, then="ok" if repeatable else None) for name in tail)
    return GraphSpec(nodes=tuple(nodes), edges=tuple(edges), shape="join")


@st.composite
def loops_with_exit(draw: st.DrawFn, *, max_body: int = 3, max_rounds: int = 3) -> GraphSpec:
    """A loop whose checker sends ``REVISE`` back a few times, then ``APPROVE`` out.

    ``prefix -> body[0] -> ... -> body[-1]``; ``body[-1] -> body[j]`` on ``"REVISE"``
    (a self-loop when ``j`` is the last), ``body[-1] -> exit`` on ``"APPROVE"``. The
    checker replies ``REVISE`` ``rounds`` times, then ``APPROVE``; every node's script is
    exactly as long as its number of turns, so the order of a run is known in advance.
    """
    prefix_size = draw(st.integers(0, 2))
    body_size = draw(st.integers(1, max_body))
    exit_size = draw(st.integers(1, 2))
    names = draw(
        node_names(prefix_size + body_size + exit_size, prefix_size + body_size + exit_size)
    )
    prefix = names[:prefix_size]
    body = names[prefix_size : prefix_size + body_size]
    exits = names[prefix_size + body_size :]
    back = draw(st.integers(0, body_size - 1))
    rounds = draw(st.integers(0, max_rounds))
    checker = body[-1]
    path = prefix + body
    edges = [EdgeSpec(s, t) for s, t in pairwise(path)]
    back_edge = EdgeSpec(checker, body[back], condition=draw(conditions("REVISE")))
    exit_edge = EdgeSpec(checker, exits[0], condition=draw(conditions("APPROVE")))
    edges.extend([back_edge, exit_edge] if draw(st.booleans()) else [exit_edge, back_edge])
    edges.extend(EdgeSpec(s, t) for s, t in pairwise(exits))
    entry_needed = not prefix and back == 0
    entry = names[0] if entry_needed or draw(st.booleans()) else None
    repeated = set(body[back:])
    nodes = []
    for name in names:
        if name == checker:
            outputs = ("REVISE",) * rounds + ("APPROVE",)
        else:
            outputs = ("ok",) * (rounds + 1 if name in repeated else 1)
        nodes.append(NodeSpec(name, outputs=outputs))
    steps = prefix + body[:back] + body[back:] * (rounds + 1) + exits
    return GraphSpec(
        nodes=tuple(nodes),
        edges=tuple(edges),
        entry=entry,
        shape="loop",
        expected_steps=tuple(steps),
    )


def _replies(draw: st.DrawFn, keywords: Sequence[str], max_size: int = 3) -> tuple[str, ...]:
    choices = st.lists(st.sampled_from(keywords), unique=True) if keywords else st.just([])
    return tuple(
        reply_text(words) for words in draw(st.lists(choices, min_size=1, max_size=max_size))
    )


def _dag_edges(
    draw: st.DrawFn, names: Sequence[str], *, single_source: bool, conditional: bool
) -> list[EdgeSpec]:
    """Forward edges ``names[i] -> names[j]`` (i < j), maybe conditional, maybe grouped."""
    grouped = draw(st.booleans())
    group_kind: dict[tuple[str, str], Activation] = {}
    edges: list[EdgeSpec] = []
    for j in range(1, len(names)):
        parents = draw(
            st.lists(
                st.integers(0, j - 1),
                unique=True,
                min_size=1 if single_source else 0,
                max_size=min(j, 3),
            )
        )
        for i in parents:
            condition: Condition = None
            if conditional and draw(st.booleans()):
                condition = draw(conditions(f"<k{len(edges)}>"))
            group = draw(st.sampled_from(["", "J0", "J1"])) if grouped else ""
            kind: Activation | None = None
            if group:
                key = (names[j], group)
                if key not in group_kind:
                    group_kind[key] = draw(st.sampled_from(["all", "any"]))
                kind = group_kind[key]
            edges.append(EdgeSpec(names[i], names[j], condition, group or None, kind))
    return edges


def _keyword(condition: Condition) -> str | None:
    if isinstance(condition, str):
        return condition
    if isinstance(condition, Contains):
        return condition.text
    if isinstance(condition, TextCheck):
        return condition.text
    if isinstance(condition, Regex):
        return re.sub(r"\\(.)", r"\1", condition.pattern)
    return None


def _keywords_of(edges: Sequence[EdgeSpec], source: str) -> list[str]:
    found = []
    for edge in edges:
        keyword = _keyword(edge.condition) if edge.source == source else None
        if keyword is not None and keyword not in found:
            found.append(keyword)
    return found


@st.composite
def dags(
    draw: st.DrawFn,
    *,
    max_nodes: int = 6,
    single_source: bool | None = None,
    conditional: bool = True,
) -> GraphSpec:
    """A random DAG: forward edges only, maybe conditional, ``all``/``any`` nodes and
    explicit activation groups. Nodes without incoming edges are the start nodes.

    Args:
        max_nodes: At most this many nodes.
        single_source: Give every node but the first a parent (default: random).
        conditional: Allow conditional edges.
    """
    names = draw(node_names(1, max_nodes))
    if single_source is None:
        single_source = draw(st.booleans())
    edges = _dag_edges(draw, names, single_source=single_source, conditional=conditional)
    edges = list(draw(st.permutations(edges)))
    nodes = []
    for name in names:
        keywords = _keywords_of(edges, name)
        nodes.append(
            NodeSpec(
                name,
                outputs=_replies(draw, keywords),
                then=reply_text(draw(st.lists(st.sampled_from(keywords), unique=True)))
                if keywords
                else "ok",
                activation=draw(st.sampled_from(["all", "any"])),
            )
        )
    return GraphSpec(nodes=tuple(nodes), edges=tuple(edges), shape="dag")


@st.composite
def dags_with_back_edges(
    draw: st.DrawFn, *, max_nodes: int = 6, max_back_edges: int = 3
) -> GraphSpec:
    """A random single-source DAG plus conditional back edges (self-loops included).

    Each back edge ``u -> v`` fires on its own keyword, which only ``u``'s scripted
    replies contain (never its ``then`` reply), so every loop ends and
    [`GraphSpec.run_bound`][flowlib.testing.specs.GraphSpec.run_bound] bounds the run.
    """
    base = draw(dags(max_nodes=max_nodes, single_source=True))
    names = list(base.names)
    edges = list(base.edges)
    count = draw(st.integers(1, max_back_edges))
    back: list[EdgeSpec] = []
    for number in range(count):
        u = draw(st.integers(0, len(names) - 1))
        v = draw(st.integers(0, u))
        group = draw(st.sampled_from([None, None, "J0"]))
        kind: Activation | None = None
        if group is not None:
            # Agree with the group's existing edges, if any, to stay valid.
            same = [e for e in edges + back if e.target == names[v] and e.activation_group == group]
            kind = same[0].activation_condition if same else draw(st.sampled_from(["all", "any"]))
        condition = draw(conditions(f"<b{number}>"))
        back.append(EdgeSpec(names[u], names[v], condition, group, kind))
    edges = list(draw(st.permutations(edges + back)))
    nodes = []
    for node in base.nodes:
        forward = _keywords_of(base.edges, node.name)
        loops = _keywords_of(back, node.name)
        if loops:
            outputs = _replies(draw, forward + loops)
            node = replace(node, outputs=outputs)
        nodes.append(node)
    entry = names[0] if any(e.target == names[0] for e in back) or draw(st.booleans()) else None
    return GraphSpec(nodes=tuple(nodes), edges=tuple(edges), entry=entry, shape="dag_loops")


def valid_graphs(*, max_nodes: int = 6) -> st.SearchStrategy[GraphSpec]:
    """Any valid spec: chains, fan-outs, joins, loops with exits, DAGs, DAGs with loops."""
    branch = max(1, (max_nodes - 1) // 2)
    return st.one_of(
        chains(max_nodes=max_nodes),
        fan_outs(max_branches=max(1, min(4, max_nodes - 1)), max_branch_length=2),
        joins(max_branches=max(2, min(4, branch)), max_branch_length=2),
        loops_with_exit(max_body=max(1, min(3, max_nodes - 2))),
        dags(max_nodes=max_nodes),
        dags_with_back_edges(max_nodes=max_nodes),
    )


@st.composite
def interleaved(
    draw: st.DrawFn, specs: st.SearchStrategy[GraphSpec], *, max_yields: int = 3
) -> GraphSpec:
    """The specs of ``specs``, each node yielding to the event loop 0..``max_yields`` times
    per turn, so concurrent branches finish in varied (but reproducible) orders.

    Examples:
        >>> from hypothesis import given
        >>> @given(interleaved(valid_graphs()))
        ... def test_runs(spec): ...
    """
    spec = draw(specs)
    counts = st.lists(st.integers(0, max_yields), max_size=4).map(tuple)
    nodes = tuple(replace(node, yields=draw(counts)) for node in spec.nodes)
    return replace(spec, nodes=nodes)


# --- invalid graphs ---------------------------------------------------------------------


def _pairs(spec: GraphSpec) -> list[tuple[str, str]]:
    return [(edge.source, edge.target) for edge in spec.edges]


def _empty(max_nodes: int) -> st.SearchStrategy[InvalidGraphCase]:
    del max_nodes
    spec = GraphSpec(nodes=(), shape="empty")
    return st.just(InvalidGraphCase(spec, EmptyGraphError, (), in_ir=True))


@st.composite
def _duplicate_node(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(valid_graphs(max_nodes=max_nodes))
    original = draw(st.integers(0, len(base.nodes) - 1))
    position = draw(st.integers(original + 1, len(base.nodes)))
    name = base.nodes[original].name
    if draw(st.booleans()):  # two participants of one name, given to the team
        return InvalidGraphCase(base, DuplicateNodeError, (name,), "team", (name,))
    nodes = list(base.nodes)
    nodes.insert(position, NodeSpec(name))
    spec = GraphSpec(tuple(nodes), base.edges, base.entry, "duplicate_node")
    return InvalidGraphCase(spec, DuplicateNodeError, (name,))


@st.composite
def _unknown_node(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(valid_graphs(max_nodes=max_nodes))
    ghost = _fresh_name(draw, base.names)
    known = draw(st.sampled_from(base.names))
    where = draw(st.sampled_from(["target", "source", "entry"]))
    if where == "entry":
        spec = GraphSpec(base.nodes, base.edges, ghost, "unknown_entry")
        return InvalidGraphCase(spec, UnknownNodeError, (ghost,), in_ir=True)
    edge = EdgeSpec(known, ghost) if where == "target" else EdgeSpec(ghost, known)
    edges = list(base.edges)
    edges.insert(draw(st.integers(0, len(edges))), edge)
    spec = GraphSpec(base.nodes, tuple(edges), base.entry, f"unknown_{where}")
    return InvalidGraphCase(spec, UnknownNodeError, (ghost,), in_ir=where == "target")


@st.composite
def _no_start_node(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(st.one_of(chains(max_nodes=max_nodes), dags(max_nodes=max_nodes)))
    targets = {edge.target for edge in base.edges}
    starts = [name for name in base.names if name not in targets]
    edges = list(base.edges)
    for start in starts:
        source = draw(st.sampled_from(base.names))
        edges.append(EdgeSpec(source, start, draw(conditions("<never>"))))
    spec = GraphSpec(base.nodes, tuple(edges), None, "no_start_node")
    return InvalidGraphCase(spec, NoStartNodeError, base.names[:10], in_ir=True)


@st.composite
def _unreachable(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(valid_graphs(max_nodes=max_nodes))
    taken = list(base.names)
    size = draw(st.integers(1, 3))
    island = draw(node_names(size, size).filter(lambda ns: not set(ns) & set(taken)))
    edges = list(base.edges)
    if draw(st.booleans()):
        # A ring of new nodes (one edge conditional) that nothing leads into.
        for position, name in enumerate(island):
            nxt = island[(position + 1) % len(island)]
            condition = draw(conditions("<k_island>")) if position == len(island) - 1 else None
            edges.append(EdgeSpec(name, nxt, condition))
        entry = base.entry
    else:
        # A new parentless node while the entry point is set elsewhere.
        island = island[:1]
        entry = base.entry_nodes()[0]
    starts = base.entry_nodes() if base.entry is None else [base.entry]
    for name in island:
        if draw(st.booleans()):
            target = draw(st.sampled_from(base.names))
            if target not in starts:
                edges.append(EdgeSpec(name, target))
    pairs = [(e.source, e.target) for e in edges]
    reached = reachable([entry] if entry is not None else starts, pairs)
    nodes = base.nodes + tuple(NodeSpec(name) for name in island)
    unreachable = tuple(node.name for node in nodes if node.name not in reached)
    spec = GraphSpec(nodes, tuple(edges), entry, "unreachable")
    return InvalidGraphCase(spec, UnreachableNodeError, unreachable, in_ir=True)


@st.composite
def _cycle_without_exit(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(dags(max_nodes=max_nodes, single_source=True, conditional=False))
    names = base.names
    pairs = _pairs(base)
    v = draw(st.sampled_from(names))
    u = draw(st.sampled_from(sorted(reachable([v], pairs), key=names.index)))
    edges = list(base.edges)
    edges.insert(draw(st.integers(0, len(edges))), EdgeSpec(u, v))
    entry = names[0] if v == names[0] or base.entry is not None else None
    spec = GraphSpec(base.nodes, tuple(edges), entry, "cycle_without_exit")
    return InvalidGraphCase(spec, CycleWithoutExitError, tuple(dict.fromkeys((v, u))), in_ir=True)


@st.composite
def _activation_conflict(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(
        dags(max_nodes=max(2, max_nodes), single_source=True).filter(lambda s: len(s.nodes) > 1)
    )
    names = base.names
    k = draw(st.integers(1, len(names) - 1))
    target = names[k]
    first, second = draw(st.sampled_from(names[:k])), draw(st.sampled_from(names[:k]))
    nodes = list(base.nodes)
    kinds: tuple[Activation | None, Activation | None] = ("all", "any")
    if draw(st.booleans()):
        # One edge leaves the condition to the node's activation, the other contradicts it.
        node = nodes[k]
        other: Activation = "any" if node.activation == "all" else "all"
        kinds = (None, other)
    edges = list(base.edges)
    edges.append(EdgeSpec(first, target, None, "CLASH", kinds[0]))
    edges.append(EdgeSpec(second, target, None, "CLASH", kinds[1]))
    edges = list(draw(st.permutations(edges)))
    spec = GraphSpec(tuple(nodes), tuple(edges), base.entry, "activation_conflict")
    return InvalidGraphCase(spec, ActivationConflictError, (target,), in_ir=True)


@st.composite
def _participant_mismatch(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(valid_graphs(max_nodes=max_nodes))
    if len(base.nodes) > 1 and draw(st.booleans()):
        missing = draw(st.sampled_from(base.names))
        return InvalidGraphCase(
            base, ParticipantMismatchError, (missing,), "team", missing_participants=(missing,)
        )
    extra = _fresh_name(draw, base.names)
    return InvalidGraphCase(base, ParticipantMismatchError, (extra,), "team", (extra,))


@st.composite
def _unbounded_loop(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(
        st.one_of(loops_with_exit(), dags_with_back_edges(max_nodes=max_nodes)).filter(
            lambda spec: spec.is_cyclic
        )
    )
    looping = tuple(cyclic_nodes(base.names, _pairs(base)))
    return InvalidGraphCase(base, UnboundedLoopError, looping, "team", bounded=False)


@st.composite
def _callable_not_restored(draw: st.DrawFn, max_nodes: int) -> InvalidGraphCase:
    base = draw(valid_graphs(max_nodes=max_nodes).filter(lambda s: bool(s.edges)))
    position = draw(st.integers(0, len(base.edges) - 1))
    edges = list(base.edges)
    old = edges[position]
    keyword = _keyword(old.condition) or "<k_callable>"
    edges[position] = EdgeSpec(
        old.source, old.target, TextCheck(keyword), old.activation_group, old.activation_condition
    )
    spec = GraphSpec(base.nodes, tuple(edges), base.entry, "callable_not_restored")
    # Loading stops at the first callable in the graph's edge order: by source node, then
    # by the order the source's edges were added.
    first = next(
        edge
        for name in spec.names
        for edge in spec.edges
        if edge.source == name and isinstance(edge.condition, TextCheck)
    )
    return InvalidGraphCase(spec, ConditionSerializationError, (first.source, first.target), "load")


_INVALID: dict[type[GraphError], Callable[[int], st.SearchStrategy[InvalidGraphCase]]] = {
    EmptyGraphError: _empty,
    DuplicateNodeError: _duplicate_node,
    UnknownNodeError: _unknown_node,
    NoStartNodeError: _no_start_node,
    UnreachableNodeError: _unreachable,
    CycleWithoutExitError: _cycle_without_exit,
    ActivationConflictError: _activation_conflict,
    ParticipantMismatchError: _participant_mismatch,
    UnboundedLoopError: _unbounded_loop,
    ConditionSerializationError: _callable_not_restored,
}


def invalid_graphs(
    *, max_nodes: int = 6, errors: Iterable[type[GraphError]] | None = None
) -> st.SearchStrategy[InvalidGraphCase]:
    """Specs with exactly one defect, each paired with the error it must raise.

    Covers every build-time error of [`flowlib.errors`][flowlib.errors]: empty graph, duplicate node
    (in the builder and among participants), edge to or from an unknown node, unknown
    entry point, no start node, unreachable nodes, a cycle without a conditional edge,
    conflicting activation conditions in one group, participants that differ from the
    graph, a looping team with no bound, and a callable condition not restored on load.

    Args:
        max_nodes: Size of the valid graphs the defects are put into.
        errors: Only these error types (default: all).

    Raises:
        ValueError: If ``errors`` names a type this strategy cannot produce.
    """
    chosen = list(_INVALID) if errors is None else list(errors)
    unknown = [error.__name__ for error in chosen if error not in _INVALID]
    if unknown or not chosen:
        raise InvalidValueError(
            f"invalid_graphs() cannot produce {unknown or 'nothing'}; choose from "
            f"{', '.join(error.__name__ for error in _INVALID)}."
        )
    return st.one_of(*(_INVALID[error](max_nodes) for error in chosen))


@st.composite
def map_graphs(draw: st.DrawFn, *, max_items: int = 6) -> MapGraphSpec:
    """A [`MapGraphSpec`][flowlib.testing.specs.MapGraphSpec]: a map-reduce with a
    drawn prefix, item count (0 included), concurrency bound, instance delays, side
    branch into the reduce and tail."""
    items = draw(st.integers(0, max_items))
    return MapGraphSpec(
        before=tuple(f"pre{i}" for i in range(draw(st.integers(0, 2)))),
        items=items,
        max_concurrency=draw(st.none() | st.integers(1, 3)),
        delays=tuple(
            draw(st.lists(st.sampled_from((0.0, 0.001, 0.003)), min_size=items, max_size=items))
        ),
        side=tuple(f"side{i}" for i in range(draw(st.integers(0, 2)))),
        tail=tuple(f"post{i}" for i in range(draw(st.integers(0, 1)))),
    )
