"""``TokenLimitedChatCompletionContext``: the model sees the most recent messages that
fit in a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, cast

from pydantic import BaseModel
from typing_extensions import Self

from ..component import ComponentModel, dump_field, json_field, load_field
from ..component.internal import register_builtin
from ..errors import InvalidValueError
from ..models import ChatCompletionClient, LLMMessage
from ..tools.internal import ToolSchema
from ._base import ChatCompletionContext, ContextConfig, drop_orphan_results

__all__ = ["TokenLimitedChatCompletionContext"]


class TokenLimitedContextConfig(ContextConfig):
    """The config of
    [`TokenLimitedChatCompletionContext`][flowlib.model_context.TokenLimitedChatCompletionContext]."""

    model_client: ComponentModel
    token_limit: int | None = None
    tool_schema: list[dict[str, Any]] | None = None


class TokenLimitedChatCompletionContext(ChatCompletionContext):
    """Keeps a view of the newest messages whose token count fits a limit.

    The oldest messages are dropped one at a time until
    ``model_client.count_tokens(view, tools=tool_schema)`` is at most ``token_limit``
    (or, with no limit, until ``model_client.remaining_tokens`` is positive). Tool
    results left without their function call are then dropped as well.

    Args:
        model_client: The client that counts tokens for its model.
        token_limit: The most tokens the view may take; ``None`` fills the model's
            context window.
        tool_schema: Tool schemas counted with the messages, as they are sent along.
        initial_messages: Messages to start the history with.

    Raises:
        ValueError: If ``token_limit`` is given and less than 1.
    """

    def __init__(
        self,
        model_client: ChatCompletionClient,
        *,
        token_limit: int | None = None,
        tool_schema: Sequence[ToolSchema] | None = None,
        initial_messages: Sequence[LLMMessage] | None = None,
    ) -> None:
        if token_limit is not None and token_limit < 1:
            raise InvalidValueError(f"token_limit must be at least 1, got {token_limit}.")
        super().__init__(initial_messages)
        self._model_client = model_client
        self._token_limit = token_limit
        self._tool_schema: list[ToolSchema] = list(tool_schema or [])

    component_config_schema: ClassVar[type[BaseModel]] = TokenLimitedContextConfig

    def _to_config(self) -> TokenLimitedContextConfig:
        schemas = json_field([dict(schema) for schema in self._tool_schema], "tool_schema")
        return TokenLimitedContextConfig(
            model_client=dump_field(self._model_client, "model_client"),
            token_limit=self._token_limit,
            tool_schema=schemas or None,
            initial_messages=self._initial_config(),
        )

    @classmethod
    def _from_config(cls, config: TokenLimitedContextConfig) -> Self:
        client = load_field(config.model_client, "model_client", ChatCompletionClient)
        return cls(
            client,
            token_limit=config.token_limit,
            tool_schema=cast("list[ToolSchema] | None", config.tool_schema),
            initial_messages=config.initial_messages,
        )

    @property
    def token_limit(self) -> int | None:
        """The token budget, or ``None`` for the model's remaining window."""
        return self._token_limit

    def _fits(self, messages: list[LLMMessage]) -> bool:
        if self._token_limit is None:
            # Positive, not just non-negative: clients clamp the remainder at 0, and a view
            # that fills the window leaves no room for the answer anyway.
            return self._model_client.remaining_tokens(messages, tools=self._tool_schema) > 0
        tokens = self._model_client.count_tokens(messages, tools=self._tool_schema)
        return tokens <= self._token_limit

    async def get_messages(self) -> list[LLMMessage]:
        """Return the newest messages that fit the budget (possibly none)."""
        start = 0
        while start < len(self._messages) and not self._fits(self._messages[start:]):
            start += 1
        return drop_orphan_results(self._messages[start:])


register_builtin(TokenLimitedChatCompletionContext, autogen="autogen_core.model_context")
