"""Event logging as AutoGen does it: structured events on ``EVENT_LOGGER_NAME``, developer
lines on ``TRACE_LOGGER_NAME``, nothing built while the loggers are off."""

from __future__ import annotations

import json
import logging

import pytest
from openai_server import OpenAIServer, Reply

import flowlib
from flowlib import EVENT_LOGGER_NAME, TRACE_LOGGER_NAME
from flowlib.agents import AssistantAgent
from flowlib.logging import (
    LLMCallEvent,
    LLMStreamEndEvent,
    LLMStreamStartEvent,
    MessageEvent,
    ToolCallEvent,
)
from flowlib.messages import TextMessage
from flowlib.models import (
    CreateResult,
    FunctionCall,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
)
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _events(caplog: pytest.LogCaptureFixture, kind: type[object]) -> list[object]:
    return [
        r.msg for r in caplog.records if r.name == EVENT_LOGGER_NAME and isinstance(r.msg, kind)
    ]


def test_logger_names() -> None:
    assert flowlib.EVENT_LOGGER_NAME == "flowlib.events"
    assert flowlib.TRACE_LOGGER_NAME == "flowlib"
    assert "EVENT_LOGGER_NAME" in flowlib.__all__ and "TRACE_LOGGER_NAME" in flowlib.__all__


def test_events_print_as_one_line_of_json() -> None:
    event = LLMCallEvent(
        messages=[TextMessage(source="user", content="hi")],
        response={"content": "hello"},
        prompt_tokens=3,
        completion_tokens=1,
        model="m",
    )
    data = json.loads(str(event))
    assert data["type"] == "LLMCall"
    assert data["messages"][0]["content"] == "hi"
    assert (event.prompt_tokens, event.completion_tokens) == (3, 1)
    assert "\n" not in str(event)


async def test_a_team_logs_its_messages_model_calls_and_tool_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER_NAME)
    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')],
        usage=RequestUsage(prompt_tokens=9, completion_tokens=2),
        cached=False,
    )
    calc = AssistantAgent("calc", model_client=ReplayChatCompletionClient([call, "3"]), tools=[add])
    x = AssistantAgent("x", model_client=ReplayChatCompletionClient(["x1"]))
    inner = RoundRobinGroupChat([x], max_turns=1, name="inner")
    builder = DiGraphBuilder().add_node(calc).add_node(inner)
    builder.add_edge("calc", "inner")
    flow = GraphFlow(builder.get_participants(), builder.build(), name="outer")

    result = await flow.run(task="1 + 2?")

    logged = _events(caplog, MessageEvent)
    assert [e.kwargs["message"] for e in logged] == [m.dump() for m in result.messages]
    assert {e.kwargs["team"] for e in logged} == {"outer"}  # the nested team's are not twice
    calls = _events(caplog, LLMCallEvent)
    assert len(calls) == 2
    assert (calls[0].prompt_tokens, calls[0].completion_tokens) == (9, 2)
    assert calls[0].kwargs["system"] == "replay"
    tools = _events(caplog, ToolCallEvent)
    assert [t.kwargs for t in tools] == [
        {
            "tool_name": "add",
            "arguments": {"a": 1, "b": 2},
            "result": "3",
            "call_id": "c1",
            "is_error": False,
        }
    ]


async def test_streamed_calls_log_start_and_end_with_usage(
    caplog: pytest.LogCaptureFixture, openai_server: OpenAIServer
) -> None:
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER_NAME)
    openai_server.enqueue(Reply("hello there", usage=(12, 2)))
    client = OpenAIChatCompletionClient(
        "gpt-4o-mini", base_url=openai_server.base_url, api_key="test"
    )
    agent = AssistantAgent("agent", model_client=client, model_client_stream=True)
    await agent.run(task="hi")
    await client.close()
    starts = _events(caplog, LLMStreamStartEvent)
    ends = _events(caplog, LLMStreamEndEvent)
    assert len(starts) == 1 and len(ends) == 1
    assert starts[0].kwargs["model"] == "gpt-4o-mini"
    assert starts[0].kwargs["messages"][-1]["content"] == "hi"
    assert (ends[0].prompt_tokens, ends[0].completion_tokens) == (12, 2)
    assert ends[0].kwargs["response"]["content"] == "hello there"


async def test_trace_logger_tells_runs_and_turns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=TRACE_LOGGER_NAME)
    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=ReplayChatCompletionClient(["1"]))],
        max_turns=1,
        name="t",
    )
    await team.run(task="go")
    lines = [r.getMessage() for r in caplog.records if r.name == TRACE_LOGGER_NAME]
    assert lines[0] == "Team `t` (RoundRobinGroupChat) starts a run."
    assert "Turn 1: agent `a` starts (group entry)." in lines
    assert lines[-1] == "Team `t` stopped: Maximum number of turns 1 reached."


async def test_nothing_is_logged_while_the_loggers_are_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=ReplayChatCompletionClient(["1"]))], max_turns=1
    )
    await team.run(task="go")
    assert not [r for r in caplog.records if r.name.startswith("flowlib")]
