"""OpenTelemetry spans, checked with the SDK's in-memory exporter: a team run, each node
turn, each model call (GenAI semantic conventions) and each tool call, parent to child
across nested teams and concurrent turns; nothing at all without an SDK provider."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply, ToolCall
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from opentelemetry.util._once import Once

from flowlib import _telemetry
from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import NodeExecutionError
from flowlib.models import (
    ChatCompletionCache,
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    InMemoryStore,
    LLMMessage,
    ModelInfo,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
    UserMessage,
)
from flowlib.models import _tracing as models_tracing
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat
from flowlib.tools import _tracing as tools_tracing


def _reset_global_provider() -> None:
    # The API allows setting the global provider once per process; tests put it back to
    # "not set" (as opentelemetry's own test utilities do) so other tests run untraced.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    try:
        yield spans
    finally:
        provider.shutdown()
        _reset_global_provider()


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def _call(name: str, arguments: str, call_id: str = "call-1") -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=arguments)],
        usage=RequestUsage(prompt_tokens=7, completion_tokens=3),
        cached=False,
    )


class Tree:
    """The finished spans, navigable by name and parent."""

    def __init__(self, spans: Sequence[ReadableSpan]) -> None:
        self.spans = list(spans)
        self.by_id = {s.context.span_id: s for s in self.spans if s.context is not None}

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{name}: {[s.name for s in self.spans]}"
        return found[0]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def parent_name(self, span: ReadableSpan) -> str | None:
        parent = self.parent(span)
        return parent.name if parent is not None else None

    def children(self, span: ReadableSpan) -> list[str]:
        assert span.context is not None
        return [
            s.name
            for s in sorted(self.spans, key=lambda s: s.start_time or 0)
            if s.parent is not None and s.parent.span_id == span.context.span_id
        ]


def test_without_an_sdk_nothing_is_traced_and_turns_run_as_is() -> None:
    assert _telemetry.tracer() is None
    team = RoundRobinGroupChat([AssistantAgent("a", ReplayChatCompletionClient(["x"]))])
    run_trace = team.trace
    run_trace.step_nodes.append(0)
    # No span and no log: the run observer keeps no scope of a turn, so the executor
    # runs the turn's stream as is.
    assert run_trace.turn_started(0) == []
    with tools_tracing.tool_call(name="t", call_id="1", description="", arguments={}) as call:
        assert call is tools_tracing._NO_TOOL_CALL


async def test_a_run_is_one_tree_with_nested_teams(exporter: InMemorySpanExporter) -> None:
    calc = AssistantAgent(
        "calc",
        model_client=ReplayChatCompletionClient([_call("add", '{"a": 1, "b": 2}'), "3"]),
        tools=[add],
        reflect_on_tool_use=True,
    )
    x = AssistantAgent("x", model_client=ReplayChatCompletionClient(["x1"]))
    y = AssistantAgent("y", model_client=ReplayChatCompletionClient(["y1"]))
    inner = RoundRobinGroupChat([x, y], max_turns=2, name="inner")
    builder = DiGraphBuilder().add_node(calc).add_node(inner)
    builder.add_edge("calc", "inner")
    flow = GraphFlow(builder.get_participants(), builder.build(), name="outer")

    result = await flow.run(task="go")

    tree = Tree(exporter.get_finished_spans())
    root = tree.one("invoke_workflow outer")
    assert tree.parent(root) is None
    assert root.attributes is not None
    assert root.attributes["flowlib.team.type"] == "GraphFlow"
    assert root.attributes["flowlib.run.stop_reason"] == result.stop_reason
    assert tree.children(root) == ["invoke_agent calc", "node_turn inner"]

    calc_turn = tree.one("invoke_agent calc")
    assert dict(calc_turn.attributes or {}) == {
        "flowlib.node.name": "calc",
        "flowlib.node.kind": "agent",
        "flowlib.turn.index": 1,
        "flowlib.activation.group": "entry",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "calc",
        "gen_ai.agent.description": "An agent that provides assistance with ability to use tools.",
        "gen_ai.provider.name": "replay",
    }
    assert tree.children(calc_turn) == ["chat replay", "execute_tool add", "chat replay"]
    first_chat = tree.named("chat replay")[0]
    attributes = first_chat.attributes or {}
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "replay"
    assert attributes["gen_ai.usage.input_tokens"] == 7
    assert attributes["gen_ai.usage.output_tokens"] == 3
    tool = tree.one("execute_tool add")
    assert (tool.attributes or {})["gen_ai.tool.call.id"] == "call-1"
    assert (tool.attributes or {})["gen_ai.tool.description"] == "Add two numbers."

    inner_turn = tree.one("node_turn inner")
    assert (inner_turn.attributes or {})["flowlib.node.kind"] == "team"
    assert (inner_turn.attributes or {})["flowlib.turn.index"] == 2
    inner_run = tree.one("invoke_workflow inner")
    assert tree.parent(inner_run) is inner_turn
    assert tree.children(inner_run) == ["invoke_agent x", "invoke_agent y"]
    assert tree.parent_name(tree.one("invoke_agent y")) == "invoke_workflow inner"
    assert all(s.status.status_code is StatusCode.UNSET for s in tree.spans)


async def test_concurrent_turns_each_own_their_model_calls(
    exporter: InMemorySpanExporter,
) -> None:
    """Fan-out: the two branches run at once (as tasks); each model call is the child of
    the turn that made it, and both turns are children of the run."""
    start = AssistantAgent("start", model_client=ReplayChatCompletionClient(["go"]))
    left = AssistantAgent("left", model_client=ReplayChatCompletionClient(["l"], latency=0.05))
    right = AssistantAgent("right", model_client=ReplayChatCompletionClient(["r"], latency=0.02))
    join = AssistantAgent("join", model_client=ReplayChatCompletionClient(["done"]))
    builder = DiGraphBuilder()
    for agent in (start, left, right, join):
        builder.add_node(agent)
    builder.add_edge("start", "left").add_edge("start", "right")
    builder.add_edge("left", "join").add_edge("right", "join")
    flow = GraphFlow(builder.get_participants(), builder.build(), name="fan")

    await flow.run(task="go")

    tree = Tree(exporter.get_finished_spans())
    root = tree.one("invoke_workflow fan")
    turns = {name: tree.one(f"invoke_agent {name}") for name in ("start", "left", "right", "join")}
    for turn in turns.values():
        assert tree.parent(turn) is root
        assert tree.children(turn) == ["chat replay"]
    # The branches overlapped in time: they really ran concurrently.
    left_turn, right_turn = turns["left"], turns["right"]
    assert left_turn.start_time is not None and right_turn.end_time is not None
    assert left_turn.start_time < right_turn.end_time
    assert (turns["join"].attributes or {})["flowlib.activation.group"] == "join"


async def test_failures_are_recorded_on_their_spans(exporter: InMemorySpanExporter) -> None:
    agent = AssistantAgent(
        "agent",
        model_client=ReplayChatCompletionClient([_call("explode", '{"reason": "x"}')]),
        tools=[explode],
    )
    broken = AssistantAgent("broken", model_client=ReplayChatCompletionClient([]))
    team = RoundRobinGroupChat([agent, broken], max_turns=2, name="team")

    with pytest.raises(NodeExecutionError):
        await team.run(task="go")

    tree = Tree(exporter.get_finished_spans())
    tool = tree.one("execute_tool explode")
    assert tool.status.status_code is StatusCode.ERROR
    assert "boom: x" in (tool.status.description or "")
    chat = [s for s in tree.named("chat replay") if tree.parent_name(s) == "invoke_agent broken"]
    assert chat and chat[0].status.status_code is StatusCode.ERROR
    assert tree.one("invoke_agent broken").status.status_code is StatusCode.ERROR
    assert tree.one("invoke_agent agent").status.status_code is StatusCode.UNSET
    assert tree.one("invoke_workflow team").status.status_code is StatusCode.ERROR


async def test_the_consumer_does_not_run_inside_flowlib_spans(
    exporter: InMemorySpanExporter,
) -> None:
    """Spans are current only while flowlib works, never between the items it streams."""
    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=ReplayChatCompletionClient(["1", "2"]))],
        max_turns=2,
        name="t",
    )
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("consumer") as consumer:
        seen = []
        async for _item in team.run_stream(task="go"):
            seen.append(trace.get_current_span())
        assert seen and all(span is consumer for span in seen)
    tree = Tree(exporter.get_finished_spans())
    assert tree.parent_name(tree.one("invoke_workflow t")) == "consumer"


async def test_model_calls_follow_the_genai_conventions_on_the_openai_sdk(
    exporter: InMemorySpanExporter, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("add", '{"a": 2, "b": 3}')], usage=(11, 4)),
        Reply("5", usage=(20, 1)),
    )
    client = OpenAIChatCompletionClient(
        "gpt-4o-mini", base_url=openai_server.base_url, api_key="test"
    )
    agent = AssistantAgent(
        "agent",
        model_client=client,
        tools=[add],
        model_client_stream=True,
        reflect_on_tool_use=True,
    )
    team = RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(2), name="solo")
    await team.run(task="2 + 3?")
    await client.close()

    tree = Tree(exporter.get_finished_spans())
    chats = tree.named("chat gpt-4o-mini")
    assert [tree.parent_name(s) for s in chats] == ["invoke_agent agent"] * 2
    first, second = (dict(s.attributes or {}) for s in chats)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "gpt-4o-mini"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (11, 4)
    assert (second["gen_ai.usage.input_tokens"], second["gen_ai.usage.output_tokens"]) == (20, 1)
    assert tree.parent_name(tree.one("execute_tool add")) == "invoke_agent agent"


async def test_a_team_run_by_a_tool_nests_under_the_tool_call(
    exporter: InMemorySpanExporter,
) -> None:
    from flowlib.tools import TeamTool

    x = AssistantAgent("x", model_client=ReplayChatCompletionClient(["x1"]))
    review = RoundRobinGroupChat([x], max_turns=1, name="review")
    boss = AssistantAgent(
        "boss",
        model_client=ReplayChatCompletionClient([_call("review", '{"task": "go"}'), "done"]),
        tools=[TeamTool(review, "review", "Reviews.")],
        reflect_on_tool_use=True,
    )
    await RoundRobinGroupChat([boss], max_turns=1, name="outer").run(task="start")

    tree = Tree(exporter.get_finished_spans())
    tool = tree.one("execute_tool review")
    assert tree.parent_name(tool) == "invoke_agent boss"
    inner = tree.one("invoke_workflow review")
    assert tree.parent(inner) is tool
    assert tree.children(inner) == ["invoke_agent x"]
    assert tree.children(tree.one("invoke_agent x")) == ["chat replay"]


# --- model clients of the user's own ---------------------------------------------------------


class EchoClient(ChatCompletionClient):
    """A client written by a user, straight on the abstract base: it answers with the
    last message's text."""

    model = "echo-1"

    def __init__(self) -> None:
        self.calls = 0

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        self.calls += 1
        usage = RequestUsage(prompt_tokens=len(messages), completion_tokens=1)
        text = str(messages[-1].content)
        return CreateResult(finish_reason="stop", content=text, usage=usage, cached=False)

    async def create_stream(
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        result = await self.create(messages)
        yield str(result.content)
        yield result

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    total_usage = actual_usage

    def count_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return len(messages)

    def remaining_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 1000

    @property
    def model_info(self) -> ModelInfo:
        return {
            "vision": False,
            "function_calling": False,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        }


class CountingReplay(ReplayChatCompletionClient):
    """A user's subclass of a flowlib client that overrides ``create`` and calls it."""

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        return await super().create(messages, **kwargs)


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
async def test_a_client_of_your_own_gets_its_chat_spans(
    exporter: InMemorySpanExporter, stream: bool
) -> None:
    agent = AssistantAgent("echo", model_client=EchoClient(), model_client_stream=stream)
    team = RoundRobinGroupChat([agent], max_turns=2, name="solo")

    await team.run(task="hello")

    tree = Tree(exporter.get_finished_spans())
    chats = tree.named("chat echo-1")
    assert len(chats) == 2
    for chat in chats:
        assert tree.parent_name(chat) == "invoke_agent echo"
        attributes = chat.attributes or {}
        assert attributes["gen_ai.provider.name"] == "EchoClient"
        assert attributes["gen_ai.usage.output_tokens"] == 1


async def test_a_subclass_of_a_flowlib_client_is_traced_once_per_call(
    exporter: InMemorySpanExporter,
) -> None:
    agent = AssistantAgent("r", model_client=CountingReplay(["one", "two"]))
    await RoundRobinGroupChat([agent], max_turns=2).run(task="go")
    assert len(Tree(exporter.get_finished_spans()).named("chat replay")) == 2


async def test_a_cache_traces_only_the_calls_its_client_makes(
    exporter: InMemorySpanExporter,
) -> None:
    client = ChatCompletionCache(ReplayChatCompletionClient(["Paris.", "Lyon."]), InMemoryStore())
    ask = [UserMessage(content="capital of France?", source="user")]
    first, again = await client.create(ask), await client.create(ask)
    assert first.content == again.content == "Paris." and again.cached
    assert [s.name for s in exporter.get_finished_spans()] == ["chat replay"]


def test_a_create_stream_that_is_not_an_async_generator_passes_through() -> None:
    class Odd(EchoClient):
        pass

    async def returns_a_list(self: Any, messages: Sequence[Any]) -> list[int]:
        return [1]

    traced = models_tracing.traced_create_stream(returns_a_list)  # type: ignore[arg-type]
    result = traced(Odd(), [])
    assert asyncio.run(result) == [1]  # type: ignore[arg-type]


# --- the GenAI semantic conventions, attribute by attribute --------------------------------


def _server_client(openai_server: OpenAIServer) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(
        "gpt-4o-mini",
        base_url=openai_server.base_url,
        api_key="test",
        temperature=0.2,
        max_tokens=64,
        seed=7,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
async def test_an_agent_alone_is_an_invoke_agent_span_over_its_chat_spans(
    exporter: InMemorySpanExporter, openai_server: OpenAIServer, stream: bool
) -> None:
    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("add", '{"a": 2, "b": 3}')], usage=(11, 4)),
        Reply("5", usage=(20, 1)),
    )
    client = _server_client(openai_server)
    agent = AssistantAgent(
        "adder",
        model_client=client,
        tools=[add],
        description="Adds numbers.",
        model_client_stream=stream,
        reflect_on_tool_use=True,
    )
    await agent.run(task="2 + 3?")
    await client.close()

    tree = Tree(exporter.get_finished_spans())
    turn = tree.one("invoke_agent adder")
    assert tree.parent(turn) is None
    assert dict(turn.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "adder",
        "gen_ai.agent.description": "Adds numbers.",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
    }
    assert tree.children(turn) == ["chat gpt-4o-mini", "execute_tool add", "chat gpt-4o-mini"]
    first, second = tree.named("chat gpt-4o-mini")
    host, port = openai_server.base_url.split("//")[1].split("/")[0].split(":")
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.seed": 7,
        "server.address": host,
        "server.port": int(port),
        "gen_ai.response.id": "chatcmpl-test",
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 4,
        # As the server sent it, not AutoGen's internal "function_calls".
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }
    assert dict(first.attributes or {}) == expected
    assert first.kind is trace.SpanKind.CLIENT
    assert (second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    tool = tree.one("execute_tool add")
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_0",
        "gen_ai.tool.description": "Add two numbers.",
        "gen_ai.tool.type": "function",
    }


