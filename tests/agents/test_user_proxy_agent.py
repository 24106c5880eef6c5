"""UserProxyAgent: sync and async input, the request event and its id, handoffs,
cancellation, errors, and a human approving inside a GraphFlow."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from _agents import Fake

from flowlib.agents import UserProxyAgent
from flowlib.base import CancellationToken, Response
from flowlib.conditions import TextMentionTermination
from flowlib.messages import HandoffMessage, TextMessage, UserInputRequestedEvent
from flowlib.teams import DiGraphBuilder, GraphFlow

GUARD = 10  # seconds; only reached when the feature under test is broken


def ask(text: str = "What is your name?") -> list[TextMessage]:
    return [TextMessage(content=text, source="user")]


async def test_sync_input_func_answer_becomes_a_text_message() -> None:
    prompts: list[str] = []
    threads: list[threading.Thread] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        threads.append(threading.current_thread())
        return "Ada"

    agent = UserProxyAgent("user_proxy", input_func=answer)
    response = await agent.on_messages(ask(), CancellationToken())
    assert isinstance(response.chat_message, TextMessage)
    assert (response.chat_message.content, response.chat_message.source) == ("Ada", "user_proxy")
    assert prompts == ["Enter your response: "]
    assert threads[0] is not threading.main_thread()  # the loop was not blocked


async def test_sync_input_runs_off_the_event_loop() -> None:
    released = threading.Event()

    def answer(prompt: str) -> str:
        # Only a running event loop can set the event: deadlocks if run on the loop.
        assert released.wait(GUARD)
        return "released"

    async def release() -> None:
        await asyncio.sleep(0.01)
        released.set()

    agent = UserProxyAgent("user_proxy", input_func=answer)
    releaser = asyncio.ensure_future(release())
    response = await asyncio.wait_for(agent.on_messages(ask(), CancellationToken()), GUARD)
    await releaser
    assert response.chat_message.to_text() == "released"


async def test_async_input_func_gets_prompt_and_token() -> None:
    seen: list[Any] = []

    async def answer(prompt: str, token: CancellationToken | None) -> str:
        seen.extend([prompt, token])
        return "from the web"

    token = CancellationToken()
    agent = UserProxyAgent("user_proxy", input_func=answer)
    response = await agent.on_messages(ask(), token)
    assert response.chat_message.to_text() == "from the web"
    assert seen == ["Enter your response: ", token]


async def test_callable_object_with_async_call_is_awaited() -> None:
    class Socket:
        async def __call__(self, prompt: str, token: CancellationToken | None) -> str:
            await asyncio.sleep(0)
            return "object"

    agent = UserProxyAgent("user_proxy", input_func=Socket())
    assert (await agent.on_messages(ask(), CancellationToken())).chat_message.to_text() == "object"


async def test_stream_yields_request_event_before_asking() -> None:
    order: list[str] = []

    def answer(prompt: str) -> str:
        order.append("asked")
        return "yes"

    agent = UserProxyAgent("user_proxy", input_func=answer)
    items = []
    async for item in agent.on_messages_stream(ask(), CancellationToken()):
        order.append(type(item).__name__)
        items.append(item)
    assert order == ["UserInputRequestedEvent", "asked", "Response"]
    event, response = items
    assert isinstance(event, UserInputRequestedEvent) and isinstance(response, Response)
    assert event.source == "user_proxy" and event.content == ""
    assert uuid.UUID(event.request_id)
    assert list(response.inner_messages or []) == [event]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_input_request_context_gives_the_event_request_id(kind: str) -> None:
    ids: list[str] = []

    def sync_answer(prompt: str) -> str:
        ids.append(UserProxyAgent.InputRequestContext.request_id())
        return "ok"

    async def async_answer(prompt: str, token: CancellationToken | None) -> str:
        ids.append(UserProxyAgent.InputRequestContext.request_id())
        return "ok"

    agent = UserProxyAgent("user_proxy", input_func=sync_answer if kind == "sync" else async_answer)
    first = await agent.run(task="one")
    second = await agent.run(task="two")
    events = [
        m for m in [*first.messages, *second.messages] if isinstance(m, UserInputRequestedEvent)
    ]
    assert [e.request_id for e in events] == ids
    assert ids[0] != ids[1]


async def test_request_id_outside_input_func_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="outside an input function"):
        UserProxyAgent.InputRequestContext.request_id()
    with pytest.raises(RuntimeError, match="cannot be instantiated"):
        UserProxyAgent.InputRequestContext()


async def test_run_result_holds_task_event_and_answer() -> None:
    agent = UserProxyAgent("user_proxy", input_func=lambda prompt: "APPROVE")
    result = await agent.run(task="Approve?")
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "UserInputRequestedEvent",
        "TextMessage",
    ]
    assert result.stop_reason is None


async def test_cancellation_aborts_a_blocking_async_input() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def never_answers(prompt: str, token: CancellationToken | None) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    token = CancellationToken()
    agent = UserProxyAgent("user_proxy", input_func=never_answers)
    call = asyncio.ensure_future(agent.on_messages(ask(), token))
    await asyncio.wait_for(started.wait(), GUARD)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, GUARD)
    assert cancelled.is_set()


async def test_cancellation_aborts_a_blocking_sync_input() -> None:
    entered = threading.Event()
    release = threading.Event()

    def blocking(prompt: str) -> str:
        entered.set()
        release.wait(GUARD)
        return "too late"

    token = CancellationToken()
    agent = UserProxyAgent("user_proxy", input_func=blocking)
    call = asyncio.ensure_future(agent.on_messages(ask(), token))
    while not entered.is_set():
        await asyncio.sleep(0.01)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, GUARD)
    release.set()  # let the abandoned thread finish; its late answer is dropped
    await asyncio.sleep(0.05)


async def test_already_cancelled_token_does_not_wait() -> None:
    token = CancellationToken()
    token.cancel()

    async def never_answers(prompt: str, token: CancellationToken | None) -> str:
        await asyncio.Event().wait()
        return "unreachable"

    agent = UserProxyAgent("user_proxy", input_func=never_answers)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(agent.on_messages(ask(), token), GUARD)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_input_errors_are_runtime_errors_naming_the_agent(kind: str) -> None:
    def sync_fail(prompt: str) -> str:
        raise EOFError("stdin closed")

    async def async_fail(prompt: str, token: CancellationToken | None) -> str:
        raise ConnectionError("socket closed")

    agent = UserProxyAgent("human", input_func=sync_fail if kind == "sync" else async_fail)
    with pytest.raises(RuntimeError, match="`human` failed to get user input") as caught:
        await agent.on_messages(ask(), CancellationToken())
    assert isinstance(caught.value.__cause__, (EOFError, ConnectionError))


async def test_non_string_answer_is_an_error() -> None:
    agent = UserProxyAgent("human", input_func=lambda prompt: 42)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="must return a str"):
        await agent.on_messages(ask(), CancellationToken())


async def test_handoff_to_the_agent_is_answered_with_a_handoff_back() -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "My order number is 42."

    agent = UserProxyAgent("user", input_func=answer)
    handoff = HandoffMessage(content="Need the order number.", target="user", source="triage")
    response = await agent.on_messages([handoff], CancellationToken())
    reply = response.chat_message
    assert isinstance(reply, HandoffMessage)
    assert (reply.source, reply.target, reply.content) == (
        "user",
        "triage",
        "My order number is 42.",
    )
    assert prompts == ["Handoff received from triage. Enter your response: "]


async def test_handoff_to_someone_else_or_not_last_gets_a_text_message() -> None:
    agent = UserProxyAgent("user", input_func=lambda prompt: "ok")
    elsewhere = HandoffMessage(content="x", target="refunds", source="triage")
    to_me = HandoffMessage(content="x", target="user", source="triage")
    for messages in ([elsewhere], [to_me, TextMessage(content="later", source="sales")], []):
        response = await agent.on_messages(messages, CancellationToken())
        assert type(response.chat_message) is TextMessage


async def test_defaults_and_reset() -> None:
    agent = UserProxyAgent("user_proxy")
    assert agent.description == "A human user"
    assert agent.input_func is input
    assert list(agent.produced_message_types) == [TextMessage, HandoffMessage]
    await agent.on_reset()
    await agent.on_reset(CancellationToken())


async def test_human_approves_inside_a_graph_flow() -> None:
    """Appendix B 14: the request event shows up in the team's messages."""
    assistant = Fake("assistant", ["In endless blue where whispers play... TERMINATE"])
    user_proxy = UserProxyAgent("user_proxy", input_func=lambda prompt: "APPROVE")
    builder = DiGraphBuilder().add_node(assistant).add_node(user_proxy)
    builder.add_edge(assistant, user_proxy)
    team = GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=TextMentionTermination("APPROVE"),
    )
    result = await asyncio.wait_for(team.run(task="Write a 4-line poem about the ocean."), GUARD)
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "TextMessage",
        "UserInputRequestedEvent",
        "TextMessage",
    ]
    assert [m.source for m in result.messages] == ["user", "assistant", "user_proxy", "user_proxy"]
    assert result.messages[-1].to_text() == "APPROVE"
    assert result.stop_reason == "Text 'APPROVE' mentioned"
