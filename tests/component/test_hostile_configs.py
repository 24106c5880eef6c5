"""Hostile configs have no side effects (issue 11.4): a loaded config sends the user's
API key only to the endpoint it belongs to, creates or changes no file outside the
directories allowed, starts no program and runs no code unapproved, and a config nested
500 levels deep is a ComponentLoadError. A refused config changes nothing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply

from flowlib.agents import ApprovalRequest, ApprovalResponse, AssistantAgent, CodeExecutorAgent
from flowlib.base import TerminationCondition
from flowlib.code_executors import LocalCommandLineCodeExecutor
from flowlib.component import (
    ComponentLoadError,
    dump_component,
    load_component,
    register_component,
)
from flowlib.component._policy import host_of
from flowlib.errors import ArgumentTypeError, FlowlibError, InvalidArgumentError
from flowlib.models import (
    ChatCompletionClient,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    UserMessage,
)
from flowlib.tools import AgentTool

INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": True,
}
ASK = [UserMessage(content="hi", source="user")]


def client_config(**config: Any) -> dict[str, Any]:
    return {"provider": "OpenAIChatCompletionClient", "config": {"model_info": INFO, **config}}


async def authorization(server: OpenAIServer, config: dict[str, Any], **policy: Any) -> str:
    """Load ``config``, make one call, return the Authorization header the server got."""
    client = load_component(config, ChatCompletionClient, **policy)
    server.enqueue(Reply("ok"))
    try:
        await client.create(ASK)
    finally:
        await client.close()
    return server.requests[-1].headers["authorization"]


# --- API keys --------------------------------------------------------------------------


@pytest.fixture
def env_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-own-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return "sk-users-own-key"


async def test_the_env_key_is_not_sent_to_a_configs_endpoint(
    openai_server: OpenAIServer, env_key: str
) -> None:
    config = client_config(model="m", base_url=openai_server.base_url)
    assert await authorization(openai_server, config) == "Bearer no-key-needed"
    # An AutoGen-style masked key names no key either.
    masked = client_config(model="m", base_url=openai_server.base_url, api_key="**********")
    assert await authorization(openai_server, masked) == "Bearer no-key-needed"
    assert all(env_key not in json.dumps(r.headers) for r in openai_server.requests)


async def test_the_env_key_goes_to_the_env_endpoint(
    openai_server: OpenAIServer, env_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url + "/")
    for base_url in (None, openai_server.base_url):
        config = client_config(model="m", **({"base_url": base_url} if base_url else {}))
        assert await authorization(openai_server, config) == f"Bearer {env_key}"


async def test_a_config_may_name_its_key(
    openai_server: OpenAIServer, env_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVER_KEY", "sk-for-my-server")
    by_env = client_config(model="m", base_url=openai_server.base_url, api_key_env="MY_SERVER_KEY")
    # Reading an environment variable needs the caller's leave (issue 21.1).
    with pytest.raises(ComponentLoadError, match=r"allow_env=\['MY_SERVER_KEY'\]"):
        load_component(by_env)
    allowed = {"allow_env": ["MY_SERVER_KEY"]}
    assert await authorization(openai_server, by_env, **allowed) == "Bearer sk-for-my-server"
    by_value = client_config(model="m", base_url=openai_server.base_url, api_key="sk-written")
    assert await authorization(openai_server, by_value) == "Bearer sk-written"
    monkeypatch.delenv("MY_SERVER_KEY")
    with pytest.raises(ComponentLoadError, match="`MY_SERVER_KEY`, which is not set"):
        load_component(by_env, allow_env=["MY_SERVER_KEY"])


async def test_the_env_organization_and_project_stay_with_the_env_endpoint(
    openai_server: OpenAIServer, env_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-users-own")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-users-own")
    config = client_config(model="m", base_url=openai_server.base_url)
    await authorization(openai_server, config)
    sent = openai_server.requests[-1].headers
    assert "openai-organization" not in sent and "openai-project" not in sent
    # A config may name its organization; the env endpoint gets the env's ids.
    named = client_config(model="m", base_url=openai_server.base_url, organization="org-named")
    await authorization(openai_server, named)
    assert openai_server.requests[-1].headers["openai-organization"] == "org-named"
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    await authorization(openai_server, config)
    sent = openai_server.requests[-1].headers
    assert sent["openai-organization"] == "org-users-own"
    assert sent["openai-project"] == "proj-users-own"


async def test_openais_own_endpoint_gets_the_env_key(env_key: str) -> None:
    for config in (
        client_config(model="gpt-4o"),
        client_config(model="gpt-4o", base_url="https://API.openai.com/v1/"),
    ):
        client = load_component(config, OpenAIChatCompletionClient)
        assert client._client.api_key == env_key
        await client.close()


async def test_a_dump_of_a_client_using_the_env_key_names_it(
    openai_server: OpenAIServer, env_key: str
) -> None:
    client = OpenAIChatCompletionClient("m", base_url=openai_server.base_url, model_info=INFO)  # type: ignore[arg-type]
    data = dump_component(client).model_dump(mode="json")
    await client.close()
    assert data["config"]["api_key_env"] == "OPENAI_API_KEY"
    assert env_key not in json.dumps(data)
    # Loading it back sends the key to that server only when the caller allows it.
    with pytest.raises(ComponentLoadError, match="allow_env"):
        load_component(data)
    allowed = {"allow_env": ["OPENAI_API_KEY"]}
    assert await authorization(openai_server, data, **allowed) == f"Bearer {env_key}"


SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
    "OPENAI_API_KEY": "sk-users-own-key",
    "AZURE_OPENAI_API_KEY": "azure-users-own-key",
    "AZURE_OPENAI_AD_TOKEN": "azure-ad-token-value",
    "OPENAI_ADMIN_KEY": "admin-key-value",
    "OPENAI_ORG_ID": "org-users-own",
    "OPENAI_PROJECT_ID": "proj-users-own",
    "OPENAI_CUSTOM_HEADERS": "X-Corp-Auth: corp-header-value",
}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    return SECRETS


def leaked(server: OpenAIServer) -> list[str]:
    """The secret values (or parts of them) any request to ``server`` carried."""
    sent = json.dumps([(r.path, r.headers, r.raw.decode("latin-1")) for r in server.requests])
    values = [v.split(": ", 1)[-1] for v in SECRETS.values()]
    return [value for value in values if value in sent]


@pytest.mark.parametrize("variable", ["AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "HOME"])
async def test_a_config_cannot_send_an_env_variable_to_its_own_server(
    openai_server: OpenAIServer, secrets: dict[str, str], variable: str
) -> None:
    """Issue 21.1: `api_key_env` naming any variable, for a server of the config's own,
    is refused unless the caller allows that variable; nothing reaches the server."""
    hostile = client_config(model="m", base_url=openai_server.base_url, api_key_env=variable)
    with pytest.raises(ComponentLoadError, match=rf"allow_env=\['{variable}'\]") as caught:
        load_component(hostile)
    assert caught.value.path == "api_key_env"
    # Allowing another variable does not allow this one.
    with pytest.raises(ComponentLoadError, match="allow_env"):
        load_component(hostile, allow_env=["SOMETHING_ELSE"])
    # Without a key the server gets the placeholder, and none of the environment's
    # secrets: no key, organization, project, admin key or custom header.
    plain = client_config(model="m", base_url=openai_server.base_url)
    assert await authorization(openai_server, plain) == "Bearer no-key-needed"
    assert leaked(openai_server) == []


async def test_an_azure_config_with_a_foreign_endpoint_gets_no_azure_key(
    openai_server: OpenAIServer, secrets: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21.1: an Azure config naming its own endpoint cannot take
    AZURE_OPENAI_API_KEY (or the AD token) unless the caller allows it."""
    hostile = {
        "provider": "AzureOpenAIChatCompletionClient",
        "config": {
            "model": "gpt-4o",
            "azure_endpoint": openai_server.base_url,
            "api_version": "2024-10-21",
            "api_key_env": "AZURE_OPENAI_API_KEY",
            "max_retries": 0,
        },
    }
    with pytest.raises(ComponentLoadError, match=r"allow_env=\['AZURE_OPENAI_API_KEY'\]"):
        load_component(hostile)
    no_key = {
        **hostile,
        "config": {k: v for k, v in hostile["config"].items() if k != "api_key_env"},
    }
    with pytest.raises(ComponentLoadError, match="allow_env"):
        load_component(no_key)
    assert openai_server.requests == []
    # The endpoint the key belongs to gets it without asking.
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", openai_server.base_url)
    client = load_component(hostile, ChatCompletionClient)
    openai_server.enqueue(Reply("ok"))
    await client.create(ASK)
    await client.close()
    assert openai_server.requests[-1].headers["api-key"] == "azure-users-own-key"


