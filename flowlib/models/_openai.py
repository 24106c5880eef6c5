"""Model clients for OpenAI and any OpenAI-compatible server, on the ``openai`` SDK.

Streaming, retries, timeouts and HTTP come from ``openai.AsyncOpenAI``; this module maps
flowlib's messages, tools and options to the Chat Completions request and the response
back to a [`CreateResult`][flowlib.models.CreateResult]. The SDK is imported when a client is built,
not when [`flowlib.models`][flowlib.models] is imported, as it takes a noticeable time to load.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..errors import InvalidTypeError, InvalidValueError
from ._client import (
    ModelInfo,
)
from ._openai_base import (
    PLACEHOLDER_KEY,
    BaseOpenAIClient,
    resolve_model_info,
    sdk_options,
)
from ._openai_config import (
    DEFAULT_BASE_URL,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    OpenAIClientConfig,
    client_options_of,
    env_key_belongs_to,
    key_of,
)
from ._openai_request import ClientClosedError, ModelResponseError, check_create_args
from ._providers import endpoint_of, forget_openai_environment, provider_key, provider_of_model

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "ClientClosedError",
    "ModelResponseError",
    "OpenAIChatCompletionClient",
]


class OpenAIChatCompletionClient(BaseOpenAIClient):
    """A chat-completion client for OpenAI and any OpenAI-compatible server.

    Built on ``openai.AsyncOpenAI``: retries, timeouts and streaming come from the SDK.
    Known OpenAI model names (``gpt-4o``, ``gpt-4.1-mini``, ``o3``, dated variants, ...)
    have built-in [`ModelInfo`][flowlib.models.ModelInfo]; any other model (vLLM, Ollama, llama.cpp
    server, Gemini's OpenAI endpoint, ...) needs ``base_url`` and ``model_info``.

    Args:
        model: The model name sent with each request.
        api_key: The API key; defaults to the ``OPENAI_API_KEY`` environment variable.
            A ``base_url`` server that needs no key can be used without one; an empty
            key (``api_key=""``, as configs write it) builds, and sends a placeholder.
        base_url: The server's base URL, e.g. ``http://localhost:11434/v1``.
        model_info: What the model supports; required for models flowlib does not know.
        timeout: Seconds to wait for the connection and for each read of the answer,
            per try ([`DEFAULT_TIMEOUT`][flowlib.models.DEFAULT_TIMEOUT], 60 s); ``None``
            waits forever.
        deadline: Seconds one ``create`` or ``create_stream`` call may take in all,
            retries and every streamed chunk included
            ([`DEFAULT_DEADLINE`][flowlib.models.DEFAULT_DEADLINE], 600 s); past it the
            request is aborted with a ``ModelResponseError``. ``None``: no overall bound.
        max_retries: How often the SDK retries connection errors, timeouts, 408, 409,
            429 and 5xx ([`DEFAULT_MAX_RETRIES`][flowlib.models.DEFAULT_MAX_RETRIES], 2).
        organization: The OpenAI organization id.
        default_headers: Headers sent with every request.
        client: A ready ``openai.AsyncOpenAI`` to use instead of building one from the
            options above (which must then be left out). The wrapper takes it over:
            [`close`][flowlib.models.ChatCompletionClient.close] closes it.
        context_window: The model's context window in tokens, for
            [`remaining_tokens`][flowlib.models.ChatCompletionClient.remaining_tokens]; known for
            OpenAI models.
        include_name_in_message: Send each message's ``source`` as the ``name`` field
            (some compatible servers reject it).
        **create_args: Default request options: ``temperature``, ``top_p``, ``seed``,
            ``max_tokens``, ``max_completion_tokens``, ``stop``, ``presence_penalty``,
            ``frequency_penalty``, ``parallel_tool_calls``, ``response_format`` (a dict,
            or a pydantic model class for structured output), ``user``, ``logprobs``,
            ``top_logprobs``, ``reasoning_effort``, ``extra_body``, ... (any parameter
            of ``chat.completions.create``).

    Raises:
        ValueError: Unknown model without ``model_info``, incomplete ``model_info``, an
            unknown create argument, or no API key (and no ``base_url``).
        TypeError: ``client`` given together with connection options.

    Examples:
        >>> client = OpenAIChatCompletionClient(
        ...     "llama3.2",
        ...     base_url="http://localhost:11434/v1",
        ...     model_info={"vision": False, "function_calling": True, "json_output": True,
        ...                 "family": "unknown", "structured_output": True},
        ...     temperature=0.0,
        ... )
        >>> client.model_info["function_calling"]
        True
        >>> import asyncio
        >>> asyncio.run(client.close())

        A call: ``result = await client.create([UserMessage(content="Hi", source="user")])``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        model_info: ModelInfo | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT_DEADLINE,
        max_retries: int = DEFAULT_MAX_RETRIES,
        organization: str | None = None,
        default_headers: Mapping[str, str] | None = None,
        client: AsyncOpenAI | None = None,
        context_window: int | None = None,
        include_name_in_message: bool = True,
        **create_args: Any,
    ) -> None:
        info = resolve_model_info(model, model_info)
        check_create_args(create_args, "create argument(s)")
        if client is None:
            from openai import AsyncOpenAI

            # Gemini, Claude and Llama API names default to their provider's endpoint,
            # whose key is read only for it (_providers.py).
            base_url, provider = endpoint_of(model, base_url)
            elsewhere = provider is not None or (
                provider_of_model(model) is not None and not env_key_belongs_to(base_url)
            )
            if api_key == "":  # configs leave it empty for later; the SDK refuses ""
                api_key = PLACEHOLDER_KEY
            if api_key is None and provider is not None:
                api_key = provider_key(provider)
            elif api_key is None and elsewhere:
                api_key = PLACEHOLDER_KEY  # not OPENAI_API_KEY: it is not for this endpoint
            if api_key is None and not os.environ.get("OPENAI_API_KEY"):
                if base_url is None and not os.environ.get("OPENAI_BASE_URL"):
                    raise InvalidValueError(
                        "No OpenAI API key: pass api_key=... or set the OPENAI_API_KEY "
                        "environment variable (a local server given by base_url= needs "
                        "neither)."
                    )
                api_key = PLACEHOLDER_KEY
            client = AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                organization=organization,
                **sdk_options(timeout, max_retries, default_headers),
            )
            if elsewhere:
                forget_openai_environment(
                    client, organization=organization, default_headers=default_headers
                )
        elif api_key or base_url or organization or default_headers or timeout != DEFAULT_TIMEOUT:
            raise InvalidTypeError(
                "Pass either client= or connection options (api_key, base_url, organization, "
                "default_headers, timeout), not both: configure the AsyncOpenAI you pass."
            )
        super().__init__(
            client,
            model=model,
            model_info=info,
            create_args=create_args,
            context_window=context_window,
            include_name_in_message=include_name_in_message,
            deadline=deadline,
        )

    # -- the component protocol ------------------------------------------------------------

    component_config_schema: ClassVar[type[BaseModel]] = OpenAIClientConfig

    def _to_config(self) -> OpenAIClientConfig:
        config = self._common_config()
        base_url = str(self._client.base_url).rstrip("/")
        if base_url != DEFAULT_BASE_URL:
            config["base_url"] = base_url
            env_key = os.environ.get("OPENAI_API_KEY")
            if env_key and self._client.api_key == env_key and not env_key_belongs_to(base_url):
                # The client sends the environment's key to this endpoint: say so by
                # name, since a loaded config gets no key from the environment for it.
                config["api_key_env"] = "OPENAI_API_KEY"
        if self._client.organization:
            config["organization"] = self._client.organization
        return OpenAIClientConfig.model_validate(config)

    @classmethod
    def _from_config(cls, config: OpenAIClientConfig) -> Self:
        base_url, provider = endpoint_of(config.model, config.base_url)
        foreign = not env_key_belongs_to(base_url)
        owner = provider.key_env if provider else None if foreign else "OPENAI_API_KEY"
        api_key = key_of(config, owner=owner)
        if api_key is None and foreign and provider is None:
            api_key = PLACEHOLDER_KEY  # not the environment's key: it is not for this endpoint
        loaded = cls(
            config.model,
            api_key=api_key,
            base_url=config.base_url,
            organization=config.organization,
            **client_options_of(config),
        )
        if foreign:
            # Nor the environment's organization and project (OPENAI_ORG_ID,
            # OPENAI_PROJECT_ID), which the SDK would send to any endpoint.
            # OPENAI_PROJECT_ID), which the SDK would send to any endpoint, nor the
            # admin key and custom headers (OPENAI_ADMIN_KEY, OPENAI_CUSTOM_HEADERS).
            sdk: Any = loaded._client
            sdk.organization = config.organization
            sdk.project = None
            if hasattr(sdk, "admin_api_key"):
                sdk.admin_api_key = None
            if hasattr(sdk, "_custom_headers"):
                sdk._custom_headers = dict(config.default_headers or {})
        return loaded
