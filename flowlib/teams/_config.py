"""The declarative configs of the teams (component type ``"team"``) and the parts every
team's ``_to_config`` / ``_from_config`` shares.

Participants, the termination condition and the model clients are nested component
models. A ``GraphFlow`` carries its graph as [`DiGraph.dump`][flowlib.graph.DiGraph.dump]
output: callable edge conditions appear there as ``{"kind": "callable", "name": ...}``
markers and are restored from ``load_component(..., conditions={name: func})``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from ..base import ChatAgent, Team, TerminationCondition
from ..component import (
    ComponentModel,
    dump_field,
    edge_conditions,
    load_error,
    load_field,
    load_fields,
    refuse_field,
    register_component,
    skip_field,
)
from ..component.internal import register_builtin
from ..errors import ConditionSerializationError, ContractError
from ..graph import CachePolicy, DiGraph, MapFunction
from ..models import CacheStore

__all__ = [
    "AUTOGEN_TEAMS",
    "GroupChatConfig",
    "TeamConfig",
    "dump_graph",
    "load_graph",
    "load_members",
    "load_termination",
    "register_team",
    "team_arguments",
]

AUTOGEN_TEAMS = "autogen_agentchat.teams."
"""The prefix of AutoGen's provider paths of the teams (their configs load too)."""


class TeamConfig(BaseModel):
    """What every team's config holds; a team's ``component_config_schema`` subclasses it
    with the team's own fields (see
    [`BaseGroupChat.config_fields`][flowlib.teams.BaseGroupChat.config_fields])."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str | None = None
    description: str | None = None
    participants: list[ComponentModel]
    termination_condition: ComponentModel | None = None
    max_turns: int | None = None
    turn_timeout: float | None = None


class GroupChatConfig(TeamConfig):
    """A team config with ``emit_team_events`` (every built-in team but GraphFlow)."""

    emit_team_events: bool = False


def register_team(cls: type, provider: str, aliases: Sequence[str] = ()) -> None:
    """Register the team class ``cls`` under ``provider`` (its class keyword
    ``provider=``), so configs naming it load."""
    if cls.__module__.partition(".")[0] == "flowlib":
        # flowlib's own teams register while flowlib.teams is imported, without loading
        # every other built-in component first.
        register_builtin(cls, provider, aliases=aliases)
    else:
        register_component(cls, provider=provider, aliases=aliases)


def team_arguments(cls: type, config: BaseModel) -> tuple[list[Any], dict[str, Any]]:
    """The participants and keyword arguments that build a team of ``cls`` from
    ``config`` (a [`TeamConfig`][] of its ``component_config_schema``).

    The common fields are passed as they are; each field the schema adds is passed as
    the keyword of the same name unless it is None (the constructor's default then
    applies), a nested component built first. The kinds the constructor's annotations
    name (``participants: Sequence[ChatAgent]``, ``model_client: ChatCompletionClient``)
    are checked while loading, so a wrong component is a load error at its field.
    """
    if not isinstance(config, TeamConfig):
        raise ContractError(
            f"{cls.__name__}'s component_config_schema must subclass TeamConfig, not "
            f"{type(config).__name__}."
        )
    hints = _constructor_hints(cls)
    kinds = _kinds(hints.get("participants")) or (ChatAgent, Team)
    members = load_fields(config.participants, "participants", kinds)
    options: dict[str, Any] = {
        "name": config.name,
        "description": config.description,
        "termination_condition": load_termination(config),
        "max_turns": config.max_turns,
        "turn_timeout": config.turn_timeout,
    }
    for field in type(config).model_fields:
        if field in TeamConfig.model_fields:
            continue
        value = getattr(config, field)
        if value is None:
            continue
        if isinstance(value, ComponentModel):
            value = load_field(value, field, _kinds(hints.get(field)) or object)
        options[field] = value
    return members, options


def _constructor_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls.__init__)  # type: ignore[misc]
    except Exception:  # an annotation that does not resolve: no kinds to check
        return {}


def _kinds(hint: Any) -> tuple[type, ...]:
    """The classes an annotation names, through unions and sequences (None left out)."""
    if hint is None or hint is type(None):
        return ()
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return (hint,)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) or (
        isinstance(origin, type) and issubclass(origin, Sequence)
    ):
        found: list[type] = []
        for arg in typing.get_args(hint):
            found.extend(kind for kind in _kinds(arg) if kind not in found)
        return tuple(found)
    return ()


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
