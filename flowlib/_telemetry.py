"""OpenTelemetry spans and the structured event logs, in one place.

flowlib depends only on ``opentelemetry-api``. Without an SDK (no tracer provider set)
every helper here returns what it was given, or a shared no-op, after one cheap check:
a run costs nothing extra. With a provider set (``trace.set_tracer_provider``), a run
produces one tree of spans (see docs/observability.md for names and attributes):

    invoke_workflow <team>           a team's run (nested teams nest under a node turn)
      invoke_agent <agent>           an agent's turn, in a team or run alone
      node_turn <node>               a team, router or function node's turn
        chat <model>                 a model call
        execute_tool <tool>          a tool call (may hold an inner agent's or team's spans)

Names and ``gen_ai.*`` attributes follow the OpenTelemetry GenAI semantic conventions
(agent, workflow, inference and tool spans); flowlib's own attributes are ``flowlib.*``.

**Parent to child across generators and tasks.** A team's run and a node's turn are async
generators, suspended at every item they stream. Their span is made current only while
the generator runs a step (around each ``__anext__``) and never while it is suspended, so
the consumer's code between items does not see a flowlib span as current, and every
attach is undone in the same task that made it. Turns that the executor runs as tasks
copy the context of the step that started them, so concurrent nodes are children of their
team's run, and a nested team's run is a child of the turn that runs it. Model and tool
spans are plain ``with`` blocks inside coroutines.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
)

from .logging import (
    LLMCallEvent,
    LLMStreamEndEvent,
    LLMStreamStartEvent,
    MessageEvent,
    ToolCallEvent,
    event_logger,
    trace_logger,
)


class GraphExecutor(Protocol):
    """What a node-turn span reads of the executor running the turn (the graph package
    sits above telemetry, so it is named by this protocol, not imported)."""

    @property
    def plan(self) -> Any: ...

    @property
    def trace(self) -> Any: ...

    def node_kind(self, node: int) -> str: ...

    def turn_step(self, node: int) -> int: ...


__all__ = [
    "INSTRUMENTATION_NAME",
    "ModelCall",
    "ToolCall",
    "describe_request",
    "describe_response",
    "error_type",
    "model_call",
    "provider_name",
    "tool_call",
    "trace_agent_turn",
    "trace_node_turn",
    "trace_team_run",
    "traced_create",
    "traced_create_stream",
    "tracer",
]

INSTRUMENTATION_NAME = "flowlib"

_T = TypeVar("_T")
_Create = TypeVar("_Create", bound=Callable[..., Awaitable[Any]])
_CreateStream = TypeVar("_CreateStream", bound=Callable[..., AsyncGenerator[Any, None]])
_provider: object = None
_tracer: Tracer | None = None
# Set while a team's run takes a step: a team run inside it (a nested team, or one inside
# an agent) does not log the messages its outer team will log anyway.
_in_team_run: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "flowlib_in_team_run", default=False
)


# ``trace.get_tracer_provider()`` looks the environment up on every call while no provider
# is set (about 2 us): too slow for a check per turn. Unless the provider comes from the
# environment, read the API's global directly (None until ``set_tracer_provider``).
_FAST_CHECK = hasattr(trace, "_TRACER_PROVIDER") and OTEL_PYTHON_TRACER_PROVIDER not in os.environ


def tracer() -> Tracer | None:
    """flowlib's tracer, or None when no OpenTelemetry SDK provider is set."""
    global _provider, _tracer
    if _FAST_CHECK:
        provider: object = trace._TRACER_PROVIDER
        if provider is None:
            return None
    else:
        provider = trace.get_tracer_provider()
    if provider is not _provider:
        _provider = provider
        if isinstance(provider, (ProxyTracerProvider, NoOpTracerProvider)):
            _tracer = None
        else:
            from . import __version__

            assert isinstance(provider, trace.TracerProvider)
            _tracer = provider.get_tracer(INSTRUMENTATION_NAME, __version__)
    return _tracer


def error_type(exc: BaseException) -> str:
    """``error.type`` of an exception: its class's full name (``openai.RateLimitError``;
    a built-in's bare name, ``ValueError``)."""
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    # The public package of a private module: flowlib.models._openai -> flowlib.models.
    public = ".".join(part for part in module.split(".") if not part.startswith("_"))
    return f"{public}.{cls.__qualname__}" if public else cls.__qualname__


def _record_failure(span: Span, exc: BaseException) -> None:
    if isinstance(exc, Exception):
        span.record_exception(exc)
        span.set_attribute("error.type", error_type(exc))
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    else:  # cancelled, or closed by its consumer: not an error of this span
        span.set_attribute("flowlib.interrupted", True)


