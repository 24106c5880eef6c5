"""The replay client on long conversations (issue 15) and its ``create_calls`` (issue 13).

Requests that extend earlier ones are kept by reference into one trunk per
conversation, and only new messages are counted: memory linear in the turns, no
re-reading of the history per call.
"""

from __future__ import annotations

import tracemalloc

import pytest

from flowlib._cancellation import CancellationToken
from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination
from flowlib.models import (
    AssistantMessage,
    LLMMessage,
    ReplayChatCompletionClient,
    SystemMessage,
    UserMessage,
    _replay,
)
from flowlib.teams import RoundRobinGroupChat


async def converse(client: ReplayChatCompletionClient, turns: int) -> list[LLMMessage]:
    """Call the client as an agent does: the whole history, one message longer each time."""
    history: list[LLMMessage] = [SystemMessage(content="be brief")]
    for turn in range(turns):
        history.append(UserMessage(content=f"question {turn} with words", source="user"))
        result = await client.create(list(history))
        assert isinstance(result.content, str)
        history.append(AssistantMessage(content=result.content, source="bot"))
    return history


async def recorded_bytes(turns: int) -> int:
    client = ReplayChatCompletionClient(["an answer"] * turns)
    history = await converse(ReplayChatCompletionClient(["an answer"] * turns), turns)
    # Replay the same history (already allocated) so only the recording is measured.
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for end in range(2, len(history) + 1, 2):
            await client.create(history[:end])
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


async def test_recorded_requests_grow_linearly_not_quadratically() -> None:
    small, large = await recorded_bytes(400), await recorded_bytes(1600)
    # Four times the turns: about 4x the memory if linear, 16x if each request were
    # copied (the old behaviour measured 15x here).
    assert large / small < 6, (small, large)


async def test_each_message_is_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[LLMMessage] = []
    original = _replay._word_count

    def spy(message: LLMMessage) -> int:
        counted.append(message)
        return original(message)

    monkeypatch.setattr(_replay, "_word_count", spy)
    client = ReplayChatCompletionClient(["an answer"] * 50)
    history = await converse(client, 50)
    assert len(counted) == len(history) - 1  # every message but the last answer
    # The usage is still the count of the whole prompt.
    assert client.actual_usage().prompt_tokens == sum(
        sum(original(m) for m in request) for request in client.requests
    )
    # count_tokens reuses the counts too: only the unseen message is counted.
    counted.clear()
    extra = UserMessage(content="one two three", source="user")
    assert client.count_tokens([*history, extra]) == sum(map(original, history)) + 3
    assert counted == [history[-1], extra]


async def test_requests_are_the_lists_sent_even_when_they_branch() -> None:
    client = ReplayChatCompletionClient(["x"] * 6)
    a, b, c, d = (UserMessage(content=t, source="u") for t in "abcd")
    sent = [[a], [a, b], [a], [a, c], [a, b, d], []]
    for messages in sent:
        await client.create(messages)
    assert client.requests == sent
    assert list(client.requests) == sent
    assert client.requests[-2] == [a, b, d] and client.requests[1:3] == [[a, b], [a]]
    assert client.actual_usage().prompt_tokens == 1 + 2 + 1 + 2 + 3 + 0
    # Each item is a new list: changing it changes nothing recorded.
    client.requests[0].append(b)
    assert client.requests[0] == [a]


async def test_a_request_rewritten_in_the_middle_is_not_taken_for_an_extension() -> None:
    """The last shared message is the same object but one before it was replaced (a
    context that rewrites its history): the request starts a new trunk, and checking it
    left the old trunk as it was."""
    client = ReplayChatCompletionClient(["x"] * 4)
    a, b, c, d, e = (UserMessage(content=t, source="u") for t in "abcde")
    changed = UserMessage(content="b, rewritten", source="u")
    sent = [[a, b, c], [a, changed, c, d], [a, b, c, e], [a, b]]
    for messages in sent:
        await client.create(messages)
    assert client.requests == sent
    assert client.actual_usage().prompt_tokens == 3 + 5 + 4 + 2  # words


async def test_create_calls_has_autogens_keys_for_every_call() -> None:
    client = ReplayChatCompletionClient(["one", "two"])
    token = CancellationToken()
    first = [UserMessage(content="hi", source="u")]
    await client.create(first, json_output=True, cancellation_token=token)
    chunks = [chunk async for chunk in client.create_stream([*first])]
    assert chunks[-1].content == "two"  # type: ignore[union-attr]
    calls = client.create_calls
    assert len(calls) == 2
    assert calls[0] == {
        "messages": first,
        "tools": [],
        "tool_choice": "auto",
        "json_output": True,
        "extra_create_args": {},
        "cancellation_token": token,
    }
    assert calls[1]["messages"] == first and calls[1]["cancellation_token"] is None
    assert calls[-1] == calls[1] and calls[:1] == [calls[0]]
    client.reset()
    assert client.create_calls == [] and client.requests == []


async def test_a_team_on_one_shared_client_records_both_conversations() -> None:
    client = ReplayChatCompletionClient([f"reply {i}" for i in range(40)])
    agents = [AssistantAgent(name, client, system_message=f"I am {name}") for name in "ab"]
    team = RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(41))
    await team.run(task="go")
    assert len(client.requests) == 40
    # Each request is the previous request of the same agent plus the new messages.
    for index in range(2, 40):
        earlier, later = client.requests[index - 2], client.requests[index]
        assert later[: len(earlier)] == earlier
        assert later[0].content == f"I am {'ab'[index % 2]}"
