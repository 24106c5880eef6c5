"""ChatCompletionCache and its stores."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from pydantic import BaseModel

from flowlib._cancellation import CancellationToken
from flowlib.models import (
    CHAT_CACHE_VALUE_TYPE,
    CacheStore,
    ChatCompletionCache,
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    InMemoryStore,
    ReplayChatCompletionClient,
    RequestUsage,
    SQLiteStore,
    SystemMessage,
    UserMessage,
)
from flowlib.tools import ToolSchema

ASK = [UserMessage(content="Hello, how are you?", source="user")]
CALL = CreateResult(
    finish_reason="function_calls",
    content=[FunctionCall(id="1", arguments='{"x": 1}', name="f")],
    usage=RequestUsage(prompt_tokens=9, completion_tokens=4),
    cached=False,
    thought="calling f",
)
TOOL: ToolSchema = {"name": "f", "parameters": {"type": "object", "properties": {}}}


class Answer(BaseModel):
    text: str


async def stream_all(client: ChatCompletionClient, **kwargs: object) -> list[object]:
    return [item async for item in client.create_stream(ASK, **kwargs)]  # type: ignore[arg-type]


# -- stores -----------------------------------------------------------------------------


def test_in_memory_store() -> None:
    store: CacheStore[int] = InMemoryStore()
    assert store.get("k") is None
    assert store.get("k", 5) == 5
    store.set("k", 1)
    store.set("k", 2)
    assert store.get("k") == 2


def test_sqlite_store_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    first: SQLiteStore[CHAT_CACHE_VALUE_TYPE] = SQLiteStore(path)
    first.set("result", CALL)
    first.set("stream", ["a", "b", CALL])
    second: SQLiteStore[CHAT_CACHE_VALUE_TYPE] = SQLiteStore(path)
    assert second.get("result") == CALL
    assert second.get("stream") == ["a", "b", CALL]
    assert second.get("missing", None) is None
    with sqlite3.connect(path) as connection:
        (text,) = connection.execute(
            "SELECT value FROM flowlib_cache WHERE key = 'result'"
        ).fetchone()
    connection.close()
    assert '"finish_reason":"function_calls"' in text  # stored as JSON


def test_sqlite_store_with_other_values_and_tables(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    numbers: SQLiteStore[int] = SQLiteStore(path, value_type=int, table="numbers")
    numbers.set("a", 1)
    numbers.set("a", 3)
    assert SQLiteStore(path, value_type=int, table="numbers").get("a") == 3
    assert SQLiteStore(path, value_type=int).get("a") is None
    with pytest.raises(ValueError, match="InMemoryStore"):
        SQLiteStore(":memory:")
    with pytest.raises(ValueError, match="identifier"):
        SQLiteStore(path, table="bad name; DROP")


# -- the wrapper ------------------------------------------------------------------------


async def test_repeated_create_is_served_from_the_cache() -> None:
    inner = ReplayChatCompletionClient(["I am fine.", "a different answer"])
    cache = ChatCompletionCache(inner)
    first = await cache.create(ASK)
    second = await cache.create(ASK)
    assert (first.cached, second.cached) == (False, True)
    assert second.content == first.content == "I am fine."
    assert len(inner.requests) == 1
    assert inner.remaining == 1


async def test_usage_counts_hits_only_in_total() -> None:
    inner = ReplayChatCompletionClient([CALL, "other"])
    cache = ChatCompletionCache(inner)
    await cache.create(ASK, tools=[TOOL])
    await cache.create(ASK, tools=[TOOL])
    await cache.create(ASK, tools=[TOOL])
    assert cache.actual_usage() == RequestUsage(9, 4)
    assert cache.total_usage() == RequestUsage(27, 12)


async def test_every_request_argument_is_part_of_the_key() -> None:
    inner = ReplayChatCompletionClient([str(n) for n in range(8)])
    cache = ChatCompletionCache(inner)
    variants: list[dict[str, object]] = [
        {},
        {"tools": [TOOL]},
        {"tools": [TOOL], "tool_choice": "required"},
        {"json_output": True},
        {"json_output": Answer},
        {"extra_create_args": {"temperature": 0.5}},
        {"extra_create_args": {"temperature": 0.7}},
    ]
    for variant in variants:
        await cache.create(ASK, **variant)  # type: ignore[arg-type]
    await cache.create([SystemMessage(content="x"), *ASK])
    assert inner.remaining == 0
    for variant in variants:
        assert (await cache.create(ASK, **variant)).cached  # type: ignore[arg-type]


def test_cache_key_is_stable_and_order_insensitive_for_dicts() -> None:
    one = ChatCompletionCache.cache_key(ASK, extra_create_args={"a": 1, "b": 2})
    two = ChatCompletionCache.cache_key(ASK, extra_create_args={"b": 2, "a": 1})
    assert one == two
    assert len(one) == 64
    assert one != ChatCompletionCache.cache_key(ASK)


async def test_cached_results_cannot_be_changed_by_callers() -> None:
    cache = ChatCompletionCache(ReplayChatCompletionClient([CALL]))
    first = await cache.create(ASK)
    assert isinstance(first.content, list)
    first.content.clear()
    second = await cache.create(ASK)
    assert second.content == CALL.content


async def test_stream_is_cached_and_replayed() -> None:
    inner = ReplayChatCompletionClient(["I am doing well."])
    cache = ChatCompletionCache(inner)
    first = await stream_all(cache)
    second = await stream_all(cache)
    assert first[:-1] == second[:-1] == ["I ", "am ", "doing ", "well."]
    assert isinstance(first[-1], CreateResult) and not first[-1].cached
    assert isinstance(second[-1], CreateResult) and second[-1].cached
    assert inner.remaining == 0
    # create() and create_stream() share results.
    assert (await cache.create(ASK)).cached


async def test_stream_replays_a_result_cached_by_create() -> None:
    cache = ChatCompletionCache(ReplayChatCompletionClient(["whole answer"]))
    await cache.create(ASK)
    items = await stream_all(cache)
    assert items[0] == "whole answer"
    assert isinstance(items[1], CreateResult) and items[1].cached


async def test_an_unfinished_stream_is_not_cached() -> None:
    inner = ReplayChatCompletionClient(["one two three", "one two three"])
    cache = ChatCompletionCache(inner)
    stream = cache.create_stream(ASK)
    assert await stream.__anext__() == "one "
    await stream.aclose()
    items = await stream_all(cache)
    assert isinstance(items[-1], CreateResult) and not items[-1].cached


async def test_cache_persists_in_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    first = ChatCompletionCache(
        ReplayChatCompletionClient([CALL, "streamed text"]), SQLiteStore(path)
    )
    await first.create(ASK)
    await stream_all(first, json_output=True)

    # A new process would start with a new client and store on the same file.
    inner = ReplayChatCompletionClient([])
    second = ChatCompletionCache(inner, SQLiteStore(path))
    result = await second.create(ASK)
    assert result.cached
    assert result.content == CALL.content
    assert result.thought == "calling f"
    items = await stream_all(second, json_output=True)
    assert items[:-1] == ["streamed ", "text"]
    assert inner.requests == []


async def test_cancelled_token_raises_before_the_cache() -> None:
    cache = ChatCompletionCache(ReplayChatCompletionClient(["a"]))
    await cache.create(ASK)
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cache.create(ASK, cancellation_token=token)
    with pytest.raises(asyncio.CancelledError):
        await stream_all(cache, cancellation_token=token)


async def test_delegates_the_rest_to_the_wrapped_client() -> None:
    inner = ReplayChatCompletionClient(["a"])
    cache = ChatCompletionCache(inner)
    assert cache.client is inner
    assert isinstance(cache.store, InMemoryStore)
    assert cache.model_info == inner.model_info
    assert cache.count_tokens(ASK) == inner.count_tokens(ASK)
    assert cache.remaining_tokens(ASK) == inner.remaining_tokens(ASK)
    await cache.close()
