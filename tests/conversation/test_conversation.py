"""flowlib.conversation: the ask / run API of seed 000, sentence by sentence."""

from __future__ import annotations

import asyncio
import doctest
import inspect
import json
import sqlite3
from typing import Any

import pytest

import flowlib.conversation
from flowlib.agents import AssistantAgent, UserProxyAgent
from flowlib.conditions import MaxMessageTermination
from flowlib.conversation import (
    CONVERSATION_EVENT_TYPES,
    Agent,
    AgentReply,
    AgentRun,
    ConversationError,
    Event,
    HumanInputRequest,
    HumanInputRequiredError,
    HumanInputResponse,
    MemoryStream,
    ModelMessageChunk,
    ReplyEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnCancelledError,
    ask_human,
    ask_human_sync,
)
from flowlib.messages import MessageFactory, TextMessage, ToolCallRequestEvent
from flowlib.models import (
    CreateResult,
    FunctionCall,
    LLMMessage,
    ModelInfo,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    RequestUsage,
)
from flowlib.teams import RoundRobinGroupChat
from flowlib.tools import tool

# --- helpers ---------------------------------------------------------------------------


def call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> CreateResult:
    """A scripted model answer that calls one tool."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=json.dumps(arguments))],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


def texts(request: list[LLMMessage]) -> list[str]:
    """The plain-text contents of one recorded model request."""
    return [message.content for message in request if isinstance(message.content, str)]


def kinds(events: tuple[Event, ...] | list[Event]) -> list[str]:
    return [type(event).__name__ for event in events]


@tool
async def get_weather(city: str) -> str:
    """Get the weather of a city."""
    return f"Sunny in {city}"


class Gate:
    """A tool that blocks until released, recording whether it was cancelled."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False
        self.finished = False

    def as_tool(self) -> Any:
        gate = self

        @tool
        async def slow_lookup(query: str) -> str:
            """Look something up slowly."""
            gate.entered.set()
            try:
                await gate.release.wait()
            except asyncio.CancelledError:
                gate.cancelled = True
                raise
            gate.finished = True
            return f"found {query}"

        return slow_lookup


# --- the public surface ----------------------------------------------------------------


def test_all_matches_public_names() -> None:
    module = flowlib.conversation
    assert len(set(module.__all__)) == len(module.__all__)
    assert module.__all__ == sorted(module.__all__, key=lambda name: name)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and name != "annotations"
        and str(getattr(value, "__module__", "flowlib.conversation")).startswith(
            "flowlib.conversation"
        )
    }
    assert public - set(module.__all__) == set()
    for name in module.__all__:
        assert hasattr(module, name)


@pytest.mark.parametrize(
    "module_name", ["__init__", "_agent", "_run", "_human", "_stream", "_events"]
)
def test_docstring_examples_run(module_name: str) -> None:
    module = (
        flowlib.conversation
        if module_name == "__init__"
        else __import__(f"flowlib.conversation.{module_name}", fromlist=["_"])
    )
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


# --- ask / reply.ask -------------------------------------------------------------------


async def test_ask_returns_a_reply_with_response_and_body() -> None:
    client = ReplayChatCompletionClient(["Paris."])
    agent = Agent("assistant", client)
    reply = await agent.ask("What is the capital of France?")
    assert isinstance(reply, AgentReply)
    assert isinstance(reply.response, TextMessage)
    assert reply.response.source == "assistant"
    assert reply.body == "Paris."
    assert [m.to_text() for m in reply.task_result.messages] == [
        "What is the capital of France?",
        "Paris.",
    ]
    assert kinds(reply.events) == ["TextMessage", "TextMessage", "ReplyEvent"]
    assert texts(client.requests[0]) == [
        "You are a helpful assistant.",
        "What is the capital of France?",
    ]


async def test_reply_ask_continues_the_conversation_with_its_history() -> None:
    client = ReplayChatCompletionClient(["Paris.", "About 2.1 million."])
    agent = Agent("assistant", client, system_message="Be brief.")
    reply = await agent.ask("Capital of France?")
    follow_up = await reply.ask("How many people live there?")
    assert follow_up.body == "About 2.1 million."
    assert texts(client.requests[1]) == [
        "Be brief.",
        "Capital of France?",
        "Paris.",
        "How many people live there?",
    ]
    assert follow_up.stream is reply.stream


