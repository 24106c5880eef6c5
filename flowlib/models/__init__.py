"""Models: the client interface, scripted and OpenAI-compatible clients, and the value
types they exchange (LLM messages, function calls, results, usage, images)."""

from ._cache import (
    CHAT_CACHE_VALUE_TYPE,
    CacheStore,
    ChatCompletionCache,
    InMemoryStore,
    SQLiteStore,
)
from ._cache_stores import DiskCacheStore, RedisStore
from ._client import (
    ChatCompletionClient,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    validate_model_info,
)
from ._image import Image, ImageDetail
from ._openai import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AzureOpenAIChatCompletionClient,
    ClientClosedError,
    ModelResponseError,
    OpenAIChatCompletionClient,
)
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

__all__ = [  # noqa: RUF022  (plain sorted order, checked by tests)
    "AssistantMessage",
    "AzureOpenAIChatCompletionClient",
    "CHAT_CACHE_VALUE_TYPE",
    "CacheStore",
    "ChatCompletionCache",
    "ChatCompletionClient",
    "ChatCompletionTokenLogprob",
    "CreateResult",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DiskCacheStore",
    "FinishReasons",
    "FunctionCall",
    "FunctionExecutionResult",
    "FunctionExecutionResultMessage",
    "Image",
    "ImageDetail",
    "InMemoryStore",
    "LLMMessage",
    "ModelCapabilities",
    "ModelFamily",
    "ModelInfo",
    "ClientClosedError",
    "ModelResponseError",
    "OpenAIChatCompletionClient",
    "RedisStore",
    "ReplayChatCompletionClient",
    "ReplayExhaustedError",
    "RequestUsage",
    "SQLiteStore",
    "SystemMessage",
    "TopLogprob",
    "UserMessage",
    "validate_model_info",
]
