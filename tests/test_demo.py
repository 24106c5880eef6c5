"""The README's demo: offline on scripted models, and on a real OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest
from openai_server import OpenAIServer, Reply, ToolCall

from flowlib._demo import DEFAULT_TASK, build_demo_flow, demo_model_clients, run_demo
from flowlib.cli import main
from flowlib.messages import ToolCallExecutionEvent
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