async def test_agent_ask_starts_a_new_conversation_each_time() -> None:
    client = ReplayChatCompletionClient(["One.", "Two."])
    agent = Agent("assistant", client, system_message=None)
    first = await agent.ask("first")
    second = await agent.ask("second")
    assert texts(client.requests[1]) == ["second"]
    assert first.stream is not second.stream


async def test_continuing_an_older_reply_branches_from_that_reply() -> None:
    client = ReplayChatCompletionClient(["A1", "B1", "B2", "C1"])
    agent = Agent("assistant", client, system_message=None)
    root = await agent.ask("q0")
    branch_1 = await root.ask("q1")
    branch_2 = await root.ask("q2")
    await branch_1.ask("q3")
    assert texts(client.requests[1]) == ["q0", "A1", "q1"]
    assert texts(client.requests[2]) == ["q0", "A1", "q2"]
    assert texts(client.requests[3]) == ["q0", "A1", "q1", "B1", "q3"]
    assert branch_2.body == "B2"


async def test_tools_run_until_the_model_answers() -> None:
    client = ReplayChatCompletionClient(
        [
            call("get_weather", {"city": "Paris"}, "c1"),
            call("get_weather", {"city": "Rome"}, "c2"),
            "Sunny in both.",
        ]
    )
    agent = Agent("assistant", client, tools=[get_weather])
    reply = await agent.ask("Weather in Paris and Rome?")
    assert reply.body == "Sunny in both."
    assert kinds(reply.events) == [
        "TextMessage",
        "ToolCallEvent",
        "ToolResultEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "TextMessage",
        "ReplyEvent",
    ]
    results = [e for e in reply.events if isinstance(e, ToolResultEvent)]
    assert [(r.call_id, r.content, r.is_error) for r in results] == [
        ("c1", "Sunny in Paris", False),
        ("c2", "Sunny in Rome", False),
    ]
    calls = [e for e in reply.events if isinstance(e, ToolCallEvent)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    # The flowlib view of the same turn keeps flowlib's own event types.
    assert any(isinstance(m, ToolCallRequestEvent) for m in reply.task_result.messages)


async def test_tool_rounds_beyond_the_limit_end_with_an_answer_without_tools() -> None:
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Oslo"}), "Rainy."])
    agent = Agent("assistant", client, tools=[get_weather], max_tool_iterations=1)
    reply = await agent.ask("Weather?")
    assert reply.body == "Rainy."
    assert client.request_args[1]["tools"] == []


async def test_invalid_options_fail_at_construction() -> None:
    info = ModelInfo(
        vision=False,
        function_calling=False,
        json_output=False,
        family="unknown",
        structured_output=False,
    )
    with pytest.raises(ValueError, match="function calling"):
        Agent("assistant", ReplayChatCompletionClient([], model_info=info), tools=[get_weather])
    with pytest.raises(ValueError, match="identifier"):
        Agent("not a name", ReplayChatCompletionClient([]))
    with pytest.raises(TypeError, match="human_input"):
        Agent("assistant", ReplayChatCompletionClient([]), human_input="yes")  # type: ignore[arg-type]


# --- run: start, join, result ----------------------------------------------------------


async def test_start_join_and_result_see_the_same_events_and_reply() -> None:
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Paris"}), "Sunny."])
    agent = Agent("assistant", client, tools=[get_weather])
    async with agent.run("Weather in Paris?") as run:
        assert isinstance(run, AgentRun)
        run.start()
        seen = [event async for event in run.stream.join()]
        second = [event async for event in run.stream.join()]  # a later join sees all too
        reply = await run.result()
    assert seen == second == list(reply.events) == list(run.stream.events)
    assert kinds(seen) == [
        "TextMessage",
        "ToolCallEvent",
        "ToolResultEvent",
        "TextMessage",
        "ReplyEvent",
    ]
    last = seen[-1]
    assert isinstance(last, ReplyEvent)
    assert last.content == reply.body == "Sunny."
    assert last.message_id == reply.response.id


async def test_start_returns_at_once_and_the_turn_waits_for_it() -> None:
    client = ReplayChatCompletionClient(["Hi."])
    agent = Agent("assistant", client)
    async with agent.run("Hello") as run:
        await asyncio.sleep(0.01)
        assert client.requests == []  # nothing drives the turn yet
        run.start()  # returns at once
        run.start()  # again: nothing more
        reply = await run.result()
    assert reply.body == "Hi."
    assert len(client.requests) == 1


async def test_several_concurrent_joins_each_see_every_event() -> None:
    client = ReplayChatCompletionClient(["One two three."])
    agent = Agent("assistant", client, streaming=True)

    async def collect(run: AgentRun) -> list[Event]:
        return [event async for event in run.stream.join()]

    async with agent.run("Count") as run:
        readers = [asyncio.create_task(collect(run)) for _ in range(3)]
        run.start()
        results = await asyncio.gather(*readers)
        reply = await run.result()
    assert results[0] == results[1] == results[2] == list(reply.events)


async def test_result_is_idempotent() -> None:
    agent = Agent("assistant", ReplayChatCompletionClient(["Done."]))
    async with agent.run("Go") as run:
        run.start()
        first = await run.result()
        second = await run.result()
    assert first is second
    assert await run.result() is first  # after the block, too


async def test_result_reraises_the_same_failure_every_time() -> None:
    agent = Agent("assistant", ReplayChatCompletionClient([]))  # no scripted answer
    async with agent.run("Go") as run:
        run.start()
        with pytest.raises(ReplayExhaustedError) as first:
            await run.result()
        with pytest.raises(ReplayExhaustedError) as second:
            await run.result()
    assert first.value is second.value
    events = [event async for event in run.stream.join()]
    assert kinds(events) == ["TextMessage"]  # a failed turn has no ReplyEvent
    with pytest.raises(ReplayExhaustedError):
        await agent.ask("Go")


async def test_leaving_the_block_cancels_a_running_turn() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "never"])
    agent = Agent("assistant", client, tools=[gate.as_tool()])
    async with agent.run("Look it up") as run:
        run.start()
        await gate.entered.wait()
        assert not run.done
    assert run.done  # the block waited until the turn had stopped
    assert gate.cancelled and not gate.finished
    assert run.stream.done
    with pytest.raises(TurnCancelledError) as first:
        await run.result()
    with pytest.raises(TurnCancelledError) as second:
        await run.result()
    assert first.value is second.value
    assert len(client.requests) == 1
    assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing left behind


