"""Issue 16.5: ``OpenAIChatCompletionClient(api_key="")`` can be built, as configs do."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer, Reply

from flowlib.models import OpenAIChatCompletionClient, UserMessage


async def test_an_empty_key_builds_without_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = OpenAIChatCompletionClient("gpt-4o", api_key="")
    assert client.model_info["function_calling"] is True
    await client.close()


async def test_an_empty_key_talks_to_a_server_that_needs_none(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    openai_server.enqueue(Reply("hello"))
    async with OpenAIChatCompletionClient(
        "gpt-4o", api_key="", base_url=openai_server.base_url, max_retries=0
    ) as client:
        result = await client.create([UserMessage(content="hi", source="user")])
    assert result.content == "hello"
    assert openai_server.requests[0].headers["authorization"].startswith("Bearer ")


def test_no_key_at_all_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="No OpenAI API key"):
        OpenAIChatCompletionClient("gpt-4o")
