"""Providers reached through their OpenAI-compatible endpoints, and whose key goes where.

As in AutoGen, a model name of Google's (``gemini-...``), Anthropic's (``claude-...``) or
Meta's Llama API (``Llama-...``) given to
[`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient] without a
``base_url`` talks to that provider's OpenAI-compatible endpoint. Unlike AutoGen, the
provider's key variable (``GEMINI_API_KEY``, ...) is read only for that endpoint: a client
with another ``base_url`` (a proxy, a local test server) never sends it, nor
``OPENAI_API_KEY`` unless that endpoint is OpenAI's or ``OPENAI_BASE_URL``. The same rule
as for configs (see ``_openai_config.py``): a key only for the endpoint it belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValueError
from ._openai_config import same_endpoint

__all__ = [
    "PROVIDERS",
    "Provider",
    "endpoint_of",
    "forget_openai_environment",
    "provider_key",
    "provider_of_model",
]


@dataclass(frozen=True)
class Provider:
    """A provider's OpenAI-compatible endpoint and the variable holding its key."""

    name: str
    model_prefix: str
    base_url: str
    key_env: str


PROVIDERS: dict[str, Provider] = {
    "gemini": Provider(
        "Gemini",
        "gemini-",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        "GEMINI_API_KEY",
    ),
    "anthropic": Provider(
        "Anthropic", "claude-", "https://api.anthropic.com/v1/", "ANTHROPIC_API_KEY"
    ),
    "llama": Provider("Llama API", "Llama-", "https://api.llama.com/compat/v1/", "LLAMA_API_KEY"),
}
"""The endpoints AutoGen 0.7.5 routes model names to (its ``GEMINI_OPENAI_BASE_URL``,
``ANTHROPIC_OPENAI_BASE_URL`` and ``LLAMA_API_BASE_URL``)."""


def provider_of_model(model: str) -> Provider | None:
    """The provider whose model ``model`` is, by its name's prefix (as AutoGen)."""
    for provider in PROVIDERS.values():
        if model.startswith(provider.model_prefix):
            return provider
    return None


def endpoint_of(model: str, base_url: str | None) -> tuple[str | None, Provider | None]:
    """The base URL a client of ``model`` talks to, and the provider whose endpoint that
    is (``None``: OpenAI's, the environment's ``OPENAI_BASE_URL``, or any other)."""
    if base_url is None:
        provider = provider_of_model(model)
        return (None, None) if provider is None else (provider.base_url, provider)
    for provider in PROVIDERS.values():
        if same_endpoint(base_url, provider.base_url):
            return base_url, provider
    return base_url, None


def provider_key(provider: Provider) -> str:
    """The provider's key from its environment variable.

    Raises:
        InvalidValueError: The variable is not set.
    """
    key = os.environ.get(provider.key_env)
    if not key:
        raise InvalidValueError(
            f"No {provider.name} API key: pass api_key=... or set the {provider.key_env} "
            f"environment variable (it is sent only to {provider.base_url})."
        )
    return key


def forget_openai_environment(
    sdk: Any, *, organization: str | None, default_headers: Mapping[str, str] | None
) -> None:
    """Drop what the ``openai`` SDK took from the environment for OpenAI's own API
    (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``, ``OPENAI_ADMIN_KEY``,
    ``OPENAI_CUSTOM_HEADERS``): a client of another provider's endpoint must not send it
    there. Only what the caller passed stays."""
    sdk.organization = organization
    sdk.project = None
    if hasattr(sdk, "admin_api_key"):
        sdk.admin_api_key = None
    if hasattr(sdk, "_custom_headers"):
        sdk._custom_headers = dict(default_headers or {})