async def test_leaving_the_block_with_an_error_cancels_the_turn_and_keeps_the_error() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"})])
    agent = Agent("assistant", client, tools=[gate.as_tool()])
    with pytest.raises(KeyError):
        async with agent.run("Look it up") as run:
            run.start()
            await gate.entered.wait()
            raise KeyError("boom")
    assert gate.cancelled


async def test_leaving_the_block_after_an_unawaited_failure_does_not_raise() -> None:
    agent = Agent("assistant", ReplayChatCompletionClient([]))
    async with agent.run("Go") as run:
        run.start()
        async for _ in run.stream.join():
            pass
    with pytest.raises(ReplayExhaustedError):
        await run.result()


async def test_result_without_start_drives_the_turn_inline() -> None:
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Oslo"}), "Cold."])
    agent = Agent("assistant", client, tools=[get_weather])
    async with agent.run("Weather in Oslo?") as run:
        reader = asyncio.create_task(_collect(run))
        reply = await run.result()
        events = await reader
    assert reply.body == "Cold."
    assert events == list(reply.events)


async def _collect(run: AgentRun) -> list[Event]:
    return [event async for event in run.stream.join()]


async def test_cancelling_the_inline_result_await_cancels_the_turn() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "never"])
    agent = Agent("assistant", client, tools=[gate.as_tool()])
    async with agent.run("Look it up") as run:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(run.result(), timeout=0.2)
        assert run.done  # cancelled, and waited for, before wait_for returned
        assert gate.cancelled and not gate.finished
        with pytest.raises(TurnCancelledError):
            await run.result()
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelling_result_after_start_leaves_the_turn_to_the_block() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "Found."])
    agent = Agent("assistant", client, tools=[gate.as_tool()])
    async with agent.run("Look it up") as run:
        run.start()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(run.result(), timeout=0.05)
        assert not run.done
        gate.release.set()
        reply = await run.result()
    assert reply.body == "Found."


async def test_ask_is_run_plus_result() -> None:
    script: list[str | CreateResult] = [call("get_weather", {"city": "Paris"}), "Sunny."]
    asked = await Agent("assistant", ReplayChatCompletionClient(script), tools=[get_weather]).ask(
        "Weather?"
    )
    agent = Agent("assistant", ReplayChatCompletionClient(script), tools=[get_weather])
    async with agent.run("Weather?") as run:
        ran = await run.result()
    assert kinds(asked.events) == kinds(ran.events)
    assert asked.body == ran.body


