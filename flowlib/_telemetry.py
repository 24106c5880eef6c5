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
import logging
import os
from collections.abc import AsyncGenerator
from typing import Any, Protocol, TypeVar

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

from .logging import MessageEvent, event_logger, trace_logger


class GraphExecutor(Protocol):
    """What a node-turn span reads of the executor running the turn (the graph package
    sits above telemetry, so it is named by this protocol, not imported)."""

    @property
    def plan(self) -> Any: ...

    @property
    def trace(self) -> Any: ...

    @property
    def scheduler(self) -> Any: ...

    def node_kind(self, node: int) -> str: ...


__all__ = [
    "INSTRUMENTATION_NAME",
    "error_type",
    "provider_name",
    "record_failure",
    "trace_agent_turn",
    "trace_node_turn",
    "trace_team_run",
    "tracer",
]

INSTRUMENTATION_NAME = "flowlib"

_T = TypeVar("_T")
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


def record_failure(span: Span, exc: BaseException) -> None:
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
            record_failure(span, exc)
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
    step = executor.scheduler.nodes[node].turn_step + 1  # as the drawings number steps, from 1
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


def provider_name(client: Any) -> str:
    """``gen_ai.provider.name`` of a model client: the registered value its class declares
    (``"openai"``, ``"azure.ai.openai"``), else its class name (a client of your own)."""
    return str(getattr(client, "otel_provider_name", None) or type(client).__name__)
