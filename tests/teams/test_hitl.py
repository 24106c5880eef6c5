"""Human-in-the-loop: feedback during a run (UserProxyAgent) and between runs
(max_turns, HandoffTermination, Swarm handoffs, persisted sessions).

Scripted models (``ReplayChatCompletionClient``) and scripted "humans" (input functions
that answer from a list or wait on an ``asyncio`` queue).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from flowlib.agents import AssistantAgent, UserProxyAgent
from flowlib.base import CancellationToken, Handoff
from flowlib.conditions import (
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    TextMentionTermination,
)
from flowlib.errors import NodeExecutionError
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    UserInputRequestedEvent,
)
from flowlib.models import (
    AssistantMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResultMessage,
    LLMMessage,
    ReplayChatCompletionClient,
    RequestUsage,
    UserMessage,
)
from flowlib.teams import RoundRobinGroupChat, Swarm

USAGE = RequestUsage(prompt_tokens=10, completion_tokens=2)


def call(name: str, call_id: str = "call_1") -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, arguments="{}", name=name)],
        usage=USAGE,
        cached=False,
    )


def kinds(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
    return [f"{type(m).__name__}:{m.source}" for m in messages]


def chat(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
    return [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, BaseChatMessage)]


def said(request: Sequence[LLMMessage]) -> list[str]:
    """The user/assistant turns of a model request, as ``source:content`` (no system)."""
    out = []
    for m in request:
        if isinstance(m, (UserMessage, AssistantMessage)):
            out.append(f"{m.source}:{m.content}")
        elif isinstance(m, FunctionExecutionResultMessage):
            out.append("results:" + ",".join(r.content for r in m.content))
    return out


class Human:
    """A scripted person: answers in order and records each prompt and request id."""

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.request_ids: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        self.request_ids.append(UserProxyAgent.InputRequestContext.request_id())
        return self.answers.pop(0)


# --- feedback during a run ----------------------------------------------------------------


async def test_user_proxy_approves_in_a_round_robin() -> None:
    """Appendix B 14: the user types APPROVE; the request event is in the messages."""
    model = ReplayChatCompletionClient(["In endless blue where whispers play.\nTERMINATE"])
    assistant = AssistantAgent("assistant", model)
    human = Human(["APPROVE"])
    user_proxy = UserProxyAgent("user_proxy", input_func=human)
    team = RoundRobinGroupChat(
        [assistant, user_proxy], termination_condition=TextMentionTermination("APPROVE")
    )
    result = await team.run(task="Write a 4-line poem about the ocean.")
    assert kinds(result.messages) == [
        "TextMessage:user",
        "TextMessage:assistant",
        "UserInputRequestedEvent:user_proxy",
        "TextMessage:user_proxy",
    ]
    assert chat(result.messages)[-1] == "user_proxy:APPROVE"
    assert result.stop_reason == "Text 'APPROVE' mentioned"
    event = result.messages[2]
    assert isinstance(event, UserInputRequestedEvent)
    assert human.request_ids == [event.request_id]
    assert human.prompts == ["Enter your response: "]


async def test_user_feedback_reaches_the_assistant_until_approved() -> None:
    model = ReplayChatCompletionClient(["Waves.", "Waves that rhyme, all the time."])
    assistant = AssistantAgent("assistant", model, system_message=None)
    answers: asyncio.Queue[str] = asyncio.Queue()
    asked = asyncio.Event()

    async def reply(prompt: str, token: CancellationToken | None) -> str:
        asked.set()
        return await answers.get()

    user_proxy = UserProxyAgent("user_proxy", input_func=reply)
    team = RoundRobinGroupChat(
        [assistant, user_proxy], termination_condition=TextMentionTermination("APPROVE")
    )
    run = asyncio.ensure_future(team.run(task="A poem."))
    await asked.wait()
    asked.clear()
    answers.put_nowait("Make it rhyme.")
    await asked.wait()
    answers.put_nowait("APPROVE")
    result = await run
    assert chat(result.messages) == [
        "user:A poem.",
        "assistant:Waves.",
        "user_proxy:Make it rhyme.",
        "assistant:Waves that rhyme, all the time.",
        "user_proxy:APPROVE",
    ]
    assert said(model.requests[1]) == [
        "user:A poem.",
        "assistant:Waves.",
        "user_proxy:Make it rhyme.",
    ]


async def test_cancelling_while_the_user_is_asked_cancels_the_input_and_keeps_the_turn() -> None:
    asked = asyncio.Event()
    cancelled = asyncio.Event()
    answer: list[str] = []

    async def reply(prompt: str, token: CancellationToken | None) -> str:
        asked.set()
        if answer:
            return answer[0]
        try:
            await asyncio.Event().wait()  # a person who never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    assistant = AssistantAgent("assistant", ReplayChatCompletionClient(["Draft.", "Final."]))
    user_proxy = UserProxyAgent("user_proxy", input_func=reply)
    team = RoundRobinGroupChat([assistant, user_proxy], max_turns=3)
    token = CancellationToken()
    run = asyncio.ensure_future(team.run(task="Write.", cancellation_token=token))
    await asked.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert cancelled.is_set()
    # The user proxy's turn is asked again on the next run; then the assistant goes on,
    # and the run stops at its third turn, as the uninterrupted run would (issue 20: the
    # cancelled run's budget continues; it used to restart at the resume).
    answer.append("Shorter, please.")
    result = await team.run()
    assert kinds(result.messages) == [
        "UserInputRequestedEvent:user_proxy",
        "TextMessage:user_proxy",
        "TextMessage:assistant",
    ]
    assert result.stop_reason == "Maximum number of turns 3 reached."
    assert chat(result.messages)[:2] == ["user_proxy:Shorter, please.", "assistant:Final."]


async def test_failing_input_function_is_a_node_error_of_the_user_proxy() -> None:
    def broken(prompt: str) -> str:
        raise EOFError("stdin closed")

    user_proxy = UserProxyAgent("user_proxy", input_func=broken)
    team = RoundRobinGroupChat([user_proxy], max_turns=1)
    with pytest.raises(NodeExecutionError, match="`user_proxy`") as caught:
        await team.run(task="Anyone?")
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert "EOFError: stdin closed" in str(caught.value.__cause__)


async def test_nested_team_with_a_user_proxy_loop() -> None:
    """Outer RoundRobin([inner team, user_proxy]) stopped by the user typing exit."""
    writer = AssistantAgent("writer", ReplayChatCompletionClient(["Draft 1.", "Draft 2: exit?"]))
    reviewer = AssistantAgent("reviewer", ReplayChatCompletionClient(["APPROVE", "APPROVE"]))
    inner = RoundRobinGroupChat(
        [writer, reviewer], name="inner", termination_condition=TextMentionTermination("APPROVE")
    )
    human = Human(["", "exit"])  # Enter skips, then exit
    user_proxy = UserProxyAgent("user_proxy", input_func=human)
    team = RoundRobinGroupChat(
        [inner, user_proxy],
        termination_condition=TextMentionTermination("exit", sources=["user_proxy"]),
    )
    result = await team.run(task="Write a haiku.")
    # The writer's "exit?" is not the user's: only the user's exit stops the team.
    assert chat(result.messages) == [
        "user:Write a haiku.",
        "writer:Draft 1.",
        "reviewer:APPROVE",
        "user_proxy:",
        "writer:Draft 2: exit?",
        "reviewer:APPROVE",
        "user_proxy:exit",
    ]
    assert result.stop_reason == "Text 'exit' mentioned"
    assert len(human.prompts) == 2


# --- feedback to the next run -------------------------------------------------------------


async def test_max_turns_one_chatbot_loop() -> None:
    """Appendix B 15: each run stops after the assistant's answer; feedback is the next task."""
    model = ReplayChatCompletionClient(["Endless waves.", "She walks along the tide."])
    assistant = AssistantAgent("assistant", model)
    team = RoundRobinGroupChat([assistant], max_turns=1)
    results = []
    for task in [
        "Write a 4-line poem about the ocean.",
        "Can you make it about a person and its relationship with the ocean",
    ]:
        results.append(await team.run(task=task))
    assert [chat(r.messages) for r in results] == [
        ["user:Write a 4-line poem about the ocean.", "assistant:Endless waves."],
        [
            "user:Can you make it about a person and its relationship with the ocean",
            "assistant:She walks along the tide.",
        ],
    ]
    assert {r.stop_reason for r in results} == {"Maximum number of turns 1 reached."}
    # The conversation is kept between runs: the second call saw the first exchange.
    assert said(model.requests[1]) == [
        "user:Write a 4-line poem about the ocean.",
        "assistant:Endless waves.",
        "user:Can you make it about a person and its relationship with the ocean",
    ]