async def _stepped(
    stream: AsyncGenerator[_T, None],
    span: Span | None,
    parent: otel_context.Context,
    *,
    team: str | None = None,
    log_items: bool = False,
) -> AsyncGenerator[_T, None]:
    """Re-yield ``stream``, making ``span`` current only while ``stream`` runs a step."""
    ctx = trace.set_span_in_context(span, parent) if span is not None else parent
    exhausted = False
    try:
        while True:
            token = otel_context.attach(ctx)
            nested = _in_team_run.set(True) if team is not None else None
            try:
                item = await stream.__anext__()
            except StopAsyncIteration:
                exhausted = True
                break
            finally:
                if nested is not None:
                    _in_team_run.reset(nested)
                otel_context.detach(token)
            if team is not None:
                _observe_team_item(span, team, item, log_items)
            yield item
    except BaseException as exc:
        if span is not None:
            _record_failure(span, exc)
        raise
    finally:
        if not exhausted:
            await stream.aclose()
        if span is not None:
            span.end()


def _observe_team_item(span: Span | None, team: str, item: Any, log_items: bool) -> None:
    # A TaskResult, told by its fields: telemetry sits below flowlib.base in the layers.
    if hasattr(item, "stop_reason") and hasattr(item, "messages"):
        if span is not None:
            span.set_attribute("flowlib.run.stop_reason", item.stop_reason or "")
            span.set_attribute("flowlib.run.messages", len(item.messages))
        trace_logger.debug("Team `%s` stopped: %s", team, item.stop_reason)
    elif log_items:
        event_logger.info(MessageEvent(message=item, team=team))


def trace_team_run(team: Any, stream: AsyncGenerator[_T, None]) -> AsyncGenerator[_T, None]:
    """A team run's stream, in an ``invoke_workflow <name>`` span and logged; as is when
    both are off.

    Args:
        team: The team (its ``name`` is used).
        stream: The executor's run stream.
    """
    active = tracer()
    logs = event_logger.isEnabledFor(logging.INFO) and not _in_team_run.get()
    if active is None and not logs and not trace_logger.isEnabledFor(logging.DEBUG):
        return stream
    name = str(team.name)
    trace_logger.debug("Team `%s` (%s) starts a run.", name, type(team).__name__)
    parent = otel_context.get_current()
    span = None
    if active is not None:
        span = active.start_span(
            f"invoke_workflow {name}",
            context=parent,
            attributes={
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.workflow.name": name,
                "flowlib.team.name": name,
                "flowlib.team.type": type(team).__name__,
            },
        )
    return _stepped(stream, span, parent, team=name, log_items=logs)


def _agent_attributes(agent: Any) -> dict[str, Any]:
    """The ``invoke_agent`` attributes of an agent: its name and description, and the
    provider and model of its model client when it has one."""
    name = str(getattr(agent, "name", type(agent).__name__))
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
    }
    description = getattr(agent, "description", None)
    if isinstance(description, str) and description:
        attributes["gen_ai.agent.description"] = description
    client = getattr(agent, "model_client", None)
    if client is not None:
        attributes["gen_ai.provider.name"] = provider_name(client)
        model = getattr(client, "model", None)
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
    return attributes


def trace_agent_turn(agent: Any, stream: AsyncGenerator[_T, None]) -> AsyncGenerator[_T, None]:
    """An agent's turn run on its own (``agent.run()``/``run_stream()``) in an
    ``invoke_agent <name>`` span; as is when tracing is off. In a team the node turn is
    that span (`trace_node_turn`).

    Args:
        agent: The agent.
        stream: Its ``on_messages_stream``.
    """
    active = tracer()
    if active is None:
        return stream
    attributes = _agent_attributes(agent)
    parent = otel_context.get_current()
    span = active.start_span(
        f"invoke_agent {attributes['gen_ai.agent.name']}", context=parent, attributes=attributes
    )
    return _stepped(stream, span, parent)


def _activation_group(executor: GraphExecutor, node: int) -> str | None:
    """The group of the latest edge that fired into ``node`` (None for an entry turn)."""
    plan = executor.plan
    for _step, edge_index in reversed(executor.trace.fired):
        edge = plan.edges[edge_index]
        if edge.target == node:
            return str(plan.groups[edge.group].name)
    return None


def trace_node_turn(
    executor: GraphExecutor,
    node: int,
    stream: AsyncGenerator[_T, None],
    participant: Any = None,
) -> AsyncGenerator[_T, None]:
    """One node turn's stream in a span; as is when tracing is off. An agent's turn is an
    ``invoke_agent <name>`` span (the GenAI conventions' agent span, with flowlib's node
    attributes too); a team, router or function node's turn a ``node_turn <name>`` span.

    Args:
        executor: The executor running the turn (names, kinds, steps, fired edges).
        node: The node's index in the executor's plan.
        stream: The turn.
        participant: The node's participant (an agent's name, description and model).
    """
    active = tracer()
    debug = trace_logger.isEnabledFor(logging.DEBUG)
    if active is None and not debug:
        return stream
    name = executor.plan.names[node]
    kind = executor.node_kind(node)
    step = executor.turn_step(node) + 1  # as the drawings number steps, from 1
    group = _activation_group(executor, node) or "entry"
    if debug:
        trace_logger.debug("Turn %d: %s `%s` starts (group %s).", step, kind, name, group)
    parent = otel_context.get_current()
    span = None
    if active is not None:
        attributes: dict[str, Any] = {
            "flowlib.node.name": name,
            "flowlib.node.kind": kind,
            "flowlib.turn.index": step,
            "flowlib.activation.group": group,
        }
        title = f"node_turn {name}"
        if kind == "agent":
            attributes.update(_agent_attributes(participant) if participant is not None else {})
            attributes["gen_ai.operation.name"] = "invoke_agent"
            attributes["gen_ai.agent.name"] = name
            title = f"invoke_agent {name}"
        span = active.start_span(title, context=parent, attributes=attributes)
    return _stepped(stream, span, parent)


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


