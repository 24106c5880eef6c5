"""Model clients for OpenAI and any OpenAI-compatible server, on the ``openai`` SDK.

Streaming, retries, timeouts and HTTP come from ``openai.AsyncOpenAI``; this module maps
flowlib's messages, tools and options to the Chat Completions request and the response
back to a [`CreateResult`][flowlib.models.CreateResult]. The SDK is imported when a client is built,
not when [`flowlib.models`][flowlib.models] is imported, as it takes a noticeable time to load.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard, TypeVar

from pydantic import BaseModel, ValidationError
from typing_extensions import Self

from .._cancellation import CancellationToken
from .._telemetry import (
    describe_request,
    describe_response,
    traced_create,
    traced_create_stream,
)
from ..component import json_field, load_error, refuse_field, skip_field
from ..component._registry import register_builtin
from ..errors import FlowlibError, InvalidTypeError, InvalidValueError
from ._client import (
    ChatCompletionClient,
    ModelFamily,
    ModelInfo,
    ToolChoice,
    ToolLike,
    validate_model_info,
)
from ._known_models import lookup_context_window, lookup_model_info
from ._openai_config import (
    DEFAULT_BASE_URL,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    SECRET_HEADERS,
    AzureOpenAIClientConfig,
    OpenAIClientConfig,
    create_args_of,
    deadline_of,
    env_key_belongs_to,
    key_of,
    model_info_of,
    same_endpoint,
    timeout_of,
)
from ._openai_mapping import (
    count_tokens,
    finish_reason,
    has_images,
    response_format_for,
    to_logprobs,
    wire_messages,
    wire_tool_choice,
    wire_tools,
)
from ._providers import endpoint_of, forget_openai_environment, provider_key, provider_of_model
from ._types import CreateResult, FunctionCall, LLMMessage, RequestUsage

if TYPE_CHECKING:
    from openai import AsyncAzureOpenAI, AsyncOpenAI

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "AzureOpenAIChatCompletionClient",
    "ModelResponseError",
    "OpenAIChatCompletionClient",
]


_T = TypeVar("_T")

# Sent when a `base_url` server needs no key: the SDK refuses to start without one.
_PLACEHOLDER_KEY = "no-key-needed"

# Families that take the "developer" role instead of "system".
_DEVELOPER_ROLE_FAMILIES = frozenset({ModelFamily.O1, ModelFamily.O3, ModelFamily.O4})

# Request fields the client fills in itself; not accepted as create arguments.
_MANAGED_ARGS = frozenset(
    {"self", "messages", "model", "stream", "tools", "tool_choice", "functions", "function_call"}
)

_EXAMPLE_INFO = (
    "{'vision': False, 'function_calling': True, 'json_output': True, "
    "'family': 'unknown', 'structured_output': True}"
)


class ClientClosedError(FlowlibError, RuntimeError):
    """A request was made on a model client after its ``close()``. Build a new client, or
    close it only when the agents that use it are done."""


class ModelResponseError(FlowlibError, RuntimeError):
    """The model server answered with something that is not a usable completion:
    a body that is not JSON, no choices, a malformed tool call, structured output
    that does not match the requested model, or a stream that was cut off (it ended
    without a finish reason, was not an event stream, stalled past the timeout, or
    carried an error event). Nothing of a failed answer is returned.
    """


@functools.cache
def _create_arg_names() -> frozenset[str]:
    """Keyword arguments ``chat.completions.create`` accepts in the installed SDK."""
    from openai.resources.chat.completions import AsyncCompletions

    return frozenset(inspect.signature(AsyncCompletions.create).parameters) - _MANAGED_ARGS


def _check_create_args(args: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(args) - _create_arg_names())
    if unknown:
        names = ", ".join(f"`{name}`" for name in unknown)
        raise InvalidValueError(
            f"Unknown {where} {names}: they are not parameters of the Chat Completions API "
            "(nor ones the client sets itself: messages, model, stream, tools, tool_choice). "
            "Send server-specific fields in `extra_body={...}`."
        )


def _resolve_model_info(model: str, model_info: ModelInfo | None) -> ModelInfo:
    if model_info is not None:
        validate_model_info(model_info)
        return model_info
    known = lookup_model_info(model)
    if known is None:
        raise InvalidValueError(
            f"`{model}` is not a model flowlib knows (its table holds the names AutoGen "
            "0.7.5 knows: OpenAI, Gemini, Claude and Llama API models), so flowlib cannot "
            f"tell what it supports: pass model_info=, e.g. model_info={_EXAMPLE_INFO}."
        )
    return known


async def _linked(awaitable: Awaitable[_T], token: CancellationToken | None) -> _T:
    """Await ``awaitable``; if ``token`` is cancelled first, cancel it (and so abort the
    HTTP request it is making) and raise ``asyncio.CancelledError``."""
    if token is None:
        return await awaitable
    if token.is_cancelled():
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise asyncio.CancelledError()
    task = asyncio.ensure_future(awaitable)
    token.link_future(task)
    try:
        return await task
    finally:
        token.remove_callback(task.cancel)


async def _within(awaitable: Awaitable[_T], deadline: float | None, model: str, total: float) -> _T:
    """Await ``awaitable`` until the event loop's clock reaches ``deadline``; past it,
    cancel it and raise a ModelResponseError (the client's overall deadline of
    ``total`` seconds, issue 21.4)."""
    if deadline is None:
        return await awaitable
    remaining = deadline - asyncio.get_running_loop().time()
    try:
        return await asyncio.wait_for(awaitable, max(remaining, 0.0))
    except asyncio.TimeoutError as exc:
        if asyncio.get_running_loop().time() < deadline:
            raise  # a timeout of the request itself, not the deadline
        raise ModelResponseError(
            f"`{model}` did not finish its answer within the client's deadline of "
            f"{total:g} s (a server that keeps the connection alive without finishing, or "
            "a very long answer). Raise `deadline=` if the model is just slow."
        ) from exc


_END: Any = object()


def _transport_fault(exc: BaseException) -> str | None:
    """``"timeout"`` or ``"broken"`` for a fault of the SDK's HTTP transport, else None.

    The SDK wraps transport errors only while a request is being sent; while a stream
    is read, whatever its transport raises reaches the reader as it is. Which transport
    that is depends on the installed SDK (``httpx`` in older releases, ``httpx2`` in
    newer ones, ``aiohttp`` as an option), so the fault is recognised by the classes'
    names along its MRO and by the standard library's own types, never by importing a
    transport flowlib does not declare.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or names & {"TimeoutException", "ServerTimeoutError"}:
        return "timeout"
    transport = names & {"TransportError", "ClientError", "StreamError", "NetworkError"}
    if transport or isinstance(exc, (ConnectionError, EOFError)):
        return "broken"
    return None


