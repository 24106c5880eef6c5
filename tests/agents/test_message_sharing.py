"""Issue 15: memory kept per message. A broadcast message is converted to a model
message once and shared by every receiving agent; agent metadata is not copied twice."""

from __future__ import annotations

from flowlib.agents import AssistantAgent
from flowlib.messages import TextMessage
from flowlib.models import ReplayChatCompletionClient, UserMessage
from flowlib.teams import RoundRobinGroupChat


async def test_every_receiver_shares_one_converted_message() -> None:
    agents = [
        AssistantAgent(name, ReplayChatCompletionClient([f"{name} {i}" for i in range(10)]))
        for name in ("a", "b", "c")
    ]
    team = RoundRobinGroupChat(agents, max_turns=6)
    await team.run(task="go")
    contexts = [await agent.model_context.get_messages() for agent in agents]
    # b and c both hold a's first answer ("a 0"), and it is one object, not two copies.
    held = [
        [m for m in context if isinstance(m, UserMessage) and m.content == "a 0"]
        for context in contexts[1:]
    ]
    assert [len(found) for found in held] == [1, 1]
    assert held[0][0] is held[1][0]
    # The task too: every agent got the same UserMessage.
    tasks = [next(m for m in context if m.content == "go") for context in contexts]
    assert tasks[0] is tasks[1] is tasks[2]


def test_a_changed_message_is_converted_again() -> None:
    message = TextMessage(content="one", source="user")
    first = message.to_model_message()
    assert message.to_model_message() is first
    message.content = "two"
    second = message.to_model_message()
    assert second is not first
    assert (second.content, second.source) == ("two", "user")
    assert first.content == "one"
    # Equal messages that are different objects get their own conversion.
    twin = TextMessage(content="two", source="user")
    assert twin.to_model_message() is not second


async def test_messages_get_their_own_metadata_dict() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x", "y"]), metadata={"team": "blue"})
    first = (await agent.run(task="1")).messages[-1]
    second = (await agent.run(task="2")).messages[-1]
    assert first.metadata == second.metadata == {"team": "blue"}
    first.metadata["team"] = "red"
    assert second.metadata == {"team": "blue"}
