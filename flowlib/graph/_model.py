"""The graph IR: [`DiGraph`][flowlib.graph.DiGraph], [`DiGraphNode`][flowlib.graph.DiGraphNode] and
[`DiGraphEdge`][flowlib.graph.DiGraphEdge].

Every team compiles to this one pydantic model. It is plain data: it dumps to JSON and
loads back (callable conditions are marked in the dump, never dropped silently), it can
be validated and drawn without running anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from ..errors import ConditionSerializationError, GraphLoadError
from ..messages import BaseChatMessage
from ._conditions import CallableCondition, EdgeCondition, condition_from_data
from ._fire import edge_rule, fire_edges
from ._policies import CachePolicy, RetryPolicy

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["DiGraph", "DiGraphEdge", "DiGraphNode", "InstanceFactory", "MapFunction", "NodeKind"]

NodeKind = Literal["agent", "team", "router", "function"]
"""What runs at a node: a chat agent, a nested team, a router (selector, orchestrator) or a
plain Python function."""

Activation = Literal["all", "any"]

ConditionFunction = Callable[[BaseChatMessage], bool]

InstanceFactory = Callable[[int], Any]
"""Builds the participant of a map target's instance ``i`` (an agent or a team)."""

MapFunction = Callable[[BaseChatMessage | None], Sequence[str | BaseChatMessage]]
"""A map edge's function: the source's final message to the list of items, one target
instance per item."""


