"""AssistantAgent's per-turn work does not grow with the conversation (issue 15).

The turn is all-or-nothing through an O(1) rollback point of the model context, never
through ``save_state``/``load_state`` of the whole history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken
from flowlib.conditions import MaxMessageTermination
from flowlib.messages import TextMessage
from flowlib.model_context import UnboundedChatCompletionContext
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import RoundRobinGroupChat


class NoSnapshotContext(UnboundedChatCompletionContext):
    """A context whose state methods fail: the hot path must never call them."""

    def __init__(self) -> None:
        super().__init__()
        self.state_calls = 0

    async def save_state(self) -> Mapping[str, Any]:
        self.state_calls += 1
        raise AssertionError("save_state called on the hot path")

    async def load_state(self, state: Mapping[str, Any]) -> None:
        self.state_calls += 1
        raise AssertionError("load_state called on the hot path")


class FailingClient(ReplayChatCompletionClient):
    """Replays its script, but the call numbered ``fail_at`` (1-based) raises."""

    def __init__(self, script: list[str], fail_at: int) -> None:
        super().__init__(script)
        self.fail_at = fail_at
        self.calls = 0

    async def create(self, messages: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("model down")
        return await super().create(messages, **kwargs)


async def test_a_long_team_run_never_snapshots_the_context() -> None:
    contexts = [NoSnapshotContext(), NoSnapshotContext()]
    agents = [
        AssistantAgent(
            name,
            ReplayChatCompletionClient([f"{name} {i}" for i in range(200)]),
            model_context=context,
        )
        for name, context in zip(["a", "b"], contexts, strict=True)
    ]
    team = RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(301))
    result = await team.run(task="go")
    assert len(result.messages) == 301
    assert [context.state_calls for context in contexts] == [0, 0]
    # Each agent holds the task, its own 150 answers and the other's: 300 messages.
    assert len(await contexts[0].get_messages()) == 300


async def test_a_failed_turn_rolls_back_without_save_state() -> None:
    context = NoSnapshotContext()
    client = FailingClient(["one", "two"], fail_at=2)
    agent = AssistantAgent("a", client, model_context=context)
    token = CancellationToken()
    await agent.on_messages([TextMessage(content="first", source="user")], token)
    before = list(await context.get_messages())
    with pytest.raises(RuntimeError, match="model down"):
        await agent.on_messages([TextMessage(content="second", source="user")], token)
    # The failed turn's user message is gone: the context is exactly as before.
    assert await context.get_messages() == before
    assert context.state_calls == 0
    response = await agent.on_messages([TextMessage(content="again", source="user")], token)
    assert response.chat_message.to_text() == "two"
    texts = [message.content for message in await context.get_messages()]
    assert texts == ["first", "one", "again", "two"]


async def test_an_abandoned_stream_is_undone_by_the_next_call() -> None:
    context = UnboundedChatCompletionContext()
    agent = AssistantAgent(
        "a",
        ReplayChatCompletionClient(["x y z", "kept answer"]),
        model_context=context,
        model_client_stream=True,
    )
    token = CancellationToken()
    stream = agent.on_messages_stream([TextMessage(content="lost", source="user")], token)
    await stream.__anext__()  # a first chunk: the turn has started and added its message
    assert len(await context.get_messages()) == 1
    # While the turn is open, save_state is the context from before it.
    assert (await agent.save_state())["llm_context"]["messages"] == []
    response = await agent.on_messages([TextMessage(content="kept", source="user")], token)
    await stream.aclose()  # closed late: must not undo the later turn
    assert response.chat_message.to_text() == "kept answer"
    assert [m.content for m in await context.get_messages()] == ["kept", "kept answer"]


async def test_rollback_after_clear_brings_the_old_history_back() -> None:
    context = UnboundedChatCompletionContext()
    await context.add_message(TextMessage(content="old", source="u").to_model_message())
    point = context._rollback_point()
    await context.clear()
    await context.add_message(TextMessage(content="new", source="u").to_model_message())
    context._roll_back(point)
    assert [m.content for m in await context.get_messages()] == ["old"]
