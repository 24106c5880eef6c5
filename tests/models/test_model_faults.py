"""Faults of a model server (issue 11.1, 11.2): the real openai SDK against the local
protocol server with a cut stream, a non-SSE body, bad JSON, a hang, a slow trickle and
a mid-stream error event, for the client and for an AssistantAgent in a team (with and
without streaming, with tools). Each fault is a clear error, nothing of the failed
answer is published, and the team resumes afterwards with nothing duplicated."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest
from openai_server import OpenAIServer, RawReply, Reply, ToolCall

from flowlib.agents import AssistantAgent
from flowlib.base import TaskResult
from flowlib.component import dump_component, load_component
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import NodeExecutionError
from flowlib.messages import (
    ModelClientStreamingChunkEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from flowlib.models import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    CreateResult,
    ModelResponseError,
    OpenAIChatCompletionClient,
    UserMessage,
)
from flowlib.teams import RoundRobinGroupChat

ASK = [UserMessage(content="Say hello.", source="user")]
HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
BAD_JSON_SSE = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\ndata: {oops\n\n'


def make_client(server: OpenAIServer, **kwargs: Any) -> OpenAIChatCompletionClient:
    kwargs.setdefault("api_key", "sk-test")
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 10)
    return OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, **kwargs)


async def drain(client: OpenAIChatCompletionClient) -> list[str | CreateResult]:
    items: list[str | CreateResult] = []
    async for item in client.create_stream(ASK):
        items.append(item)
    return items


# -- the client -------------------------------------------------------------------------

STREAM_FAULTS = {
    "cut-stream": (Reply("one two three four", cut_after=3), "without a finish reason"),
    "cut-before-any-chunk": (Reply("one two", cut_after=0), "without a finish reason"),
    "non-sse-body": (RawReply(HTML, content_type="text/html"), "without a finish reason"),
    "non-sse-json-body": (RawReply(b'{"detail": "nope"}'), "without a finish reason"),
    "bad-json": (RawReply(BAD_JSON_SSE, content_type="text/event-stream"), "not valid JSON"),
    "error-event": (Reply("one two three", error_after=2), "error event mid-stream"),
    # The transport's own error (httpx's or httpx2's RemoteProtocolError, whichever the
    # installed SDK uses): a body shorter than its Content-Length.
    "broken-body": (Reply("one two three four", break_after=2), "broke mid-stream"),
    "cut-tool-call": (
        Reply(tool_calls=[ToolCall("add", '{"a": 1, "b": 2}')], cut_after=3),
        "without a finish reason",
    ),
}


@pytest.mark.parametrize("fault", list(STREAM_FAULTS), ids=list(STREAM_FAULTS))
async def test_a_broken_stream_is_a_model_response_error(
    openai_server: OpenAIServer, fault: str
) -> None:
    reply, message = STREAM_FAULTS[fault]
    openai_server.enqueue(reply, Reply("fine"))
    async with make_client(openai_server) as client:
        with pytest.raises(ModelResponseError, match=message):
            await drain(client)
        # No result was produced and no usage counted; the client is still usable.
        assert client.total_usage().completion_tokens == 0
        items = await drain(client)
    assert isinstance(items[-1], CreateResult) and items[-1].content == "fine"


async def test_a_complete_stream_still_passes(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("all of it", finish_reason="length"))
    async with make_client(openai_server) as client:
        items = await drain(client)
    result = items[-1]
    assert isinstance(result, CreateResult)
    assert (result.content, result.finish_reason) == ("all of it", "length")


async def test_a_slow_trickle_within_the_timeout_completes(openai_server: OpenAIServer) -> None:
    # Each chunk comes well inside the read timeout: slow, but a whole answer.
    openai_server.enqueue(Reply("a b c d e f", chunk_delay=0.05))
    async with make_client(openai_server, timeout=1) as client:
        items = await drain(client)
    assert items[-1] == items[-1] and isinstance(items[-1], CreateResult)
    assert items[-1].content == "a b c d e f"


async def test_a_stalled_trickle_is_a_clear_error(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("a b c d", chunk_delay=2))
    async with make_client(openai_server, timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(ModelResponseError, match="stalled"):
            await drain(client)
    assert time.monotonic() - started < 2


async def test_a_hang_times_out_after_the_retries(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(*[Reply("late", delay=5) for _ in range(3)])
    async with make_client(openai_server, timeout=0.2, max_retries=2) as client:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            await client.create(ASK)
    elapsed = time.monotonic() - started
    assert len(openai_server.requests) == 3  # one try and two retries
    assert elapsed < 4


async def test_a_cut_plain_body_is_retried_then_raised(openai_server: OpenAIServer) -> None:
    # A body cut short of its Content-Length is a connection error: the SDK retries it.
    openai_server.enqueue(Reply("hello", cut_after=20), Reply("hello"))
    async with make_client(openai_server, max_retries=1) as client:
        assert (await client.create(ASK)).content == "hello"
    assert len(openai_server.requests) == 2
    openai_server.enqueue(Reply("hello", cut_after=20))
    async with make_client(openai_server, max_retries=0) as client:
        with pytest.raises(openai.APIConnectionError):
            await client.create(ASK)


async def test_defaults_are_a_minute_and_two_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (DEFAULT_TIMEOUT, DEFAULT_MAX_RETRIES) == (60.0, 2)
    async with OpenAIChatCompletionClient("gpt-4o", api_key="sk-test") as client:
        assert (client.timeout, client.max_retries) == (60.0, 2)
        config = dump_component(client).config
        assert (config["timeout"], config["max_retries"]) == (60.0, 2)
    async with OpenAIChatCompletionClient("gpt-4o", api_key="sk-test", timeout=None) as client:
        assert client.timeout is None  # waits forever, as asked
        data = dump_component(client).model_dump(mode="json")
        assert data["config"]["timeout"] == "none"
        loaded = load_component({**data, "config": {**data["config"], "api_key": "sk-test"}})
        assert loaded.timeout is None
        await loaded.close()


@pytest.mark.parametrize("bad", [0, -1, "60", True])
def test_bad_timeout_is_named(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="timeout"):
        OpenAIChatCompletionClient("gpt-4o", api_key="sk-test", timeout=bad)


# -- an agent in a team -----------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers."""
    calls.append((a, b))
    return a + b


