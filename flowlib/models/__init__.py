"""Models: the client interface, scripted and OpenAI-compatible clients, and the value
types they exchange (LLM messages, function calls, results, usage, images)."""

from ._client import (
    ChatCompletionClient,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    validate_model_info,
)
from ._image import Image, ImageDetail
from ._replay import ReplayChatCompletionClient, ReplayExhaustedError
from ._types import (
    AssistantMessage,
    ChatCompletionTokenLogprob,
    CreateResult,
    FinishReasons,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    RequestUsage,
    SystemMessage,
    TopLogprob,
    UserMessage,
)

__all__ = [
    "AssistantMessage",
    "ChatCompletionClient",
    "ChatCompletionTokenLogprob",
    "CreateResult",
    "FinishReasons",
    "FunctionCall",
    "FunctionExecutionResult",
    "FunctionExecutionResultMessage",
    "Image",
    "ImageDetail",
    "LLMMessage",
    "ModelCapabilities",
    "ModelFamily",
    "ModelInfo",
    "ReplayChatCompletionClient",
    "ReplayExhaustedError",
    "RequestUsage",
    "SystemMessage",
    "TopLogprob",
    "UserMessage",
    "validate_model_info",
]
