"""AssistantAgent on the real OpenAI SDK against the local protocol server: failures give
the documented result or a clear error, and the agent stays usable afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from openai_server import ErrorReply, OpenAIServer, RawReply, Reply, ToolCall

from flowlib.agents import AssistantAgent
from flowlib.messages import TextMessage, ToolCallExecutionEvent, ToolCallSummaryMessage
from flowlib.models import ModelResponseError, OpenAIChatCompletionClient


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@pytest.fixture
async def client(openai_server: OpenAIServer) -> AsyncIterator[OpenAIChatCompletionClient]:
    model = OpenAIChatCompletionClient(
        "gpt-4o-mini", base_url=openai_server.base_url, api_key="test", max_retries=2
    )
    yield model
    await model.close()


def user_turns(body: dict[str, object]) -> list[str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m["role"] == "user"]


async def test_server_500_then_200_is_retried_by_the_sdk(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(ErrorReply(500, times=1), Reply("recovered"))
    agent = AssistantAgent("helper", client)
    result = await agent.run(task="hi")
    assert result.messages[-1].to_text() == "recovered"
    assert len(openai_server.requests) == 2


async def test_malformed_response_is_a_clear_error_and_the_agent_recovers(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(RawReply(b"{not json"), Reply("fine now"))
    agent = AssistantAgent("helper", client)
    with pytest.raises(ModelResponseError):
        await agent.run(task="first question")
    result = await agent.run(task="second question")
    assert result.messages[-1].to_text() == "fine now"
    # A failed turn is undone whole (so a team that retries the node does not duplicate
    # its input): the next request carries only the new question.
    assert user_turns(openai_server.requests[-1].body) == ["second question"]


async def test_tool_failures_become_error_results(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(
        Reply(
            tool_calls=[
                ToolCall("explode", '{"reason": "x"}', id="c1"),
                ToolCall("add", '{"a": "not a number", "b": 2}', id="c2"),
                ToolCall("no_such_tool", "{}", id="c3"),
                ToolCall("add", '{"a": 1, "b": 2}', id="c4"),
            ]
        ),
        Reply("next"),
    )
    agent = AssistantAgent("helper", client, tools=[add, explode])
    result = await agent.run(task="use the tools")
    executed = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    by_id = {r.call_id: r for r in executed.content}
    assert by_id["c1"].is_error and "boom: x" in by_id["c1"].content
    assert by_id["c2"].is_error and "a" in by_id["c2"].content
    assert by_id["c3"].is_error and "no_such_tool" in by_id["c3"].content
    assert not by_id["c4"].is_error and by_id["c4"].content == "3"
    assert isinstance(result.messages[-1], ToolCallSummaryMessage)
    follow_up = await agent.run(task="and now?")
    assert isinstance(follow_up.messages[-1], TextMessage)
    assert follow_up.messages[-1].content == "next"
    tool_messages = [m for m in openai_server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2", "c3", "c4"]