calls: list[tuple[int, int]] = []

AGENT_FAULTS = {
    "cut-stream": Reply("partial answer that must not appear", cut_after=3),
    "non-sse-body": RawReply(HTML, content_type="text/html"),
    "bad-json": RawReply(BAD_JSON_SSE, content_type="text/event-stream"),
    "error-event": Reply("partial answer that must not appear", error_after=3),
    "stall": Reply("partial answer that must not appear", chunk_delay=2),
}


def _team(
    server: OpenAIServer, *, stream: bool, tools: bool, timeout: float = 10
) -> RoundRobinGroupChat:
    client = make_client(server, timeout=timeout)
    agent = AssistantAgent(
        "writer",
        client,
        tools=[add] if tools else None,
        model_client_stream=stream,
    )
    return RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(2))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize("fault", list(AGENT_FAULTS), ids=list(AGENT_FAULTS))
async def test_a_fault_fails_the_turn_and_the_team_resumes(
    openai_server: OpenAIServer, fault: str, stream: bool
) -> None:
    reply = AGENT_FAULTS[fault]
    if not stream and isinstance(reply, Reply):
        # Unstreamed, the same faults are a cut body and a hang.
        reply = Reply("partial", cut_after=10) if fault != "stall" else Reply("x", delay=2)
    openai_server.enqueue(reply)
    # Only the stall needs a short read timeout (half the server's delay); the other
    # faults end the reply at once, and the resume's reply must not race a tight clock.
    timeout = 1.0 if fault == "stall" else 10
    team = _team(openai_server, stream=stream, tools=False, timeout=timeout)
    seen: list[Any] = []
    with pytest.raises(NodeExecutionError) as caught:
        async for item in team.run_stream(task="Say hello."):
            seen.append(item)
    assert caught.value.node == "writer"
    assert isinstance(caught.value.__cause__, (ModelResponseError, openai.APIError))
    # Nothing of the failed answer was published: no reply. Streamed chunks are live,
    # provisional events (documented); they never reach the thread or the result.
    assert [
        type(item) for item in seen if not isinstance(item, ModelClientStreamingChunkEvent)
    ] == [TextMessage]
    assert all(item.source != "writer" for item in seen if isinstance(item, TextMessage))

    openai_server.enqueue(Reply("Hello!"))
    result = await team.run()
    assert isinstance(result, TaskResult)
    assert [(m.source, m.to_model_text()) for m in result.messages] == [("writer", "Hello!")]
    # The model saw the task once: nothing of the failed turn stayed in its context.
    sent = openai_server.last_body["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    state = await team.save_state()
    context = state["agent_states"]["writer"]["llm_context"]["messages"]
    assert [m["type"] for m in context] == ["UserMessage", "AssistantMessage"]
    dumped = json.dumps(state)
    assert "must not appear" not in dumped and "partial" not in dumped


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_a_cut_tool_call_runs_no_tool_and_resumes(
    openai_server: OpenAIServer, stream: bool
) -> None:
    calls.clear()
    cut = (
        Reply(tool_calls=[ToolCall("add", '{"a": 1, "b": 2}')], cut_after=3)
        if stream
        else Reply(tool_calls=[ToolCall("add", '{"a": 1, "b": 2}')], cut_after=40)
    )
    openai_server.enqueue(cut)
    team = _team(openai_server, stream=stream, tools=True)
    with pytest.raises(NodeExecutionError):
        await team.run(task="Add 1 and 2.")
    assert calls == []  # the half-received call never ran

    openai_server.enqueue(Reply(tool_calls=[ToolCall("add", '{"a": 1, "b": 2}')]))
    result = await team.run()
    assert calls == [(1, 2)]
    assert [type(m) for m in result.messages] == [
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        ToolCallSummaryMessage,
    ]
    assert result.messages[-1].to_model_text() == "3"
