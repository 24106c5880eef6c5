"""Declarative configuration: dump -> JSON -> load round trips, the same runs on the same
scripts, the unserialisable-field reports, and the registry-only provider lookup."""

from __future__ import annotations

import builtins
import doctest
import importlib
import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply
from pydantic import BaseModel

import flowlib.component
from flowlib.agents import (
    ApprovalRequest,
    ApprovalResponse,
    AssistantAgent,
    CodeExecutorAgent,
    FunctionAgent,
    MessageFilterAgent,
    MessageFilterConfig,
    PerSourceFilter,
    SocietyOfMindAgent,
    UserProxyAgent,
)
from flowlib.base import (
    CancellationToken,
    ChatAgent,
    Handoff,
    TaskResult,
    Team,
    TerminationCondition,
)
from flowlib.code_executors import LocalCommandLineCodeExecutor
from flowlib.component import (
    ComponentBase,
    ComponentLoader,
    ComponentLoadError,
    ComponentModel,
    ComponentSerializationError,
    ComponentSerializationWarning,
    UnknownProviderError,
    dump_component,
    known_providers,
    load_component,
    register_component,
)
from flowlib.conditions import (
    ExternalTermination,
    FunctionalTermination,
    FunctionCallTermination,
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    StopMessageTermination,
    TextMentionTermination,
    TextMessageTermination,
    TimeoutTermination,
    TokenUsageTermination,
)
from flowlib.errors import ConditionSerializationError, CycleWithoutExitError
from flowlib.graph import AnyOf, Contains, Not, Regex
from flowlib.memory import ListMemory
from flowlib.memory._types import MemoryContent
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    StopMessage,
    StructuredMessage,
    TextMessage,
    ToolCallExecutionEvent,
)
from flowlib.model_context import (
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from flowlib.models import (
    AssistantMessage,
    AzureOpenAIChatCompletionClient,
    ChatCompletionCache,
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    InMemoryStore,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
    SQLiteStore,
    SystemMessage,
    UserMessage,
)
from flowlib.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from flowlib.tools import BaseTool

# --- helpers -----------------------------------------------------------------------------


def as_json(component: object) -> dict[str, Any]:
    """Dump ``component`` and pass the result through JSON text."""
    data: dict[str, Any] = json.loads(json.dumps(dump_component(component).model_dump(mode="json")))
    return data


def round_trip(component: object, **load_args: Any) -> Any:
    """Dump -> JSON -> load; assert the loaded component dumps to the same JSON."""
    data = as_json(component)
    loaded = load_component(data, **load_args)
    assert type(loaded) is type(component)
    assert as_json(loaded) == data
    return loaded


def transcript(result: TaskResult) -> tuple[list[tuple[str, str, str]], str | None]:
    return (
        [(type(m).__name__, m.source, m.to_text()) for m in result.messages],
        result.stop_reason,
    )


def calls(*names: str) -> CreateResult:
    """A scripted model answer that calls the given tools."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"call_{i}", name=n, arguments="{}") for i, n in enumerate(names)],
        usage=RequestUsage(prompt_tokens=3, completion_tokens=2),
        cached=False,
    )


def assistant(name: str, script: Sequence[str | CreateResult], **kwargs: Any) -> AssistantAgent:
    return AssistantAgent(name, ReplayChatCompletionClient(script), **kwargs)


async def same_run(team: Team, *, task: str = "Start.", **load_args: Any) -> Team:
    """Round-trip ``team``, run the original and the copy on ``task``, compare them."""
    loaded: Team = round_trip(team, **load_args)
    assert loaded.graph.dump() == team.graph.dump()  # type: ignore[attr-defined]
    original = await team.run(task=task)
    copy = await loaded.run(task=task)
    assert transcript(copy) == transcript(original)
    assert len(original.messages) > 2
    return loaded


# --- the public surface ------------------------------------------------------------------


def test_all_matches_public_names() -> None:
    module = flowlib.component
    assert sorted(module.__all__) == sorted(set(module.__all__))
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, type(module))
        and str(getattr(value, "__module__", "")).startswith("flowlib.component")
    }
    assert public == set(module.__all__)


@pytest.mark.parametrize(
    "module",
    ["flowlib.component", "flowlib.component._base", "flowlib.component._model"],
)
def test_doctests(module: str) -> None:
    failures, tried = doctest.testmod(importlib.import_module(module))
    assert tried > 0
    assert failures == 0


@pytest.mark.parametrize("base", [ChatAgent, Team, TerminationCondition, ChatCompletionClient])
def test_component_bases_have_the_mixin(base: type) -> None:
    assert issubclass(base, ComponentBase)
    assert issubclass(base, ComponentLoader)
    assert callable(base.dump_component)
    assert callable(base.load_component)


def test_component_model_shape_is_autogens_and_json() -> None:
    model = MaxMessageTermination(5).dump_component()
    assert isinstance(model, ComponentModel)
    data = model.model_dump(mode="json")
    assert set(data) == {
        "provider",
        "component_type",
        "version",
        "component_version",
        "description",
        "label",
        "config",
        "unserializable",
    }
    assert data["provider"] == "flowlib.conditions.MaxMessageTermination"
    assert data["component_type"] == "termination"
    assert data["version"] == 1
    assert data["component_version"] == 1
    assert data["label"] == "MaxMessageTermination"
    assert data["description"].startswith("Stops once a number of messages have passed")
    assert data["config"] == {"max_messages": 5, "include_agent_event": False}
    assert data["unserializable"] is None
    assert json.loads(json.dumps(data)) == data


def test_dumps_write_the_class_provider_override() -> None:
    components: list[Any] = [
        MaxMessageTermination(2),
        MaxMessageTermination(2) & StopMessageTermination(),
        RoundRobinGroupChat([assistant("a", ["x"])], max_turns=1),
        UserProxyAgent("user"),
    ]
    for component in components:
        assert component.dump_component().provider == type(component).component_provider_override


def test_every_builtin_is_registered_under_its_import_path_and_its_short_name() -> None:
    # register_builtin derives the provider from where users import the class and writes
    # it on the class: the provider string is written once.
    for provider in flowlib.component.known_providers():
        if not provider.startswith("flowlib."):
            continue  # registered by other tests
        module, _, name = provider.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        assert cls.__dict__["component_provider_override"] == provider
        try:
            load_component({"provider": name, "config": {}})
        except UnknownProviderError:
            pytest.fail(f"the short name of {provider} is not registered")
        except ComponentLoadError:
            pass  # an empty config: the provider was found


# --- termination conditions --------------------------------------------------------------

CONDITIONS: list[TerminationCondition] = [
    MaxMessageTermination(3),
    MaxMessageTermination(2, include_agent_event=True),
    TextMentionTermination("APPROVE"),
    TextMentionTermination("APPROVE", sources=["critic"]),
    StopMessageTermination(),
    TokenUsageTermination(max_total_token=10),
    TokenUsageTermination(max_prompt_token=5, max_completion_token=7),
    HandoffTermination("user"),
    TimeoutTermination(86400.5),  # built at import: must not fire during a long test run
    ExternalTermination(),
    SourceMatchTermination(["critic", "writer"]),
    TextMessageTermination(),
    TextMessageTermination("writer"),
    FunctionCallTermination("approve"),
    MaxMessageTermination(3) | TextMentionTermination("x") & StopMessageTermination(),
    (HandoffTermination("user") | SourceMatchTermination(["a"])) & TokenUsageTermination(9),
]

MESSAGES: list[BaseAgentEvent | BaseChatMessage] = [
    TextMessage(content="hello", source="user"),
    TextMessage(
        content="draft APPROVE",
        source="critic",
        models_usage=RequestUsage(prompt_tokens=4, completion_tokens=3),
    ),
    ToolCallExecutionEvent(
        content=[FunctionExecutionResult(content="ok", name="approve", call_id="1")],
        source="writer",
    ),
    HandoffMessage(content="over to you", target="user", source="writer"),
    StopMessage(content="stop", source="writer"),
]


@pytest.mark.parametrize("condition", CONDITIONS, ids=repr)
async def test_termination_conditions_round_trip_and_behave_the_same(
    condition: TerminationCondition,
) -> None:
    # The conditions were built at collection time: restart a TimeoutTermination's clock,
    # or a long test session makes the original fire while its fresh copy does not.
    await condition.reset()
    loaded = round_trip(condition)
    assert repr(loaded) == repr(condition)
    for message in MESSAGES:
        expected = await condition([message])
        actual = await loaded([message])
        assert actual == expected or (
            actual is not None
            and expected is not None
            and (actual.content, actual.source) == (expected.content, expected.source)
        )
        if expected is not None:
            break
    await condition.reset()


def test_combined_condition_nests_component_models() -> None:
    data = as_json(
        MaxMessageTermination(3) | TextMentionTermination("x") & StopMessageTermination()
    )
    assert data["provider"] == "flowlib.base.OrTerminationCondition"
    first, second = data["config"]["conditions"]
    assert first["provider"] == "flowlib.conditions.MaxMessageTermination"
    assert second["provider"] == "flowlib.base.AndTerminationCondition"
    assert [c["provider"] for c in second["config"]["conditions"]] == [
        "flowlib.conditions.TextMentionTermination",
        "flowlib.conditions.StopMessageTermination",
    ]


@pytest.mark.parametrize(
    "provider",
    [
        "autogen_agentchat.conditions.MaxMessageTermination",
        "MaxMessageTermination",
        "flowlib.conditions.MaxMessageTermination",
    ],
)
def test_conditions_load_from_autogen_and_short_providers(provider: str) -> None:
    condition = TerminationCondition.load_component(
        {"provider": provider, "config": {"max_messages": 4}}
    )
    assert isinstance(condition, MaxMessageTermination)
    assert repr(condition) == "MaxMessageTermination(max_messages=4, include_agent_event=False)"


def test_autogen_or_condition_loads() -> None:
    condition = load_component(
        {
            "provider": "autogen_agentchat.base.OrTerminationCondition",
            "component_type": "termination",
            "version": 1,
            "component_version": 1,
            "config": {
                "conditions": [
                    {
                        "provider": "autogen_agentchat.conditions.TextMentionTermination",
                        "config": {"text": "TERMINATE"},
                    },
                    {
                        "provider": "autogen_agentchat.conditions.MaxMessageTermination",
                        "config": {"max_messages": 10, "include_agent_event": False},
                    },
                ]
            },
        },
        TerminationCondition,
    )
    assert repr(condition) == (
        "OrTerminationCondition(TextMentionTermination(text='TERMINATE', sources=None), "
        "MaxMessageTermination(max_messages=10, include_agent_event=False))"
    )


def test_functional_termination_is_refused_naming_the_field() -> None:
    def done(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> bool:
        return True

    condition = MaxMessageTermination(5) | FunctionalTermination(done)
    with pytest.raises(ComponentSerializationError, match=r"conditions\[1\]\.func") as info:
        condition.dump_component()
    assert info.value.field == "func"
    assert info.value.path == "conditions[1].func"
    assert isinstance(info.value, ValueError)


def test_timeout_with_a_test_clock_is_reported_not_dropped() -> None:
    condition = TimeoutTermination(5, clock=lambda: 0.0)
    with pytest.warns(ComponentSerializationWarning, match="`clock` is not serialised"):
        model = condition.dump_component()
    assert model.unserializable == ["clock"]
    data = model.model_dump(mode="json")
    with pytest.warns(ComponentSerializationWarning, match="dumped without `clock`"):
        loaded = load_component(data)
    assert loaded._clock is time.monotonic
    assert loaded.dump_component().unserializable is None


# --- model clients -----------------------------------------------------------------------

SCRIPT: list[str | CreateResult] = [
    "Hello!",
    calls("lookup"),
    CreateResult(
        finish_reason="stop",
        content="Thinking done.",
        usage=RequestUsage(prompt_tokens=1, completion_tokens=2),
        cached=False,
        thought="because",
    ),
]


async def test_replay_client_round_trips_with_its_script() -> None:
    client = ReplayChatCompletionClient(
        SCRIPT,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": "r1",
            "structured_output": False,
        },
        latency=0.001,
    )
    loaded = round_trip(client)
    assert loaded.model_info == client.model_info
    ask = [UserMessage(content="hi", source="user")]
    for _ in SCRIPT:
        assert await loaded.create(ask) == await client.create(ask)


async def test_replay_client_dump_is_the_blueprint_not_the_position() -> None:
    client = ReplayChatCompletionClient(["one", "two"])
    await client.create([UserMessage(content="hi", source="user")])
    loaded = round_trip(client)
    assert loaded.remaining == 2


async def test_openai_client_round_trip_never_writes_the_api_key(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    info = {
        "vision": False,
        "function_calling": True,
        "json_output": True,
        "family": "unknown",
        "structured_output": True,
    }
    client = OpenAIChatCompletionClient(
        "local-llama",
        api_key="sk-very-secret",
        base_url=openai_server.base_url,
        model_info=info,  # type: ignore[arg-type]
        timeout=12.5,
        max_retries=1,
        default_headers={"X-Trace": "on"},
        temperature=0.25,
        seed=7,
        extra_body={"top_k": 3},
    )
    data = as_json(client)
    assert "sk-very-secret" not in json.dumps(data)
    assert "api_key" not in data["config"]
    assert data["config"] == {
        "model": "local-llama",
        "model_info": info,
        "timeout": 12.5,
        "max_retries": 1,
        "deadline": 600.0,
        "default_headers": {"X-Trace": "on"},
        "include_name_in_message": True,
        "temperature": 0.25,
        "seed": 7,
        "extra_body": {"top_k": 3},
        "base_url": openai_server.base_url.rstrip("/"),
    }
    loaded = round_trip(client)
    assert isinstance(loaded, OpenAIChatCompletionClient)
    openai_server.enqueue(Reply("from the loaded client"))
    result = await loaded.create([UserMessage(content="hi", source="user")])
    assert result.content == "from the loaded client"
    request = openai_server.requests[-1]
    # The environment's key is not sent to an endpoint a config names (issue 11.4) ...
    assert request.headers["authorization"] == "Bearer no-key-needed"
    # ... unless the config names it and the load allows it (issue 21.1).
    named_config = {**data, "config": {**data["config"], "api_key_env": "OPENAI_API_KEY"}}
    with pytest.raises(ComponentLoadError, match=r"allow_env=\['OPENAI_API_KEY'\]"):
        load_component(named_config)
    named = load_component(named_config, allow_env=["OPENAI_API_KEY"])
    openai_server.enqueue(Reply("with the named key"))
    await named.create([UserMessage(content="hi", source="user")])
    assert openai_server.requests[-1].headers["authorization"] == "Bearer sk-from-the-environment"
    request = openai_server.requests[-2]
    assert request.headers["x-trace"] == "on"
    assert request.body["temperature"] == 0.25
    assert request.body["seed"] == 7
    assert request.body["top_k"] == 3
    await client.close()
    await loaded.close()


def test_seed_style_openai_config_loads_with_its_hand_written_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = {
        "provider": "OpenAIChatCompletionClient",
        "config": {"model": "gpt-4o", "api_key": "sk-xxx"},
    }
    client = ChatCompletionClient.load_component(config)
    assert isinstance(client, OpenAIChatCompletionClient)
    assert client.model == "gpt-4o"
    assert client._client.api_key == "sk-xxx"
    assert "sk-xxx" not in json.dumps(as_json(client))


def test_masked_autogen_key_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    client = load_component(
        {
            "provider": "autogen_ext.models.openai.OpenAIChatCompletionClient",
            "config": {"model": "gpt-4o-mini", "api_key": "**********"},
        },
        ChatCompletionClient,
    )
    assert client._client.api_key == "sk-env"  # type: ignore[attr-defined]


def test_missing_key_is_a_clear_load_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ComponentLoadError, match="No OpenAI API key"):
        load_component({"provider": "OpenAIChatCompletionClient", "config": {"model": "gpt-4o"}})


def test_secret_headers_are_reported_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    client = OpenAIChatCompletionClient(
        "gpt-4o", default_headers={"Authorization": "Bearer sk-secret", "X-Team": "blue"}
    )
    with pytest.warns(ComponentSerializationWarning, match="Authorization"):
        model = client.dump_component()
    assert "sk-secret" not in model.model_dump_json()
    assert model.config["default_headers"] == {"X-Team": "blue"}
    assert model.unserializable == ["default_headers.Authorization"]


def test_class_valued_response_format_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")

    class Answer(BaseModel):
        text: str

    client = OpenAIChatCompletionClient("gpt-4o", response_format=Answer)
    with pytest.raises(ComponentSerializationError, match="response_format"):
        client.dump_component()


def test_azure_client_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-env-key")
    client = AzureOpenAIChatCompletionClient(
        model="gpt-4o",
        azure_endpoint="https://example.openai.azure.com/",
        api_version="2024-10-21",
        azure_deployment="my-gpt",
        api_key="azure-secret",
        temperature=0.0,
    )
    data = as_json(client)
    assert "azure-secret" not in json.dumps(data)
    assert data["config"]["azure_deployment"] == "my-gpt"
    # The environment's key goes only to the environment's endpoint (issue 11.4).
    with pytest.raises(ComponentLoadError, match="api_key_env: AZURE_OPENAI_API_KEY"):
        round_trip(client)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://EXAMPLE.openai.azure.com")
    loaded = round_trip(client)
    assert loaded._client.api_key == "azure-env-key"


def test_azure_token_provider_is_refused() -> None:
    client = AzureOpenAIChatCompletionClient(
        model="gpt-4o",
        azure_endpoint="https://example.openai.azure.com/",
        api_version="2024-10-21",
        azure_ad_token_provider=lambda: "token",
    )
    with pytest.raises(ComponentSerializationError, match="azure_ad_token_provider"):
        client.dump_component()


async def test_cache_with_in_memory_store_round_trips_and_caches() -> None:
    cache = ChatCompletionCache(ReplayChatCompletionClient(["Paris."]), InMemoryStore())
    data = as_json(cache)
    assert data["config"]["store"]["provider"] == "flowlib.models.InMemoryStore"
    loaded = round_trip(cache)
    ask = [UserMessage(content="Capital of France?", source="user")]
    first = await loaded.create(ask)
    second = await loaded.create(ask)
    assert (first.content, first.cached, second.content, second.cached) == (
        "Paris.",
        False,
        "Paris.",
        True,
    )


async def test_cache_with_sqlite_store_round_trips_and_shares_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    cache = ChatCompletionCache(
        ReplayChatCompletionClient(["Rome."]), SQLiteStore(path, table="t1")
    )
    data = as_json(cache)
    assert data["config"]["store"]["config"] == {"path": str(path), "table": "t1"}
    ask = [UserMessage(content="Capital of Italy?", source="user")]
    assert (await cache.create(ask)).cached is False
    loaded = round_trip(cache, allow_paths=[tmp_path])
    # The loaded cache reads the same file: answered from the store, not the script.
    again = await loaded.create(ask)
    assert (again.content, again.cached) == ("Rome.", True)
    assert loaded.client.remaining == 1
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM t1").fetchone() == (1,)


def test_sqlite_store_with_a_custom_value_type_is_refused(tmp_path: Path) -> None:
    store: SQLiteStore[int] = SQLiteStore(tmp_path / "ints.db", value_type=int)
    with pytest.raises(ComponentSerializationError, match="value_type"):
        dump_component(store)


# --- model contexts and memory -----------------------------------------------------------

INITIAL = [
    SystemMessage(content="Be brief."),
    UserMessage(content="Hi", source="user"),
    AssistantMessage(content="Hello", source="bot"),
    UserMessage(content="Again", source="user"),
]


@pytest.mark.parametrize(
    "context",
    [
        UnboundedChatCompletionContext(),
        UnboundedChatCompletionContext(INITIAL),
        BufferedChatCompletionContext(2, INITIAL),
        HeadAndTailChatCompletionContext(1, 1, INITIAL),
        TokenLimitedChatCompletionContext(
            ReplayChatCompletionClient([]), token_limit=3, initial_messages=INITIAL
        ),
    ],
    ids=lambda context: type(context).__name__,
)
async def test_model_contexts_round_trip_with_their_initial_messages(context: Any) -> None:
    loaded = round_trip(context)
    assert await loaded.get_messages() == await context.get_messages()


async def test_list_memory_round_trips_its_contents() -> None:
    memory = ListMemory(
        "prefs",
        [
            MemoryContent(content="User likes pizza.", mime_type="text/plain"),
            MemoryContent(content={"diet": "no cheese"}, mime_type="application/json"),
            MemoryContent(content=b"\x00\x01", mime_type="application/octet-stream"),
        ],
    )
    loaded = round_trip(memory)
    assert loaded.name == "prefs"
    assert loaded.content == memory.content


# --- agents ------------------------------------------------------------------------------


async def test_assistant_agent_round_trip_runs_the_same() -> None:
    def build() -> AssistantAgent:
        return AssistantAgent(
            "helper",
            ReplayChatCompletionClient([calls("transfer_to_user")]),
            handoffs=[Handoff(target="user", message="Over to you."), "planner"],
            model_context=BufferedChatCompletionContext(4),
            memory=[
                ListMemory(
                    memory_contents=[MemoryContent(content="Be kind.", mime_type="text/plain")]
                )
            ],
            description="Helps.",
            system_message=None,
            model_client_stream=True,
            reflect_on_tool_use=False,
            max_tool_iterations=2,
            tool_call_summary_format="{tool_name}: {result}",
            metadata={"team": "blue"},
        )

    agent = build()
    data = as_json(agent)
    assert "system_message" not in data["config"]
    assert data["config"]["handoffs"][0] == {
        "target": "user",
        "description": "Handoff to user.",
        "name": "transfer_to_user",
        "message": "Over to you.",
    }
    loaded = round_trip(agent)
    assert loaded.system_message is None
    original = await agent.run(task="Help me.")
    copy = await loaded.run(task="Help me.")
    assert transcript(copy) == transcript(original)
    assert isinstance(copy.messages[-1], HandoffMessage)
    assert loaded._model_client.requests == agent._model_client.requests


def test_agent_with_a_function_tool_is_refused_naming_the_path() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    team = RoundRobinGroupChat([assistant("calc", ["3"], tools=[add])], max_turns=1)
    with pytest.raises(ComponentSerializationError, match=r"participants\[0\]\.tools\[0\]") as info:
        team.dump_component()
    assert "FunctionTool `add`" in str(info.value)
    assert info.value.path == "participants[0].tools[0]"


def test_tool_call_summary_formatter_is_left_out_with_a_note() -> None:
    agent = assistant("helper", ["ok"], tool_call_summary_formatter=lambda call, result: "x")
    with pytest.warns(ComponentSerializationWarning, match="tool_call_summary_formatter"):
        model = agent.dump_component()
    assert model.unserializable == ["tool_call_summary_formatter"]
    with pytest.warns(ComponentSerializationWarning, match="dumped without"):
        loaded = AssistantAgent.load_component(model)
    assert loaded._tool_call_summary_formatter is None


def test_output_content_type_is_refused() -> None:
    class Answer(BaseModel):
        text: str

    agent = assistant("helper", ["{}"], output_content_type=Answer)
    with pytest.raises(ComponentSerializationError, match="output_content_type"):
        agent.dump_component()


def test_user_proxy_round_trips_and_a_custom_input_func_is_refused() -> None:
    agent = UserProxyAgent("user", description="The customer")
    loaded = round_trip(agent)
    assert loaded.input_func is builtins.input
    assert loaded.description == "The customer"
    custom = UserProxyAgent("user", input_func=lambda prompt: "yes")
    with pytest.raises(ComponentSerializationError, match="input_func"):
        custom.dump_component()


async def test_code_executor_agent_round_trip_runs_the_same(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(timeout=20, work_dir=tmp_path)
    agent = CodeExecutorAgent(
        "runner", executor, sources=["user"], supported_languages=["python"], system_message=None
    )
    loaded = round_trip(agent, allow_paths=[tmp_path], approval_func=approve)
    task = "Run this:\n```python\nprint(6 * 7)\n```\n"
    original = await agent.run(task=task)
    copy = await loaded.run(task=task)
    assert transcript(copy) == transcript(original)
    assert copy.messages[-1].to_text() == "42\n"


def approve(request: ApprovalRequest) -> ApprovalResponse:
    return ApprovalResponse(approved=True, reason="trusted test config")


def test_code_executor_agent_needs_an_approval_func_to_load(tmp_path: Path) -> None:
    agent = CodeExecutorAgent(
        "runner", LocalCommandLineCodeExecutor(work_dir=tmp_path), approval_func=approve
    )
    data = as_json(agent)  # the approval_func is not written ...
    assert "approval_func" not in data["config"]
    with pytest.raises(ComponentLoadError, match="approval_func") as info:
        load_component(data, allow_paths=[tmp_path])  # ... and loading asks for one
    assert "without anyone approving" in str(info.value)
    loaded = load_component(data, allow_paths=[tmp_path], approval_func=approve)
    assert loaded._approval_func is approve


def test_function_agent_is_refused() -> None:
    def shout(messages: Sequence[BaseChatMessage]) -> str:
        return "HI"

    with pytest.raises(ComponentSerializationError, match="FunctionAgent `shout`"):
        FunctionAgent(shout).dump_component()


async def test_society_of_mind_agent_with_inner_team_runs_the_same() -> None:
    inner = RoundRobinGroupChat(
        [assistant("writer", ["A story."]), assistant("editor", ["Looks good."])], max_turns=2
    )
    som = SocietyOfMindAgent(
        "society", inner, ReplayChatCompletionClient(["The final story."]), instruction="Sum up."
    )
    team = RoundRobinGroupChat([som, assistant("translator", ["La historia."])], max_turns=2)
    loaded = await same_run(team, task="Write a story.")
    society = loaded.participants[0]
    assert isinstance(society, SocietyOfMindAgent)
    assert isinstance(society.team, RoundRobinGroupChat)
    assert society._instruction == "Sum up."


async def test_message_filter_agent_round_trip_runs_the_same() -> None:
    agent = MessageFilterAgent(
        "critic",
        wrapped_agent=assistant("critic", ["Noted."]),
        filter=MessageFilterConfig(
            per_source=[PerSourceFilter(source="user", position="last", count=1)]
        ),
    )
    loaded = round_trip(agent)
    original = await agent.run(task="Check this.")
    copy = await loaded.run(task="Check this.")
    assert transcript(copy) == transcript(original)
    assert loaded.wrapped_agent._model_client.requests == agent.wrapped_agent._model_client.requests


# --- teams -------------------------------------------------------------------------------


async def test_round_robin_round_trip_same_graph_same_run() -> None:
    team = RoundRobinGroupChat(
        [assistant("writer", ["draft 1", "draft 2"]), assistant("critic", ["Fix it.", "APPROVE"])],
        name="review",
        description="Writes and reviews.",
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(10),
        max_turns=8,
        emit_team_events=True,
    )
    loaded = await same_run(team, task="Write a haiku.")
    assert (loaded.name, loaded.description, loaded.max_turns) == (
        "review",
        "Writes and reviews.",
        8,
    )


async def test_nested_team_participant_round_trips() -> None:
    inner = RoundRobinGroupChat(
        [assistant("writer", ["A draft."]), assistant("reviewer", ["Better."])],
        name="inner",
        max_turns=2,
    )
    outer = RoundRobinGroupChat([inner, assistant("boss", ["Ship it."])], max_turns=2)
    data = as_json(outer)
    assert data["config"]["participants"][0]["provider"] == "flowlib.teams.RoundRobinGroupChat"
    await same_run(outer)


async def test_swarm_round_trip_same_graph_same_run() -> None:
    alice = assistant("alice", [calls("transfer_to_bob")], handoffs=["bob"])
    bob = assistant("bob", ["Bob here. TERMINATE"])
    team = Swarm([alice, bob], termination_condition=TextMentionTermination("TERMINATE"))
    loaded = await same_run(team, task="Who is Bob?")
    assert isinstance(loaded, Swarm)
    assert [p.name for p in loaded.participants] == ["alice", "bob"]


async def test_selector_round_trip_same_graph_same_run() -> None:
    team = SelectorGroupChat(
        [
            assistant("writer", ["draft"], description="Writes."),
            assistant("critic", ["APPROVE"], description="Reviews."),
        ],
        ReplayChatCompletionClient(["writer", "critic"]),
        termination_condition=TextMentionTermination("APPROVE"),
        selector_prompt="Pick one of {participants}.\n{roles}\n{history}",
        allow_repeated_speaker=True,
        max_selector_attempts=2,
        model_context=BufferedChatCompletionContext(5),
    )
    loaded = await same_run(team, task="Write a haiku.")
    assert loaded.selector._prompt == "Pick one of {participants}.\n{roles}\n{history}"
    assert loaded.selector._model_client.requests == team.selector._model_client.requests


def test_selector_func_and_candidate_func_are_left_out_with_a_note() -> None:
    team = SelectorGroupChat(
        [assistant("a", ["x"]), assistant("b", ["y"])],
        ReplayChatCompletionClient(["a"]),
        max_turns=1,
        selector_func=lambda messages: None,
        candidate_func=lambda messages: ["a", "b"],
    )
    with pytest.warns(ComponentSerializationWarning) as records:
        model = team.dump_component()
    assert model.unserializable == ["selector_func", "candidate_func"]
    assert any("selector_func" in str(record.message) for record in records)
    with pytest.warns(ComponentSerializationWarning, match="`selector_func`, `candidate_func`"):
        loaded = Team.load_component(model)
    assert loaded.selector._selector_func is None


async def test_magentic_one_round_trip_same_graph_same_run() -> None:
    def ledger(done: bool) -> str:
        def entry(answer: object) -> dict[str, object]:
            return {"reason": "because", "answer": answer}

        return json.dumps(
            {
                "is_request_satisfied": entry(done),
                "is_in_loop": entry(False),
                "is_progress_being_made": entry(True),
                "next_speaker": entry("writer"),
                "instruction_or_question": entry("Write it."),
            }
        )

    model = ReplayChatCompletionClient(
        ["Facts: none.", "Plan: writer writes.", ledger(False), ledger(True), "A haiku."]
    )
    team = MagenticOneGroupChat(
        [assistant("writer", ["draft"], description="Writes poems.")],
        model,
        max_turns=5,
        max_stalls=2,
        final_answer_prompt="Answer {task} now.",
    )
    loaded = await same_run(team, task="Write a haiku.")
    assert (loaded.max_stalls, loaded.final_answer_prompt) == (2, "Answer {task} now.")


def _branching_flow(condition_yes: Any = "yes", condition_no: Any = None) -> GraphFlow:
    if condition_no is None:
        condition_no = AnyOf(conditions=["no", Regex(pattern="na+h")])
    judge = assistant("judge", ["yes, it is"])
    accept = assistant("accept", ["Accepted."])
    reject = assistant("reject", ["Rejected."])
    builder = DiGraphBuilder()
    builder.add_node(judge).add_node(accept).add_node(reject)
    builder.add_edge(judge, accept, condition=condition_yes)
    builder.add_edge(judge, reject, condition=condition_no)
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=5)


async def test_graph_flow_with_string_and_object_conditions_same_graph_same_run() -> None:
    team = _branching_flow()
    data = as_json(team)
    edges = data["config"]["graph"]["nodes"]["judge"]["edges"]
    assert edges[0]["condition"] == "yes"
    assert edges[1]["condition"]["kind"] == "any_of"
    assert data["unserializable"] is None
    await same_run(team, task="Is it good?")


async def test_graph_flow_loop_with_exit_same_run() -> None:
    writer = assistant("writer", ["v1", "v2"])
    critic = assistant("critic", ["Needs work.", "APPROVE"])
    publisher = assistant("publisher", ["Published."])
    builder = DiGraphBuilder()
    builder.add_node(writer).add_node(critic).add_node(publisher)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, writer, condition=Not(condition=Contains(text="APPROVE")))
    builder.add_edge(critic, publisher, condition=Contains(text="APPROVE"))
    builder.set_entry_point(writer)
    team = GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(20),
    )
    await same_run(team, task="Write a poem.")


def is_yes(message: BaseChatMessage) -> bool:
    return "yes" in message.to_model_text()


def is_no(message: BaseChatMessage) -> bool:
    return "yes" not in message.to_model_text()


async def test_graph_flow_callable_conditions_are_markers_restored_on_load() -> None:
    team = _branching_flow(is_yes, is_no)
    with pytest.warns(ComponentSerializationWarning, match="callable condition") as records:
        data = as_json(team)
    assert "conditions={'is_yes': func}" in str(records[0].message)
    assert data["unserializable"] == [
        "graph.nodes.judge.edges[0].condition",
        "graph.nodes.judge.edges[1].condition",
    ]
    edges = data["config"]["graph"]["nodes"]["judge"]["edges"]
    assert edges[0]["condition"] == {"kind": "callable", "name": "is_yes", "serializable": False}
    with pytest.raises(
        ConditionSerializationError, match=r"conditions=\{'is_no'.*'is_yes'"
    ) as info:
        load_component(data)
    assert info.value.edges == (("judge", "accept"), ("judge", "reject"))
    loaded = load_component(data, conditions={"is_yes": is_yes, "is_no": is_no})
    assert loaded.graph.nodes["judge"].edges[0].condition_function is is_yes
    with pytest.warns(ComponentSerializationWarning):
        assert as_json(loaded) == data
    original = await team.run(task="Is it good?")
    copy = await loaded.run(task="Is it good?")
    assert transcript(copy) == transcript(original)


def test_two_different_lambdas_cannot_be_told_apart() -> None:
    team = _branching_flow(lambda m: True, lambda m: False)
    with (
        pytest.raises(ComponentSerializationError, match="both named `<lambda>`"),
        pytest.warns(ComponentSerializationWarning),
    ):
        team.dump_component()


def test_graph_flow_with_function_nodes_is_refused() -> None:
    def draft(messages: Sequence[BaseChatMessage]) -> str:
        return "a draft"

    builder = DiGraphBuilder().add_node(draft).add_node(assistant("review", ["ok"]))
    builder.add_edge("draft", "review")
    team = GraphFlow(builder.get_participants(), builder.build())
    with pytest.raises(ComponentSerializationError, match=r"participants\[0\]\.func"):
        team.dump_component()


def test_graph_errors_keep_their_type_when_loading() -> None:
    builder = DiGraphBuilder().add_node(assistant("a", ["x"])).add_node(assistant("b", ["y"]))
    builder.add_edge("a", "b").add_edge("b", "a", condition="again").set_entry_point("a")
    data = as_json(GraphFlow(builder.get_participants(), builder.build(), max_turns=3))
    data["config"]["graph"]["nodes"]["b"]["edges"][0].pop("condition")
    with pytest.raises(CycleWithoutExitError):
        load_component(data)


class Finding(BaseModel):
    """The content of a custom message type."""

    claim: str


def test_custom_message_types_are_reported() -> None:
    team = RoundRobinGroupChat(
        [assistant("a", ["x"])], max_turns=1, custom_message_types=[StructuredMessage[Finding]]
    )
    with pytest.warns(ComponentSerializationWarning, match=r"custom_message_types.*Finding"):
        model = team.dump_component()
    assert model.unserializable == ["custom_message_types"]


def test_a_shared_replay_client_warns_that_loading_makes_copies() -> None:
    client = ReplayChatCompletionClient(["a", "b"])
    team = RoundRobinGroupChat(
        [AssistantAgent("one", client), AssistantAgent("two", client)], max_turns=2
    )
    with pytest.warns(ComponentSerializationWarning, match="same ReplayChatCompletionClient"):
        team.dump_component()


async def test_autogen_shaped_team_config_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    agent = {
        "provider": "autogen_agentchat.agents.AssistantAgent",
        "component_type": "agent",
        "version": 2,
        "component_version": 2,
        "label": "AssistantAgent",
        "config": {
            "name": "assistant",
            "model_client": {
                "provider": "autogen_ext.models.openai.OpenAIChatCompletionClient",
                "component_type": "model",
                "version": 1,
                "component_version": 1,
                "config": {"model": "gpt-4o", "api_key": "**********"},
            },
            "workbench": [
                {
                    "provider": "autogen_core.tools.StaticWorkbench",
                    "component_type": "workbench",
                    "config": {"tools": []},
                }
            ],
            "model_context": {
                "provider": "autogen_core.model_context.UnboundedChatCompletionContext",
                "component_type": "chat_completion_context",
                "config": {},
            },
            "description": "An agent that provides assistance with ability to use tools.",
            "system_message": "You are a helpful AI assistant.",
            "model_client_stream": False,
            "reflect_on_tool_use": False,
            "tool_call_summary_format": "{result}",
            "metadata": {},
        },
    }
    team = Team.load_component(
        {
            "provider": "autogen_agentchat.teams.RoundRobinGroupChat",
            "component_type": "team",
            "version": 1,
            "component_version": 1,
            "config": {
                "participants": [agent],
                "termination_condition": {
                    "provider": "autogen_agentchat.conditions.TextMentionTermination",
                    "config": {"text": "TERMINATE"},
                },
                "emit_team_events": False,
            },
        }
    )
    assert isinstance(team, RoundRobinGroupChat)
    member = team.participants[0]
    assert isinstance(member, AssistantAgent)
    assert member.system_message == "You are a helpful AI assistant."
    assert as_json(team)["provider"] == "flowlib.teams.RoundRobinGroupChat"


# --- security: providers come from the registry only -------------------------------------


@pytest.mark.parametrize(
    "provider", ["os.system", "builtins.eval", "subprocess.Popen", "json.loads", "flowlib.cli.main"]
)
def test_unknown_providers_are_refused_without_importing(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_imports(name: str, package: str | None = None) -> Any:
        raise AssertionError(f"load_component imported {name}")

    load_component({"provider": "MaxMessageTermination", "config": {"max_messages": 1}})
    monkeypatch.setattr(importlib, "import_module", no_imports)
    with pytest.raises(UnknownProviderError) as info:
        load_component({"provider": provider, "config": {"command": "echo hacked"}})
    error = info.value
    assert isinstance(error, ValueError)
    assert error.provider == provider
    assert f"Unknown component provider `{provider}`" in str(error)
    assert "flowlib.agents.AssistantAgent" in str(error)
    assert "flowlib.teams.GraphFlow" in error.known


def test_an_unknown_nested_provider_is_refused_with_its_path() -> None:
    data = as_json(RoundRobinGroupChat([assistant("a", ["x"])], max_turns=1))
    data["config"]["participants"][0]["config"]["model_client"]["provider"] = "os.system"
    with pytest.raises(UnknownProviderError, match=r"participants\[0\]\.model_client") as info:
        Team.load_component(data)
    assert info.value.path == "participants[0].model_client"


def test_autogen_function_tool_source_code_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    tool = {
        "provider": "autogen_core.tools.FunctionTool",
        "component_type": "tool",
        "config": {
            "source_code": f"open({str(marker)!r}, 'w').write('x')\ndef f() -> None: ...",
            "name": "f",
            "description": "",
            "global_imports": [],
            "has_cancellation_support": False,
        },
    }
    agent = as_json(assistant("a", ["x"]))
    agent["config"]["tools"] = [tool]
    with pytest.raises(ComponentLoadError, match="never executes code") as info:
        load_component(agent)
    assert info.value.path == "tools[0]"
    assert not marker.exists()


def test_known_providers_lists_flowlibs_loadable_classes() -> None:
    providers = known_providers()
    assert "flowlib.teams.SelectorGroupChat" in providers
    assert "flowlib.models.OpenAIChatCompletionClient" in providers
    # Issue 19: a FunctionTool is loadable now (its function named by import path, imported
    # only with allow_functions=), so it is listed.
    assert "flowlib.tools.FunctionTool" in providers
    assert "OpenAIChatCompletionClient" not in providers  # aliases load but are not listed
    assert providers == sorted(providers)


# --- load errors -------------------------------------------------------------------------


def test_unknown_config_fields_are_load_errors_naming_them() -> None:
    with pytest.raises(ComponentLoadError, match="`max_mesages` is not a field"):
        load_component(
            {"provider": "MaxMessageTermination", "config": {"max_messages": 2, "max_mesages": 3}}
        )


def test_wrong_nested_kind_is_a_load_error() -> None:
    data = as_json(RoundRobinGroupChat([assistant("a", ["x"])], max_turns=1))
    data["config"]["participants"] = [as_json(StopMessageTermination())]
    with pytest.raises(ComponentLoadError, match="builds a StopMessageTermination") as info:
        load_component(data)
    assert info.value.path == "participants[0]"


def test_expected_type_is_checked() -> None:
    data = as_json(StopMessageTermination())
    with pytest.raises(TypeError, match="not a ChatCompletionClient"):
        ChatCompletionClient.load_component(data)
    with pytest.raises(TypeError, match="not a Team"):
        load_component(data, Team)
    assert isinstance(ComponentLoader.load_component(data), StopMessageTermination)
    assert isinstance(ChatAgent.load_component(data, TerminationCondition), StopMessageTermination)


def test_newer_versions_and_type_mismatches_are_refused() -> None:
    data = as_json(StopMessageTermination())
    with pytest.raises(ComponentLoadError, match="component_version 2"):
        load_component({**data, "component_version": 2})
    with pytest.raises(ComponentLoadError, match="format version 9"):
        load_component({**data, "version": 9})
    with pytest.raises(ComponentLoadError, match="component_type='agent'"):
        load_component({**data, "component_type": "agent"})


def test_constructor_errors_become_load_errors() -> None:
    with pytest.raises(ComponentLoadError, match="`max_messages` must be at least 1, not 0"):
        load_component({"provider": "MaxMessageTermination", "config": {"max_messages": 0}})
    with pytest.raises(ComponentLoadError, match="not a component model"):
        load_component({"config": {}})


# --- registering your own components -----------------------------------------------------


class UntilCount(TerminationCondition):
    """Stops after a number of calls (AutoGen's component protocol)."""

    component_provider_override = "tests.UntilCount"

    class Config(BaseModel):
        calls: int

    component_config_schema = Config

    def __init__(self, calls: int) -> None:
        self._calls = calls
        self._seen = 0

    @property
    def terminated(self) -> bool:
        return self._seen >= self._calls

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        self._seen += 1
        return StopMessage(content="done", source="UntilCount") if self.terminated else None

    async def reset(self) -> None:
        self._seen = 0

    def _to_config(self) -> Config:
        return self.Config(calls=self._calls)

    @classmethod
    def _from_config(cls, config: Config) -> UntilCount:
        return cls(config.calls)


class EchoTool(BaseTool[BaseModel, str]):
    """A custom tool registered with plain functions."""

    class Args(BaseModel):
        text: str

    def __init__(self, prefix: str) -> None:
        super().__init__(self.Args, str, "echo", "Echo the text.")
        self.prefix = prefix

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> str:
        return self.prefix + str(getattr(args, "text", ""))


class PoliteAssistant(AssistantAgent):
    """An AssistantAgent subclass with the same constructor."""


register_component(UntilCount)
register_component(
    EchoTool,
    provider="tests.EchoTool",
    to_config=lambda tool: {"prefix": tool.prefix},
    from_config=lambda config: EchoTool(config["prefix"]),
)


def test_autogen_protocol_component_dumps_and_loads_once_registered() -> None:
    condition = MaxMessageTermination(9) | UntilCount(2)
    data = as_json(condition)
    assert data["config"]["conditions"][1] == {
        "provider": "tests.UntilCount",
        "component_type": "termination",
        "version": 1,
        "component_version": 1,
        "description": "Stops after a number of calls (AutoGen's component protocol).",
        "label": "UntilCount",
        "config": {"calls": 2},
    }
    loaded = round_trip(condition)
    assert loaded._conditions[1]._calls == 2


async def test_custom_tool_registered_with_functions_round_trips() -> None:
    agent = assistant("echoer", [calls("echo")], tools=[EchoTool(">> ")])
    loaded = round_trip(agent)
    assert isinstance(loaded.tools[0], EchoTool)
    assert loaded.tools[0].prefix == ">> "
    original = await agent.run(task="hi")
    copy = await loaded.run(task="hi")
    assert transcript(copy) == transcript(original)


def test_unregistered_subclass_is_refused_then_registered_like_its_base() -> None:
    agent = PoliteAssistant("polite", ReplayChatCompletionClient(["Please."]))
    with pytest.raises(ComponentSerializationError, match="like=AssistantAgent"):
        agent.dump_component()
    register_component(PoliteAssistant, provider="tests.PoliteAssistant", like=AssistantAgent)
    loaded = round_trip(agent)
    assert isinstance(loaded, PoliteAssistant)


def test_registering_a_taken_provider_or_class_is_refused() -> None:
    class Other(TerminationCondition):
        component_provider_override = "flowlib.conditions.MaxMessageTermination"

    with pytest.raises(ValueError, match="already registered"):
        register_component(Other, to_config=lambda c: {}, from_config=lambda c: Other())
    with pytest.raises(ValueError, match="already a registered component"):
        register_component(MaxMessageTermination, provider="x.Y", like=MaxMessageTermination)


def test_an_unregistered_agent_is_refused_with_a_hint() -> None:
    from flowlib.testing import ScriptedAgent

    with pytest.raises(ComponentSerializationError, match="register_component") as info:
        RoundRobinGroupChat([ScriptedAgent("bot", ["hi"])], max_turns=1).dump_component()
    assert info.value.path == "participants[0]"


def test_component_model_loads_itself() -> None:
    model = (MaxMessageTermination(2) & TextMentionTermination("ok")).dump_component()
    condition = model.load_component(TerminationCondition)
    assert condition.dump_component() == model
    with pytest.raises(TypeError, match="not a Team"):
        model.load_component(Team)


class Opaque:
    """Registered with a to_config that returns something JSON cannot hold."""

    component_type = "thing"


register_component(
    Opaque,
    provider="tests.Opaque",
    to_config=lambda thing: {"when": time},
    from_config=lambda config: Opaque(),
)


def test_registered_to_config_must_return_json() -> None:
    with pytest.raises(ComponentSerializationError, match="not JSON data"):
        dump_component(Opaque())


async def test_autogen_shaped_graph_flow_config_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    def agent(name: str) -> dict[str, Any]:
        return {
            "provider": "autogen_agentchat.agents.AssistantAgent",
            "config": {
                "name": name,
                "model_client": {
                    "provider": "autogen_ext.models.replay.ReplayChatCompletionClient",
                    "config": {"chat_completions": [f"{name} says APPROVE"]},
                },
                "description": f"Agent {name}.",
                "reflect_on_tool_use": False,
                "tool_call_summary_format": "{result}",
            },
        }

    def edge(target: str, condition: str | None) -> dict[str, Any]:
        return {
            "target": target,
            "condition": condition,
            "activation_group": target,
            "activation_condition": "all",
        }

    team = load_component(
        {
            "provider": "autogen_agentchat.teams.GraphFlow",
            "component_type": "team",
            "version": 1,
            "component_version": 1,
            "config": {
                "participants": [agent("A"), agent("B")],
                "termination_condition": {
                    "provider": "autogen_agentchat.conditions.MaxMessageTermination",
                    "config": {"max_messages": 5},
                },
                "graph": {
                    "nodes": {
                        "A": {"name": "A", "edges": [edge("B", "APPROVE")], "activation": "all"},
                        "B": {"name": "B", "edges": [], "activation": "all"},
                    },
                    "default_start_node": "A",
                },
            },
        },
        GraphFlow,
    )
    result = await team.run(task="Go.")
    assert [m.to_text() for m in result.messages] == ["Go.", "A says APPROVE", "B says APPROVE"]
