"""The enqueue hook: a model context that takes the turn's inbox in before each model
call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model_context import ChatCompletionContext
from ..models import LLMMessage
from ._turn import Turn

__all__ = ["InboxContext"]


class InboxContext(ChatCompletionContext):
    """Wraps the agent's model context;
    [`get_messages`][flowlib.model_context.ChatCompletionContext.get_messages] (which
    ``AssistantAgent`` calls right before each model call) first moves the messages enqueued since
    the last call into the history, as user messages, and emits each one as an event.

    So a message enqueued while the turn runs is seen by its next model call, and it
    stays in the conversation's history like any other user message.
    """

    def __init__(self, inner: ChatCompletionContext, turn: Turn) -> None:
        super().__init__()
        self._inner = inner
        self._turn = turn

    async def add_message(self, message: LLMMessage) -> None:
        """Append to the wrapped context."""
        await self._inner.add_message(message)

    async def get_messages(self) -> list[LLMMessage]:
        """Take the inbox in, then return the wrapped context's view."""
        for message in self._turn.take_inbox():
            await self._inner.add_message(message.to_model_message())
            await self._turn.emit(message)
        return await self._inner.get_messages()

    async def clear(self) -> None:
        """Clear the wrapped context."""
        await self._inner.clear()

    async def save_state(self) -> Mapping[str, Any]:
        """The wrapped context's state."""
        return await self._inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Load into the wrapped context."""
        await self._inner.load_state(state)

    def __repr__(self) -> str:
        return f"InboxContext({self._inner!r})"