@pytest.mark.parametrize(
    ("config", "host"),
    [
        (
            {
                "provider": "McpWorkbench",
                "config": {
                    "server_params": {
                        "type": "SseServerParams",
                        "url": "http://127.0.0.1:9/sse",
                        "headers": {"Authorization": "Bearer x"},
                    }
                },
            },
            "127.0.0.1",
        ),
        (
            {
                "provider": "McpWorkbench",
                "config": {
                    "server_params": {
                        "type": "StreamableHttpServerParams",
                        "url": "https://Internal.Example:8443/mcp",
                    }
                },
            },
            "internal.example",
        ),
        ({"provider": "RedisStore", "config": {}}, "localhost"),
        ({"provider": "RedisStore", "config": {"host": "10.0.0.7", "port": 6380}}, "10.0.0.7"),
        (
            {
                "provider": "ChatCompletionCache",
                "config": {
                    "client": {
                        "provider": "ReplayChatCompletionClient",
                        "config": {"chat_completions": []},
                    },
                    "store": {"provider": "RedisStore", "config": {"host": "cache.internal"}},
                },
            },
            "cache.internal",
        ),
    ],
)
def test_a_config_connects_to_no_host_unless_allowed(config: dict[str, Any], host: str) -> None:
    """Issue 21.1: MCP SSE/HTTP URLs and Redis hosts need `allow_hosts`."""
    with pytest.raises(ComponentLoadError, match=rf"allow_hosts=\['{re.escape(host)}'\]"):
        load_component(config)
    with pytest.raises(ComponentLoadError, match="allow_hosts"):
        load_component(config, allow_hosts=["example.org"])
    try:
        load_component(config, allow_hosts=[host])
    except ComponentLoadError as exc:  # e.g. redis not installed: not the host check
        assert "allow_hosts" not in str(exc)


