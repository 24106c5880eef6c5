"""The shared implementation behind the OpenAI and Azure OpenAI clients: building the
request from flowlib's messages and options, the call with its deadline, retries and
cancellation, and mapping the answer back to a ``CreateResult``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from pydantic import BaseModel, ValidationError

from .._cancellation import CancellationToken
from ..component import json_field, refuse_field, skip_field
from ..errors import InvalidTypeError, InvalidValueError
from ._client import (
    CreateRequest,
    ModelFamily,
    ModelInfo,
    RequestClient,
    ToolLike,
    validate_model_info,
)
from ._known_models import lookup_context_window, lookup_model_info
from ._openai_config import (
    DEFAULT_DEADLINE,
    SECRET_HEADERS,
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
from ._openai_request import (
    END,
    ClientClosedError,
    ModelResponseError,
    can_post_directly,
    check_create_args,
    extra_text,
    join_text,
    linked,
    next_or_end,
    post_chat_completion,
    usage_of,
    within,
)
from ._tracing import describe_request, describe_response
from ._types import CreateResult, FunctionCall, LLMMessage, RequestUsage

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "PLACEHOLDER_KEY",
    "BaseOpenAIClient",
    "check_deadline",
    "resolve_model_info",
    "sdk_options",
]

# Sent when a `base_url` server needs no key: the SDK refuses to start without one.
PLACEHOLDER_KEY = "no-key-needed"

# Families that take the "developer" role instead of "system".
_DEVELOPER_ROLE_FAMILIES = frozenset({ModelFamily.O1, ModelFamily.O3, ModelFamily.O4})

_EXAMPLE_INFO = (
    "{'vision': False, 'function_calling': True, 'json_output': True, "
    "'family': 'unknown', 'structured_output': True}"
)


def resolve_model_info(
    model: str,
    model_info: ModelInfo | None,
    *,
    lookup: Callable[[str], ModelInfo | None] = lookup_model_info,
    known: str = "a model flowlib knows (its table holds the names AutoGen 0.7.5 knows: "
    "OpenAI, Gemini, Claude and Llama API models)",
) -> ModelInfo:
    """``model_info`` checked, or the info of ``model`` in the ``lookup`` table (whose
    contents ``known`` describes for the error)."""
    if model_info is not None:
        validate_model_info(model_info)
        return model_info
    found = lookup(model)
    if found is None:
        raise InvalidValueError(
            f"`{model}` is not {known}, so flowlib cannot tell what it supports: pass "
            f"model_info=, e.g. model_info={_EXAMPLE_INFO}."
        )
    return found


class _Request:
    """The keyword arguments of one SDK call, and the pydantic model to check, if any."""

    def __init__(self, kwargs: dict[str, Any], structured: type[BaseModel] | None) -> None:
        self.kwargs = kwargs
        self.structured = structured


class BaseOpenAIClient(RequestClient):
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
        super().__init__()
        self._client = client
        self._deadline = check_deadline(deadline)
        self._model = model
        self._model_info = model_info
        self._create_args = dict(create_args)
        self._context_window = context_window
        self._include_name = include_name_in_message
        self._closed = False
        self._direct = can_post_directly(client)

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

    def _build_request(self, request: CreateRequest) -> _Request:
        if self._closed:
            raise ClientClosedError(
                f"The model client for `{self._model}` is closed; build a new one to send "
                "more requests."
            )
        messages, tools, tool_choice = request.messages, request.tools, request.tool_choice
        json_output = request.json_output
        extra = dict(request.extra_create_args or {})
        check_create_args(extra, "extra_create_args")
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

    # -- calls --------------------------------------------------------------------------

    async def _create(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> CreateResult:
        """Send one Chat Completions request and return its result.

        Args:
            request: The call. Its ``json_output``: ``True`` for JSON mode, a pydantic
                model class for structured output (the content is then the JSON text,
                checked against the model), ``False``/``None`` for neither; it overrides
                a ``response_format`` create arg. Its ``extra_create_args``: request
                options for this call only, over the client's.
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
        sdk_request = self._build_request(request)
        self._describe(sdk_request.kwargs)
        completion = await within(
            linked(self._call(sdk_request.kwargs), cancellation_token), *self._deadline_args()
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
        usage = usage_of(getattr(completion, "usage", None))
        calls = self._function_calls(
            [
                (call.id, call.function.name, call.function.arguments)
                for call in message.tool_calls or []
                if getattr(call, "type", "function") == "function" and call.function is not None
            ]
        )
        reasoning = extra_text(message, "reasoning_content", "reasoning")
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
            structured=sdk_request.structured,
        )
        self._record_usage(usage)
        return result

    async def _create_stream(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Stream one completion: text chunks as they arrive, then the
        [`CreateResult`][flowlib.models.CreateResult].

        Tool-call deltas are assembled into complete [`FunctionCall`][flowlib.models.FunctionCall]
        objects. Usage is requested with ``stream_options={"include_usage": True}`` (unless
        ``stream_options`` is given as a create arg); a server that sends none gives a
        usage of 0/0. Arguments and errors are those of
        [`create`][flowlib.models.ChatCompletionClient.create].
        """
        sdk_request = self._build_request(request)
        sdk_request.kwargs["stream"] = True
        sdk_request.kwargs.setdefault("stream_options", {"include_usage": True})
        self._describe(sdk_request.kwargs)
        limit = self._deadline_args()
        stream = await within(linked(self._call(sdk_request.kwargs), cancellation_token), *limit)
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
                chunk = await within(
                    linked(next_or_end(stream, self._model), cancellation_token), *limit
                )
                if chunk is END:
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
                thinking = extra_text(delta, "reasoning_content", "reasoning")
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
        result_usage = usage_of(usage)
        result = self._result(
            text="".join(text) if text else None,
            refusal=None,
            calls=self._function_calls([tuple(calls[index]) for index in sorted(calls)]),
            reasoning="".join(reasoning) or None,
            reason=reason,
            usage=result_usage,
            logprobs=to_logprobs(logprobs) if saw_logprobs else None,
            structured=sdk_request.structured,
        )
        self._record_usage(result_usage)
        yield result

    def _deadline_args(self) -> tuple[float | None, str, float]:
        """The loop time this call must end by, for `within()`."""
        total = self._deadline
        if total is None:
            return None, self._model, 0.0
        return asyncio.get_running_loop().time() + total, self._model, total

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        try:
            if self._direct:
                return await post_chat_completion(self._client, kwargs)
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
            thought = join_text(reasoning, text)
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


_SelfClient = TypeVar("_SelfClient", bound=BaseOpenAIClient)


def _is_model_class(value: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."


def check_deadline(deadline: float | None) -> float | None:
    return _seconds_or_none(deadline, "deadline", none_means="for no overall bound")


def _seconds_or_none(value: float | None, argument: str, *, none_means: str) -> float | None:
    """``value`` as float seconds (> 0), or None; ``none_means`` says what None does."""
    from ..errors import ArgumentTypeError, InvalidArgumentError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(
            f"{argument} must be a number of seconds or None, not {value!r}.",
            argument=argument,
        )
    if not value > 0:
        raise InvalidArgumentError(
            f"{argument} must be > 0 seconds (or None {none_means}), not {value!r}.",
            argument=argument,
        )
    return float(value)


def sdk_options(
    timeout: float | None, max_retries: int, default_headers: Mapping[str, str] | None
) -> dict[str, Any]:
    from ..errors import InvalidArgumentError

    _seconds_or_none(timeout, "timeout", none_means="to wait forever")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidArgumentError(
            f"max_retries must be an int >= 0, not {max_retries!r}.", argument="max_retries"
        )
    # timeout=None reaches the SDK as None: no timeout (leaving it out would mean 600 s).
    return {"max_retries": max_retries, "default_headers": default_headers, "timeout": timeout}
