"""SocietyOfMindAgent: an inner team's transcript summed up by a model, inside an outer
GraphFlow (Appendix B 21), with the exact model request, context across calls, reset,
state, errors and cancellation."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from _agents import Fake, texts, wait_for

from flowlib.agents import AssistantAgent, SocietyOfMindAgent
from flowlib.base import CancellationToken
from flowlib.conditions import TextMentionTermination
from flowlib.errors import NodeExecutionError
from flowlib.messages import HandoffMessage, TextMessage
from flowlib.model_context import BufferedChatCompletionContext, UnboundedChatCompletionContext
from flowlib.models import (
    AssistantMessage,
    ModelInfo,
    ReplayChatCompletionClient,
    SystemMessage,
    UserMessage,
)
from flowlib.teams import DiGraphBuilder, GraphFlow

GUARD = 10
INSTRUCTION = SystemMessage(content=SocietyOfMindAgent.DEFAULT_INSTRUCTION)
RESPONSE_PROMPT = SystemMessage(content=SocietyOfMindAgent.DEFAULT_RESPONSE_PROMPT)


class Remembering(Fake):
    """A Fake whose record of what it saw survives resets (``all_seen``)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.before_resets: list[list[str]] = []

    @property
    def all_seen(self) -> list[list[str]]:
        return [*self.before_resets, *self.seen]

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.before_resets.extend(self.seen)
        await super().on_reset(cancellation_token)


def chain(agents: Sequence[Any], **kw: Any) -> GraphFlow:
    """A GraphFlow running ``agents`` one after another."""
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for source, target in itertools.pairwise(agents):
        builder.add_edge(source, target)
    return GraphFlow(builder.get_participants(), builder.build(), **kw)


def writer_and_editor() -> tuple[Remembering, Remembering, GraphFlow]:
    writer = Remembering("assistant1", ["A story.", "A second story."])
    editor = Remembering("assistant2", ["Good. APPROVE", "Fine. APPROVE"])
    inner = chain([writer, editor], termination_condition=TextMentionTermination("APPROVE"))
    return writer, editor, inner


async def test_inner_team_then_translator_in_an_outer_graph_flow() -> None:
    """Appendix B 21, with a GraphFlow A -> B as the outer team."""
    writer, editor, inner = writer_and_editor()
    model = ReplayChatCompletionClient(["Once upon a time... the end."])
    society = SocietyOfMindAgent("society_of_mind", team=inner, model_client=model)
    translator = Fake("assistant3", ["Érase una vez... fin."])
    team = chain([society, translator], max_turns=2)

    task = "Write a short story with a surprising ending."
    result = await asyncio.wait_for(team.run(task=task), GUARD)

    assert texts(result.messages) == [
        f"user:{task}",
        "assistant1:A story.",  # the inner team's messages stream through
        "assistant2:Good. APPROVE",
        "society_of_mind:Once upon a time... the end.",
        "assistant3:Érase una vez... fin.",
    ]
    # The outer thread only holds the society's answer: that is what the translator gets.
    assert translator.seen == [[f"user:{task}", "society_of_mind:Once upon a time... the end."]]
    assert writer.all_seen == [[f"user:{task}"]]
    # The model sees: instruction, the request, the inner transcript, the response prompt.
    assert model.requests == [
        [
            INSTRUCTION,
            UserMessage(content=task, source="user"),
            UserMessage(content="A story.", source="assistant1"),
            UserMessage(content="Good. APPROVE", source="assistant2"),
            RESPONSE_PROMPT,
        ]
    ]
    # The inner team was reset after the call.
    assert (writer.resets, editor.resets) == (1, 1)
    assert (writer.turns, editor.turns) == (0, 0)


async def test_second_call_gives_the_fresh_team_the_earlier_conversation() -> None:
    writer, editor, inner = writer_and_editor()
    writer.replies = ["A story.", "A story."]
    editor.replies = ["APPROVE", "APPROVE"]
    model = ReplayChatCompletionClient(["First answer.", "Second answer."])
    society = SocietyOfMindAgent("som", team=inner, model_client=model)

    await society.run(task="Write a story.")
    second = await society.run(task="Now make it shorter.")

    assert second.messages[-1].to_text() == "Second answer."
    # writer's turns were reset between calls, so its second run starts afresh (turn 0)
    # and receives the earlier conversation as a handoff's context, then the new task.
    [_, [handoff_text, new_task]] = writer.all_seen
    assert handoff_text == "som:relevant previous messages"
    assert new_task == "user:Now make it shorter."
    earlier = [
        UserMessage(content="Write a story.", source="user"),
        AssistantMessage(content="First answer.", source="som"),
    ]
    assert model.requests[1] == [
        INSTRUCTION,
        *earlier,
        UserMessage(content="Now make it shorter.", source="user"),
        UserMessage(content="A story.", source="assistant1"),
        UserMessage(content="APPROVE", source="assistant2"),
        RESPONSE_PROMPT,
    ]


