"""What one running turn shares with the code it calls: its inbox, its event output and
its human-input handler (found by tools through a context variable)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import uuid
from collections.abc import Awaitable, Callable

from ..errors import InvalidTypeError
from ..messages import BaseChatMessage
from ._errors import HumanInputRequiredError
from ._events import Event, HumanInputRequest, HumanInputResponse, to_events
from ._stream import MemoryStream, RunStream

__all__ = ["CURRENT_TURN", "HumanInputHandler", "Turn"]

HumanInputHandler = Callable[[HumanInputRequest], str | Awaitable[str]]
"""Answers a [`HumanInputRequest`][flowlib.conversation.HumanInputRequest]: a sync or async function
returning the text.

A sync handler is called on the event loop, so it should not block; for a blocking
prompt use an async handler, e.g. ``await asyncio.to_thread(input, request.prompt)``.
"""

CURRENT_TURN: contextvars.ContextVar[Turn] = contextvars.ContextVar("flowlib_conversation_turn")


class Turn:
    """The running turn, as seen by the model-context hook and by ``ask_human``."""

    def __init__(
        self,
        *,
        agent_name: str,
        memory: MemoryStream,
        run_stream: RunStream,
        inbox: list[BaseChatMessage],
        human_input: HumanInputHandler | None,
    ) -> None:
        self.agent_name = agent_name
        self.loop = asyncio.get_running_loop()
        self.fatal: BaseException | None = None
        self._memory = memory
        self._run_stream = run_stream
        self._inbox = inbox  # the run's inbox list itself: enqueue() appends to it
        self._human_input = human_input
        self._human_tasks: set[asyncio.Task[str]] = set()

    def take_inbox(self) -> list[BaseChatMessage]:
        """Remove and return the messages enqueued so far."""
        taken = list(self._inbox)
        self._inbox.clear()
        return taken

    async def emit(self, item: Event) -> None:
        """Publish what the agent yielded, mapped to conversation events.

        Then yield to the event loop once, so that a reader of ``run.stream.join()``
        that reacts to the event at once (e.g. ``enqueue`` after a tool result) does so
        before the turn makes its next model call.
        """
        for event in to_events(item):
            await self._memory._publish(event, self._run_stream)
        await asyncio.sleep(0)

    def check(self) -> None:
        """Raise the error that must end the turn, if any (a missing human handler)."""
        if self.fatal is not None:
            raise self.fatal

    async def ask_human(self, prompt: str) -> str:
        """Emit a [`HumanInputRequest`][flowlib.conversation.HumanInputRequest], get the handler's
        answer, emit the response.

        Raises:
            HumanInputRequiredError: If the agent has no ``human_input`` handler; the
                turn then fails with it, even if the caller catches it.
            TypeError: If the handler returns something other than a string.
        """
        request = HumanInputRequest(
            prompt=prompt, request_id=str(uuid.uuid4()), source=self.agent_name
        )
        await self.emit(request)
        if self._human_input is None:
            error = HumanInputRequiredError(
                f"Agent `{self.agent_name}` asked for human input ({prompt!r}) but has no "
                "handler. Pass `human_input=` (a function taking the HumanInputRequest and "
                "returning the answer) to Agent(...), Agent.from_chat_agent(...) or "
                "Agent.from_team(...)."
            )
            if self.fatal is None:
                self.fatal = error
            raise error
        answer = self._human_input(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, str):
            raise InvalidTypeError(
                f"Agent `{self.agent_name}`: the human_input handler returned "
                f"{type(answer).__name__}; it must return a str."
            )
        await self.emit(
            HumanInputResponse(request_id=request.request_id, content=answer, source="human")
        )
        return answer

    def ask_human_from_thread(self, prompt: str) -> str:
        """Run ``ask_human`` on the turn's loop from a worker thread and wait for it.

        The request is owned by the turn: it is cancelled when the turn ends.
        """
        answer: concurrent.futures.Future[str] = concurrent.futures.Future()

        def start() -> None:
            task = self.loop.create_task(self.ask_human(prompt))
            self._human_tasks.add(task)

            def settle(done: asyncio.Task[str]) -> None:
                self._human_tasks.discard(done)
                if answer.done():
                    return
                if done.cancelled():
                    answer.cancel()
                elif (error := done.exception()) is not None:
                    answer.set_exception(error)
                else:
                    answer.set_result(done.result())

            task.add_done_callback(settle)

        self.loop.call_soon_threadsafe(start)
        return answer.result()

    async def close(self) -> None:
        """Cancel the human-input requests still open and wait for them to end."""
        tasks = list(self._human_tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