async def test_lazy_assistant_hands_off_to_the_user_then_resumes() -> None:
    """Appendix B 16: Handoff(target="user") + HandoffTermination, resumed with new info."""
    model = ReplayChatCompletionClient(
        [
            call("transfer_to_user", "call_EAc"),
            "Great! Enjoy the sunny weather in New York!",
            "TERMINATE",
        ]
    )
    lazy = AssistantAgent(
        "lazy_assistant",
        model,
        handoffs=[Handoff(target="user", message="Transfer to user.")],
        system_message="If you cannot complete the task, transfer to user.",
    )
    termination = HandoffTermination(target="user") | TextMentionTermination("TERMINATE")
    team = RoundRobinGroupChat([lazy], termination_condition=termination)

    first = await team.run(task="What is the weather in New York?")
    assert [type(m) for m in first.messages] == [
        TextMessage,
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        HandoffMessage,
    ]
    request, execution, handoff = first.messages[1:]
    assert isinstance(request, ToolCallRequestEvent)
    assert request.content[0].name == "transfer_to_user"
    assert isinstance(execution, ToolCallExecutionEvent)
    assert [(r.content, r.call_id) for r in execution.content] == [
        ("Transfer to user.", "call_EAc")
    ]
    assert isinstance(handoff, HandoffMessage)
    assert (handoff.source, handoff.target, handoff.content) == (
        "lazy_assistant",
        "user",
        "Transfer to user.",
    )
    assert first.stop_reason == "Handoff to user from lazy_assistant detected."

    second = await team.run(task="The weather in New York is sunny.")
    assert chat(second.messages) == [
        "user:The weather in New York is sunny.",
        "lazy_assistant:Great! Enjoy the sunny weather in New York!",
        "lazy_assistant:TERMINATE",
    ]
    assert second.stop_reason == "Text 'TERMINATE' mentioned"
    # The resumed model call knew the whole story: question, handoff call and result, info.
    assert said(model.requests[1]) == [
        "user:What is the weather in New York?",
        "lazy_assistant:" + str(request.content),
        "results:Transfer to user.",
        "user:The weather in New York is sunny.",
    ]


