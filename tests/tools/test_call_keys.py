"""Idempotency keys (``flowlib.tools.call_key()``): the same on every attempt of one call
(a retry, a resume from the store), different for every other call."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from flowlib.agents import AssistantAgent, FunctionAgent
from flowlib.checkpoint import InMemoryCheckpointStore
from flowlib.messages import BaseChatMessage, ToolCallExecutionEvent
from flowlib.models import CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.tools import NoCallKeyError, call_key
from flowlib.tools.mcp import McpWorkbench, StdioServerParams

SERVER = str(Path(__file__).parent / "mcp_key_server.py")


def _calls(*calls: tuple[str, str]) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id=f"call-{i}", name=name, arguments=arguments)
            for i, (name, arguments) in enumerate(calls)
        ],
        usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
        cached=False,
    )


def _assistant(tools: list[Any], script: list[Any]) -> AssistantAgent:
    return AssistantAgent(
        "buyer", model_client=ReplayChatCompletionClient(script), tools=tools, max_tool_iterations=3
    )


def _team(agent: Any, store: Any = None) -> GraphFlow:
    builder = DiGraphBuilder().add_node(agent)
    return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)


async def test_two_calls_of_one_tool_with_the_same_arguments_get_different_keys() -> None:
    seen: list[str] = []

    async def charge(cents: int) -> str:
        seen.append(call_key())
        return "ok"

    script = [_calls(("charge", '{"cents": 5}'), ("charge", '{"cents": 5}')), "done"]
    await _team(_assistant([charge], script)).run(task="buy", run_id="r")
    assert len(seen) == 2 and seen[0] != seen[1]
    assert all(len(key) == 64 for key in seen)


async def test_calls_in_later_model_responses_of_one_turn_get_new_keys() -> None:
    seen: list[str] = []

    async def charge(cents: int) -> str:
        seen.append(call_key())
        return "ok"

    script = [_calls(("charge", '{"cents": 5}')), _calls(("charge", '{"cents": 5}')), "done"]
    await _team(_assistant([charge], script)).run(task="buy", run_id="r")
    assert len(seen) == 2 and seen[0] != seen[1]


async def test_a_call_interrupted_and_resumed_has_the_same_key() -> None:
    """The first attempt is cancelled in the middle of the tool; a fresh team on the same
    store resumes the run and makes the call again, under the same key."""
    seen: list[str] = []
    entered = asyncio.Event()

    async def charge(cents: int) -> str:
        seen.append(call_key())
        if len(seen) == 1:
            entered.set()
            await asyncio.Event().wait()  # in flight when the run is cancelled
        return "ok"

    def script() -> list[Any]:
        return [_calls(("charge", '{"cents": 5}')), "done"]

    store = InMemoryCheckpointStore()
    first = asyncio.ensure_future(
        _team(_assistant([charge], script()), store).run(task="buy", run_id="r")
    )
    await entered.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    result = await _team(_assistant([charge], script()), store).run(run_id="r")
    assert result.messages[-1].to_text() == "done"
    assert len(seen) == 2 and seen[0] == seen[1]

    # Another run of the same flow: other keys.
    await _team(_assistant([charge], script()), store).run(task="buy", run_id="r2")
    assert len(seen) == 3 and seen[2] != seen[0]


async def test_function_node_turns_get_stable_keys_across_a_failure_and_resume() -> None:
    seen: list[tuple[str, str]] = []
    failed = []

    def step(messages: list[BaseChatMessage]) -> str:
        seen.append(("step", call_key()))
        if len(seen) == 2 and not failed:  # the second turn fails once
            failed.append(True)
            raise RuntimeError("flaky")
        return "again" if len(seen) < 4 else "stop"

    def team(store: Any) -> GraphFlow:
        node = FunctionAgent(step, name="step")
        builder = DiGraphBuilder().add_node(node)
        builder.add_edge(node, node, condition="again").set_entry_point(node)
        graph = builder.build()
        return GraphFlow(builder.get_participants(), graph, checkpoint_store=store, max_turns=9)

    store = InMemoryCheckpointStore()
    with pytest.raises(Exception, match="flaky"):
        await team(store).run(task="go", run_id="r")
    await team(store).run(run_id="r")
    keys = [key for _, key in seen]
    assert keys[1] == keys[2]  # the failed turn and its re-run
    assert len({keys[0], keys[1], keys[3]}) == 3  # every other turn differs


async def test_call_key_outside_a_call_is_a_clear_error() -> None:
    with pytest.raises(NoCallKeyError, match="only available inside a tool call"):
        call_key()


async def test_the_key_does_not_leak_to_the_consumer_of_the_stream() -> None:
    node = FunctionAgent(lambda messages: "hi", name="a")
    builder = DiGraphBuilder().add_node(node)
    team = GraphFlow(builder.get_participants(), builder.build())
    async for _ in team.run_stream(task="go"):
        with pytest.raises(NoCallKeyError):
            call_key()


async def test_mcp_tool_calls_send_the_key_in_the_request_meta() -> None:
    params = StdioServerParams(
        command=sys.executable, args=[SERVER, "stdio"], read_timeout_seconds=20
    )
    async with McpWorkbench(params) as workbench:  # one server process for the test
        agent = AssistantAgent(
            "buyer",
            model_client=ReplayChatCompletionClient([_calls(("key", "{}"), ("key", "{}")), "done"]),
            workbench=workbench,
            max_tool_iterations=3,
        )
        result = await _team(agent).run(task="go", run_id="r")
    executed = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    seen = [r.content.strip() for event in executed for r in event.content]
    assert len(seen) == 2 and seen[0] != seen[1], result.messages
    assert all(len(key) == 64 for key in seen), seen


async def test_map_instances_get_their_own_keys() -> None:
    seen: dict[str, str] = {}

    def research(messages: list[BaseChatMessage]) -> str:
        seen[messages[-1].to_text()] = call_key()
        return "found"

    def items(message: BaseChatMessage | None) -> list[str]:
        return ["a", "b", "c"]

    planner = FunctionAgent(lambda messages: "plan", name="planner")
    builder = DiGraphBuilder().add_node(planner)
    builder.add_node(FunctionAgent(research, name="researcher"))
    builder.add_edge(planner, "researcher", map=items)
    team = GraphFlow(builder.get_participants(), builder.build())
    await team.run(task="go", run_id="r")
    assert sorted(seen) == ["a", "b", "c"]
    assert len(set(seen.values())) == 3
