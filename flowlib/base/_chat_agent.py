"""The agent protocol every participant of a team implements."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .._cancellation import CancellationToken
from ..messages import BaseAgentEvent, BaseChatMessage
from ._task import Member

__all__ = ["ChatAgent", "Response"]


@dataclass
class Response:
    """What an agent returns from one call of ``on_messages``.

    Args:
        chat_message: The message the agent publishes to the team.
        inner_messages: Events and messages of the agent's "thought process", in order.
    """

    chat_message: BaseChatMessage
    inner_messages: Sequence[BaseAgentEvent | BaseChatMessage] | None = field(default=None)


class ChatAgent(Member):
    """The interface of a chat agent: stateful, fed only the *new* messages on each call.

    Agents are also task runners ([`TaskRunner`][flowlib.base.TaskRunner]): ``run`` and
    ``run_stream`` run one step on a task, and ``run`` returns what ``run_stream`` ends
    with. (The protocol is not a base class, so that ``isinstance`` checks against agents
    stay cheap on the executor's paths.)
    """

    component_type: ClassVar[str] = "agent"

    @property
    @abstractmethod
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """The chat message types the agent may put in ``Response.chat_message``."""

    @abstractmethod
    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Handle the new messages and return a response."""

    @abstractmethod
    def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Handle the new messages, yielding events as they happen and the Response last."""

    @abstractmethod
    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Return the agent to its initial state."""

    @abstractmethod
    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        """Called when the team pauses while the agent runs."""

    @abstractmethod
    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        """Called when the team resumes after a pause."""

    @abstractmethod
    async def save_state(self) -> Mapping[str, Any]:
        """Return the agent's state as JSON-serialisable data."""

    @abstractmethod
    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore state returned by [`save_state`][flowlib.base.ChatAgent.save_state]."""

    @abstractmethod
    async def close(self) -> None:
        """Release resources the agent holds."""
