"""Hypothesis strategies for graphs: valid specs of every shape, and invalid ones.

A strategy here generates a [`GraphSpec`][flowlib.testing.strategies.GraphSpec]: plain, printable
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
[`GraphSpec.run_bound`][flowlib.testing.strategies.GraphSpec.run_bound] is a proven upper bound on
the number of turns (teams built by [`GraphSpec.team`][flowlib.testing.strategies.GraphSpec.team]
use it as ``max_turns``).

[`invalid_graphs`][flowlib.testing.strategies.invalid_graphs] generates
[`InvalidGraphCase`][flowlib.testing.strategies.InvalidGraphCase] values: a spec with one defect,
the [`GraphError`][flowlib.errors.GraphError] subclass it must raise, and the node names the error
message must show.

Keywords in replies and conditions are upper case or in angle brackets (``"REVISE"``,
``"<k3>"``) and node names are lower case, so a name never matches a condition by
accident. This module needs ``hypothesis`` (``pip install hypothesis``).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from itertools import pairwise
from typing import Any, ClassVar, Final, Literal

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - hypothesis is a dev dependency
    raise ImportError(
        "flowlib.testing.strategies needs hypothesis; install it with `pip install hypothesis` "
        "(or `pip install flowlib[dev]`)."
    ) from exc

from ..base import ChatAgent, TerminationCondition
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
from ..graph import Contains, DiGraph, DiGraphEdge, DiGraphNode, EdgeCondition, Regex
from ..messages import BaseChatMessage, TextMessage
from ..teams import DiGraphBuilder, GraphFlow
from ._agents import ScriptedAgent

__all__ = [
    "DEFAULT_MAX_TURNS",
    "EdgeSpec",
    "GraphSpec",
    "InvalidGraphCase",
    "MapGraphSpec",
    "NodeSpec",
    "TextCheck",
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

Activation = Literal["all", "any"]
Condition = str | EdgeCondition | Callable[[BaseChatMessage], bool] | None

DEFAULT_MAX_TURNS: Final = 100
"""``max_turns`` of a looping team whose spec has no provable turn bound."""

_AUTO: Any = object()  # "not given" for GraphSpec.team(max_turns=...)
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,5}")


def _compact_repr(obj: Any) -> str:
    """``Class(field=value, ...)`` showing only the fields that differ from their default."""
    parts = []
    for spec_field in fields(obj):
        value = getattr(obj, spec_field.name)
        if spec_field.default is not MISSING and value == spec_field.default:
            continue
        parts.append(f"{spec_field.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


@dataclass(frozen=True)
class TextCheck:
    """A named, printable callable condition: true when ``text`` is in the message text.

    It stands for user-written callables (which cannot be serialised): a graph using it
    dumps a placeholder named ``__name__``, and loads back with
    ``DiGraph.load(data, conditions=spec.conditions())``.

    Args:
        text: The substring to look for in ``message.to_model_text()``.
    """

    text: str

    @property
    def __name__(self) -> str:
        slug = re.sub(r"\W+", "_", self.text).strip("_").lower() or "empty"
        return f"has_{slug}"

    def __call__(self, message: BaseChatMessage) -> bool:
        return self.text in message.to_model_text()

    def __repr__(self) -> str:
        return f"TextCheck({self.text!r})"


@dataclass(frozen=True, repr=False)
class NodeSpec:
    """One node: its name, how it is activated, and what its agent replies.

    Args:
        name: The node's (and agent's) name.
        outputs: The agent's replies, one per turn.
        then: The reply after the scripted ones; ``None`` makes an extra turn fail (the
            spec promises the node runs at most ``len(outputs)`` times).
        activation: The node's default activation condition.
        yields: Per turn, how often the agent yields to the event loop before replying
            (see [`ScriptedAgent`][flowlib.testing.ScriptedAgent]); varies concurrent orders.
    """

    name: str
    outputs: tuple[str, ...] = ("ok",)
    then: str | None = None
    activation: Activation = "all"
    yields: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return _compact_repr(self)

    def agent(self) -> ScriptedAgent:
        """A fresh [`ScriptedAgent`][flowlib.testing.strategies.ScriptedAgent] playing this node's
        script."""
        return ScriptedAgent(self.name, self.outputs, then=self.then, yields=self.yields)

    def max_turns(self) -> int | None:
        """How often the node can run before its script fails (None: unlimited)."""
        return len(self.outputs) if self.then is None else None


@dataclass(frozen=True, repr=False)
class EdgeSpec:
    """One edge, as [`DiGraphBuilder.add_edge`][flowlib.teams.DiGraphBuilder.add_edge] takes it."""

    source: str
    target: str
    condition: Condition = None
    activation_group: str | None = None
    activation_condition: Activation | None = None

    def __repr__(self) -> str:
        return _compact_repr(self)

    def matches(self, text: str) -> bool:
        """Whether the edge fires for a reply ``text`` of its source."""
        edge = DiGraphEdge(target=self.target, condition=self.condition)
        return edge.check_condition(TextMessage(content=text, source=self.source))


@dataclass(frozen=True, repr=False)
class GraphSpec:
    """A graph as plain data, with helpers to build its IR, builder and team.

    Args:
        nodes: The nodes, in insertion order.
        edges: The edges, in insertion order (which fixes each source's edge order).
        entry: The entry point, or ``None`` for "every node without incoming edges".
        shape: Which strategy made it (``"chain"``, ``"loop"``, ...), for filtering.
        expected_steps: The exact order of node starts of a fresh run, when the shape
            fixes it (chains and loops), else ``None``.
    """

    nodes: tuple[NodeSpec, ...]
    edges: tuple[EdgeSpec, ...] = ()
    entry: str | None = None
    shape: str = "custom"
    expected_steps: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return _compact_repr(self)

    # --- queries --------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """The node names, in insertion order."""
        return tuple(node.name for node in self.nodes)

    def node(self, name: str) -> NodeSpec:
        """The node called ``name``.

        Raises:
            KeyError: If there is none.
        """
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def entry_nodes(self) -> list[str]:
        """Where a run starts: ``entry`` if set, else every node without incoming edges."""
        if self.entry is not None:
            return [self.entry]
        targets = {edge.target for edge in self.edges}
        return [name for name in self.names if name not in targets]

    @property
    def is_cyclic(self) -> bool:
        """Whether the edges form a cycle (self-loops included)."""
        return _has_cycle(self.names, [(e.source, e.target) for e in self.edges])

    def conditions(self) -> dict[str, Callable[[BaseChatMessage], bool]]:
        """The callable conditions by the name a dump records (for ``DiGraph.load``)."""
        found: dict[str, Callable[[BaseChatMessage], bool]] = {}
        for edge in self.edges:
            condition = edge.condition
            if callable(condition) and not isinstance(condition, EdgeCondition):
                found[getattr(condition, "__name__", "callable")] = condition
        return found

    def run_bound(self) -> int | None:
        """An upper bound on the turns of one fresh run, or None if none is provable.

        An edge fires at most once per turn of its source; an edge whose condition only
        the scripted replies (not ``then``) can match fires at most as often as they
        match; a node runs at most as often as it is activated. If the edges that can
        fire without limit form a DAG, summing along it bounds every node.
        """
        names = self.names
        if len(set(names)) != len(names):
            return None
        by_name = {node.name: node for node in self.nodes}
        cap = {name: by_name[name].max_turns() for name in names}
        limited: dict[str, int] = dict.fromkeys(names, 0)
        free: list[tuple[str, str]] = []
        for edge in self.edges:
            if edge.source not in by_name or edge.target not in by_name:
                return None
            origin = by_name[edge.source]
            if origin.then is None or not edge.matches(origin.then):
                limited[edge.target] += sum(1 for text in origin.outputs if edge.matches(text))
            else:
                free.append((edge.source, edge.target))
        order = _topological(names, free)
        if order is None:
            return None
        entry = set(self.entry_nodes())
        runs: dict[str, int] = {}
        parents: dict[str, list[str]] = {name: [] for name in names}
        for source, target in free:
            parents[target].append(source)
        for name in order:
            bound = (name in entry) + limited[name] + sum(runs[p] for p in parents[name])
            limit = cap[name]
            runs[name] = bound if limit is None else min(bound, limit)
        return sum(runs.values())

    def describe(self) -> str:
        """A short multi-line text of the graph, one edge per line."""
        lines = [f"{self.shape}: nodes {', '.join(self.names) or '(none)'}"]
        if self.entry is not None:
            lines.append(f"entry {self.entry}")
        for edge in self.edges:
            extra = []
            if edge.condition is not None:
                extra.append(f"if {edge.condition!r}")
            if edge.activation_group:
                extra.append(f"group {edge.activation_group}")
            if edge.activation_condition:
                extra.append(edge.activation_condition)
            lines.append(f"  {edge.source} -> {edge.target} {' '.join(extra)}".rstrip())
        return "\n".join(lines)

    # --- building -------------------------------------------------------------------

    def agents(self) -> list[ScriptedAgent]:
        """Fresh scripted agents, one per node, in node order."""
        return [node.agent() for node in self.nodes]

    def builder(self, agents: Sequence[ChatAgent] | None = None) -> DiGraphBuilder:
        """A [`DiGraphBuilder`][flowlib.testing.strategies.DiGraphBuilder] with the nodes, edges and
        entry point added.

        Args:
            agents: The participants, one per node (default:
                [`agents`][flowlib.testing.strategies.GraphSpec.agents]).

        Raises:
            GraphError: What the builder raises while adding (duplicate nodes, unknown
                edge ends or entry point).
        """
        participants = list(agents) if agents is not None else self.agents()
        builder = DiGraphBuilder()
        for node, agent in zip(self.nodes, participants, strict=True):
            builder.add_node(agent, activation=node.activation)
        for edge in self.edges:
            builder.add_edge(
                edge.source,
                edge.target,
                condition=edge.condition,
                activation_group=edge.activation_group,
                activation_condition=edge.activation_condition,
            )
        if self.entry is not None:
            builder.set_entry_point(self.entry)
        return builder

    def build(self) -> DiGraph:
        """Build and validate the graph IR through
        [`DiGraphBuilder`][flowlib.testing.strategies.DiGraphBuilder].

        Raises:
            GraphError: If the spec is invalid.
        """
        return self.builder().build()

    def graph(self) -> DiGraph:
        """The graph IR built directly, without the builder and without validation.

        For specs the builder would reject early: edges to unknown nodes and unknown
        entry points end up in the IR, so ``validate_graph`` can be tested on them. Of
        duplicate node names the last wins; edges from unknown sources are dropped.
        """
        nodes: dict[str, DiGraphNode] = {}
        for node in self.nodes:
            nodes[node.name] = DiGraphNode(name=node.name, activation=node.activation)
        for edge in self.edges:
            if edge.source in nodes:
                nodes[edge.source].edges.append(
                    DiGraphEdge(
                        target=edge.target,
                        condition=edge.condition,
                        activation_group=edge.activation_group or "",
                        activation_condition=edge.activation_condition,
                    )
                )
        return DiGraph(nodes=nodes, default_start_node=self.entry)

    def team(
        self,
        *,
        max_turns: int | None = _AUTO,
        termination_condition: TerminationCondition | None = None,
        participants: Sequence[ChatAgent] | None = None,
    ) -> GraphFlow:
        """A [`GraphFlow`][flowlib.teams.GraphFlow] of fresh scripted agents.

        Args:
            max_turns: Default: [`run_bound`][flowlib.testing.strategies.GraphSpec.run_bound] (or
                [`DEFAULT_MAX_TURNS`][flowlib.testing.strategies.DEFAULT_MAX_TURNS]) if the graph
                loops, else ``None``.
            termination_condition: Passed to the team.
            participants: Use these instead of fresh agents (they need not match the
                graph, to test mismatches); the graph is built with fresh agents.

        Raises:
            GraphError: If the spec or the participants are invalid.
        """
        builder = self.builder()
        if max_turns is _AUTO:
            max_turns = (self.run_bound() or DEFAULT_MAX_TURNS) if self.is_cyclic else None
        members = builder.get_participants() if participants is None else list(participants)
        return GraphFlow(
            members,
            builder.build(),
            max_turns=max_turns,
            termination_condition=termination_condition,
        )


Stage = Literal["build", "team", "load"]


@dataclass(frozen=True, repr=False)
class InvalidGraphCase:
    """A spec with one defect, and what building it must raise.

    Args:
        spec: The defective spec.
        error: The exact [`GraphError`][flowlib.errors.GraphError] subclass expected.
        names: Node names the error message must show in backticks.
        stage: What raises: ``"build"`` (the builder), ``"team"`` (the team
            constructor) or ``"load"`` (``DiGraph.load`` of the dumped graph).
        extra_participants: Names of agents added to the team's participants.
        missing_participants: Nodes whose agents are left out of the participants.
        bounded: Whether the team gets ``max_turns`` (``False``: an unbounded loop).
        in_ir: Whether ``validate_graph(spec.graph())`` raises the same error too.
    """

    spec: GraphSpec
    error: type[GraphError]
    names: tuple[str, ...]
    stage: Stage = "build"
    extra_participants: tuple[str, ...] = ()
    missing_participants: tuple[str, ...] = ()
    bounded: bool = True
    in_ir: bool = False

    def __repr__(self) -> str:
        return _compact_repr(self)

    def trigger(self) -> object:
        """Do what must raise ``error``; return the result if it does not."""
        if self.stage == "build":
            return self.spec.build()
        if self.stage == "load":
            data = json.loads(json.dumps(self.spec.build().dump()))
            return DiGraph.load(data)
        missing = set(self.missing_participants)
        participants: list[ChatAgent] = [
            agent for agent in self.spec.agents() if agent.name not in missing
        ]
        participants.extend(ScriptedAgent(name, ["ok"]) for name in self.extra_participants)
        return self.spec.team(
            participants=participants, max_turns=DEFAULT_MAX_TURNS if self.bounded else None
        )


# --- small graph algorithms (independent of flowlib's own) ------------------------------


def _topological(names: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """Kahn's order of ``names`` under ``edges``, or None if they contain a cycle."""
    successors: dict[str, list[str]] = {name: [] for name in names}
    indegree = dict.fromkeys(names, 0)
    for source, target in edges:
        successors[source].append(target)
        indegree[target] += 1
    queue = deque(name for name in names if indegree[name] == 0)
    order: list[str] = []
    while queue:
        name = queue.popleft()
        order.append(name)
        for nxt in successors[name]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                queue.append(nxt)
    return order if len(order) == len(names) else None


def _has_cycle(names: Sequence[str], edges: Iterable[tuple[str, str]]) -> bool:
    return _topological(names, edges) is None


def _reachable(starts: Iterable[str], edges: Iterable[tuple[str, str]]) -> set[str]:
    successors: dict[str, list[str]] = {}
    for source, target in edges:
        successors.setdefault(source, []).append(target)
    seen = set(starts)
    queue = deque(seen)
    while queue:
        for nxt in successors.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def _cyclic_nodes(names: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str]:
    """Nodes on some cycle: those that can reach themselves."""
    result = []
    for name in names:
        firsts = [target for source, target in edges if source == name]
        if name in _reachable(firsts, edges):
            result.append(name)
    return result


def _text(keywords: Iterable[str]) -> str:
    words = list(keywords)
    return " ".join(words) if words else "ok"


# --- building blocks --------------------------------------------------------------------


def node_names(min_size: int = 1, max_size: int = 6) -> st.SearchStrategy[list[str]]:
    """Unique lower-case identifiers usable as agent names, in random (not sorted) order."""
    name = st.from_regex(_IDENTIFIER, fullmatch=True)
    return st.lists(name, min_size=min_size, max_size=max_size, unique=True)


def conditions(keyword: str) -> st.SearchStrategy[Condition]:
    """Every condition form that fires exactly when ``keyword`` is in the reply: the
    string itself, ``Contains``, ``Regex`` and a callable
    ([`TextCheck`][flowlib.testing.strategies.TextCheck])."""
    return st.sampled_from(
        [keyword, Contains(text=keyword), Regex(pattern=re.escape(keyword)), TextCheck(keyword)]
    )


def _fresh_name(draw: st.DrawFn, taken: Iterable[str]) -> str:
    used = set(taken)
    name: str = draw(st.from_regex(_IDENTIFIER, fullmatch=True).filter(lambda n: n not in used))
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
    return tuple(_text(words) for words in draw(st.lists(choices, min_size=1, max_size=max_size)))


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
                then=_text(draw(st.lists(st.sampled_from(keywords), unique=True)))
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
    [`GraphSpec.run_bound`][flowlib.testing.strategies.GraphSpec.run_bound] bounds the run.
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
    reached = _reachable([entry] if entry is not None else starts, pairs)
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
    u = draw(st.sampled_from(sorted(_reachable([v], pairs), key=names.index)))
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
    looping = tuple(_cyclic_nodes(base.names, _pairs(base)))
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


# --- map edges (issue 23) ---------------------------------------------------------------


@dataclass(frozen=True)
class MapGraphSpec:
    """A graph with one map edge: ``before`` chain -> ``source`` =map=> ``mapped``
    (one instance per item) -> ``reduce`` (``activation="all"``), with an optional side
    branch ``source -> side... -> reduce`` joined into the reduce and an optional tail
    after it. Every node is a function that logs ``start:<name>`` / ``end:<name>`` (an
    instance logs ``<mapped>[i]``); instances sleep their drawn delay, so they finish in
    another order than the items'.

    Attributes:
        before: Nodes before the map's source, in order.
        items: How many items the map edge produces (0 skips the branch).
        max_concurrency: The map edge's bound (None: all at once).
        delays: Per item, seconds its instance sleeps.
        side: The side branch's nodes (empty: none).
        tail: Nodes after the reduce, in order.
    """

    before: tuple[str, ...]
    items: int
    max_concurrency: int | None
    delays: tuple[float, ...]
    side: tuple[str, ...]
    tail: tuple[str, ...]

    source: ClassVar[str] = "source"
    mapped: ClassVar[str] = "mapped"
    reduce: ClassVar[str] = "reduce"

    def team(self, log: list[str]) -> Any:
        """A ``GraphFlow`` of logging function nodes; ``log`` receives their events."""
        import asyncio

        from ..teams import DiGraphBuilder, GraphFlow

        def node(name: str) -> Callable[[Sequence[BaseChatMessage]], Awaitable[str]]:
            async def run(messages: Sequence[BaseChatMessage]) -> str:
                log.append(f"start:{name}")
                await asyncio.sleep(0)
                log.append(f"end:{name}")
                return f"{name} done"

            run.__name__ = name
            return run

        async def mapped(messages: Sequence[BaseChatMessage]) -> str:
            (item,) = messages
            index = int(item.to_text())
            label = f"{MapGraphSpec.mapped}[{index}]"
            log.append(f"start:{label}")
            await asyncio.sleep(self.delays[index])
            log.append(f"end:{label}")
            return f"output {index}"

        mapped.__name__ = self.mapped

        def split(message: BaseChatMessage | None) -> list[str]:
            return [str(index) for index in range(self.items)]

        builder = DiGraphBuilder()
        chain = [*self.before, self.source]
        for name in chain:
            builder.add_node(node(name))
        builder.add_node(mapped)
        builder.add_node(node(self.reduce), activation="all")
        for name in (*self.side, *self.tail):
            builder.add_node(node(name))
        for first, second in pairwise(chain):
            builder.add_edge(first, second)
        builder.add_edge(self.source, self.mapped, map=split, max_concurrency=self.max_concurrency)
        builder.add_edge(self.mapped, self.reduce)
        side = [self.source, *self.side, self.reduce] if self.side else []
        for first, second in pairwise(side):
            builder.add_edge(first, second)
        tail = [self.reduce, *self.tail]
        for first, second in pairwise(tail):
            builder.add_edge(first, second)
        return GraphFlow(builder.get_participants(), builder.build())


@st.composite
def map_graphs(draw: st.DrawFn, *, max_items: int = 6) -> MapGraphSpec:
    """A [`MapGraphSpec`][flowlib.testing.strategies.MapGraphSpec]: a map-reduce with a
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
