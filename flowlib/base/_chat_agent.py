"""The agent protocol every participant of a team implements."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from .._cancellation import CancellationToken
from ..errors import AgentError
from ..messages import BaseAgentEvent, BaseChatMessage
from ._task import Member, TaskResult

__all__ = ["ChatAgent", "Response", "last_item"]

T = TypeVar("T")


async def last_item(
    stream: AsyncGenerator[object, None], kind: type[T], agent: str, producer: str
) -> T:
    """Read ``stream`` to its end and return its last ``kind`` item (the stream is closed
    when this ends, early or not).

    Args:
        stream: What ``producer()`` of the agent named ``agent`` yields.
        kind: The type of the item the stream must end with (``Response``, ``TaskResult``).
        agent: The agent's name, for the error.
        producer: The method that made the stream, for the error.

    Raises:
        AgentError: The stream yielded no ``kind`` item.
    """
    last: T | None = None
    async with aclosing(stream):
        async for item in stream:
            if isinstance(item, kind):
                last = item
    if last is None:
        raise AgentError(
            f"Agent `{agent}`'s {producer}() ended without yielding a {kind.__name__}.",
            agent=agent,
        )
    return last


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

    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run one step on ``task`` and return the task, the events and the reply: the
        [`TaskResult`][flowlib.base.TaskResult] that
        [`run_stream`][flowlib.base.ChatAgent.run_stream] ends with.

        Args:
            task: A string (sent as ``TextMessage(source="user")``), a chat message or a
                list of them. ``None`` runs on no new messages.
            cancellation_token: Cancels the step; the await raises ``CancelledError``.
            output_task_messages: Whether the task messages start ``TaskResult.messages``.

        Raises:
            AgentError: ``run_stream`` ended without a ``TaskResult``.
        """
        stream = self.run_stream(
            task=task,
            cancellation_token=cancellation_token,
            output_task_messages=output_task_messages,
        )
        return await last_item(stream, TaskResult, self.name, "run_stream")

    @abstractmethod
    def run_stream(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Run one step, yielding messages and events, then the TaskResult."""

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
