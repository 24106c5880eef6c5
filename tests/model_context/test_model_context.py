"""Tests of flowlib.model_context: each context's view, preloading, clear and state."""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from typing import Any

import pytest

import flowlib.model_context
from flowlib.errors import StateError
from flowlib.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    ChatCompletionContextState,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from flowlib.models import (
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ReplayChatCompletionClient,
    SystemMessage,
    UserMessage,
)
from flowlib.models._client import ToolLike
from flowlib.tools import ToolSchema


def user(text: str) -> UserMessage:
    return UserMessage(content=text, source="user")


def assistant(text: str) -> AssistantMessage:
    return AssistantMessage(content=text, source="assistant")


def call(call_id: str) -> AssistantMessage:
    return AssistantMessage(
        content=[FunctionCall(id=call_id, arguments="{}", name="get_time")], source="assistant"
    )


def result(call_id: str) -> FunctionExecutionResultMessage:
    return FunctionExecutionResultMessage(
        content=[FunctionExecutionResult(content="noon", name="get_time", call_id=call_id)]
    )


def texts(messages: Sequence[LLMMessage]) -> list[Any]:
    return [m.content if isinstance(m.content, str) else m.type for m in messages]


async def fill(context: ChatCompletionContext, messages: Sequence[LLMMessage]) -> None:
    for message in messages:
        await context.add_message(message)


def test_all_matches_exports() -> None:
    module = flowlib.model_context
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert set(module.__all__) == public
    assert len(module.__all__) == len(set(module.__all__))


# --- base behaviour (through the unbounded context) --------------------------------------


async def test_unbounded_sees_everything_and_returns_a_copy() -> None:
    context = UnboundedChatCompletionContext()
    await fill(context, [user("a"), assistant("b"), user("c")])
    view = await context.get_messages()
    assert texts(view) == ["a", "b", "c"]
    view.clear()
    assert texts(await context.get_messages()) == ["a", "b", "c"]


async def test_preloaded_messages_come_first_and_clear_drops_them() -> None:
    preload: list[LLMMessage] = [SystemMessage(content="You are terse."), user("earlier")]
    context = UnboundedChatCompletionContext(initial_messages=preload)
    await context.add_message(user("now"))
    assert texts(await context.get_messages()) == ["You are terse.", "earlier", "now"]
    preload.append(user("added to the caller's list later"))  # the context copied it
    assert len(await context.get_messages()) == 3
    await context.clear()
    assert await context.get_messages() == []


async def test_rejects_non_llm_messages() -> None:
    context = UnboundedChatCompletionContext()
    with pytest.raises(TypeError, match="to_model_message"):
        await context.add_message("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="LLM messages"):
        UnboundedChatCompletionContext([{"content": "x"}])  # type: ignore[list-item]


def test_base_is_abstract() -> None:
    with pytest.raises(TypeError):
        ChatCompletionContext()  # type: ignore[abstract]


async def test_state_round_trip_through_json() -> None:
    context = BufferedChatCompletionContext(buffer_size=2)
    history: list[LLMMessage] = [
        SystemMessage(content="sys"),
        user("what time is it?"),
        call("c1"),
        result("c1"),
        AssistantMessage(content="Noon.", thought="checked", source="assistant"),
    ]
    await fill(context, history)
    state = await context.save_state()
    assert state["type"] == "ChatCompletionContextState"
    assert state["version"] == 1
    restored = BufferedChatCompletionContext(buffer_size=2)
    await restored.load_state(json.loads(json.dumps(state)))
    assert await restored.get_messages() == await context.get_messages()
    # The whole history is saved, not just the view.
    unbounded = UnboundedChatCompletionContext()
    await unbounded.load_state(state)
    assert await unbounded.get_messages() == history


async def test_load_autogen_state_and_refuse_other_versions() -> None:
    context = UnboundedChatCompletionContext()
    await context.load_state(
        {"messages": [{"content": "hi", "source": "user", "type": "UserMessage"}]}
    )
    assert texts(await context.get_messages()) == ["hi"]
    with pytest.raises(StateError, match="version 2"):
        await context.load_state({"version": 2, "messages": []})
    with pytest.raises(StateError, match="malformed"):
        await context.load_state({"messages": [{"type": "Nope"}]})
    assert texts(await context.get_messages()) == ["hi"]  # a failed load changes nothing
    assert ChatCompletionContextState().messages == []


async def test_custom_view_subclass() -> None:
    class ReasoningModelContext(UnboundedChatCompletionContext):
        """Drops the thoughts of earlier answers."""

        async def get_messages(self) -> list[LLMMessage]:
            messages = await super().get_messages()
            return [
                m.model_copy(update={"thought": None}) if isinstance(m, AssistantMessage) else m
                for m in messages
            ]

    context = ReasoningModelContext()
    await fill(context, [user("2+2?"), AssistantMessage(content="4", thought="2+2=4", source="a")])
    view = await context.get_messages()
    assert isinstance(view[1], AssistantMessage)
    assert view[1].thought is None


# --- buffered ---------------------------------------------------------------------------


async def test_buffered_keeps_the_last_n() -> None:
    context = BufferedChatCompletionContext(buffer_size=3, initial_messages=[user("pre")])
    assert texts(await context.get_messages()) == ["pre"]
    await fill(context, [assistant("1"), user("2"), assistant("3")])
    assert texts(await context.get_messages()) == ["1", "2", "3"]
    assert context.buffer_size == 3
    await context.clear()
    assert await context.get_messages() == []


@pytest.mark.parametrize("size", [0, -1])
def test_buffered_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError, match="buffer_size must be at least 1"):
        BufferedChatCompletionContext(buffer_size=size)


