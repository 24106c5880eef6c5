"""Costs that grow with hostile input (issue 21.7): removing a cancellation callback is
constant time; a reply's tool calls past the agent's cap are not run but answered with
a named error; an MCP result over the workbench's size cap is an error result; a
`selector_prompt` with a huge format spec is refused before anything is allocated; and
MCP requests wait the same documented time over every transport."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from flowlib.agents import DEFAULT_MAX_TOOL_CALLS, AssistantAgent
from flowlib.base import CancellationToken
from flowlib.component import ComponentLoadError, dump_component, load_component
from flowlib.errors import ArgumentTypeError, InvalidArgumentError
from flowlib.messages import ToolCallExecutionEvent
from flowlib.models import CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from flowlib.teams import SelectorGroupChat
from flowlib.tools.mcp import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MCP_READ_TIMEOUT,
    McpWorkbench,
    SseServerParams,
    StdioServerParams,
    StreamableHttpServerParams,
)

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
STDIO = StdioServerParams(command=sys.executable, args=[SERVER, "stdio"], read_timeout_seconds=30)


class Counted:
    """A callback that counts how often it is compared (a list scan compares each)."""

    comparisons = 0

    def __call__(self) -> None:
        pass

    def __eq__(self, other: object) -> bool:
        Counted.comparisons += 1
        return self is other

    def __hash__(self) -> int:
        return id(self)


def test_removing_callbacks_is_constant_time() -> None:
    token = CancellationToken()
    callbacks = [Counted() for _ in range(5_000)]
    for callback in callbacks:
        token.add_callback(callback)
    Counted.comparisons = 0
    for callback in reversed(callbacks):  # newest first: a list scans past all others
        token.remove_callback(callback)
    # A list scan makes ~25 million comparisons here; a hash lookup about one each.
    assert Counted.comparisons <= 2 * len(callbacks)


def test_callbacks_still_run_once_in_order_and_can_be_removed() -> None:
    token = CancellationToken()
    ran: list[str] = []
    first, second = (lambda: ran.append("a")), (lambda: ran.append("b"))
    token.add_callback(first)
    token.add_callback(second)
    token.add_callback(first)
    token.remove_callback(first)  # one of the two additions
    token.remove_callback(lambda: None)  # never added: nothing happens
    token.cancel()
    token.cancel()
    assert ran == ["a", "b"]


def calls_reply(count: int) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"c{i}", name="count", arguments="{}") for i in range(count)],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


@pytest.mark.parametrize(("cap", "calls"), [(10, 1_000), (None, 250)])
async def test_tool_calls_past_the_cap_are_not_run(cap: int | None, calls: int) -> None:
    ran: list[int] = []

    def count() -> str:
        """Count a call."""
        ran.append(1)
        return "counted"

    options: dict[str, Any] = {} if cap is None else {"max_tool_calls": cap}
    agent = AssistantAgent(
        "a", model_client=ReplayChatCompletionClient([calls_reply(calls)]), tools=[count], **options
    )
    result = await agent.run(task="go")
    limit = DEFAULT_MAX_TOOL_CALLS if cap is None else cap
    assert len(ran) == limit
    (executed,) = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert len(executed.content) == calls
    refused = executed.content[limit:]
    assert all(r.is_error and "ToolCallLimitError" in r.content for r in refused)
    assert not any(r.is_error for r in executed.content[:limit])
    # The cap is part of the agent's config.
    if cap is not None:
        plain = AssistantAgent("p", model_client=ReplayChatCompletionClient([]), max_tool_calls=cap)
        data = dump_component(plain).model_dump(mode="json")
        assert data["config"]["max_tool_calls"] == cap
        assert load_component(data)._max_tool_calls == cap


@pytest.mark.parametrize(("bad", "error"), [(0, InvalidArgumentError), ("9", ArgumentTypeError)])
def test_a_bad_tool_call_cap_is_named(bad: Any, error: type) -> None:
    with pytest.raises(error, match="max_tool_calls"):
        AssistantAgent("a", model_client=ReplayChatCompletionClient([]), max_tool_calls=bad)


async def test_an_mcp_result_over_the_cap_is_an_error_result() -> None:
    assert DEFAULT_MAX_RESULT_BYTES == 1024 * 1024
    async with McpWorkbench(STDIO) as workbench:
        big = await workbench.call_tool("big", {"megabytes": 2})
        assert big.is_error
        assert "McpResultTooLarge" in big.to_text() and len(big.to_text()) < 1_000
        small = await workbench.call_tool("big", {"megabytes": 0.5})
        assert not small.is_error and len(small.to_text()) == 512 * 1024
    async with McpWorkbench(STDIO, max_result_bytes=3 * 1024 * 1024) as roomy:
        assert not (await roomy.call_tool("big", {"megabytes": 2})).is_error
    data = dump_component(McpWorkbench(STDIO, max_result_bytes=10)).model_dump(mode="json")
    assert data["config"]["max_result_bytes"] == 10


def test_mcp_transports_share_one_documented_read_timeout() -> None:
    assert DEFAULT_MCP_READ_TIMEOUT == 300
    assert StdioServerParams(command="x").read_timeout_seconds == DEFAULT_MCP_READ_TIMEOUT
    assert SseServerParams(url="http://127.0.0.1/sse").sse_read_timeout == DEFAULT_MCP_READ_TIMEOUT
    http = StreamableHttpServerParams(url="http://127.0.0.1/mcp")
    assert http.sse_read_timeout == DEFAULT_MCP_READ_TIMEOUT


@pytest.mark.parametrize(
    "prompt", ["{roles:>400000000}", "{history:.99999999}", "{roles:{participants}}"]
)
def test_a_huge_format_spec_is_refused_at_load_without_allocating(prompt: str) -> None:
    agents = [AssistantAgent(name, model_client=ReplayChatCompletionClient(["x"])) for name in "ab"]
    team = SelectorGroupChat(agents, ReplayChatCompletionClient(["a"]), max_turns=1)
    data = dump_component(team).model_dump(mode="json")
    data["config"]["selector_prompt"] = prompt
    tracemalloc.start()
    try:
        with pytest.raises(ComponentLoadError, match="selector_prompt"):
            load_component(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50 * 1024 * 1024  # formatting it would take 400 MB
