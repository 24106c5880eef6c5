"""The declarative configs of the OpenAI clients (component type ``"model"``).

API keys are never written. A loaded OpenAI client takes its key from an ``api_key``
the config's author wrote by hand, else from the environment (``OPENAI_API_KEY``,
``AZURE_OPENAI_API_KEY``), as the constructors do.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from ._client import ModelInfo

__all__ = [
    "DEFAULT_BASE_URL",
    "SECRET_HEADERS",
    "AzureOpenAIClientConfig",
    "OpenAIClientConfig",
    "create_args_of",
    "is_masked",
    "model_info_of",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "openai-api-key"}
)
"""Header names whose values are credentials: never written."""


class _OpenAIBase(BaseModel):
    # Create arguments (temperature, seed, ...) sit next to the fixed fields, as in
    # AutoGen's configs; the client checks their names against the SDK.
    model_config = ConfigDict(extra="allow", protected_namespaces=())

    model: str
    api_key: str | None = None
    model_info: dict[str, Any] | None = None
    timeout: float | None = None
    max_retries: int = 2
    default_headers: dict[str, str] | None = None
    context_window: int | None = None
    include_name_in_message: bool = True


class OpenAIClientConfig(_OpenAIBase):
    """The config of [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient];
    extra fields are default create arguments."""

    base_url: str | None = None
    organization: str | None = None


class AzureOpenAIClientConfig(_OpenAIBase):
    """The config of
    [`AzureOpenAIChatCompletionClient`][flowlib.models.AzureOpenAIChatCompletionClient]."""

    azure_endpoint: str | None = None
    api_version: str | None = None
    azure_deployment: str | None = None
    azure_ad_token_provider: Any = None


def is_masked(value: str | None) -> bool:
    """AutoGen writes a ``SecretStr`` key as ``**********``: that is no key at all."""
    return value is not None and set(value) == {"*"}


def create_args_of(config: _OpenAIBase) -> dict[str, Any]:
    """The default create arguments of a config: its fields beyond the fixed ones."""
    fixed = type(config).model_fields
    return {name: value for name, value in (config.model_extra or {}).items() if name not in fixed}


def model_info_of(config: _OpenAIBase) -> ModelInfo | None:
    """The config's ``model_info`` as a [`ModelInfo`][flowlib.models.ModelInfo]."""
    return None if config.model_info is None else cast(ModelInfo, config.model_info)
