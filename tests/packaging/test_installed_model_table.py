"""The model table and the Ollama client work from an installed flowlib (issue 27.2):
``known_models.json`` is package data, so a plain ``pip install .`` has it.
``scripts/packaging_check.sh`` runs this in its clean virtualenvs, also at the lowest
dependency versions."""

from __future__ import annotations

from openai_server import OpenAIServer, Reply

from flowlib.models import OllamaChatCompletionClient, OpenAIChatCompletionClient, UserMessage


def test_the_installed_table_knows_autogens_models() -> None:
    gemini = OpenAIChatCompletionClient("gemini-1.5-flash-8b", api_key="k")
    assert gemini.model_info["family"] == "gemini-1.5-flash"
    assert OllamaChatCompletionClient(model="llama3.2").model_info["function_calling"] is True


async def test_the_ollama_client_talks_to_an_openai_compatible_server(
    openai_server: OpenAIServer,
) -> None:
    client = OllamaChatCompletionClient(model="qwen3:8b", host=openai_server.root_url)
    openai_server.enqueue(Reply("Paris"))
    result = await client.create([UserMessage(content="Capital of France?", source="user")])
    assert result.content == "Paris"
    assert openai_server.requests[0].path == "/v1/chat/completions"
    await client.close()