async def test_previous_messages_arrive_as_handoff_context() -> None:
    captured: list[Any] = []

    def inner_agent(messages: Sequence[Any]) -> str:
        captured.extend(messages)
        return "done"

    builder = DiGraphBuilder().add_node(inner_agent)
    inner = GraphFlow(builder.get_participants(), builder.build())
    preloaded = [UserMessage(content="My name is Ada.", source="user")]
    society = SocietyOfMindAgent(
        "som",
        team=inner,
        model_client=ReplayChatCompletionClient(["Hi Ada."]),
        model_context=UnboundedChatCompletionContext(preloaded),
    )
    await society.run(task="Greet me.")
    handoff, request = captured
    assert isinstance(handoff, HandoffMessage)
    assert (handoff.source, handoff.target, handoff.context) == ("som", "", preloaded)
    assert request.to_text() == "Greet me."


async def test_buffered_context_limits_what_the_model_sees() -> None:
    def inner_agent(messages: Sequence[Any]) -> str:
        return "inner"

    builder = DiGraphBuilder().add_node(inner_agent)
    inner = GraphFlow(builder.get_participants(), builder.build())
    model = ReplayChatCompletionClient(["one", "two"])
    society = SocietyOfMindAgent(
        "som", inner, model, model_context=BufferedChatCompletionContext(buffer_size=1)
    )
    await society.run(task="first")
    await society.run(task="second")
    assert model.requests[1] == [
        INSTRUCTION,
        UserMessage(content="second", source="user"),
        UserMessage(content="inner", source="inner_agent"),
        RESPONSE_PROMPT,
    ]


async def test_custom_prompts_and_single_system_message_models() -> None:
    def inner_agent(messages: Sequence[Any]) -> str:
        return "draft"

    builder = DiGraphBuilder().add_node(inner_agent)
    inner = GraphFlow(builder.get_participants(), builder.build())
    info = ModelInfo(
        vision=False,
        function_calling=False,
        json_output=False,
        family="unknown",
        structured_output=False,
        multiple_system_messages=False,
    )
    model = ReplayChatCompletionClient(["final"], model_info=info)
    society = SocietyOfMindAgent(
        "som", inner, model, instruction="Transcript:", response_prompt="Answer now."
    )
    await society.run(task="go")
    assert model.requests[0] == [
        SystemMessage(content="Transcript:"),
        UserMessage(content="go", source="user"),
        UserMessage(content="draft", source="inner_agent"),
        UserMessage(content="Answer now.", source="user"),
    ]


async def test_no_inner_message_means_no_response_and_no_model_call() -> None:
    quiet = Fake("quiet")
    inner = chain([quiet], termination_condition=TextMentionTermination("STOP"))
    model = ReplayChatCompletionClient([])
    society = SocietyOfMindAgent("som", inner, model)
    response = await society.on_messages(
        [TextMessage(content="STOP right there", source="user")], CancellationToken()
    )
    assert response.chat_message.to_text() == "No response."
    assert model.requests == [] and quiet.turns == 0


async def test_inner_error_propagates_and_team_is_reset() -> None:
    broken = Remembering("broken", fail=ValueError("boom"))
    inner = chain([broken])
    society = SocietyOfMindAgent("som", inner, ReplayChatCompletionClient(["x"]))
    with pytest.raises(NodeExecutionError):
        await society.on_messages([TextMessage(content="go", source="user")], CancellationToken())
    assert broken.resets == 1
    broken.fail = None
    response = await society.on_messages(
        [TextMessage(content="again", source="user")], CancellationToken()
    )
    assert response.chat_message.to_text() == "x"
    # A fresh team: the failed turn is not retried with the old task.
    assert broken.all_seen == [["user:go"], ["user:again"]]


async def test_cancellation_aborts_the_inner_team_and_resets_it() -> None:
    gate = asyncio.Event()
    slow = Fake("slow", before_reply=wait_for(gate))
    inner = chain([slow])
    society = SocietyOfMindAgent("som", inner, ReplayChatCompletionClient(["x"]))
    token = CancellationToken()
    call = asyncio.ensure_future(
        society.on_messages([TextMessage(content="go", source="user")], token)
    )
    while not slow.seen:
        await asyncio.sleep(0.01)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, GUARD)
    assert slow.resets == 1


