"""The model-client interface and what it says about a model."""

import warnings
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel
from typing_extensions import NotRequired, Required, TypedDict

from .._cancellation import CancellationToken
from ..component.internal import ComponentBase
from ..errors import InvalidTypeError, InvalidValueError
from ..tools.internal import Tool, ToolSchema
from ._tracing import trace_client_class
from ._types import CreateResult, LLMMessage, RequestUsage

__all__ = [
    "ChatCompletionClient",
    "CreateRequest",
    "ModelCapabilities",
    "ModelFamily",
    "ModelInfo",
    "RequestClient",
    "validate_model_info",
]


class ModelCapabilities(TypedDict, total=False):
    """Deprecated summary of a model's abilities; use [`ModelInfo`][flowlib.models.ModelInfo]."""

    vision: Required[bool]
    function_calling: Required[bool]
    json_output: Required[bool]


class ModelInfo(TypedDict, total=False):
    """What a model can do; clients need it for model names they do not know.

    Attributes:
        vision: Accepts images.
        function_calling: Can call tools.
        json_output: Supports JSON mode (not the same as structured output).
        family: A [`ModelFamily`][flowlib.models.ModelFamily] constant or any string.
        structured_output: Supports structured output against a JSON schema.
        multiple_system_messages: Accepts several, non-consecutive system messages.
    """

    vision: Required[bool]
    function_calling: Required[bool]
    json_output: Required[bool]
    family: Required[str]
    structured_output: Required[bool]
    multiple_system_messages: NotRequired[bool | None]


_REQUIRED_INFO = ("vision", "function_calling", "json_output", "family")


def validate_model_info(model_info: ModelInfo) -> None:
    """Check that ``model_info`` has every required field.

    ``structured_output`` is required by the newer documents but missing from older
    examples; when it is absent a warning is issued and it counts as ``False``.

    Raises:
        ValueError: Naming the missing fields.
    """
    missing = [key for key in _REQUIRED_INFO if key not in model_info]
    if "structured_output" not in model_info and not missing:
        warnings.warn(
            "model_info has no `structured_output` field; treating it as False. Add "
            "`'structured_output': True` if the model supports structured output.",
            UserWarning,
            stacklevel=2,
        )
    if missing:
        raise InvalidValueError(
            f"model_info is missing required fields: {', '.join(missing)}. A complete "
            "example: {'vision': False, 'function_calling': True, 'json_output': True, "
            "'family': 'unknown', 'structured_output': True}."
        )


class ModelFamily:
    """Names of model families flowlib knows; any other string is an unknown family."""

    GPT_5 = "gpt-5"
    GPT_41 = "gpt-41"
    GPT_45 = "gpt-45"
    GPT_4O = "gpt-4o"
    O1 = "o1"
    O3 = "o3"
    O4 = "o4"
    GPT_4 = "gpt-4"
    GPT_35 = "gpt-35"
    R1 = "r1"
    GEMINI_1_5_FLASH = "gemini-1.5-flash"
    GEMINI_1_5_PRO = "gemini-1.5-pro"
    GEMINI_2_0_FLASH = "gemini-2.0-flash"
    GEMINI_2_5_PRO = "gemini-2.5-pro"
    GEMINI_2_5_FLASH = "gemini-2.5-flash"
    CLAUDE_3_HAIKU = "claude-3-haiku"
    CLAUDE_3_SONNET = "claude-3-sonnet"
    CLAUDE_3_OPUS = "claude-3-opus"
    CLAUDE_3_5_HAIKU = "claude-3-5-haiku"
    CLAUDE_3_5_SONNET = "claude-3-5-sonnet"
    CLAUDE_3_7_SONNET = "claude-3-7-sonnet"
    CLAUDE_4_OPUS = "claude-4-opus"
    CLAUDE_4_SONNET = "claude-4-sonnet"
    LLAMA_3_3_8B = "llama-3.3-8b"
    LLAMA_3_3_70B = "llama-3.3-70b"
    LLAMA_4_SCOUT = "llama-4-scout"
    LLAMA_4_MAVERICK = "llama-4-maverick"
    CODESRAL = "codestral"
    OPEN_CODESRAL_MAMBA = "open-codestral-mamba"
    MISTRAL = "mistral"
    MINISTRAL = "ministral"
    PIXTRAL = "pixtral"
    UNKNOWN = "unknown"

    ANY = Literal[
        "gpt-5",
        "gpt-41",
        "gpt-45",
        "gpt-4o",
        "o1",
        "o3",
        "o4",
        "gpt-4",
        "gpt-35",
        "r1",
        "gemini-1.5-flash",
        "gemini-1.5-pro",
        "gemini-2.0-flash",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "claude-3-haiku",
        "claude-3-sonnet",
        "claude-3-opus",
        "claude-3-5-haiku",
        "claude-3-5-sonnet",
        "claude-3-7-sonnet",
        "claude-4-opus",
        "claude-4-sonnet",
        "llama-3.3-8b",
        "llama-3.3-70b",
        "llama-4-scout",
        "llama-4-maverick",
        "codestral",
        "open-codestral-mamba",
        "mistral",
        "ministral",
        "pixtral",
        "unknown",
    ]

    def __new__(cls, *args: Any, **kwargs: Any) -> "ModelFamily":
        raise InvalidTypeError("ModelFamily is a namespace of constants; do not instantiate it.")

    @staticmethod
    def is_claude(family: str) -> bool:
        """Whether ``family`` is an Anthropic Claude family."""
        return family.startswith("claude-")

    @staticmethod
    def is_gemini(family: str) -> bool:
        """Whether ``family`` is a Google Gemini family."""
        return family.startswith("gemini-")

    @staticmethod
    def is_openai(family: str) -> bool:
        """Whether ``family`` is an OpenAI family."""
        return family in {
            ModelFamily.GPT_5,
            ModelFamily.GPT_41,
            ModelFamily.GPT_45,
            ModelFamily.GPT_4O,
            ModelFamily.O1,
            ModelFamily.O3,
            ModelFamily.O4,
            ModelFamily.GPT_4,
            ModelFamily.GPT_35,
        }

    @staticmethod
    def is_llama(family: str) -> bool:
        """Whether ``family`` is a Meta Llama family."""
        return family.startswith("llama-")

    @staticmethod
    def is_mistral(family: str) -> bool:
        """Whether ``family`` is a Mistral family."""
        return family in {
            ModelFamily.CODESRAL,
            ModelFamily.OPEN_CODESRAL_MAMBA,
            ModelFamily.MISTRAL,
            ModelFamily.MINISTRAL,
            ModelFamily.PIXTRAL,
        }


