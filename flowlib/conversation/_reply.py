"""``AgentReply``: the result of a turn, and the handle to continue its conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..base import TaskResult
from ..messages import BaseChatMessage
from ._events import Event
from ._stream import MemoryStream

if TYPE_CHECKING:
    from ._agent import Agent
    from ._run import AgentRun

__all__ = ["AgentReply"]


class AgentReply:
    """The final result of one turn; [`ask`][flowlib.conversation.AgentReply.ask] /
    [`run`][flowlib.conversation.AgentReply.run] continue its conversation.

    A reply remembers the conversation's state as this turn left it (the model context
    of the agent, or the team's and its participants' state). Continuing a reply starts
    the next turn from that state, with the conversation's history; continuing an older
    reply again branches the conversation from that point. Every branch keeps
    publishing to the conversation's [`stream`][flowlib.conversation.AgentReply.stream].

    Attributes are read-only; build replies with ``Agent.ask`` / ``Agent.run``.
    """

    def __init__(
        self,
        *,
        agent: Agent,
        response: BaseChatMessage,
        task_result: TaskResult,
        events: Sequence[Event],
        state: Mapping[str, Any],
        stream: MemoryStream,
    ) -> None:
        self._agent = agent
        self._response = response
        self._task_result = task_result
        self._events = tuple(events)
        self._state = state
        self._stream = stream

    @property
    def response(self) -> BaseChatMessage:
        """The turn's final chat message: the agent's answer (a ``TextMessage``, or a
        ``ToolCallSummaryMessage`` / ``StructuredMessage`` / ``HandoffMessage`` as the
        agent produces them) or, for a team, its last message."""
        return self._response

    @property
    def body(self) -> str:
        """The text of [`response`][flowlib.conversation.AgentReply.response]
        (``response.to_text()``)."""
        return self._response.to_text()

    @property
    def task_result(self) -> TaskResult:
        """The turn as flowlib's ``TaskResult``: the input messages, the agent's (or
        team's) events and messages in flowlib's own types. Chunks, human-input events
        and messages enqueued mid-turn are only in
        [`events`][flowlib.conversation.AgentReply.events]."""
        return self._task_result

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event the turn emitted, the closing [`ReplyEvent`][flowlib.conversation.ReplyEvent]
        included."""
        return self._events

    @property
    def stream(self) -> MemoryStream:
        """The conversation's event stream."""
        return self._stream

    @property
    def agent(self) -> Agent:
        """The agent that replied."""
        return self._agent

    async def ask(self, message: str | BaseChatMessage | Sequence[BaseChatMessage]) -> AgentReply:
        """Continue this conversation: run the next turn and return its reply.

        Exactly ``run(message)`` + ``await result()``.

        Args:
            message: A string (a user ``TextMessage``), a chat message or a list of them.

        Raises:
            Exception: Whatever made the turn fail.
        """
        async with self.run(message) as run:
            return await run.result()

    def run(self, message: str | BaseChatMessage | Sequence[BaseChatMessage]) -> AgentRun:
        """Open the next turn of this conversation, to watch and drive (see ``AgentRun``)."""
        return self._agent._open_run(message, state=self._state, stream=self._stream)

    def __repr__(self) -> str:
        return f"AgentReply(agent={self._agent.name!r}, body={self.body!r})"
