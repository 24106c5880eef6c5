"""BaseChatAgent, FunctionAgent and the base types (Handoff, CancellationToken, TaskResult)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

import pytest

from flowlib.agents import BaseChatAgent, FunctionAgent
from flowlib.base import CancellationToken, Handoff, Response, TaskResult
from flowlib.errors import AgentError
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    StopMessage,
    TextMessage,
    ThoughtEvent,
)


class Streamer(BaseChatAgent):
    """Streams two chunks and a thought, then answers with the count of new messages."""

    def __init__(self, name: str = "streamer") -> None:
        super().__init__(name, "streams")
        self.calls: list[list[str]] = []

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        async for item in self.on_messages_stream(messages, cancellation_token):
            if isinstance(item, Response):
                return item
        raise AssertionError("unreachable")

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        self.calls.append([m.to_text() for m in messages])
        yield ModelClientStreamingChunkEvent(content="he", source=self.name)
        yield ModelClientStreamingChunkEvent(content="llo", source=self.name)
        thought = ThoughtEvent(content="thinking", source=self.name)
        yield thought
        yield Response(
            chat_message=TextMessage(content=f"got {len(messages)}", source=self.name),
            inner_messages=[thought],
        )

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.calls.clear()


async def test_run_with_string_task_wraps_it_as_user_text_message() -> None:
    agent = Streamer()
    result = await agent.run(task="hi")
    assert isinstance(result, TaskResult)
    assert result.stop_reason is None
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "ThoughtEvent",
        "TextMessage",
    ]
    task = result.messages[0]
    assert isinstance(task, TextMessage)
    assert (task.source, task.content) == ("user", "hi")
    assert result.messages[-1].to_text() == "got 1"


async def test_run_stream_yields_chunks_but_result_drops_them() -> None:
    agent = Streamer()
    items = [item async for item in agent.run_stream(task="hi")]
    kinds = [type(i).__name__ for i in items]
    assert kinds == [
        "TextMessage",
        "ModelClientStreamingChunkEvent",
        "ModelClientStreamingChunkEvent",
        "ThoughtEvent",
        "TextMessage",
        "TaskResult",
    ]
    result = items[-1]
    assert isinstance(result, TaskResult)
    assert not any(isinstance(m, ModelClientStreamingChunkEvent) for m in result.messages)


class _NoResult(Streamer):
    """A run_stream that breaks the contract: it ends without a TaskResult."""

    async def run_stream(  # type: ignore[override]
        self, **kwargs: object
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        yield TextMessage(content="half a turn", source=self.name)


async def test_run_returns_what_run_stream_ends_with_or_says_it_did_not_end() -> None:
    streamed = [item async for item in Streamer().run_stream(task="hi")]
    ran = await Streamer().run(task="hi")
    assert isinstance(streamed[-1], TaskResult)
    assert [(type(m), m.to_text()) for m in ran.messages] == [
        (type(m), m.to_text()) for m in streamed[-1].messages
    ]
    with pytest.raises(AgentError, match="ended without yielding a TaskResult") as raised:
        await _NoResult("broken").run(task="hi")
    assert raised.value.agent == "broken"


async def test_task_forms_and_output_task_messages() -> None:
    agent = Streamer()
    message = TextMessage(content="one", source="boss")
    assert (await agent.run(task=message)).messages[0] is message
    both = [TextMessage(content="a", source="x"), StopMessage(content="b", source="y")]
    result = await agent.run(task=both, output_task_messages=False)
    assert result.messages[-1].to_text() == "got 2"
    assert all(m not in result.messages for m in both)
    result = await agent.run()
    assert result.messages[-1].to_text() == "got 0"
    assert agent.calls == [["one"], ["a", "b"], []]


async def test_bad_task_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match=r"`task\[1\]` is an int"):
        await Streamer().run(task=[TextMessage(content="a", source="x"), 3])  # type: ignore[list-item]


def test_agent_name_must_be_an_identifier() -> None:
    with pytest.raises(ValueError, match="not a valid Python identifier"):
        Streamer("my agent")


async def test_base_defaults_for_stateless_agents() -> None:
    agent = Streamer()
    state = await agent.save_state()
    await agent.load_state(state)
    token = CancellationToken()
    await agent.on_pause(token)
    await agent.on_resume(token)
    await agent.close()
    assert agent.name == "streamer" and agent.description == "streams"


def test_handoff_fills_defaults_from_target() -> None:
    handoff = Handoff(target="user")
    assert handoff.name == "transfer_to_user"
    assert handoff.description == "Handoff to user."
    assert "user" in handoff.message
    custom = Handoff(target="bob", name="escalate", message="over to you")
    assert (custom.name, custom.message) == ("escalate", "over to you")
    with pytest.raises(ValueError, match="not a valid identifier"):
        Handoff(target="bob", name="not valid")


async def test_cancellation_token_cancels_linked_futures_and_callbacks() -> None:
    token = CancellationToken()
    seen: list[str] = []
    token.add_callback(lambda: seen.append("cb"))
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    token.link_future(future)
    token.cancel()
    token.cancel()  # idempotent
    assert token.is_cancelled() and future.cancelled() and seen == ["cb"]
    late: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    token.link_future(late)
    assert late.cancelled()


async def test_removed_callback_does_not_run() -> None:
    token = CancellationToken()
    seen: list[int] = []

    def callback() -> None:
        seen.append(1)

    token.add_callback(callback)
    token.remove_callback(callback)
    token.cancel()
    assert seen == []


async def test_function_agent_sync_async_and_result_kinds() -> None:
    def shout(messages: Sequence[BaseChatMessage]) -> str:
        return messages[-1].to_text().upper()

    async def reply(messages: Sequence[BaseChatMessage]) -> BaseChatMessage:
        return StopMessage(content="stop", source="reply")

    def nothing(messages: Sequence[BaseChatMessage]) -> None:
        return None

    hi = [TextMessage(content="hi", source="user")]
    token = CancellationToken()
    response = await FunctionAgent(shout).on_messages(hi, token)
    assert isinstance(response.chat_message, TextMessage)
    assert (response.chat_message.content, response.chat_message.source) == ("HI", "shout")
    assert isinstance((await FunctionAgent(reply).on_messages(hi, token)).chat_message, StopMessage)
    assert await FunctionAgent(nothing).call(hi) is None
    with pytest.raises(TypeError, match="returned None"):
        await FunctionAgent(nothing).on_messages(hi, token)


async def test_function_agent_rejects_bad_functions_and_results() -> None:
    with pytest.raises(ValueError, match="lambda has no usable name"):
        FunctionAgent(lambda messages: "x")
    assert FunctionAgent(lambda messages: "x", name="step").name == "step"
    with pytest.raises(TypeError, match="one positional argument"):
        FunctionAgent(lambda: "x", name="nullary")  # type: ignore[arg-type, misc]

    def number(messages: Sequence[BaseChatMessage]) -> int:
        return 3

    with pytest.raises(TypeError, match="returned int"):
        await FunctionAgent(number).call([])  # type: ignore[arg-type]


def test_an_agent_that_names_no_message_types_replies_with_text_messages() -> None:
    class Echo(BaseChatAgent):
        async def on_messages(
            self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
        ) -> Response:
            return Response(chat_message=TextMessage(content="hi", source=self.name))

        async def on_reset(self, cancellation_token: CancellationToken) -> None:
            pass

    assert Echo("echo", "Echoes.").produced_message_types == (TextMessage,)
