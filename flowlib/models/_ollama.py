"""A model client for Ollama, on the ``openai`` SDK against Ollama's OpenAI-compatible API.

AutoGen's ``OllamaChatCompletionClient`` (``autogen_ext.models.ollama``) talks to
Ollama's native API through the ``ollama`` package. flowlib's class of the same name
and arguments (``model``, ``host``, ``model_info``, ``options``, ``response_format``,
``headers``, ``timeout``) sends Chat Completions requests to ``<host>/v1`` instead, so
streaming, retries, timeouts, tool calls, structured output and every fault check are
the ones of [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient].
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from ..component import json_field
from ..component.internal import register_builtin
from ..errors import InvalidTypeError, InvalidValueError
from ._client import ModelInfo
from ._known_models import lookup_ollama_context_window, lookup_ollama_model_info
from ._openai_base import BaseOpenAIClient, resolve_model_info, sdk_options
from ._openai_config import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RETRIES,
    create_args_of,
    model_info_of,
    same_endpoint,
    seconds_of,
)
from ._openai_request import check_create_args
from ._providers import forget_openai_environment

__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "OLLAMA_DEFAULT_TIMEOUT",
    "OllamaChatCompletionClient",
    "OllamaClientConfig",
    "ollama_base_url",
]

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
"""Where Ollama listens unless ``host=`` or the ``OLLAMA_HOST`` variable says otherwise."""

OLLAMA_DEFAULT_TIMEOUT = 300.0
"""Seconds the Ollama client waits by default for the connection and for each read of
the answer. Longer than OpenAI's 60 s: a local server loads the model on its first
request, and an answer that is not streamed arrives only when it is complete."""

OLLAMA_CLOUD = "https://ollama.com"
"""Ollama's hosted API, the one endpoint ``OLLAMA_API_KEY`` is sent to."""

# Ollama's native `options` that have a Chat Completions field on its /v1 endpoint.
_OPTION_FIELDS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "stop": "stop",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "num_predict": "max_tokens",
}

_PLACEHOLDER_KEY = "ollama"  # Ollama ignores the key; the SDK refuses to start without one


