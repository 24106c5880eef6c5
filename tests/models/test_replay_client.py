"""ReplayChatCompletionClient: the scripted model for tests and offline demos."""

from __future__ import annotations

import asyncio
import time

import pytest

from flowlib._cancellation import CancellationToken
from flowlib.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    LLMMessage,
    ModelInfo,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    RequestUsage,
    SystemMessage,
    UserMessage,
)

ASK = [UserMessage(content="What is the capital of France?", source="user")]
CALL = CreateResult(
    finish_reason="function_calls",
    content=[FunctionCall(id="1", arguments='{"city": "Paris"}', name="get_weather")],
    usage=RequestUsage(prompt_tokens=7, completion_tokens=3),
    cached=False,
)


async def stream_all(client: ReplayChatCompletionClient, **kwargs: object) -> list[object]:
    return [item async for item in client.create_stream(ASK, **kwargs)]  # type: ignore[arg-type]


def test_is_a_chat_completion_client() -> None:
    assert isinstance(ReplayChatCompletionClient([]), ChatCompletionClient)


async def test_responses_come_in_order() -> None:
    client = ReplayChatCompletionClient(["first", CALL, "third"])
    first = await client.create(ASK)
    assert (first.content, first.finish_reason, first.cached) == ("first", "stop", False)
    assert await client.create(ASK) == CALL
    assert (await client.create(ASK)).content == "third"
    assert client.remaining == 0


async def test_string_usage_counts_words() -> None:
    client = ReplayChatCompletionClient(["The capital is Paris."])
    result = await client.create(ASK)
    prompt = client.count_tokens(ASK)
    assert prompt == 6
    assert result.usage == RequestUsage(prompt_tokens=prompt, completion_tokens=4)


async def test_usage_accumulates_over_create_and_stream() -> None:
    client = ReplayChatCompletionClient(["one two", CALL])
    await client.create(ASK)
    await stream_all(client)
    expected = RequestUsage(prompt_tokens=6 + 7, completion_tokens=2 + 3)
    assert client.actual_usage() == expected
    assert client.total_usage() == expected


async def test_requests_and_arguments_are_recorded() -> None:
    client = ReplayChatCompletionClient(["a", "b"])
    conversation: list[LLMMessage] = [SystemMessage(content="Be brief."), *ASK]
    await client.create(conversation, json_output=True, extra_create_args={"seed": 1})
    await stream_all(client, tool_choice="none")
    assert client.requests == [conversation, ASK]
    assert client.request_args[0]["json_output"] is True
    assert client.request_args[0]["extra_create_args"] == {"seed": 1}
    assert client.request_args[1]["tool_choice"] == "none"


async def test_scripted_results_are_copies() -> None:
    client = ReplayChatCompletionClient([CALL])
    result = await client.create(ASK)
    assert isinstance(result.content, list)
    result.content.clear()
    client.reset()
    assert (await client.create(ASK)).content == CALL.content
    assert CALL.content  # the script itself is untouched


async def test_recorded_messages_are_a_copy_of_the_list() -> None:
    client = ReplayChatCompletionClient(["a"])
    conversation = list(ASK)
    await client.create(conversation)
    conversation.append(UserMessage(content="later", source="user"))
    assert client.requests == [ASK]


async def test_stream_chunks_join_back_to_the_text() -> None:
    text = "  Paris is\tthe capital\nof France.  "
    client = ReplayChatCompletionClient([text])
    items = await stream_all(client)
    *chunks, result = items
    assert all(isinstance(chunk, str) for chunk in chunks)
    assert len(chunks) > 3
    assert "".join(chunks) == text  # type: ignore[arg-type]
    assert isinstance(result, CreateResult)
    assert result.content == text


async def test_stream_of_a_text_create_result_is_chunked_too() -> None:
    scripted = CreateResult(
        finish_reason="length",
        content="cut short",
        usage=RequestUsage(1, 2),
        cached=False,
        thought="hmm",
    )
    items = await stream_all(ReplayChatCompletionClient([scripted]))
    assert items == ["cut ", "short", scripted]


async def test_stream_of_tool_calls_yields_only_the_result() -> None:
    assert await stream_all(ReplayChatCompletionClient([CALL])) == [CALL]


async def test_running_out_is_a_clear_error() -> None:
    client = ReplayChatCompletionClient(["only"])
    await client.create(ASK)
    with pytest.raises(ReplayExhaustedError, match="No more mock responses available"):
        await client.create(ASK)
    with pytest.raises(ValueError, match="No more mock responses available"):
        await stream_all(client)
    assert len(client.requests) == 1  # failed requests are not recorded


async def test_reset_replays_the_script() -> None:
    client = ReplayChatCompletionClient(["a", "b"])
    await client.create(ASK)
    await client.create(ASK)
    client.reset()
    assert client.remaining == 2
    assert client.requests == []
    assert client.request_args == []
    assert client.total_usage() == RequestUsage(0, 0)
    assert (await client.create(ASK)).content == "a"


async def test_cancelled_token_raises_and_keeps_the_script() -> None:
    client = ReplayChatCompletionClient(["kept"])
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await client.create(ASK, cancellation_token=token)
    with pytest.raises(asyncio.CancelledError):
        await stream_all(client, cancellation_token=token)
    assert client.remaining == 1
    assert (await client.create(ASK)).content == "kept"


async def test_cancellation_interrupts_latency() -> None:
    client = ReplayChatCompletionClient(["late"], latency=10)
    token = CancellationToken()
    call = asyncio.ensure_future(client.create(ASK, cancellation_token=token))
    await asyncio.sleep(0.01)
    started = time.monotonic()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - started < 1
    assert client.remaining == 1


async def test_cancellation_stops_a_stream() -> None:
    client = ReplayChatCompletionClient(["one two three four"])
    token = CancellationToken()
    seen: list[object] = []
    with pytest.raises(asyncio.CancelledError):
        async for item in client.create_stream(ASK, cancellation_token=token):
            seen.append(item)
            token.cancel()
    assert seen == ["one "]


async def test_latency_delays_each_response() -> None:
    client = ReplayChatCompletionClient(["a"], latency=0.05)
    started = time.monotonic()
    await client.create(ASK)
    assert time.monotonic() - started >= 0.05


def test_model_info_defaults_and_validation() -> None:
    info = ReplayChatCompletionClient([]).model_info
    assert info["function_calling"] and info["vision"] and info["structured_output"]
    custom = ModelInfo(
        vision=False,
        function_calling=False,
        json_output=False,
        family="r1",
        structured_output=False,
    )
    assert ReplayChatCompletionClient([], model_info=custom).model_info == custom
    with pytest.raises(ValueError, match="family"):
        ReplayChatCompletionClient([], model_info={"vision": True})  # type: ignore[arg-type]


def test_token_counts_cover_every_message_kind() -> None:
    client = ReplayChatCompletionClient([])
    messages: list[LLMMessage] = [
        SystemMessage(content="one two"),
        AssistantMessage(
            content=[FunctionCall(id="1", arguments="{}", name="f")], source="assistant"
        ),
    ]
    assert client.count_tokens(messages) == 3
    assert client.remaining_tokens(messages) == 10_000 - 3


async def test_close_is_harmless() -> None:
    client = ReplayChatCompletionClient(["a"])
    await client.close()
    assert (await client.create(ASK)).content == "a"
