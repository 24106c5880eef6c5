"""AssistantAgent on a scripted model: the documented scenarios, tool calls, handoffs,
structured output, streaming, memory, state, errors and cancellation."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest
from pydantic import BaseModel

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken, Handoff, Response
from flowlib.errors import ArgumentTypeError, StateError
from flowlib.memory import ListMemory, MemoryContent
from flowlib.messages import (
    HandoffMessage,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from flowlib.model_context import BufferedChatCompletionContext, UnboundedChatCompletionContext
from flowlib.models import (
    AssistantMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Image,
    ModelInfo,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from flowlib.tools import FunctionTool

DEFAULT_SYSTEM = (
    "You are a helpful AI assistant. Solve tasks using your tools. Reply with TERMINATE "
    "when the task has been completed."
)
USAGE = RequestUsage(prompt_tokens=10, completion_tokens=5)


def calls(*function_calls: FunctionCall, thought: str | None = None) -> CreateResult:
    """A scripted model answer made of tool calls."""
    return CreateResult(
        finish_reason="function_calls",
        content=list(function_calls),
        usage=USAGE,
        cached=False,
        thought=thought,
    )


def call(name: str, arguments: object = None, call_id: str | None = None) -> FunctionCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return FunctionCall(id=call_id or f"call_{name}", arguments=text, name=name)


def no_function_calling() -> ModelInfo:
    return ModelInfo(
        vision=False,
        function_calling=False,
        json_output=False,
        family="unknown",
        structured_output=False,
    )


async def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"The weather in {city} is 73 degrees and Sunny."


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# --- Appendix B scenarios ----------------------------------------------------------------


async def test_scenario_1_run_returns_task_and_answer() -> None:
    client = ReplayChatCompletionClient(["New York City and Toronto. TERMINATE"])
    agent = AssistantAgent(name="assistant", model_client=client)

    result = await agent.run(task="Name two cities in North America.")

    assert result.stop_reason is None
    assert [type(m) for m in result.messages] == [TextMessage, TextMessage]
    user, answer = result.messages
    assert (user.source, user.to_text()) == ("user", "Name two cities in North America.")
    assert isinstance(answer, TextMessage)
    assert (answer.source, answer.content) == ("assistant", "New York City and Toronto. TERMINATE")
    assert answer.models_usage is not None
    assert client.requests[0] == [
        SystemMessage(content=DEFAULT_SYSTEM),
        UserMessage(content="Name two cities in North America.", source="user"),
    ]
    assert await agent.model_context.get_messages() == [
        UserMessage(content="Name two cities in North America.", source="user"),
        AssistantMessage(content="New York City and Toronto. TERMINATE", source="assistant"),
    ]


async def test_scenario_2_tool_call_gives_request_execution_and_summary() -> None:
    client = ReplayChatCompletionClient([calls(call("get_weather", {"city": "New York"}))])
    agent = AssistantAgent("assistant", client, tools=[get_weather])

    result = await agent.run(task="What is the weather in New York?")

    kinds = [type(m) for m in result.messages]
    assert kinds == [
        TextMessage,
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        ToolCallSummaryMessage,
    ]
    request, execution, summary = result.messages[1:]
    assert isinstance(request, ToolCallRequestEvent)
    assert request.models_usage == USAGE
    assert isinstance(execution, ToolCallExecutionEvent)
    expected = FunctionExecutionResult(
        content="The weather in New York is 73 degrees and Sunny.",
        name="get_weather",
        call_id="call_get_weather",
        is_error=False,
    )
    assert execution.content == [expected]
    assert isinstance(summary, ToolCallSummaryMessage)
    assert summary.content == "The weather in New York is 73 degrees and Sunny."
    assert summary.tool_calls == request.content
    assert summary.results == [expected]
    assert summary.source == "assistant"
    # The tool was offered to the model with its schema.
    (offered,) = client.request_args[0]["tools"]
    assert offered.name == "get_weather"
    assert offered.description == "Get the weather for a city."
    # The calls and results are in the context for the next turn.
    history = await agent.model_context.get_messages()
    assert history[1:] == [
        AssistantMessage(content=request.content, source="assistant"),
        FunctionExecutionResultMessage(content=[expected]),
    ]


async def test_scenario_3_reflection_gives_text_message() -> None:
    client = ReplayChatCompletionClient(
        [calls(call("get_weather", {"city": "Paris"})), "It is sunny in Paris."]
    )
    agent = AssistantAgent("assistant", client, tools=[get_weather], reflect_on_tool_use=True)

    result = await agent.run(task="Weather in Paris?")

    final = result.messages[-1]
    assert isinstance(final, TextMessage)
    assert final.content == "It is sunny in Paris."
    assert [type(m) for m in result.messages[1:-1]] == [
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
    ]
    # The reflection call saw the calls and results, and was offered no tools.
    reflection = client.requests[1]
    assert isinstance(reflection[-2], AssistantMessage)
    assert isinstance(reflection[-1], FunctionExecutionResultMessage)
    assert client.request_args[1]["tools"] == []


async def test_a_reflection_answered_with_tool_calls_is_refused() -> None:
    # The reflection call offers no tools; a model that calls one anyway is an error,
    # and the tool is not run a second time.
    client = ReplayChatCompletionClient(
        [calls(call("get_weather", {"city": "Paris"})), calls(call("get_weather", {}))]
    )
    agent = AssistantAgent("assistant", client, tools=[get_weather], reflect_on_tool_use=True)

    with pytest.raises(ValueError, match="reflection call"):
        await agent.run(task="Weather in Paris?")
    assert client.request_args[1]["tools"] == []
    assert len(client.requests) == 2


async def test_scenario_4_max_tool_iterations_counter() -> None:
    counter = 0

    def increment_counter() -> str:
        """Increment the counter by 1 and return the current value."""
        nonlocal counter
        counter += 1
        return f"Counter incremented to: {counter}"

    def get_counter() -> str:
        """Get the current counter value."""
        return f"Current counter value: {counter}"

    client = ReplayChatCompletionClient(
        [
            calls(call("increment_counter", call_id="1")),
            calls(call("increment_counter", call_id="2")),
            calls(call("increment_counter", call_id="3")),
            "The final counter value is 3.",
        ]
    )
    agent = AssistantAgent(
        name="assistant",
        model_client=client,
        tools=[increment_counter, get_counter],
        max_tool_iterations=5,
        reflect_on_tool_use=True,
    )

    result = await agent.run(task="Increment the counter 3 times and then tell me the final value.")

    assert counter == 3
    kinds = [type(m).__name__ for m in result.messages]
    assert kinds == ["TextMessage"] + ["ToolCallRequestEvent", "ToolCallExecutionEvent"] * 3 + [
        "TextMessage"
    ]
    assert result.messages[-1].to_text() == "The final counter value is 3."
    assert len(client.requests) == 4
    # Every loop call offered the tools; each saw the previous results.
    assert all(len(args["tools"]) == 2 for args in client.request_args)
    last = client.requests[3][-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    assert last.content[0].content == "Counter incremented to: 3"


async def test_scenario_5_streaming_chunks_are_not_kept() -> None:
    text = "Two cities in North America are New York City and Toronto. TERMINATE"
    client = ReplayChatCompletionClient([text])
    agent = AssistantAgent("assistant", client, model_client_stream=True)

    streamed = [item async for item in agent.run_stream(task="Name two cities in North America.")]

    chunks = [item for item in streamed if isinstance(item, ModelClientStreamingChunkEvent)]
    assert len(chunks) > 1
    assert "".join(chunk.content for chunk in chunks) == text
    final = streamed[-2]
    assert isinstance(final, TextMessage)
    assert final.content == text
    assert {chunk.full_message_id for chunk in chunks} == {final.id}
    result = streamed[-1]
    assert [type(m) for m in result.messages] == [TextMessage, TextMessage]  # type: ignore[union-attr]
    # Chunks come right before the final message, after the task.
    assert streamed.index(chunks[0]) == 1


async def test_streaming_on_messages_stream_excludes_chunks_from_inner_messages() -> None:
    client = ReplayChatCompletionClient(["Buenos Aires and São Paulo."])
    agent = AssistantAgent("assistant", client, model_client_stream=True)

    items = [
        item
        async for item in agent.on_messages_stream(
            [TextMessage(content="Name two cities in South America", source="user")],
            CancellationToken(),
        )
    ]

    response = items[-1]
    assert isinstance(response, Response)
    assert response.inner_messages == []
    assert any(isinstance(item, ModelClientStreamingChunkEvent) for item in items)


class AgentResponse(BaseModel):
    thoughts: str
    response: Literal["happy", "sad", "neutral"]


async def test_scenario_6_structured_output() -> None:
    answer = '{"thoughts": "The user says so.", "response": "happy"}'
    client = ReplayChatCompletionClient([answer])
    agent = AssistantAgent("assistant", client, output_content_type=AgentResponse)

    result = await agent.run(task="I am happy.")

    final = result.messages[-1]
    assert isinstance(final, StructuredMessage)
    assert type(final) is StructuredMessage[AgentResponse]
    assert final.content == AgentResponse(thoughts="The user says so.", response="happy")
    assert client.request_args[0]["json_output"] is AgentResponse
    assert agent.produced_message_types[0] is StructuredMessage[AgentResponse]


async def test_scenario_6_structured_output_with_strict_tool_reflects_as_json() -> None:
    def sentiment_analysis(text: str) -> str:
        """Given a text, return the sentiment."""
        return "happy" if "happy" in text else "sad" if "sad" in text else "neutral"

    tool = FunctionTool(sentiment_analysis, description="Sentiment Analysis", strict=True)
    client = ReplayChatCompletionClient(
        [
            calls(call("sentiment_analysis", {"text": "I am happy today!"})),
            '{"thoughts": "The user is upbeat.", "response": "happy"}',
        ]
    )
    agent = AssistantAgent(
        name="assistant",
        model_client=client,
        tools=[tool],
        system_message="Use the tool to analyze sentiment.",
        output_content_type=AgentResponse,
        output_content_type_format="{response}: {thoughts}",
    )

    result = await agent.run(task="I am happy today!")

    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    assert execution.content[0].content == "happy"
    final = result.messages[-1]
    assert isinstance(final, StructuredMessage)
    assert final.content.response == "happy"
    assert final.to_text() == "happy: The user is upbeat."
    assert client.request_args[0]["tools"][0].schema["strict"] is True
    assert all(args["json_output"] is AgentResponse for args in client.request_args)
    # The reflection answer is kept as JSON text in the context.
    last = (await agent.model_context.get_messages())[-1]
    assert isinstance(last, AssistantMessage)
    assert json.loads(str(last.content))["response"] == "happy"


async def test_structured_output_without_reflection_returns_summary() -> None:
    client = ReplayChatCompletionClient([calls(call("add", {"a": 1, "b": 2}))])
    agent = AssistantAgent(
        "assistant",
        client,
        tools=[add],
        output_content_type=AgentResponse,
        reflect_on_tool_use=False,
    )
    result = await agent.run(task="1+2")
    assert isinstance(result.messages[-1], ToolCallSummaryMessage)
    assert result.messages[-1].content == "3"


async def test_structured_output_that_does_not_parse_raises_and_keeps_context() -> None:
    client = ReplayChatCompletionClient(["not json"])
    agent = AssistantAgent("assistant", client, output_content_type=AgentResponse)
    with pytest.raises(ValueError, match="not a valid `AgentResponse`"):
        await agent.run(task="hi")
    assert await agent.model_context.get_messages() == []


async def test_scenario_7_buffered_context_forgets() -> None:
    client = ReplayChatCompletionClient(
        [
            "Two cities in North America are New York City and Toronto.",
            "That's great! Blue is often associated with calmness.",
            "No, you didn't ask a question.",
        ]
    )
    agent = AssistantAgent(
        name="assistant",
        model_client=client,
        model_context=BufferedChatCompletionContext(buffer_size=2),
        system_message="You are a helpful assistant.",
    )

    await agent.run(task="Name two cities in North America.")
    await agent.run(task="My favorite color is blue.")
    result = await agent.run(task="Did I ask you any question?")

    assert result.messages[-1].to_text() == "No, you didn't ask a question."
    assert client.requests[2] == [
        SystemMessage(content="You are a helpful assistant."),
        AssistantMessage(
            content="That's great! Blue is often associated with calmness.", source="assistant"
        ),
        UserMessage(content="Did I ask you any question?", source="user"),
    ]


async def test_scenario_8_list_memory() -> None:
    memory = ListMemory()
    await memory.add(MemoryContent(content="User likes pizza.", mime_type="text/plain"))
    await memory.add(MemoryContent(content="User dislikes cheese.", mime_type="text/plain"))
    client = ReplayChatCompletionClient(["How about a pizza without cheese?"])
    agent = AssistantAgent(
        name="assistant",
        model_client=client,
        memory=[memory],
        system_message="You are a helpful assistant.",
    )

    result = await agent.run(task="What is a good dinner idea?")

    assert [type(m) for m in result.messages] == [TextMessage, MemoryQueryEvent, TextMessage]
    event = result.messages[1]
    assert isinstance(event, MemoryQueryEvent)
    assert [item.content for item in event.content] == [
        "User likes pizza.",
        "User dislikes cheese.",
    ]
    request = client.requests[0]
    assert request[0] == SystemMessage(content="You are a helpful assistant.")
    assert request[1] == UserMessage(content="What is a good dinner idea?", source="user")
    memory_message = request[2]
    assert isinstance(memory_message, SystemMessage)
    assert "1. User likes pizza." in memory_message.content
    assert "2. User dislikes cheese." in memory_message.content


async def test_empty_memory_emits_no_event() -> None:
    client = ReplayChatCompletionClient(["ok"])
    agent = AssistantAgent("assistant", client, memory=[ListMemory()])
    result = await agent.run(task="hi")
    assert [type(m) for m in result.messages] == [TextMessage, TextMessage]


# --- tool execution ----------------------------------------------------------------------


async def test_tool_that_raises_becomes_an_error_result() -> None:
    def explode(x: int) -> int:
        """Always fails."""
        raise RuntimeError(f"boom {x}")

    client = ReplayChatCompletionClient([calls(call("explode", {"x": 1}))])
    agent = AssistantAgent("assistant", client, tools=[explode])

    result = await agent.run(task="go")

    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    (error,) = execution.content
    assert error.is_error is True
    assert error.content == "Error: boom 1"
    assert result.messages[-1].to_text() == "Error: boom 1"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"a": "x", "b": 2}', "a"),
        ('{"a": 1}', "b"),
    ],
)
async def test_bad_arguments_become_error_results(arguments: str, expected: str) -> None:
    client = ReplayChatCompletionClient([calls(call("add", arguments))])
    agent = AssistantAgent("assistant", client, tools=[add])

    result = await agent.run(task="add")

    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    (error,) = execution.content
    assert error.is_error is True
    assert error.content.startswith("Error: ")
    assert expected in error.content


async def test_unknown_tool_becomes_an_error_result() -> None:
    client = ReplayChatCompletionClient(
        [calls(call("add", {"a": 1, "b": 2}), call("subtract", {"a": 1}))]
    )
    agent = AssistantAgent("assistant", client, tools=[add])

    result = await agent.run(task="go")

    summary = result.messages[-1]
    assert isinstance(summary, ToolCallSummaryMessage)
    ok, missing = summary.results
    assert (ok.content, ok.is_error) == ("3", False)
    assert missing.is_error is True
    assert "no tool named `subtract`" in missing.content
    assert "`add`" in missing.content
    assert summary.content == f"3\n{missing.content}"


async def test_empty_arguments_string_means_no_arguments() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    client = ReplayChatCompletionClient([calls(FunctionCall(id="1", arguments="", name="ping"))])
    agent = AssistantAgent("assistant", client, tools=[ping])
    result = await agent.run(task="ping")
    assert result.messages[-1].to_text() == "pong"


async def test_parallel_tool_calls_run_concurrently() -> None:
    first_started, second_started = asyncio.Event(), asyncio.Event()

    async def first() -> str:
        """Waits for the second tool."""
        first_started.set()
        await asyncio.wait_for(second_started.wait(), timeout=5)
        return "first done"

    async def second() -> str:
        """Waits for the first tool."""
        second_started.set()
        await asyncio.wait_for(first_started.wait(), timeout=5)
        return "second done"

    client = ReplayChatCompletionClient([calls(call("first"), call("second"))])
    agent = AssistantAgent("assistant", client, tools=[first, second])

    result = await agent.run(task="both")

    assert result.messages[-1].to_text() == "first done\nsecond done"


async def test_tool_returning_none_is_summarised_as_none() -> None:
    def approve() -> None:
        """Approve."""

    client = ReplayChatCompletionClient([calls(call("approve"))])
    agent = AssistantAgent("assistant", client, tools=[approve])
    result = await agent.run(task="approve")
    summary = result.messages[-1]
    assert isinstance(summary, ToolCallSummaryMessage)
    assert summary.results[0].content == "None"
    assert summary.content == "None"


async def test_summary_format_placeholders() -> None:
    def fail() -> str:
        """Fails."""
        raise ValueError("nope")

    client = ReplayChatCompletionClient([calls(call("add", {"a": 2, "b": 3}), call("fail"))])
    agent = AssistantAgent(
        "assistant",
        client,
        tools=[add, fail],
        tool_call_summary_format="{tool_name}({arguments}) -> {result} [error={is_error}]",
    )
    result = await agent.run(task="go")
    assert result.messages[-1].to_text() == (
        'add({"a": 2, "b": 3}) -> 5 [error=False]\nfail({}) -> Error: nope [error=True]'
    )


async def test_summary_formatter_overrides_format() -> None:
    def formatter(function_call: FunctionCall, result: FunctionExecutionResult) -> str:
        if result.is_error:
            return f"{function_call.name} failed with {function_call.arguments}"
        return f"Tool {function_call.name} executed successfully."

    client = ReplayChatCompletionClient(
        [calls(call("add", {"a": 2, "b": 3}), call("add", {"a": 1}, call_id="2"))]
    )
    agent = AssistantAgent(
        "assistant",
        client,
        tools=[add],
        tool_call_summary_format="ignored {result}",
        tool_call_summary_formatter=formatter,
    )
    result = await agent.run(task="go")
    assert result.messages[-1].to_text() == (
        'Tool add executed successfully.\nadd failed with {"a": 1}'
    )


async def test_tools_may_be_tool_objects_and_async_functions() -> None:
    tool = FunctionTool(add, description="Adds.", name="plus")
    client = ReplayChatCompletionClient(
        [calls(call("plus", {"a": 1, "b": 1}), call("get_weather", {"city": "Oslo"}))]
    )
    agent = AssistantAgent("assistant", client, tools=[tool, get_weather])
    result = await agent.run(task="go")
    assert result.messages[-1].to_text() == "2\nThe weather in Oslo is 73 degrees and Sunny."
    assert [t.name for t in agent.tools] == ["plus", "get_weather"]


async def test_iteration_limit_without_reflection_summarises_every_call() -> None:
    client = ReplayChatCompletionClient(
        [
            calls(call("add", {"a": 1, "b": 1}, call_id="1")),
            calls(call("add", {"a": 2, "b": 2}, call_id="2")),
        ]
    )
    agent = AssistantAgent("assistant", client, tools=[add], max_tool_iterations=2)
    result = await agent.run(task="go")
    summary = result.messages[-1]
    assert isinstance(summary, ToolCallSummaryMessage)
    assert summary.content == "2\n4"
    assert [c.id for c in summary.tool_calls] == ["1", "2"]
    assert len(client.requests) == 2


async def test_iteration_limit_with_reflection_makes_one_call_without_tools() -> None:
    client = ReplayChatCompletionClient(
        [
            calls(call("add", {"a": 1, "b": 1}, call_id="1")),
            calls(call("add", {"a": 2, "b": 2}, call_id="2")),
            "Done: 4.",
        ]
    )
    agent = AssistantAgent(
        "assistant", client, tools=[add], max_tool_iterations=2, reflect_on_tool_use=True
    )
    result = await agent.run(task="go")
    assert result.messages[-1].to_text() == "Done: 4."
    assert [len(args["tools"]) for args in client.request_args] == [1, 1, 0]


async def test_text_answer_ends_the_loop_early() -> None:
    client = ReplayChatCompletionClient([calls(call("add", {"a": 1, "b": 1})), "It is 2."])
    agent = AssistantAgent("assistant", client, tools=[add], max_tool_iterations=5)
    result = await agent.run(task="go")
    assert result.messages[-1].to_text() == "It is 2."
    assert client.remaining == 0


async def test_thought_is_surfaced_as_event() -> None:
    client = ReplayChatCompletionClient(
        [
            calls(call("add", {"a": 1, "b": 2}), thought="I should add."),
            CreateResult(
                finish_reason="stop", content="3", usage=USAGE, cached=False, thought="Easy."
            ),
        ]
    )
    agent = AssistantAgent("assistant", client, tools=[add], reflect_on_tool_use=True)
    result = await agent.run(task="1+2")
    kinds = [type(m) for m in result.messages]
    assert kinds == [
        TextMessage,
        ThoughtEvent,
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        ThoughtEvent,
        TextMessage,
    ]
    assert [m.to_text() for m in result.messages if isinstance(m, ThoughtEvent)] == [
        "I should add.",
        "Easy.",
    ]
    history = await agent.model_context.get_messages()
    assert isinstance(history[1], AssistantMessage)
    assert history[1].thought == "I should add."


async def test_tool_receives_the_cancellation_token() -> None:
    seen: list[CancellationToken] = []

    async def probe(token: CancellationToken) -> str:
        """Records its token."""
        seen.append(token)
        return "ok"

    client = ReplayChatCompletionClient([calls(call("probe"))])
    agent = AssistantAgent("assistant", client, tools=[probe])
    token = CancellationToken()
    await agent.on_messages([TextMessage(content="go", source="user")], token)
    assert seen == [token]


# --- handoffs ----------------------------------------------------------------------------


async def test_handoff_runs_other_calls_first_and_passes_context() -> None:
    ran: list[str] = []

    async def lookup(city: str) -> str:
        """Look something up."""
        await asyncio.sleep(0.01)
        ran.append(city)
        return f"found {city}"

    client = ReplayChatCompletionClient(
        [calls(call("lookup", {"city": "Oslo"}), call("transfer_to_bob"))]
    )
    agent = AssistantAgent(
        "alice",
        client,
        tools=[lookup],
        handoffs=[Handoff(target="bob", message="Over to you, Bob.")],
        metadata={"team": "blue"},
    )

    result = await agent.run(task="go")

    assert ran == ["Oslo"]
    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    assert [r.content for r in execution.content] == ["found Oslo", "Over to you, Bob."]
    handoff = result.messages[-1]
    assert isinstance(handoff, HandoffMessage)
    assert (handoff.target, handoff.content, handoff.source) == (
        "bob",
        "Over to you, Bob.",
        "alice",
    )
    assert handoff.metadata == {"team": "blue"}
    assert handoff.context == [
        AssistantMessage(content=[call("lookup", {"city": "Oslo"})], source="alice"),
        FunctionExecutionResultMessage(content=[execution.content[0]]),
    ]
    assert HandoffMessage in agent.produced_message_types


async def test_handoff_alone_has_empty_context_and_string_target() -> None:
    client = ReplayChatCompletionClient([calls(call("transfer_to_user"))])
    agent = AssistantAgent("lazy_assistant", client, handoffs=["user"])

    result = await agent.run(task="What is the weather in New York?")

    assert [type(m) for m in result.messages] == [
        TextMessage,
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        HandoffMessage,
    ]
    handoff = result.messages[-1]
    assert isinstance(handoff, HandoffMessage)
    assert handoff.target == "user"
    assert handoff.context == []
    assert handoff.content == Handoff(target="user").message
    assert [t.name for t in client.request_args[0]["tools"]] == ["transfer_to_user"]


async def test_only_first_of_two_handoffs_is_performed() -> None:
    client = ReplayChatCompletionClient([calls(call("transfer_to_bob"), call("transfer_to_carol"))])
    agent = AssistantAgent("alice", client, handoffs=["bob", "carol"])

    result = await agent.run(task="go")

    handoff = result.messages[-1]
    assert isinstance(handoff, HandoffMessage)
    assert handoff.target == "bob"
    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    performed, skipped = execution.content
    assert performed.is_error is False
    assert skipped.is_error is True
    assert "not performed" in skipped.content
    # The model context answers both calls (a model API needs a result per call).
    last = (await agent.model_context.get_messages())[-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    assert len(last.content) == 2


async def test_handoff_context_includes_earlier_iterations() -> None:
    client = ReplayChatCompletionClient(
        [calls(call("add", {"a": 1, "b": 1}, call_id="1")), calls(call("transfer_to_bob"))]
    )
    agent = AssistantAgent("alice", client, tools=[add], handoffs=["bob"], max_tool_iterations=3)
    result = await agent.run(task="go")
    handoff = result.messages[-1]
    assert isinstance(handoff, HandoffMessage)
    assert [type(m) for m in handoff.context] == [AssistantMessage, FunctionExecutionResultMessage]


async def test_incoming_handoff_context_is_added_before_the_message() -> None:
    client = ReplayChatCompletionClient(["Got it."])
    agent = AssistantAgent("bob", client, system_message=None)
    context = [
        AssistantMessage(content=[call("lookup")], source="alice"),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(content="x", name="lookup", call_id="call_lookup")]
        ),
    ]
    incoming = HandoffMessage(content="Over to you.", target="bob", context=context, source="alice")

    await agent.on_messages([incoming], CancellationToken())

    assert client.requests[0] == [
        *context,
        UserMessage(content="Over to you.", source="alice"),
    ]


# --- options -----------------------------------------------------------------------------


async def test_system_message_none_sends_no_system_message() -> None:
    client = ReplayChatCompletionClient(["Paris."])
    agent = AssistantAgent("assistant", client, system_message=None)
    await agent.run(task="What is the capital of France?")
    assert client.requests[0] == [
        UserMessage(content="What is the capital of France?", source="user")
    ]
    assert agent.system_message is None


async def test_metadata_and_usage_on_produced_messages() -> None:
    client = ReplayChatCompletionClient(["hello there"])
    agent = AssistantAgent("assistant", client, metadata={"run": "7"})
    response = await agent.on_messages(
        [TextMessage(content="hi", source="user")], CancellationToken()
    )
    assert response.chat_message.metadata == {"run": "7"}
    assert response.chat_message.models_usage == client.total_usage()
    assert client.total_usage().completion_tokens == 2


async def test_images_are_replaced_for_a_model_without_vision() -> None:
    info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=True,
        family="unknown",
        structured_output=True,
    )
    client = ReplayChatCompletionClient(["A pixel."], model_info=info)
    agent = AssistantAgent("assistant", client, system_message=None)
    image = Image.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    await agent.on_messages(
        [MultiModalMessage(content=["What is this?", image], source="user")], CancellationToken()
    )
    assert client.requests[0] == [UserMessage(content="What is this?\n[image]", source="user")]
    # The context keeps the image for later (for example a vision model after a reset).
    stored = (await agent.model_context.get_messages())[0]
    assert isinstance(stored.content, list)


async def test_produced_message_types() -> None:
    client = ReplayChatCompletionClient([])
    assert AssistantAgent("a", client).produced_message_types == (TextMessage,)
    assert AssistantAgent("a", client, tools=[add], handoffs=["b"]).produced_message_types == (
        TextMessage,
        ToolCallSummaryMessage,
        HandoffMessage,
    )


async def test_defaults() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient([]))
    assert agent.description == "An agent that provides assistance with ability to use tools."
    assert agent.system_message == DEFAULT_SYSTEM
    assert isinstance(agent.model_context, UnboundedChatCompletionContext)


# --- validation --------------------------------------------------------------------------


def test_duplicate_tool_names_raise() -> None:
    with pytest.raises(ValueError, match=r"tool names must be unique.*`add`"):
        AssistantAgent("a", ReplayChatCompletionClient([]), tools=[add, add])


def test_duplicate_handoff_names_raise() -> None:
    with pytest.raises(ValueError, match=r"handoff names must be unique.*`transfer_to_bob`"):
        AssistantAgent("a", ReplayChatCompletionClient([]), handoffs=["bob", Handoff(target="bob")])


def test_handoff_named_like_a_tool_raises() -> None:
    def transfer_to_bob() -> str:
        """A tool with a handoff's name."""
        return ""

    with pytest.raises(ValueError, match="same name as a tool"):
        AssistantAgent(
            "a", ReplayChatCompletionClient([]), tools=[transfer_to_bob], handoffs=["bob"]
        )