def ollama_base_url(host: str | None) -> str:
    """The OpenAI-compatible base URL (``.../v1``) of an Ollama ``host``.

    As the ``ollama`` package reads it: ``host`` (or ``OLLAMA_HOST``, else
    ``127.0.0.1:11434``) may leave out the scheme (``http``), the address (``127.0.0.1``)
    and, without a scheme, the port (``11434``); a path is kept (a proxy's prefix).
    """
    text = (host if host is not None else os.environ.get("OLLAMA_HOST", "")).strip()
    if not text:
        text = DEFAULT_OLLAMA_HOST
    has_scheme = "://" in text
    parts = urlsplit(text if has_scheme else f"http://{text}")
    if parts.scheme not in ("http", "https"):
        raise InvalidValueError(
            f"host={text!r} is not an http(s) address of an Ollama server "
            f"(e.g. {DEFAULT_OLLAMA_HOST!r})."
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidValueError(f"host={text!r} has an invalid port: {exc}") from None
    address = parts.hostname or "127.0.0.1"
    if ":" in address:  # an IPv6 address
        address = f"[{address}]"
    if port is None and not has_scheme:
        port = 11434
    netloc = address if port is None else f"{address}:{port}"
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{netloc}{path}"


def _options_mapping(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if isinstance(options, Mapping):
        items = dict(options)
    elif hasattr(options, "model_dump"):  # ollama.Options
        items = dict(options.model_dump())
    else:
        raise InvalidTypeError(
            f"options must be a mapping of Ollama options (or ollama.Options), not {options!r}."
        )
    return {str(name): value for name, value in items.items() if value is not None}


def _create_args_of_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Ollama's ``options`` as Chat Completions arguments.

    Raises:
        InvalidValueError: An option the OpenAI-compatible endpoint cannot take.
    """
    unsupported = sorted(set(options) - set(_OPTION_FIELDS))
    if unsupported:
        names = ", ".join(f"`{name}`" for name in unsupported)
        raise InvalidValueError(
            f"Ollama option(s) {names} cannot be sent: flowlib talks to Ollama's "
            "OpenAI-compatible endpoint, which takes only "
            f"{', '.join(sorted(_OPTION_FIELDS))} (num_predict as max_tokens). Set the "
            "others on the server: a Modelfile's PARAMETER lines (`PARAMETER num_ctx "
            "8192`), or OLLAMA_CONTEXT_LENGTH for the context size."
        )
    args: dict[str, Any] = {}
    for name, value in options.items():
        if name == "num_predict" and isinstance(value, int) and value < 0:
            continue  # -1 (no limit) and -2 (fill the context) are Ollama's defaults
        args[_OPTION_FIELDS[name]] = value
    return args


class OllamaClientConfig(BaseModel):
    """The config of [`OllamaChatCompletionClient`][flowlib.models.OllamaChatCompletionClient]
    (AutoGen's field names); extra fields are default create arguments."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    model: str
    host: str | None = None
    model_info: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    follow_redirects: bool = True
    timeout: float | Literal["none"] | None = OLLAMA_DEFAULT_TIMEOUT
    deadline: float | Literal["none"] | None = DEFAULT_DEADLINE
    max_retries: int = DEFAULT_MAX_RETRIES
    context_window: int | None = None
    include_name_in_message: bool = False


class OllamaChatCompletionClient(BaseOpenAIClient):
    """A chat-completion client for models served by Ollama.

    AutoGen's name and arguments, built on ``openai.AsyncOpenAI`` against Ollama's
    OpenAI-compatible endpoint (``<host>/v1/chat/completions``): streaming, tool calls,
    JSON mode, structured output, usage, retries and timeouts behave as in
    [`OpenAIChatCompletionClient`][flowlib.models.OpenAIChatCompletionClient].
    Ollama model names AutoGen knows (``llama3.2``, ``qwen3``, ``deepseek-r1``, any
    ``:tag`` of them, ...) have built-in [`ModelInfo`][flowlib.models.ModelInfo]; any
    other model needs ``model_info``.

    Args:
        model: The Ollama model name, e.g. ``"llama3.2"`` or ``"deepseek-r1:8b"``.
        host: The Ollama server; defaults to ``OLLAMA_HOST``, else
            ``http://127.0.0.1:11434`` (scheme, address and port may be left out, as
            the ``ollama`` package allows).
        model_info: What the model supports; required for models flowlib does not know.
        options: Ollama's model options (a mapping or ``ollama.Options``). Those the
            OpenAI-compatible endpoint takes are sent: ``temperature``, ``top_p``,
            ``seed``, ``stop``, ``frequency_penalty``, ``presence_penalty`` and
            ``num_predict`` (as ``max_tokens``); any other (``num_ctx``, ``top_k``,
            ...) is an error naming where to set it instead (a Modelfile).
        response_format: A pydantic model class for structured output (the answer is
            JSON of that class, checked), or a Chat Completions ``response_format``
            dict such as ``{"type": "json_object"}``.
        headers: Headers sent with every request (e.g. a proxy's credentials).
        follow_redirects: Accepted for AutoGen's configs; redirects are always followed
            (``False`` is an error).
        timeout: Seconds to wait for the connection and each read, per try
            ([`OLLAMA_DEFAULT_TIMEOUT`][flowlib.models.OLLAMA_DEFAULT_TIMEOUT], 300 s);
            ``None`` waits forever.
        deadline: Seconds one call may take in all (600 s); ``None``: no overall bound.
        max_retries: How often the SDK retries a failed request (2).
        context_window: The context window in tokens, for
            [`remaining_tokens`][flowlib.models.ChatCompletionClient.remaining_tokens];
            known for the models in flowlib's table.
        include_name_in_message: Send each message's ``source`` as ``name`` (Ollama
            ignores it; off by default, as in AutoGen).
        **create_args: Other default request options of the Chat Completions API
            (``max_tokens``, ``tool_choice``-free options, ``extra_body``, ...).

    No API key is needed or sent, except ``OLLAMA_API_KEY`` to Ollama's hosted API
    (``https://ollama.com``) and nowhere else; ``OPENAI_API_KEY`` and the other OpenAI
    variables are never sent to an Ollama server.

    Raises:
        ValueError: Unknown model without ``model_info``, an option or create argument
            the endpoint cannot take, or a malformed ``host``.

    Examples:
        >>> client = OllamaChatCompletionClient(model="llama3.2", options={"temperature": 0})
        >>> client.model_info["function_calling"], client.base_url
        (True, 'http://127.0.0.1:11434/v1')
        >>> import asyncio
        >>> asyncio.run(client.close())

        A call: ``result = await client.create([UserMessage(content="Hi", source="user")])``.
    """

    otel_provider_name = "ollama"  # gen_ai.provider.name of its spans (no registered value)

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        model_info: ModelInfo | None = None,
        options: Mapping[str, Any] | Any | None = None,
        response_format: type[BaseModel] | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = True,
        timeout: float | None = OLLAMA_DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT_DEADLINE,
        max_retries: int = DEFAULT_MAX_RETRIES,
        context_window: int | None = None,
        include_name_in_message: bool = False,
        **create_args: Any,
    ) -> None:
        from openai import AsyncOpenAI

        if not isinstance(model, str) or not model:
            raise InvalidValueError(f"model must be an Ollama model name, not {model!r}.")
        info = resolve_model_info(
            model,
            model_info,
            lookup=lookup_ollama_model_info,
            known="an Ollama model flowlib knows (its table holds the names AutoGen 0.7.5 "
            "knows, such as llama3.2, qwen3 or deepseek-r1)",
        )
        if follow_redirects is not True:
            raise InvalidValueError(
                "follow_redirects=False is not supported: the openai SDK follows redirects."
            )
        self._options = _options_mapping(options)
        option_args = _create_args_of_options(self._options)
        clash = sorted(set(option_args) & set(create_args))
        if clash:
            raise InvalidValueError(
                f"{', '.join(clash)} given both in options= and as an argument; give it once."
            )
        check_create_args(create_args, "create argument(s)")
        if response_format is not None:
            if not (isinstance(response_format, type) and issubclass(response_format, BaseModel)):
                if not isinstance(response_format, Mapping):
                    raise InvalidTypeError(
                        "response_format must be a pydantic model class or a Chat "
                        f"Completions response_format dict, not {response_format!r}."
                    )
                response_format = dict(response_format)
            create_args["response_format"] = response_format
        self._option_names = frozenset(option_args)
        self._host = host
        base_url = ollama_base_url(host)
        cloud = same_endpoint(base_url, OLLAMA_CLOUD + "/v1")
        api_key = os.environ.get("OLLAMA_API_KEY") if cloud else None
        client = AsyncOpenAI(
            api_key=api_key or _PLACEHOLDER_KEY,
            base_url=base_url,
            **sdk_options(timeout, max_retries, dict(headers) if headers else None),
        )
        forget_openai_environment(client, organization=None, default_headers=headers)
        super().__init__(
            client,
            model=model,
            model_info=info,
            create_args={**option_args, **create_args},
            context_window=context_window,
            include_name_in_message=include_name_in_message,
            deadline=deadline,
        )

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint requests go to (``<host>/v1``)."""
        return str(self._client.base_url).rstrip("/")

    @property
    def options(self) -> dict[str, Any]:
        """The Ollama options given (a copy)."""
        return dict(self._options)

    def _known_window(self) -> int | None:
        return lookup_ollama_context_window(self._model)

    # -- the component protocol ------------------------------------------------------------

    component_config_schema: ClassVar[type[BaseModel]] = OllamaClientConfig

    def _to_config(self) -> OllamaClientConfig:
        config = self._common_config(headers_field="headers")
        for name in self._option_names:
            config.pop(name, None)
        if self._options:
            config["options"] = json_field(self._options, "options")
        if self._host is not None:
            config["host"] = self._host
        return OllamaClientConfig.model_validate(config)

    @classmethod
    def _from_config(cls, config: OllamaClientConfig) -> Self:
        return cls(
            config.model,
            host=config.host,
            model_info=model_info_of(config.model_info),
            options=config.options,
            response_format=config.response_format,
            headers=config.headers,
            follow_redirects=config.follow_redirects,
            timeout=seconds_of(config.timeout, OLLAMA_DEFAULT_TIMEOUT),
            deadline=seconds_of(config.deadline, DEFAULT_DEADLINE),
            max_retries=config.max_retries,
            context_window=config.context_window,
            include_name_in_message=config.include_name_in_message,
            **create_args_of(config),
        )


register_builtin(
    OllamaChatCompletionClient,
    autogen="autogen_ext.models.ollama",
    aliases=("ollama_chat_completion_client",),
)
