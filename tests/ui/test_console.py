"""Console: the exact text printed for teams, agents, tool calls, streamed chunks and the
summary block (format of the seed 002 Console examples), and the value it returns."""

from __future__ import annotations

import asyncio
import doctest
import io
import re
import types
from collections.abc import AsyncGenerator, Sequence
from typing import Literal

import pytest

import flowlib.ui
import flowlib.ui._console
from flowlib.agents import AssistantAgent, UserProxyAgent
from flowlib.base import CancellationToken, Response, TaskResult
from flowlib.conditions import TextMentionTermination
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    SelectSpeakerEvent,
    TextMessage,
    UserInputRequestedEvent,
)
from flowlib.models import (
    CreateResult,
    FunctionCall,
    Image,
    ReplayChatCompletionClient,
    RequestUsage,
)
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import ScriptedAgent
from flowlib.ui import Console, UserInputManager

GUARD = 10  # seconds; only reached when the feature under test is broken
SEARCH_RESULT = "AutoGen is a programming framework for building multi-agent applications."
PNG = Image(b"\x89PNG\r\n\x1a\n" + bytes(16))

Item = BaseAgentEvent | BaseChatMessage | TaskResult | Response


def masked(text: str) -> str:
    """The printed text with the (timing-dependent) duration masked."""
    return re.sub(r"Duration: \d+\.\d\d seconds", "Duration: X.XX seconds", text)


def web_search(query: str) -> str:
    """Find information on the web."""
    return SEARCH_RESULT


def tool_call_client(*, answer: str | None = None) -> ReplayChatCompletionClient:
    """A model that calls ``web_search`` (61/16 tokens), then optionally answers (93/32)."""
    call = FunctionCall(
        id="call_fSp5", arguments='{"query":"AutoGen information"}', name="web_search"
    )
    script: list[str | CreateResult] = [
        CreateResult(
            finish_reason="function_calls",
            content=[call],
            usage=RequestUsage(prompt_tokens=61, completion_tokens=16),
            cached=False,
        )
    ]
    if answer is not None:
        script.append(
            CreateResult(
                finish_reason="stop",
                content=answer,
                usage=RequestUsage(prompt_tokens=93, completion_tokens=32),
                cached=False,
            )
        )
    return ReplayChatCompletionClient(script)


def text_result(text: str, prompt: int, completion: int) -> CreateResult:
    return CreateResult(
        finish_reason="stop",
        content=text,
        usage=RequestUsage(prompt_tokens=prompt, completion_tokens=completion),
        cached=False,
    )


async def scripted(*items: Item) -> AsyncGenerator[Item, None]:
    for item in items:
        yield item


