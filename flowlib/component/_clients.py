"""Configs of the model clients (component type ``"model"``) and cache stores
(``"cache_store"``).

API keys are never written. A loaded client takes its key from an ``api_key`` the
config's author wrote by hand, or from the environment variable named by
``api_key_env``. Without either, the key in the environment (``OPENAI_API_KEY``,
``AZURE_OPENAI_API_KEY``) is used only for the endpoint it belongs to: OpenAI's own, or
the one the same environment names (``OPENAI_BASE_URL``, ``AZURE_OPENAI_ENDPOINT``). A
config naming another endpoint gets no key from the environment (issue 11.4): a config
from elsewhere cannot send the user's key to its own server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from ..models import (
    CHAT_CACHE_VALUE_TYPE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    AzureOpenAIChatCompletionClient,
    ChatCompletionCache,
    ChatCompletionClient,
    CreateResult,
    InMemoryStore,
    ModelInfo,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    SQLiteStore,
)
from ..models._cache import CacheStore
from ._codec import Dumper, Loader
from ._model import ComponentModel
from ._registry import ComponentSpec

__all__ = ["client_specs"]

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Header names whose values are credentials: never written.
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "openai-api-key"}
)


# Sent to a config's own endpoint when it names no key: the SDK refuses to start without
# one, and the environment's key is not for that endpoint.
_NO_KEY = "no-key-needed"


def _is_masked(value: str | None) -> bool:
    """AutoGen writes a ``SecretStr`` key as ``**********``: that is no key at all."""
    return value is not None and set(value) == {"*"}


def _same_endpoint(url: str | None, other: str | None) -> bool:
    """Whether two endpoint URLs are the same (scheme and host case-insensitive, a
    trailing slash ignored)."""
    if not url or not other:
        return False

    def norm(text: str) -> tuple[str, str, str]:
        parts = urlsplit(text.strip())
        return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")

    return norm(url) == norm(other)


def _named_key(parsed: _OpenAIBase, loader: Loader) -> str | None:
    """The key the config names: a value, or the value of ``api_key_env``."""
    if parsed.api_key is not None and not _is_masked(parsed.api_key):
        return parsed.api_key
    if parsed.api_key_env is not None:
        value = os.environ.get(parsed.api_key_env)
        if not value:
            raise loader.error(
                f"`api_key_env` names the environment variable `{parsed.api_key_env}`, "
                "which is not set.",
                "api_key_env",
            )
        return value
    return None


class _OpenAIBase(BaseModel):
    # Create arguments (temperature, seed, ...) sit next to the fixed fields, as in
    # AutoGen's configs; the client checks their names against the SDK.
    model_config = ConfigDict(extra="allow", protected_namespaces=())

    model: str
    api_key: str | None = None
    api_key_env: str | None = None
    model_info: dict[str, Any] | None = None
    timeout: float | None = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    default_headers: dict[str, str] | None = None
    context_window: int | None = None
    include_name_in_message: bool = True


class OpenAIConfig(_OpenAIBase):
    base_url: str | None = None
    organization: str | None = None


class AzureOpenAIConfig(_OpenAIBase):
    azure_endpoint: str | None = None
    api_version: str | None = None
    azure_deployment: str | None = None
    azure_ad_token_provider: Any = None


_FIXED_OPENAI = frozenset(OpenAIConfig.model_fields)
_FIXED_AZURE = frozenset(AzureOpenAIConfig.model_fields)


def _common(client: Any, dumper: Dumper) -> dict[str, Any]:
    sdk = client._client
    config: dict[str, Any] = {"model": client._model, "model_info": dict(client._model_info)}
    config["timeout"] = client.timeout  # None (no timeout) is written as null
    config["max_retries"] = client.max_retries
    headers: dict[str, str] = {}
    for name, value in dict(getattr(sdk, "_custom_headers", {}) or {}).items():
        if name.lower() in _SECRET_HEADERS:
            dumper.skip(f"default_headers.{name}", "it holds a credential; add it back by hand.")
        else:
            headers[name] = value
    if headers:
        config["default_headers"] = headers
    if client._context_window is not None:
        config["context_window"] = client._context_window
    config["include_name_in_message"] = client._include_name
    for name, value in client._create_args.items():
        if isinstance(value, type):
            dumper.refuse(
                name,
                f"`{name}` is the Python class {value.__qualname__}, which a config cannot "
                "hold; pass it per call (json_output=...) or use the agent's "
                "output_content_type in code.",
            )
        config[name] = dumper.json_value(value, name)
    return config


def _openai_to_config(client: Any, dumper: Dumper) -> Mapping[str, Any]:
    sdk = client._client
    config = _common(client, dumper)
    base_url = str(sdk.base_url).rstrip("/")
    if base_url != _DEFAULT_BASE_URL:
        config["base_url"] = base_url
        env_key = os.environ.get("OPENAI_API_KEY")
        if env_key and sdk.api_key == env_key and not _openai_env_endpoint(base_url):
            # The client sends the environment's key to this endpoint: say so by name,
            # since a loaded config gets no key from the environment for it otherwise.
            config["api_key_env"] = "OPENAI_API_KEY"
    if sdk.organization:
        config["organization"] = sdk.organization
    return config


def _create_args(parsed: BaseModel, fixed: frozenset[str]) -> dict[str, Any]:
    return {name: value for name, value in (parsed.model_extra or {}).items() if name not in fixed}


def _model_info(parsed: _OpenAIBase) -> ModelInfo | None:
    return None if parsed.model_info is None else cast(ModelInfo, parsed.model_info)


def _openai_env_endpoint(base_url: str | None) -> bool:
    """Whether the environment's ``OPENAI_API_KEY`` belongs to ``base_url``."""
    return base_url is None or any(
        _same_endpoint(base_url, known)
        for known in (_DEFAULT_BASE_URL, os.environ.get("OPENAI_BASE_URL"))
    )