async def _next_or_end(iterator: Any, model: str) -> Any:
    """The next chunk of a stream, or ``_END``; a broken stream is a ModelResponseError.

    The SDK retries a request only until its answer starts; errors while the stream is
    read (the connection closes, a read times out, the server sends an error event)
    reach the reader unwrapped, as the transport's or ``openai.APIError`` exceptions.
    """
    import openai

    try:
        return await iterator.__anext__()
    except StopAsyncIteration:
        return _END
    except json.JSONDecodeError as exc:
        raise ModelResponseError(
            f"The server streamed a chunk for `{model}` that is not valid JSON: {exc}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ModelResponseError(
            f"The server streamed a chunk for `{model}` that is not valid UTF-8: {exc}"
        ) from exc
    except openai.APITimeoutError as exc:
        raise _stalled(model) from exc
    except openai.APIConnectionError as exc:
        raise _broken(model, exc) from exc
    except openai.APIError as exc:
        raise ModelResponseError(
            f"The server of `{model}` sent an error event mid-stream: {exc.message}"
        ) from exc
    except Exception as exc:
        fault = _transport_fault(exc)
        if fault == "timeout":
            raise _stalled(model) from exc
        if fault == "broken":
            raise _broken(model, exc) from exc
        raise


def _stalled(model: str) -> ModelResponseError:
    return ModelResponseError(
        f"The stream from `{model}` stalled: no data within the client's timeout. "
        "Raise `timeout=` if the server is just slow."
    )


