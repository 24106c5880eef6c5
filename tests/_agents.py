"""Small instant agents for graph tests: scripted replies, a record of what each saw.

Kept local to the tests on purpose (``flowlib.testing`` is a separate, public helper).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from flowlib.agents import BaseChatAgent
from flowlib.base import CancellationToken, Response, TerminationCondition
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    StopMessage,
    TextMessage,
    ThoughtEvent,
)

Hook = Callable[["Fake", int], Awaitable[None]]


class Fake(BaseChatAgent):
    """An agent that answers from a script, instantly unless told to wait.

    Args:
        name: The agent's name.
        replies: Reply texts by turn; past the end the reply is ``"<name><turn>"``
            (turns counted from 1).
        log: A shared list; the agent appends ``"start:<name>"`` and ``"end:<name>"``.
        before_reply: Awaited (with the agent and its 0-based turn) before replying; use
            it to wait on ``asyncio.Event``s.
        thought: Emit a ``ThoughtEvent`` with this text before the reply.
        chunks: Stream these ``ModelClientStreamingChunkEvent``s before the reply.
        fail: Raise this exception on the first turn while set (clear it to "fix" it).
    """

    def __init__(
        self,
        name: str,
        replies: Sequence[str] = (),
        *,
        log: list[str] | None = None,
        before_reply: Hook | None = None,
        thought: str | None = None,
        chunks: Sequence[str] = (),
        fail: BaseException | None = None,
    ) -> None:
        super().__init__(name, f"Fake agent {name}.")
        self.replies = list(replies)
        self.log = log if log is not None else []
        self.before_reply = before_reply
        self.thought = thought
        self.chunks = list(chunks)
        self.fail = fail
        self.turns = 0
        self.seen: list[list[str]] = []
        self.resets = 0
        self.pauses = 0
        self.resumes = 0

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    def reply_for(self, turn: int) -> str:
        if turn < len(self.replies):
            return self.replies[turn]
        return f"{self.name}{turn + 1}"

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        response: Response | None = None
        async for item in self.on_messages_stream(messages, cancellation_token):
            if isinstance(item, Response):
                response = item
        assert response is not None
        return response

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        turn = self.turns
        self.seen.append([f"{m.source}:{m.to_model_text()}" for m in messages])
        self.log.append(f"start:{self.name}")
        if self.fail is not None:
            raise self.fail
        if self.before_reply is not None:
            await self.before_reply(self, turn)
        text = self.reply_for(turn)
        inner: list[BaseAgentEvent] = []
        if self.thought is not None:
            event = ThoughtEvent(content=self.thought, source=self.name)
            inner.append(event)
            yield event
        for chunk in self.chunks:
            yield ModelClientStreamingChunkEvent(content=chunk, source=self.name)
        self.turns += 1
        self.log.append(f"end:{self.name}")
        yield Response(
            chat_message=TextMessage(content=text, source=self.name),
            inner_messages=inner or None,
        )

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.resets += 1
        self.turns = 0
        self.seen.clear()

    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        self.pauses += 1

    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        self.resumes += 1

    async def save_state(self) -> Mapping[str, Any]:
        return {"type": "FakeState", "turns": self.turns}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        self.turns = int(state["turns"])


def wait_for(event: asyncio.Event, *, on_turn: int | None = None) -> Hook:
    """A ``before_reply`` hook that waits for ``event`` (only on turn ``on_turn`` if given)."""

    async def hook(agent: Fake, turn: int) -> None:
        if on_turn is None or turn == on_turn:
            await event.wait()

    return hook


def texts(messages: Sequence[Any]) -> list[str]:
    """``"source:text"`` for every chat message (events skipped)."""
    return [f"{m.source}:{m.to_model_text()}" for m in messages if isinstance(m, BaseChatMessage)]


def sources(messages: Sequence[Any]) -> list[str]:
    """The source of every chat message (events skipped)."""
    return [m.source for m in messages if isinstance(m, BaseChatMessage)]


class Recorder(TerminationCondition):
    """A termination condition that records every delta it is fed and never fires itself.

    Args:
        on_delta: Called with each delta (use it to open gates at a precise moment).
    """

    def __init__(self, on_delta: Callable[[Sequence[Any]], None] | None = None) -> None:
        self.deltas: list[list[str]] = []
        self.on_delta = on_delta
        self.resets = 0

    @property
    def terminated(self) -> bool:
        return False

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        self.deltas.append([f"{m.source}:{m.to_text()}" for m in messages])
        if self.on_delta is not None:
            self.on_delta(messages)
        return None

    async def reset(self) -> None:
        self.resets += 1
