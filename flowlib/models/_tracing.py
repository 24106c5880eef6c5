"""The spans and log events of model calls: one ``chat <model>`` span a call, made by
``ChatCompletionClient.__init_subclass__`` wrapping a client class's own ``create`` and
``create_stream`` (flowlib's clients and the user's alike: the one way a model call is
traced), with the request and answer details the client describes from inside its call."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass
from typing import Any, TypeVar, cast

from opentelemetry.trace import Span, SpanKind

from .._telemetry import provider_name, record_failure, tracer
from ..logging import LLMCallEvent, LLMStreamEndEvent, LLMStreamStartEvent, event_logger

__all__ = [
    "ModelCall",
    "describe_request",
    "describe_response",
    "model_call",
    "trace_client_class",
    "traced_create",
    "traced_create_stream",
    "untraced",
]

_T = TypeVar("_T")
_Create = TypeVar("_Create", bound=Callable[..., Awaitable[Any]])
_CreateStream = TypeVar("_CreateStream", bound=Callable[..., AsyncGenerator[Any, None]])


# --- model calls ---------------------------------------------------------------------


# Request options recorded as span attributes when a call sets them: option -> attribute.
_REQUEST_OPTIONS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
}


@dataclass(slots=True)
class ModelCall:
    """Records one model call: its span (if tracing) and its log events (if logging)."""

    span: Span | None
    _: KW_ONLY
    system: str
    model: str
    messages: Sequence[Any]
    stream: bool
    reasons_sent: bool = False

    def request(self, *, server: str | None, port: int | None, options: Mapping[str, Any]) -> None:
        """What the client sends: the server it calls and the request options it set."""
        span = self.span
        if span is None:
            return
        if server:
            span.set_attribute("server.address", server)
            if port is not None:
                span.set_attribute("server.port", port)
        for option, attribute in _REQUEST_OPTIONS.items():
            value = options.get(option)
            if isinstance(value, int | float) and not isinstance(value, bool):
                span.set_attribute(attribute, value)
        stop = options.get("stop")
        if isinstance(stop, str):
            stop = [stop]
        if isinstance(stop, list) and all(isinstance(item, str) for item in stop):
            span.set_attribute("gen_ai.request.stop_sequences", stop)
        count = options.get("n")
        if isinstance(count, int) and count != 1:
            span.set_attribute("gen_ai.request.choice.count", count)

    def response(
        self, *, response_id: str | None, model: str | None, finish_reasons: Sequence[str]
    ) -> None:
        """What the server answered, as it sent it (ids, model, finish reasons)."""
        span = self.span
        if span is None:
            return
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)
        if model:
            span.set_attribute("gen_ai.response.model", model)
        if finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", list(finish_reasons))
            self.reasons_sent = True

    def done(self, result: Any) -> None:
        """The call returned ``result`` (a ``CreateResult``)."""
        usage = getattr(result, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        span = self.span
        if span is not None:
            span.set_attribute("gen_ai.usage.input_tokens", prompt)
            span.set_attribute("gen_ai.usage.output_tokens", completion)
            reason = getattr(result, "finish_reason", None)
            if reason is not None and not self.reasons_sent:
                # A client that does not report what its server sent: its own reason.
                span.set_attribute("gen_ai.response.finish_reasons", [str(reason)])
            if getattr(result, "cached", False):
                span.set_attribute("flowlib.cached", True)
        if event_logger.isEnabledFor(logging.INFO):
            fields = {"model": self.model, "system": self.system}
            if self.stream:
                event_logger.info(
                    LLMStreamEndEvent(
                        response=result,
                        prompt_tokens=prompt,
                        completion_tokens=completion,
                        **fields,
                    )
                )
            else:
                event_logger.info(
                    LLMCallEvent(
                        messages=self.messages,
                        response=result,
                        prompt_tokens=prompt,
                        completion_tokens=completion,
                        **fields,
                    )
                )


_NO_MODEL_CALL = ModelCall(None, system="", model="", messages=(), stream=False)


@contextmanager
def model_call(
    *, system: str, model: str, messages: Sequence[Any], stream: bool = False
) -> Iterator[ModelCall]:
    """Trace and log one model call; call ``done(result)`` on what it yields.

    Args:
        system: ``gen_ai.provider.name`` (``"openai"``, ``"azure.ai.openai"``, ...).
        model: The requested model.
        messages: The request's messages (logged only when the event logger is on).
        stream: Whether the call streams.
    """
    active = tracer()
    logs = event_logger.isEnabledFor(logging.INFO)
    if active is None and not logs:
        yield _NO_MODEL_CALL
        return
    if logs and stream:
        event_logger.info(LLMStreamStartEvent(messages=messages, model=model, system=system))
    span = None
    if active is not None:
        # Not made current: a model call has no child spans, and a streamed call is an
        # async generator that must not leave its span current while suspended.
        span = active.start_span(
            f"chat {model}",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": system,
                "gen_ai.request.model": model,
            },
        )
    try:
        yield ModelCall(
            span, system=system, model=model, messages=messages if logs else (), stream=stream
        )
    except BaseException as exc:
        if span is not None:
            record_failure(span, exc)
        raise
    finally:
        if span is not None:
            span.end()


_CURRENT_CALL: ContextVar[ModelCall | None] = ContextVar("flowlib_model_call", default=None)
"""The model call a traced client method is running, for `describe_request` and
`describe_response` (set around each step, like ``_IN_CALL``)."""


def describe_request(*, server: str | None, port: int | None, options: Mapping[str, Any]) -> None:
    """Called by a client inside its traced ``create``/``create_stream``: the server it
    calls and the request options it sends (span attributes of the current call)."""
    call = _CURRENT_CALL.get()
    if call is not None:
        call.request(server=server, port=port, options=options)


def describe_response(
    *, response_id: str | None, model: str | None, finish_reasons: Sequence[str]
) -> None:
    """Called by a client inside its traced call: the server's answer as it was sent."""
    call = _CURRENT_CALL.get()
    if call is not None:
        call.response(response_id=response_id, model=model, finish_reasons=finish_reasons)