def test_max_tool_iterations_below_one_raises() -> None:
    with pytest.raises(ValueError, match="max_tool_iterations must be at least 1"):
        AssistantAgent("a", ReplayChatCompletionClient([]), max_tool_iterations=0)


@pytest.mark.parametrize("option", ["tools", "handoffs"])
def test_tools_on_a_model_without_function_calling_raise(option: str) -> None:
    client = ReplayChatCompletionClient([], model_info=no_function_calling())
    kwargs: dict[str, object] = {"tools": [add]} if option == "tools" else {"handoffs": ["b"]}
    with pytest.raises(ValueError, match="does not support function calling"):
        AssistantAgent("a", client, **kwargs)  # type: ignore[arg-type]
    AssistantAgent("a", client)  # no tools: fine


def test_workbench_of_the_wrong_type_is_a_named_type_error() -> None:
    with pytest.raises(ArgumentTypeError, match="workbench takes a Workbench"):
        AssistantAgent("a", ReplayChatCompletionClient([]), workbench=object())  # type: ignore[arg-type]


def test_wrong_types_raise_type_errors() -> None:
    client = ReplayChatCompletionClient([])
    with pytest.raises(TypeError, match="tools must be"):
        AssistantAgent("a", client, tools=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="handoffs must be"):
        AssistantAgent("a", client, handoffs=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="output_content_type"):
        AssistantAgent("a", client, output_content_type=dict)  # type: ignore[arg-type]