async def test_source_match_termination_returns_control_after_an_agent() -> None:
    writer = AssistantAgent("writer", ReplayChatCompletionClient(["Draft.", "Better draft."]))
    critic = AssistantAgent("critic", ReplayChatCompletionClient(["Needs a title.", "Good."]))
    team = RoundRobinGroupChat(
        [writer, critic], termination_condition=SourceMatchTermination(["critic"])
    )
    first = await team.run(task="Write.")
    assert chat(first.messages) == ["user:Write.", "writer:Draft.", "critic:Needs a title."]
    assert first.stop_reason == "'critic' answered"
    second = await team.run(task="Agreed, add a title.")
    assert chat(second.messages) == [
        "user:Agreed, add a title.",
        "writer:Better draft.",
        "critic:Good.",
    ]
    assert second.stop_reason == "'critic' answered"


# --- Swarm --------------------------------------------------------------------------------


def alice_team(model: ReplayChatCompletionClient) -> Swarm:
    alice = AssistantAgent(
        "Alice",
        model,
        handoffs=["user"],
        system_message="You are Alice; ask the user for help if needed.",
    )
    termination = HandoffTermination(target="user") | MaxMessageTermination(3)
    return Swarm([alice], termination_condition=termination)


async def test_swarm_hands_off_to_the_user_and_resumes_with_a_handoff_message() -> None:
    """Appendix B 20 (HITL): resume with HandoffMessage(source="user", target="Alice")."""
    model = ReplayChatCompletionClient(
        [call("transfer_to_user"), "Bob's birthday is on 1st January.", "Anything else?"]
    )
    team = alice_team(model)
    first = await team.run(task="What is bob's birthday?")
    assert kinds(first.messages) == [
        "TextMessage:user",
        "ToolCallRequestEvent:Alice",
        "ToolCallExecutionEvent:Alice",
        "HandoffMessage:Alice",
    ]
    assert first.stop_reason == "Handoff to user from Alice detected."

    answer = HandoffMessage(
        source="user", target="Alice", content="Bob's birthday is on 1st January."
    )
    second = await team.run(task=answer)
    assert chat(second.messages) == [
        "user:Bob's birthday is on 1st January.",
        "Alice:Bob's birthday is on 1st January.",
        "Alice:Anything else?",
    ]
    assert second.stop_reason == "Maximum number of messages 3 reached, current message count: 3"
    assert said(model.requests[1])[-1] == "user:Bob's birthday is on 1st January."


