"""``flowlib.testing.tool_calls``: scripted tool-call replies, played by the replay client."""

from __future__ import annotations

import json

import pytest

from flowlib.agents import AssistantAgent
from flowlib.errors import FlowlibError
from flowlib.messages import ToolCallExecutionEvent, ToolCallRequestEvent
from flowlib.models import ReplayChatCompletionClient, RequestUsage
from flowlib.testing import tool_calls


def test_a_reply_with_parallel_calls() -> None:
    reply = tool_calls(("add", {"a": 1, "b": 2}), ("echo", {"text": "hi"}), thought="Both.")
    assert reply.finish_reason == "function_calls"
    assert reply.thought == "Both."
    assert isinstance(reply.content, list)
    assert [(c.name, json.loads(c.arguments)) for c in reply.content] == [
        ("add", {"a": 1, "b": 2}),
        ("echo", {"text": "hi"}),
    ]
    ids = [c.id for c in reply.content]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert tool_calls(("x", {}), usage=RequestUsage(3, 4)).usage == RequestUsage(3, 4)


@pytest.mark.parametrize(
    ("calls", "error", "match"),
    [
        ((), ValueError, "at least one"),
        ((("add",),), TypeError, "pair"),
        ((("add", '{"a": 1}'),), TypeError, "pair"),
        ((("add", {"a": object()}),), TypeError, "`add` call are not JSON"),
    ],
)
def test_bad_calls_are_named(calls: tuple[object, ...], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        tool_calls(*calls)  # type: ignore[arg-type]
    assert isinstance(info.value, FlowlibError)


async def test_an_agent_runs_the_scripted_calls() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ReplayChatCompletionClient([tool_calls(("add", {"a": 2, "b": 3})), "It is 5."])
    agent = AssistantAgent("calc", model, tools=[add], reflect_on_tool_use=True)
    result = await agent.run(task="2 + 3?")
    request = next(m for m in result.messages if isinstance(m, ToolCallRequestEvent))
    executed = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert request.content[0].name == "add"
    assert executed.content[0].content == "5"
    assert result.messages[-1].to_text() == "It is 5."