def test_name_must_be_an_identifier() -> None:
    with pytest.raises(ValueError, match="identifier"):
        AssistantAgent("my agent", ReplayChatCompletionClient([]))


# --- errors, state, reset, cancellation ----------------------------------------------------


async def test_exhausted_script_raises_and_agent_stays_usable() -> None:
    client = ReplayChatCompletionClient(["first answer"])
    agent = AssistantAgent("assistant", client, system_message=None)
    await agent.run(task="one")
    before = await agent.model_context.get_messages()

    with pytest.raises(ReplayExhaustedError, match="No more mock responses"):
        await agent.run(task="two")
    assert isinstance(ReplayExhaustedError("x"), ValueError)
    # The failed turn left no trace: retrying the same task does not duplicate it.
    assert await agent.model_context.get_messages() == before

    client.reset()
    result = await agent.run(task="two")
    assert result.messages[-1].to_text() == "first answer"
    assert client.requests[0] == [
        *before,
        UserMessage(content="two", source="user"),
    ]

    await agent.on_reset(CancellationToken())
    client.reset()
    await agent.run(task="three")
    assert client.requests[0] == [UserMessage(content="three", source="user")]


async def test_failure_after_tool_calls_rolls_back_the_whole_turn() -> None:
    client = ReplayChatCompletionClient([calls(call("add", {"a": 1, "b": 1}))])
    agent = AssistantAgent("assistant", client, tools=[add], reflect_on_tool_use=True)
    with pytest.raises(ReplayExhaustedError):
        await agent.run(task="go")
    assert await agent.model_context.get_messages() == []