def _openai_from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(OpenAIConfig, config)
    api_key = _named_key(parsed, loader)
    if api_key is None and not _openai_env_endpoint(parsed.base_url):
        api_key = _NO_KEY  # not the environment's key: it is not for this endpoint
    return loader.build(
        target.__name__,
        lambda: target(
            parsed.model,
            api_key=api_key,
            base_url=parsed.base_url,
            model_info=_model_info(parsed),
            timeout=parsed.timeout,
            max_retries=parsed.max_retries,
            organization=parsed.organization,
            default_headers=parsed.default_headers,
            context_window=parsed.context_window,
            include_name_in_message=parsed.include_name_in_message,
            **_create_args(parsed, _FIXED_OPENAI),
        ),
    )


def _azure_to_config(client: Any, dumper: Dumper) -> Mapping[str, Any]:
    sdk = client._client
    if getattr(sdk, "_azure_ad_token_provider", None) is not None:
        dumper.refuse(
            "azure_ad_token_provider",
            "an Entra ID token provider is a Python callable, which a config cannot hold; "
            "use AZURE_OPENAI_API_KEY, or build this client in code.",
        )
    config = _common(client, dumper)
    endpoint = getattr(sdk, "_azure_endpoint", None)
    if endpoint is not None:
        config["azure_endpoint"] = str(endpoint)
        env_key = os.environ.get("AZURE_OPENAI_API_KEY")
        if (
            env_key
            and sdk.api_key == env_key
            and not _same_endpoint(str(endpoint), os.environ.get("AZURE_OPENAI_ENDPOINT"))
        ):
            config["api_key_env"] = "AZURE_OPENAI_API_KEY"
    config["api_version"] = sdk._api_version
    deployment = getattr(sdk, "_azure_deployment", None)
    if deployment:
        config["azure_deployment"] = deployment
    return config


def _azure_from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(AzureOpenAIConfig, config)
    if parsed.azure_ad_token_provider is not None:
        raise loader.error(
            "an `azure_ad_token_provider` cannot be loaded from a config (it would be code); "
            "set AZURE_OPENAI_API_KEY or build the client in code.",
            "azure_ad_token_provider",
        )
    api_key = _named_key(parsed, loader)
    env_endpoint = os.environ.get("AZURE_OPENAI_ENDPOINT")
    if (
        api_key is None
        and parsed.azure_endpoint is not None
        and not _same_endpoint(parsed.azure_endpoint, env_endpoint)
    ):
        raise loader.error(
            f"the config names the endpoint `{parsed.azure_endpoint}` but no key; the "
            "AZURE_OPENAI_API_KEY in the environment is sent only to AZURE_OPENAI_ENDPOINT. "
            "If that key belongs to this endpoint, add `api_key_env: AZURE_OPENAI_API_KEY` "
            "to the config (or `api_key`).",
            "azure_endpoint",
        )
    return loader.build(
        target.__name__,
        lambda: target(
            model=parsed.model,
            azure_endpoint=parsed.azure_endpoint or env_endpoint,
            api_version=parsed.api_version,
            azure_deployment=parsed.azure_deployment,
            api_key=api_key,
            model_info=_model_info(parsed),
            timeout=parsed.timeout,
            max_retries=parsed.max_retries,
            default_headers=parsed.default_headers,
            context_window=parsed.context_window,
            include_name_in_message=parsed.include_name_in_message,
            **_create_args(parsed, _FIXED_AZURE),
        ),
    )


class ReplayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    chat_completions: list[str | CreateResult]
    model_info: dict[str, Any] | None = None
    latency: float = 0.0


def _replay_to_config(client: Any, dumper: Dumper) -> Mapping[str, Any]:
    script = [
        item if isinstance(item, str) else item.model_dump(mode="json", exclude_none=True)
        for item in client._script
    ]
    config: dict[str, Any] = {"chat_completions": script, "model_info": dict(client._model_info)}
    if client._latency:
        config["latency"] = client._latency
    return config


def _replay_from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(ReplayConfig, config)
    info = None if parsed.model_info is None else cast(ModelInfo, parsed.model_info)
    return loader.build(
        target.__name__,
        lambda: target(parsed.chat_completions, model_info=info, latency=parsed.latency),
    )


class CacheConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    client: ComponentModel
    store: ComponentModel | None = None


def _cache_to_config(cache: Any, dumper: Dumper) -> Mapping[str, Any]:
    return {
        "client": dumper.component(cache.client, "client"),
        "store": dumper.component(cache.store, "store"),
    }


def _cache_from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(CacheConfig, config)
    client = loader.component(parsed.client, "client", ChatCompletionClient)
    store = None if parsed.store is None else loader.component(parsed.store, "store", CacheStore)
    return loader.build(target.__name__, lambda: target(client, store))


class EmptyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SQLiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    table: str = "flowlib_cache"


def _sqlite_to_config(store: Any, dumper: Dumper) -> Mapping[str, Any]:
    if getattr(store._adapter, "_type", CHAT_CACHE_VALUE_TYPE) is not CHAT_CACHE_VALUE_TYPE:
        dumper.refuse(
            "value_type",
            "a custom value_type is a Python type, which a config cannot hold; only "
            "stores of chat results (the default) can be dumped.",
        )
    return {"path": os.fspath(store.path), "table": store._table}


def _sqlite_from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    parsed = loader.validate(SQLiteConfig, config)
    return loader.build(target.__name__, lambda: target(parsed.path, table=parsed.table))


def _in_memory_from_config(target: type, config: Mapping[str, Any], loader: Loader) -> Any:
    loader.validate(EmptyConfig, config)
    return target()


def client_specs() -> list[ComponentSpec]:
    """The specs of the model clients and cache stores."""
    return [
        ComponentSpec(
            cls=OpenAIChatCompletionClient,
            provider="flowlib.models.OpenAIChatCompletionClient",
            component_type="model",
            to_config=_openai_to_config,
            from_config=_openai_from_config,
            aliases=(
                "autogen_ext.models.openai.OpenAIChatCompletionClient",
                "openai_chat_completion_client",
                "OpenAIChatCompletionClient",
            ),
        ),
        ComponentSpec(
            cls=AzureOpenAIChatCompletionClient,
            provider="flowlib.models.AzureOpenAIChatCompletionClient",
            component_type="model",
            to_config=_azure_to_config,
            from_config=_azure_from_config,
            aliases=(
                "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
                "azure_openai_chat_completion_client",
                "AzureOpenAIChatCompletionClient",
            ),
        ),
        ComponentSpec(
            cls=ReplayChatCompletionClient,
            provider="flowlib.models.ReplayChatCompletionClient",
            component_type="model",
            to_config=_replay_to_config,
            from_config=_replay_from_config,
            aliases=(
                "autogen_ext.models.replay.ReplayChatCompletionClient",
                "ReplayChatCompletionClient",
            ),
            shared_state=True,
        ),
        ComponentSpec(
            cls=ChatCompletionCache,
            provider="flowlib.models.ChatCompletionCache",
            component_type="model",
            to_config=_cache_to_config,
            from_config=_cache_from_config,
            aliases=("autogen_ext.models.cache.ChatCompletionCache", "ChatCompletionCache"),
        ),
        ComponentSpec(
            cls=InMemoryStore,
            provider="flowlib.models.InMemoryStore",
            component_type="cache_store",
            to_config=lambda store, dumper: {},
            from_config=_in_memory_from_config,
            aliases=("autogen_core.InMemoryStore", "InMemoryStore"),
            shared_state=True,
        ),
        ComponentSpec(
            cls=SQLiteStore,
            provider="flowlib.models.SQLiteStore",
            component_type="cache_store",
            to_config=_sqlite_to_config,
            from_config=_sqlite_from_config,
            aliases=("SQLiteStore",),
        ),
    ]
