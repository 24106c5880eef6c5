"""A scripted model client for tests, examples and the offline demo."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from .._cancellation import CancellationToken
from ._client import ChatCompletionClient, ModelInfo, ToolChoice, ToolLike, validate_model_info
from ._types import CreateResult, LLMMessage, RequestUsage

__all__ = ["ReplayChatCompletionClient", "ReplayExhaustedError"]

_TOKEN = re.compile(r"\S+\s*|\s+")


def _tokens(text: str) -> list[str]:
    """Split text into word-ish chunks that join back to the original text."""
    return _TOKEN.findall(text)


def _message_text(message: LLMMessage) -> str:
    content: Any = message.content
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif hasattr(part, "arguments"):
            parts.append(f"{part.name}({part.arguments})")
        elif hasattr(part, "call_id"):
            parts.append(str(part.content))
    return " ".join(parts)


class ReplayExhaustedError(ValueError):
    """The replay client was asked for more responses than it was scripted with."""


class ReplayChatCompletionClient(ChatCompletionClient):
    """Plays scripted responses in order: strings become ``stop`` completions, and
    [`CreateResult`][flowlib.models.CreateResult] objects (tool calls included) are returned as
    given.

    Every request is recorded in [`requests`][flowlib.models.ReplayChatCompletionClient.requests]
    (the messages the model was sent), so tests can assert what each model call saw. Usage counts
    whitespace-separated words.

    Args:
        chat_completions: The responses, in order.
        model_info: What the fake model claims to support; defaults to everything.
        latency: Seconds to wait per response (and per streamed chunk is not delayed).

    Raises:
        ValueError: If ``model_info`` is incomplete.

    Examples:
        >>> import asyncio
        >>> from flowlib.models import UserMessage
        >>> client = ReplayChatCompletionClient(["Hello!", "Bye."])
        >>> result = asyncio.run(client.create([UserMessage(content="hi", source="user")]))
        >>> result.content, result.finish_reason
        ('Hello!', 'stop')
    """

    def __init__(
        self,
        chat_completions: Sequence[str | CreateResult],
        *,
        model_info: ModelInfo | None = None,
        latency: float = 0.0,
    ) -> None:
        self._script = list(chat_completions)
        self._position = 0
        self._latency = latency
        if model_info is None:
            model_info = ModelInfo(
                vision=True,
                function_calling=True,
                json_output=True,
                family="unknown",
                structured_output=True,
            )
        validate_model_info(model_info)
        self._model_info = model_info
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self.requests: list[list[LLMMessage]] = []
        """The messages of every request, in order."""
        self.request_args: list[dict[str, Any]] = []
        """The keyword arguments (tools, tool_choice, json_output, ...) of every request."""

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script) - self._position

    def reset(self) -> None:
        """Start the script from the beginning and forget recorded requests and usage."""
        self._position = 0
        self.requests.clear()
        self.request_args.clear()
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _next(self, messages: Sequence[LLMMessage], args: dict[str, Any]) -> CreateResult:
        if self._position >= len(self._script):
            raise ReplayExhaustedError(
                f"No more mock responses available: the ReplayChatCompletionClient was "
                f"scripted with {len(self._script)} response(s) and all were used. Add "
                "responses to its list, or call reset() to replay the script."
            )
        item = self._script[self._position]
        self._position += 1
        self.requests.append(list(messages))
        self.request_args.append(args)
        prompt = self.count_tokens(messages)
        if isinstance(item, str):
            result = CreateResult(
                finish_reason="stop",
                content=item,
                usage=RequestUsage(prompt_tokens=prompt, completion_tokens=len(item.split())),
                cached=False,
            )
        else:
            # A copy, so a caller changing its result cannot change the script (or what
            # a later reset() replays).
            result = item.model_copy(deep=True)
        self._actual += result.usage
        self._total += result.usage
        return result

    async def _wait(self, cancellation_token: CancellationToken | None) -> None:
        if cancellation_token is not None and cancellation_token.is_cancelled():
            raise asyncio.CancelledError()
        if self._latency:
            sleeper = asyncio.ensure_future(asyncio.sleep(self._latency))
            if cancellation_token is not None:
                cancellation_token.link_future(sleeper)
            await sleeper

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """Return the next scripted response.

        Raises:
            ReplayExhaustedError: When the script has run out (a ``ValueError``).
        """
        await self._wait(cancellation_token)
        args = {
            "tools": list(tools),
            "tool_choice": tool_choice,
            "json_output": json_output,
            "extra_create_args": dict(extra_create_args or {}),
        }
        return self._next(messages, args)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Yield the next scripted response in word-sized chunks, then the result.

        A scripted [`CreateResult`][flowlib.models.CreateResult] with text content is chunked the
        same way; one with tool calls is yielded whole.
        """
        await self._wait(cancellation_token)
        args = {
            "tools": list(tools),
            "tool_choice": tool_choice,
            "json_output": json_output,
            "extra_create_args": dict(extra_create_args or {}),
        }
        result = self._next(messages, args)
        if isinstance(result.content, str):
            for chunk in _tokens(result.content):
                if cancellation_token is not None and cancellation_token.is_cancelled():
                    raise asyncio.CancelledError()
                yield chunk
                await asyncio.sleep(0)
        yield result

    async def close(self) -> None:
        """Nothing to release."""

    def actual_usage(self) -> RequestUsage:
        """Usage of every response played so far."""
        return self._actual

    def total_usage(self) -> RequestUsage:
        """Usage of every response played so far."""
        return self._total

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """Count whitespace-separated words of the messages (a stand-in for tokens)."""
        return sum(len(_message_text(message).split()) for message in messages)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """A nominal 10,000-token window minus
        [`count_tokens`][flowlib.models.ReplayChatCompletionClient.count_tokens]."""
        return max(0, 10_000 - self.count_tokens(messages, tools=tools))

    @property
    def model_info(self) -> ModelInfo:
        """What the fake model claims to support."""
        return self._model_info