async def test_state_round_trip_reverts_the_conversation() -> None:
    client = ReplayChatCompletionClient(["a1", "a2", "a3"])
    agent = AssistantAgent("assistant", client, system_message=None)
    await agent.run(task="q1")
    state = json.loads(json.dumps(await agent.save_state()))
    assert state["type"] == "AssistantAgentState"
    assert state["version"] == "1.0.0"
    await agent.run(task="q2")

    await agent.load_state(state)
    await agent.run(task="q3")

    assert client.requests[2] == [
        UserMessage(content="q1", source="user"),
        AssistantMessage(content="a1", source="assistant"),
        UserMessage(content="q3", source="user"),
    ]
    fresh = AssistantAgent("assistant", ReplayChatCompletionClient([]))
    await fresh.load_state(state)
    assert len(await fresh.model_context.get_messages()) == 2


async def test_load_state_rejects_foreign_state() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient([]))
    with pytest.raises(StateError, match=r"AssistantAgent\.save_state"):
        await agent.load_state({"type": "Other", "llm_context": {}})
    with pytest.raises(StateError):
        await agent.load_state({"type": "AssistantAgentState"})
    with pytest.raises(StateError, match=r"version '2\.0\.0'"):
        await agent.load_state(
            {"type": "AssistantAgentState", "version": "2.0.0", "llm_context": {}}
        )


