"""The graph specs the strategies of [`flowlib.testing.strategies`][flowlib.testing.strategies]
generate: plain, printable data (node names, edges, each node's scripted replies) that builds the
real graph and team on demand, so a shrunk failure prints a graph you can read and paste into a
test. Needs no ``hypothesis``.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, fields
from itertools import pairwise
from typing import Any, ClassVar, Final, Literal

from ..base import ChatAgent, TerminationCondition
from ..errors import (
    GraphError,
)
from ..graph import DiGraph, DiGraphEdge, DiGraphNode, EdgeCondition
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
]

Activation = Literal["all", "any"]
Condition = str | EdgeCondition | Callable[[BaseChatMessage], bool] | None

DEFAULT_MAX_TURNS: Final = 100
"""``max_turns`` of a looping team whose spec has no provable turn bound."""

_AUTO: Any = object()  # "not given" for GraphSpec.team(max_turns=...)
IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,5}")


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
        """A fresh [`ScriptedAgent`][flowlib.testing.ScriptedAgent] playing this node's
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
        """A [`DiGraphBuilder`][flowlib.teams.DiGraphBuilder] with the nodes, edges and
        entry point added.

        Args:
            agents: The participants, one per node (default:
                [`agents`][flowlib.testing.specs.GraphSpec.agents]).

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
        [`DiGraphBuilder`][flowlib.teams.DiGraphBuilder].

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
            max_turns: Default: [`run_bound`][flowlib.testing.specs.GraphSpec.run_bound] (or
                [`DEFAULT_MAX_TURNS`][flowlib.testing.specs.DEFAULT_MAX_TURNS]) if the graph
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


def reachable(starts: Iterable[str], edges: Iterable[tuple[str, str]]) -> set[str]:
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


def cyclic_nodes(names: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str]:
    """Nodes on some cycle: those that can reach themselves."""
    result = []
    for name in names:
        firsts = [target for source, target in edges if source == name]
        if name in reachable(firsts, edges):
            result.append(name)
    return result


def reply_text(keywords: Iterable[str]) -> str:
    words = list(keywords)
    return " ".join(words) if words else "ok"


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
