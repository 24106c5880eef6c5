"""The OpenAI client's request path skips the SDK's per-request transform (issue 15) and
the server receives byte for byte what ``chat.completions.create`` would send."""

from __future__ import annotations

from typing import Any

import openai.resources.chat.completions.completions as sdk_completions
import pytest
from openai_server import OpenAIServer, Reply, ToolCall
from pydantic import BaseModel

from flowlib.models import (
    AssistantMessage,
    AzureOpenAIChatCompletionClient,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Image,
    OpenAIChatCompletionClient,
    SystemMessage,
    UserMessage,
)
from flowlib.tools import FunctionTool

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)

HISTORY = [
    SystemMessage(content='Be brief. Ünïcode \u2028 and "quotes".'),
    UserMessage(content="Add 2 and 3, then look at this.", source="user"),
    AssistantMessage(
        content=[FunctionCall(id="call_1", name="add", arguments='{"a": 2, "b": 3}')],
        source="assistant",
    ),
    FunctionExecutionResultMessage(
        content=[FunctionExecutionResult(content="5", name="add", call_id="call_1")]
    ),
    AssistantMessage(content="It is 5.", source="assistant"),
    UserMessage(content=["Look:", Image(PNG)], source="user"),
]


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class City(BaseModel):
    name: str
    country: str


# Each case: client options, create keyword arguments, stream or not.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    "plain": ({}, {}, False),
    "stream": ({}, {}, True),
    "tools": (
        {},
        {"tools": [FunctionTool(add, "Add two numbers.")], "tool_choice": "required"},
        False,
    ),
    "tools-stream": (
        {"parallel_tool_calls": False},
        {"tools": [FunctionTool(add, "Add two numbers.")]},
        True,
    ),
    "structured": ({}, {"json_output": City}, False),
    "json-mode": ({"seed": 7, "temperature": 0.25}, {"json_output": True}, False),
    "options": (
        {"stop": ["\n\n"], "max_tokens": 50, "user": "u-1", "logit_bias": {"42": -100}},
        {
            "extra_create_args": {
                "extra_body": {"top_k": 3},
                "extra_headers": {"X-Trace": "abc"},
                "extra_query": {"debug": "1"},
                "timeout": 9.5,
                "metadata": {"k": "v"},
            }
        },
        False,
    ),
    "stream-options": ({"stream_options": {"include_usage": False}}, {}, True),
}


async def send(client: Any, kwargs: dict[str, Any], stream: bool) -> None:
    if stream:
        async for item in client.create_stream(HISTORY, **kwargs):
            last = item
        assert isinstance(last, CreateResult)
    else:
        await client.create(HISTORY, **kwargs)


def reply_for(case: str) -> Reply:
    if case.startswith("tools"):
        return Reply(tool_calls=[ToolCall("add", '{"a": 1, "b": 2}')])
    if case in ("structured", "json-mode"):
        return Reply('{"name": "Paris", "country": "France"}')
    return Reply("Fine.")


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_server_gets_the_same_bytes_as_through_create(
    openai_server: OpenAIServer, case: str
) -> None:
    options, kwargs, stream = CASES[case]
    client = OpenAIChatCompletionClient(
        "gpt-4o", api_key="sk-test", base_url=openai_server.base_url, max_retries=0, **options
    )
    assert client._direct  # the installed SDK supports the direct path
    openai_server.enqueue(reply_for(case), reply_for(case))
    await send(client, kwargs, stream)
    client._direct = False  # the SDK's own chat.completions.create
    await send(client, kwargs, stream)
    await client.close()
    direct, through_create = openai_server.requests
    assert direct.raw == through_create.raw
    assert direct.path == through_create.path
    assert direct.headers == through_create.headers
    assert direct.headers["authorization"] == "Bearer sk-test"


async def test_azure_requests_are_the_same_too(openai_server: OpenAIServer) -> None:
    client = AzureOpenAIChatCompletionClient(
        model="gpt-4o",
        azure_deployment="my-gpt",
        azure_endpoint=openai_server.root_url,
        api_version="2024-10-21",
        api_key="azure-key",
        max_retries=0,
    )
    openai_server.enqueue(Reply("a"), Reply("b"))
    await client.create(HISTORY)
    client._direct = False
    await client.create(HISTORY)
    await client.close()
    direct, through_create = openai_server.requests
    assert (
        direct.path
        == through_create.path
        == ("/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21")
    )
    assert (direct.raw, direct.headers) == (through_create.raw, through_create.headers)
    assert direct.headers["api-key"] == "azure-key"


async def test_the_sdk_transform_is_not_run(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    walked: list[object] = []
    original = sdk_completions.async_maybe_transform

    async def spy(data: object, expected_type: object) -> object:
        walked.append(data)
        return await original(data, expected_type)  # type: ignore[arg-type]

    monkeypatch.setattr(sdk_completions, "async_maybe_transform", spy)
    client = OpenAIChatCompletionClient(
        "gpt-4o", api_key="sk-test", base_url=openai_server.base_url, max_retries=0
    )
    openai_server.enqueue(Reply("one"), Reply("two"))
    assert (await client.create(HISTORY)).content == "one"
    assert walked == []
    client._direct = False  # the spy does see the SDK's own path
    assert (await client.create(HISTORY)).content == "two"
    assert len(walked) == 1
    await client.close()


async def test_a_client_that_is_not_the_sdks_goes_through_create(
    openai_server: OpenAIServer,
) -> None:
    class Wrapped:
        """Any object with ``chat.completions.create`` (e.g. an instrumented client)."""

        def __init__(self, inner: Any) -> None:
            self.chat = inner.chat
            self.inner = inner

        async def close(self) -> None:
            await self.inner.close()

    import openai

    inner = openai.AsyncOpenAI(api_key="sk-test", base_url=openai_server.base_url)
    client = OpenAIChatCompletionClient("gpt-4o", client=Wrapped(inner))  # type: ignore[arg-type]
    assert not client._direct
    openai_server.enqueue(Reply("ok"))
    assert (await client.create(HISTORY)).content == "ok"
    await client.close()