async def test_load_state_accepts_autogen_shaped_state() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient([]))
    await agent.load_state(
        {
            "type": "AssistantAgentState",
            "version": "1.0.0",
            "llm_context": {
                "messages": [{"content": "hi", "source": "user", "type": "UserMessage"}]
            },
        }
    )
    assert await agent.model_context.get_messages() == [UserMessage(content="hi", source="user")]


async def test_reset_clears_preloaded_context() -> None:
    preloaded = [UserMessage(content="remember me", source="user")]
    client = ReplayChatCompletionClient(["ok"])
    agent = AssistantAgent(
        "assistant",
        client,
        model_context=UnboundedChatCompletionContext(initial_messages=preloaded),
        system_message=None,
    )
    assert await agent.model_context.get_messages() == preloaded
    await agent.on_reset(CancellationToken())
    assert await agent.model_context.get_messages() == []


async def test_cancelled_token_raises_cancelled_error() -> None:
    client = ReplayChatCompletionClient(["never"])
    agent = AssistantAgent("assistant", client)
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await agent.on_messages([TextMessage(content="hi", source="user")], token)
    assert await agent.model_context.get_messages() == []
    assert client.remaining == 1


async def test_cancel_during_model_call() -> None:
    client = ReplayChatCompletionClient(["slow"], latency=5)
    agent = AssistantAgent("assistant", client)
    token = CancellationToken()
    task = asyncio.ensure_future(
        agent.on_messages([TextMessage(content="hi", source="user")], token)
    )
    await asyncio.sleep(0.01)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await agent.model_context.get_messages() == []


