"""Value types exchanged with model clients: LLM messages, function calls, results, usage.

``FunctionCall``, ``RequestUsage`` and ``TopLogprob`` also accept their fields
positionally (``RequestUsage(10, 3)``), as the documents show them as plain dataclass-like
signatures; every other type is keyword-only, like any pydantic model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from ..errors import InvalidTypeError
from ._compact import CompactModel
from .image import Image

__all__ = [
    "AssistantMessage",
    "ChatCompletionTokenLogprob",
    "CreateResult",
    "FinishReasons",
    "FunctionCall",
    "FunctionExecutionResult",
    "FunctionExecutionResultMessage",
    "LLMMessage",
    "RequestUsage",
    "SystemMessage",
    "TopLogprob",
    "UserMessage",
]


def _merge_positional(
    model: str, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Turn positional constructor arguments into keywords, as a dataclass would."""
    if len(args) > len(names):
        raise InvalidTypeError(
            f"{model}() takes at most {len(names)} positional arguments ({len(args)} given)"
        )
    for name, value in zip(names, args, strict=False):
        if name in kwargs:
            raise InvalidTypeError(f"{model}() got multiple values for argument '{name}'")
        kwargs[name] = value
    return kwargs


_CALL_FIELDS = ("id", "arguments", "name")
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens")
_LOGPROB_FIELDS = ("logprob", "bytes")


class FunctionCall(BaseModel):
    """A tool call the model asked for.

    Attributes:
        id: The call id chosen by the model; tool results refer to it.
        arguments: The call arguments as a JSON object in a string.
        name: The name of the function to call.
    """

    id: str
    arguments: str
    name: str

    if TYPE_CHECKING:

        def __init__(self, id: str, arguments: str, name: str) -> None: ...

    else:
        # Missing fields still raise pydantic's ValidationError, as model_validate()
        # goes through this constructor too.
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(**_merge_positional("FunctionCall", _CALL_FIELDS, args, kwargs))


class FunctionExecutionResult(BaseModel):
    """The output of one function call.

    Attributes:
        content: The stringified return value (``'None'`` for a function returning None).
        name: The name of the function that was called.
        call_id: The id of the [`FunctionCall`][flowlib.models.FunctionCall] this answers; may be
            empty for models that do not use call ids.
        is_error: Whether the call raised.
    """

    content: str
    name: str
    call_id: str
    is_error: bool | None = None


class RequestUsage(CompactModel):
    """Tokens a model call used.

    Attributes:
        prompt_tokens: Tokens of the prompt.
        completion_tokens: Tokens of the completion.
    """

    prompt_tokens: int
    completion_tokens: int

    if TYPE_CHECKING:

        def __init__(self, prompt_tokens: int, completion_tokens: int) -> None: ...

    else:

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(**_merge_positional("RequestUsage", _USAGE_FIELDS, args, kwargs))

    def __add__(self, other: RequestUsage) -> RequestUsage:
        """The usage of two calls together (clients sum their usage with it)."""
        if not isinstance(other, RequestUsage):
            return NotImplemented
        return RequestUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class SystemMessage(CompactModel):
    """Instructions for the model from the developer.

    OpenAI now calls this role "developer"; its API still accepts "system" and converts
    it, so ``SystemMessage`` serves for developer messages too.

    Attributes:
        content: The instructions.
    """

    content: str
    type: Literal["SystemMessage"] = "SystemMessage"


class UserMessage(CompactModel):
    """Input from an end user, or any other data given to the model.

    Attributes:
        content: Text, or a list of text and [`Image`][flowlib.models.Image] parts.
        source: The name of the agent or user the input comes from.
    """

    content: str | list[str | Image]
    source: str
    type: Literal["UserMessage"] = "UserMessage"


class AssistantMessage(CompactModel):
    """A message sampled from the model.

    Attributes:
        content: The text answer, or the tool calls the model made.
        source: The name of the agent the model spoke for.
        thought: Reasoning text, or text that came along with tool calls.
    """

    content: str | list[FunctionCall]
    thought: str | None = None
    source: str
    type: Literal["AssistantMessage"] = "AssistantMessage"


class FunctionExecutionResultMessage(CompactModel):
    """The results of the tool calls of one assistant message.

    Attributes:
        content: One result per call.
    """

    content: list[FunctionExecutionResult]
    type: Literal["FunctionExecutionResultMessage"] = "FunctionExecutionResultMessage"


LLMMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | FunctionExecutionResultMessage,
    Field(discriminator="type"),
]
"""Any message a model client takes, told apart by its ``type`` field."""

FinishReasons = Literal["stop", "length", "function_calls", "content_filter", "unknown"]
"""Why the model stopped; providers that report nothing usable give ``'unknown'``."""


class TopLogprob(BaseModel):
    """One of the most likely tokens at a position, with its log probability.

    Attributes:
        logprob: The log probability.
        bytes: The UTF-8 bytes of the token, if the provider reports them.
    """

    logprob: float
    bytes: list[int] | None = None

    if TYPE_CHECKING:

        def __init__(self, logprob: float, bytes: list[int] | None = None) -> None: ...

    else:

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(**_merge_positional("TopLogprob", _LOGPROB_FIELDS, args, kwargs))


class ChatCompletionTokenLogprob(BaseModel):
    """A generated token with its log probability and the top alternatives.

    Attributes:
        token: The token.
        logprob: Its log probability.
        top_logprobs: The most likely tokens at this position.
        bytes: The UTF-8 bytes of the token, if the provider reports them.
    """

    token: str
    logprob: float
    top_logprobs: list[TopLogprob] | None = None
    bytes: list[int] | None = None


class CreateResult(BaseModel):
    """The output of one model completion.

    Attributes:
        finish_reason: Why the model stopped.
        content: The text answer, or the tool calls the model made.
        usage: Tokens used by the call.
        cached: Whether the result came from a cache rather than the model.
        logprobs: Per-token log probabilities, when requested.
        thought: Reasoning text, or text that came along with tool calls.
    """

    finish_reason: FinishReasons
    content: str | list[FunctionCall]
    usage: RequestUsage
    cached: bool
    logprobs: list[ChatCompletionTokenLogprob] | None = None
    thought: str | None = None
