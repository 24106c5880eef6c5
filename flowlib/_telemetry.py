"""What flowlib's spans and structured event logs share.

flowlib depends only on ``opentelemetry-api``. Without an SDK (no tracer provider set)
`tracer` returns None after one cheap check and nothing is traced: a run costs nothing
extra. With a provider set (``trace.set_tracer_provider``), a run produces one tree of
spans (see docs/observability.md for names and attributes):

    invoke_workflow <team>           a team's run (nested teams nest under a node turn)
      invoke_agent <agent>           an agent's turn, in a team or run alone
      node_turn <node>               a team, router or function node's turn
        chat <model>                 a model call
        execute_tool <tool>          a tool call (may hold an inner agent's or team's spans)

Each span lives with what it observes: run and turn spans are a run observer of the
executor (flowlib/graph/_telemetry.py), model spans wrap model clients
(flowlib/models/_tracing.py), tool spans tool calls (flowlib/tools/_tracing.py), and an
agent run on its own is traced here (`trace_agent_turn`). Names and ``gen_ai.*``
attributes follow the OpenTelemetry GenAI semantic conventions; flowlib's own
attributes are ``flowlib.*``.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import AsyncGenerator
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    Status,
    StatusCode,
    Tracer,
)

__all__ = [
    "INSTRUMENTATION_NAME",
    "agent_attributes",
    "error_type",
    "in_team_turn",
    "provider_name",
    "record_failure",
    "trace_agent_turn",
    "tracer",
]

INSTRUMENTATION_NAME = "flowlib"

_T = TypeVar("_T")
_provider: object = None
_tracer: Tracer | None = None
in_team_turn: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "flowlib_in_team_turn", default=False
)
"""Set while a team's turn takes a step: a team run inside it (a nested team, or one
behind an agent's tool) does not log the messages its outer team logs anyway."""


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


def record_failure(span: Span, exc: BaseException) -> None:
    if isinstance(exc, Exception):
        span.record_exception(exc)
        span.set_attribute("error.type", error_type(exc))
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    else:  # cancelled, or closed by its consumer: not an error of this span
        span.set_attribute("flowlib.interrupted", True)


async def _stepped(
    stream: AsyncGenerator[_T, None], span: Span, parent: otel_context.Context
) -> AsyncGenerator[_T, None]:
    """Re-yield ``stream``, making ``span`` current only while ``stream`` runs a step."""
    ctx = trace.set_span_in_context(span, parent)
    exhausted = False
    try:
        while True:
            token = otel_context.attach(ctx)
            try:
                item = await stream.__anext__()
            except StopAsyncIteration:
                exhausted = True
                break
            finally:
                otel_context.detach(token)
            yield item
    except BaseException as exc:
        record_failure(span, exc)
        raise
    finally:
        if not exhausted:
            await stream.aclose()
        span.end()


def agent_attributes(agent: Any) -> dict[str, Any]:
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
    that span (flowlib/graph/_telemetry.py).

    Args:
        agent: The agent.
        stream: Its ``on_messages_stream``.
    """
    active = tracer()
    if active is None:
        return stream
    attributes = agent_attributes(agent)
    parent = otel_context.get_current()
    span = active.start_span(
        f"invoke_agent {attributes['gen_ai.agent.name']}", context=parent, attributes=attributes
    )
    return _stepped(stream, span, parent)


def provider_name(client: Any) -> str:
    """``gen_ai.provider.name`` of a model client: the registered value its class declares
    (``"openai"``, ``"azure.ai.openai"``), else its class name (a client of your own)."""
    return str(getattr(client, "otel_provider_name", None) or type(client).__name__)
