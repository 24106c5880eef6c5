"""The Azure OpenAI chat-completion client, on ``openai.AsyncAzureOpenAI``."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from ..component import load_error, refuse_field
from ..component.internal import register_builtin
from ..errors import InvalidValueError
from ._client import (
    ModelInfo,
)
from ._openai import OpenAIChatCompletionClient
from ._openai_base import BaseOpenAIClient, resolve_model_info, sdk_options
from ._openai_config import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AzureOpenAIClientConfig,
    client_options_of,
    key_of,
    same_endpoint,
)
from ._openai_request import check_create_args

if TYPE_CHECKING:
    from openai import AsyncAzureOpenAI

__all__ = ["AzureOpenAIChatCompletionClient"]


class AzureOpenAIChatCompletionClient(BaseOpenAIClient):
    """A chat-completion client for Azure OpenAI deployments, on ``openai.AsyncAzureOpenAI``.

    Behaves like [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient]; only the
    connection differs.

    Args:
        model: The underlying model (e.g. ``gpt-4o``): it selects the built-in
            [`ModelInfo`][flowlib.models.ModelInfo] and is sent as the request's ``model``.
        azure_endpoint: The resource endpoint, ``https://<name>.openai.azure.com/``.
        api_version: The Azure OpenAI API version, e.g. ``2024-10-21``.
        azure_deployment: The deployment name; defaults to ``model``.
        api_key: The key; defaults to the ``AZURE_OPENAI_API_KEY`` environment variable.
        azure_ad_token_provider: A callable returning Entra ID tokens, instead of a key.
        model_info: As for
            [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient].
        timeout: Seconds to wait for the connection and each read, per try (60 s);
            ``None`` waits forever.
        deadline: Seconds one call may take in all (600 s); ``None``: no overall bound.
        max_retries: How often the SDK retries (2).
        default_headers: Headers sent with every request.
        client: A ready ``openai.AsyncAzureOpenAI`` to use instead (taken over).
        context_window: The context window in tokens, for
            [`remaining_tokens`][flowlib.models.ChatCompletionClient.remaining_tokens].
        include_name_in_message: Send ``source`` as the message ``name``.
        **create_args: Default request options, as for
            [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient].

    Raises:
        ValueError: As for
            [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient], or neither a
            key nor a token provider is available.

    Examples:
        >>> client = AzureOpenAIChatCompletionClient(
        ...     model="gpt-4o",
        ...     azure_deployment="gpt-4o",
        ...     azure_endpoint="https://example.openai.azure.com/",
        ...     api_version="2024-10-21",
        ...     api_key="...",
        ... )
        >>> client.model_info["family"]
        'gpt-4o'
        >>> import asyncio
        >>> asyncio.run(client.close())
    """

    otel_provider_name = "azure.ai.openai"

    def __init__(
        self,
        *,
        model: str,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        azure_deployment: str | None = None,
        api_key: str | None = None,
        azure_ad_token_provider: Callable[[], str | Awaitable[str]] | None = None,
        model_info: ModelInfo | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT_DEADLINE,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        client: AsyncAzureOpenAI | None = None,
        context_window: int | None = None,
        include_name_in_message: bool = True,
        **create_args: Any,
    ) -> None:
        info = resolve_model_info(model, model_info)
        check_create_args(create_args, "create argument(s)")
        if client is None:
            from openai import AsyncAzureOpenAI

            if azure_endpoint is None or api_version is None:
                raise InvalidValueError(
                    "AzureOpenAIChatCompletionClient needs azure_endpoint= and api_version=."
                )
            if (
                api_key is None
                and azure_ad_token_provider is None
                and not os.environ.get("AZURE_OPENAI_API_KEY")
            ):
                raise InvalidValueError(
                    "No Azure OpenAI credentials: pass api_key= or azure_ad_token_provider=, "
                    "or set the AZURE_OPENAI_API_KEY environment variable."
                )
            client = AsyncAzureOpenAI(
                azure_endpoint=azure_endpoint,
                azure_deployment=azure_deployment or model,
                api_version=api_version,
                api_key=api_key,
                azure_ad_token_provider=azure_ad_token_provider,
                **sdk_options(timeout, max_retries, default_headers),
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

    component_config_schema: ClassVar[type[BaseModel]] = AzureOpenAIClientConfig
    component_code_fields: ClassVar[Mapping[str, str]] = {
        "azure_ad_token_provider": "set AZURE_OPENAI_API_KEY or build the client in code"
    }

    def _to_config(self) -> AzureOpenAIClientConfig:
        # AsyncAzureOpenAI has no public accessors for these; allow-listed in
        # tests/test_layers.py.
        sdk = self._client
        if getattr(sdk, "_azure_ad_token_provider", None) is not None:
            refuse_field(
                "azure_ad_token_provider",
                "an Entra ID token provider is a Python callable, which a config cannot hold; "
                "use AZURE_OPENAI_API_KEY, or build this client in code.",
            )
        config = self._common_config()
        endpoint = getattr(sdk, "_azure_endpoint", None)
        if endpoint is not None:
            config["azure_endpoint"] = str(endpoint)
            env_key = os.environ.get("AZURE_OPENAI_API_KEY")
            if (
                env_key
                and sdk.api_key == env_key
                and not same_endpoint(str(endpoint), os.environ.get("AZURE_OPENAI_ENDPOINT"))
            ):
                config["api_key_env"] = "AZURE_OPENAI_API_KEY"
        config["api_version"] = getattr(sdk, "_api_version", None)
        deployment = getattr(sdk, "_azure_deployment", None)
        if deployment:
            config["azure_deployment"] = deployment
        return AzureOpenAIClientConfig.model_validate(config)

    @classmethod
    def _from_config(cls, config: AzureOpenAIClientConfig) -> Self:
        env_endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT")
        own = config.azure_endpoint is None or same_endpoint(config.azure_endpoint, env_endpoint)
        api_key = key_of(config, owner="AZURE_OPENAI_API_KEY" if own else None)
        if api_key is None and not own:
            raise load_error(
                f"the config names the endpoint `{config.azure_endpoint}` but no key; the "
                "AZURE_OPENAI_API_KEY in the environment is sent only to AZURE_OPENAI_ENDPOINT. "
                "If that key belongs to this endpoint, add `api_key_env: AZURE_OPENAI_API_KEY` "
                "to the config (or `api_key`) and pass "
                "`allow_env=['AZURE_OPENAI_API_KEY']` to `load_component`.",
                "azure_endpoint",
            )
        return cls(
            model=config.model,
            azure_endpoint=config.azure_endpoint or env_endpoint,
            api_version=config.api_version,
            azure_deployment=config.azure_deployment,
            api_key=api_key,
            **client_options_of(config),
        )


register_builtin(
    OpenAIChatCompletionClient,
    autogen="autogen_ext.models.openai",
    aliases=("openai_chat_completion_client",),
)
register_builtin(
    AzureOpenAIChatCompletionClient,
    autogen="autogen_ext.models.openai",
    aliases=("azure_openai_chat_completion_client",),
)