ToolLike = Tool | ToolSchema
ToolChoice = Tool | Literal["auto", "required", "none"]


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """What one ``create``/``create_stream`` call asks for (all but its cancellation
    token), as flowlib's clients pass it on inside: read, checked, recorded or forwarded
    in one piece."""

    messages: Sequence[LLMMessage]
    tools: Sequence[ToolLike] = ()
    tool_choice: ToolChoice = "auto"
    json_output: bool | type[BaseModel] | None = None
    extra_create_args: Mapping[str, Any] | None = None

    def options(self) -> dict[str, Any]:
        """The keyword arguments beside ``messages``, as ``create`` takes them."""
        return {
            "tools": self.tools,
            "tool_choice": self.tool_choice,
            "json_output": self.json_output,
            "extra_create_args": self.extra_create_args,
        }


class ChatCompletionClient(ComponentBase, ABC):
    """A chat-completion model: what agents call to think.

    Implementations: ``OpenAIChatCompletionClient`` (any OpenAI-compatible server),
    [`ReplayChatCompletionClient`][flowlib.models.ReplayChatCompletionClient] (scripted, for tests
    and offline demos) and ``ChatCompletionCache`` (a caching wrapper).
    """

    component_type: ClassVar[str] = "model"
    otel_provider_name: ClassVar[str | None] = None
    """``gen_ai.provider.name`` of this client's spans: a value the OpenTelemetry GenAI
    conventions register (``"openai"``, ``"azure.ai.openai"``, ``"anthropic"``, ...), or
    None for the class's name (a client of your own may set it)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A client of the user's own is traced like flowlib's (see docs/observability.md).
        super().__init_subclass__(**kwargs)
        trace_client_class(cls)

    @abstractmethod
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
        """Run one completion.

        Args:
            messages: The conversation.
            tools: Tools the model may call.
            tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool to force.
            json_output: ``True`` for JSON mode, a pydantic model class for structured
                output, ``None`` for neither.
            extra_create_args: Passed through to the underlying API.
            cancellation_token: Aborts the request.
        """

    @abstractmethod
    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Like [`create`][flowlib.models.ChatCompletionClient.create], yielding text chunks, then
        the [`CreateResult`][flowlib.models.CreateResult]."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""

    @abstractmethod
    def actual_usage(self) -> RequestUsage:
        """Tokens actually sent and received (cache hits excluded)."""

    @abstractmethod
    def total_usage(self) -> RequestUsage:
        """Tokens of every request, cache hits included."""

    @abstractmethod
    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """Estimate the prompt tokens of ``messages`` (and tool schemas)."""

    @abstractmethod
    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """Tokens left in the model's context window after ``messages``."""

    @property
    @abstractmethod
    def model_info(self) -> ModelInfo:
        """What the model can do."""

    @property
    def capabilities(self) -> ModelCapabilities:
        """Deprecated: use [`model_info`][flowlib.models.ChatCompletionClient.model_info]."""
        warnings.warn(
            "capabilities is deprecated; use model_info instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        info = self.model_info
        return ModelCapabilities(
            vision=info["vision"],
            function_calling=info["function_calling"],
            json_output=info["json_output"],
        )


class RequestClient(ChatCompletionClient):
    """The base of flowlib's own model clients: ``create`` and ``create_stream`` are
    written once here and hand the call, as one ``CreateRequest``, to ``_create`` and
    ``_create_stream``; the usage of every completed request is counted here."""

    def __init__(self) -> None:
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

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
        """Run one completion; the arguments are those of
        [`ChatCompletionClient.create`][flowlib.models.ChatCompletionClient.create]."""
        request = CreateRequest(messages, tools, tool_choice, json_output, extra_create_args)
        return await self._create(request, cancellation_token)

    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Stream one completion: text chunks, then the
        [`CreateResult`][flowlib.models.CreateResult]; the arguments are those of
        [`ChatCompletionClient.create`][flowlib.models.ChatCompletionClient.create]."""
        request = CreateRequest(messages, tools, tool_choice, json_output, extra_create_args)
        return self._create_stream(request, cancellation_token)

    @abstractmethod
    async def _create(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> CreateResult:
        """Answer ``request``."""

    @abstractmethod
    def _create_stream(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Answer ``request`` as a stream: text chunks, then the result."""

    def _record_usage(self, usage: RequestUsage) -> None:
        self._actual += usage
        self._total += usage

    def actual_usage(self) -> RequestUsage:
        """Tokens of every completed request so far."""
        return self._actual

    def total_usage(self) -> RequestUsage:
        """Tokens of every completed request so far (the same as
        [`actual_usage`][flowlib.models.ChatCompletionClient.actual_usage]; the difference appears
        with [`ChatCompletionCache`][flowlib.models.ChatCompletionCache])."""
        return self._total
