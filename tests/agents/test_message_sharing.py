"""Issue 15: memory kept per message. A broadcast message is converted to a model
message once and shared by every receiving agent; agent metadata is not copied twice."""

from __future__ import annotations

from flowlib.agents import AssistantAgent
from flowlib.messages import TextMessage
from flowlib.model_context import UnboundedChatCompletionContext
from flowlib.models import LLMMessage, ReplayChatCompletionClient, SystemMessage, UserMessage
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


class SharedListContext(UnboundedChatCompletionContext):
    """A custom view that returns its own list, not a copy: the agent must not edit it."""

    async def get_messages(self) -> list[LLMMessage]:
        return self._messages


async def test_the_request_never_edits_a_custom_contexts_list() -> None:
    context = SharedListContext()
    client = ReplayChatCompletionClient(["one", "two"])
    agent = AssistantAgent("a", client, model_context=context, system_message="be brief")
    await agent.run(task="1")
    await agent.run(task="2")
    held = await context.get_messages()
    assert [type(m).__name__ for m in held] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    sent = client.requests[1]
    assert isinstance(sent[0], SystemMessage) and len(sent) == 4


async def test_the_system_message_leads_each_request_once() -> None:
    client = ReplayChatCompletionClient(["one", "two", "three"])
    agent = AssistantAgent("a", client, system_message="be brief")
    for task in ("1", "2", "3"):
        await agent.run(task=task)
    for request in client.requests:
        kinds = [type(m).__name__ for m in request]
        assert kinds[0] == "SystemMessage" and kinds.count("SystemMessage") == 1
    assert len(await agent.model_context.get_messages()) == 6
