"""RoundRobinGroupChat: participants take turns in a ring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..base import ChatAgent, Team, TerminationCondition
from ..checkpoint import CheckpointStore
from ..component._registry import register_builtin
from ..graph._shapes import ring_graph
from ..messages import BaseAgentEvent, BaseChatMessage
from ._arguments import check_team_arguments
from ._config import (
    AUTOGEN_TEAMS,
    GroupChatConfig,
    group_chat_config,
    group_chat_from_config,
)
from ._durable import Durability
from ._group_chat import BaseGroupChat, reject_runtime

__all__ = ["RoundRobinGroupChat"]


class RoundRobinGroupChat(BaseGroupChat):
    """A team whose participants take turns in list order, each seeing every message.

    It compiles to a ring ``p0 -> p1 -> ... -> p0`` (a self-loop for one participant):
    a loop with no conditional edge, bounded by the termination condition or
    ``max_turns``. A team with neither may be built (to dump or draw it); running it
    raises ``UnboundedLoopError``. After a stop, the next run resumes with the
    participant after the last speaker.

    Args:
        participants: Agents or nested teams, in speaking order.
        name: Defaults to ``"RoundRobinGroupChat"``.
        description: Defaults to ``"A team of agents."``.
        termination_condition: Stops the run when it fires.
        max_turns: At most this many turns per run.
        runtime: Only ``None`` (flowlib has no separate runtime).
        custom_message_types: Extra message classes the participants produce.
        turn_timeout: Seconds each turn may take; past it the turn is cancelled and
            the run fails resumably (``run()`` re-runs the turn). A node's own
            ``timeout`` wins. See docs/graph-semantics.md.
        emit_team_events: Stream a ``SelectSpeakerEvent`` before each turn.

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
    DEFAULT_DESCRIPTION = "A team of agents."
    component_provider_override = "flowlib.teams.RoundRobinGroupChat"

    # --- the component protocol (configs in teams/_config.py) ----------------------------

    component_config_schema: ClassVar[type[BaseModel]] = GroupChatConfig

    def _to_config(self) -> GroupChatConfig:
        custom = self._message_factory.custom_types
        return group_chat_config(self, custom, self._emit_team_events)

    @classmethod
    def _from_config(cls, config: GroupChatConfig) -> Self:
        return group_chat_from_config(cls, config, (ChatAgent, Team))

    def __init__(
        self,
        participants: Sequence[ChatAgent | Team],
        *,
        name: str | None = None,
        description: str | None = None,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = None,
        runtime: Any = None,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
        emit_team_events: bool = False,
        checkpoint_store: CheckpointStore | None = None,
        durability: Durability = "sync",
        turn_timeout: float | None = None,
    ) -> None:
        reject_runtime(runtime)
        check_team_arguments(
            "RoundRobinGroupChat",
            participants,
            termination_condition=termination_condition,
            max_turns=max_turns,
        )
        super().__init__(
            name=name or self.DEFAULT_NAME,
            description=description or self.DEFAULT_DESCRIPTION,
            participants=participants,
            graph=ring_graph(participants),
            termination_condition=termination_condition,
            max_turns=max_turns,
            custom_message_types=custom_message_types,
            allow_unconditional_cycles=True,
            emit_team_events=emit_team_events,
            checkpoint_store=checkpoint_store,
            durability=durability,
            turn_timeout=turn_timeout,
        )


register_builtin(
    RoundRobinGroupChat,
    "flowlib.teams.RoundRobinGroupChat",
    aliases=(AUTOGEN_TEAMS + "RoundRobinGroupChat", "RoundRobinGroupChat"),
)
