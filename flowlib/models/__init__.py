"""Model-side value types: LLM messages, function calls, results, usage and images.

Model clients (``ChatCompletionClient`` and its implementations) join this package later;
add their names to ``__all__`` below.
"""

from ._image import Image, ImageDetail
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
    "ChatCompletionTokenLogprob",
    "CreateResult",
    "FinishReasons",
    "FunctionCall",
    "FunctionExecutionResult",
    "FunctionExecutionResultMessage",
    "Image",
    "ImageDetail",
    "LLMMessage",
    "RequestUsage",
    "SystemMessage",
    "TopLogprob",
    "UserMessage",
]
