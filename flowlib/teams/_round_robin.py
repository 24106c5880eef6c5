"""RoundRobinGroupChat: participants take turns in a ring."""

from __future__ import annotations

from collections.abc import Sequence

from typing_extensions import Unpack

from ..base import ChatAgent, Team
from ..graph import DiGraph, GraphPattern
from ..graph.internal import ring_graph
from ._config import AUTOGEN_TEAMS, GroupChatConfig
from ._group_chat import BaseGroupChat
from ._options import TeamOptions

__all__ = ["RoundRobinGroupChat"]


ROUND_ROBIN = GraphPattern(
    "round_robin",
    title="round-robin ring",
    note="(a loop without a conditional edge: allowed, the bound ends it)",
    loops_without_exit=True,
)
"""The round-robin pattern: a ring whose loop the team's bound ends."""


class RoundRobinGroupChat(
    BaseGroupChat,
    pattern=ROUND_ROBIN,
    provider="flowlib.teams.RoundRobinGroupChat",
    aliases=(AUTOGEN_TEAMS + "RoundRobinGroupChat", "RoundRobinGroupChat"),
):
    """A team whose participants take turns in list order, each seeing every message.

    It compiles to a ring ``p0 -> p1 -> ... -> p0`` (a self-loop for one participant):
    a loop with no conditional edge, bounded by the termination condition or
    ``max_turns``. A team with neither may be built (to dump or draw it); running it
    raises ``UnboundedLoopError``. After a stop, the next run resumes with the
    participant after the last speaker.

    Args:
        participants: Agents or nested teams, in speaking order.
        **options: The [`TeamOptions`][flowlib.teams.TeamOptions]; ``name`` defaults to
            ``"RoundRobinGroupChat"``, ``description`` to ``"A team of agents."``.

    Raises:
        ValueError: No participants or duplicate names.

    Examples:
        >>> import asyncio
        >>> from flowlib.testing import ScriptedAgent
        >>> team = RoundRobinGroupChat(
        ...     [ScriptedAgent("a", ["hi"]), ScriptedAgent("b", ["hello"])], max_turns=2
        ... )
        >>> result = asyncio.run(team.run(task="start"))
        >>> [m.source for m in result.messages], result.stop_reason
        (['user', 'a', 'b'], 'Maximum number of turns 2 reached.')
    """

    DEFAULT_NAME = "RoundRobinGroupChat"
    component_config_schema = GroupChatConfig

    def __init__(
        self, participants: Sequence[ChatAgent | Team], **options: Unpack[TeamOptions]
    ) -> None:
        super().__init__(participants, **options)

    def build_graph(self, participants: Sequence[ChatAgent | Team]) -> DiGraph:
        """The ring ``p0 -> p1 -> ... -> p0``."""
        return ring_graph(participants)
