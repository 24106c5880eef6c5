"""``UnboundedChatCompletionContext``: the model sees the whole history (the default)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..component.internal import register_builtin
from ..models import LLMMessage
from ._base import ChatCompletionContext, ContextConfig

__all__ = ["UnboundedChatCompletionContext"]


class UnboundedChatCompletionContext(ChatCompletionContext):
    """Sends every message to the model; what agents use when given no context.

    Args:
        initial_messages: Messages to start the history with.
    """

    async def get_messages(self) -> list[LLMMessage]:
        """Return the whole history."""
        return list(self._messages)

    component_config_schema: ClassVar[type[BaseModel]] = ContextConfig

    def _to_config(self) -> ContextConfig:
        return ContextConfig(initial_messages=self._initial_config())

    @classmethod
    def _from_config(cls, config: ContextConfig) -> Self:
        return cls(config.initial_messages)


register_builtin(UnboundedChatCompletionContext, autogen="autogen_core.model_context")
