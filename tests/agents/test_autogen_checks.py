"""Issue 16.3/16.4: the agent checks AutoGen makes, and a memory that returns None."""

from __future__ import annotations

from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken, Handoff
from flowlib.errors import ArgumentTypeError, InvalidArgumentError
from flowlib.memory import ListMemory, Memory, MemoryContent, MemoryQueryResult
from flowlib.messages import MemoryQueryEvent, TextMessage
from flowlib.model_context import ChatCompletionContext
from flowlib.models import ReplayChatCompletionClient, SystemMessage
from flowlib.tools import FunctionTool


def transfer_to_b() -> str:
    """A tool whose name is the default name of the handoff to `b`."""
    return "b"


def test_a_handoff_named_like_a_tool_is_refused() -> None:
    client = ReplayChatCompletionClient(["x"])
    with pytest.raises(InvalidArgumentError, match="`transfer_to_b` has the same name as a tool"):
        AssistantAgent("a", client, tools=[transfer_to_b], handoffs=["b"])
    with pytest.raises(ValueError, match="`lookup` has the same name as a tool"):
        AssistantAgent(
            "a",
            client,
            tools=[FunctionTool(transfer_to_b, "look up", name="lookup")],
            handoffs=[Handoff(target="b", name="lookup")],
        )


@pytest.mark.parametrize(
    ("memory", "named"),
    [
        ([ListMemory(), "notes"], "memory[1]"),
        (["notes"], "memory[0]"),
        ("notes", "memory"),
        (ListMemory(), "memory"),
        ({"a": ListMemory()}, "memory"),
    ],
)
def test_a_memory_entry_that_is_not_a_memory_is_refused(memory: Any, named: str) -> None:
    with pytest.raises(ArgumentTypeError) as caught:
        AssistantAgent("a", ReplayChatCompletionClient(["x"]), memory=memory)
    assert isinstance(caught.value, TypeError)
    assert caught.value.argument == named
    assert "`a`" in str(caught.value)


class SilentMemory(Memory):
    """A custom memory whose update_context adds a message and returns None."""

    def __init__(self) -> None:
        self.calls = 0

    async def update_context(self, model_context: ChatCompletionContext) -> Any:
        self.calls += 1
        await model_context.add_message(SystemMessage(content="remember: tea"))
        return None

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        return MemoryQueryResult(results=[])

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        pass

    async def clear(self) -> None:
        pass

    async def close(self) -> None:
        pass


async def test_update_context_returning_none_adds_no_event() -> None:
    memory = SilentMemory()
    client = ReplayChatCompletionClient(["tea it is"])
    listed = ListMemory(
        memory_contents=[MemoryContent(content="likes tea", mime_type="text/plain")]
    )
    agent = AssistantAgent("a", client, memory=[memory, listed])
    result = await agent.run(task="what do I like?")
    assert memory.calls == 1
    # The None memory adds no event; the list memory after it still reports its item.
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert [[item.content for item in event.content] for event in events] == [["likes tea"]]
    assert isinstance(result.messages[-1], TextMessage)
    assert result.messages[-1].content == "tea it is"
    # What the memory wrote still reached the model.
    sent = [message.content for message in client.requests[0]]
    assert "remember: tea" in sent
