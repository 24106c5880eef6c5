"""GraphFlow: a team that runs its participants along a directed graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..agents import FunctionAgent, NodeFunction
from ..base import ChatAgent, Team, TerminationCondition
from ..checkpoint import CheckpointStore
from ..component._registry import register_builtin
from ..graph import DiGraph
from ..messages import BaseAgentEvent, BaseChatMessage
from ._arguments import check_team_arguments
from ._config import (
    AUTOGEN_TEAMS,
    GraphFlowConfig,
    dump_graph,
    load_graph,
    load_members,
    load_termination,
    team_fields,
)
from ._durable import Durability
from ._group_chat import BaseGroupChat, reject_runtime

__all__ = ["GraphFlow"]


class GraphFlow(BaseGroupChat):
    """A team that follows a [`DiGraph`][flowlib.graph.DiGraph]: sequences, fan-out, joins,
    conditional branches and loops with exits.

    Nodes start eagerly as soon as their activation is satisfied; independent nodes run
    concurrently. See "Graph semantics" in the docs for every rule.

    Args:
        participants: The agents, nested teams and function nodes of the graph
            (``DiGraphBuilder.get_participants()``). Plain functions are wrapped in
            [`FunctionAgent`][flowlib.agents.FunctionAgent].
        graph: The graph (``DiGraphBuilder.build()``).
        name: Defaults to ``"GraphFlow"``.
        description: Defaults to ``"A team of agents"``.
        termination_condition: Stops the run when it fires.
        max_turns: At most this many turns per run.
        runtime: Accepted for AutoGen compatibility; flowlib has no separate runtime, so
            only ``None`` is allowed.
        custom_message_types: Extra message classes the participants produce.
        turn_timeout: Seconds each turn may take; past it the turn is cancelled and
            the run fails resumably (``run()`` re-runs the turn). A node's own
            ``timeout`` wins. See docs/graph-semantics.md.

    Raises:
        ValueError: For duplicate participant names, an invalid graph (e.g. a cycle
            without exit), participants that do not match the graph's nodes, or a loop
            with neither a termination condition nor ``max_turns``.

    Examples:
        >>> import asyncio
        >>> from flowlib.teams import DiGraphBuilder
        >>> def draft(messages): return "a draft"
        >>> def review(messages): return "APPROVE"
        >>> builder = DiGraphBuilder().add_node(draft).add_node(review)
        >>> graph = builder.add_edge("draft", "review").build()
        >>> flow = GraphFlow(builder.get_participants(), graph)
        >>> result = asyncio.run(flow.run(task="write"))
        >>> [m.to_text() for m in result.messages]
        ['write', 'a draft', 'APPROVE']
    """

    DEFAULT_NAME = "GraphFlow"
    DEFAULT_DESCRIPTION = "A team of agents"
    component_provider_override = "flowlib.teams.GraphFlow"

    # --- the component protocol (configs in teams/_config.py) ----------------------------

    component_config_schema: ClassVar[type[BaseModel]] = GraphFlowConfig

    def _to_config(self) -> GraphFlowConfig:
        fields = team_fields(self, self._message_factory.custom_types)
        return GraphFlowConfig(**fields, graph=dump_graph(self.graph))

    @classmethod
    def _from_config(cls, config: GraphFlowConfig) -> Self:
        graph = load_graph(config.graph)
        return cls(
            load_members(config),
            graph,
            name=config.name,
            description=config.description,
            termination_condition=load_termination(config),
            max_turns=config.max_turns,
            turn_timeout=config.turn_timeout,
        )

    def __init__(
        self,
        participants: Sequence[ChatAgent | Team | NodeFunction],
        graph: DiGraph,
        *,
        name: str | None = None,
        description: str | None = None,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = None,
        runtime: Any = None,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
        checkpoint_store: CheckpointStore | None = None,
        durability: Durability = "sync",
        turn_timeout: float | None = None,
    ) -> None:
        reject_runtime(runtime)
        check_team_arguments(
            "GraphFlow",
            participants,
            termination_condition=termination_condition,
            max_turns=max_turns,
            functions=True,
            graph=graph,
        )
        members: list[ChatAgent | Team] = [
            p if isinstance(p, (ChatAgent, Team)) else FunctionAgent(p) for p in participants
        ]
        super().__init__(
            name=name or self.DEFAULT_NAME,
            description=description or self.DEFAULT_DESCRIPTION,
            participants=members,
            graph=graph,
            termination_condition=termination_condition,
            max_turns=max_turns,
            custom_message_types=custom_message_types,
            checkpoint_store=checkpoint_store,
            durability=durability,
            turn_timeout=turn_timeout,
        )


register_builtin(
    GraphFlow,
    "flowlib.teams.GraphFlow",
    aliases=(AUTOGEN_TEAMS + "GraphFlow", "GraphFlow"),
)
