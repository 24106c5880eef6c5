"""The span and log event of a tool call: ``execute_tool <tool>``, made current so an
agent or team the tool runs nests under it."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from .._telemetry import error_type, tracer
from ..logging import ToolCallEvent, event_logger

__all__ = ["ToolCall", "tool_call"]


@dataclass(slots=True)
class ToolCall:
    """Records one tool call's outcome for its span and its log event."""

    span: Span | None
    name: str
    call_id: str
    arguments: Mapping[str, Any]

    def done(
        self, result: str, *, is_error: bool = False, error: BaseException | None = None
    ) -> None:
        """The call ended with ``result`` (the text the model will see); a failed call
        gives the exception it raised, if any, for ``error.type``."""
        if self.span is not None and is_error:
            self.span.set_attribute(
                "error.type", error_type(error) if error is not None else "_OTHER"
            )
            self.span.set_status(Status(StatusCode.ERROR, result))
        if event_logger.isEnabledFor(logging.INFO):
            event_logger.info(
                ToolCallEvent(
                    tool_name=self.name,
                    arguments=self.arguments,
                    result=result,
                    call_id=self.call_id,
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