def _broken(model: str, exc: BaseException) -> ModelResponseError:
    return ModelResponseError(
        f"The connection to the server of `{model}` broke mid-stream ({type(exc).__name__}: {exc})."
    )


def _extra_text(obj: Any, *names: str) -> str | None:
    """A string field a server added beyond the OpenAI schema (``reasoning_content``)."""
    extra = getattr(obj, "model_extra", None) or {}
    for name in names:
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _join(*parts: str | None) -> str | None:
    present = [part for part in parts if part]
    return "\n".join(present) if present else None


def _usage(usage: Any) -> RequestUsage:
    if usage is None:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)
    return RequestUsage(
        prompt_tokens=usage.prompt_tokens or 0, completion_tokens=usage.completion_tokens or 0
    )


# The order in which ``chat.completions.create`` writes the body's fields (the openai
# SDK's own order): the direct path writes them in the same order, so the server gets
# the same bytes. Fields not listed here follow in the order given.
_BODY_ORDER = (
    "model",
    "stream",
    "service_tier",
    "messages",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "stop",
    "store",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
)
_BODY_RANK = {name: rank for rank, name in enumerate(_BODY_ORDER)}

# ``create`` arguments that are request options, not body fields.
_OPTION_ARGS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}


def _can_post_directly(client: Any) -> bool:
    """Whether requests can go through the SDK client's ``post`` (see
    `_post_chat_completion()`): an ``AsyncOpenAI`` (or Azure) client of an SDK whose
    request options take the ``security`` key ``chat.completions.create`` sets."""
    try:
        from openai import AsyncOpenAI, RequestOptions
    except ImportError:  # pragma: no cover - an SDK older than 1.x
        return False
    return isinstance(client, AsyncOpenAI) and "security" in RequestOptions.__annotations__


async def _post_chat_completion(client: AsyncOpenAI, kwargs: Mapping[str, Any]) -> Any:
    """Send a Chat Completions request through the SDK client's ``post`` method.

    ``chat.completions.create`` runs its parameter transform over the whole request,
    every message of the history included, on every call: a conversation then costs the
    square of its length. flowlib's request is already plain JSON data (it builds the
    wire messages itself, and the transform of Chat Completions parameters changes no
    value: it has no aliases or formats), so it is sent through ``post``, the SDK's
    documented way to make a request by hand, which keeps the client's retries,
    timeouts, authentication, headers, error classes and SSE streaming. The body is
    written in the SDK's field order, so the server receives the very bytes ``create``
    would send (``tests/models/test_openai_direct_post.py`` checks this on the wire).
    """
    from openai import AsyncStream, RequestOptions
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    options: RequestOptions = {"security": {"bearer_auth": True}}
    body: dict[str, Any] = {}
    for name in sorted(kwargs, key=lambda key: _BODY_RANK.get(key, len(_BODY_RANK))):
        value = kwargs[name]
        option = _OPTION_ARGS.get(name)
        if option is None:
            body[name] = value
        elif value is not None or name == "timeout":  # timeout=None means "no timeout"
            options[option] = value  # type: ignore[literal-required]
    return await client.post(
        "/chat/completions",
        cast_to=ChatCompletion,
        body=body,
        options=options,
        stream=bool(body.get("stream")),
        stream_cls=AsyncStream[ChatCompletionChunk],
    )


class _Request:
    """The keyword arguments of one SDK call, and the pydantic model to check, if any."""

    def __init__(self, kwargs: dict[str, Any], structured: type[BaseModel] | None) -> None:
        self.kwargs = kwargs
        self.structured = structured


