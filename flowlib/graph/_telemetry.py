"""A team's run and turn spans (OpenTelemetry) and its debug log: a run observer.

[`RunSpans`] is a [`RunObserver`][flowlib.graph.RunObserver] on the executor's
[`RunTrace`][flowlib.graph.RunTrace]; a team adds one to its executor's trace and the
executor tells it when the run starts and ends and when each turn starts, takes a step
and ends. Nothing wraps the run's stream. Names and attributes (docs/observability.md):

    invoke_workflow <team>           a team's run (a nested team's, under its node turn)
      invoke_agent <agent>           an agent's turn (the GenAI conventions' agent span)
      node_turn <node>               a team, router or function node's turn

The run span is never made current: each turn span names it as its parent, and is
current only while its turn takes a step (the executor enters the turn's scope around
each step, in the task running the turn). So the consumer's code between two items never
sees a flowlib span as current, a turn run as a task is still the run's child, and a
team run inside a turn (a nested team, a team behind a tool) is a child of that turn.
Without an SDK provider and with the debug and event logs off, a turn gets no scope and
runs as is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, set_span_in_context

from .._telemetry import agent_attributes, in_team_turn, record_failure, tracer
from ..logging import event_logger, trace_logger
from ._node import Node
from ._trace import RunTrace

__all__ = ["RunSpans"]


class RunSpans:
    """The run and turn spans of one team's runs (a
    [`RunObserver`][flowlib.graph.RunObserver]).

    Args:
        team: The team's name (``gen_ai.workflow.name``).
        team_type: The team's class name (``flowlib.team.type``).
        nodes: The executor's nodes, in plan order (kinds, and agents' attributes).
    """

    def __init__(self, team: str, team_type: str, nodes: Sequence[Node]) -> None:
        self._team = team
        self._type = team_type
        self._nodes = list(nodes)
        self._span: Span | None = None
        self._parent: otel_context.Context | None = None

    # A TraceObserver: starts, firings and clears need no span of their own.
    def on_start(self, trace: RunTrace, step: int) -> None:
        pass

    def on_fire(self, trace: RunTrace, position: int) -> None:
        pass

    def on_clear(self, trace: RunTrace) -> None:
        pass

    def on_run_start(self, trace: RunTrace) -> None:
        """An ``invoke_workflow`` span, child of what is current as the run starts."""
        name = self._team
        trace_logger.debug("Team `%s` (%s) starts a run.", name, self._type)
        active = tracer()
        self._span = None
        self._parent = None
        if active is None:
            return
        attributes = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": name,
            "flowlib.team.name": name,
            "flowlib.team.type": self._type,
        }
        self._parent = otel_context.get_current()
        self._span = active.start_span(
            f"invoke_workflow {name}", context=self._parent, attributes=attributes
        )

    def on_run_end(
        self, trace: RunTrace, messages: int | None, error: BaseException | None
    ) -> None:
        span, self._span, self._parent = self._span, None, None
        if messages is not None:
            trace_logger.debug("Team `%s` stopped: %s", self._team, trace.stop_reason)
        if span is None:
            return
        if messages is not None:
            span.set_attribute("flowlib.run.stop_reason", trace.stop_reason or "")
            span.set_attribute("flowlib.run.messages", messages)
        if error is not None:
            record_failure(span, error)
        span.end()

    def on_turn_start(self, trace: RunTrace, step: int) -> TurnSpan | None:
        """An ``invoke_agent`` span for an agent's turn, a ``node_turn`` span for the
        others; a scope without a span when only the logs are on; None when all is off."""
        active = tracer()
        debug = trace_logger.isEnabledFor(logging.DEBUG)
        if active is None and not debug and not event_logger.isEnabledFor(logging.INFO):
            return None
        node = trace.step_nodes[step]
        name = trace.names[node]
        runner = self._nodes[node]
        kind = runner.kind
        index = step + 1  # as the drawings number steps, from 1
        group = trace.activation_group(step) or "entry"
        if debug:
            trace_logger.debug("Turn %d: %s `%s` starts (group %s).", index, kind, name, group)
        if active is None:
            return TurnSpan(None, None)
        attributes: dict[str, Any] = {
            "flowlib.node.name": name,
            "flowlib.node.kind": kind,
            "flowlib.turn.index": index,
            "flowlib.activation.group": group,
        }
        title = f"node_turn {name}"
        if kind == "agent":
            attributes.update(agent_attributes(runner.participant))
            attributes["gen_ai.operation.name"] = "invoke_agent"
            attributes["gen_ai.agent.name"] = name
            title = f"invoke_agent {name}"
        if self._span is not None:
            parent = set_span_in_context(self._span, self._parent)
        else:  # the provider was set during the run
            parent = otel_context.get_current()
        span = active.start_span(title, context=parent, attributes=attributes)
        return TurnSpan(span, set_span_in_context(span, parent))


class TurnSpan:
    """One turn's [`TurnScope`][flowlib.graph.TurnScope]: its span current during each
    step, and ``in_team_turn`` set (a team run inside the turn does not log the messages
    its outer team logs)."""

    __slots__ = ("_context", "_flag", "_span", "_token")

    def __init__(self, span: Span | None, context: otel_context.Context | None) -> None:
        self._span = span
        self._context = context
        self._token: object = None
        self._flag: Any = None

    def enter(self) -> None:
        if self._context is not None:
            self._token = otel_context.attach(self._context)
        self._flag = in_team_turn.set(True)

    def exit(self) -> None:
        in_team_turn.reset(self._flag)
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None

    def end(self, error: BaseException | None) -> None:
        if self._span is None:
            return
        if error is not None:
            record_failure(self._span, error)
        self._span.end()
