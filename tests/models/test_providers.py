"""The model clients the seeds' Models page names (issue 27.1): Ollama, Gemini and
Anthropic through the openai SDK, each key only for its own endpoint, named errors for
the clients flowlib does not provide, and the component configs of the new client."""

from __future__ import annotations

import asyncio
import json

import pytest
from openai_server import OpenAIServer, Reply, ToolCall
from pydantic import BaseModel

from flowlib.component import dump_component, load_component
from flowlib.errors import ClientNotProvidedError, FlowlibError
from flowlib.models import (
    ChatCompletionClient,
    CreateResult,
    OllamaChatCompletionClient,
    OpenAIChatCompletionClient,
    UserMessage,
)
from flowlib.models import _providers as providers
from flowlib.models._providers import Provider
from flowlib.tools import FunctionTool

# Every key a user may have in the environment, and OpenAI's other variables the SDK
# reads: a request may carry only the one that belongs to its endpoint.
SECRETS = {
    "OPENAI_API_KEY": "sk-openai-secret",
    "GEMINI_API_KEY": "gemini-secret",
    "ANTHROPIC_API_KEY": "anthropic-secret",
    "LLAMA_API_KEY": "llama-secret",
    "OLLAMA_API_KEY": "ollama-secret",
    "OPENAI_ORG_ID": "org-secret",
    "OPENAI_PROJECT_ID": "proj-secret",
}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return SECRETS


def leaked(headers: dict[str, str], *, allowed: str | None = None) -> list[str]:
    """The secret values (other than ``allowed``) found in a request's headers."""
    text = json.dumps(headers)
    return [name for name, value in SECRETS.items() if name != allowed and value in text]


ASK = [UserMessage(content="What is the capital of France?", source="user")]


# -- Ollama ---------------------------------------------------------------------------------