async def test_persisted_swarm_session_resumes_in_a_new_process(tmp_path: Path) -> None:
    """Save when the run stops for the user, store, load into a new team when they answer."""
    first_model = ReplayChatCompletionClient([call("transfer_to_user")])
    team = alice_team(first_model)
    result = await team.run(task="What is bob's birthday?")
    assert result.stop_reason == "Handoff to user from Alice detected."
    path = tmp_path / "session.json"
    path.write_text(json.dumps(await team.save_state()))

    # Later, elsewhere: the same configuration, a fresh model client, the stored state.
    second_model = ReplayChatCompletionClient(["It is on 1st January.", "Bye."])
    restored = alice_team(second_model)
    await restored.load_state(json.loads(path.read_text()))
    answer = HandoffMessage(source="user", target="Alice", content="Bob was born on 1st January.")
    resumed = await restored.run(task=answer)
    assert chat(resumed.messages)[:2] == [
        "user:Bob was born on 1st January.",
        "Alice:It is on 1st January.",
    ]
    # Alice's restored context holds the whole conversation.
    assert said(second_model.requests[0]) == [
        "user:What is bob's birthday?",
        "Alice:[FunctionCall(id='call_1', arguments='{}', name='transfer_to_user')]",
        "results:Transferred to user, adopting the role of user immediately.",
        "user:Bob was born on 1st January.",
    ]


async def test_user_proxy_in_a_swarm_answers_a_handoff_with_a_handoff_back() -> None:
    model = ReplayChatCompletionClient([call("transfer_to_user_proxy"), "Thanks, noted."])
    alice = AssistantAgent("Alice", model, handoffs=["user_proxy"])
    human = Human(["Bob's birthday is on 1st January."])
    user_proxy = UserProxyAgent("user_proxy", input_func=human)
    team = Swarm([alice, user_proxy], termination_condition=TextMentionTermination("noted"))
    result = await team.run(task="What is bob's birthday?")
    assert kinds(result.messages) == [
        "TextMessage:user",
        "ToolCallRequestEvent:Alice",
        "ToolCallExecutionEvent:Alice",
        "HandoffMessage:Alice",
        "UserInputRequestedEvent:user_proxy",
        "HandoffMessage:user_proxy",
        "TextMessage:Alice",
    ]
    back = result.messages[5]
    assert isinstance(back, HandoffMessage)
    assert (back.target, back.content) == ("Alice", "Bob's birthday is on 1st January.")
    assert human.prompts == ["Handoff received from Alice. Enter your response: "]
    assert result.stop_reason == "Text 'noted' mentioned"
    assert team.trace.steps == ["Alice", "user_proxy", "Alice"]
