"""Models: the client interface, scripted and OpenAI-compatible clients, and the value
types they exchange (LLM messages, function calls, results, usage, images)."""

from ._azure import AzureOpenAIChatCompletionClient
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
from ._ollama import OLLAMA_DEFAULT_TIMEOUT, OllamaChatCompletionClient
from ._openai import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
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
from .image import Image, ImageDetail

__all__ = [  # noqa: RUF022  (plain sorted order, checked by tests)
    "AssistantMessage",
    "AzureOpenAIChatCompletionClient",
    "CHAT_CACHE_VALUE_TYPE",
    "CacheStore",
    "ChatCompletionCache",
    "ChatCompletionClient",
    "ChatCompletionTokenLogprob",
    "ClientClosedError",
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
    "ModelResponseError",
    "OLLAMA_DEFAULT_TIMEOUT",
    "OllamaChatCompletionClient",
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

# Clients AutoGen's documents name that flowlib does not provide: importing one says what
# to use instead (issue 27.1). docs/models.md has the same table.
_NOT_PROVIDED = {
    "AzureAIChatCompletionClient": (
        "AutoGen's client for Azure AI Foundry and GitHub Models (azure-ai-inference SDK)",
        "OpenAIChatCompletionClient(model=..., base_url=<the endpoint's OpenAI-compatible "
        "URL, e.g. https://models.inference.ai.azure.com>, api_key=..., model_info=...), or "
        "AzureOpenAIChatCompletionClient for Azure OpenAI deployments",
    ),
    "SKChatCompletionAdapter": (
        "AutoGen's adapter of Semantic Kernel's chat services",
        "OpenAIChatCompletionClient against the provider's OpenAI-compatible endpoint "
        "(Gemini and Claude model names find theirs by themselves; Ollama has "
        "OllamaChatCompletionClient), or implement ChatCompletionClient",
    ),
    "AnthropicChatCompletionClient": (
        "AutoGen's client on Anthropic's own SDK",
        'OpenAIChatCompletionClient(model="claude-...") : Claude model names go to '
        "Anthropic's OpenAI-compatible endpoint with ANTHROPIC_API_KEY",
    ),
    "AnthropicBedrockChatCompletionClient": (
        "AutoGen's client for Claude on AWS Bedrock (Anthropic's SDK)",
        "OpenAIChatCompletionClient with base_url= an OpenAI-compatible gateway to Bedrock, "
        "or implement ChatCompletionClient",
    ),
    "LlamaCppChatCompletionClient": (
        "AutoGen's in-process llama.cpp client (llama-cpp-python)",
        "OpenAIChatCompletionClient(model=..., base_url=<llama.cpp server>/v1, "
        "model_info=...) against `llama-server`",
    ),
}


def __getattr__(name: str) -> object:
    known = _NOT_PROVIDED.get(name)
    if known is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ..errors import ClientNotProvidedError

    what, instead = known
    error = ClientNotProvidedError(
        f"flowlib does not provide `{name}` ({what}). Use {instead}. See docs/models.md.",
        name=name,
    )
    raise error