@pytest.mark.parametrize(
    ("dsn", "host"),
    [
        ("postgresql://u:pw@DB.internal:5433/x", ("db.internal", 5433)),
        ("postgres://u@[::1]/x", ("::1", None)),
        ("host=db.internal port=5433 dbname=x", ("db.internal", 5433)),
        ("dbname=x", ("localhost", None)),
        ("redis://cache:6379", ("cache", 6379)),
    ],
)
def test_hosts_are_read_from_urls_and_dsns(dsn: str, host: tuple[str, int | None]) -> None:
    assert host_of(dsn) == host


def test_a_dsn_in_any_config_needs_allow_hosts() -> None:
    """A PostgreSQL DSN in a component's config (field `dsn`) is a host to allow."""
    config = {"provider": "tests.Dsn", "config": {"dsn": "postgresql://u@db.internal:5432/x"}}
    with pytest.raises(ComponentLoadError, match=r"allow_hosts=\['db.internal'\]"):
        load_component(config)
    assert load_component(config, allow_hosts=["db.internal:5432"]).dsn.endswith("/x")


@pytest.mark.parametrize(
    ("argument", "value", "error"),
    [
        ("allow_env", [3], ArgumentTypeError),
        ("allow_env", ["NOT A NAME"], InvalidArgumentError),
        ("allow_hosts", ["http://x/"], InvalidArgumentError),
        ("allow_hosts", 5, ArgumentTypeError),
    ],
)
def test_bad_allow_env_and_hosts_are_named(argument: str, value: Any, error: type) -> None:
    with pytest.raises(error, match=argument):
        load_component(
            {"provider": "MaxMessageTermination", "config": {"max_messages": 1}},
            **{argument: value},
        )


# --- files -----------------------------------------------------------------------------

