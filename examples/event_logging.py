"""Event logging: the structured events flowlib logs with Python's logging, as AutoGen does.

    analyst (calls the add tool) -> reviewer

``EVENT_LOGGER_NAME`` (``"flowlib.events"``) gets one structured event per message the
team emits (``MessageEvent``), per model call (``LLMCallEvent`` with its token counts;
``LLMStreamStartEvent``/``LLMStreamEndEvent`` when streaming) and per tool call
(``ToolCallEvent``). Each record's ``msg`` is the event object: its ``str()`` is one line of
JSON, and ``record.msg.kwargs`` holds the fields. ``TRACE_LOGGER_NAME`` (``"flowlib"``)
gets short developer lines. Both are silent (and cost nothing) until you enable them.

Run offline: python examples/event_logging.py
With a real model: OPENAI_API_KEY=... python examples/event_logging.py
(the same events, with the real model's text and token counts).
"""

from __future__ import annotations

import asyncio
import logging
import sys

from _common import model_client

from flowlib import EVENT_LOGGER_NAME, TRACE_LOGGER_NAME
from flowlib.agents import AssistantAgent
from flowlib.logging import LLMCallEvent, MessageEvent, ToolCallEvent
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import tool_calls

TASK = "What is 1234 + 4321?"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class ShortEvents(logging.Handler):
    """Print one short line per event (a real handler might ship ``str(record.msg)``)."""

    def emit(self, record: logging.LogRecord) -> None:
        event = record.msg
        if isinstance(event, LLMCallEvent):
            fields = event.kwargs
            print(
                f"[event] LLMCall model={fields['model']} "
                f"tokens={event.prompt_tokens}+{event.completion_tokens}"
            )
        elif isinstance(event, ToolCallEvent):
            fields = event.kwargs
            call = f"{fields['tool_name']}({fields['arguments']})"
            print(f"[event] ToolCall {call} -> {fields['result']}")
        elif isinstance(event, MessageEvent):
            message = event.kwargs["message"]
            print(f"[event] Message {message['type']} from {message['source']}")
        else:
            print(f"[event] {event}")


def build() -> GraphFlow:
    """Build the two-step team."""
    analyst = AssistantAgent(
        "analyst",
        model_client=model_client([tool_calls(("add", {"a": 1234, "b": 4321})), "It is 5555."]),
        tools=[add],
        reflect_on_tool_use=True,
        system_message="Use the add tool for sums.",
    )
    reviewer = AssistantAgent("reviewer", model_client=model_client(["Checked: 5555 is right."]))
    builder = DiGraphBuilder().add_node(analyst).add_node(reviewer)
    builder.add_edge("analyst", "reviewer")
    return GraphFlow(builder.get_participants(), builder.build(), name="sums")


async def main() -> None:
    """Turn both loggers on, run the team, print how it stopped."""
    events = logging.getLogger(EVENT_LOGGER_NAME)
    events.addHandler(ShortEvents())
    events.setLevel(logging.INFO)
    trace_log = logging.getLogger(TRACE_LOGGER_NAME)
    trace_handler = logging.StreamHandler(sys.stdout)
    trace_handler.setFormatter(logging.Formatter("[trace] %(message)s"))
    trace_log.addHandler(trace_handler)
    trace_log.setLevel(logging.DEBUG)
    events.propagate = False  # events go to ShortEvents only, not to the trace handler too

    result = await build().run(task=TASK)
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