async def test_cancel_during_tool_calls_cancels_every_call() -> None:
    started = asyncio.Event()
    finished: list[str] = []

    async def slow(tag: str) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(5)
        finished.append(tag)
        return tag

    client = ReplayChatCompletionClient(
        [calls(call("slow", {"tag": "a"}, call_id="1"), call("slow", {"tag": "b"}, call_id="2"))]
    )
    agent = AssistantAgent("assistant", client, tools=[slow])
    token = CancellationToken()
    task = asyncio.ensure_future(
        agent.on_messages([TextMessage(content="go", source="user")], token)
    )
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert finished == []
    assert await agent.model_context.get_messages() == []


async def test_cancel_during_streaming() -> None:
    client = ReplayChatCompletionClient(["one two three four"])
    agent = AssistantAgent("assistant", client, model_client_stream=True)
    token = CancellationToken()
    seen = 0
    with pytest.raises(asyncio.CancelledError):
        async for item in agent.on_messages_stream(
            [TextMessage(content="count", source="user")], token
        ):
            if isinstance(item, ModelClientStreamingChunkEvent):
                seen += 1
                token.cancel()
    assert seen == 1
    assert await agent.model_context.get_messages() == []


async def test_abandoned_stream_is_undone_by_the_next_call() -> None:
    client = ReplayChatCompletionClient([calls(call("add", {"a": 1, "b": 1})), "fresh answer"])
    agent = AssistantAgent("assistant", client, tools=[add], system_message=None)
    stream = agent.on_messages_stream(
        [TextMessage(content="abandoned", source="user")], CancellationToken()
    )
    async for item in stream:
        if isinstance(item, ToolCallRequestEvent):
            break  # the stream is left suspended, not closed
    # Saving now gives the state from before the unfinished turn.
    assert (await agent.save_state())["llm_context"]["messages"] == []

    await agent.run(task="again")
    await stream.aclose()  # closing it late must not undo the new turn

    assert client.requests[1] == [UserMessage(content="again", source="user")]
    assert await agent.model_context.get_messages() == [
        UserMessage(content="again", source="user"),
        AssistantMessage(content="fresh answer", source="assistant"),
    ]


async def test_closing_a_stream_early_undoes_its_turn() -> None:
    client = ReplayChatCompletionClient([calls(call("add", {"a": 1, "b": 1}))])
    agent = AssistantAgent("assistant", client, tools=[add])
    stream = agent.on_messages_stream(
        [TextMessage(content="go", source="user")], CancellationToken()
    )
    async for item in stream:
        if isinstance(item, ToolCallExecutionEvent):
            break
    await stream.aclose()
    assert await agent.model_context.get_messages() == []


def test_memory_must_be_a_list() -> None:
    with pytest.raises(TypeError, match=r"memory=\[\.\.\.\]"):
        AssistantAgent("a", ReplayChatCompletionClient([]), memory=ListMemory())  # type: ignore[arg-type]
