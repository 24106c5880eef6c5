"""``AgentRun``, one observable turn driven on demand inside an ``async with`` block, and
``AgentReply``, its result and the handle to continue the conversation.

The two live together because each makes the other: a run ends in a reply, and a reply
opens the next run. Neither knows [`Agent`][flowlib.conversation.Agent]: the agent hands a
run its backend and a way to open the next run (``OpenRun``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol

from .._cancellation import CancellationToken
from ..base import TaskResult
from ..errors import InvalidTypeError
from ..messages import BaseChatMessage, TextMessage
from ._backends import Backend
from ._errors import ConversationError, TurnCancelledError
from ._events import Event, ReplyEvent
from ._stream import MemoryStream, RunStream
from ._turn import CURRENT_TURN, HumanInputHandler, Turn

__all__ = ["AgentReply", "AgentRun", "ConversationAgent", "Message", "OpenRun"]

Message = str | BaseChatMessage | Sequence[BaseChatMessage]
"""What a turn takes: a string (a user ``TextMessage``), a chat message or a list of them."""


class OpenRun(Protocol):
    """Opens the next turn of a conversation from a saved state, on a stream."""

    def __call__(
        self, message: Message, state: Mapping[str, Any] | None, stream: MemoryStream | None
    ) -> AgentRun: ...


class ConversationAgent(Protocol):
    """What a reply knows of the agent that gave it
    ([`Agent`][flowlib.conversation.Agent] is one)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    async def ask(self, message: Message, *, stream: MemoryStream | None = None) -> AgentReply: ...

    def run(self, message: Message, *, stream: MemoryStream | None = None) -> AgentRun: ...


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
        agent: ConversationAgent,
        response: BaseChatMessage,
        task_result: TaskResult,
        events: Sequence[Event],
        state: Mapping[str, Any],
        stream: MemoryStream,
        open_run: OpenRun,
    ) -> None:
        self._agent = agent
        self._open_run = open_run
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
    def agent(self) -> ConversationAgent:
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
        return self._open_run(message, self._state, self._stream)

    def __repr__(self) -> str:
        return f"AgentReply(agent={self._agent.name!r}, body={self.body!r})"


