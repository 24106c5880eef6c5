"""Hostile configs have no side effects (issue 11.4): a loaded config sends the user's
API key only to the endpoint it belongs to, creates or changes no file outside the
directories allowed, starts no program and runs no code unapproved, and a config nested
500 levels deep is a ComponentLoadError. A refused config changes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply

from flowlib.agents import ApprovalRequest, ApprovalResponse, CodeExecutorAgent
from flowlib.base import TerminationCondition
from flowlib.code_executors import LocalCommandLineCodeExecutor
from flowlib.component import ComponentLoadError, dump_component, load_component
from flowlib.errors import ArgumentTypeError, FlowlibError
from flowlib.models import ChatCompletionClient, OpenAIChatCompletionClient, UserMessage

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


async def authorization(server: OpenAIServer, config: dict[str, Any]) -> str:
    """Load ``config``, make one call, return the Authorization header the server got."""
    client = load_component(config, ChatCompletionClient)
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
    assert await authorization(openai_server, by_env) == "Bearer sk-for-my-server"
    by_value = client_config(model="m", base_url=openai_server.base_url, api_key="sk-written")
    assert await authorization(openai_server, by_value) == "Bearer sk-written"
    monkeypatch.delenv("MY_SERVER_KEY")
    with pytest.raises(ComponentLoadError, match="`MY_SERVER_KEY`, which is not set"):
        load_component(by_env)


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
    assert await authorization(openai_server, data) == f"Bearer {env_key}"


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
