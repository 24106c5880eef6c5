"""Public-API smoke tests that need nothing beyond flowlib's declared dependencies.

They run in the dev environment like any test, and ``scripts/packaging_check.sh`` runs
them again in two clean virtualenvs: one with a plain ``pip install .`` (no extras,
today's releases of every dependency) and one with the lowest versions ``pyproject.toml``
allows. There, ``FLOWLIB_PACKAGING_CHECK`` names the environment and the first test checks
that flowlib really is the installed package and that no dev extra leaked in, so the
check cannot pass by running against the source tree or a full environment.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from openai_server import OpenAIServer, Reply, ToolCall

from flowlib.agents import AssistantAgent
from flowlib.component import dump_component, load_component
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import MissingExtraError
from flowlib.messages import ModelClientStreamingChunkEvent, TextMessage
from flowlib.models import CreateResult, OpenAIChatCompletionClient, UserMessage
from flowlib.render import to_dot, to_mermaid, to_svg
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat

REPO = Path(__file__).resolve().parents[2]
CHECK = os.environ.get("FLOWLIB_PACKAGING_CHECK")
DEV_ONLY = ["hypothesis", "psycopg", "mcp", "ray", "diskcache", "redis", "opentelemetry.sdk"]


@pytest.mark.skipif(CHECK is None, reason="only inside scripts/packaging_check.sh")
def test_this_is_the_installed_package_without_extras() -> None:
    import flowlib

    location = Path(flowlib.__file__).resolve()
    assert REPO not in location.parents, f"flowlib imported from the source tree: {location}"
    leaked = [name for name in DEV_ONLY if _importable(name)]
    assert not leaked, f"dev-only packages present in the {CHECK} environment: {leaked}"


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def client(server: OpenAIServer) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(
        "gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0
    )


async def test_create_and_create_stream(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply("plain answer"), Reply("streamed answer here"))
    model = client(openai_server)
    try:
        plain = await model.create([UserMessage(content="hi", source="user")])
        items = [
            item async for item in model.create_stream([UserMessage(content="hi", source="u")])
        ]
    finally:
        await model.close()
    assert plain.content == "plain answer"
    assert isinstance(items[-1], CreateResult) and items[-1].content == "streamed answer here"
    assert "".join(item for item in items[:-1] if isinstance(item, str)) == "streamed answer here"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_streaming_agent_calls_a_tool(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply(tool_calls=[ToolCall("add", '{"a": 2, "b": 3}')]), Reply("5"))
    model = client(openai_server)
    agent = AssistantAgent(
        "calc", model, tools=[add], model_client_stream=True, reflect_on_tool_use=True
    )
    try:
        events = [event async for event in agent.run_stream(task="2 + 3?")]
    finally:
        await model.close()
    chunks = [e for e in events if isinstance(e, ModelClientStreamingChunkEvent)]
    assert chunks, "no streamed chunk reached the caller"
    result = events[-1]
    assert isinstance(result.messages[-1], TextMessage) and result.messages[-1].content == "5"


async def _write(messages: object) -> str:
    return "a draft"


async def _review(messages: object) -> str:
    return "APPROVE"


def _flow() -> GraphFlow:
    builder = DiGraphBuilder().add_node(_write).add_node(_review)
    builder.add_edge("_write", "_review")
    builder.add_edge("_review", "_write", condition=lambda m: "APPROVE" not in m.to_model_text())
    builder.set_entry_point("_write")
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(10),
    )


async def test_a_graph_flow_runs_and_draws() -> None:
    flow = _flow()
    result = await flow.run(task="Write a haiku")
    assert [m.source for m in result.messages] == ["user", "_write", "_review"]
    assert "_review" in to_dot(flow.graph) and "_review" in to_mermaid(flow.graph)
    if shutil.which("dot"):
        assert to_svg(flow.graph).lstrip().startswith(("<?xml", "<svg"))


async def test_a_checkpointed_team_resumes_from_sqlite(tmp_path: Path) -> None:
    from flowlib.checkpoint import SQLiteCheckpointStore
    from flowlib.models import ReplayChatCompletionClient

    def team() -> RoundRobinGroupChat:
        return RoundRobinGroupChat(
            [
                AssistantAgent("a", ReplayChatCompletionClient(["a1", "a2"])),
                AssistantAgent("b", ReplayChatCompletionClient(["b1", "b2"])),
            ],
            max_turns=2,
            checkpoint_store=SQLiteCheckpointStore(tmp_path / "runs.db"),
        )

    first = await team().run(task="go", run_id="r1")
    assert [m.to_text() for m in first.messages] == ["go", "a1", "b1"]
    stored = await SQLiteCheckpointStore(tmp_path / "runs.db").list_runs()
    assert [run.run_id for run in stored] == ["r1"]


def test_an_agent_config_round_trips() -> None:
    model = OpenAIChatCompletionClient("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    agent = AssistantAgent("helper", model, system_message="Be brief.")
    config = dump_component(agent)
    loaded = load_component(json.loads(config.model_dump_json()))
    assert isinstance(loaded, AssistantAgent) and loaded.name == "helper"


def test_the_command_line_runs_the_demo() -> None:
    command = Path(sys.executable).with_name("flowlib")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [str(command), "demo"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Path taken" in done.stdout


EXTRAS = [
    ("flowlib.checkpoint", "PostgresCheckpointStore", "psycopg", "postgres"),
    ("flowlib.tools.mcp", "McpWorkbench", "mcp", "mcp"),
    ("flowlib.distributed", "RayRunner", "ray", "ray"),
    ("flowlib.models", "DiskCacheStore", "diskcache", "diskcache"),
    ("flowlib.models", "RedisStore", "redis", "redis"),
]


@pytest.mark.parametrize(("module", "name", "dependency", "extra"), EXTRAS)
def test_a_missing_extra_is_named(module: str, name: str, dependency: str, extra: str) -> None:
    if _importable(dependency):
        pytest.skip(f"{dependency} is installed here")
    with pytest.raises(MissingExtraError, match=rf"flowlib\[{extra}\]"):
        imported = importlib.import_module(module)
        _use(getattr(imported, name))


def _use(cls: type) -> None:
    """Construct the class as a user would, which is where a lazy import happens."""
    if cls.__name__ == "PostgresCheckpointStore":
        cls("postgresql://127.0.0.1:9/none")
    elif cls.__name__ == "McpWorkbench":
        from flowlib.tools.mcp import StdioServerParams

        cls(StdioServerParams(command="true"))
    elif cls.__name__ in ("DiskCacheStore", "RedisStore"):
        cls(object())
    else:
        cls()