class DiGraphEdge(BaseModel):
    """A directed edge to ``target``, with an optional condition.

    Attributes:
        target: The name of the node the edge leads to.
        condition: ``None`` (always fires), a string (fires when it is a substring of the
            source's final message ``to_model_text()``), a condition object from
            [`flowlib.graph`][flowlib.graph] (serialisable) or a callable taking the message and
            returning ``bool`` (moved to ``condition_function``; not serialisable).
        activation_group: Groups the incoming edges of the target. Empty means the
            default group: edges from inside the target's loop (its strongly connected
            component, self-loops included) form one group, edges from outside another.
        activation_condition: ``"all"`` (every edge of the group must fire) or ``"any"``
            (one is enough); ``None`` uses the target node's ``activation``.
        label: A label to draw instead of the condition's own.
        map: The name of the edge's map function, for a map edge (one instance of the
            target per item of the list the function returns; see docs/graph-semantics.md,
            "Map edges"); what a dump holds.
        map_function: The map function itself (not serialisable: ``DiGraph.load`` takes it
            back through ``maps={name: func}``).
        max_concurrency: At most this many instances of a map edge's target run at once
            (None: all).
    """

    target: str
    condition: str | EdgeCondition | SkipJsonSchema[ConditionFunction] | None = None
    condition_function: SkipJsonSchema[ConditionFunction | None] = Field(default=None, exclude=True)
    activation_group: str = ""
    activation_condition: Activation | None = None
    label: str | None = None
    map: str | None = None
    map_function: SkipJsonSchema[MapFunction | None] = Field(default=None, exclude=True)
    max_concurrency: int | None = Field(default=None, ge=1)

    @field_validator("condition", mode="before")
    @classmethod
    def _condition_from_dict(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return condition_from_data(value)
        return value

    @model_validator(mode="after")
    def _move_callable(self) -> DiGraphEdge:
        condition = self.condition
        if condition is not None and not isinstance(condition, (str, EdgeCondition)):
            self.condition_function = condition
            self.condition = None
        return self

    @model_serializer(mode="wrap")
    def _mark_callables(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.condition_function is not None:
            name = getattr(self.condition_function, "__name__", "callable")
            data["condition"] = CallableCondition(name=name).model_dump()
        # A plain edge dumps as before map edges existed (AutoGen's shape).
        for key in ("map", "max_concurrency"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    @property
    def is_map(self) -> bool:
        """Whether the edge is a map edge (one target instance per item)."""
        return self.map is not None or self.map_function is not None

    @property
    def is_conditional(self) -> bool:
        """Whether the edge has a condition (and so can exit a loop)."""
        return self.condition is not None or self.condition_function is not None

    def check_condition(self, message: BaseChatMessage) -> bool:
        """Return whether the edge fires for the source's final ``message`` (the rule
        of [`fire_edges`][flowlib.graph.fire_edges])."""
        return fire_edges([edge_rule(self)], message)[0]


class DiGraphNode(BaseModel):
    """A node: a named participant, its outgoing edges and how it is activated.

    Attributes:
        name: Unique node name; equals the participant's name.
        edges: Outgoing edges, in the order they were added.
        activation: Default activation condition of the node's incoming edge groups.
        kind: What runs at the node (for drawing and for the executor).
        timeout: Seconds a turn of the node may take; past it the turn is cancelled and
            counts as a failed attempt. ``None``: the team's ``turn_timeout``.
        retry: How failed turns are retried ([`RetryPolicy`][flowlib.graph.RetryPolicy]).
        cache: Where turns are cached ([`CachePolicy`][flowlib.graph.CachePolicy]).
        instances: For the target of a map edge, builds the participant of instance ``i``
            (a fresh agent per item); None: a copy from the participant's component
            config (a function node is called as it is).
    """

    name: str
    edges: list[DiGraphEdge] = Field(default_factory=list)
    activation: Activation = "all"
    kind: NodeKind = "agent"
    timeout: float | None = Field(default=None, gt=0)
    retry: RetryPolicy | None = None
    cache: SkipJsonSchema[CachePolicy | None] = Field(default=None, exclude=True)
    instances: SkipJsonSchema[InstanceFactory | None] = Field(default=None, exclude=True)

    @model_serializer(mode="wrap")
    def _leave_out_unset_policies(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A node without policies dumps as before the policies existed (AutoGen's shape).
        data = handler(self)
        if isinstance(data, dict):
            for policy in ("timeout", "retry", "cache"):
                if data.get(policy) is None:
                    data.pop(policy, None)
        return data


class DiGraph(BaseModel):
    """A directed graph of nodes and conditional edges: the IR every team compiles to.

    Attributes:
        nodes: Nodes by name, in insertion order (which fixes start and tie order).
        default_start_node: The entry point; when unset, the entry points are the nodes
            without incoming edges.

    Examples:
        >>> g = DiGraph(nodes={
        ...     "a": DiGraphNode(name="a", edges=[DiGraphEdge(target="b")]),
        ...     "b": DiGraphNode(name="b"),
        ... })
        >>> g.graph_validate()
        >>> sorted(g.get_start_nodes()), sorted(g.get_leaf_nodes())
        (['a'], ['b'])
    """

    nodes: dict[str, DiGraphNode]
    default_start_node: str | None = None
    pattern: str | None = None
    """The team pattern the graph was compiled from (``"round_robin"``, ``"selector"``,
    ``"swarm"``, ``"magentic_one"``), for drawing; None for graphs built by hand."""

    # The latest validation's analysis, by the rules and the graph's fingerprint
    # (`validate_graph`): validating the same graph again reuses it.
    _validated: dict[tuple[Any, ...], Any] = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        # Equal graphs are equal whatever their validation cache holds.
        if not isinstance(other, DiGraph):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @property
    def validation_cache(self) -> dict[tuple[Any, ...], Any]:
        """The analysis of the graph's latest validation, keyed by the validation's rules
        and the graph's fingerprint (`validate_graph` fills and reads it; a graph changed
        since has another fingerprint, so it is validated again)."""
        return self._validated

    # --- documented queries -------------------------------------------------------------

    def iter_edges(self) -> Iterator[tuple[str, DiGraphEdge]]:
        """Yield ``(source, edge)`` for every edge, in insertion order."""
        for name, node in self.nodes.items():
            for edge in node.edges:
                yield name, edge

    def get_parents(self) -> dict[str, list[str]]:
        """Map each node to the sources of its incoming edges."""
        parents: dict[str, list[str]] = {name: [] for name in self.nodes}
        for source, edge in self.iter_edges():
            parents.setdefault(edge.target, []).append(source)
        return parents

    def entry_nodes(self) -> list[str]:
        """The nodes a run starts from, in insertion order.

        The ``default_start_node`` if set, else every node without incoming edges.
        """
        if self.default_start_node is not None:
            return [self.default_start_node]
        targets = {edge.target for _, edge in self.iter_edges()}
        return [name for name in self.nodes if name not in targets]

    def get_start_nodes(self) -> set[str]:
        """The entry points (see [`entry_nodes`][flowlib.graph.DiGraph.entry_nodes]) as a set."""
        return set(self.entry_nodes())

    def get_leaf_nodes(self) -> set[str]:
        """The nodes without outgoing edges."""
        return {name for name, node in self.nodes.items() if not node.edges}

    def get_has_cycles(self) -> bool:
        """Whether the graph has at least one cycle (self-loops included)."""
        from ._validate import analyse

        return analyse(self).has_cycles

    def has_cycles_with_exit(self) -> bool:
        """True if the graph has cycles and each has a conditional edge; False if acyclic.

        Raises:
            CycleWithoutExitError: If a cycle has no conditional edge; the message shows it.
        """
        from ._validate import analyse, check_cycles_have_exits

        analysis = analyse(self)
        check_cycles_have_exits(self, analysis)
        return analysis.has_cycles

    def graph_validate(
        self,
        *,
        allow_unconditional_cycles: bool | None = None,
        allow_unreachable: bool | None = None,
    ) -> None:
        """Check the structure; see [`flowlib.graph.validate_graph`][flowlib.graph.validate_graph]
        for the rules.

        Raises:
            GraphError: A subclass naming the offending nodes or edges and the fix.
        """
        from ._validate import validate_graph

        validate_graph(
            self,
            allow_unconditional_cycles=allow_unconditional_cycles,
            allow_unreachable=allow_unreachable,
        )

    def get_remaining_map(self) -> dict[str, dict[str, int]]:
        """For each target, how many incoming edges each of its activation groups has."""
        from ._validate import analyse

        remaining: dict[str, dict[str, int]] = {}
        analysis = analyse(self)
        for (source, edge), group in zip(self.iter_edges(), analysis.edge_groups, strict=True):
            del source
            per_target = remaining.setdefault(edge.target, {})
            per_target[group] = per_target.get(group, 0) + 1
        return remaining

    def to_networkx(self) -> nx.DiGraph[str]:
        """A ``networkx.DiGraph`` with the same nodes and edges (edge data: the edge)."""
        import networkx as nx

        graph: nx.DiGraph[str] = nx.DiGraph()
        graph.add_nodes_from(self.nodes)
        graph.add_edges_from((s, e.target, {"edge": e}) for s, e in self.iter_edges())
        return graph

    # --- persistence --------------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """A JSON-safe dict of the graph. Callable conditions appear as
        ``{"kind": "callable", "name": ..., "serializable": false}``."""
        return self.model_dump(mode="json")

    @classmethod
    def load(
        cls,
        data: Mapping[str, Any],
        *,
        conditions: Mapping[str, ConditionFunction] | None = None,
        maps: Mapping[str, MapFunction] | None = None,
        error_types: Mapping[str, type[BaseException]] | None = None,
    ) -> DiGraph:
        """Rebuild a graph from [`dump`][flowlib.graph.DiGraph.dump] output.

        Args:
            data: The dumped graph.
            conditions: Callables for the edges whose conditions were callables, by the
                name the dump recorded.
            maps: The map functions of map edges, by the name the dump recorded: a map
                function is code, so it loads only when the caller passes it.
            error_types: Error classes a node's ``RetryPolicy.retry_on`` names that are
                neither builtin nor flowlib's, by the name the dump recorded.

        Raises:
            ConditionSerializationError: If a callable condition is not in ``conditions``.
            GraphLoadError: If ``data`` is not a dumped graph (a ``ValueError``); the
                message says where and what is wrong.
        """
        if _deeper_than(data, _MAX_LOAD_DEPTH):
            raise GraphLoadError(
                f"Cannot load the graph: its data nests more than {_MAX_LOAD_DEPTH} levels "
                "deep (conditions inside conditions?), which drawing and running could not "
                "handle; pass what `DiGraph.dump()` wrote."
            )
        try:
            graph = cls.model_validate(data, context={"error_types": dict(error_types or {})})
        except ValidationError as exc:
            # Surface our own condition errors (wrapped by pydantic) as themselves,
            # with the edge they were found on.
            for error in exc.errors():
                cause = (error.get("ctx") or {}).get("error")
                if isinstance(cause, ConditionSerializationError):
                    where = ".".join(str(part) for part in error["loc"])
                    raise ConditionSerializationError(f"{cause} (at `{where}`)") from exc
            raise GraphLoadError(_load_problems(exc)) from exc
        except RecursionError as exc:
            raise GraphLoadError(
                "Cannot load the graph: its data is nested too deeply (conditions inside "
                "conditions?); pass what `DiGraph.dump()` wrote."
            ) from exc
        for source, edge in graph.iter_edges():
            placeholder = edge.condition
            if isinstance(placeholder, CallableCondition):
                func = _given_function(
                    conditions,
                    placeholder.name,
                    (source, edge.target),
                    holds="had the callable condition",
                    argument="conditions",
                    then="to `DiGraph.load()`, or use a serialisable condition (a string or "
                    "flowlib.graph.Contains).",
                )
                edge.condition = None
                edge.condition_function = func
            if edge.map is not None:
                edge.map_function = _given_function(
                    maps,
                    edge.map,
                    (source, edge.target),
                    holds="is a map edge with the function",
                    argument="maps",
                    then="to load it (a map function is code: it loads only with your permission).",
                )
        return graph


_F = TypeVar("_F")


def _given_function(
    given: Mapping[str, _F] | None,
    name: str,
    edge: tuple[str, str],
    *,
    holds: str,
    argument: str,
    then: str,
) -> _F:
    """The function ``DiGraph.load``'s caller gave as ``argument`` for the name a dump
    wrote in place of code JSON cannot hold; refused, naming ``edge``, if not given."""
    func = (given or {}).get(name)
    if func is None:
        raise ConditionSerializationError(
            f"Edge `{edge[0]} -> {edge[1]}` {holds} `{name}`, which JSON cannot hold; pass "
            f"`{argument}={{'{name}': func}}` {then}",
            edges=[edge],
        )
    return func


def _load_problems(exc: ValidationError) -> str:
    """A one-paragraph account of a failed ``DiGraph.load``: where and what, at most five."""
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "<root>"
        problems.append(f"`{where}`: {error['msg']}")
    more = exc.error_count() - len(problems)
    suffix = f"; and {more} more" if more > 0 else ""
    return (
        "Cannot load the graph; pass what `DiGraph.dump()` wrote. "
        + "; ".join(problems)
        + suffix
        + "."
    )


_MAX_LOAD_DEPTH = 100
"""How deeply the data given to ``DiGraph.load`` may nest (a graph's own nesting is
about six levels; each condition combinator adds one or two)."""


def _deeper_than(data: object, limit: int) -> bool:
    """Whether lists and dicts in ``data`` nest deeper than ``limit`` (no recursion)."""
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((value, depth + 1) for value in item)
    return False
