"""``BufferedChatCompletionContext``: the model sees the last ``buffer_size`` messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..component.internal import register_builtin
from ..errors import InvalidValueError
from ..models import FunctionExecutionResultMessage, LLMMessage
from ._base import ChatCompletionContext, ContextConfig

__all__ = ["BufferedChatCompletionContext"]


class BufferedContextConfig(ContextConfig):
    """The config of
    [`BufferedChatCompletionContext`][flowlib.model_context.BufferedChatCompletionContext]."""

    buffer_size: int


class BufferedChatCompletionContext(ChatCompletionContext):
    """Keeps a view of the most recent ``buffer_size`` messages; the history is kept whole.

    If the view would start with tool results whose function calls fell out of it, those
    results are dropped too (a model API rejects results that answer no visible call), so
    the view may then hold ``buffer_size - 1`` messages, as in AutoGen.

    Args:
        buffer_size: How many recent messages the model sees; at least 1.
        initial_messages: Messages to start the history with.

    Raises:
        ValueError: If ``buffer_size`` is less than 1.

    Examples:
        >>> import asyncio
        >>> from flowlib.models import UserMessage
        >>> context = BufferedChatCompletionContext(buffer_size=2)
        >>> for text in ["a", "b", "c"]:
        ...     asyncio.run(context.add_message(UserMessage(content=text, source="user")))
        >>> [m.content for m in asyncio.run(context.get_messages())]
        ['b', 'c']
    """

    def __init__(
        self, buffer_size: int, initial_messages: Sequence[LLMMessage] | None = None
    ) -> None:
        if buffer_size < 1:
            raise InvalidValueError(
                f"buffer_size must be at least 1, got {buffer_size}. Use "
                "UnboundedChatCompletionContext to send the whole history."
            )
        super().__init__(initial_messages)
        self._buffer_size = buffer_size

    component_config_schema: ClassVar[type[BaseModel]] = BufferedContextConfig

    def _to_config(self) -> BufferedContextConfig:
        return BufferedContextConfig(
            buffer_size=self._buffer_size, initial_messages=self._initial_config()
        )

    @classmethod
    def _from_config(cls, config: BufferedContextConfig) -> Self:
        return cls(config.buffer_size, config.initial_messages)

    @property
    def buffer_size(self) -> int:
        """How many recent messages the model sees."""
        return self._buffer_size

    async def get_messages(self) -> list[LLMMessage]:
        """Return at most ``buffer_size`` recent messages, never starting with a result."""
        view = self._messages[-self._buffer_size :]
        while view and isinstance(view[0], FunctionExecutionResultMessage):
            view = view[1:]
        return view


register_builtin(BufferedChatCompletionContext, autogen="autogen_core.model_context")