async def test_buffered_never_starts_with_an_orphan_result() -> None:
    context = BufferedChatCompletionContext(buffer_size=3)
    await fill(context, [user("time?"), call("c1"), result("c1"), assistant("Noon."), user("ok")])
    # The last 3 would be [result, "Noon.", "ok"]: the result's call fell out, so it goes.
    assert texts(await context.get_messages()) == ["Noon.", "ok"]
    await context.add_message(assistant("bye"))
    assert texts(await context.get_messages()) == ["Noon.", "ok", "bye"]


async def test_buffered_two_forgets_the_first_question() -> None:
    """Appendix B scenario 7: with buffer_size=2 the model sees 1 user + 1 assistant turn."""
    client = ReplayChatCompletionClient(
        [
            "Two cities in North America are New York City and Toronto.",
            "That's great! Blue is often associated with calmness and serenity.",
            "No, you didn't ask a question.",
        ]
    )
    context = BufferedChatCompletionContext(buffer_size=2)
    system = SystemMessage(content="You are a helpful assistant.")
    answers = []
    for task in [
        "Name two cities in North America.",
        "My favorite color is blue.",
        "Did I ask you any question?",
    ]:
        # What an assistant agent does on each run.
        await context.add_message(user(task))
        reply = await client.create([system, *await context.get_messages()])
        assert isinstance(reply.content, str)
        await context.add_message(AssistantMessage(content=reply.content, source="assistant"))
        answers.append(reply.content)

    assert answers[-1] == "No, you didn't ask a question."
    assert texts(client.requests[0]) == [
        "You are a helpful assistant.",
        "Name two cities in North America.",
    ]
    assert texts(client.requests[2]) == [
        "You are a helpful assistant.",
        "That's great! Blue is often associated with calmness and serenity.",
        "Did I ask you any question?",
    ]
    assert all("Name two cities" not in str(m.content) for m in client.requests[2])
    assert len(await context.get_messages()) == 2


# --- token limited ----------------------------------------------------------------------


async def test_token_limited_drops_oldest_until_it_fits() -> None:
    client = ReplayChatCompletionClient([])  # counts whitespace-separated words
    context = TokenLimitedChatCompletionContext(client, token_limit=6)
    await fill(
        context,
        [user("one two three"), assistant("four five"), user("six seven"), assistant("eight")],
    )
    view = await context.get_messages()
    assert texts(view) == ["four five", "six seven", "eight"]
    assert client.count_tokens(view) <= 6
    assert context.token_limit == 6


async def test_token_limited_with_nothing_that_fits() -> None:
    context = TokenLimitedChatCompletionContext(ReplayChatCompletionClient([]), token_limit=2)
    await context.add_message(user("far too many words here"))
    assert await context.get_messages() == []


