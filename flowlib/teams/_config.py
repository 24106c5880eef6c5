"""The declarative configs of the teams (component type ``"team"``) and the parts every
team's ``_to_config`` / ``_from_config`` shares.

Participants, the termination condition and the model clients are nested component
models. A ``GraphFlow`` carries its graph as [`DiGraph.dump`][flowlib.graph.DiGraph.dump]
output: callable edge conditions appear there as ``{"kind": "callable", "name": ...}``
markers and are restored from ``load_component(..., conditions={name: func})``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict

from ..base import ChatAgent, Team, TerminationCondition
from ..component import (
    ComponentModel,
    dump_field,
    dump_fields,
    edge_conditions,
    load_error,
    load_field,
    load_fields,
    refuse_field,
    skip_field,
)
from ..errors import ConditionSerializationError
from ..graph import CachePolicy, DiGraph, MapFunction, Router
from ..messages import BaseAgentEvent, BaseChatMessage
from ..models import CacheStore
from ._group_chat import BaseGroupChat

__all__ = [
    "GraphFlowConfig",
    "GroupChatConfig",
    "MagenticOneGroupChatConfig",
    "SelectorGroupChatConfig",
    "TeamConfig",
    "dump_graph",
    "group_chat_config",
    "group_chat_from_config",
    "load_graph",
    "load_members",
    "load_termination",
    "team_fields",
]

AUTOGEN_TEAMS = "autogen_agentchat.teams."

T = TypeVar("T")


class TeamConfig(BaseModel):
    """What every team's config holds."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str | None = None
    description: str | None = None
    participants: list[ComponentModel]
    termination_condition: ComponentModel | None = None
    max_turns: int | None = None
    turn_timeout: float | None = None


class GroupChatConfig(TeamConfig):
    """The config of [`RoundRobinGroupChat`][flowlib.teams.RoundRobinGroupChat] and
    [`Swarm`][flowlib.teams.Swarm]."""

    emit_team_events: bool = False


class GraphFlowConfig(TeamConfig):
    """The config of [`GraphFlow`][flowlib.teams.GraphFlow]: the graph as
    [`DiGraph.dump`][flowlib.graph.DiGraph.dump] writes it."""

    graph: dict[str, Any]


class SelectorGroupChatConfig(GroupChatConfig):
    """The config of [`SelectorGroupChat`][flowlib.teams.SelectorGroupChat]; the prompt's
    default is the team's."""

    model_client: ComponentModel
    selector_prompt: str | None = None
    allow_repeated_speaker: bool = False
    max_selector_attempts: int = 3
    model_client_streaming: bool = False
    model_context: ComponentModel | None = None


class MagenticOneGroupChatConfig(GroupChatConfig):
    """The config of [`MagenticOneGroupChat`][flowlib.teams.MagenticOneGroupChat]; the final
    answer prompt's default is the team's."""

    model_client: ComponentModel
    max_stalls: int = 3
    final_answer_prompt: str | None = None


def team_fields(
    team: BaseGroupChat, custom_types: Sequence[type[BaseAgentEvent | BaseChatMessage]]
) -> dict[str, Any]:
    """The fields of [`TeamConfig`][] for ``team`` (call from its ``_to_config``, with its
    message factory's custom types).

    Routers (the selector, the orchestrator) are built by the team, not configured, so
    they are left out of the participants.
    """
    if custom_types:
        names = ", ".join(message_type.__name__ for message_type in custom_types)
        skip_field(
            "custom_message_types",
            f"message classes ({names}) are Python types; pass custom_message_types= again "
            "to the loaded team (or register them) before loading saved state.",
        )
    members = [p for p in team.participants if not isinstance(p, Router)]
    termination = team.termination_condition
    return {
        "name": team.name,
        "description": team.description,
        "participants": dump_fields(members, "participants"),
        "termination_condition": (
            None if termination is None else dump_field(termination, "termination_condition")
        ),
        "max_turns": team.max_turns,
        "turn_timeout": team.turn_timeout,
    }


