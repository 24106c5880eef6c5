"""Issue 16.3: a team rejects task and agent messages of a type it does not know, as
AutoGen does; ``custom_message_types`` registers them, and agents' declared
``StructuredMessage[T]`` types are registered on their own."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _agents import Fake
from pydantic import BaseModel

from flowlib.agents import AssistantAgent, BaseChatAgent
from flowlib.base import CancellationToken, Response
from flowlib.errors import NodeExecutionError, UnknownMessageTypeError
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    BaseTextChatMessage,
    StructuredMessage,
    TextMessage,
)
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import RoundRobinGroupChat


class Note(BaseTextChatMessage):
    """A custom chat message."""


class Progress(BaseAgentEvent):
    """A custom event."""

    content: str

    def to_text(self) -> str:
        return self.content


class Noter(BaseChatAgent):
    """Answers with a Note, after a Progress event."""

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (Note,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        return Response(
            chat_message=Note(content="noted", source=self.name),
            inner_messages=[Progress(content="writing", source=self.name)],
        )

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass


async def test_a_task_message_of_unknown_type_is_refused_before_the_run() -> None:
    agent = Fake("a")
    team = RoundRobinGroupChat([agent], max_turns=1)
    with pytest.raises(UnknownMessageTypeError, match="custom_message_types=\\[Note\\]") as caught:
        await team.run(
            task=[TextMessage(content="hi", source="user"), Note(content="x", source="u")]
        )
    assert isinstance(caught.value, ValueError)
    assert caught.value.message_type is Note
    assert agent.turns == 0
    # Nothing changed: the same team runs a good task afterwards.
    result = await team.run(task="hi")
    assert [m.to_text() for m in result.messages] == ["hi", "a1"]


async def test_a_registered_task_message_type_is_accepted() -> None:
    team = RoundRobinGroupChat([Fake("a")], max_turns=1, custom_message_types=[Note])
    result = await team.run(task=Note(content="hi", source="user"))
    assert [type(m).__name__ for m in result.messages] == ["Note", "TextMessage"]


async def test_an_agent_message_of_unknown_type_fails_its_turn() -> None:
    team = RoundRobinGroupChat([Noter("n", "notes")], max_turns=1)
    with pytest.raises(NodeExecutionError) as caught:
        await team.run(task="go")
    cause = caught.value.__cause__
    assert isinstance(cause, UnknownMessageTypeError)
    assert "Agent `n`" in str(cause)
    # The event is checked too: registering only the chat message is not enough.
    assert cause.message_type in (Note, Progress)


async def test_registered_agent_message_types_run() -> None:
    team = RoundRobinGroupChat(
        [Noter("n", "notes")], max_turns=1, custom_message_types=[Note, Progress]
    )
    result = await team.run(task="go")
    assert [type(m).__name__ for m in result.messages] == ["TextMessage", "Progress", "Note"]
    # And the registered types load back from a saved state.
    state = await team.save_state()
    again = RoundRobinGroupChat(
        [Noter("n", "notes")], max_turns=1, custom_message_types=[Note, Progress]
    )
    await again.load_state(state)


class Answer(BaseModel):
    text: str


async def test_declared_structured_messages_are_registered_on_their_own() -> None:
    agent = AssistantAgent(
        "a",
        ReplayChatCompletionClient(['{"text": "yes"}']),
        output_content_type=Answer,
    )
    team = RoundRobinGroupChat([agent], max_turns=1)
    result = await team.run(task="go")
    assert isinstance(result.messages[-1], StructuredMessage)
    # Another team built the same way loads the thread back.
    state = await team.save_state()
    again = RoundRobinGroupChat(
        [AssistantAgent("a", ReplayChatCompletionClient([]), output_content_type=Answer)],
        max_turns=1,
    )
    await again.load_state(state)
