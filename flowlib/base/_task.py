"""Task results and the ``run`` / ``run_stream`` protocol shared by agents and teams."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Protocol, TypeVar, cast, runtime_checkable

from .._cancellation import CancellationToken
from ..component.internal import ComponentBase
from ..errors import AgentError, InvalidArgumentTypeError
from ..messages import BaseAgentEvent, BaseChatMessage

__all__ = ["Member", "TaskResult", "TaskRunner", "last_item"]


@dataclass
class TaskResult:
    """The outcome of running a task.

    Args:
        messages: Every message and event of the run, task messages first (unless
            ``output_task_messages=False``); streaming chunks are not kept.
        stop_reason: Why the run stopped, or ``None`` (an agent's single step).
        run_id: Which run of a team this was (the ``run_id`` given to ``run()`` or the one
            generated for it); ``None`` for an agent's run.
    """

    messages: Sequence[BaseAgentEvent | BaseChatMessage]
    stop_reason: str | None = None
    run_id: str | None = None


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


class Member(ComponentBase, ABC):
    """What agents ([`ChatAgent`][flowlib.base.ChatAgent]) and teams
    ([`Team`][flowlib.base.Team]) have in common as members of a team: a name, a
    description, and ``run`` / ``run_stream`` (a team's take ``run_id`` and ``fork_from``
    too, so `Team` declares its own)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The name, unique among the members of the team it is in."""

    @property
    @abstractmethod
    def description(self) -> str:
        """What it does; teams read it to choose who speaks next."""

    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run ``task`` and return the [`TaskResult`][flowlib.base.TaskResult] that
        [`run_stream`][flowlib.base.ChatAgent.run_stream] ends with (for an agent, one step:
        the task, the events and the reply).

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
        """Run the task, yielding messages and events, then the TaskResult."""


@runtime_checkable
class TaskRunner(Protocol):
    """Anything with ``run`` and ``run_stream``: agents and teams."""

    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run the task and return its result."""
        ...

    def run_stream(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Run the task, yielding messages and events, then the
        [`TaskResult`][flowlib.base.TaskResult]."""
        ...


def task_messages(
    task: str | BaseChatMessage | Sequence[BaseChatMessage] | None,
) -> list[BaseChatMessage]:
    """Normalise a ``task`` argument to a list of chat messages.

    A string becomes ``TextMessage(content=task, source="user")``.

    Raises:
        InvalidArgumentTypeError: If ``task`` (or an item of it) is not a string or a chat
            message (a ``TypeError`` and, as in AutoGen, a ``ValueError``).
    """
    from ..messages import TextMessage
    from ._arguments import kind_of

    expected = "a str, a chat message (e.g. TextMessage) or a list of chat messages"
    if task is None:
        return []
    if isinstance(task, str):
        return [TextMessage(content=task, source="user")]
    if isinstance(task, BaseChatMessage):
        return [task]
    if not isinstance(task, (list, tuple)):
        event = " (an agent event)" if isinstance(task, BaseAgentEvent) else ""
        raise InvalidArgumentTypeError(
            f"`task` is {kind_of(task)}{event}; a task must be {expected}.", argument="task"
        )
    messages = list(task)
    for position, item in enumerate(messages):
        if not isinstance(item, BaseChatMessage):
            raise InvalidArgumentTypeError(
                f"`task[{position}]` is {kind_of(item)}; a task must be {expected}.",
                argument=f"task[{position}]",
            )
    return cast("list[BaseChatMessage]", messages)