class Writes(io.StringIO):
    """A text stream that records each write and each flush."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


# ---------------------------------------------------------------------------------------
# Teams
# ---------------------------------------------------------------------------------------


async def test_team_run_prints_a_header_and_the_text_of_each_message() -> None:
    team = RoundRobinGroupChat(
        [
            ScriptedAgent("primary", ["Golden leaves dance,\nwhispering as they fall."]),
            ScriptedAgent("critic", ["Lovely. APPROVE"]),
        ],
        max_turns=2,
    )
    out = io.StringIO()
    result = await Console(team.run_stream(task="Write a short poem."), output=out)
    assert out.getvalue() == (
        "---------- user ----------\n"
        "Write a short poem.\n"
        "---------- primary ----------\n"
        "Golden leaves dance,\n"
        "whispering as they fall.\n"
        "---------- critic ----------\n"
        "Lovely. APPROVE\n"
    )
    assert isinstance(result, TaskResult)
    assert [m.to_text() for m in result.messages] == [
        "Write a short poem.",
        "Golden leaves dance,\nwhispering as they fall.",
        "Lovely. APPROVE",
    ]
    assert result.stop_reason == "Maximum number of turns 2 reached."


async def test_team_summary_counts_messages_and_gives_the_finish_reason() -> None:
    team = RoundRobinGroupChat(
        [ScriptedAgent("a", ["one"]), ScriptedAgent("b", ["two"])], max_turns=2
    )
    out = io.StringIO()
    result = await Console(team.run_stream(task="go"), output_stats=True, output=out)
    assert masked(out.getvalue()) == (
        "---------- user ----------\n"
        "go\n"
        "---------- a ----------\n"
        "one\n"
        "---------- b ----------\n"
        "two\n"
        "---------- Summary ----------\n"
        "Number of messages: 3\n"
        "Finish reason: Maximum number of turns 2 reached.\n"
        "Total prompt tokens: 0\n"
        "Total completion tokens: 0\n"
        "Duration: X.XX seconds\n"
    )
    assert len(result.messages) == 3


async def test_team_of_model_agents_prints_usage_lines_and_token_totals() -> None:
    # The primary/critic poem example of seed 002, on scripted models.
    primary = AssistantAgent(
        "primary",
        model_client=ReplayChatCompletionClient(
            [text_result("Leaves fall.", 28, 99), text_result("Leaves fall, softly.", 294, 195)]
        ),
    )
    critic = AssistantAgent(
        "critic",
        model_client=ReplayChatCompletionClient(
            [text_result("Add sound.", 144, 157), text_result("APPROVE", 506, 4)]
        ),
    )
    team = RoundRobinGroupChat(
        [primary, critic], termination_condition=TextMentionTermination("APPROVE")
    )
    out = io.StringIO()
    result = await Console(
        team.run_stream(task="Write a short poem about the fall season."),
        output_stats=True,
        output=out,
    )
    assert masked(out.getvalue()) == (
        "---------- user ----------\n"
        "Write a short poem about the fall season.\n"
        "---------- primary ----------\n"
        "Leaves fall.\n"
        "[Prompt tokens: 28, Completion tokens: 99]\n"
        "---------- critic ----------\n"
        "Add sound.\n"
        "[Prompt tokens: 144, Completion tokens: 157]\n"
        "---------- primary ----------\n"
        "Leaves fall, softly.\n"
        "[Prompt tokens: 294, Completion tokens: 195]\n"
        "---------- critic ----------\n"
        "APPROVE\n"
        "[Prompt tokens: 506, Completion tokens: 4]\n"
        "---------- Summary ----------\n"
        "Number of messages: 5\n"
        "Finish reason: Text 'APPROVE' mentioned\n"
        "Total prompt tokens: 972\n"
        "Total completion tokens: 455\n"
        "Duration: X.XX seconds\n"
    )
    assert result.stop_reason == "Text 'APPROVE' mentioned"


async def test_usage_lines_only_with_output_stats() -> None:
    agent = AssistantAgent(
        "assistant", model_client=ReplayChatCompletionClient([text_result("Hi!", 5, 1)])
    )
    out = io.StringIO()
    await Console(agent.run_stream(task="Hello"), output=out)
    assert out.getvalue() == (
        "---------- user ----------\nHello\n---------- assistant ----------\nHi!\n"
    )


async def test_team_events_are_printed_with_their_text() -> None:
    team = RoundRobinGroupChat([ScriptedAgent("a", ["one"])], max_turns=1, emit_team_events=True)
    out = io.StringIO()
    result = await Console(team.run_stream(task="go"), output=out)
    events = [m for m in result.messages if isinstance(m, SelectSpeakerEvent)]
    assert events, "the team emits SelectSpeakerEvents"
    header = f"---------- {events[0].source} ----------\n['a']\n"
    assert out.getvalue() == (
        "---------- user ----------\ngo\n" + header + "---------- a ----------\none\n"
    )


# ---------------------------------------------------------------------------------------
# An agent's tool calls (seed 002: "Streaming Messages" and the LangChain tool example)
# ---------------------------------------------------------------------------------------


async def test_agent_tool_call_stream_prints_calls_results_and_summary() -> None:
    agent = AssistantAgent("assistant", model_client=tool_call_client(), tools=[web_search])
    out = io.StringIO()
    response = await Console(
        agent.on_messages_stream(
            [TextMessage(content="Find information on AutoGen", source="user")],
            CancellationToken(),
        ),
        output_stats=True,
        output=out,
    )
    assert masked(out.getvalue()) == (
        "---------- assistant ----------\n"
        "[FunctionCall(id='call_fSp5', arguments='{\"query\":\"AutoGen information\"}', "
        "name='web_search')]\n"
        "[Prompt tokens: 61, Completion tokens: 16]\n"
        "---------- assistant ----------\n"
        f"[FunctionExecutionResult(content='{SEARCH_RESULT}', name='web_search', "
        "call_id='call_fSp5', is_error=False)]\n"
        "---------- assistant ----------\n"
        f"{SEARCH_RESULT}\n"
        "---------- Summary ----------\n"
        "Number of inner messages: 2\n"
        "Total prompt tokens: 61\n"
        "Total completion tokens: 16\n"
        "Duration: X.XX seconds\n"
    )
    assert isinstance(response, Response)
    assert response.chat_message.to_text() == SEARCH_RESULT
    assert [type(m).__name__ for m in response.inner_messages or ()] == [
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
    ]


async def test_agent_reflection_adds_the_answer_and_its_usage_to_the_totals() -> None:
    answer = "AutoGen is a programming framework designed for building multi-agent applications."
    agent = AssistantAgent(
        "assistant",
        model_client=tool_call_client(answer=answer),
        tools=[web_search],
        reflect_on_tool_use=True,
    )
    out = io.StringIO()
    await Console(
        agent.on_messages_stream(
            [TextMessage(content="Find information on AutoGen", source="user")],
            CancellationToken(),
        ),
        output_stats=True,
        output=out,
    )
    printed = masked(out.getvalue())
    assert printed.endswith(
        "---------- assistant ----------\n"
        f"{answer}\n"
        "[Prompt tokens: 93, Completion tokens: 32]\n"
        "---------- Summary ----------\n"
        "Number of inner messages: 2\n"
        "Total prompt tokens: 154\n"
        "Total completion tokens: 48\n"
        "Duration: X.XX seconds\n"
    )
    assert printed.count("---------- assistant ----------\n") == 3


async def test_agent_run_stream_summary_is_a_task_result_summary() -> None:
    agent = AssistantAgent("assistant", model_client=tool_call_client(), tools=[web_search])
    out = io.StringIO()
    result = await Console(agent.run_stream(task="Find"), output_stats=True, output=out)
    assert isinstance(result, TaskResult)
    assert masked(out.getvalue()).endswith(
        "---------- Summary ----------\n"
        "Number of messages: 4\n"
        "Finish reason: None\n"
        "Total prompt tokens: 61\n"
        "Total completion tokens: 16\n"
        "Duration: X.XX seconds\n"
    )


# ---------------------------------------------------------------------------------------
# Streamed chunks
# ---------------------------------------------------------------------------------------


def streaming_agent(text: str) -> AssistantAgent:
    return AssistantAgent(
        "assistant",
        model_client=ReplayChatCompletionClient([text_result(text, 0, 0)]),
        model_client_stream=True,
    )


async def test_chunks_are_printed_inline_under_one_header_and_not_repeated() -> None:
    text = "Two cities are Buenos Aires and São Paulo."
    out = Writes()
    result = await Console(
        streaming_agent(text).run_stream(task="Name two cities in South America"), output=out
    )
    assert out.getvalue() == (
        "---------- user ----------\n"
        "Name two cities in South America\n"
        "---------- assistant ----------\n"
        f"{text}\n"
    )
    chunk_writes = out.writes[out.writes.index("---------- assistant ----------\n") + 1 : -1]
    assert chunk_writes == [
        "Two ",
        "cities ",
        "are ",
        "Buenos ",
        "Aires ",
        "and ",
        "São ",
        "Paulo.",
    ]
    assert out.writes[-1] == "\n"  # the complete message only ends the line
    assert out.flushes == len(out.writes)  # live: every write is flushed
    assert result.messages[-1].to_text() == text


async def test_streamed_answer_gets_its_usage_line_and_the_response_summary() -> None:
    agent = AssistantAgent(
        "assistant",
        model_client=ReplayChatCompletionClient([text_result("Lima and Quito.", 12, 4)]),
        model_client_stream=True,
    )
    out = io.StringIO()
    response = await Console(
        agent.on_messages_stream(
            [TextMessage(content="Name two capitals", source="user")], CancellationToken()
        ),
        output_stats=True,
        output=out,
    )
    assert masked(out.getvalue()) == (
        "---------- assistant ----------\n"
        "Lima and Quito.\n"
        "[Prompt tokens: 12, Completion tokens: 4]\n"
        "---------- Summary ----------\n"
        "Number of inner messages: 0\n"
        "Total prompt tokens: 12\n"
        "Total completion tokens: 4\n"
        "Duration: X.XX seconds\n"
    )
    assert response.chat_message.to_text() == "Lima and Quito."


async def test_chunks_without_a_message_id_are_matched_by_source_and_text() -> None:
    stream = scripted(
        ModelClientStreamingChunkEvent(content="Hel", source="a"),
        ModelClientStreamingChunkEvent(content="lo", source="a"),
        TextMessage(content="Hello", source="a"),
        ModelClientStreamingChunkEvent(content="draft", source="b"),
        TextMessage(content="final text", source="b"),
        TaskResult(messages=[], stop_reason="done"),
    )
    out = io.StringIO()
    await Console(stream, output=out)
    assert out.getvalue() == (
        "---------- a ----------\n"
        "Hello\n"
        "---------- b ----------\n"
        "draft\n"
        "---------- b ----------\n"
        "final text\n"
    )


async def test_interleaved_chunk_streams_each_get_a_header_when_they_resume() -> None:
    stream = scripted(
        ModelClientStreamingChunkEvent(content="A1 ", source="a", full_message_id="ma"),
        ModelClientStreamingChunkEvent(content="B1 ", source="b", full_message_id="mb"),
        ModelClientStreamingChunkEvent(content="A2", source="a", full_message_id="ma"),
        TextMessage(id="ma", content="A1 A2", source="a"),
        ModelClientStreamingChunkEvent(content="B2", source="b", full_message_id="mb"),
        TextMessage(id="mb", content="B1 B2", source="b"),
        TaskResult(messages=[], stop_reason=None),
    )
    out = io.StringIO()
    await Console(stream, output=out)
    assert out.getvalue() == (
        "---------- a ----------\n"
        "A1 \n"
        "---------- b ----------\n"
        "B1 \n"
        "---------- a ----------\n"
        "A2\n"
        "---------- b ----------\n"
        "B2\n"
    )


async def test_an_open_chunk_line_is_ended_before_the_summary() -> None:
    stream = scripted(
        ModelClientStreamingChunkEvent(content="partial", source="a", full_message_id="m"),
        TaskResult(messages=[], stop_reason="cut"),
    )
    out = io.StringIO()
    await Console(stream, output_stats=True, output=out)
    assert masked(out.getvalue()) == (
        "---------- a ----------\n"
        "partial\n"
        "---------- Summary ----------\n"
        "Number of messages: 0\n"
        "Finish reason: cut\n"
        "Total prompt tokens: 0\n"
        "Total completion tokens: 0\n"
        "Duration: X.XX seconds\n"
    )


# ---------------------------------------------------------------------------------------
# User input
# ---------------------------------------------------------------------------------------


async def test_user_input_request_is_not_printed_and_the_prompt_waits_for_the_console() -> None:
    out = io.StringIO()
    seen_when_asked: list[str] = []

    def human(prompt: str) -> str:
        seen_when_asked.append(out.getvalue())
        return "APPROVE"

    manager = UserInputManager(human)
    team = RoundRobinGroupChat(
        [
            ScriptedAgent("assistant", ["In endless blue where whispers play."]),
            UserProxyAgent("user_proxy", input_func=manager.get_wrapped_callback()),
        ],
        termination_condition=TextMentionTermination("APPROVE"),
    )
    result = await asyncio.wait_for(
        Console(
            team.run_stream(task="Write a 4-line poem about the ocean."),
            user_input_manager=manager,
            output=out,
        ),
        GUARD,
    )
    assert out.getvalue() == (
        "---------- user ----------\n"
        "Write a 4-line poem about the ocean.\n"
        "---------- assistant ----------\n"
        "In endless blue where whispers play.\n"
        "---------- user_proxy ----------\n"
        "APPROVE\n"
    )
    assert seen_when_asked == [
        out.getvalue().removesuffix("---------- user_proxy ----------\nAPPROVE\n")
    ]
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "TextMessage",
        "UserInputRequestedEvent",
        "TextMessage",
    ]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_wrapped_callback_waits_until_the_request_is_notified(
    kind: Literal["sync", "async"],
) -> None:
    prompts: list[str] = []

    def sync_human(prompt: str) -> str:
        prompts.append(prompt)
        return "yes"

    async def async_human(prompt: str, token: CancellationToken | None) -> str:
        prompts.append(prompt)
        return "yes"

    manager = UserInputManager(sync_human if kind == "sync" else async_human)
    agent = UserProxyAgent("user_proxy", input_func=manager.get_wrapped_callback())
    stream = agent.on_messages_stream(
        [TextMessage(content="Ok?", source="user")], CancellationToken()
    )
    request = await anext(stream)
    assert isinstance(request, UserInputRequestedEvent)
    answer = asyncio.ensure_future(anext(stream))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not answer.done() and prompts == []  # held back until the console saw the request
    manager.notify_event_received(request.request_id)
    response = await asyncio.wait_for(answer, GUARD)
    assert isinstance(response, Response)
    assert response.chat_message.to_text() == "yes"
    assert prompts == ["Enter your response: "]
    await stream.aclose()


async def test_cancelling_a_held_back_request_cancels_the_input() -> None:
    manager = UserInputManager(lambda prompt: "never")
    agent = UserProxyAgent("user_proxy", input_func=manager.get_wrapped_callback())
    token = CancellationToken()
    stream = agent.on_messages_stream([TextMessage(content="Ok?", source="user")], token)
    await anext(stream)
    answer = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(answer, GUARD)
    await stream.aclose()


# ---------------------------------------------------------------------------------------
# Any message type
# ---------------------------------------------------------------------------------------


class WeatherEvent(BaseAgentEvent):
    city: str
    degrees: int
    type: Literal["WeatherEvent"] = "WeatherEvent"

    def to_text(self) -> str:
        return f"{self.city}: {self.degrees}°C"


async def test_custom_events_print_their_to_text() -> None:
    stream = scripted(
        WeatherEvent(city="Lima", degrees=19, source="forecaster"),
        TaskResult(messages=[], stop_reason=None),
    )
    out = io.StringIO()
    await Console(stream, output=out)
    assert out.getvalue() == "---------- forecaster ----------\nLima: 19°C\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("term_program", "output", "no_inline_images", "inline"),
    [
        (None, Terminal(), False, False),
        ("iTerm.app", Terminal(), False, True),
        ("iTerm.app", Terminal(), True, False),
        ("iTerm.app", io.StringIO(), False, False),  # not a terminal: no escape codes
    ],
)
async def test_images_are_drawn_inline_only_in_an_iterm_terminal(
    monkeypatch: pytest.MonkeyPatch,
    term_program: str | None,
    output: io.StringIO,
    no_inline_images: bool,
    inline: bool,
) -> None:
    if term_program is None:
        monkeypatch.delenv("TERM_PROGRAM", raising=False)
    else:
        monkeypatch.setenv("TERM_PROGRAM", term_program)
    message = MultiModalMessage(content=["Look:", PNG], source="user")
    await Console(
        scripted(message, TaskResult(messages=[message])),
        no_inline_images=no_inline_images,
        output=output,
    )
    image = message.to_text(iterm=True).split("\n")[1] if inline else "<image>"
    assert output.getvalue() == f"---------- user ----------\nLook:\n{image}\n"


# ---------------------------------------------------------------------------------------
# Return value, output target, errors
# ---------------------------------------------------------------------------------------


async def test_returns_the_last_result_of_the_stream() -> None:
    first = TaskResult(messages=[], stop_reason="first")
    last = TaskResult(messages=[], stop_reason="last")
    assert await Console(scripted(first, last), output=io.StringIO()) is last


async def test_prints_to_stdout_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    team = RoundRobinGroupChat([ScriptedAgent("a", ["hi"])], max_turns=1)
    await Console(team.run_stream(task="go"))
    assert (
        capsys.readouterr().out == "---------- user ----------\ngo\n---------- a ----------\nhi\n"
    )


async def test_a_stream_without_a_result_is_an_error() -> None:
    with pytest.raises(ValueError, match="without a TaskResult or Response"):
        await Console(scripted(TextMessage(content="hi", source="a")), output=io.StringIO())


async def test_the_stream_is_closed_when_printing_fails() -> None:
    closed: list[bool] = []

    async def stream() -> AsyncGenerator[Item, None]:
        try:
            yield TextMessage(content="hi", source="a")
            yield TaskResult(messages=[])
        finally:
            closed.append(True)

    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await Console(stream(), output=Broken())
    assert closed == [True]


def test_ui_exports_match_all() -> None:
    assert flowlib.ui.__all__ == ["Console", "TerminalWriter", "UserInputManager", "escape_control"]
    # Submodules (flowlib.ui.internal, the names other flowlib packages import) are
    # attributes of the package once imported, not exports.
    public: Sequence[str] = [
        name
        for name, value in vars(flowlib.ui).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    ]
    assert sorted(set(public) - {"annotations"}) == sorted(flowlib.ui.__all__)


def test_docstring_examples_run() -> None:
    failures, tried = doctest.testmod(flowlib.ui._console)
    assert (failures, tried) == (0, tried) and tried > 0
