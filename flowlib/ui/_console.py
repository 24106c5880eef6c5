"""Console: print an agent's or a team's message stream to a terminal as it happens.

The format is the one the AgentChat documents show (seed 002, "Console" examples): a
``---------- {source} ----------`` header per message, then the message's ``to_text()``;
streamed model chunks are written inline under one header; with ``output_stats=True``, a
``[Prompt tokens: N, Completion tokens: M]`` line after each message that used a model and
a ``---------- Summary ----------`` block at the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, TextIO, TypeVar, cast

from ..agents import UserProxyAgent
from ..agents.internal import (
    AsyncInputFunc,
    InputFuncType,
    SyncInputFunc,
    is_async_callable,
    run_in_thread,
)
from ..base import CancellationToken, Response, TaskResult
from ..errors import InvalidValueError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    UserInputRequestedEvent,
)
from ..models import Image, RequestUsage
from ._escape import escape_control

__all__ = ["Console", "UserInputManager"]

ResultT = TypeVar("ResultT", bound=TaskResult | Response)

_RULE = "-" * 10


class UserInputManager:
    """Holds a user proxy's input prompt back until [`Console`][flowlib.ui.Console] has shown the
    request.

    In a team, messages travel to the console through the team's stream while the
    [`UserProxyAgent`][flowlib.agents.UserProxyAgent] goes on to call its input function, so the
    prompt can appear before the messages that led to it. Give the agent the callback
    from [`get_wrapped_callback`][flowlib.ui.UserInputManager.get_wrapped_callback] and give
    ``Console`` the manager: the callback waits until ``Console`` has printed everything before the
    agent's [`UserInputRequestedEvent`][flowlib.messages.UserInputRequestedEvent], then asks the
    real input function.

    Args:
        callback: The input function to wrap: a blocking ``(prompt) -> str`` such as
            ``input`` (run in a worker thread) or an async
            ``(prompt, cancellation_token) -> str``.

    Examples:
        >>> from flowlib.agents import UserProxyAgent
        >>> manager = UserInputManager(input)
        >>> user = UserProxyAgent("user", input_func=manager.get_wrapped_callback())
        >>> # await Console(team.run_stream(task=...), user_input_manager=manager)
    """

    def __init__(self, callback: InputFuncType) -> None:
        self._callback = callback
        self._is_async = is_async_callable(callback)
        self._seen: dict[str, asyncio.Event] = {}

    def get_wrapped_callback(self) -> AsyncInputFunc:
        """Return an async input function for a ``UserProxyAgent``.

        It must be called from inside the agent's input request (it reads
        [`UserProxyAgent.InputRequestContext.request_id`][flowlib.agents.UserProxyAgent.InputRequestContext.request_id]).

        Returns:
            ``async (prompt, cancellation_token) -> str``.
        """

        async def wrapped(prompt: str, cancellation_token: CancellationToken | None) -> str:
            request_id = UserProxyAgent.InputRequestContext.request_id()
            try:
                await self._event(request_id).wait()
            finally:
                self._seen.pop(request_id, None)
            if self._is_async:
                return await cast(AsyncInputFunc, self._callback)(prompt, cancellation_token)
            return await run_in_thread(cast(SyncInputFunc, self._callback), prompt)

        return wrapped

    def notify_event_received(self, request_id: str) -> None:
        """Release the input request ``request_id``; ``Console`` calls this.

        Args:
            request_id: The ``request_id`` of a ``UserInputRequestedEvent``.
        """
        self._event(request_id).set()

    def _event(self, request_id: str) -> asyncio.Event:
        # Either side may come first: the event is made by whichever does.
        return self._seen.setdefault(request_id, asyncio.Event())


async def Console(
    stream: AsyncIterable[BaseAgentEvent | BaseChatMessage | ResultT],
    *,
    no_inline_images: bool = False,
    output_stats: bool = False,
    user_input_manager: UserInputManager | None = None,
    output: TextIO | None = None,
    raw: bool = False,
) -> ResultT:
    """Print the messages of an agent's or a team's stream as they arrive; return the result.

    Each message is printed as a ``---------- {source} ----------`` header and its
    ``to_text()`` (tool calls and tool results as lists of ``FunctionCall`` /
    ``FunctionExecutionResult`` reprs). ``ModelClientStreamingChunkEvent`` chunks are written
    inline under one header as they arrive; the complete message they add up to is not
    printed again, only the line is ended. ``UserInputRequestedEvent`` is not printed: it
    is passed on to ``user_input_manager``. With ``output_stats``, each message that used a
    model is followed by ``[Prompt tokens: N, Completion tokens: M]`` and each final
    ``TaskResult`` / ``Response`` by a summary block:

        ---------- Summary ----------
        Number of messages: 5                    (agent Response: Number of inner messages)
        Finish reason: Text 'APPROVE' mentioned  (TaskResult only)
        Total prompt tokens: 972
        Total completion tokens: 455
        Duration: 11.78 seconds

    Args:
        stream: ``team.run_stream(...)``, ``agent.run_stream(...)`` or
            ``agent.on_messages_stream(...)``.
        no_inline_images: Print ``<image>`` for images even in iTerm2 (which can draw them
            inline when the output is its terminal).
        output_stats: Print token usage lines and the summary block.
        user_input_manager: Released when a ``UserInputRequestedEvent`` comes through.
        output: Where to write; ``sys.stdout`` (looked up at call time) by default. It is
            flushed after every write, so the output is live.
        raw: Print the text as it is. By default every control character in it but
            newlines and tabs is shown escaped (``\x1b``, ``\r``): model, tool and agent
            text cannot set the terminal's title, write its clipboard or erase a line
            (see [`escape_control`][flowlib.ui.escape_control]).

    Returns:
        The last ``TaskResult`` or ``Response`` of the stream.

    Raises:
        ValueError: The stream ended without a ``TaskResult`` or ``Response``.

    Examples:
        >>> import asyncio
        >>> from flowlib.teams import RoundRobinGroupChat
        >>> from flowlib.testing import ScriptedAgent
        >>> team = RoundRobinGroupChat([ScriptedAgent("poet", ["Roses are red."])], max_turns=1)
        >>> result = asyncio.run(Console(team.run_stream(task="Write a poem.")))
        ---------- user ----------
        Write a poem.
        ---------- poet ----------
        Roses are red.
        >>> result.stop_reason
        'Maximum number of turns 1 reached.'
    """
    started = time.perf_counter()
    out = output if output is not None else sys.stdout
    printer = _Printer(
        out,
        inline_images=not no_inline_images and _draws_inline_images(out),
        output_stats=output_stats,
        user_input_manager=user_input_manager,
        started=started,
        raw=raw,
    )
    last: ResultT | None = None
    try:
        async for item in stream:
            if isinstance(item, (TaskResult, Response)):
                printer.result(item)
                last = item
            elif isinstance(item, ModelClientStreamingChunkEvent):
                printer.chunk(item)
            else:
                printer.message(item)
    finally:
        # Close the producer when printing fails or the console is cancelled, so an
        # agent's or team's run does not linger half-consumed.
        aclose = getattr(stream, "aclose", None)
        if callable(aclose):
            await aclose()
    printer.end_line()
    if last is None:
        raise InvalidValueError(
            "Console's stream ended without a TaskResult or Response; pass the whole "
            "`run_stream(...)` or `on_messages_stream(...)` of an agent or team."
        )
    return last


def _draws_inline_images(output: TextIO) -> bool:
    """Whether ``output`` is an iTerm2 terminal, which draws images sent inline."""
    if os.environ.get("TERM_PROGRAM") != "iTerm.app":
        return False
    isatty = getattr(output, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


@dataclass
class _Printer:
    """What one ``Console`` call has printed so far: the open chunk line, the messages
    already shown through their chunks, and the token totals."""

    output: TextIO
    _: KW_ONLY
    inline_images: bool
    output_stats: bool
    user_input_manager: UserInputManager | None
    started: float
    raw: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The (source, full_message_id) whose chunks are on the current, unended line.
    open_line: tuple[str, str | None] | None = None
    # Ids of complete messages already shown as chunks, and, for chunks that name no
    # message, the text streamed per source: their complete message is not reprinted.
    streamed_ids: set[str] = field(default_factory=set)
    streamed_text: dict[str, str] = field(default_factory=dict)

    def chunk(self, chunk: ModelClientStreamingChunkEvent) -> None:
        key = (chunk.source, chunk.full_message_id)
        if self.open_line != key:
            self.end_line()
            self._write(_header(chunk.source))
            self.open_line = key
        if chunk.full_message_id is None:
            self.streamed_text[chunk.source] = (
                self.streamed_text.get(chunk.source, "") + chunk.content
            )
        else:
            self.streamed_ids.add(chunk.full_message_id)
        self._write(chunk.content)

    def message(self, message: Any) -> None:
        """Print a chat message or event (anything with ``source`` and ``to_text()``)."""
        self.end_line()
        if isinstance(message, UserInputRequestedEvent):
            if self.user_input_manager is not None:
                self.user_input_manager.notify_event_received(message.request_id)
            return
        source = str(getattr(message, "source", type(message).__name__))
        if not self._was_streamed(message, source):
            self._write_message(source, message)
        usage = getattr(message, "models_usage", None)
        if isinstance(usage, RequestUsage):
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            if self.output_stats:
                self._write(
                    f"[Prompt tokens: {usage.prompt_tokens}, "
                    f"Completion tokens: {usage.completion_tokens}]\n"
                )

    def result(self, result: TaskResult | Response) -> None:
        if isinstance(result, Response):
            # An agent's on_messages_stream carries its reply only inside the Response.
            self.message(result.chat_message)
            count = f"Number of inner messages: {len(result.inner_messages or ())}\n"
        else:
            self.end_line()
            count = (
                f"Number of messages: {len(result.messages)}\nFinish reason: {result.stop_reason}\n"
            )
        if self.output_stats:
            duration = time.perf_counter() - self.started
            self._write(
                _header("Summary")
                + count
                + f"Total prompt tokens: {self.prompt_tokens}\n"
                + f"Total completion tokens: {self.completion_tokens}\n"
                + f"Duration: {duration:.2f} seconds\n"
            )

    def end_line(self) -> None:
        """End the line of streamed chunks, if one is open."""
        if self.open_line is not None:
            self.open_line = None
            self._write("\n")

    def _was_streamed(self, message: Any, source: str) -> bool:
        """Whether ``message`` is the complete form of chunks already printed."""
        message_id = getattr(message, "id", None)
        if message_id in self.streamed_ids:
            self.streamed_ids.discard(message_id)
            self.streamed_text.pop(source, None)
            return True
        streamed = self.streamed_text.pop(source, None)
        return streamed is not None and streamed == self._text(message)

    def _text(self, message: Any) -> str:
        if isinstance(message, MultiModalMessage):
            return message.to_text()
        to_text = getattr(message, "to_text", None)
        return str(to_text()) if callable(to_text) else str(message)

    def _write(self, text: str) -> None:
        self.output.write(text if self.raw else escape_control(text))
        self.output.flush()

    def _write_message(self, source: str, message: Any) -> None:
        if not (self.inline_images and isinstance(message, MultiModalMessage)):
            self._write(_header(source) + self._text(message) + "\n")
            return
        # The image sequences are flowlib's own; the text around them is escaped.
        self._write(_header(source))
        for index, item in enumerate(message.content):
            if index:
                self._write("\n")
            if isinstance(item, Image):
                self._write_trusted(_iterm_image(item))
            else:
                self._write(item)
        self._write("\n")

    def _write_trusted(self, text: str) -> None:
        write = getattr(self.output, "write_trusted", None)
        (write if callable(write) else self.output.write)(text)
        self.output.flush()


def _iterm_image(image: Image) -> str:
    # iTerm2's inline image protocol, as MultiModalMessage.to_text(iterm=True) writes it.
    return f"\x1b]1337;File=inline=1:{image.to_base64()}\x07"


def _header(title: str) -> str:
    return f"{_RULE} {title} {_RULE}\n"