STORES = {
    "sqlite": lambda path: {"provider": "SQLiteStore", "config": {"path": str(path / "c.db")}},
    "diskcache": lambda path: {
        "provider": "DiskCacheStore",
        "config": {"directory": str(path / "c")},
    },
    "executor": lambda path: {
        "provider": "LocalCommandLineCodeExecutor",
        "config": {"work_dir": str(path / "work")},
    },
}


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("kind", list(STORES))
def test_a_config_writes_no_file_unless_allowed(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    config = STORES[kind](target)
    with pytest.raises(ComponentLoadError, match="allow_paths") as caught:
        load_component(config)
    assert str(target) in str(caught.value)
    assert tree(tmp_path) == ["elsewhere"]  # nothing was created
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(ComponentLoadError, match="outside the directories"):
        load_component(config, allow_paths=[other])
    # A path that climbs out of an allowed directory is outside it.
    with pytest.raises(ComponentLoadError):
        load_component(STORES[kind](other / ".." / "elsewhere"), allow_paths=[other])
    assert tree(tmp_path) == ["elsewhere", "other"]
    loaded = load_component(config, allow_paths=[tmp_path])
    assert loaded is not None


def test_a_symlink_out_of_an_allowed_directory_is_outside_it(tmp_path: Path) -> None:
    allowed, secret = tmp_path / "allowed", tmp_path / "secret"
    allowed.mkdir()
    secret.mkdir()
    os.symlink(secret, allowed / "link")
    with pytest.raises(ComponentLoadError, match="outside"):
        load_component(STORES["sqlite"](allowed / "link"), allow_paths=[allowed])
    assert list(secret.iterdir()) == []


def test_a_temporary_work_dir_needs_no_permission() -> None:
    executor = load_component({"provider": "LocalCommandLineCodeExecutor", "config": {}})
    assert isinstance(executor, LocalCommandLineCodeExecutor)


@pytest.mark.parametrize("bad", [[3], 5, [None]])
def test_bad_allow_paths_are_named(bad: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="allow_paths"):
        load_component({"provider": "InMemoryStore", "config": {}}, allow_paths=bad)


# --- programs and code -----------------------------------------------------------------


def test_an_mcp_command_is_not_started_unless_allowed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    config = {
        "provider": "McpWorkbench",
        "config": {"server_params": {"command": "touch", "args": [str(marker)]}},
    }
    with pytest.raises(ComponentLoadError, match=r"program `touch .*allow_commands=True"):
        load_component(config)
    assert not marker.exists()


def code_agent_config(tmp_path: Path) -> dict[str, Any]:
    agent = CodeExecutorAgent("runner", LocalCommandLineCodeExecutor(work_dir=tmp_path))
    return dump_component(agent).model_dump(mode="json")


def test_a_code_executor_agent_needs_an_approval_step(tmp_path: Path) -> None:
    with pytest.raises(ComponentLoadError, match="approval_func"):
        load_component(code_agent_config(tmp_path), allow_paths=[tmp_path])
    with pytest.raises(ArgumentTypeError, match="approval_func"):
        load_component(code_agent_config(tmp_path), allow_paths=[tmp_path], approval_func=5)  # type: ignore[arg-type]


async def test_a_loaded_code_executor_agent_asks_before_running(tmp_path: Path) -> None:
    asked: list[str] = []

    def deny(request: ApprovalRequest) -> ApprovalResponse:
        asked.append(request.code)
        return ApprovalResponse(approved=False, reason="not from a config")

    agent = load_component(code_agent_config(tmp_path), allow_paths=[tmp_path], approval_func=deny)
    marker = tmp_path / "ran"
    result = await agent.run(task=f"```sh\ntouch {marker}\n```")
    assert asked and "touch" in asked[0]
    assert not marker.exists()
    assert "not from a config" in result.messages[-1].to_text()


# --- depth and types -------------------------------------------------------------------


def nested_conditions(depth: int) -> dict[str, Any]:
    config: dict[str, Any] = {"provider": "MaxMessageTermination", "config": {"max_messages": 1}}
    for _ in range(depth):
        config = {"provider": "OrTerminationCondition", "config": {"conditions": [config]}}
    return config


def test_a_config_nested_500_deep_is_a_load_error() -> None:
    with pytest.raises(ComponentLoadError, match="nest more than 100 levels") as caught:
        load_component(nested_conditions(500))
    assert isinstance(caught.value, FlowlibError)
    assert load_component(nested_conditions(50), TerminationCondition)


def test_a_config_of_the_wrong_kind_is_a_named_type_error() -> None:
    with pytest.raises(TypeError, match="builds a MaxMessageTermination") as caught:
        load_component(nested_conditions(0), ChatCompletionClient)
    assert isinstance(caught.value, FlowlibError)


class Dsn:
    """A component whose config names a PostgreSQL server."""

    component_type = "thing"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn


register_component(
    Dsn,
    provider="tests.Dsn",
    to_config=lambda thing: {"dsn": thing.dsn},
    from_config=lambda config: Dsn(config["dsn"]),
)


# --- all or nothing, and the policy reaches nested tools (issue 21.8) ----------------------

REPLAY = {"provider": "ReplayChatCompletionClient", "config": {"chat_completions": ["x"]}}


def cached_assistant(path: Path) -> dict[str, Any]:
    store = {"provider": "SQLiteStore", "config": {"path": str(path / "cache.db")}}
    cache = {"provider": "ChatCompletionCache", "config": {"client": REPLAY, "store": store}}
    return {"provider": "AssistantAgent", "config": {"name": "a", "model_client": cache}}


@pytest.mark.parametrize("refused", ["code_agent", "bad_field", "unknown_host", "code_field"])
def test_a_refused_config_builds_nothing_before_it(tmp_path: Path, refused: str) -> None:
    """A team whose first member would create `cache.db` and whose second member is
    refused creates no file: the whole config is checked before anything is built."""
    later: dict[str, Any] = {
        "code_agent": code_agent_config(tmp_path),
        "bad_field": {"provider": "AssistantAgent", "config": {"name": 5}},
        "code_field": {"provider": "UserProxyAgent", "config": {"name": "u", "input_func": "f"}},
        "unknown_host": {
            "provider": "AssistantAgent",
            "config": {
                "name": "b",
                "model_client": REPLAY,
                "workbench": [
                    {
                        "provider": "McpWorkbench",
                        "config": {"server_params": {"url": "http://10.1.2.3/mcp"}},
                    }
                ],
            },
        },
    }[refused]
    team = {
        "provider": "RoundRobinGroupChat",
        "config": {"participants": [cached_assistant(tmp_path), later]},
    }
    before = tree(tmp_path)
    with pytest.raises(ComponentLoadError) as caught:
        load_component(team, allow_paths=[tmp_path])
    assert caught.value.path.startswith("participants[1]")
    assert tree(tmp_path) == before  # no cache.db


FACTORY = {"provider": "StructuredMessageFactory", "config": {"json_schema": {}}}


@pytest.mark.parametrize(
    ("provider", "config", "field"),
    [
        ("UserProxyAgent", {"name": "u", "input_func": "f"}, "input_func"),
        (
            "AssistantAgent",
            {"name": "a", "model_client": REPLAY, "structured_message_factory": FACTORY},
            "structured_message_factory",
        ),
        (
            "AzureOpenAIChatCompletionClient",
            {"model": "gpt-4o", "api_version": "1", "azure_ad_token_provider": "f"},
            "azure_ad_token_provider",
        ),
    ],
)
def test_a_config_field_that_would_be_code_is_refused(
    provider: str, config: dict[str, Any], field: str
) -> None:
    with pytest.raises(ComponentLoadError, match=f"`{field}` cannot be loaded .*would be code"):
        load_component({"provider": provider, "config": config})


async def test_an_agent_tool_gets_the_callers_policy(tmp_path: Path) -> None:
    """An AgentTool's agent is loaded under the same approval_func and allow_paths."""
    inner = CodeExecutorAgent("runner", LocalCommandLineCodeExecutor(work_dir=tmp_path))
    outer = AssistantAgent(
        "a", model_client=ReplayChatCompletionClient(["x"]), tools=[AgentTool(inner)]
    )
    config = dump_component(outer).model_dump(mode="json")
    with pytest.raises(ComponentLoadError, match="approval_func") as caught:
        load_component(config, allow_paths=[tmp_path])
    assert caught.value.path == "tools[0].agent"

    def deny(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(approved=False, reason="no")

    loaded = load_component(config, allow_paths=[tmp_path], approval_func=deny)
    (tool,) = loaded._tools
    assert isinstance(tool, AgentTool)
    assert tool.agent._approval_func is deny


def test_nested_agent_tools_count_towards_the_depth_limit() -> None:
    """60 AgentTools, each holding an agent, nest 120 components: past the limit."""
    config: dict[str, Any] = {
        "provider": "AssistantAgent",
        "config": {"name": "a0", "model_client": REPLAY},
    }
    for level in range(1, 61):
        tool = {"provider": "AgentTool", "config": {"agent": config}}
        config = {
            "provider": "AssistantAgent",
            "config": {"name": f"a{level}", "model_client": REPLAY, "tools": [tool]},
        }
    with pytest.raises(ComponentLoadError, match="more than 100 levels"):
        load_component(config)
