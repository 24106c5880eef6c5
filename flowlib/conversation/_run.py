"""``AgentRun``: one observable turn, driven on demand inside an ``async with`` block."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._cancellation import CancellationToken
from ..messages import BaseChatMessage, TextMessage
from ._errors import ConversationError, TurnCancelledError
from ._events import ReplyEvent
from ._reply import AgentReply
from ._stream import MemoryStream, RunStream
from ._turn import CURRENT_TURN, Turn

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["AgentRun"]


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
        agent: Agent,
        messages: Sequence[BaseChatMessage],
        *,
        state: Mapping[str, Any] | None,
        stream: MemoryStream,
    ) -> None:
        self._agent = agent
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
            raise TypeError(
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
            human_input=agent._human_input,
        )
        CURRENT_TURN.set(turn)  # this task's own context: tools see it, nothing else
        token = CancellationToken()
        inputs = [*self._memory._take_pending(), *self._messages, *turn.take_inbox()]
        try:
            outcome = await agent._backend.run_turn(inputs, self._state, turn, token)
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