class AgentRun:
    """A turn you can watch live and drive on demand; an async context manager.

    The turn does not advance on its own:

    - [`start`][flowlib.conversation.AgentRun.start] drives it in a background task owned by the
    ``async with`` block and
      returns at once; read [`stream`][flowlib.conversation.AgentRun.stream] (``run.stream.join()``)
      meanwhile;
    - or skip ``start()`` and ``await`` [`result`][flowlib.conversation.AgentRun.result] to drive it
    inline; cancelling
      that await (``asyncio.wait_for(run.result(), timeout=5)``) cancels the turn.

    ``await run.result()`` returns the same [`AgentReply`][flowlib.conversation.AgentReply] every
    time, or re-raises the same exception object every time. Leaving the block without awaiting it
    cancels a turn that is still running and waits until it has stopped; a turn nothing drove
    before the block ended never runs (its enqueued messages go to the next turn on the
    stream). A failure of a turn whose result is never awaited is not raised by the
    block. ``result()`` also works without the block (it drives the turn inline).

    [`enqueue`][flowlib.conversation.AgentRun.enqueue] feeds the turn while it runs (see there).

    Examples:
        >>> import asyncio
        >>> from flowlib.conversation import Agent
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> agent = Agent("assistant", ReplayChatCompletionClient(["Hi!"]))
        >>> async def main():
        ...     async with agent.run("Hello") as run:
        ...         run.start()
        ...         kinds = [type(event).__name__ async for event in run.stream.join()]
        ...         reply = await run.result()
        ...     return kinds, reply.body
        >>> asyncio.run(main())
        (['TextMessage', 'TextMessage', 'ReplyEvent'], 'Hi!')
    """

    def __init__(
        self,
        agent: ConversationAgent,
        messages: Sequence[BaseChatMessage],
        *,
        state: Mapping[str, Any] | None,
        stream: MemoryStream,
        backend: Backend,
        human_input: HumanInputHandler | None,
        open_run: OpenRun,
    ) -> None:
        self._agent = agent
        self._backend = backend
        self._human_input = human_input
        self._open_run = open_run
        self._messages = list(messages)
        self._state = state
        self._memory = stream
        self._stream = RunStream(stream)
        self._inbox: list[BaseChatMessage] = []
        self._task: asyncio.Task[AgentReply] | None = None
        self._background = False
        self._entered = False
        self._exited = False
        self._ended = False
        self._cancelled: TurnCancelledError | None = None

    @property
    def stream(self) -> RunStream:
        """The turn's events: ``run.stream.join()`` iterates over them live."""
        return self._stream

    @property
    def done(self) -> bool:
        """Whether the turn has ended (finished, failed or was cancelled)."""
        return self._task is not None and self._task.done()

    async def __aenter__(self) -> AgentRun:
        if self._entered:
            raise ConversationError(
                "This AgentRun's block was already entered; each run is one turn. Call "
                "agent.run(...) or reply.run(...) again for another turn."
            )
        self._entered = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._exited = True
        task = self._task
        if task is None:
            # Never driven: the turn will not run. Its enqueued messages wait for the
            # next turn on the stream, and readers of join() are released.
            self._ended = True
            self._memory._add_pending(self._inbox[:])
            self._inbox.clear()
            self._stream._close()
            return
        if not task.done():
            task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # mark it retrieved: result() is where failures surface

    def start(self) -> None:
        """Drive the turn in a background task owned by the ``async with`` block.

        Returns at once. Calling it again, or after ``result()`` began driving the turn,
        does nothing.

        Raises:
            ConversationError: Outside the run's ``async with`` block.
        """
        if not self._entered or self._exited:
            raise ConversationError(
                "run.start() needs the run's `async with` block, which owns the turn's "
                "task: `async with agent.run(...) as run: run.start()`. To drive the turn "
                "without a block, `await run.result()`."
            )
        if self._task is None:
            self._background = True
            self._task = asyncio.get_running_loop().create_task(self._drive())

    async def result(self) -> AgentReply:
        """Return the turn's reply, driving the turn inline if it was not started.

        Returns:
            The same [`AgentReply`][flowlib.conversation.AgentReply] on every call.

        Raises:
            TurnCancelledError: If the turn was cancelled, or its block ended before
                anything drove it (the same object every time).
            asyncio.CancelledError: If this await is cancelled. Without ``start()`` that
                cancels the turn too (and waits until it has stopped); after ``start()``
                the turn goes on until the block ends.
            Exception: What made the turn fail (the same object every time).
        """
        task = self._task
        if task is None:
            if self._exited:
                raise self._cancelled_error()
            task = self._task = asyncio.get_running_loop().create_task(self._drive())
        if not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                if not self._background:
                    task.cancel()
                    await asyncio.wait({task})
                raise
        return self._outcome(task)

    def enqueue(self, message: str | BaseChatMessage) -> None:
        """Push a message into the turn's inbox; never blocks.

        When it is consumed depends on timing:

        - before the turn starts: it joins the turn's input, so the first model call
          sees it (after the message given to ``run``);
        - while the turn runs: the turn's next model call takes it in, as a user message
          (with ``Agent(name, model_client)``; a wrapped agent or team has no hook into
          its model calls, so there it waits for the next turn);
        - after the turn has ended: it waits on the conversation's stream for the next
          turn on it (``reply.ask`` / ``reply.run``), and comes first in that turn's
          input.

        Consumed messages are emitted as events (the chat message itself) when the turn
        takes them in. Call it from the event loop's thread (tasks, callbacks).

        Args:
            message: A string (a ``TextMessage`` from ``"user"``) or a chat message.

        Raises:
            TypeError: If ``message`` is neither.
        """
        if isinstance(message, str):
            chat: BaseChatMessage = TextMessage(content=message, source="user")
        elif isinstance(message, BaseChatMessage):
            chat = message
        else:
            raise InvalidTypeError(
                f"enqueue() takes a str or a chat message (e.g. TextMessage), not "
                f"{type(message).__name__}."
            )
        if self._ended:
            self._memory._add_pending([chat])
        else:
            self._inbox.append(chat)

    def _outcome(self, task: asyncio.Task[AgentReply]) -> AgentReply:
        if task.cancelled():
            raise self._cancelled_error()
        error = task.exception()
        if error is not None:
            raise error
        return task.result()

    def _cancelled_error(self) -> TurnCancelledError:
        if self._cancelled is None:
            self._cancelled = TurnCancelledError(
                f"The turn of `{self._agent.name}` was cancelled before it finished (its "
                "`async with` block ended first, or an inline `await run.result()` was "
                "cancelled). Start a new turn with agent.run(...) or reply.run(...)."
            )
        return self._cancelled

    async def _drive(self) -> AgentReply:
        agent = self._agent
        turn = Turn(
            agent_name=agent.name,
            memory=self._memory,
            run_stream=self._stream,
            inbox=self._inbox,
            human_input=self._human_input,
        )
        CURRENT_TURN.set(turn)  # this task's own context: tools see it, nothing else
        token = CancellationToken()
        inputs = [*self._memory._take_pending(), *self._messages, *turn.take_inbox()]
        try:
            outcome = await self._backend.run_turn(inputs, self._state, turn, token)
            body = outcome.response.to_text()
            await turn.emit(
                ReplyEvent(content=body, message_id=outcome.response.id, source=agent.name)
            )
            return AgentReply(
                agent=agent,
                response=outcome.response,
                task_result=outcome.task_result,
                events=self._stream.events,
                state=outcome.state,
                stream=self._memory,
                open_run=self._open_run,
            )
        except BaseException:
            token.cancel()
            raise
        finally:
            await turn.close()
            self._ended = True
            self._memory._add_pending(turn.take_inbox())
            self._stream._close()

    def __repr__(self) -> str:
        state = "done" if self.done else "running" if self._task is not None else "not started"
        return f"AgentRun(agent={self._agent.name!r}, {state})"
