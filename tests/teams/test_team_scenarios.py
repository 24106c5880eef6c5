"""The team tutorials of the AutoGen documents, end to end on scripted models.

Appendix B of the seed inventory: 9 (approve loop, reset, stream), 10 (resume after
MaxMessageTermination), 11 (ExternalTermination), 12 (abort), 13 (single-agent tool
loop), 17 (FunctionCallTermination), 21 (SocietyOfMindAgent), 22 (nested counting
teams) and 24 (save, JSON, load, resume) for RoundRobin, Swarm and GraphFlow.
Human-in-the-loop scenarios (14, 15, 16, 20) are in ``test_hitl.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from flowlib.agents import AssistantAgent, BaseChatAgent, SocietyOfMindAgent
from flowlib.base import (
    CancellationToken,
    Response,
    TaskResult,
    TerminatedException,
    TerminationCondition,
)
from flowlib.conditions import (
    ExternalTermination,
    FunctionCallTermination,
    MaxMessageTermination,
    TextMentionTermination,
    TextMessageTermination,
)
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    StopMessage,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from flowlib.models import (
    AssistantMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResultMessage,
    LLMMessage,
    ReplayChatCompletionClient,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, Swarm

USAGE = RequestUsage(prompt_tokens=10, completion_tokens=5)


def call(name: str, arguments: str = "{}", call_id: str = "call_1") -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, arguments=arguments, name=name)],
        usage=USAGE,
        cached=False,
    )


def chat(messages: Sequence[object]) -> list[str]:
    return [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, BaseChatMessage)]


def kinds(messages: Sequence[object]) -> list[str]:
    return [f"{type(m).__name__}:{getattr(m, 'source', '')}" for m in messages]


def said(request: Sequence[LLMMessage]) -> list[str]:
    """A model request without its system messages, as ``source:content``."""
    out = []
    for m in request:
        if isinstance(m, (UserMessage, AssistantMessage)):
            out.append(f"{m.source}:{m.content}")
        elif isinstance(m, FunctionExecutionResultMessage):
            out.append("results:" + ",".join(r.content for r in m.content))
    return out


class GatedReplay(ReplayChatCompletionClient):
    """A replay client whose calls wait until the test opens the gate (a slow model)."""

    def __init__(self, chat_completions: Sequence[str | CreateResult]) -> None:
        super().__init__(chat_completions)
        self.called = asyncio.Event()
        self.gate = asyncio.Event()

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        self.called.set()
        await self.gate.wait()
        return await super().create(messages, **kwargs)


def poets(
    primary_replies: Sequence[str], critic_replies: Sequence[str]
) -> tuple[AssistantAgent, AssistantAgent, ReplayChatCompletionClient, ReplayChatCompletionClient]:
    primary_model = ReplayChatCompletionClient(primary_replies)
    critic_model = ReplayChatCompletionClient(critic_replies)
    primary = AssistantAgent(
        "primary", primary_model, system_message="You are a helpful AI assistant."
    )
    critic = AssistantAgent(
        "critic",
        critic_model,
        system_message="Provide constructive feedback. Respond with 'APPROVE' when addressed.",
    )
    return primary, critic, primary_model, critic_model


# --- 9: approve loop, reset, stream -------------------------------------------------------


async def test_b9_primary_critic_until_approve_then_reset_and_stream() -> None:
    primary, critic, primary_model, _ = poets(
        ["Leaves descend.", "Leaves descend, revised.", "Golden leaves.", "Golden leaves II."],
        ["Add sounds.", "Lovely.\n\nAPPROVE", "More scent.", "APPROVE"],
    )
    team = RoundRobinGroupChat(
        [primary, critic], termination_condition=TextMentionTermination("APPROVE")
    )
    result = await team.run(task="Write a short poem about the fall season.")
    assert chat(result.messages) == [
        "user:Write a short poem about the fall season.",
        "primary:Leaves descend.",
        "critic:Add sounds.",
        "primary:Leaves descend, revised.",
        "critic:Lovely.\n\nAPPROVE",
    ]
    assert result.stop_reason == "Text 'APPROVE' mentioned"
    assert all(isinstance(m, TextMessage) for m in result.messages)
    assert [m.models_usage is not None for m in result.messages] == [False, True, True, True, True]

    await team.reset()
    items = [
        item async for item in team.run_stream(task="Write a short poem about the fall season.")
    ]
    streamed = items[-1]
    assert isinstance(streamed, TaskResult)
    assert chat(items[:-1]) == [
        "user:Write a short poem about the fall season.",
        "primary:Golden leaves.",
        "critic:More scent.",
        "primary:Golden leaves II.",
        "critic:APPROVE",
    ]
    assert streamed.stop_reason == "Text 'APPROVE' mentioned"
    # After the reset the primary's model saw only the new task, not the first poem.
    assert said(primary_model.requests[2]) == ["user:Write a short poem about the fall season."]


# --- 10: MaxMessageTermination, resume without a task -------------------------------------


async def test_b10_resume_without_a_task_continues_with_the_next_speaker() -> None:
    primary, critic, primary_model, _ = poets(
        ["Gentle rain whispers.", "Soft rain whispers down.", "Thank you!"],
        ["Use 5-7-5.", "Well done!\n\nAPPROVE"],
    )
    team = RoundRobinGroupChat([primary, critic], termination_condition=MaxMessageTermination(3))
    first = await team.run(task="Write a unique, Haiku about the weather in Paris")
    assert chat(first.messages) == [
        "user:Write a unique, Haiku about the weather in Paris",
        "primary:Gentle rain whispers.",
        "critic:Use 5-7-5.",
    ]
    reason = "Maximum number of messages 3 reached, current message count: 3"
    assert first.stop_reason == reason
    second = await team.run()
    assert chat(second.messages) == [
        "primary:Soft rain whispers down.",
        "critic:Well done!\n\nAPPROVE",
        "primary:Thank you!",
    ]
    assert second.stop_reason == reason
    # The primary answered the critic's feedback: it had the whole conversation.
    assert said(primary_model.requests[1]) == [
        "user:Write a unique, Haiku about the weather in Paris",
        "primary:Gentle rain whispers.",
        "critic:Use 5-7-5.",
    ]


# --- 11: ExternalTermination, resume, new task --------------------------------------------


async def test_b11_external_termination_lets_the_speaker_finish_then_resume() -> None:
    primary_model = GatedReplay(["Leaves of amber.", "Leaves of amber, gold.", "朔风轻拂叶飘金"])
    critic_model = ReplayChatCompletionClient(
        ["Add metaphors.", "Evocative.\n\nAPPROVE", "APPROVE"]
    )
    primary = AssistantAgent("primary", primary_model)
    critic = AssistantAgent("critic", critic_model)
    external = ExternalTermination()
    team = RoundRobinGroupChat(
        [primary, critic], termination_condition=external | TextMentionTermination("APPROVE")
    )
    run = asyncio.ensure_future(team.run(task="Write a short poem about the fall season."))
    await primary_model.called.wait()
    external.set()
    primary_model.gate.set()  # the primary's turn completes after the stop was requested
    stopped = await run
    assert chat(stopped.messages) == [
        "user:Write a short poem about the fall season.",
        "primary:Leaves of amber.",
    ]
    assert stopped.stop_reason == "External termination requested"
    assert critic_model.requests == []

    items = [item async for item in team.run_stream()]
    resumed = items[-1]
    assert isinstance(resumed, TaskResult)
    assert chat(resumed.messages) == [
        "critic:Add metaphors.",
        "primary:Leaves of amber, gold.",
        "critic:Evocative.\n\nAPPROVE",
    ]
    assert resumed.stop_reason == "Text 'APPROVE' mentioned"

    translated = await team.run(task="将这首诗用中文唐诗风格写一遍。")
    assert chat(translated.messages) == [
        "user:将这首诗用中文唐诗风格写一遍。",
        "primary:朔风轻拂叶飘金",
        "critic:APPROVE",
    ]
    assert said(primary_model.requests[2])[-2:] == [
        "critic:Evocative.\n\nAPPROVE",
        "user:将这首诗用中文唐诗风格写一遍。",
    ]


# --- 12: abort with a cancellation token --------------------------------------------------


async def test_b12_abort_before_the_run_starts() -> None:
    primary, critic, primary_model, _ = poets(["Poema."], ["APPROVE"])
    team = RoundRobinGroupChat(
        [primary, critic], termination_condition=TextMentionTermination("APPROVE")
    )
    token = CancellationToken()
    run = asyncio.ensure_future(
        team.run(task="Translate the poem to Spanish.", cancellation_token=token)
    )
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert primary_model.requests == []


async def test_b12_abort_mid_call_then_run_again_without_duplicates() -> None:
    primary_model = GatedReplay(["Poema de otoño."])
    primary = AssistantAgent("primary", primary_model)
    critic = AssistantAgent("critic", ReplayChatCompletionClient(["APPROVE"]))
    team = RoundRobinGroupChat(
        [primary, critic], termination_condition=TextMentionTermination("APPROVE")
    )
    token = CancellationToken()
    run = asyncio.ensure_future(
        team.run(task="Translate the poem to Spanish.", cancellation_token=token)
    )
    await primary_model.called.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert primary_model.requests == []  # the model never answered
    primary_model.gate.set()
    result = await team.run()
    assert chat(result.messages) == ["primary:Poema de otoño.", "critic:APPROVE"]
    # The aborted turn left no trace in the primary's context: the task is there once.
    assert said(primary_model.requests[0]) == ["user:Translate the poem to Spanish."]


# --- 13: single-agent tool loop -----------------------------------------------------------


async def test_b13_looped_assistant_increments_until_it_answers_in_text() -> None:
    def increment_number(number: int) -> int:
        """Increment a number by 1."""
        return number + 1

    script: list[str | CreateResult] = [
        call("increment_number", json.dumps({"number": n}), f"call_{n}") for n in range(5, 10)
    ]
    script.append("The number 5 incremented to 10 is 10.")
    model = ReplayChatCompletionClient(script)
    looped = AssistantAgent(
        "looped_assistant",
        model,
        tools=[increment_number],
        system_message="You are a helpful AI assistant, use the tool to increment the number.",
    )
    team = RoundRobinGroupChat(
        [looped], termination_condition=TextMessageTermination("looped_assistant")
    )
    items = [item async for item in team.run_stream(task="Increment the number 5 to 10.")]
    result = items[-1]
    assert isinstance(result, TaskResult)
    assert list(result.messages) == items[:-1]
    turn = ["ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage"]
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        *turn * 5,
        "TextMessage",
    ]
    requests = [m for m in result.messages if isinstance(m, ToolCallRequestEvent)]
    assert [json.loads(r.content[0].arguments) for r in requests] == [
        {"number": n} for n in range(5, 10)
    ]
    executions = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert [(e.content[0].content, e.content[0].is_error) for e in executions] == [
        (str(n), False) for n in range(6, 11)
    ]
    summaries = [m.content for m in result.messages if isinstance(m, ToolCallSummaryMessage)]
    assert summaries == ["6", "7", "8", "9", "10"]
    assert chat(result.messages)[-1] == "looped_assistant:The number 5 incremented to 10 is 10."
    assert result.stop_reason == "Text message received from 'looped_assistant'"
    assert team.trace.steps == ["looped_assistant"] * 6
    # Each model call saw every earlier call and result.
    last = said(model.requests[-1])
    assert len(last) == 11
    assert last[0] == "user:Increment the number 5 to 10."
    assert last[2::2] == ["results:6", "results:7", "results:8", "results:9", "results:10"]


# --- 17: FunctionCallTermination ----------------------------------------------------------


class TutorialFunctionCallTermination(TerminationCondition):
    """The custom condition written in the termination tutorial."""

    def __init__(self, function_name: str) -> None:
        self._terminated = False
        self._function_name = function_name

    @property
    def terminated(self) -> bool:
        return self._terminated

    async def __call__(
        self, messages: Sequence[BaseAgentEvent | BaseChatMessage]
    ) -> StopMessage | None:
        if self._terminated:
            raise TerminatedException("Termination condition has already been reached")
        for message in messages:
            if isinstance(message, ToolCallExecutionEvent):
                for execution in message.content:
                    if execution.name == self._function_name:
                        self._terminated = True
                        return StopMessage(
                            content=f"Function '{self._function_name}' was executed.",
                            source="FunctionCallTermination",
                        )
        return None

    async def reset(self) -> None:
        self._terminated = False


@pytest.mark.parametrize("condition", [FunctionCallTermination, TutorialFunctionCallTermination])
async def test_b17_critic_approves_with_a_tool(condition: type[TerminationCondition]) -> None:
    approvals: list[str] = []

    def approve() -> None:
        """Approve the message when all feedbacks have been addressed."""
        approvals.append("approved")

    primary = AssistantAgent(
        "primary", ReplayChatCompletionClient(["Raindrops gently fall.", "Eiffel stands in mist."])
    )
    critic = AssistantAgent(
        "critic",
        ReplayChatCompletionClient(["Try the Seine.", call("approve", call_id="call_QEW")]),
        tools=[approve],
    )
    team = RoundRobinGroupChat([primary, critic], termination_condition=condition("approve"))  # type: ignore[call-arg]
    result = await team.run(task="Write a unique, Haiku about the weather in Paris")
    assert kinds(result.messages) == [
        "TextMessage:user",
        "TextMessage:primary",
        "TextMessage:critic",
        "TextMessage:primary",
        "ToolCallRequestEvent:critic",
        "ToolCallExecutionEvent:critic",
        "ToolCallSummaryMessage:critic",
    ]
    execution = result.messages[5]
    assert isinstance(execution, ToolCallExecutionEvent)
    assert [(r.content, r.name, r.call_id, r.is_error) for r in execution.content] == [
        ("None", "approve", "call_QEW", False)
    ]
    assert chat(result.messages)[-1] == "critic:None"
    assert result.stop_reason == "Function 'approve' was executed."
    assert approvals == ["approved"]


# --- 21: SocietyOfMindAgent then a translator ---------------------------------------------


async def test_b21_society_of_mind_writer_editor_then_translator() -> None:
    writer = AssistantAgent(
        "assistant1",
        ReplayChatCompletionClient(["The robot dreamed.", "The robot dreamed of rain."]),
        system_message="You are a writer, write well.",
    )
    editor = AssistantAgent(
        "assistant2",
        ReplayChatCompletionClient(["Add a twist.", "APPROVE"]),
        system_message="You are an editor. Respond with 'APPROVE' when addressed.",
    )
    inner = RoundRobinGroupChat(
        [writer, editor], termination_condition=TextMentionTermination("APPROVE")
    )
    som_model = ReplayChatCompletionClient(["A robot dreamed of rain; it was the rain."])
    society = SocietyOfMindAgent("society_of_mind", team=inner, model_client=som_model)
    translator_model = ReplayChatCompletionClient(["Un robot soñó con la lluvia."])
    translator = AssistantAgent(
        "assistant3", translator_model, system_message="Translate the text to Spanish."
    )
    team = RoundRobinGroupChat([society, translator], max_turns=2)

    items = [
        item async for item in team.run_stream(task="Write a short story with a surprising ending.")
    ]
    result = items[-1]
    assert isinstance(result, TaskResult)
    # The inner team's messages are streamed as the society's inner messages.
    assert chat(result.messages) == [
        "user:Write a short story with a surprising ending.",
        "assistant1:The robot dreamed.",
        "assistant2:Add a twist.",
        "assistant1:The robot dreamed of rain.",
        "assistant2:APPROVE",
        "society_of_mind:A robot dreamed of rain; it was the rain.",
        "assistant3:Un robot soñó con la lluvia.",
    ]
    assert result.stop_reason == "Maximum number of turns 2 reached."
    assert team.trace.steps == ["society_of_mind", "assistant3"]
    # The society's model wrote the answer from the task and the inner transcript.
    (request,) = som_model.requests
    assert request[0] == SystemMessage(content=SocietyOfMindAgent.DEFAULT_INSTRUCTION)
    assert request[-1] == SystemMessage(content=SocietyOfMindAgent.DEFAULT_RESPONSE_PROMPT)
    assert said(request) == [
        "user:Write a short story with a surprising ending.",
        "assistant1:The robot dreamed.",
        "assistant2:Add a twist.",
        "assistant1:The robot dreamed of rain.",
        "assistant2:APPROVE",
    ]
    # Only the society's answer is published to the outer team, not the inner chatter.
    assert said(translator_model.requests[0]) == [
        "user:Write a short story with a surprising ending.",
        "society_of_mind:A robot dreamed of rain; it was the rain.",
    ]


async def test_b21_outer_termination_sees_only_the_society_answer() -> None:
    """As in AutoGen (0.7), a SocietyOfMindAgent's Response carries no inner messages: the
    inner team's messages stream through to the outer run, but the outer termination
    condition sees only the society's answer, so the editor's APPROVE does not stop the
    outer team."""
    writer = AssistantAgent("writer", ReplayChatCompletionClient(["Draft."]))
    editor = AssistantAgent("editor", ReplayChatCompletionClient(["APPROVE"]))
    inner = RoundRobinGroupChat(
        [writer, editor], termination_condition=TextMentionTermination("APPROVE")
    )
    society = SocietyOfMindAgent(
        "society", team=inner, model_client=ReplayChatCompletionClient(["Story."])
    )
    translator = AssistantAgent("translator", ReplayChatCompletionClient(["Historia."]))
    team = RoundRobinGroupChat(
        [society, translator], termination_condition=TextMentionTermination("APPROVE"), max_turns=2
    )
    result = await team.run(task="Write.")
    assert chat(result.messages) == [
        "user:Write.",
        "writer:Draft.",
        "editor:APPROVE",
        "society:Story.",
        "translator:Historia.",
    ]
    assert result.stop_reason == "Maximum number of turns 2 reached."


# --- 22: nested counting teams ------------------------------------------------------------


class CountingAgent(BaseChatAgent):
    """An agent that returns a new number by adding 1 to the last number it was given."""

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        if len(messages) == 0:
            last_number = 0  # Start from 0 if no messages are given.
        else:
            assert isinstance(messages[-1], TextMessage)
            last_number = int(messages[-1].content)
        return Response(chat_message=TextMessage(content=str(last_number + 1), source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)


class NestedCountingAgent(BaseChatAgent):
    """Counts with a nested team: its last message is the reply, the rest inner messages."""

    def __init__(self, name: str, counting_team: RoundRobinGroupChat) -> None:
        super().__init__(name, description="An agent that counts numbers.")
        self._counting_team = counting_team

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        result = await self._counting_team.run(task=messages, cancellation_token=cancellation_token)
        last = result.messages[-1]
        assert isinstance(last, TextMessage)
        inner = [m for m in result.messages[len(messages) : -1]]
        return Response(chat_message=last, inner_messages=inner)

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        await self._counting_team.reset()

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)


def counting_team() -> RoundRobinGroupChat:
    return RoundRobinGroupChat(
        [
            CountingAgent("counting_agent_1", description="An agent that counts numbers."),
            CountingAgent("counting_agent_2", description="An agent that counts numbers."),
        ],
        max_turns=5,
    )


async def test_b22_nested_counting_agent_outputs_2_to_6() -> None:
    nested = NestedCountingAgent("nested_counting_agent", counting_team())
    response = await nested.on_messages(
        [TextMessage(content="1", source="user")], CancellationToken()
    )
    assert response.inner_messages is not None
    assert [(m.source, m.to_text()) for m in [*response.inner_messages, response.chat_message]] == [
        ("counting_agent_1", "2"),
        ("counting_agent_2", "3"),
        ("counting_agent_1", "4"),
        ("counting_agent_2", "5"),
        ("counting_agent_1", "6"),
    ]


async def test_b22_counting_team_nested_in_a_round_robin() -> None:
    outer = RoundRobinGroupChat(
        [counting_team(), CountingAgent("counting_agent_3", "Counts.")], max_turns=3
    )
    result = await outer.run(task="1")
    assert [m.to_text() for m in result.messages] == [str(n) for n in range(1, 13)]
    # The inner team keeps its place: its second run starts with counting_agent_2.
    assert [m.source for m in result.messages][6:] == [
        "counting_agent_3",
        "counting_agent_2",
        "counting_agent_1",
        "counting_agent_2",
        "counting_agent_1",
        "counting_agent_2",
    ]
    assert outer.trace.steps == ["RoundRobinGroupChat", "counting_agent_3", "RoundRobinGroupChat"]


async def test_b22_nested_counting_agent_in_a_round_robin() -> None:
    nested = NestedCountingAgent("nested_counting_agent", counting_team())
    outer = RoundRobinGroupChat([nested, CountingAgent("counting_agent_3", "Counts.")], max_turns=2)
    result = await outer.run(task="1")
    assert [(m.source, m.to_text()) for m in result.messages] == [
        ("user", "1"),
        ("counting_agent_1", "2"),
        ("counting_agent_2", "3"),
        ("counting_agent_1", "4"),
        ("counting_agent_2", "5"),
        ("counting_agent_1", "6"),
        ("counting_agent_3", "7"),
    ]
    # Resetting the outer team resets the nested team through the agent's on_reset.
    await outer.reset()
    again = await outer.run(task="10")
    assert [m.to_text() for m in again.messages] == ["10", "11", "12", "13", "14", "15", "16"]
    assert again.messages[1].source == "counting_agent_1"


# --- 24: save, JSON, load into a new team, resume with a new task -------------------------


def story_team(
    writer_model: ReplayChatCompletionClient, critic_replies: Sequence[str]
) -> RoundRobinGroupChat:
    """The "group chat with resume" team of the migration guide."""
    writer = AssistantAgent(
        "writer", writer_model, description="A writer.", system_message="You are a writer."
    )
    critic = AssistantAgent(
        "critic",
        ReplayChatCompletionClient(critic_replies),
        description="A critic.",
        system_message="You are a critic. Reply only 'APPROVE' if the task is done.",
    )
    return RoundRobinGroupChat(
        [writer, critic], termination_condition=TextMentionTermination("APPROVE")
    )


async def test_b24_round_robin_state_round_trip() -> None:
    team = story_team(ReplayChatCompletionClient(["A robot felt joy."]), ["APPROVE"])
    first = await team.run(task="Write a short story about a robot that discovers it has feelings.")
    assert first.stop_reason == "Text 'APPROVE' mentioned"
    state = json.loads(json.dumps(await team.save_state()))
    assert list(state["agent_states"]) == ["writer", "critic", "RoundRobinGroupChatManager"]
    writer_state = state["agent_states"]["writer"]
    assert writer_state["type"] == "AssistantAgentState"

    # A new team with the same configuration (and, as in a new process, new clients).
    writer_model = ReplayChatCompletionClient(["机器人感到了快乐。"])
    restored = story_team(writer_model, ["APPROVE"])
    await restored.load_state(state)
    result = await restored.run(task="Translate the story into Chinese.")
    assert chat(result.messages) == [
        "user:Translate the story into Chinese.",
        "writer:机器人感到了快乐。",
        "critic:APPROVE",
    ]
    assert said(writer_model.requests[0]) == [
        "user:Write a short story about a robot that discovers it has feelings.",
        "writer:A robot felt joy.",
        "critic:APPROVE",
        "user:Translate the story into Chinese.",
    ]


async def test_b24_swarm_state_round_trip() -> None:
    def build(
        alice_model: ReplayChatCompletionClient, bob_model: ReplayChatCompletionClient
    ) -> Swarm:
        alice = AssistantAgent("Alice", alice_model, handoffs=["Bob"])
        bob = AssistantAgent("Bob", bob_model)
        return Swarm([alice, bob], termination_condition=MaxMessageTermination(3))

    team = build(
        ReplayChatCompletionClient([call("transfer_to_bob")]),
        ReplayChatCompletionClient(["Bob's birthday is on 1st January."]),
    )
    first = await team.run(task="What is bob's birthday?")
    assert chat(first.messages)[-1] == "Bob:Bob's birthday is on 1st January."
    state = json.loads(json.dumps(await team.save_state()))
    assert state["agent_states"]["SwarmManager"]["ready"] == ["Bob"]

    bob_model = ReplayChatCompletionClient(["He will be 40.", "Anything else?"])
    restored = build(ReplayChatCompletionClient([]), bob_model)
    await restored.load_state(state)
    result = await restored.run(task="How old will he be?")
    # Bob kept the turn (no handoff since), and remembers the conversation.
    assert chat(result.messages) == [
        "user:How old will he be?",
        "Bob:He will be 40.",
        "Bob:Anything else?",
    ]
    assert said(bob_model.requests[0]) == [
        "user:What is bob's birthday?",
        "Alice:Transferred to Bob, adopting the role of Bob immediately.",
        "Bob:Bob's birthday is on 1st January.",
        "user:How old will he be?",
    ]


async def test_b24_graph_flow_state_round_trip_mid_loop() -> None:
    def build(writer_model: ReplayChatCompletionClient, critic_replies: Sequence[str]) -> GraphFlow:
        writer = AssistantAgent("writer", writer_model)
        critic = AssistantAgent("critic", ReplayChatCompletionClient(critic_replies))
        summary = AssistantAgent("summary", ReplayChatCompletionClient(["Done: a haiku."]))
        builder = DiGraphBuilder().add_node(writer).add_node(critic).add_node(summary)
        builder.add_edge(writer, critic)
        builder.add_edge(critic, writer, condition="REVISE")
        builder.add_edge(critic, summary, condition="APPROVE")
        builder.set_entry_point(writer)
        return GraphFlow(builder.get_participants(), builder.build(), max_turns=2)

    team = build(ReplayChatCompletionClient(["Haiku one."]), ["REVISE: more rain."])
    first = await team.run(task="Write a haiku about rain.")
    assert first.stop_reason == "Maximum number of turns 2 reached."
    state = json.loads(json.dumps(await team.save_state()))
    assert state["agent_states"]["GraphFlowManager"]["ready"] == ["writer"]

    writer_model = ReplayChatCompletionClient(["Rain, more rain."])
    restored = build(writer_model, ["APPROVE"])
    await restored.load_state(state)
    result = await restored.run(task="Keep it short.")
    # The pending loop-back turn runs, with the new task in the thread.
    assert chat(result.messages) == [
        "user:Keep it short.",
        "writer:Rain, more rain.",
        "critic:APPROVE",
    ]
    assert result.stop_reason == "Maximum number of turns 2 reached."
    assert said(writer_model.requests[0]) == [
        "user:Write a haiku about rain.",
        "writer:Haiku one.",
        "critic:REVISE: more rain.",
        "user:Keep it short.",
    ]
    final = await restored.run()
    assert chat(final.messages) == ["summary:Done: a haiku."]
    assert final.stop_reason == "Digraph execution is complete"