class _BaseOpenAIClient(ChatCompletionClient):
    """The shared implementation behind the OpenAI and Azure OpenAI clients."""

    otel_provider_name = "openai"

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str,
        model_info: ModelInfo,
        create_args: Mapping[str, Any],
        context_window: int | None,
        include_name_in_message: bool,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        self._client = client
        self._deadline = _check_deadline(deadline)
        self._model = model
        self._model_info = model_info
        self._create_args = dict(create_args)
        self._context_window = context_window
        self._include_name = include_name_in_message
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._closed = False
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._direct = _can_post_directly(client)

    def _common_config(self, headers_field: str = "default_headers") -> dict[str, Any]:
        """The config fields the OpenAI-based clients share (the component protocol);
        the caller's headers go under ``headers_field``."""
        sdk = self._client
        config: dict[str, Any] = {"model": self._model, "model_info": dict(self._model_info)}
        config["timeout"] = "none" if self.timeout is None else self.timeout
        config["max_retries"] = self.max_retries
        config["deadline"] = "none" if self._deadline is None else self._deadline
        headers: dict[str, str] = {}
        # The SDK keeps the caller's own headers private (its public default_headers adds
        # its own); reading them is allow-listed in tests/test_layers.py.
        for name, value in dict(getattr(sdk, "_custom_headers", None) or {}).items():
            if name.lower() in SECRET_HEADERS:
                skip_field(f"{headers_field}.{name}", "it holds a credential; add it back by hand.")
            else:
                headers[name] = value
        if headers:
            config[headers_field] = headers
        if self._context_window is not None:
            config["context_window"] = self._context_window
        config["include_name_in_message"] = self._include_name
        for name, value in self._create_args.items():
            if isinstance(value, type):
                refuse_field(
                    name,
                    f"`{name}` is the Python class {value.__qualname__}, which a config cannot "
                    "hold; pass it per call (json_output=...) or use the agent's "
                    "output_content_type in code.",
                )
            config[name] = json_field(value, name)
        return config

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def timeout(self) -> float | None:
        """Seconds the SDK waits for the connection and for each read, per try (``None``:
        forever; a ``client=`` given with an ``httpx.Timeout`` reports its read timeout)."""
        value = self._client.timeout
        if value is None or isinstance(value, (int, float)):
            return None if value is None else float(value)
        read = getattr(value, "read", None)
        return None if read is None else float(read)

    @property
    def deadline(self) -> float | None:
        """Seconds one ``create``/``create_stream`` call may take in all, retries and
        streaming included (``None``: no overall bound)."""
        return self._deadline

    @property
    def max_retries(self) -> int:
        """How often the SDK retries a failed request."""
        return int(self._client.max_retries)

    @property
    def model_info(self) -> ModelInfo:
        """What the model can do (built in for known OpenAI models, else as given)."""
        return self._model_info

    # -- building a request -------------------------------------------------------------

    def _build_request(
        self,
        messages: Sequence[LLMMessage],
        tools: Sequence[ToolLike],
        tool_choice: ToolChoice,
        json_output: bool | type[BaseModel] | None,
        extra_create_args: Mapping[str, Any] | None,
    ) -> _Request:
        if self._closed:
            raise ClientClosedError(
                f"The model client for `{self._model}` is closed; build a new one to send "
                "more requests."
            )
        extra = dict(extra_create_args or {})
        _check_create_args(extra, "extra_create_args")
        kwargs = {**self._create_args, **extra}
        info = self._model_info

        response_format = kwargs.pop("response_format", None)
        structured: type[BaseModel] | None = None
        if json_output is None:
            json_output = response_format if _is_model_class(response_format) else None
            if json_output is None and response_format is not None:
                kwargs["response_format"] = response_format
        if json_output is True:
            if not info["json_output"]:
                raise InvalidValueError(
                    f"`{self._model}` does not support JSON mode (model_info json_output "
                    "is False); drop json_output=True or fix model_info."
                )
            kwargs["response_format"] = response_format_for(True)
        elif _is_model_class(json_output):
            if not info.get("structured_output", False):
                raise InvalidValueError(
                    f"`{self._model}` does not support structured output (model_info "
                    "structured_output is False); ask for JSON in the prompt instead."
                )
            structured = json_output
            kwargs["response_format"] = response_format_for(json_output)
        elif json_output not in (None, False):
            raise InvalidTypeError(
                f"json_output must be None, a bool or a pydantic model class, not {json_output!r}."
            )

        if tools:
            if not info["function_calling"]:
                raise InvalidValueError(
                    f"`{self._model}` does not support function calling (model_info "
                    "function_calling is False); call it without tools."
                )
            kwargs["tools"] = wire_tools(tools)
            kwargs["tool_choice"] = wire_tool_choice(tool_choice, tools)
        else:
            if not isinstance(tool_choice, str):
                raise InvalidValueError("tool_choice names a tool, but no tools were given.")
            # The API rejects parallel_tool_calls without tools.
            kwargs.pop("parallel_tool_calls", None)

        if not info["vision"] and has_images(messages):
            raise InvalidValueError(
                f"`{self._model}` does not accept images (model_info vision is False)."
            )
        role = "developer" if info["family"] in _DEVELOPER_ROLE_FAMILIES else "system"
        kwargs["messages"] = wire_messages(
            messages, system_role=role, include_name=self._include_name
        )
        kwargs["model"] = self._model
        return _Request(kwargs, structured)

    def _describe(self, kwargs: Mapping[str, Any]) -> None:
        """Tell the current model-call span where the request goes and what it sets."""
        # A client given as ``client=`` need not be the SDK's (an instrumented wrapper):
        # its address is then unknown, and only the options are told.
        url = getattr(self._client, "base_url", None)
        host = getattr(url, "host", None)
        port = getattr(url, "port", None) or {"https": 443, "http": 80}.get(
            str(getattr(url, "scheme", ""))
        )
        describe_request(
            server=host if isinstance(host, str) and host else None,
            port=port if isinstance(port, int) else None,
            options=kwargs,
        )

    def _record_usage(self, usage: RequestUsage) -> None:
        self._actual += usage
        self._total += usage

    # -- calls --------------------------------------------------------------------------

    @traced_create
    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """Send one Chat Completions request and return its result.

        Args:
            messages: The conversation.
            tools: Tools the model may call.
            tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool to force.
            json_output: ``True`` for JSON mode, a pydantic model class for structured
                output (the content is then the JSON text, checked against the model),
                ``False``/``None`` for neither. Overrides a ``response_format`` create arg.
            extra_create_args: Request options for this call only, over the client's.
            cancellation_token: Cancelling it aborts the HTTP request.

        Returns:
            The result: text, or a list of [`FunctionCall`][flowlib.models.FunctionCall] with finish
            reason ``"function_calls"``; reasoning text the server sent (or text that came
            with tool calls) is in ``thought``.

        Raises:
            ValueError: The model (per ``model_info``) cannot do what was asked, or an
                option is unknown.
            ModelResponseError: The server's answer is malformed.
            openai.APIError: The request failed after the SDK's retries (e.g.
                ``openai.APITimeoutError``, ``openai.RateLimitError``).
            asyncio.CancelledError: ``cancellation_token`` was cancelled.
        """
        request = self._build_request(messages, tools, tool_choice, json_output, extra_create_args)
        self._describe(request.kwargs)
        completion = await _within(
            _linked(self._call(request.kwargs), cancellation_token), *self._deadline_args()
        )
        choices = getattr(completion, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise ModelResponseError(
                f"The server answered `{self._model}` without a message (no `choices`): "
                f"{_preview(completion)}"
            )
        choice = choices[0]
        describe_response(
            response_id=getattr(completion, "id", None),
            model=getattr(completion, "model", None),
            finish_reasons=[c.finish_reason for c in choices if c.finish_reason],
        )
        message = choice.message
        usage = _usage(getattr(completion, "usage", None))
        calls = self._function_calls(
            [
                (call.id, call.function.name, call.function.arguments)
                for call in message.tool_calls or []
                if getattr(call, "type", "function") == "function" and call.function is not None
            ]
        )
        reasoning = _extra_text(message, "reasoning_content", "reasoning")
        text = message.content
        logprobs = to_logprobs(choice.logprobs.content if choice.logprobs else None)
        result = self._result(
            text=text,
            refusal=message.refusal,
            calls=calls,
            reasoning=reasoning,
            reason=choice.finish_reason,
            usage=usage,
            logprobs=logprobs,
            structured=request.structured,
        )
        self._record_usage(usage)
        return result

    @traced_create_stream
    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Stream one completion: text chunks as they arrive, then the
        [`CreateResult`][flowlib.models.CreateResult].

        Tool-call deltas are assembled into complete [`FunctionCall`][flowlib.models.FunctionCall]
        objects. Usage is requested with ``stream_options={"include_usage": True}`` (unless
        ``stream_options`` is given as a create arg); a server that sends none gives a
        usage of 0/0. Arguments and errors are those of
        [`create`][flowlib.models.ChatCompletionClient.create].
        """
        request = self._build_request(messages, tools, tool_choice, json_output, extra_create_args)
        request.kwargs["stream"] = True
        request.kwargs.setdefault("stream_options", {"include_usage": True})
        self._describe(request.kwargs)
        limit = self._deadline_args()
        stream = await _within(_linked(self._call(request.kwargs), cancellation_token), *limit)
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[str]] = {}
        reason: str | None = None
        usage: Any = None
        logprobs: list[Any] = []
        saw_logprobs = False
        response_id: str | None = None
        response_model: str | None = None
        try:
            while True:
                chunk = await _within(
                    _linked(_next_or_end(stream, self._model), cancellation_token), *limit
                )
                if chunk is _END:
                    break
                response_id = response_id or getattr(chunk, "id", None)
                response_model = response_model or getattr(chunk, "model", None)
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                choices = getattr(chunk, "choices", None) or []
                if not choices:
                    continue
                choice = choices[0]
                reason = choice.finish_reason or reason
                if choice.logprobs is not None and choice.logprobs.content is not None:
                    saw_logprobs = True
                    logprobs.extend(choice.logprobs.content)
                delta = choice.delta
                if delta is None:
                    continue
                thinking = _extra_text(delta, "reasoning_content", "reasoning")
                if thinking:
                    reasoning.append(thinking)
                for call in delta.tool_calls or []:
                    # id, name, arguments; name and arguments arrive in pieces.
                    entry = calls.setdefault(call.index or 0, ["", "", ""])
                    if call.id:
                        entry[0] = call.id
                    if call.function is not None:
                        entry[1] += call.function.name or ""
                        entry[2] += call.function.arguments or ""
                if delta.content:
                    text.append(delta.content)
                    yield delta.content
        finally:
            await stream.close()
        if reason is None:
            # A complete stream ends with a finish reason: without one the connection
            # was cut, or the body was no event stream (an HTML error page, ...).
            got = f"{len(''.join(text))} characters" if text or calls else "no content"
            raise ModelResponseError(
                f"The stream from `{self._model}` ended without a finish reason "
                f"(after {got}): the connection was cut or the answer was not an event "
                "stream. The partial answer is discarded."
            )
        describe_response(response_id=response_id, model=response_model, finish_reasons=[reason])
        result_usage = _usage(usage)
        result = self._result(
            text="".join(text) if text else None,
            refusal=None,
            calls=self._function_calls([tuple(calls[index]) for index in sorted(calls)]),
            reasoning="".join(reasoning) or None,
            reason=reason,
            usage=result_usage,
            logprobs=to_logprobs(logprobs) if saw_logprobs else None,
            structured=request.structured,
        )
        self._record_usage(result_usage)
        yield result

    def _deadline_args(self) -> tuple[float | None, str, float]:
        """The loop time this call must end by, for `_within()`."""
        total = self._deadline
        if total is None:
            return None, self._model, 0.0
        return asyncio.get_running_loop().time() + total, self._model, total

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        try:
            if self._direct:
                return await _post_chat_completion(self._client, kwargs)
            return await self._client.chat.completions.create(**kwargs)
        except json.JSONDecodeError as exc:
            raise ModelResponseError(
                f"The server answered `{self._model}` with a body that is not valid JSON: {exc}"
            ) from exc
        except UnicodeDecodeError as exc:
            raise ModelResponseError(
                f"The server answered `{self._model}` with a body that is not valid UTF-8: {exc}"
            ) from exc

    def _function_calls(self, raw: Sequence[tuple[Any, ...]]) -> list[FunctionCall]:
        calls: list[FunctionCall] = []
        for call_id, name, arguments in raw:
            try:
                calls.append(FunctionCall(id=call_id, name=name, arguments=arguments))
            except ValidationError as exc:
                raise ModelResponseError(
                    f"The server sent a malformed tool call for `{self._model}`: "
                    f"id={call_id!r}, name={name!r}, arguments={arguments!r}."
                ) from exc
        return calls

    def _result(
        self,
        *,
        text: str | None,
        refusal: str | None,
        calls: list[FunctionCall],
        reasoning: str | None,
        reason: str | None,
        usage: RequestUsage,
        logprobs: Any,
        structured: type[BaseModel] | None,
    ) -> CreateResult:
        content: str | list[FunctionCall]
        if calls:
            content = calls
            thought = _join(reasoning, text)
        else:
            content = text if text is not None else (refusal or "")
            thought = reasoning
            if structured is not None and text is not None:
                try:
                    structured.model_validate_json(text)
                except ValidationError as exc:
                    raise ModelResponseError(
                        f"`{self._model}` returned output that does not match "
                        f"`{structured.__name__}`: {exc}"
                    ) from exc
        return CreateResult(
            finish_reason=finish_reason(reason, has_tool_calls=bool(calls)),
            content=content,
            usage=usage,
            cached=False,
            logprobs=logprobs,
            thought=thought,
        )

    # -- bookkeeping --------------------------------------------------------------------

    async def close(self) -> None:
        """Close the SDK client and its connections; later requests raise ClientClosedError."""
        self._closed = True
        await self._client.close()

    async def __aenter__(self: _SelfClient) -> _SelfClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def actual_usage(self) -> RequestUsage:
        """Tokens of every completed request so far."""
        return self._actual

    def total_usage(self) -> RequestUsage:
        """Tokens of every completed request so far (the same as
        [`actual_usage`][flowlib.models.ChatCompletionClient.actual_usage]; the difference appears
        with [`ChatCompletionCache`][flowlib.models.ChatCompletionCache])."""
        return self._total

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """Count the prompt tokens of ``messages`` and ``tools``.

        Texts are counted with the model's ``tiktoken`` encoding (``o200k_base`` for a
        model tiktoken does not know), plus a few tokens of framing per message (and 85
        or 765 per image). If the encoding cannot be loaded (tiktoken downloads it on
        first use), texts are estimated at four characters per token and a warning is
        logged once.
        """
        return count_tokens(messages, tools=tools, model=self._model)

    def _known_window(self) -> int | None:
        """The model's context window from flowlib's table, if it knows the model."""
        return lookup_context_window(self._model)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """The model's context window minus
        [`count_tokens`][flowlib.models.ChatCompletionClient.count_tokens] (never below 0).

        Raises:
            ValueError: The context window of the model is unknown; pass
                ``context_window=`` to the client.
        """
        window = self._context_window or self._known_window()
        if window is None:
            raise InvalidValueError(
                f"The context window of `{self._model}` is unknown; pass "
                "context_window=<tokens> to the client."
            )
        return max(0, window - self.count_tokens(messages, tools=tools))


_SelfClient = TypeVar("_SelfClient", bound=_BaseOpenAIClient)


def _is_model_class(value: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def _check_deadline(deadline: float | None) -> float | None:
    from ..errors import ArgumentTypeError, InvalidArgumentError

    if deadline is None:
        return None
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
        raise ArgumentTypeError(
            f"deadline must be a number of seconds or None, not {deadline!r}.",
            argument="deadline",
        )
    if not deadline > 0:
        raise InvalidArgumentError(
            f"deadline must be > 0 seconds (or None for no overall bound), not {deadline!r}.",
            argument="deadline",
        )
    return float(deadline)


def _sdk_options(
    timeout: float | None, max_retries: int, default_headers: Mapping[str, str] | None
) -> dict[str, Any]:
    from ..errors import ArgumentTypeError, InvalidArgumentError

    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise ArgumentTypeError(
                f"timeout must be a number of seconds or None, not {timeout!r}.",
                argument="timeout",
            )
        if not timeout > 0:
            raise InvalidArgumentError(
                f"timeout must be > 0 seconds (or None to wait forever), not {timeout!r}.",
                argument="timeout",
            )
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidArgumentError(
            f"max_retries must be an int >= 0, not {max_retries!r}.", argument="max_retries"
        )
    # timeout=None reaches the SDK as None: no timeout (leaving it out would mean 600 s).
    return {"max_retries": max_retries, "default_headers": default_headers, "timeout": timeout}


class OpenAIChatCompletionClient(_BaseOpenAIClient):
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
        info = _resolve_model_info(model, model_info)
        _check_create_args(create_args, "create argument(s)")
        if client is None:
            from openai import AsyncOpenAI

            # Gemini, Claude and Llama API names default to their provider's endpoint,
            # whose key is read only for it (_providers.py).
            base_url, provider = endpoint_of(model, base_url)
            elsewhere = provider is not None or (
                provider_of_model(model) is not None and not env_key_belongs_to(base_url)
            )
            if api_key == "":  # configs leave it empty for later; the SDK refuses ""
                api_key = _PLACEHOLDER_KEY
            if api_key is None and provider is not None:
                api_key = provider_key(provider)
            elif api_key is None and elsewhere:
                api_key = _PLACEHOLDER_KEY  # not OPENAI_API_KEY: it is not for this endpoint
            if api_key is None and not os.environ.get("OPENAI_API_KEY"):
                if base_url is None and not os.environ.get("OPENAI_BASE_URL"):
                    raise InvalidValueError(
                        "No OpenAI API key: pass api_key=... or set the OPENAI_API_KEY "
                        "environment variable (a local server given by base_url= needs "
                        "neither)."
                    )
                api_key = _PLACEHOLDER_KEY
            client = AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                organization=organization,
                **_sdk_options(timeout, max_retries, default_headers),
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
            api_key = _PLACEHOLDER_KEY  # not the environment's key: it is not for this endpoint
        loaded = cls(
            config.model,
            api_key=api_key,
            base_url=config.base_url,
            model_info=model_info_of(config),
            timeout=timeout_of(config),
            deadline=deadline_of(config),
            max_retries=config.max_retries,
            organization=config.organization,
            default_headers=config.default_headers,
            context_window=config.context_window,
            include_name_in_message=config.include_name_in_message,
            **create_args_of(config),
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


class AzureOpenAIChatCompletionClient(_BaseOpenAIClient):
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
        info = _resolve_model_info(model, model_info)
        _check_create_args(create_args, "create argument(s)")
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
                **_sdk_options(timeout, max_retries, default_headers),
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
        if config.azure_ad_token_provider is not None:
            raise load_error(
                "an `azure_ad_token_provider` cannot be loaded from a config (it would be "
                "code); set AZURE_OPENAI_API_KEY or build the client in code.",
                "azure_ad_token_provider",
            )
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
            model_info=model_info_of(config),
            timeout=timeout_of(config),
            deadline=deadline_of(config),
            max_retries=config.max_retries,
            default_headers=config.default_headers,
            context_window=config.context_window,
            include_name_in_message=config.include_name_in_message,
            **create_args_of(config),
        )


register_builtin(
    OpenAIChatCompletionClient,
    "flowlib.models.OpenAIChatCompletionClient",
    aliases=(
        "autogen_ext.models.openai.OpenAIChatCompletionClient",
        "openai_chat_completion_client",
        "OpenAIChatCompletionClient",
    ),
)
register_builtin(
    AzureOpenAIChatCompletionClient,
    "flowlib.models.AzureOpenAIChatCompletionClient",
    aliases=(
        "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
        "azure_openai_chat_completion_client",
        "AzureOpenAIChatCompletionClient",
    ),
)