async def test_a_team_is_an_invoke_workflow_span(
    exporter: InMemorySpanExporter, openai_server: OpenAIServer
) -> None:
    openai_server.enqueue(Reply("draft"), Reply("APPROVE"))
    client = _server_client(openai_server)
    writer = AssistantAgent("writer", model_client=client)
    critic = AssistantAgent("critic", model_client=client)
    team = RoundRobinGroupChat([writer, critic], max_turns=2, name="review")
    result = await team.run(task="write")
    await client.close()

    tree = Tree(exporter.get_finished_spans())
    run = tree.one("invoke_workflow review")
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "review",
        "flowlib.team.name": "review",
        "flowlib.team.type": "RoundRobinGroupChat",
        "flowlib.run.stop_reason": result.stop_reason,
        "flowlib.run.messages": 3,
    }
    assert tree.children(run) == ["invoke_agent writer", "invoke_agent critic"]
    critic_turn = tree.one("invoke_agent critic")
    attributes = dict(critic_turn.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes["flowlib.turn.index"] == 2
    assert tree.children(critic_turn) == ["chat gpt-4o-mini"]


async def test_a_failed_tool_and_a_failed_call_carry_error_type(
    exporter: InMemorySpanExporter, openai_server: OpenAIServer
) -> None:
    from openai_server import ErrorReply

    openai_server.enqueue(
        Reply(tool_calls=[ToolCall("explode", '{"reason": "x"}')]), ErrorReply(400, "bad")
    )
    client = OpenAIChatCompletionClient(
        "gpt-4o-mini", base_url=openai_server.base_url, api_key="test", max_retries=0
    )
    agent = AssistantAgent("risky", model_client=client, tools=[explode], reflect_on_tool_use=True)
    with pytest.raises(Exception, match="bad"):
        await agent.run(task="go")
    await client.close()

    tree = Tree(exporter.get_finished_spans())
    tool = tree.one("execute_tool explode")
    assert (tool.attributes or {})["error.type"] == "RuntimeError"
    assert tool.status.status_code is StatusCode.ERROR
    failed_chat = tree.named("chat gpt-4o-mini")[1]
    assert (failed_chat.attributes or {})["error.type"] == "openai.BadRequestError"
    assert failed_chat.status.status_code is StatusCode.ERROR
    turn = tree.one("invoke_agent risky")
    assert (turn.attributes or {})["error.type"] == "openai.BadRequestError"


async def test_run_and_turn_spans_are_an_observer_of_the_executor_trace(
    exporter: InMemorySpanExporter,
) -> None:
    """Issue 22.4: the run and turn spans come from the run observer the team adds to its
    executor's trace, not from wrapping streams: without it, only the model's spans."""
    from flowlib.graph.internal import RunSpans

    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=ReplayChatCompletionClient(["1", "2"]))],
        max_turns=1,
        name="t",
    )
    spans = [o for o in team.trace._observers if isinstance(o, RunSpans)]
    assert len(spans) == 1
    team.trace.remove_observer(spans[0])
    await team.run(task="go")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat replay"]
    assert not hasattr(_telemetry, "trace_team_run") and not hasattr(_telemetry, "GraphExecutor")


def test_model_calls_are_traced_one_way() -> None:
    """``ChatCompletionClient.__init_subclass__`` traces every client class, flowlib's own
    included: no module decorates a ``create`` by hand (that was a second way to trace)."""
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "flowlib"
    tracing = package / "models" / "_tracing.py"
    by_hand = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path != tracing
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "traced_create" in line
    ]
    assert by_hand == []
