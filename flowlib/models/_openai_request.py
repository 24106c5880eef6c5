"""One Chat Completions call on the ``openai`` SDK: the checks of caller-given create
arguments, the overall deadline and the cancellation token around the SDK's awaitables,
reading a stream chunk by chunk, the usage, and the errors a broken answer raises."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .._cancellation import CancellationToken
from ..errors import FlowlibError, InvalidValueError
from ._types import RequestUsage

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "BODY_RANK",
    "END",
    "OPTION_ARGS",
    "ClientClosedError",
    "ModelResponseError",
    "broken",
    "can_post_directly",
    "check_create_args",
    "extra_text",
    "join_text",
    "linked",
    "next_or_end",
    "post_chat_completion",
    "stalled",
    "transport_fault",
    "usage_of",
    "within",
]

_T = TypeVar("_T")

# Request fields the client fills in itself; not accepted as create arguments.
_MANAGED_ARGS = frozenset(
    {"self", "messages", "model", "stream", "tools", "tool_choice", "functions", "function_call"}
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


def check_create_args(args: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(args) - _create_arg_names())
    if unknown:
        names = ", ".join(f"`{name}`" for name in unknown)
        raise InvalidValueError(
            f"Unknown {where} {names}: they are not parameters of the Chat Completions API "
            "(nor ones the client sets itself: messages, model, stream, tools, tool_choice). "
            "Send server-specific fields in `extra_body={...}`."
        )


async def linked(awaitable: Awaitable[_T], token: CancellationToken | None) -> _T:
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


async def within(awaitable: Awaitable[_T], deadline: float | None, model: str, total: float) -> _T:
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


END: Any = object()


def transport_fault(exc: BaseException) -> str | None:
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


async def next_or_end(iterator: Any, model: str) -> Any:
    """The next chunk of a stream, or ``END``; a broken stream is a ModelResponseError.

    The SDK retries a request only until its answer starts; errors while the stream is
    read (the connection closes, a read times out, the server sends an error event)
    reach the reader unwrapped, as the transport's or ``openai.APIError`` exceptions.
    """
    import openai

    try:
        return await iterator.__anext__()
    except StopAsyncIteration:
        return END
    except json.JSONDecodeError as exc:
        raise ModelResponseError(
            f"The server streamed a chunk for `{model}` that is not valid JSON: {exc}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ModelResponseError(
            f"The server streamed a chunk for `{model}` that is not valid UTF-8: {exc}"
        ) from exc
    except openai.APITimeoutError as exc:
        raise stalled(model) from exc
    except openai.APIConnectionError as exc:
        raise broken(model, exc) from exc
    except openai.APIError as exc:
        raise ModelResponseError(
            f"The server of `{model}` sent an error event mid-stream: {exc.message}"
        ) from exc
    except Exception as exc:
        fault = transport_fault(exc)
        if fault == "timeout":
            raise stalled(model) from exc
        if fault == "broken":
            raise broken(model, exc) from exc
        raise


def stalled(model: str) -> ModelResponseError:
    return ModelResponseError(
        f"The stream from `{model}` stalled: no data within the client's timeout. "
        "Raise `timeout=` if the server is just slow."
    )


def broken(model: str, exc: BaseException) -> ModelResponseError:
    return ModelResponseError(
        f"The connection to the server of `{model}` broke mid-stream ({type(exc).__name__}: {exc})."
    )


def extra_text(obj: Any, *names: str) -> str | None:
    """A string field a server added beyond the OpenAI schema (``reasoning_content``)."""
    extra = getattr(obj, "model_extra", None) or {}
    for name in names:
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def join_text(*parts: str | None) -> str | None:
    present = [part for part in parts if part]
    return "\n".join(present) if present else None


def usage_of(usage: Any) -> RequestUsage:
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
BODY_RANK = {name: rank for rank, name in enumerate(_BODY_ORDER)}

# ``create`` arguments that are request options, not body fields.
OPTION_ARGS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}


def can_post_directly(client: Any) -> bool:
    """Whether requests can go through the SDK client's ``post`` (see
    `post_chat_completion()`): an ``AsyncOpenAI`` (or Azure) client of an SDK whose
    request options take the ``security`` key ``chat.completions.create`` sets."""
    try:
        from openai import AsyncOpenAI, RequestOptions
    except ImportError:  # pragma: no cover - an SDK older than 1.x
        return False
    return isinstance(client, AsyncOpenAI) and "security" in RequestOptions.__annotations__


async def post_chat_completion(client: AsyncOpenAI, kwargs: Mapping[str, Any]) -> Any:
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
    for name in sorted(kwargs, key=lambda key: BODY_RANK.get(key, len(BODY_RANK))):
        value = kwargs[name]
        option = OPTION_ARGS.get(name)
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
