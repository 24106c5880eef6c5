"""McpWorkbench, mcp_server_tools and AssistantAgent(workbench=...) against a real MCP
server (``mcp_test_server.py``, FastMCP) on stdio, streamable HTTP and SSE, with the
agent's model on the local Chat Completions server."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from openai_server import OpenAIServer, Reply, ToolCall

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken
from flowlib.component import ComponentLoadError, dump_component, load_component
from flowlib.errors import FlowlibError, McpServerError
from flowlib.messages import ToolCallExecutionEvent, ToolCallSummaryMessage
from flowlib.models import OpenAIChatCompletionClient
from flowlib.tools import FunctionTool, StaticWorkbench, WorkbenchToolError
from flowlib.tools.mcp import (
    McpWorkbench,
    SseServerParams,
    StdioServerParams,
    StreamableHttpServerParams,
    ToolOverride,
    mcp_server_tools,
)

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
STDIO = StdioServerParams(command=sys.executable, args=[SERVER, "stdio"], read_timeout_seconds=20)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http(transport: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the MCP test server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the MCP test server did not start listening")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def http_server() -> Iterator[int]:
    process, port = _start_http("streamable-http")
    yield port
    _stop(process)


@pytest.fixture
def sse_server() -> Iterator[int]:
    process, port = _start_http("sse")
    yield port
    _stop(process)


@pytest.fixture
async def client(openai_server: OpenAIServer) -> AsyncIterator[OpenAIChatCompletionClient]:
    model = OpenAIChatCompletionClient(
        "gpt-4o-mini", base_url=openai_server.base_url, api_key="test", max_retries=0
    )
    yield model
    await model.close()


async def test_stdio_workbench_lists_and_calls_tools() -> None:
    async with McpWorkbench(STDIO) as workbench:
        tools = {schema["name"]: schema for schema in await workbench.list_tools()}
        assert set(tools) == {"add", "shout", "fail", "slow", "big", "die", "distance"}
        assert tools["add"]["description"] == "Add two integers."
        assert tools["add"]["parameters"]["required"] == ["a", "b"]
        result = await workbench.call_tool("add", {"a": 2, "b": 40})
        assert (result.to_text(), result.is_error) == ("42", False)
        failed = await workbench.call_tool("fail", {"reason": "no"})
        assert failed.is_error
        assert "refused: no" in failed.to_text()
        prompt = await workbench.get_prompt("greet", {"name": "Ada"})
        assert "Ada" in prompt.messages[0].content.text


async def test_streamable_http_workbench(http_server: int) -> None:
    params = StreamableHttpServerParams(url=f"http://127.0.0.1:{http_server}/mcp")
    async with McpWorkbench(params) as workbench:
        assert "shout" in [schema["name"] for schema in await workbench.list_tools()]
        assert (await workbench.call_tool("shout", {"text": "hi"})).to_text() == "HI"


async def test_sse_workbench(sse_server: int) -> None:
    params = SseServerParams(url=f"http://127.0.0.1:{sse_server}/sse")
    async with McpWorkbench(params) as workbench:
        assert (await workbench.call_tool("add", {"a": 1, "b": 1})).to_text() == "2"


async def test_agent_calls_mcp_tools_over_http(
    http_server: int, openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    """The model calls a working tool and a failing one in parallel; both results go
    back to the model, the failure marked as an error."""
    openai_server.enqueue(
        Reply(
            tool_calls=[
                ToolCall("add", json.dumps({"a": 3, "b": 4})),
                ToolCall("fail", json.dumps({"reason": "bad day"})),
            ]
        ),
        Reply("3 + 4 = 7, and fail refused."),
    )
    params = StreamableHttpServerParams(url=f"http://127.0.0.1:{http_server}/mcp")
    async with McpWorkbench(params) as workbench:
        agent = AssistantAgent(
            "assistant", model_client=client, workbench=workbench, reflect_on_tool_use=True
        )
        result = await agent.run(task="add 3 and 4, then fail")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert (execution.content[0].content, execution.content[0].is_error) == ("7", False)
    assert execution.content[1].is_error
    assert "refused: bad day" in execution.content[1].content
    assert result.messages[-1].to_text() == "3 + 4 = 7, and fail refused."
    sent_tools = {tool["function"]["name"] for tool in openai_server.requests[0].body["tools"]}
    assert sent_tools == {"add", "shout", "fail", "slow", "big", "die", "distance"}
    tool_messages = [m for m in openai_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "7"


async def test_agent_with_several_workbenches(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    def double(x: int) -> int:
        return 2 * x

    local = StaticWorkbench([FunctionTool(double, description="Double a number.")])
    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("double", '{"x": 5}'), ToolCall("shout", '{"text": "ok"}')])
    )
    async with McpWorkbench(STDIO) as remote:
        agent = AssistantAgent("assistant", model_client=client, workbench=[local, remote])
        result = await agent.run(task="double 5 and shout ok")
    summary = result.messages[-1]
    assert isinstance(summary, ToolCallSummaryMessage)
    assert summary.content == "10\nOK"


async def test_server_dying_mid_call_raises_a_flowlib_error() -> None:
    workbench = McpWorkbench(STDIO)
    await workbench.start()
    with pytest.raises(McpServerError, match="stopped during the call of tool `die`"):
        await asyncio.wait_for(workbench.call_tool("die"), 30)
    # The next call starts a fresh server.
    assert (await workbench.call_tool("add", {"a": 1, "b": 2})).to_text() == "3"
    await workbench.stop()


async def test_http_server_dying_mid_call(http_server: int) -> None:
    params = StreamableHttpServerParams(
        url=f"http://127.0.0.1:{http_server}/mcp", timeout=5, sse_read_timeout=10
    )
    workbench = McpWorkbench(params)
    try:
        with pytest.raises(McpServerError) as caught:
            await asyncio.wait_for(workbench.call_tool("die"), 60)
        assert isinstance(caught.value, FlowlibError)
        assert "`die`" in str(caught.value)
    finally:
        await workbench.stop()


async def test_agent_survives_a_dying_server(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    """The agent turns the dead server into an error result for the model; no hang."""
    openai_server.enqueue(Reply(tool_calls=[ToolCall("die")]), Reply("The tool crashed."))
    async with McpWorkbench(STDIO) as workbench:
        agent = AssistantAgent(
            "assistant", model_client=client, workbench=workbench, reflect_on_tool_use=True
        )
        result = await asyncio.wait_for(agent.run(task="die"), 60)
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert execution.content[0].is_error
    assert "MCP server" in execution.content[0].content
    assert result.messages[-1].to_text() == "The tool crashed."


async def test_cancelling_a_call_cancels_it() -> None:
    token = CancellationToken()
    async with McpWorkbench(STDIO) as workbench:
        call = asyncio.ensure_future(
            workbench.call_tool("slow", {"seconds": 30}, cancellation_token=token)
        )
        await asyncio.sleep(0.5)
        token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # The connection is still usable.
        assert (await workbench.call_tool("add", {"a": 1, "b": 1})).to_text() == "2"


async def test_unreachable_server_is_a_clear_error() -> None:
    params = StreamableHttpServerParams(url=f"http://127.0.0.1:{_free_port()}/mcp", timeout=2)
    with pytest.raises(McpServerError, match="Could not connect to the MCP server"):
        await McpWorkbench(params).start()
    missing = StdioServerParams(command=sys.executable, args=["-c", "import sys; sys.exit(2)"])
    with pytest.raises(McpServerError, match="Could not connect"):
        await McpWorkbench(missing).start()


async def test_mcp_server_tools_as_plain_tools(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    tools = await mcp_server_tools(STDIO)
    by_name = {tool.name: tool for tool in tools}
    assert await by_name["add"].run_json({"a": 1, "b": 5}, CancellationToken()) is not None
    with pytest.raises(WorkbenchToolError, match="refused: x"):
        await by_name["fail"].run_json({"reason": "x"}, CancellationToken())
    openai_server.enqueue(Reply(tool_calls=[ToolCall("shout", '{"text": "abc"}')]))
    agent = AssistantAgent("assistant", model_client=client, tools=[by_name["shout"]])
    result = await agent.run(task="shout abc")
    assert result.messages[-1].to_text() == "ABC"


async def test_tool_overrides_rename_tools() -> None:
    overrides = {"add": ToolOverride(name="plus", description="Sum.")}
    async with McpWorkbench(STDIO, tool_overrides=overrides) as workbench:
        names = {schema["name"]: schema for schema in await workbench.list_tools()}
        assert "plus" in names and "add" not in names
        assert names["plus"]["description"] == "Sum."
        assert (await workbench.call_tool("plus", {"a": 2, "b": 2})).to_text() == "4"


def test_workbench_is_a_component() -> None:
    workbench = McpWorkbench(STDIO, tool_overrides={"add": ToolOverride(name="plus")})
    model = dump_component(workbench)
    assert model.provider == "flowlib.tools.mcp.McpWorkbench"
    data = json.loads(json.dumps(model.model_dump(mode="json")))
    with pytest.raises(ComponentLoadError, match="allow_commands=True"):
        load_component(data)  # a config may not start a program unless allowed
    loaded = load_component(data, allow_commands=True)
    assert isinstance(loaded, McpWorkbench)
    assert loaded.server_params == STDIO
    assert dump_component(loaded) == model


def test_bad_arguments_are_clear_errors(client: OpenAIChatCompletionClient) -> None:
    with pytest.raises(TypeError, match="StdioServerParams, SseServerParams"):
        McpWorkbench({"command": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="workbench takes a Workbench"):
        AssistantAgent("a", model_client=client, workbench="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        AssistantAgent("a", model_client=client, tools=[len], workbench=StaticWorkbench([]))


async def test_a_tool_with_model_arguments_keeps_its_definitions(
    openai_server: OpenAIServer, client: OpenAIChatCompletionClient
) -> None:
    """A FastMCP tool taking pydantic models: its schema reaches the model whole, so the
    ``$ref`` to ``Point`` resolves, and the nested arguments the model sends work."""
    arguments = {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}
    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("distance", json.dumps(arguments))]), Reply("5 apart.")
    )
    async with McpWorkbench(STDIO) as workbench:
        agent = AssistantAgent(
            "geometer", model_client=client, workbench=workbench, reflect_on_tool_use=True
        )
        result = await agent.run(task="How far is (3, 4) from the origin?")
    sent = {t["function"]["name"]: t["function"] for t in openai_server.requests[0].body["tools"]}
    parameters = sent["distance"]["parameters"]
    reference = parameters["properties"]["start"]["$ref"]
    assert reference == "#/$defs/Point"
    assert parameters["$defs"]["Point"]["properties"].keys() == {"x", "y"}
    assert parameters["required"] == ["start", "end"]
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert (execution.content[0].content, execution.content[0].is_error) == ("5.0", False)


async def test_resources_resource_templates_and_prompts() -> None:
    async with McpWorkbench(STDIO) as workbench:
        resources = await workbench.list_resources()
        templates = await workbench.list_resource_templates()
        units = await workbench.read_resource("config://units")
        weather = await workbench.read_resource("weather://Lisbon")
        prompts = await workbench.list_prompts()
        greeting = await workbench.get_prompt("greet", {"name": "Ada"})
    assert [str(r.uri) for r in resources.resources] == ["config://units"]
    assert [t.uriTemplate for t in templates.resourceTemplates] == ["weather://{city}"]
    assert units.contents[0].text == "metric"
    assert weather.contents[0].text == "sunny in Lisbon"
    assert [p.name for p in prompts.prompts] == ["greet"]
    assert greeting.messages[0].content.text == "Say hello to Ada."
