"""GraphFlow: a team that runs its participants along a directed graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import Self, Unpack

from ..agents import FunctionAgent, NodeFunction
from ..base import ChatAgent, Team
from ..graph import DiGraph
from ._arguments import check_team_arguments
from ._config import AUTOGEN_TEAMS, TeamConfig, dump_graph, load_graph, team_arguments
from ._group_chat import BaseGroupChat
from ._options import TeamOptions

__all__ = ["GraphFlow", "GraphFlowConfig"]


class GraphFlowConfig(TeamConfig):
    """The config of [`GraphFlow`][flowlib.teams.GraphFlow]: the graph as
    [`DiGraph.dump`][flowlib.graph.DiGraph.dump] writes it."""

    graph: dict[str, Any]


class GraphFlow(
    BaseGroupChat,
    provider="flowlib.teams.GraphFlow",
    aliases=(AUTOGEN_TEAMS + "GraphFlow", "GraphFlow"),
):
    """A team that follows a [`DiGraph`][flowlib.graph.DiGraph]: sequences, fan-out, joins,
    conditional branches and loops with exits.

    Nodes start eagerly as soon as their activation is satisfied; independent nodes run
    concurrently. See "Graph semantics" in the docs for every rule.

    Args:
        participants: The agents, nested teams and function nodes of the graph
            (``DiGraphBuilder.get_participants()``). Plain functions are wrapped in
            [`FunctionAgent`][flowlib.agents.FunctionAgent].
        graph: The graph (``DiGraphBuilder.build()``).
        **options: The [`TeamOptions`][flowlib.teams.TeamOptions]; ``name`` defaults to
            ``"GraphFlow"``, ``description`` to ``"A team of agents"``.

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
    component_config_schema = GraphFlowConfig

    def __init__(
        self,
        participants: Sequence[ChatAgent | Team | NodeFunction],
        graph: DiGraph,
        **options: Unpack[TeamOptions],
    ) -> None:
        check_team_arguments("GraphFlow", participants, functions=True, graph=graph)
        members: list[ChatAgent | Team] = [
            p if isinstance(p, (ChatAgent, Team)) else FunctionAgent(p) for p in participants
        ]
        super().__init__(members, graph, **options)

    def config_fields(self) -> dict[str, Any]:
        """The graph, as ``DiGraph.dump`` writes it (callables by name)."""
        return {"graph": dump_graph(self.graph)}

    @classmethod
    def _from_config(cls, config: Any) -> Self:
        members, options = team_arguments(cls, config)
        graph = load_graph(options.pop("graph"))
        return cls(members, graph, **options)
