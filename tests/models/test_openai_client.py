"""OpenAIChatCompletionClient through the real openai SDK against a local server."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import openai
import pytest
from openai_server import ErrorReply, OpenAIServer, RawReply, Reply, ToolCall
from pydantic import BaseModel

from flowlib._cancellation import CancellationToken
from flowlib.models import (
    AssistantMessage,
    AzureOpenAIChatCompletionClient,
    ClientClosedError,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Image,
    ModelFamily,
    ModelInfo,
    ModelResponseError,
    OpenAIChatCompletionClient,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from flowlib.tools import ToolSchema

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
ASK = [UserMessage(content="What is the capital of France?", source="user")]
UNKNOWN_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    family="unknown",
    structured_output=True,
)
WEATHER: ToolSchema = {
    "name": "get_weather",
    "description": "Weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


class AddTool:
    """A minimal object satisfying the Tool protocol."""

    name = "add"
    description = "Add two numbers."

    @property
    def schema(self) -> ToolSchema:
        return {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
            "strict": True,
        }

    async def run_json(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> Any:
        return args["a"] + args["b"]

    def return_value_as_string(self, value: Any) -> str:
        return str(value)


class City(BaseModel):
    """A city and its country."""

    name: str
    country: str
    population: int | None = None


def make_client(server: OpenAIServer, model: str = "gpt-4o", **kwargs: Any) -> Any:
    kwargs.setdefault("api_key", "sk-test")
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 10)
    return OpenAIChatCompletionClient(model, base_url=server.base_url, **kwargs)


@pytest.fixture
async def client(openai_server: OpenAIServer) -> AsyncIterator[OpenAIChatCompletionClient]:
    model_client = make_client(openai_server)
    yield model_client
    await model_client.close()


async def collect(stream: AsyncIterator[str | CreateResult]) -> tuple[list[str], CreateResult]:
    chunks: list[str] = []
    result: CreateResult | None = None
    async for item in stream:
        if isinstance(item, CreateResult):
            result = item
        else:
            assert result is None, "no chunk may follow the result"
            chunks.append(item)
    assert result is not None
    return chunks, result


# -- plain create -----------------------------------------------------------------------


async def test_create_returns_the_documented_result(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("The capital of France is Paris.", usage=(15, 7)))
    result = await client.create(ASK)
    assert repr(result).startswith(
        "CreateResult(finish_reason='stop', content='The capital of France is Paris.', "
        "usage=RequestUsage(prompt_tokens=15, completion_tokens=7), cached=False, "
        "logprobs=None"
    )
    request = openai_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "What is the capital of France?", "name": "user"}],
    }


async def test_create_args_and_extra_create_args_are_sent(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("a"), Reply("b"))
    options: dict[str, Any] = {
        "temperature": 0.0,
        "top_p": 0.5,
        "seed": 42,
        "max_tokens": 100,
        "stop": ["END"],
        "presence_penalty": 0.1,
        "frequency_penalty": 0.2,
        "user": "tester",
        "extra_body": {"top_k": 5},
    }
    async with make_client(openai_server, **options) as model_client:
        await model_client.create(ASK)
        await model_client.create(
            ASK, extra_create_args={"temperature": 0.9, "max_completion_tokens": 7}
        )
    first, second = openai_server.bodies
    for key, value in options.items():
        if key != "extra_body":
            assert first[key] == value
    assert first["top_k"] == 5
    assert second["temperature"] == 0.9
    assert second["max_completion_tokens"] == 7
    assert second["seed"] == 42


async def test_unknown_create_args_are_rejected(openai_server: OpenAIServer) -> None:
    with pytest.raises(ValueError, match="`temprature`"):
        make_client(openai_server, temprature=0)
    async with make_client(openai_server) as model_client:
        with pytest.raises(ValueError, match=r"`bogus`.*extra_body"):
            await model_client.create(ASK, extra_create_args={"bogus": 1})
    assert openai_server.requests == []


async def test_logprobs_are_returned(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    entry = {
        "token": "Hi",
        "logprob": -0.25,
        "bytes": [72, 105],
        "top_logprobs": [{"token": "Hi", "logprob": -0.25, "bytes": [72, 105]}],
    }
    openai_server.enqueue(Reply("Hi", logprobs=[entry]))
    result = await client.create(ASK, extra_create_args={"logprobs": True, "top_logprobs": 1})
    assert openai_server.last_body["top_logprobs"] == 1
    assert result.logprobs is not None
    assert result.logprobs[0].token == "Hi"
    assert result.logprobs[0].logprob == -0.25
    assert result.logprobs[0].top_logprobs is not None
    assert result.logprobs[0].top_logprobs[0].bytes == [72, 105]


# -- message mapping --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "role"), [("gpt-4o", "system"), ("o3-mini", "developer"), ("o1", "developer")]
)
async def test_system_message_role(openai_server: OpenAIServer, model: str, role: str) -> None:
    openai_server.enqueue(Reply("ok"))
    async with make_client(openai_server, model) as model_client:
        await model_client.create([SystemMessage(content="Be brief."), *ASK])
    assert openai_server.last_body["messages"][0] == {"role": role, "content": "Be brief."}


async def test_messages_map_to_the_wire_format(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("done"))
    call = FunctionCall(id="call_1", arguments='{"city": "Paris"}', name="get_weather")
    await client.create(
        [
            UserMessage(content=["Look at this", Image(PNG)], source="alice"),
            AssistantMessage(content=[call], thought="I should check.", source="assistant"),
            FunctionExecutionResultMessage(
                content=[
                    FunctionExecutionResult(content="sunny", name="get_weather", call_id="call_1"),
                    FunctionExecutionResult(content="oops", name="x", call_id="c2", is_error=True),
                ]
            ),
            AssistantMessage(content="It is sunny.", source="assistant"),
            UserMessage(content="thanks", source="not a valid name!"),
        ]
    )
    messages = openai_server.last_body["messages"]
    assert messages[0] == {
        "role": "user",
        "name": "alice",
        "content": [
            {"type": "text", "text": "Look at this"},
            {"type": "image_url", "image_url": {"url": Image(PNG).data_uri, "detail": "auto"}},
        ],
    }
    assert messages[1] == {
        "role": "assistant",
        "name": "assistant",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    assert messages[3] == {"role": "tool", "tool_call_id": "c2", "content": "oops"}
    assert messages[4] == {"role": "assistant", "content": "It is sunny.", "name": "assistant"}
    assert messages[5] == {"role": "user", "content": "thanks"}


async def test_names_can_be_left_out(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("ok"))
    async with make_client(openai_server, include_name_in_message=False) as model_client:
        await model_client.create(ASK)
    assert "name" not in openai_server.last_body["messages"][0]


async def test_abilities_are_checked_before_sending(openai_server: OpenAIServer) -> None:
    blind = ModelInfo(
        vision=False,
        function_calling=False,
        json_output=False,
        family="unknown",
        structured_output=False,
    )
    async with make_client(openai_server, "local", model_info=blind) as model_client:
        with pytest.raises(ValueError, match="images"):
            await model_client.create([UserMessage(content=[Image(PNG)], source="u")])
        with pytest.raises(ValueError, match="function calling"):
            await model_client.create(ASK, tools=[WEATHER])
        with pytest.raises(ValueError, match="JSON mode"):
            await model_client.create(ASK, json_output=True)
        with pytest.raises(ValueError, match="structured output"):
            await model_client.create(ASK, json_output=City)
    assert openai_server.requests == []


# -- tools ------------------------------------------------------------------------------


async def test_parallel_tool_calls(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply(
            "Let me check both.",
            tool_calls=[
                ToolCall("get_weather", '{"city": "Paris"}', id="call_a"),
                ToolCall("add", '{"a": 1, "b": 2}', id="call_b"),
            ],
            usage=(30, 12),
        )
    )
    async with make_client(openai_server, parallel_tool_calls=False) as model_client:
        result = await model_client.create(ASK, tools=[WEATHER, AddTool()])
    assert result.finish_reason == "function_calls"
    assert result.content == [
        FunctionCall(id="call_a", arguments='{"city": "Paris"}', name="get_weather"),
        FunctionCall(id="call_b", arguments='{"a": 1, "b": 2}', name="add"),
    ]
    assert result.thought == "Let me check both."
    body = openai_server.last_body
    assert body["tool_choice"] == "auto"
    assert body["parallel_tool_calls"] is False
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather of a city.",
                "parameters": WEATHER["parameters"],
                "strict": False,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": AddTool().schema["parameters"],
                "strict": True,
            },
        },
    ]


async def test_tool_choice(openai_server: OpenAIServer, client: OpenAIChatCompletionClient) -> None:
    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("add", "{}")]),
        Reply("no tools"),
        Reply(tool_calls=[ToolCall("add", '{"a": 1, "b": 1}')], finish_reason="stop"),
    )
    add = AddTool()
    await client.create(ASK, tools=[WEATHER, add], tool_choice="required")
    assert openai_server.last_body["tool_choice"] == "required"
    await client.create(ASK, tools=[WEATHER, add], tool_choice="none")
    assert openai_server.last_body["tool_choice"] == "none"
    result = await client.create(ASK, tools=[WEATHER, add], tool_choice=add)
    assert openai_server.last_body["tool_choice"] == {
        "type": "function",
        "function": {"name": "add"},
    }
    # A server that says "stop" next to tool calls still reports function_calls.
    assert result.finish_reason == "function_calls"
    with pytest.raises(ValueError, match="`add`"):
        await client.create(ASK, tools=[WEATHER], tool_choice=add)
    with pytest.raises(ValueError, match="no tools"):
        await client.create(ASK, tool_choice=add)


async def test_no_tools_sends_no_tool_fields(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("plain"))
    async with make_client(openai_server, parallel_tool_calls=True) as model_client:
        await model_client.create(ASK)
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(openai_server.last_body)


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("function_call", "function_calls"),
        (None, "unknown"),
        ("eos_token", "unknown"),
    ],
)
async def test_finish_reasons_are_normalised(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient, wire: str, expected: str
) -> None:
    openai_server.enqueue(Reply("text", finish_reason=wire))
    assert (await client.create(ASK)).finish_reason == expected


async def test_reasoning_content_becomes_the_thought(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("Paris.", reasoning_content="France's capital is Paris."))
    result = await client.create(ASK)
    assert result.content == "Paris."
    assert result.thought == "France's capital is Paris."


# -- streaming --------------------------------------------------------------------------


async def test_stream_yields_chunks_then_the_result(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("The capital of France is Paris.", usage=(12, 8)))
    chunks, result = await collect(client.create_stream(ASK))
    assert chunks == ["The ", "capital ", "of ", "France ", "is ", "Paris."]
    assert result.content == "".join(chunks)
    assert result.finish_reason == "stop"
    assert result.usage == RequestUsage(12, 8)
    body = openai_server.last_body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_stream_without_usage_reports_zero(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("no usage here", usage=None))
    _, result = await collect(client.create_stream(ASK))
    assert result.usage == RequestUsage(0, 0)
    assert client.total_usage() == RequestUsage(0, 0)


async def test_stream_assembles_tool_call_deltas(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    arguments = json.dumps({"city": "San Francisco, California", "unit": "celsius"})
    openai_server.enqueue(
        Reply(
            "Checking.",
            tool_calls=[
                ToolCall("get_weather", arguments, id="call_x"),
                ToolCall("add", '{"a": 40, "b": 2}', id="call_y"),
            ],
            reasoning_content="Two tools needed.",
        )
    )
    chunks, result = await collect(client.create_stream(ASK, tools=[WEATHER, AddTool()]))
    assert chunks == ["Checking."]
    assert result.finish_reason == "function_calls"
    assert result.content == [
        FunctionCall(id="call_x", arguments=arguments, name="get_weather"),
        FunctionCall(id="call_y", arguments='{"a": 40, "b": 2}', name="add"),
    ]
    assert result.thought == "Two tools needed.\nChecking."


async def test_abandoned_stream_is_closed(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("many words in this reply"), Reply("next"))
    stream = client.create_stream(ASK)
    assert await stream.__anext__() == "many "
    await stream.aclose()
    assert (await client.create(ASK)).content == "next"
    assert client.total_usage() == RequestUsage(10, 5)  # the abandoned call counts nothing


async def test_stream_honours_given_stream_options(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("x"))
    async with make_client(openai_server, stream_options={"include_usage": False}) as model_client:
        _, result = await collect(model_client.create_stream(ASK))
    assert openai_server.last_body["stream_options"] == {"include_usage": False}
    assert result.usage == RequestUsage(0, 0)


# -- JSON and structured output ---------------------------------------------------------


async def test_json_mode(openai_server: OpenAIServer, client: OpenAIChatCompletionClient) -> None:
    openai_server.enqueue(Reply('{"answer": "Paris"}'))
    result = await client.create(ASK, json_output=True)
    assert openai_server.last_body["response_format"] == {"type": "json_object"}
    assert isinstance(result.content, str)
    assert json.loads(result.content) == {"answer": "Paris"}


async def test_structured_output_from_json_output(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply('{"name": "Paris", "country": "France", "population": null}'))
    result = await client.create(ASK, json_output=City)
    assert isinstance(result.content, str)
    assert City.model_validate_json(result.content) == City(name="Paris", country="France")
    response_format = openai_server.last_body["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]
    assert schema["name"] == "City"
    assert schema["strict"] is True
    assert schema["description"] == "A city and its country."
    assert schema["schema"]["additionalProperties"] is False
    assert schema["schema"]["required"] == ["name", "country", "population"]
    assert "default" not in json.dumps(schema["schema"])


async def test_structured_output_from_response_format_create_arg(
    openai_server: OpenAIServer,
) -> None:
    openai_server.enqueue(
        Reply('{"name": "Rome", "country": "Italy", "population": 2800000}'),
        Reply("plain text"),
        Reply('{"name": "Rome"}'),
    )
    async with make_client(openai_server, response_format=City) as model_client:
        chunks, _ = await collect(model_client.create_stream(ASK))
        assert City.model_validate_json("".join(chunks)).population == 2_800_000
        assert openai_server.last_body["response_format"]["json_schema"]["name"] == "City"
        # json_output=False turns the client's structured output off for one call.
        await model_client.create(ASK, json_output=False)
        assert "response_format" not in openai_server.last_body
        with pytest.raises(ModelResponseError, match="`City`"):
            await model_client.create(ASK)


async def test_refusal_is_returned_as_content(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply(None, refusal="I can't help with that."))
    result = await client.create(ASK, json_output=City)
    assert result.content == "I can't help with that."


async def test_dict_response_format_is_passed_through(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("{}"))
    async with make_client(openai_server, response_format={"type": "json_object"}) as model_client:
        await model_client.create(ASK)
    assert openai_server.last_body["response_format"] == {"type": "json_object"}


# -- usage ------------------------------------------------------------------------------


async def test_usage_accumulates(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("a", usage=(10, 1)), Reply("b c", usage=(20, 2)))
    await client.create(ASK)
    await collect(client.create_stream(ASK))
    assert client.actual_usage() == RequestUsage(30, 3)
    assert client.total_usage() == RequestUsage(30, 3)


# -- errors and retries -----------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 429])
async def test_sdk_retries_errors(openai_server: OpenAIServer, status: int) -> None:
    openai_server.enqueue(ErrorReply(status, times=2), Reply("finally"))
    async with make_client(openai_server, max_retries=2) as model_client:
        started = time.monotonic()
        result = await model_client.create(ASK)
    assert result.content == "finally"
    assert len(openai_server.requests) == 3
    assert time.monotonic() - started < 2


async def test_errors_surface_after_retries_run_out(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(ErrorReply(500, times=2), ErrorReply(400, message="bad request"))
    async with make_client(openai_server, max_retries=1) as model_client:
        with pytest.raises(openai.InternalServerError):
            await model_client.create(ASK)
        with pytest.raises(openai.BadRequestError, match="bad request"):
            await model_client.create(ASK)
    assert len(openai_server.requests) == 3  # 400 is not retried


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"id": "chatcmpl-1"}', b'{"choices": []}'],
    ids=["invalid-json", "no-choices", "empty-choices"],
)
async def test_malformed_response_is_a_clear_error(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient, body: bytes
) -> None:
    openai_server.enqueue(RawReply(body), Reply("recovered"))
    with pytest.raises(ModelResponseError, match="gpt-4o"):
        await client.create(ASK)
    assert (await client.create(ASK)).content == "recovered"


async def test_malformed_stream_chunk_is_a_clear_error(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    sse = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\ndata: {oops\n\n'
    openai_server.enqueue(RawReply(sse, content_type="text/event-stream"), Reply("fine"))
    chunks: list[str | CreateResult] = []
    with pytest.raises(ModelResponseError, match="streamed a chunk"):
        async for item in client.create_stream(ASK):
            chunks.append(item)
    assert chunks == ["Hi"]
    assert (await client.create(ASK)).content == "fine"


async def test_malformed_tool_call_is_a_clear_error(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"type": "function", "function": {"name": "add"}}],
                },
            }
        ]
    }
    openai_server.enqueue(RawReply(json.dumps(body).encode()))
    with pytest.raises(ModelResponseError, match="malformed tool call"):
        await client.create(ASK, tools=[AddTool()])


# -- cancellation and timeouts ----------------------------------------------------------


async def test_cancellation_aborts_the_request(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("too late", delay=10))
    token = CancellationToken()
    call = asyncio.ensure_future(client.create(ASK, cancellation_token=token))
    await openai_server.wait_for_requests(1)
    started = time.monotonic()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - started < 1
    assert client.total_usage() == RequestUsage(0, 0)


async def test_cancelled_token_sends_nothing(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await client.create(ASK, cancellation_token=token)
    with pytest.raises(asyncio.CancelledError):
        await collect(client.create_stream(ASK, cancellation_token=token))
    assert openai_server.requests == []


async def test_cancellation_stops_a_stream(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    openai_server.enqueue(Reply("one two three four five six", chunk_delay=0.2), Reply("next"))
    token = CancellationToken()
    chunks: list[str | CreateResult] = []

    async def consume() -> None:
        async for item in client.create_stream(ASK, cancellation_token=token):
            chunks.append(item)
            if len(chunks) == 2:
                token.cancel()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(consume(), timeout=5)
    assert chunks == ["one ", "two "]
    assert (await client.create(ASK)).content == "next"  # the client is still usable


async def test_timeout_comes_from_the_sdk(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("slow", delay=5))
    async with make_client(openai_server, timeout=0.2) as model_client:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            await model_client.create(ASK)
    assert time.monotonic() - started < 2


# -- construction -----------------------------------------------------------------------


def test_unknown_model_needs_model_info() -> None:
    with pytest.raises(ValueError, match=r"`my-local-model`.*model_info=\{'vision'"):
        OpenAIChatCompletionClient("my-local-model", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="structured_output"):
        OpenAIChatCompletionClient(
            "my-local-model",
            base_url="http://127.0.0.1:9/v1",
            model_info={"vision": False, "function_calling": True, "json_output": True},  # type: ignore[arg-type]
        )


@pytest.mark.parametrize(
    ("model", "family", "vision"),
    [
        ("gpt-4o", ModelFamily.GPT_4O, True),
        ("gpt-4o-2024-08-06", ModelFamily.GPT_4O, True),
        ("gpt-4o-mini-2024-07-18", ModelFamily.GPT_4O, True),
        ("gpt-4.1-nano", ModelFamily.GPT_41, True),
        ("gpt-5-mini-2025-08-07", ModelFamily.GPT_5, True),
        ("o3-mini", ModelFamily.O3, False),
        ("o4-mini", ModelFamily.O4, True),
        ("gpt-4-turbo-2024-04-09", ModelFamily.GPT_4, True),
        ("gpt-3.5-turbo-0125", ModelFamily.GPT_35, False),
    ],
)
async def test_known_models_have_model_info(model: str, family: str, vision: bool) -> None:
    async with OpenAIChatCompletionClient(model, api_key="sk-test") as model_client:
        assert model_client.model_info["family"] == family
        assert model_client.model_info["vision"] is vision
        assert ModelFamily.is_openai(model_client.model_info["family"])


async def test_given_model_info_overrides_the_table() -> None:
    info = ModelInfo(
        vision=False, function_calling=False, json_output=False, family="x", structured_output=False
    )
    async with OpenAIChatCompletionClient("gpt-4o", api_key="k", model_info=info) as model_client:
        assert model_client.model_info == info


async def test_api_key_falls_back_to_the_environment(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    openai_server.enqueue(Reply("ok"))
    async with OpenAIChatCompletionClient("gpt-4o", base_url=openai_server.base_url) as c:
        await c.create(ASK)
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_missing_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChatCompletionClient("gpt-4o")


async def test_local_server_needs_no_key(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    openai_server.enqueue(Reply("ok"))
    async with OpenAIChatCompletionClient(
        "llama3", base_url=openai_server.base_url, model_info=UNKNOWN_INFO
    ) as model_client:
        assert (await model_client.create(ASK)).content == "ok"


async def test_headers_and_organization_are_sent(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("ok"))
    async with make_client(
        openai_server, organization="org-1", default_headers={"X-Trace": "abc"}
    ) as model_client:
        await model_client.create(ASK)
    headers = openai_server.requests[0].headers
    assert headers["openai-organization"] == "org-1"
    assert headers["x-trace"] == "abc"


async def test_injected_sdk_client_is_used_and_closed(openai_server: OpenAIServer) -> None:
    sdk = openai.AsyncOpenAI(api_key="sk-injected", base_url=openai_server.base_url)
    model_client = OpenAIChatCompletionClient("gpt-4o", client=sdk)
    openai_server.enqueue(Reply("ok"))
    await model_client.create(ASK)
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-injected"
    await model_client.close()
    assert sdk.is_closed()
    with pytest.raises(TypeError, match="client="):
        OpenAIChatCompletionClient("gpt-4o", client=sdk, api_key="other")


async def test_close_closes_the_sdk_client(openai_server: OpenAIServer) -> None:
    model_client = make_client(openai_server)
    async with model_client:
        pass
    # flowlib's own error, whatever the SDK release does with a closed HTTP client (older
    # ones wrap it in APIConnectionError); still a RuntimeError.
    with pytest.raises(ClientClosedError, match="closed"):
        await model_client.create(ASK)
    with pytest.raises(RuntimeError, match="closed"):
        async for _ in model_client.create_stream(ASK):
            pass


# -- tokens -----------------------------------------------------------------------------


async def test_count_and_remaining_tokens(client: OpenAIChatCompletionClient) -> None:
    short = client.count_tokens(ASK)
    longer = client.count_tokens([*ASK, UserMessage(content="more " * 100, source="user")])
    with_tools = client.count_tokens(ASK, tools=[WEATHER])
    with_image = client.count_tokens([UserMessage(content=["hi", Image(PNG)], source="u")])
    assert 0 < short < longer
    assert with_tools > short
    assert with_image > 700
    assert client.remaining_tokens(ASK) == 128_000 - short


async def test_remaining_tokens_needs_a_context_window(openai_server: OpenAIServer) -> None:
    async with make_client(openai_server, "local", model_info=UNKNOWN_INFO) as model_client:
        with pytest.raises(ValueError, match="context_window"):
            model_client.remaining_tokens(ASK)
    async with make_client(
        openai_server, "local", model_info=UNKNOWN_INFO, context_window=1000
    ) as model_client:
        assert model_client.remaining_tokens(ASK) == 1000 - model_client.count_tokens(ASK)


# -- Azure ------------------------------------------------------------------------------


async def test_azure_client_uses_the_deployment_url(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("from azure"))
    async with AzureOpenAIChatCompletionClient(
        model="gpt-4o",
        azure_deployment="my-deployment",
        azure_endpoint=openai_server.root_url,
        api_version="2024-10-21",
        api_key="azure-key",
        max_retries=0,
    ) as model_client:
        assert model_client.model_info["family"] == ModelFamily.GPT_4O
        result = await model_client.create(ASK)
    assert result.content == "from azure"
    request = openai_server.requests[0]
    assert request.path == (
        "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
    )
    assert request.headers["api-key"] == "azure-key"


def test_azure_client_needs_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="AZURE_OPENAI_API_KEY"):
        AzureOpenAIChatCompletionClient(
            model="gpt-4o", azure_endpoint="https://x.openai.azure.com/", api_version="2024-10-21"
        )