async def test_token_limited_keeps_calls_with_their_results() -> None:
    client = ReplayChatCompletionClient([])
    # Word counts: the question 3, the call 1 ("get_time({})"), the result 1, the answer 2.
    history: list[LLMMessage] = [
        user("what time now"),
        call("c1"),
        result("c1"),
        assistant("It's noon."),
    ]
    assert [client.count_tokens([m]) for m in history] == [3, 1, 1, 2]
    context = TokenLimitedChatCompletionContext(client, token_limit=4)
    await fill(context, history)
    assert texts(await context.get_messages()) == [
        "AssistantMessage",
        "FunctionExecutionResultMessage",
        "It's noon.",
    ]


async def test_token_limited_orphan_result_is_removed_even_when_it_fits() -> None:
    client = ReplayChatCompletionClient([])
    context = TokenLimitedChatCompletionContext(client, token_limit=2)
    await fill(context, [user("a b c d"), call("c1"), result("c1"), assistant("noon")])
    # Budget 2: [result(1), "noon"(1)] fits, but the result's call is gone.
    assert texts(await context.get_messages()) == ["noon"]


async def test_token_limited_uses_remaining_tokens_without_a_limit() -> None:
    client = ReplayChatCompletionClient([])  # a nominal 10,000-token window
    context = TokenLimitedChatCompletionContext(client)
    big = " ".join(["word"] * 6000)
    await fill(context, [user(big), user(big), user("last")])
    assert [len(str(m.content).split()) for m in await context.get_messages()] == [6000, 1]


async def test_token_limited_counts_tool_schemas() -> None:
    seen: list[Sequence[ToolLike]] = []

    class Counting(ReplayChatCompletionClient):
        def count_tokens(
            self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
        ) -> int:
            seen.append(tools)
            return super().count_tokens(messages) + 5 * len(tools)

    schema = ToolSchema(name="get_time", description="Tell the time.")
    context = TokenLimitedChatCompletionContext(
        Counting([]), token_limit=7, tool_schema=[schema], initial_messages=[user("a b")]
    )
    await context.add_message(user("c"))
    # 5 for the tool + 3 words > 7, so the oldest message goes.
    assert texts(await context.get_messages()) == ["c"]
    assert all(list(tools) == [schema] for tools in seen)


def test_token_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="token_limit must be at least 1"):
        TokenLimitedChatCompletionContext(ReplayChatCompletionClient([]), token_limit=0)


# --- head and tail ----------------------------------------------------------------------


async def test_head_and_tail_with_placeholder() -> None:
    context = HeadAndTailChatCompletionContext(head_size=1, tail_size=2)
    await fill(context, [user("first"), assistant("2"), user("3"), assistant("4"), user("5")])
    view = await context.get_messages()
    assert texts(view) == ["first", "Skipped 2 messages.", "4", "5"]
    assert view[1] == UserMessage(content="Skipped 2 messages.", source="System")


async def test_head_and_tail_returns_everything_when_it_fits() -> None:
    context = HeadAndTailChatCompletionContext(
        head_size=2, tail_size=2, initial_messages=[SystemMessage(content="pre")]
    )
    await fill(context, [user("a"), assistant("b"), user("c")])
    assert texts(await context.get_messages()) == ["pre", "a", "b", "c"]
    await context.add_message(assistant("d"))
    assert texts(await context.get_messages()) == ["pre", "a", "Skipped 1 messages.", "c", "d"]
    await context.clear()
    assert await context.get_messages() == []


async def test_head_and_tail_keep_tool_calls_with_their_results() -> None:
    context = HeadAndTailChatCompletionContext(head_size=2, tail_size=2)
    await fill(
        context,
        [user("time?"), call("c1"), result("c1"), user("x"), call("c2"), result("c2"), user("y")],
    )
    view = await context.get_messages()
    # Head [user, call c1]: the call's result is skipped, so the call is too.
    # Tail [result c2, user]: the result's call is skipped, so the result is too.
    assert texts(view) == ["time?", "Skipped 5 messages.", "y"]


@pytest.mark.parametrize(("head", "tail"), [(0, 1), (1, 0)])
def test_head_and_tail_sizes_must_be_positive(head: int, tail: int) -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        HeadAndTailChatCompletionContext(head_size=head, tail_size=tail)