class ModelCall:
    """Records one model call: its span (if tracing) and its log events (if logging)."""

    __slots__ = ("_messages", "_model", "_reasons_sent", "_span", "_stream", "_system")

    def __init__(
        self,
        span: Span | None,
        *,
        system: str,
        model: str,
        messages: Sequence[Any],
        stream: bool,
    ) -> None:
        self._span = span
        self._system = system
        self._model = model
        self._messages = messages
        self._stream = stream
        self._reasons_sent = False

    def request(self, *, server: str | None, port: int | None, options: Mapping[str, Any]) -> None:
        """What the client sends: the server it calls and the request options it set."""
        span = self._span
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
        span = self._span
        if span is None:
            return
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)
        if model:
            span.set_attribute("gen_ai.response.model", model)
        if finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", list(finish_reasons))
            self._reasons_sent = True

    def done(self, result: Any) -> None:
        """The call returned ``result`` (a ``CreateResult``)."""
        usage = getattr(result, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        span = self._span
        if span is not None:
            span.set_attribute("gen_ai.usage.input_tokens", prompt)
            span.set_attribute("gen_ai.usage.output_tokens", completion)
            reason = getattr(result, "finish_reason", None)
            if reason is not None and not self._reasons_sent:
                # A client that does not report what its server sent: its own reason.
                span.set_attribute("gen_ai.response.finish_reasons", [str(reason)])
            if getattr(result, "cached", False):
                span.set_attribute("flowlib.cached", True)
        if event_logger.isEnabledFor(logging.INFO):
            fields = {"model": self._model, "system": self._system}
            if self._stream:
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
                        messages=self._messages,
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
            _record_failure(span, exc)
        raise
    finally:
        if span is not None:
            span.end()


def provider_name(client: Any) -> str:
    """``gen_ai.provider.name`` of a model client: the registered value its class declares
    (``"openai"``, ``"azure.ai.openai"``), else its class name (a client of your own)."""
    return str(getattr(client, "otel_provider_name", None) or type(client).__name__)


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


# --- tool calls ----------------------------------------------------------------------


class ToolCall:
    """Records one tool call's outcome for its span and its log event."""

    __slots__ = ("_arguments", "_call_id", "_name", "_span")

    def __init__(
        self, span: Span | None, name: str, call_id: str, arguments: Mapping[str, Any]
    ) -> None:
        self._span = span
        self._name = name
        self._call_id = call_id
        self._arguments = arguments

    def done(
        self, result: str, *, is_error: bool = False, error: BaseException | None = None
    ) -> None:
        """The call ended with ``result`` (the text the model will see); a failed call
        gives the exception it raised, if any, for ``error.type``."""
        if self._span is not None and is_error:
            self._span.set_attribute(
                "error.type", error_type(error) if error is not None else "_OTHER"
            )
            self._span.set_status(Status(StatusCode.ERROR, result))
        if event_logger.isEnabledFor(logging.INFO):
            event_logger.info(
                ToolCallEvent(
                    tool_name=self._name,
                    arguments=self._arguments,
                    result=result,
                    call_id=self._call_id,
                    is_error=is_error,
                )
            )


_NO_TOOL_CALL = ToolCall(None, "", "", {})


@contextmanager
def tool_call(
    *, name: str, call_id: str, description: str, arguments: Mapping[str, Any]
) -> Iterator[ToolCall]:
    """Trace and log one tool call: an ``execute_tool <name>`` span made current (an
    agent or team run by the tool nests under it).

    Args:
        name: The tool's name.
        call_id: The model's id for the call.
        description: The tool's description.
        arguments: The call's arguments (logged only when the event logger is on).
    """
    active = tracer()
    logs = event_logger.isEnabledFor(logging.INFO)
    if active is None and not logs:
        yield _NO_TOOL_CALL
        return
    if active is None:
        yield ToolCall(None, name, call_id, arguments)
        return
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.description": description,
        # flowlib's agent runs every call itself (an MCP call too: it sends it to the
        # server), the conventions' "function" tool.
        "gen_ai.tool.type": "function",
    }
    with active.start_as_current_span(
        f"execute_tool {name}", attributes=attributes, end_on_exit=True
    ) as span:
        yield ToolCall(span, name, call_id, arguments)