async def test_start_needs_the_block() -> None:
    agent_client = ReplayChatCompletionClient(["Hi."])
    agent = Agent("assistant", agent_client)
    run = agent.run("Hello")
    with pytest.raises(ConversationError, match="async with"):
        run.start()
    async with run:
        pass
    with pytest.raises(ConversationError, match="async with"):
        run.start()
    with pytest.raises(ConversationError, match="already entered"):
        async with run:
            pass
    with pytest.raises(TurnCancelledError):  # the block ended before anything drove it
        await run.result()
    assert len(agent_client.requests) == 0
    assert (await agent.run("Hello").result()).body == "Hi."  # no block: drives inline


async def test_a_block_that_never_drove_its_turn_releases_readers_and_keeps_the_inbox() -> None:
    client = ReplayChatCompletionClient(["Hi."])
    agent = Agent("assistant", client, system_message=None)
    reply = await agent.ask("Hello")
    async with reply.run("unused") as run:
        events = run.stream.join()
        run.enqueue("remember this")
    assert [event async for event in events] == []
    assert [m.to_text() for m in reply.stream.pending] == ["remember this"]


# --- join ------------------------------------------------------------------------------


async def test_join_max_events_stops_after_n_events() -> None:
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Paris"}), "Sunny."])
    agent = Agent("assistant", client, tools=[get_weather])
    async with agent.run("Weather?") as run:
        run.start()
        first_two = [event async for event in run.stream.join(max_events=2)]
        reply = await run.result()
    assert kinds(first_two) == ["TextMessage", "ToolCallEvent"]
    assert first_two == list(reply.events[:2])
    with pytest.raises(ValueError, match="max_events"):
        run.stream.join(max_events=-1)


async def test_join_without_anything_driving_the_turn_waits() -> None:
    client = ReplayChatCompletionClient(["Hi."])
    agent = Agent("assistant", client)
    async with agent.run("Hello") as run:
        events = run.stream.join()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(events.__anext__(), timeout=0.05)
        assert client.requests == []
        # Cancelling one __anext__ closed that iterator for good, as documented...
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()
        run.start()
        # ... while a new join still sees every event.
        assert kinds([event async for event in run.stream.join()]) == [
            "TextMessage",
            "TextMessage",
            "ReplyEvent",
        ]


async def test_a_cancelled_pull_closes_only_its_iterator_during_a_turn() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "Found."])
    agent = Agent("assistant", client, tools=[gate.as_tool()])
    async with agent.run("Look it up") as run:
        run.start()
        events = run.stream.join()
        assert isinstance(await events.__anext__(), TextMessage)
        assert isinstance(await events.__anext__(), ToolCallEvent)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(events.__anext__(), timeout=0.05)
        gate.release.set()
        reply = await run.result()
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()
        assert [event async for event in run.stream.join()] == list(reply.events)


async def test_an_iterator_can_be_closed() -> None:
    agent = Agent("assistant", ReplayChatCompletionClient(["Hi."]))
    async with agent.run("Hello") as run:
        run.start()
        events = run.stream.join()
        await events.aclose()
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()
        await run.result()


# --- streaming -------------------------------------------------------------------------


async def test_streaming_emits_model_message_chunks() -> None:
    client = ReplayChatCompletionClient(["The weather is sunny."])
    agent = Agent("assistant", client, streaming=True)
    async with agent.run("Weather?") as run:
        run.start()
        chunks = [e.content async for e in run.stream.join() if isinstance(e, ModelMessageChunk)]
        reply = await run.result()
    assert len(chunks) > 1
    assert "".join(chunks) == reply.body == "The weather is sunny."
    chunk_events = [e for e in reply.events if isinstance(e, ModelMessageChunk)]
    assert {e.message_id for e in chunk_events} == {reply.response.id}
    assert kinds(reply.events)[-2:] == ["TextMessage", "ReplyEvent"]
    assert all(not isinstance(m, ModelMessageChunk) for m in reply.task_result.messages)


async def test_no_chunks_without_streaming() -> None:
    reply = await Agent("assistant", ReplayChatCompletionClient(["a b c"])).ask("x")
    assert not any(isinstance(e, ModelMessageChunk) for e in reply.events)


# --- enqueue ---------------------------------------------------------------------------


async def test_enqueue_is_a_non_blocking_method() -> None:
    assert not inspect.iscoroutinefunction(AgentRun.enqueue)
    run = Agent("assistant", ReplayChatCompletionClient(["ok"])).run("x")
    run.enqueue("later")  # returns at once, nothing to await
    with pytest.raises(TypeError, match="enqueue"):
        run.enqueue(42)  # type: ignore[arg-type]


