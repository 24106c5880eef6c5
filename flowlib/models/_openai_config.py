"""The declarative configs of the OpenAI clients (component type ``"model"``).

API keys are never written. A loaded client takes its key from an ``api_key`` the
config's author wrote by hand, or from the environment variable named by
``api_key_env``. Without either, the key in the environment (``OPENAI_API_KEY``,
``AZURE_OPENAI_API_KEY``) is used only for the endpoint it belongs to: OpenAI's own, or
the one the same environment names (``OPENAI_BASE_URL``, ``AZURE_OPENAI_ENDPOINT``). A
config naming another endpoint gets no key from the environment (issue 11.4): a config
from elsewhere cannot send the user's key to its own server. Nor can it name one:
``api_key_env`` reads only a variable the load allows (``allow_env=``) or the key of the
endpoint the config names (issue 21.1).
"""

from __future__ import annotations

import os
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from ..component import read_env
from ._client import ModelInfo

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "SECRET_HEADERS",
    "AzureOpenAIClientConfig",
    "OpenAIClientConfig",
    "client_options_of",
    "create_args_of",
    "env_key_belongs_to",
    "is_masked",
    "key_of",
    "model_info_of",
    "same_endpoint",
    "seconds_of",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds the OpenAI clients wait by default for a connection, for a request to be
sent, and for each read of the answer (every streamed chunk resets the read clock).
The SDK's own default is 600 s, which with its retries held a team for half an hour."""

DEFAULT_DEADLINE = 600.0
"""Seconds one ``create`` or ``create_stream`` call of the OpenAI clients may take in
all, retries and every streamed chunk included (issue 21.4). ``timeout`` bounds each
read, so a server that keeps a connection alive with a keep-alive comment every second
would otherwise hold the call forever."""

DEFAULT_MAX_RETRIES = 2
"""How often the OpenAI clients retry by default (connection errors, timeouts, 408,
409, 429, 5xx), so a hanging server costs at most about 3 x ``DEFAULT_TIMEOUT``."""

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
    api_key_env: str | None = None
    model_info: dict[str, Any] | None = None
    # "none" is no timeout (a null would be dropped from the dump and read as the default).
    timeout: float | Literal["none"] | None = DEFAULT_TIMEOUT
    deadline: float | Literal["none"] | None = DEFAULT_DEADLINE
    max_retries: int = DEFAULT_MAX_RETRIES
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


def create_args_of(config: BaseModel) -> dict[str, Any]:
    """The default create arguments of a config: its fields beyond the fixed ones."""
    fixed = type(config).model_fields
    return {name: value for name, value in (config.model_extra or {}).items() if name not in fixed}


def model_info_of(info: dict[str, Any] | None) -> ModelInfo | None:
    """A config's ``model_info`` field as a [`ModelInfo`][flowlib.models.ModelInfo]."""
    return None if info is None else cast(ModelInfo, info)


def client_options_of(config: _OpenAIBase) -> dict[str, Any]:
    """The constructor keywords every OpenAI-based client's config gives the same way:
    ``model_info``, the times, retries, headers, window, names and create arguments."""
    return {
        "model_info": model_info_of(config.model_info),
        "timeout": seconds_of(config.timeout, DEFAULT_TIMEOUT),
        "deadline": seconds_of(config.deadline, DEFAULT_DEADLINE),
        "max_retries": config.max_retries,
        "default_headers": config.default_headers,
        "context_window": config.context_window,
        "include_name_in_message": config.include_name_in_message,
        **create_args_of(config),
    }


def same_endpoint(url: str | None, other: str | None) -> bool:
    """Whether two endpoint URLs are the same (scheme and host case-insensitive, a
    trailing slash ignored)."""
    if not url or not other:
        return False

    def norm(text: str) -> tuple[str, str, str]:
        parts = urlsplit(text.strip())
        return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")

    return norm(url) == norm(other)


def env_key_belongs_to(base_url: str | None) -> bool:
    """Whether the environment's ``OPENAI_API_KEY`` belongs to ``base_url``: OpenAI's
    own endpoint, or the one in ``OPENAI_BASE_URL`` (``None`` is one of those)."""
    return base_url is None or any(
        same_endpoint(base_url, known)
        for known in (DEFAULT_BASE_URL, os.environ.get("OPENAI_BASE_URL"))
    )


def key_of(config: _OpenAIBase, *, owner: str | None = None) -> str | None:
    """The key a config names: a value, or the value of its ``api_key_env``.

    A config reads an environment variable only if the load allows it
    (``load_component(..., allow_env=[...])``) or it is ``owner``, the variable holding
    the key of the endpoint the config names (issue 21.1).

    Raises:
        ComponentLoadError: ``api_key_env`` names a variable that is not allowed or not
            set.
    """
    if config.api_key is not None and not is_masked(config.api_key):
        return config.api_key
    if config.api_key_env is not None:
        return read_env(config.api_key_env, "api_key_env", owned=config.api_key_env == owner)
    return None


def seconds_of(value: float | str | None, default: float) -> float | None:
    """A config's time in seconds (a timeout, a deadline): ``"none"`` is no bound, a
    missing or null one the default."""
    if value == "none":
        return None
    return default if value is None else float(value)
