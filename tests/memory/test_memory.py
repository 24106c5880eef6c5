"""Tests of flowlib.memory: the Memory interface and ListMemory."""

from __future__ import annotations

from typing import Any

import pytest

from flowlib._cancellation import CancellationToken
from flowlib.memory import (
    ListMemory,
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from flowlib.messages import MemoryQueryEvent
from flowlib.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    UnboundedChatCompletionContext,
)
from flowlib.models import ReplayChatCompletionClient, SystemMessage, UserMessage


def text(value: str) -> MemoryContent:
    return MemoryContent(content=value, mime_type=MemoryMimeType.TEXT)


async def test_add_query_clear() -> None:
    memory = ListMemory()
    assert memory.name == "default_list_memory"
    await memory.add(text("User likes pizza."))
    await memory.add(text("User dislikes cheese."), CancellationToken())
    found = await memory.query("anything at all")
    assert [item.content for item in found.results] == [
        "User likes pizza.",
        "User dislikes cheese.",
    ]
    assert (await memory.query(text("q"), cancellation_token=CancellationToken())) == found
    await memory.clear()
    assert (await memory.query()).results == []
    await memory.close()


async def test_query_results_are_a_snapshot() -> None:
    memory = ListMemory(name="prefs")
    await memory.add(text("a"))
    found = await memory.query()
    await memory.add(text("b"))
    assert [item.content for item in found.results] == ["a"]


async def test_content_property_and_initial_contents() -> None:
    initial = [text("one")]
    memory = ListMemory(name="notes", memory_contents=initial)
    initial.append(text("not seen"))  # the memory copied the list
    assert [item.content for item in memory.content] == ["one"]
    memory.content.append(text("two"))  # the property is the live list
    assert len((await memory.query()).results) == 2
    memory.content = [text("replaced")]
    assert [item.content for item in (await memory.query()).results] == ["replaced"]
    assert repr(memory) == "ListMemory(name='notes', items=1)"


async def test_update_context_appends_one_system_message() -> None:
    memory = ListMemory()
    await memory.add(text("User likes pizza."))
    await memory.add(text("User dislikes cheese."))
    context = UnboundedChatCompletionContext(
        initial_messages=[UserMessage(content="hi", source="user")]
    )
    outcome = await memory.update_context(context)
    messages = await context.get_messages()
    assert messages[-1] == SystemMessage(
        content="\nRelevant memory content (in chronological order):\n"
        "1. User likes pizza.\n2. User dislikes cheese.\n"
    )
    assert len(messages) == 2
    assert isinstance(outcome, UpdateContextResult)
    assert [item.content for item in outcome.memories.results] == [
        "User likes pizza.",
        "User dislikes cheese.",
    ]


async def test_update_context_with_no_memories_adds_nothing() -> None:
    context = UnboundedChatCompletionContext()
    outcome = await ListMemory().update_context(context)
    assert outcome == UpdateContextResult(memories=MemoryQueryResult(results=[]))
    assert await context.get_messages() == []


async def test_update_context_renders_non_text_content_with_str() -> None:
    memory = ListMemory(
        memory_contents=[
            MemoryContent(content={"diet": "vegan"}, mime_type=MemoryMimeType.JSON),
            MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY),
        ]
    )
    context = UnboundedChatCompletionContext()
    await memory.update_context(context)
    [message] = await context.get_messages()
    assert message.content == (
        "\nRelevant memory content (in chronological order):\n"
        "1. {'diet': 'vegan'}\n2. b'\\x00\\x01'\n"
    )


async def test_memory_message_goes_through_a_buffered_context() -> None:
    memory = ListMemory(memory_contents=[text("fact")])
    context = BufferedChatCompletionContext(buffer_size=1)
    await context.add_message(UserMessage(content="question", source="user"))
    await memory.update_context(context)
    [only] = await context.get_messages()
    assert isinstance(only, SystemMessage)
    assert "1. fact" in only.content


async def test_pizza_preferences_reach_the_model() -> None:
    """Appendix B scenario 8: memories land in the model call as a system message."""
    memory = ListMemory()
    await memory.add(MemoryContent(content="User likes pizza.", mime_type="text/plain"))
    await memory.add(MemoryContent(content="User dislikes cheese.", mime_type="text/plain"))
    client = ReplayChatCompletionClient(["How about making a delicious pizza without cheese?"])
    context = UnboundedChatCompletionContext()
    system = SystemMessage(content="You are a helpful assistant.")

    # What an assistant agent with memory=[memory] does for one run.
    await context.add_message(UserMessage(content="What is a good dinner idea?", source="user"))
    outcome = await memory.update_context(context)
    event = MemoryQueryEvent(content=outcome.memories.results, source="assistant")
    reply = await client.create([system, *await context.get_messages()])

    assert reply.content == "How about making a delicious pizza without cheese?"
    [request] = client.requests
    assert [type(m).__name__ for m in request] == ["SystemMessage", "UserMessage", "SystemMessage"]
    memory_message = request[-1]
    assert isinstance(memory_message, SystemMessage)
    assert "1. User likes pizza.\n2. User dislikes cheese." in memory_message.content
    assert [item.content for item in event.content] == [
        "User likes pizza.",
        "User dislikes cheese.",
    ]
    assert event.content[0].mime_type == MemoryMimeType.TEXT


def test_memory_is_abstract() -> None:
    with pytest.raises(TypeError):
        Memory()  # type: ignore[abstract]


async def test_custom_memory() -> None:
    class KeywordMemory(Memory):
        """Recalls the items that share a word with the query."""

        def __init__(self) -> None:
            self.items: list[MemoryContent] = []

        async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
            messages = await model_context.get_messages()
            found = await self.query(str(messages[-1].content) if messages else "")
            if found.results:
                lines = "\n".join(str(item.content) for item in found.results)
                await model_context.add_message(SystemMessage(content=lines))
            return UpdateContextResult(memories=found)

        async def query(
            self,
            query: str | MemoryContent,
            cancellation_token: CancellationToken | None = None,
            **kwargs: Any,
        ) -> MemoryQueryResult:
            words = set(str(query.content if isinstance(query, MemoryContent) else query).split())
            return MemoryQueryResult(
                results=[item for item in self.items if words & set(str(item.content).split())]
            )

        async def add(
            self, content: MemoryContent, cancellation_token: CancellationToken | None = None
        ) -> None:
            self.items.append(content)

        async def clear(self) -> None:
            self.items.clear()

        async def close(self) -> None:
            pass

    memory = KeywordMemory()
    await memory.add(text("pizza is liked"))
    await memory.add(text("cheese is disliked"))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="any pizza tonight", source="user"))
    outcome = await memory.update_context(context)
    assert [item.content for item in outcome.memories.results] == ["pizza is liked"]
    assert (await context.get_messages())[-1] == SystemMessage(content="pizza is liked")
    assert Memory.component_type == "memory"