def group_chat_config(
    team: BaseGroupChat,
    custom_types: Sequence[type[BaseAgentEvent | BaseChatMessage]],
    emit_team_events: bool,
) -> GroupChatConfig:
    """The config of a round-robin or swarm team."""
    return GroupChatConfig(**team_fields(team, custom_types), emit_team_events=emit_team_events)


def group_chat_from_config(
    cls: Callable[..., T], config: GroupChatConfig, kinds: type | tuple[type, ...]
) -> T:
    """Build a round-robin or swarm team of ``cls`` from its config."""
    return cls(
        load_members(config, kinds),
        name=config.name,
        description=config.description,
        termination_condition=load_termination(config),
        max_turns=config.max_turns,
        emit_team_events=config.emit_team_events,
        turn_timeout=config.turn_timeout,
    )


def load_members(
    config: TeamConfig, kinds: type | tuple[type, ...] = (ChatAgent, Team)
) -> list[Any]:
    """Build the participants of a team config."""
    return load_fields(config.participants, "participants", kinds)


def load_termination(config: TeamConfig) -> TerminationCondition | None:
    """Build the termination condition of a team config, if any."""
    if config.termination_condition is None:
        return None
    condition: TerminationCondition = load_field(
        config.termination_condition, "termination_condition", TerminationCondition
    )
    return condition


def dump_graph(graph: DiGraph) -> dict[str, Any]:
    """``graph.dump()``, noting each callable edge condition as left out (restored by
    ``load_component(..., conditions={name: func})``).

    Raises:
        ComponentSerializationError: Two different callables share one name.
    """
    owners: dict[str, Any] = {}
    caches: dict[str, Any] = {}
    for source, node in graph.nodes.items():
        if node.instances is not None:
            skip_field(
                f"graph.nodes.{source}.instances",
                f"the map target `{source}` has an `instances` factory, which is code; the "
                "loaded team copies each instance from the participant's own config.",
            )
        if node.cache is not None:
            caches[source] = _dump_cache(node.cache, source)
        for index, edge in enumerate(node.edges):
            if edge.map_function is not None:
                name = edge.map or "map"
                if owners.setdefault(name, edge.map_function) is not edge.map_function:
                    refuse_field(
                        f"graph.nodes.{source}.edges[{index}].map",
                        f"two different callables are both named `{name}`, so "
                        "`load_component(..., conditions={name: func})` could not tell them "
                        "apart; define them as functions with distinct names.",
                    )
                skip_field(
                    f"graph.nodes.{source}.edges[{index}].map",
                    f"the map edge `{source} -> {edge.target}` has the map function `{name}`, "
                    f"written by name; load with `conditions={{{name!r}: func}}`.",
                )
            func = edge.condition_function
            if func is None:
                continue
            name = getattr(func, "__name__", "callable")
            if owners.setdefault(name, func) is not func:
                refuse_field(
                    f"graph.nodes.{source}.edges[{index}].condition",
                    f"two different callable edge conditions are both named `{name}`, so "
                    "`load_component(..., conditions={name: func})` could not tell them "
                    "apart; define them as functions with distinct names.",
                )
            skip_field(
                f"graph.nodes.{source}.edges[{index}].condition",
                f"the edge `{source} -> {edge.target}` has the callable condition `{name}`, "
                f"written as a marker; load with `conditions={{{name!r}: func}}`.",
            )
    data = graph.dump()
    for source, cache in caches.items():
        data["nodes"][source]["cache"] = cache
    return data