async def test_enqueue_before_the_turn_starts_reaches_the_first_model_call() -> None:
    client = ReplayChatCompletionClient(["Answer in French: Bonjour."])
    agent = Agent("assistant", client, system_message=None)
    async with agent.run("Say hello.") as run:
        run.enqueue("Answer in French.")
        reply = await run.result()
    assert texts(client.requests[0]) == ["Say hello.", "Answer in French."]
    assert [e.to_text() for e in reply.events if isinstance(e, TextMessage)][:2] == [
        "Say hello.",
        "Answer in French.",
    ]


async def test_enqueue_while_running_reaches_the_next_model_call() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient(
        [call("slow_lookup", {"query": "flights"}), "Booked.", "120 EUR."]
    )
    agent = Agent("assistant", client, tools=[gate.as_tool()], system_message=None)
    async with agent.run("Find flights.") as run:
        run.start()
        await gate.entered.wait()  # the turn is running its tool
        run.enqueue("Only direct flights, please.")
        gate.release.set()
        reply = await run.result()
    assert "Only direct flights, please." not in texts(client.requests[0])
    assert texts(client.requests[1])[-1] == "Only direct flights, please."
    steering = [e for e in reply.events if isinstance(e, TextMessage) and e.source == "user"]
    assert [e.content for e in steering] == ["Find flights.", "Only direct flights, please."]
    await reply.ask("And the price?")
    assert "Only direct flights, please." in texts(client.requests[2])  # it stays in history


async def test_enqueue_after_the_first_tool_result_steers_the_next_call() -> None:
    """The document's flow: wait for the first tool result, then enqueue."""
    client = ReplayChatCompletionClient(
        [
            call("get_weather", {"city": "Paris"}, "c1"),
            call("get_weather", {"city": "Rome"}, "c2"),
            "Rome is sunny too.",
        ]
    )
    agent = Agent("assistant", client, tools=[get_weather], system_message=None)
    async with agent.run("Weather in Paris?") as run:
        run.start()
        async for event in run.stream.join():
            if isinstance(event, ToolResultEvent):
                run.enqueue("Check Rome as well.")
                break
        reply = await run.result()
    assert "Check Rome as well." not in texts(client.requests[0])
    assert texts(client.requests[1])[-1] == "Check Rome as well."
    assert reply.body == "Rome is sunny too."


async def test_enqueue_after_the_turn_waits_for_the_next_turn_on_the_stream() -> None:
    client = ReplayChatCompletionClient(["First.", "Second."])
    agent = Agent("assistant", client, system_message=None)
    async with agent.run("one") as run:
        reply = await run.result()
        run.enqueue("By the way, I am Ana.")
    assert len(client.requests) == 1  # no new turn started
    assert [m.to_text() for m in reply.stream.pending] == ["By the way, I am Ana."]
    follow_up = await reply.ask("two")
    assert texts(client.requests[1]) == ["one", "First.", "By the way, I am Ana.", "two"]
    assert reply.stream.pending == ()
    assert follow_up.body == "Second."


async def test_a_message_enqueued_after_the_last_model_call_goes_to_the_next_turn() -> None:
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Oslo"}), "Done.", "Next."])
    agent = Agent("assistant", client, tools=[get_weather], system_message=None)
    async with agent.run("go") as run:
        run.start()
        async for event in run.stream.join():
            if isinstance(event, TextMessage) and event.source == "assistant":
                assert not run.done  # still running, but its last model call is made
                run.enqueue("late")
        reply = await run.result()
    assert all("late" not in texts(request) for request in client.requests)
    await reply.ask("again")
    assert texts(client.requests[-1])[-2:] == ["late", "again"]


# --- MemoryStream ----------------------------------------------------------------------


async def test_memory_stream_subscribers_see_every_event_in_order() -> None:
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Paris"}), "Sunny.", "Bye."])
    agent = Agent("assistant", client, tools=[get_weather], streaming=True)
    stream = MemoryStream()
    sync_seen: list[Event] = []
    async_seen: list[Event] = []

    async def slow_subscriber(event: Event) -> None:
        await asyncio.sleep(0.001)
        async_seen.append(event)

    stream.subscribe(sync_seen.append)
    unsubscribe = stream.subscribe(slow_subscriber)
    first = await agent.ask("Weather in Paris?", stream=stream)
    second = await first.ask("Thanks!")
    assert second.stream is stream
    assert sync_seen == async_seen == list(stream.events)
    assert list(stream.events) == [*first.events, *second.events]
    unsubscribe()
    unsubscribe()  # twice is fine