async def test_models_page_ollama_example(
    openai_server: OpenAIServer, secrets: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Models page's Ollama cell, imports renamed; OLLAMA_HOST points at the local
    # server instead of an Ollama on port 11434.
    monkeypatch.setenv("OLLAMA_HOST", openai_server.root_url)
    openai_server.enqueue(Reply("The capital of France is Paris."))

    from flowlib.models import OllamaChatCompletionClient, UserMessage

    # Assuming your Ollama server is running locally on port 11434.
    ollama_model_client = OllamaChatCompletionClient(model="llama3.2")
    response = await ollama_model_client.create(
        [UserMessage(content="What is the capital of France?", source="user")]
    )
    print(response)

    assert response.content == "The capital of France is Paris."
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "llama3.2"
    assert request.body["messages"] == [
        {"role": "user", "content": "What is the capital of France?"}  # no `name`, as AutoGen
    ]
    assert request.headers["authorization"] == "Bearer ollama"
    assert leaked(request.headers) == []
    assert "openai-organization" not in request.headers
    assert "openai-project" not in request.headers
    await ollama_model_client.close()


async def test_assistant_agent_reference_deepseek_r1_on_ollama(
    openai_server: OpenAIServer, secrets: dict[str, str]
) -> None:
    # The AssistantAgent reference's "DeepSeek R1 hosted locally on Ollama" example,
    # imports renamed, host= the local server.
    from typing import List  # noqa: UP035  (the seed example as written)

    from flowlib.agents import AssistantAgent
    from flowlib.model_context import UnboundedChatCompletionContext
    from flowlib.models import AssistantMessage, LLMMessage, ModelFamily

    class ReasoningModelContext(UnboundedChatCompletionContext):
        """A model context for reasoning models."""

        async def get_messages(self) -> List[LLMMessage]:  # noqa: UP006
            messages = await super().get_messages()
            # Filter out thought field from AssistantMessage.
            messages_out: List[LLMMessage] = []  # noqa: UP006
            for message in messages:
                if isinstance(message, AssistantMessage):
                    message.thought = None
                messages_out.append(message)
            return messages_out

    model_client = OllamaChatCompletionClient(
        model="deepseek-r1:8b",
        host=openai_server.root_url,
        model_info={
            "vision": False,
            "function_calling": False,
            "json_output": False,
            "family": ModelFamily.R1,
            "structured_output": True,
        },
    )
    agent = AssistantAgent(
        "reasoning_agent",
        model_client=model_client,
        model_context=ReasoningModelContext(),  # Use the custom model context.
    )
    openai_server.enqueue(Reply("Paris.", reasoning_content="France's capital is Paris."))
    result = await agent.run(task="What is the capital of France?")
    assert result.messages[-1].to_text() == "Paris."
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "deepseek-r1:8b"
    assert leaked(request.headers) == []


class Answer(BaseModel):
    city: str
    country: str


async def test_ollama_options_and_structured_output_reach_the_request(
    openai_server: OpenAIServer, secrets: dict[str, str]
) -> None:
    client = OllamaChatCompletionClient(
        model="qwen2.5:7b",
        host=openai_server.root_url,
        options={"temperature": 0.1, "seed": 7, "num_predict": 64, "top_p": 0.5},
        response_format=Answer,
    )
    openai_server.enqueue(Reply('{"city": "Paris", "country": "France"}'))
    result = await client.create(ASK)
    assert Answer.model_validate_json(str(result.content)) == Answer(city="Paris", country="France")
    body = openai_server.requests[0].body
    assert (body["temperature"], body["seed"], body["max_tokens"], body["top_p"]) == (
        0.1,
        7,
        64,
        0.5,
    )
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Answer"
    assert "options" not in body
    await client.close()


async def test_ollama_streams_tool_calls_with_usage(
    openai_server: OpenAIServer, secrets: dict[str, str]
) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    client = OllamaChatCompletionClient(model="llama3.1", host=openai_server.root_url)
    openai_server.enqueue(Reply(tool_calls=[ToolCall("get_weather", '{"city": "Paris"}')]))
    items = [
        item
        async for item in client.create_stream(ASK, tools=[FunctionTool(get_weather, "weather")])
    ]
    result = items[-1]
    assert isinstance(result, CreateResult)
    assert result.finish_reason == "function_calls"
    assert [call.name for call in result.content] == ["get_weather"]  # type: ignore[union-attr]
    body = openai_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    with pytest.raises(ValueError, match="function calling"):
        # phi4 cannot call tools, per the table
        await OllamaChatCompletionClient(model="phi4", host=openai_server.root_url).create(
            ASK, tools=[FunctionTool(get_weather, "weather")]
        )
    await client.close()


def test_ollama_options_the_endpoint_cannot_take_are_named() -> None:
    with pytest.raises(FlowlibError, match=r"`num_ctx`.*Modelfile") as caught:
        OllamaChatCompletionClient(model="llama3.2", options={"num_ctx": 8192, "top_k": 20})
    assert isinstance(caught.value, ValueError)
    assert "`top_k`" in str(caught.value)


def test_ollama_model_names_resolve_by_their_tag() -> None:
    client = OllamaChatCompletionClient(model="llama3.2-vision:11b")
    assert client.model_info["vision"] is True
    assert client.model_info["function_calling"] is False
    coder = OllamaChatCompletionClient(model="qwen2.5-coder:3b")
    # The tag's own context window (32768), not the family's (131072).
    assert coder.remaining_tokens(ASK) == 32768 - coder.count_tokens(ASK)
    with pytest.raises(ValueError, match="model_info"):
        OllamaChatCompletionClient(model="my-finetune:latest")
    asyncio.run(client.close())
    asyncio.run(coder.close())


@pytest.mark.parametrize(
    ("host", "base_url"),
    [
        (None, "http://127.0.0.1:11434/v1"),
        ("localhost", "http://localhost:11434/v1"),
        ("10.0.0.5:8080", "http://10.0.0.5:8080/v1"),
        ("https://gpu.example.com", "https://gpu.example.com/v1"),
        ("http://proxy.example.com/ollama/", "http://proxy.example.com/ollama/v1"),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
    ],
)
def test_ollama_host_forms(
    host: str | None, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert OllamaChatCompletionClient(model="llama3", host=host).base_url == base_url


def test_ollama_api_key_only_for_ollamas_hosted_api(secrets: dict[str, str]) -> None:
    cloud = OllamaChatCompletionClient(model="llama3", host="https://ollama.com")
    assert cloud._client.api_key == "ollama-secret"
    local = OllamaChatCompletionClient(model="llama3", host="http://ollama.example.com")
    assert local._client.api_key == "ollama"


async def test_ollama_client_config_round_trip(
    openai_server: OpenAIServer, secrets: dict[str, str]
) -> None:
    client = OllamaChatCompletionClient(
        model="llama3.1:8b",
        host=openai_server.root_url,
        options={"temperature": 0.2},
        headers={"X-Team": "blue", "Authorization": "Bearer proxy-secret"},
        timeout=30,
        max_tokens=100,
    )
    with pytest.warns(UserWarning, match="credential"):
        data = json.loads(json.dumps(dump_component(client).model_dump(mode="json")))
    assert data["provider"] == "flowlib.models.OllamaChatCompletionClient"
    config = data["config"]
    assert config["model"] == "llama3.1:8b"
    assert config["host"] == openai_server.root_url
    assert config["options"] == {"temperature": 0.2}
    assert config["headers"] == {"X-Team": "blue"}
    assert config["max_tokens"] == 100 and "temperature" not in config
    assert "proxy-secret" not in json.dumps(data)
    assert data["unserializable"] == ["headers.Authorization"]
    with pytest.warns(UserWarning, match=r"without `headers.Authorization`"):
        loaded = load_component(data)
    assert isinstance(loaded, OllamaChatCompletionClient)
    openai_server.enqueue(Reply("ok"))
    await loaded.create(ASK)
    request = openai_server.requests[-1]
    assert request.body["temperature"] == 0.2 and request.body["max_tokens"] == 100
    assert request.headers["x-team"] == "blue"
    assert leaked(request.headers) == []


async def test_autogen_ollama_config_loads(openai_server: OpenAIServer) -> None:
    # The config AutoGen's OllamaChatCompletionClient documents.
    config = {
        "provider": "OllamaChatCompletionClient",
        "config": {"model": "llama3", "host": openai_server.root_url},
    }
    client = ChatCompletionClient.load_component(config)
    assert isinstance(client, OllamaChatCompletionClient)
    openai_server.enqueue(Reply("hi"))
    assert (await client.create(ASK)).content == "hi"
    aliased = {**config, "provider": "autogen_ext.models.ollama.OllamaChatCompletionClient"}
    assert isinstance(load_component(aliased), OllamaChatCompletionClient)


# -- Gemini and Anthropic through OpenAIChatCompletionClient ---------------------------------


@pytest.fixture
def local_gemini(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """Gemini's OpenAI-compatible endpoint, moved onto the local server (same path)."""
    url = openai_server.root_url + "/v1beta/openai/"
    monkeypatch.setitem(
        providers.PROVIDERS, "gemini", Provider("Gemini", "gemini-", url, "GEMINI_API_KEY")
    )
    return url


async def test_models_page_gemini_example(
    openai_server: OpenAIServer, secrets: dict[str, str], local_gemini: str
) -> None:
    openai_server.enqueue(Reply("Paris\n"))

    # The Models page's Gemini cell, imports renamed.
    from flowlib.models import OpenAIChatCompletionClient, UserMessage

    model_client = OpenAIChatCompletionClient(
        model="gemini-1.5-flash-8b",
        # api_key="GEMINI_API_KEY",
    )
    response = await model_client.create(
        [UserMessage(content="What is the capital of France?", source="user")]
    )
    print(response)

    assert response.content == "Paris\n"
    [request] = openai_server.requests
    assert request.path == "/v1beta/openai/chat/completions"
    assert request.body["model"] == "gemini-1.5-flash-8b"
    assert request.headers["authorization"] == "Bearer gemini-secret"
    assert leaked(request.headers, allowed="GEMINI_API_KEY") == []
    assert "openai-organization" not in request.headers
    assert model_client.model_info["family"] == "gemini-1.5-flash"
    assert model_client.model_info["multiple_system_messages"] is False
    await model_client.close()


async def test_gemini_key_is_not_sent_to_another_endpoint(
    openai_server: OpenAIServer, secrets: dict[str, str]
) -> None:
    # The same example pointed at a proxy (here the local server) with base_url=.
    model_client = OpenAIChatCompletionClient(
        model="gemini-1.5-flash-8b", base_url=openai_server.base_url
    )
    openai_server.enqueue(Reply("Paris"))
    await model_client.create(ASK)
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer no-key-needed"
    assert leaked(request.headers) == []


async def test_claude_names_go_to_anthropics_endpoint_with_its_key(
    openai_server: OpenAIServer, secrets: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = OpenAIChatCompletionClient(model="claude-3-7-sonnet-20250219")
    assert str(real._client.base_url) == "https://api.anthropic.com/v1/"
    assert real._client.api_key == "anthropic-secret"
    assert real._client.organization is None and real._client.project is None
    assert real.model_info["json_output"] is False
    url = openai_server.root_url + "/anthropic/v1/"
    monkeypatch.setitem(
        providers.PROVIDERS,
        "anthropic",
        Provider("Anthropic", "claude-", url, "ANTHROPIC_API_KEY"),
    )
    client = OpenAIChatCompletionClient(model="claude-3-5-haiku-latest")
    openai_server.enqueue(Reply("Paris"))
    assert (await client.create(ASK)).content == "Paris"
    [request] = openai_server.requests
    assert request.path == "/anthropic/v1/chat/completions"
    assert request.body["model"] == "claude-3-5-haiku-latest"
    assert request.headers["authorization"] == "Bearer anthropic-secret"
    assert leaked(request.headers, allowed="ANTHROPIC_API_KEY") == []


def test_provider_key_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    with pytest.raises(ValueError, match="GEMINI_API_KEY") as caught:
        OpenAIChatCompletionClient(model="gemini-2.0-flash")
    assert isinstance(caught.value, FlowlibError)
    explicit = OpenAIChatCompletionClient(model="gemini-2.0-flash", api_key="given")
    assert explicit._client.api_key == "given"


async def test_gemini_client_config_round_trip(
    openai_server: OpenAIServer, secrets: dict[str, str], local_gemini: str
) -> None:
    client = OpenAIChatCompletionClient(model="gemini-2.0-flash", temperature=0.0)
    data = json.loads(json.dumps(dump_component(client).model_dump(mode="json")))
    assert "gemini-secret" not in json.dumps(data)
    assert data["config"]["base_url"].rstrip("/") == local_gemini.rstrip("/")
    loaded = load_component(data)
    openai_server.enqueue(Reply("ok"))
    await loaded.create(ASK)
    # Loaded, it talks to Gemini's endpoint, so it takes GEMINI_API_KEY (nothing else).
    request = openai_server.requests[-1]
    assert request.headers["authorization"] == "Bearer gemini-secret"
    assert leaked(request.headers, allowed="GEMINI_API_KEY") == []
    # A config naming another endpoint for a Gemini model gets no key from the environment.
    elsewhere = {**data, "config": {**data["config"], "base_url": openai_server.base_url}}
    proxied = load_component(elsewhere)
    openai_server.enqueue(Reply("ok"))
    await proxied.create(ASK)
    assert openai_server.requests[-1].headers["authorization"] == "Bearer no-key-needed"


# -- clients flowlib does not provide --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "instead"),
    [
        ("AzureAIChatCompletionClient", "OpenAIChatCompletionClient"),
        ("SKChatCompletionAdapter", "OpenAIChatCompletionClient"),
        ("AnthropicChatCompletionClient", 'OpenAIChatCompletionClient(model="claude-'),
        ("LlamaCppChatCompletionClient", "base_url"),
    ],
)
def test_absent_clients_are_named_errors(name: str, instead: str) -> None:
    with pytest.raises(ClientNotProvidedError) as caught:
        exec(f"from flowlib.models import {name}", {})
    assert isinstance(caught.value, ImportError)
    assert caught.value.name == name
    assert f"flowlib does not provide `{name}`" in str(caught.value)
    assert instead in str(caught.value)
    assert "docs/models.md" in str(caught.value)


def test_other_missing_names_stay_attribute_errors() -> None:
    import flowlib.models

    assert not hasattr(flowlib.models, "NoSuchClient")
    with pytest.raises(ImportError, match="cannot import name"):
        exec("from flowlib.models import NoSuchClient", {})


def test_the_ollama_docstring_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest

    from flowlib.models import _ollama

    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    failures, tried = doctest.testmod(_ollama)
    assert (failures, tried > 0) == (0, True)
