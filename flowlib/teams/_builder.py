"""The fluent [`DiGraphBuilder`][flowlib.teams.DiGraphBuilder]."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from ..agents import FunctionAgent, NodeFunction
from ..base import ChatAgent, Team
from ..errors import ArgumentTypeError, DuplicateNodeError, InvalidArgumentError, UnknownNodeError
from ..graph import (
    CachePolicy,
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    EdgeCondition,
    MapFunction,
    NodeKind,
    RetryPolicy,
    check_timeout,
)
from ..graph.internal import check_condition
from ..messages import BaseChatMessage

__all__ = ["DiGraphBuilder", "GraphParticipant"]

GraphParticipant = ChatAgent | Team
NodeRef = str | ChatAgent | Team | NodeFunction
Condition = str | EdgeCondition | Callable[[BaseChatMessage], bool] | None
_NODE_KINDS = ("agent", "team", "router", "function")


def _check_activation(value: object, argument: str, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if value not in ("all", "any") or not isinstance(value, str):
        allowed = '"all", "any" or None' if optional else '"all" or "any"'
        raise InvalidArgumentError(
            f"`{argument}` must be {allowed}, not {value!r}.", argument=argument
        )


class DiGraphBuilder:
    """Build a [`DiGraph`][flowlib.graph.DiGraph] step by step; every method chains.

    Nodes are agents, nested teams or plain functions (wrapped in
    [`FunctionAgent`][flowlib.agents.FunctionAgent]). [`build`][flowlib.teams.DiGraphBuilder.build]
    validates the graph.

    Examples:
        >>> from flowlib.agents import FunctionAgent
        >>> def a(messages): return "draft"
        >>> def b(messages): return "APPROVE"
        >>> builder = DiGraphBuilder()
        >>> _ = builder.add_node(a).add_node(b).add_edge("a", "b")
        >>> graph = builder.build()
        >>> [p.name for p in builder.get_participants()]
        ['a', 'b']
    """

    def __init__(self) -> None:
        self.nodes: dict[str, DiGraphNode] = {}
        self.agents: dict[str, GraphParticipant] = {}
        self._default_start_node: str | None = None
        self._shared: set[str] = set()  # nodes also owned by a graph already built

    def _name_of(self, ref: NodeRef, role: str) -> str:
        if isinstance(ref, str):
            name = ref
        elif isinstance(ref, (ChatAgent, Team)):
            name = ref.name
        else:
            name = getattr(ref, "__name__", repr(ref))
        if name not in self.nodes:
            known = ", ".join(f"`{n}`" for n in self.nodes) or "none yet"
            raise UnknownNodeError(
                f"The {role} `{name}` is not a node of this builder; add it first with "
                f"`add_node(...)`. Nodes: {known}.",
                nodes=[name],
            )
        return name

    def add_node(
        self,
        agent: GraphParticipant | NodeFunction,
        activation: Literal["all", "any"] = "all",
        *,
        name: str | None = None,
        kind: NodeKind | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        cache: CachePolicy | None = None,
        instances: Callable[[int], GraphParticipant] | None = None,
    ) -> DiGraphBuilder:
        """Add a node for ``agent`` (an agent, a nested team, or a sync/async function).

        Args:
            agent: What runs at the node.
            activation: How the node's incoming edge groups are satisfied by default.
            name: Node name for a function (defaults to the function's ``__name__``).
            kind: Override the node kind shown in drawings (``router`` for routers).
            timeout: Seconds one attempt of a turn may take; past it the turn is
                cancelled and counts as a failed attempt (``None``: the team's
                ``turn_timeout``, if any).
            retry: Retry failed turns ([`RetryPolicy`][flowlib.graph.RetryPolicy]).
            cache: Answer turns whose input was seen before from a cache
                ([`CachePolicy`][flowlib.graph.CachePolicy]).
            instances: For the target of a map edge: ``instances(i)`` builds a fresh agent
                (or team) for item ``i``. Default: a copy made from the agent's component
                config; a function node is called as it is.

        Raises:
            DuplicateNodeError: If a node of that name exists.
            InvalidArgumentError: If ``activation`` or ``kind`` is not one of its values,
                or ``timeout`` is not a positive number.
            ArgumentTypeError: If ``agent`` is neither an agent, a team nor a function, or
                ``retry`` / ``cache`` is not a policy.
        """
        _check_activation(activation, "activation")
        check_timeout(timeout, "timeout")
        if instances is not None and not callable(instances):
            raise ArgumentTypeError(
                "`instances` must be a function of the item index, not "
                f"{type(instances).__name__}.",
                argument="instances",
            )
        for argument, value, policy in (
            ("retry", retry, RetryPolicy),
            ("cache", cache, CachePolicy),
        ):
            if value is not None and not isinstance(value, policy):
                raise ArgumentTypeError(
                    f"`{argument}` must be a {policy.__name__} or None, not "
                    f"{type(value).__name__}.",
                    argument=argument,
                )
        if kind is not None and kind not in _NODE_KINDS:
            raise InvalidArgumentError(
                f"`kind` must be one of {', '.join(_NODE_KINDS)} or None, not {kind!r}.",
                argument="kind",
            )
        if not isinstance(agent, (ChatAgent, Team)) and not callable(agent):
            raise ArgumentTypeError(
                "`agent` must be a ChatAgent, a Team or a function of the messages, not "
                f"{type(agent).__name__}.",
                argument="agent",
            )
        participant: GraphParticipant
        node_kind: NodeKind
        if isinstance(agent, Team):
            participant, node_kind = agent, "team"
        elif isinstance(agent, FunctionAgent):
            participant, node_kind = agent, "function"
        elif isinstance(agent, ChatAgent):
            participant, node_kind = agent, "agent"
        else:
            participant, node_kind = FunctionAgent(agent, name=name), "function"
        if name is not None and participant.name != name:
            raise InvalidArgumentError(
                f"`name={name!r}` only applies to function nodes; the node's name is the "
                f"agent's or team's own name, `{participant.name}`.",
                argument="name",
            )
        if participant.name in self.nodes:
            raise DuplicateNodeError(
                f"A node named `{participant.name}` already exists; node names must be unique. "
                "Rename one of the agents.",
                nodes=[participant.name],
            )
        self.nodes[participant.name] = DiGraphNode(
            name=participant.name,
            edges=[],
            activation=activation,
            kind=kind or node_kind,
            timeout=timeout,
            retry=retry,
            cache=cache,
            instances=instances,
        )
        self.agents[participant.name] = participant
        return self

    def add_edge(
        self,
        source: NodeRef,
        target: NodeRef,
        condition: Condition = None,
        activation_group: str | None = None,
        activation_condition: Literal["all", "any"] | None = None,
        *,
        label: str | None = None,
        map: MapFunction | None = None,
        max_concurrency: int | None = None,
    ) -> DiGraphBuilder:
        """Add an edge ``source -> target``; with ``map``, a map edge.

        A map edge runs one instance of ``target`` per item of the list ``map`` returns
        for the source's final message (instances ``target[0]``, ``target[1]``, ...,
        concurrently, at most ``max_concurrency`` at once); a node after ``target`` with
        ``activation="all"`` is the reduce and receives their outputs in item order. See
        docs/graph-semantics.md, "Map edges".

        Args:
            source: Source node (name or agent).
            target: Target node (name or agent).
            condition: ``None`` (always), a substring of the source's final message text,
                a condition object (serialisable) or a callable on the message.
            activation_group: The target's activation group for this edge (default: the
                loop-aware default group, see [`DiGraphEdge`][flowlib.graph.DiGraphEdge]).
            activation_condition: ``"all"`` or ``"any"`` for the group; ``None`` uses the
                target node's activation.
            label: What a drawing shows on the edge instead of the condition.
            map: The map function: the source's final message (None if it published
                none) to a list of strings or chat messages.
            max_concurrency: With ``map``: at most this many instances at once (None:
                all).

        Raises:
            UnknownNodeError: If ``source`` or ``target`` has not been added.
            InvalidConditionError: If ``condition`` is an ``async`` callable (conditions
                are checked synchronously) or a [`Regex`][flowlib.graph.Regex] that does not
                compile; the message names the edge.
            InvalidArgumentError: If ``activation_condition`` is not ``"all"``, ``"any"``
                or ``None``.
            ArgumentTypeError: If ``condition``, ``activation_group`` or ``label`` has the
                wrong type.
        """
        source_name = self._name_of(source, "edge source")
        target_name = self._name_of(target, "edge target")
        check_condition(condition, source=source_name, target=target_name)
        _check_activation(activation_condition, "activation_condition", optional=True)
        for argument, value in (("activation_group", activation_group), ("label", label)):
            if value is not None and not isinstance(value, str):
                raise ArgumentTypeError(
                    f"Edge `{source_name} -> {target_name}`: `{argument}` must be a string "
                    f"or None, not {type(value).__name__}.",
                    argument=argument,
                )
        if map is not None and not callable(map):
            raise ArgumentTypeError(
                f"Edge `{source_name} -> {target_name}`: `map` must be a function of the "
                f"message returning a list, not {type(map).__name__}.",
                argument="map",
            )
        if max_concurrency is not None:
            if map is None:
                raise InvalidArgumentError(
                    f"Edge `{source_name} -> {target_name}`: `max_concurrency` applies to map "
                    "edges only; pass `map=` too, or drop it.",
                    argument="max_concurrency",
                )
            if (
                isinstance(max_concurrency, bool)
                or not isinstance(max_concurrency, int)
                or max_concurrency < 1
            ):
                raise InvalidArgumentError(
                    f"Edge `{source_name} -> {target_name}`: `max_concurrency` must be a "
                    f"positive integer or None, not {max_concurrency!r}.",
                    argument="max_concurrency",
                )
        edge = DiGraphEdge(
            target=target_name,
            condition=condition,
            activation_group=activation_group or "",
            activation_condition=activation_condition,
            label=label,
            map=None if map is None else getattr(map, "__name__", "map"),
            map_function=map,
            max_concurrency=max_concurrency,
        )
        node = self.nodes[source_name]
        if source_name in self._shared:
            self._shared.discard(source_name)
            node = node.model_copy(update={"edges": [*node.edges]})
            self.nodes[source_name] = node
        node.edges.append(edge)
        return self

    def add_conditional_edges(
        self, source: NodeRef, condition_to_target: Mapping[str, NodeRef]
    ) -> DiGraphBuilder:
        """Add one substring-conditioned edge per ``{keyword: target}`` entry.

        Raises:
            UnknownNodeError: If a node has not been added.
        """
        if not isinstance(condition_to_target, Mapping):
            raise ArgumentTypeError(
                "`condition_to_target` must be a mapping {keyword: target}, not "
                f"{type(condition_to_target).__name__}.",
                argument="condition_to_target",
            )
        for keyword, target in condition_to_target.items():
            self.add_edge(source, target, condition=keyword)
        return self

    def set_entry_point(self, name: NodeRef) -> DiGraphBuilder:
        """Make ``name`` the node every run starts from.

        Raises:
            UnknownNodeError: If the node has not been added.
        """
        self._default_start_node = self._name_of(name, "entry point")
        return self

    def build(self) -> DiGraph:
        """Return the validated graph.

        Raises:
            GraphError: A subclass naming what is wrong (see [`flowlib.errors`][flowlib.errors]).
        """
        # Nodes are shared with the built graph rather than copied (copying every node
        # dominates the cost of building a large graph); a node is copied only if the
        # builder later adds an edge to it, so the graph built here never changes.
        graph = DiGraph.model_construct(
            nodes=dict(self.nodes), default_start_node=self._default_start_node
        )
        self._shared = set(self.nodes)
        graph.graph_validate()
        return graph

    def get_participants(self) -> list[GraphParticipant]:
        """The agents, teams and function nodes added, in insertion order."""
        return list(self.agents.values())