async def test_a_failing_subscriber_fails_the_turn() -> None:
    stream = MemoryStream()

    def broken(event: Event) -> None:
        raise RuntimeError("database is down")

    stream.subscribe(broken)
    with pytest.raises(RuntimeError, match="database is down"):
        await Agent("assistant", ReplayChatCompletionClient(["Hi."])).ask("x", stream=stream)


async def test_memory_stream_saves_history_to_sqlite() -> None:
    database = sqlite3.connect(":memory:")
    database.execute("CREATE TABLE events (position INTEGER PRIMARY KEY, kind TEXT, data TEXT)")

    def save(event: Event) -> None:
        database.execute(
            "INSERT INTO events (kind, data) VALUES (?, ?)",
            (type(event).__name__, json.dumps(event.dump())),
        )

    stream = MemoryStream()
    stream.subscribe(save)
    client = ReplayChatCompletionClient([call("get_weather", {"city": "Paris"}), "Sunny."])
    reply = await Agent("assistant", client, tools=[get_weather]).ask("Weather?", stream=stream)

    rows = database.execute("SELECT kind, data FROM events ORDER BY position").fetchall()
    assert [kind for kind, _ in rows] == kinds(reply.events)
    factory = MessageFactory()
    for event_type in CONVERSATION_EVENT_TYPES:
        factory.register(event_type)
    restored = [factory.create(json.loads(data)) for _, data in rows]
    assert restored == list(reply.events)
    database.close()


# --- human in the loop -----------------------------------------------------------------


def deleting_tool(deleted: list[str]) -> Any:
    @tool
    async def delete_file(path: str) -> str:
        """Delete a file after the user confirms."""
        answer = await ask_human(f"Delete {path}? (yes/no)")
        if answer.strip().lower() != "yes":
            return f"The user refused; {path} was not deleted."
        deleted.append(path)
        return f"Deleted {path}."

    return delete_file


async def test_a_tool_asks_for_confirmation_and_is_refused() -> None:
    deleted: list[str] = []
    requests: list[HumanInputRequest] = []

    def refuse(request: HumanInputRequest) -> str:
        requests.append(request)
        return "no"

    client = ReplayChatCompletionClient(
        [call("delete_file", {"path": "report.txt"}), "I did not delete it."]
    )
    agent = Agent("assistant", client, tools=[deleting_tool(deleted)], human_input=refuse)
    reply = await agent.ask("Delete report.txt")
    assert deleted == []
    assert [r.prompt for r in requests] == ["Delete report.txt? (yes/no)"]
    assert kinds(reply.events) == [
        "TextMessage",
        "ToolCallEvent",
        "HumanInputRequest",
        "HumanInputResponse",
        "ToolResultEvent",
        "TextMessage",
        "ReplyEvent",
    ]
    request, response = reply.events[2], reply.events[3]
    assert isinstance(request, HumanInputRequest) and isinstance(response, HumanInputResponse)
    assert request is requests[0]
    assert response.request_id == request.request_id and response.content == "no"
    result = reply.events[4]
    assert isinstance(result, ToolResultEvent)
    assert result.content == "The user refused; report.txt was not deleted."


async def test_an_async_handler_approves() -> None:
    deleted: list[str] = []

    async def approve(request: HumanInputRequest) -> str:
        await asyncio.sleep(0)
        return "yes"

    client = ReplayChatCompletionClient([call("delete_file", {"path": "a.txt"}), "Deleted."])
    agent = Agent("assistant", client, tools=[deleting_tool(deleted)], human_input=approve)
    reply = await agent.ask("Delete a.txt")
    assert deleted == ["a.txt"]
    assert reply.body == "Deleted."


async def test_a_sync_tool_asks_with_ask_human_sync() -> None:
    sent: list[str] = []

    @tool
    def send_email(to: str) -> str:
        """Send an email after confirmation (a sync tool: it runs in a worker thread)."""
        if ask_human_sync(f"Send the email to {to}?") != "yes":
            return "Not sent."
        sent.append(to)
        return "Sent."

    client = ReplayChatCompletionClient([call("send_email", {"to": "bo@example.com"}), "Sent."])
    agent = Agent("assistant", client, tools=[send_email], human_input=lambda request: "yes")
    reply = await agent.ask("Email Bo")
    assert sent == ["bo@example.com"]
    assert "HumanInputRequest" in kinds(reply.events)


