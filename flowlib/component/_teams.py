"""Configs of the teams (component type ``"team"``).

Participants, the termination condition and the model clients are nested component
models. A ``GraphFlow`` carries its graph as [`DiGraph.dump`][flowlib.graph.DiGraph.dump] output:
callable edge conditions appear there as ``{"kind": "callable", "name": ...}`` markers and are
restored from ``load_component(..., conditions={name: func})``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..base import ChatAgent, Team, TerminationCondition
from ..errors import ConditionSerializationError
from ..graph import DiGraph, Router
from ..messages import _BUILTIN_MESSAGE_TYPES
from ..model_context import ChatCompletionContext
from ..models import ChatCompletionClient
from ..teams import (
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from ..teams._magentic_one import ORCHESTRATOR_FINAL_ANSWER_PROMPT
from ..teams._selector import DEFAULT_SELECTOR_PROMPT
from ._codec import Dumper, Loader
from ._model import ComponentModel
from ._registry import ComponentSpec

__all__ = ["team_specs"]

_AUTOGEN = "autogen_agentchat.teams."


class TeamConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    name: str | None = None
    description: str | None = None
    participants: list[ComponentModel]
    termination_condition: ComponentModel | None = None
    max_turns: int | None = None


class GroupChatConfig(TeamConfig):
    emit_team_events: bool = False


class GraphFlowConfig(TeamConfig):
    graph: dict[str, Any]


class SelectorGroupChatConfig(GroupChatConfig):
    model_client: ComponentModel
    selector_prompt: str = DEFAULT_SELECTOR_PROMPT
    allow_repeated_speaker: bool = False
    max_selector_attempts: int = 3
    model_client_streaming: bool = False
    model_context: ComponentModel | None = None


class MagenticOneGroupChatConfig(GroupChatConfig):
    model_client: ComponentModel
    max_stalls: int = 3
    final_answer_prompt: str = ORCHESTRATOR_FINAL_ANSWER_PROMPT


# --- shared parts ------------------------------------------------------------------------


def _team_base(team: Any, dumper: Dumper) -> dict[str, Any]:
    custom = [
        registered
        for registered in team._message_factory._types.values()
        if registered not in _BUILTIN_MESSAGE_TYPES
    ]
    if custom:
        names = ", ".join(message_type.__name__ for message_type in custom)
        dumper.skip(
            "custom_message_types",
            f"message classes ({names}) are Python types; pass custom_message_types= again "
            "to the loaded team (or register them) before loading saved state.",
        )
    members = [p for p in team.participants if not isinstance(p, Router)]
    config: dict[str, Any] = {
        "name": team.name,
        "description": team.description,
        "participants": dumper.components(members, "participants"),
    }
    if team.termination_condition is not None:
        config["termination_condition"] = dumper.component(
            team.termination_condition, "termination_condition"
        )
    if team.max_turns is not None:
        config["max_turns"] = team.max_turns
    return config


def _group_chat_base(team: Any, dumper: Dumper) -> dict[str, Any]:
    config = _team_base(team, dumper)
    config["emit_team_events"] = team._emit_team_events
    return config


def _members(parsed: TeamConfig, loader: Loader, kinds: type | tuple[type, ...]) -> list[Any]:
    return loader.components(parsed.participants, "participants", kinds)


def _termination(parsed: TeamConfig, loader: Loader) -> TerminationCondition | None:
    if parsed.termination_condition is None:
        return None
    condition: TerminationCondition = loader.component(
        parsed.termination_condition, "termination_condition", TerminationCondition
    )
    return condition


# --- RoundRobinGroupChat and Swarm --------------------------------------------------------


def _group_chat_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(GroupChatConfig, config)
    kinds: type | tuple[type, ...] = ChatAgent if target is Swarm else (ChatAgent, Team)
    members = _members(parsed, loader, kinds)
    termination = _termination(parsed, loader)
    return loader.build(
        f"{target.__name__} `{parsed.name}`",
        lambda: target(
            members,
            name=parsed.name,
            description=parsed.description,
            termination_condition=termination,
            max_turns=parsed.max_turns,
            emit_team_events=parsed.emit_team_events,
        ),
    )


# --- GraphFlow ---------------------------------------------------------------------------


def _graph_flow_to(team: Any, dumper: Dumper) -> Mapping[str, Any]:
    config = _team_base(team, dumper)
    graph: DiGraph = team.graph
    owners: dict[str, Any] = {}
    for source, node in graph.nodes.items():
        for index, edge in enumerate(node.edges):
            func = edge.condition_function
            if func is None:
                continue
            name = getattr(func, "__name__", "callable")
            if owners.setdefault(name, func) is not func:
                dumper.refuse(
                    f"graph.nodes.{source}.edges[{index}].condition",
                    f"two different callable edge conditions are both named `{name}`, so "
                    "`load_component(..., conditions={name: func})` could not tell them "
                    "apart; define them as functions with distinct names.",
                )
            dumper.skip(
                f"graph.nodes.{source}.edges[{index}].condition",
                f"the edge `{source} -> {edge.target}` has the callable condition `{name}`, "
                f"written as a marker; load with `conditions={{{name!r}: func}}`.",
            )
    config["graph"] = graph.dump()
    return config


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
    return found


def _graph_flow_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(GraphFlowConfig, config)
    missing = [
        (source, edge_target, name)
        for source, edge_target, name in _callable_markers(parsed.graph)
        if name not in loader.conditions
    ]
    if missing:
        edges = ", ".join(f"`{s} -> {t}` (`{n}`)" for s, t, n in missing)
        names = ", ".join(sorted({f"{n!r}: <function>" for _, _, n in missing}))
        raise ConditionSerializationError(
            f"`{loader.path('graph')}`: the edges {edges} had callable conditions, which "
            f"a config cannot hold; pass them back with "
            f"`load_component(..., conditions={{{names}}})`.",
            edges=[(s, t) for s, t, _ in missing],
        )
    try:
        graph = DiGraph.load(parsed.graph, conditions=loader.conditions)
    except ValidationError as exc:
        raise loader.error(f"the graph is malformed: {exc}", "graph") from exc
    members = _members(parsed, loader, (ChatAgent, Team))
    termination = _termination(parsed, loader)
    return loader.build(
        f"GraphFlow `{parsed.name}`",
        lambda: target(
            members,
            graph,
            name=parsed.name,
            description=parsed.description,
            termination_condition=termination,
            max_turns=parsed.max_turns,
        ),
    )


# --- SelectorGroupChat -------------------------------------------------------------------


def _selector_to(team: Any, dumper: Dumper) -> Mapping[str, Any]:
    router = team.selector
    for field_name, value in (
        ("selector_func", router._selector_func),
        ("candidate_func", router._candidate_func),
    ):
        if value is not None:
            dumper.skip(
                field_name,
                "it is a Python callable (documented as ignored by configs); the loaded "
                "team selects speakers with its model.",
            )
    config = _group_chat_base(team, dumper)
    config["model_client"] = dumper.component(router._model_client, "model_client")
    config["selector_prompt"] = router._prompt
    config["allow_repeated_speaker"] = router._allow_repeated
    config["max_selector_attempts"] = router._max_attempts
    config["model_client_streaming"] = router._streaming
    config["model_context"] = dumper.component(router._context, "model_context")
    return config


def _selector_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(SelectorGroupChatConfig, config)
    members = _members(parsed, loader, (ChatAgent, Team))
    client = loader.component(parsed.model_client, "model_client", ChatCompletionClient)
    termination = _termination(parsed, loader)
    context = (
        None
        if parsed.model_context is None
        else loader.component(parsed.model_context, "model_context", ChatCompletionContext)
    )
    return loader.build(
        f"SelectorGroupChat `{parsed.name}`",
        lambda: target(
            members,
            client,
            name=parsed.name,
            description=parsed.description,
            termination_condition=termination,
            max_turns=parsed.max_turns,
            selector_prompt=parsed.selector_prompt,
            allow_repeated_speaker=parsed.allow_repeated_speaker,
            max_selector_attempts=parsed.max_selector_attempts,
            emit_team_events=parsed.emit_team_events,
            model_client_streaming=parsed.model_client_streaming,
            model_context=context,
        ),
    )


# --- MagenticOneGroupChat ----------------------------------------------------------------


def _magentic_to(team: Any, dumper: Dumper) -> Mapping[str, Any]:
    config = _group_chat_base(team, dumper)
    config["model_client"] = dumper.component(team._model_client, "model_client")
    config["max_stalls"] = team.max_stalls
    config["final_answer_prompt"] = team.final_answer_prompt
    return config


def _magentic_from(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(MagenticOneGroupChatConfig, config)
    members = _members(parsed, loader, ChatAgent)
    client = loader.component(parsed.model_client, "model_client", ChatCompletionClient)
    termination = _termination(parsed, loader)
    return loader.build(
        f"MagenticOneGroupChat `{parsed.name}`",
        lambda: target(
            members,
            client,
            name=parsed.name,
            description=parsed.description,
            termination_condition=termination,
            max_turns=parsed.max_turns,
            max_stalls=parsed.max_stalls,
            final_answer_prompt=parsed.final_answer_prompt,
            emit_team_events=parsed.emit_team_events,
        ),
    )


def _spec(cls: type, to_config: Any, from_config: Any) -> ComponentSpec:
    return ComponentSpec(
        cls=cls,
        provider=f"flowlib.teams.{cls.__name__}",
        component_type="team",
        to_config=to_config,
        from_config=from_config,
        aliases=(_AUTOGEN + cls.__name__, cls.__name__),
    )


def team_specs() -> list[ComponentSpec]:
    """The specs of the built-in teams."""
    return [
        _spec(RoundRobinGroupChat, _group_chat_base, _group_chat_from),
        _spec(Swarm, _group_chat_base, _group_chat_from),
        _spec(GraphFlow, _graph_flow_to, _graph_flow_from),
        _spec(SelectorGroupChat, _selector_to, _selector_from),
        _spec(MagenticOneGroupChat, _magentic_to, _magentic_from),
    ]
