"""``HeadAndTailChatCompletionContext``: the model sees the first and the last messages,
with a note of how many were skipped between them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..component.internal import register_builtin
from ..errors import InvalidValueError
from ..models import FunctionExecutionResultMessage, LLMMessage, UserMessage
from ._base import ChatCompletionContext, ContextConfig, is_tool_call_message

__all__ = ["HeadAndTailChatCompletionContext"]


class HeadAndTailContextConfig(ContextConfig):
    """The config of
    [`HeadAndTailChatCompletionContext`][flowlib.model_context.HeadAndTailChatCompletionContext]."""

    head_size: int
    tail_size: int


class HeadAndTailChatCompletionContext(ChatCompletionContext):
    """Keeps a view of the first ``head_size`` and the last ``tail_size`` messages.

    When messages are left out, a ``UserMessage(content="Skipped N messages.",
    source="System")`` stands in for them, as in AutoGen. The head does not end with
    function calls whose results were skipped, and the tail does not start with results
    whose calls were skipped; such messages count as skipped.

    Args:
        head_size: How many of the first messages the model sees; at least 1.
        tail_size: How many of the last messages the model sees; at least 1.
        initial_messages: Messages to start the history with.

    Raises:
        ValueError: If ``head_size`` or ``tail_size`` is less than 1.
    """

    def __init__(
        self,
        head_size: int,
        tail_size: int,
        initial_messages: Sequence[LLMMessage] | None = None,
    ) -> None:
        if head_size < 1:
            raise InvalidValueError(f"head_size must be at least 1, got {head_size}.")
        if tail_size < 1:
            raise InvalidValueError(f"tail_size must be at least 1, got {tail_size}.")
        super().__init__(initial_messages)
        self._head_size = head_size
        self._tail_size = tail_size

    component_config_schema: ClassVar[type[BaseModel]] = HeadAndTailContextConfig

    def _to_config(self) -> HeadAndTailContextConfig:
        return HeadAndTailContextConfig(
            head_size=self._head_size,
            tail_size=self._tail_size,
            initial_messages=self._initial_config(),
        )

    @classmethod
    def _from_config(cls, config: HeadAndTailContextConfig) -> Self:
        return cls(config.head_size, config.tail_size, config.initial_messages)

    async def get_messages(self) -> list[LLMMessage]:
        """Return the head, the placeholder and the tail (or everything, if it fits)."""
        messages = self._messages
        if len(messages) <= self._head_size + self._tail_size:
            return list(messages)
        head = messages[: self._head_size]
        if head and is_tool_call_message(head[-1]):
            head = head[:-1]
        tail = messages[-self._tail_size :]
        if tail and isinstance(tail[0], FunctionExecutionResultMessage):
            tail = tail[1:]
        skipped = len(messages) - len(head) - len(tail)
        placeholder = UserMessage(content=f"Skipped {skipped} messages.", source="System")
        return [*head, placeholder, *tail]


register_builtin(HeadAndTailChatCompletionContext, autogen="autogen_core.model_context")