async def test_without_a_handler_asking_a_human_is_a_clear_error() -> None:
    deleted: list[str] = []
    client = ReplayChatCompletionClient(
        [call("delete_file", {"path": "report.txt"}), "should not be asked"]
    )
    agent = Agent("assistant", client, tools=[deleting_tool(deleted)])
    async with agent.run("Delete report.txt") as run:
        run.start()
        with pytest.raises(HumanInputRequiredError, match="human_input="):
            await asyncio.wait_for(run.result(), timeout=10)  # an error, not a hang
    assert deleted == []
    assert len(client.requests) == 1  # the model was not called again
    assert "HumanInputRequest" in kinds(list(run.stream.events))


async def test_a_tool_that_swallows_the_missing_handler_error_still_fails_the_turn() -> None:
    @tool
    async def careful() -> str:
        """Ask, and carry on if nobody can answer."""
        try:
            return await ask_human("OK?")
        except HumanInputRequiredError:
            return "nobody to ask"

    client = ReplayChatCompletionClient([call("careful", {}), "done"])
    with pytest.raises(HumanInputRequiredError):
        await Agent("assistant", client, tools=[careful]).ask("go")


async def test_ask_human_outside_a_turn_is_an_error() -> None:
    with pytest.raises(ConversationError, match="no turn is running"):
        await ask_human("Anyone?")
    with pytest.raises(ConversationError, match="no turn is running"):
        ask_human_sync("Anyone?")


async def test_ask_human_sync_on_the_event_loop_is_an_error() -> None:
    @tool
    async def wrong() -> str:
        """Calls the blocking variant from async code."""
        return ask_human_sync("?")

    client = ReplayChatCompletionClient([call("wrong", {}), "done"])
    reply = await Agent("assistant", client, tools=[wrong], human_input=lambda r: "x").ask("go")
    result = next(e for e in reply.events if isinstance(e, ToolResultEvent))
    assert result.is_error and "await ask_human" in result.content


# --- wrapping flowlib agents and teams -------------------------------------------------


async def test_from_chat_agent_keeps_each_conversation_apart() -> None:
    client = ReplayChatCompletionClient(["Hi Ana.", "Your name is Ana.", "Hello."])
    inner = AssistantAgent("assistant", model_client=client, system_message=None)
    agent = Agent.from_chat_agent(inner)
    assert agent.name == "assistant" and agent.wrapped is inner
    first = await agent.ask("I am Ana.")
    await first.ask("What is my name?")
    await agent.ask("Hello?")  # a new conversation: none of Ana's history
    assert texts(client.requests[1]) == ["I am Ana.", "Hi Ana.", "What is my name?"]
    assert texts(client.requests[2]) == ["Hello?"]


async def test_from_chat_agent_tools_can_ask_the_human() -> None:
    deleted: list[str] = []
    client = ReplayChatCompletionClient([call("delete_file", {"path": "x"}), "ok"])
    inner = AssistantAgent("assistant", model_client=client, tools=[deleting_tool(deleted)])
    agent = Agent.from_chat_agent(inner, human_input=lambda request: "yes")
    reply = await agent.ask("Delete x")
    assert deleted == ["x"]
    assert "HumanInputResponse" in kinds(reply.events)


async def test_from_chat_agent_enqueue_while_running_waits_for_the_next_turn() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "Done.", "Next."])
    inner = AssistantAgent(
        "assistant",
        model_client=client,
        tools=[gate.as_tool()],
        system_message=None,
        max_tool_iterations=5,
    )
    agent = Agent.from_chat_agent(inner)
    async with agent.run("go") as run:
        run.start()
        await gate.entered.wait()
        run.enqueue("steer")
        gate.release.set()
        reply = await run.result()
    assert all("steer" not in texts(request) for request in client.requests)
    await reply.ask("next")
    assert texts(client.requests[-1])[-2:] == ["steer", "next"]


async def test_from_team_runs_the_team_per_turn_and_continues_it() -> None:
    writer_client = ReplayChatCompletionClient(["Draft 1.", "Draft 2."])
    critic_client = ReplayChatCompletionClient(["Needs work.", "APPROVE"])
    team = RoundRobinGroupChat(
        [
            AssistantAgent("writer", model_client=writer_client, system_message=None),
            AssistantAgent("critic", model_client=critic_client, system_message=None),
        ],
        termination_condition=MaxMessageTermination(3),
    )
    agent = Agent.from_team(team)
    reply = await agent.ask("Write a haiku.")
    assert reply.response.source == "critic"
    assert reply.body == "Needs work."
    assert [e.source for e in reply.events if isinstance(e, TextMessage)] == [
        "user",
        "writer",
        "critic",
    ]
    follow_up = await reply.ask("Try again.")
    assert follow_up.body == "APPROVE"
    assert "Needs work." in texts(writer_client.requests[1])


