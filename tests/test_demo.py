"""The README's demo: offline on scripted models, and on a real OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest
from openai_server import OpenAIServer, Reply, ToolCall

from flowlib.base import TaskResult
from flowlib.cli import main
from flowlib.cli.demo import (
    DEFAULT_TASK,
    StreamItem,
    build_demo_flow,
    demo_model_clients,
    one_speaker_at_a_time,
    run_demo,
)
from flowlib.messages import ModelClientStreamingChunkEvent, TextMessage, ToolCallExecutionEvent
from flowlib.models import OpenAIChatCompletionClient, ReplayChatCompletionClient


async def test_offline_demo_runs_the_whole_graph(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = await run_demo()
    out = capsys.readouterr().out
    assert "scripted replay models" in out
    assert result.stop_reason == "Digraph execution is complete"
    sources = [m.source for m in result.messages]
    assert sources[0] == "user" and sources[-1] == "publish"
    assert sources.count("reviewer") == 2  # one REVISE round, then APPROVE
    assert any(isinstance(m, ToolCallExecutionEvent) for m in result.messages)
    assert "Path taken: planner -> researcher -> critic -> writer" in out


def test_cli_demo_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["demo", "--task", "hello"]) == 0
    assert "hello" in capsys.readouterr().out


def test_client_choice_follows_the_environment() -> None:
    clients, label = demo_model_clients({})
    assert all(isinstance(c, ReplayChatCompletionClient) for c in clients.values())
    assert "scripted" in label


async def test_demo_on_an_openai_compatible_server(openai_server: OpenAIServer) -> None:
    clients, label = demo_model_clients(
        {"OPENAI_BASE_URL": openai_server.base_url, "FLOWLIB_MODEL": "local-model"}
    )
    assert "local-model" in label
    client = next(iter(clients.values()))
    assert isinstance(client, OpenAIChatCompletionClient)
    openai_server.enqueue(
        Reply("Plan: fact, risk, draft."),
        Reply("One fact."),  # researcher and critic ask concurrently; either may get either
        Reply("One risk."),
        Reply(tool_calls=[ToolCall("word_count", json.dumps({"text": "a b c"}))]),
        Reply("Draft: graphs are debuggable."),
        Reply("APPROVE"),
    )
    try:
        result = await build_demo_flow(clients).run(task=DEFAULT_TASK)
    finally:
        await client.close()
    assert result.stop_reason == "Digraph execution is complete"
    assert result.messages[-1].to_text() == "Published: Draft: graphs are debuggable."
    bodies = [request.body for request in openai_server.requests]
    assert len(bodies) == 6 and all(b["model"] == "local-model" for b in bodies)
    assert bodies[3]["tools"][0]["function"]["name"] == "word_count"
    tool_messages = [m for m in bodies[4]["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["content"] == "3"


def _headers(out: str) -> list[str]:
    """The sources of the printed ``---------- source ----------`` headers, run-length
    collapsed (one agent's tool call, tool result and reply print three headers)."""
    names = re.findall(r"^---------- (\S+) ----------$", out, flags=re.MULTILINE)
    collapsed: list[str] = []
    for name in names:
        if not collapsed or collapsed[-1] != name:
            collapsed.append(name)
    return collapsed


def _path(out: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith("Path taken: "))
    collapsed: list[str] = []
    for name in line.removeprefix("Path taken: ").split(" -> "):
        if not collapsed or collapsed[-1] != name:
            collapsed.append(name)
    return collapsed


async def test_demo_streams_through_console_from_a_real_server(
    openai_server: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``OPENAI_BASE_URL`` set: every agent streams (``"stream": true`` on the wire), the
    console shows the tokens, and the concurrent researcher and critic, whose chunks the
    server trickles so that they interleave, are printed one after the other, in the
    order "Path taken" names."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("FLOWLIB_MODEL", "local-model")
    openai_server.enqueue(
        Reply("Plan: fact, risk, draft."),
        Reply("One fact about graphs and edges.", chunk_delay=0.02),
        Reply("One risk about loops without exits.", chunk_delay=0.02),
        Reply(tool_calls=[ToolCall("word_count", json.dumps({"text": "a b c"}))]),
        Reply("Draft: graphs are debuggable."),
        Reply("APPROVE"),
    )
    result = await run_demo()
    out = capsys.readouterr().out
    assert result.messages[-1].to_text() == "Published: Draft: graphs are debuggable."
    bodies = [request.body for request in openai_server.requests]
    assert len(bodies) == 6 and all(body.get("stream") is True for body in bodies)
    # Each streamed reply is printed once, whole, under its one header.
    assert "---------- researcher ----------\nOne " in out
    assert "---------- critic ----------\nOne " in out
    assert out.count("One fact about graphs and edges.") == 1
    headers = _headers(out)
    assert headers[0] == "user" and headers[-1] == "Summary"
    assert headers[1:-1] == _path(out)  # printed one speaker at a time, in the path's order
    assert _path(out)[0] == "planner" and set(_path(out)[1:3]) == {"researcher", "critic"}


def _chunk(source: str, text: str) -> ModelClientStreamingChunkEvent:
    return ModelClientStreamingChunkEvent(source=source, content=text)


async def _replay(items: list[StreamItem]) -> AsyncIterator[StreamItem]:
    for item in items:
        yield item


async def test_one_speaker_at_a_time_holds_the_other_speakers_back() -> None:
    task = TextMessage(source="user", content="go")
    a1, b1, a2, b2 = _chunk("a", "A1"), _chunk("b", "B1"), _chunk("a", "A2"), _chunk("b", "B2")
    b_done = TextMessage(source="b", content="B1B2")
    a_done = TextMessage(source="a", content="A1A2")
    c_done = TextMessage(source="c", content="C")
    result = TaskResult(messages=[task, b_done, a_done, c_done])
    # b finishes before a, although a spoke first; c speaks while a has the floor.
    stream = [task, a1, b1, a2, b2, b_done, c_done, a_done, result]
    path: list[str] = []
    out = [item async for item in one_speaker_at_a_time(_replay(stream), path)]
    assert out == [task, a1, a2, a_done, b1, b2, b_done, c_done, result]
    assert path == ["a", "b", "c"]