async def test_reset_pause_resume_and_state() -> None:
    writer, _, inner = writer_and_editor()
    context = UnboundedChatCompletionContext([UserMessage(content="preloaded", source="user")])
    society = SocietyOfMindAgent(
        "som", inner, ReplayChatCompletionClient(["answer"]), model_context=context
    )
    assert society.team is inner and society.model_context is context
    await society.run(task="Write.")
    state = await society.save_state()
    assert state["type"] == "SocietyOfMindAgentState"
    assert state["inner_team_state"]["type"] == "TeamState"

    _, _, other_inner = writer_and_editor()
    restored = SocietyOfMindAgent("som", other_inner, ReplayChatCompletionClient([]))
    await restored.load_state(state)
    assert await restored.model_context.get_messages() == await context.get_messages()
    with pytest.raises(ValueError, match="cannot load a state"):
        await restored.load_state({"type": "Nope"})

    token = CancellationToken()
    await society.on_pause(token)
    await society.on_resume(token)
    assert (writer.pauses, writer.resumes) == (1, 1)
    await society.on_reset(token)
    assert await context.get_messages() == []  # preloaded messages are cleared too
    assert writer.resets == 2  # once after the call, once by on_reset


def test_defaults_and_validation() -> None:
    _, _, inner = writer_and_editor()
    society = SocietyOfMindAgent("som", inner, ReplayChatCompletionClient([]))
    assert society.description == SocietyOfMindAgent.DEFAULT_DESCRIPTION
    assert SocietyOfMindAgent.DEFAULT_DESCRIPTION == (
        "An agent that uses an inner team of agents to generate responses."
    )
    assert SocietyOfMindAgent.DEFAULT_INSTRUCTION.startswith("Earlier you were asked")
    assert list(society.produced_message_types) == [TextMessage]
    with pytest.raises(TypeError, match="needs a Team"):
        SocietyOfMindAgent("som", Fake("x"), ReplayChatCompletionClient([]))  # type: ignore[arg-type]


async def test_documented_example_with_assistant_agents() -> None:
    """Appendix B 21 as the documents write it, AssistantAgents included (scripted
    models), with GraphFlow standing in for RoundRobinGroupChat."""
    agent1 = AssistantAgent(
        "assistant1",
        model_client=ReplayChatCompletionClient(["A story whose twist is the narrator."]),
        system_message="You are a writer, write well.",
    )
    editor_model = ReplayChatCompletionClient(["APPROVE"])
    agent2 = AssistantAgent(
        "assistant2",
        model_client=editor_model,
        system_message="You are an editor, provide critical feedback. Respond with 'APPROVE' "
        "if the text addresses all feedbacks.",
    )
    inner_team = chain([agent1, agent2], termination_condition=TextMentionTermination("APPROVE"))
    som_model = ReplayChatCompletionClient(["The narrator was the cat."])
    society_of_mind_agent = SocietyOfMindAgent(
        "society_of_mind", team=inner_team, model_client=som_model
    )
    translator_model = ReplayChatCompletionClient(["El narrador era el gato."])
    agent3 = AssistantAgent(
        "assistant3", model_client=translator_model, system_message="Translate the text to Spanish."
    )
    team = chain([society_of_mind_agent, agent3], max_turns=2)

    result = await asyncio.wait_for(
        team.run(task="Write a short story with a surprising ending."), GUARD
    )
    assert [m.source for m in result.messages] == [
        "user",
        "assistant1",
        "assistant2",
        "society_of_mind",
        "assistant3",
    ]
    assert result.messages[-1].to_text() == "El narrador era el gato."
    # The editor saw the writer's story; the translator only the society's answer.
    assert editor_model.requests[0][-1] == UserMessage(
        content="A story whose twist is the narrator.", source="assistant1"
    )
    assert translator_model.requests[0][-1] == UserMessage(
        content="The narrator was the cat.", source="society_of_mind"
    )
    assert [type(m) for m in som_model.requests[0]] == [
        SystemMessage,
        UserMessage,
        UserMessage,
        UserMessage,
        SystemMessage,
    ]


async def test_run_returns_the_task_and_the_answer_as_autogen_does() -> None:
    """AutoGen's SocietyOfMindAgent.run() returns the task and the final response; the
    inner team's messages are streamed (run_stream) but not in the Response."""
    _writer, _editor, inner = writer_and_editor()
    model = ReplayChatCompletionClient(["Final.", "Final again."])
    society = SocietyOfMindAgent("society_of_mind", team=inner, model_client=model)

    result = await society.run(task="Write.")
    assert texts(result.messages) == ["user:Write.", "society_of_mind:Final."]
    assert result.stop_reason is None

    streamed = [item async for item in society.run_stream(task="Again.")]
    assert texts([m for m in streamed[:-1] if isinstance(m, TextMessage)]) == [
        "user:Again.",
        "assistant1:A story.",  # the inner team was reset after the first call
        "assistant2:Good. APPROVE",
        "society_of_mind:Final again.",
    ]
    response = await SocietyOfMindAgent(
        "s2", team=writer_and_editor()[2], model_client=ReplayChatCompletionClient(["x"])
    ).on_messages([TextMessage(content="go", source="user")], CancellationToken())
    assert response.inner_messages == []