def _model_call_of(client: Any, messages: Sequence[Any], *, stream: bool) -> Any:
    system = provider_name(client)
    model = getattr(client, "model", None)
    if not isinstance(model, str):  # a client without a model name (a scripted one)
        family = getattr(client, "model_info", {}).get("family", "unknown")
        model = system if family == "unknown" else str(family)
    return model_call(system=system, model=model, messages=messages, stream=stream)


def _observed() -> bool:
    return tracer() is not None or event_logger.isEnabledFor(logging.INFO)


_TRACING = "__flowlib_tracing__"  # set on a client method: "traced" or "off"

_IN_CALL: ContextVar[tuple[int, ...]] = ContextVar("flowlib_model_calls", default=())
"""The clients (by id) whose traced call is running here: a client's method called from
its own traced method (``create_stream`` calling ``create``) is not traced again."""


def untraced(method: _T) -> _T:
    """Mark a client method as not traced on its own (a wrapper of another client, whose
    calls that client traces): `trace_client_class` leaves it alone."""
    setattr(method, _TRACING, "off")
    return method


def trace_client_class(cls: type) -> None:
    """Trace ``cls``'s own ``create``/``create_stream`` when they implement the abstract
    methods of ``ChatCompletionClient`` directly (a client of the user's own): each call
    gets a ``chat`` span and its events, as flowlib's clients do. A method that overrides
    a concrete client's method is left as it is (that client traces its calls, and a
    second wrapper would trace each call twice), as is one marked `untraced`."""
    for name, decorate in (("create", traced_create), ("create_stream", traced_create_stream)):
        own = cls.__dict__.get(name)
        if own is None or getattr(own, "__isabstractmethod__", False) or hasattr(own, _TRACING):
            continue
        inherited = next(
            (base.__dict__[name] for base in cls.__mro__[1:] if name in base.__dict__), None
        )
        if inherited is not None and not getattr(inherited, "__isabstractmethod__", False):
            continue
        setattr(cls, name, decorate(own))


def traced_create(method: _Create) -> _Create:
    """Decorate a client's ``create(self, messages, ...)``: trace and log each call."""

    @functools.wraps(method)
    async def create(self: Any, messages: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        if not _observed() or id(self) in _IN_CALL.get():
            return await method(self, messages, *args, **kwargs)
        inside = _IN_CALL.set((*_IN_CALL.get(), id(self)))
        try:
            with _model_call_of(self, messages, stream=False) as call:
                current = _CURRENT_CALL.set(call)
                try:
                    result = await method(self, messages, *args, **kwargs)
                finally:
                    _CURRENT_CALL.reset(current)
                call.done(result)
                return result
        finally:
            _IN_CALL.reset(inside)

    setattr(create, _TRACING, "traced")
    return cast("_Create", create)


def traced_create_stream(method: _CreateStream) -> _CreateStream:
    """Decorate a client's ``create_stream(self, messages, ...)``: trace and log each call
    (the final ``CreateResult`` item carries the usage); the stream as is when both are off."""

    async def traced(
        self: Any, messages: Sequence[Any], stream: AsyncGenerator[Any, None]
    ) -> AsyncGenerator[Any, None]:
        with _model_call_of(self, messages, stream=True) as call:
            try:
                while True:
                    # Marked as inside this client's call only while its stream runs (set
                    # and reset within one step, so the consumer never sees the mark).
                    inside = _IN_CALL.set((*_IN_CALL.get(), id(self)))
                    current = _CURRENT_CALL.set(call)
                    try:
                        item = await stream.__anext__()
                    except StopAsyncIteration:
                        break
                    finally:
                        _CURRENT_CALL.reset(current)
                        _IN_CALL.reset(inside)
                    if not isinstance(item, str):
                        call.done(item)
                    yield item
            finally:
                await stream.aclose()

    @functools.wraps(method)
    def create_stream(
        self: Any, messages: Sequence[Any], *args: Any, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        stream: AsyncGenerator[Any, None] = method(self, messages, *args, **kwargs)
        if not _observed() or not hasattr(stream, "__anext__") or id(self) in _IN_CALL.get():
            return stream  # (a method that is not an async generator is passed through)
        return traced(self, messages, stream)

    setattr(create_stream, _TRACING, "traced")
    return cast("_CreateStream", create_stream)