def _dump_cache(policy: CachePolicy, source: str) -> dict[str, Any]:
    """A node's cache policy in a config: its store as a component, its key function by
    name (restored from ``conditions=`` like any callable)."""
    key = None
    if policy.key is not None:
        key = getattr(policy.key, "__name__", "key")
        skip_field(
            f"graph.nodes.{source}.cache.key",
            f"the cache key function `{key}` is code, written by name; load with "
            f"`conditions={{{key!r}: func}}`.",
        )
    store = dump_field(policy.store, f"graph.nodes.{source}.cache.store")
    return {"store": store.model_dump(mode="json"), "ttl": policy.ttl, "key": key}


def _load_caches(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, CachePolicy]]:
    """Take the cache policies out of a dumped graph and build them (their stores as
    nested components, under this load's policy)."""
    nodes = data.get("nodes")
    if not isinstance(nodes, Mapping):
        return dict(data), {}
    caches: dict[str, CachePolicy] = {}
    stripped: dict[str, Any] = {}
    callables = edge_conditions()
    for name, node in nodes.items():
        if isinstance(node, Mapping) and isinstance(node.get("cache"), Mapping):
            spec = node["cache"]
            store = load_field(spec.get("store"), f"graph.nodes.{name}.cache.store", CacheStore)
            key_name = spec.get("key")
            key = None
            if key_name is not None:
                key = callables.get(str(key_name))
                if key is None:
                    raise ConditionSerializationError(
                        f"`graph.nodes.{name}.cache.key`: the cache key function "
                        f"`{key_name}` is code; pass it back with "
                        f"`load_component(..., conditions={{{str(key_name)!r}: func}})`."
                    )
            try:
                caches[name] = CachePolicy(store=store, ttl=spec.get("ttl"), key=key)
            except ValueError as exc:
                raise load_error(
                    f"the cache policy is malformed: {exc}", f"graph.nodes.{name}"
                ) from exc
            node = {k: v for k, v in node.items() if k != "cache"}
        stripped[name] = node
    return {**data, "nodes": stripped}, caches


def _callable_markers(graph: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(source, target, name)`` of every callable-condition marker in a dumped graph."""
    found: list[tuple[str, str, str]] = []
    nodes = graph.get("nodes")
    if not isinstance(nodes, Mapping):
        return found
    for source, node in nodes.items():
        edges = node.get("edges") if isinstance(node, Mapping) else None
        for edge in edges if isinstance(edges, Sequence) else ():
            condition = edge.get("condition") if isinstance(edge, Mapping) else None
            if isinstance(condition, Mapping) and condition.get("kind") == "callable":
                found.append((str(source), str(edge.get("target")), str(condition.get("name"))))
            mapper = edge.get("map") if isinstance(edge, Mapping) else None
            if isinstance(mapper, str):
                found.append((str(source), str(edge.get("target")), mapper))
    return found


def load_graph(data: Mapping[str, Any]) -> DiGraph:
    """Load a dumped graph, with the callables of this load's ``conditions=``.

    Raises:
        ConditionSerializationError: A callable condition was not passed back.
        ComponentLoadError: The graph is malformed.
    """
    from pydantic import ValidationError

    conditions = edge_conditions()
    data, caches = _load_caches(data)
    missing = [
        (source, target, name)
        for source, target, name in _callable_markers(data)
        if name not in conditions
    ]
    if missing:
        edges = ", ".join(f"`{s} -> {t}` (`{n}`)" for s, t, n in missing)
        names = ", ".join(sorted({f"{n!r}: <function>" for _, _, n in missing}))
        where = load_error("", "graph").path
        raise ConditionSerializationError(
            f"`{where}`: the edges {edges} had callable conditions, which a config cannot "
            f"hold; pass them back with `load_component(..., conditions={{{names}}})`.",
            edges=[(s, t) for s, t, _ in missing],
        )
    try:
        graph = DiGraph.load(
            dict(data), conditions=conditions, maps=cast(Mapping[str, MapFunction], conditions)
        )
    except ValidationError as exc:
        raise load_error(f"the graph is malformed: {exc}", "graph") from exc
    for name, policy in caches.items():
        if name in graph.nodes:
            graph.nodes[name].cache = policy
    return graph
