"""``UnboundedChatCompletionContext``: the model sees the whole history (the default)."""

from __future__ import annotations

from ..models import LLMMessage
from ._base import ChatCompletionContext

__all__ = ["UnboundedChatCompletionContext"]


class UnboundedChatCompletionContext(ChatCompletionContext):
    """Sends every message to the model; what agents use when given no context.

    Args:
        initial_messages: Messages to start the history with.
    """

    async def get_messages(self) -> list[LLMMessage]:
        """Return the whole history."""
        return list(self._messages)