async def test_from_team_user_proxy_asks_through_the_handler() -> None:
    client = ReplayChatCompletionClient(["Shall I publish?"])
    team = RoundRobinGroupChat(
        [
            AssistantAgent("assistant", model_client=client, system_message=None),
            UserProxyAgent("user_proxy", input_func=ask_human),
        ],
        max_turns=2,
    )
    agent = Agent.from_team(team, human_input=lambda request: "Yes, publish.")
    reply = await agent.ask("Prepare the post.")
    assert reply.body == "Yes, publish."
    assert "HumanInputRequest" in kinds(reply.events)


async def test_wrapping_checks_types() -> None:
    team = RoundRobinGroupChat(
        [AssistantAgent("a", model_client=ReplayChatCompletionClient([]))], max_turns=1
    )
    with pytest.raises(TypeError, match="from_team"):
        Agent.from_chat_agent(team)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="from_chat_agent"):
        Agent.from_team(AssistantAgent("a", model_client=ReplayChatCompletionClient([])))  # type: ignore[arg-type]


# --- state and concurrency -------------------------------------------------------------


async def test_a_failed_turn_leaves_the_conversation_where_it_was() -> None:
    client = ReplayChatCompletionClient(["One.", call("get_weather", {"city": "Oslo"}), "Two."])
    agent = Agent("assistant", client, tools=[get_weather], system_message=None)
    reply = await agent.ask("first")
    failing = True

    def flaky(event: Event) -> None:
        if failing and isinstance(event, ToolCallEvent):
            raise RuntimeError("storage hiccup")

    reply.stream.subscribe(flaky)
    with pytest.raises(RuntimeError, match="storage hiccup"):
        await reply.ask("second")  # fails after its model call asked for a tool
    assert len(client.requests) == 2
    failing = False
    again = await reply.ask("second, again")
    assert texts(client.requests[-1]) == ["first", "One.", "second, again"]
    assert again.body == "Two."


async def test_conversations_of_one_agent_run_concurrently() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "Quick.", "Slow."])
    agent = Agent("assistant", client, tools=[gate.as_tool()])
    async with agent.run("slow one") as slow:
        slow.start()
        await gate.entered.wait()
        quick = await agent.ask("quick one")  # does not wait for the blocked conversation
        assert quick.body == "Quick." and not slow.done
        gate.release.set()
        assert (await slow.result()).body == "Slow."


async def test_leaving_the_block_cancels_a_human_request_of_a_sync_tool() -> None:
    asked = asyncio.Event()
    outcomes: list[str] = []

    async def never_answers(request: HumanInputRequest) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "unreachable"

    @tool
    def dangerous() -> str:
        """Ask from a worker thread, then act."""
        try:
            ask_human_sync("Really?")
        except BaseException as exc:  # the request is cancelled with the turn
            outcomes.append(type(exc).__name__)
            raise
        outcomes.append("acted")
        return "done"

    client = ReplayChatCompletionClient([call("dangerous", {}), "never"])
    agent = Agent("assistant", client, tools=[dangerous], human_input=never_answers)
    async with agent.run("go") as run:
        run.start()
        await asyncio.wait_for(asyncio.shield(asked.wait()), timeout=10)
    for _ in range(200):  # the worker thread notices the cancellation soon after
        if outcomes:
            break
        await asyncio.sleep(0.01)
    assert outcomes == ["CancelledError"]
    with pytest.raises(TurnCancelledError):
        await run.result()


async def test_a_cancelled_team_turn_leaves_the_team_usable() -> None:
    gate = Gate()
    client = ReplayChatCompletionClient([call("slow_lookup", {"query": "x"}), "Fine."])
    worker = AssistantAgent(
        "worker", model_client=client, tools=[gate.as_tool()], system_message=None
    )
    agent = Agent.from_team(RoundRobinGroupChat([worker], max_turns=1))
    async with agent.run("slow") as run:
        run.start()
        await gate.entered.wait()
    assert gate.cancelled
    reply = await agent.ask("quick")
    assert reply.body == "Fine."
    assert texts(client.requests[-1]) == ["quick"]  # a new conversation, from the start
