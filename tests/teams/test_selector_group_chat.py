"""SelectorGroupChat: the selector hub, every documented parameter, and state."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import pytest

from flowlib.agents import AssistantAgent, UserProxyAgent
from flowlib.base import CancellationToken, TaskResult
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.errors import DuplicateNodeError, NodeExecutionError, UnboundedLoopError
from flowlib.graph import DiGraph, Selected
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
    ModelClientStreamingChunkEvent,
    SelectorEvent,
    SelectSpeakerEvent,
    TextMessage,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
)
from flowlib.model_context import BufferedChatCompletionContext
from flowlib.models import (
    AssistantMessage,
    CreateResult,
    FunctionCall,
    LLMMessage,
    ModelInfo,
    ReplayChatCompletionClient,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from flowlib.teams import RoundRobinGroupChat, SelectorGroupChat
from flowlib.teams._selector import DEFAULT_SELECTOR_PROMPT, SelectorRouter
from flowlib.testing import ScriptedAgent

Thread = Sequence[BaseAgentEvent | BaseChatMessage]
SIMPLE_PROMPT = "R:\n{roles}\nP: {participants}\nH:\n{history}"
SELECTOR_LOGGER = "flowlib.teams._selector"


def agent(name: str, description: str | None = None) -> ScriptedAgent:
    """An agent that replies ``<name>1``, ``<name>2``, ...; described as ``Does <name>.``"""
    return ScriptedAgent(
        name,
        lambda turn, _: f"{name}{turn + 1}",
        description=description or f"Does {name}.",
    )


def agents(*names: str) -> list[ScriptedAgent]:
    """Agents that reply ``<name>1``, ``<name>2``, ... and are described as ``Does <name>.``"""
    return [agent(name) for name in names]


def sources(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
    return [m.source for m in messages if isinstance(m, BaseChatMessage)]


def prompt_of(request: Sequence[LLMMessage]) -> str:
    first = request[0]
    assert isinstance(first, (SystemMessage, UserMessage))
    assert isinstance(first.content, str)
    return first.content


def call(name: str, arguments: dict[str, Any], call_id: str = "1") -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=json.dumps(arguments))],
        usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
        cached=False,
    )


# --- the graph ---------------------------------------------------------------------------


def test_team_compiles_to_a_valid_hub() -> None:
    inner = RoundRobinGroupChat(agents("x", "y"), name="inner", max_turns=2)
    team = SelectorGroupChat(
        [*agents("a", "b"), inner], ReplayChatCompletionClient([]), max_turns=5, name="hub"
    )
    graph = team.graph
    graph.graph_validate()
    assert graph.pattern == "selector"
    assert graph.entry_nodes() == ["hub_selector"]
    assert list(graph.nodes) == ["hub_selector", "a", "b", "inner"]
    router = graph.nodes["hub_selector"]
    assert router.kind == "router"
    assert [(e.target, e.condition) for e in router.edges] == [
        (n, Selected(target=n)) for n in ("a", "b", "inner")
    ]
    for name, kind in (("a", "agent"), ("b", "agent"), ("inner", "team")):
        node = graph.nodes[name]
        assert node.kind == kind
        assert node.activation == "any"
        assert [(e.target, e.condition) for e in node.edges] == [("hub_selector", None)]
    assert router.activation == "any"
    dumped = graph.dump()
    assert dumped["nodes"]["hub_selector"]["edges"][0]["condition"] == {
        "kind": "selected",
        "target": "a",
    }
    assert DiGraph.load(json.loads(json.dumps(dumped))) == graph
    assert isinstance(team.selector, SelectorRouter)
    assert team.selector.name == "hub_selector"


def test_fewer_than_two_participants_raise() -> None:
    with pytest.raises(ValueError, match="at least two participants"):
        SelectorGroupChat(agents("a"), ReplayChatCompletionClient([]), max_turns=1)
    with pytest.raises(ValueError, match="at least two participants"):
        SelectorGroupChat([], ReplayChatCompletionClient([]), max_turns=1)


def test_duplicate_names_raise() -> None:
    with pytest.raises(DuplicateNodeError, match="`a`") as caught:
        SelectorGroupChat([*agents("a", "b"), *agents("a")], ReplayChatCompletionClient([]))
    assert isinstance(caught.value, ValueError)


def test_participant_named_like_the_selector_raises() -> None:
    with pytest.raises(DuplicateNodeError, match=r"`team_selector`.*another `name=`"):
        SelectorGroupChat(
            agents("a", "team_selector"), ReplayChatCompletionClient([]), name="team", max_turns=1
        )


def test_invalid_options_raise() -> None:
    client = ReplayChatCompletionClient([])
    with pytest.raises(ValueError, match="runtime"):
        SelectorGroupChat(agents("a", "b"), client, max_turns=1, runtime=object())
    with pytest.raises(ValueError, match=r"selector_prompt is not a valid template.*\{roles\}"):
        SelectorGroupChat(agents("a", "b"), client, max_turns=1, selector_prompt="{agents}")
    with pytest.raises(ValueError, match="selector_prompt"):
        SelectorGroupChat(agents("a", "b"), client, max_turns=1, selector_prompt="{roles")
    with pytest.raises(ValueError, match="max_selector_attempts"):
        SelectorGroupChat(agents("a", "b"), client, max_turns=1, max_selector_attempts=0)
    with pytest.raises(UnboundedLoopError):
        SelectorGroupChat(agents("a", "b"), client)


def test_default_prompt_is_the_documented_one() -> None:
    assert DEFAULT_SELECTOR_PROMPT == (
        "You are in a role play game. The following roles are available:\n{roles}.\n"
        "Read the following conversation. Then select the next role from {participants} to "
        "play. Only return the role.\n\n{history}\n\nRead the above conversation. Then select "
        "the next role from {participants} to play. Only return the role.\n"
    )


# --- the documented scenarios ------------------------------------------------------------


def search_web_tool(query: str) -> str:
    if "2006-2007" in query:
        return "Dwayne Wade: 1397 points"
    if "2007-2008" in query:
        return "Dwayne Wade rebounds 2007-2008: 214."
    return "Dwayne Wade rebounds 2008-2009: 398."


def percentage_change_tool(start: float, end: float) -> float:
    return ((end - start) / start) * 100


async def test_selector_func_returns_to_the_planner_and_the_model_picks_the_rest() -> None:
    """Appendix B 18: the planning agent speaks after every other agent."""
    big_model = ReplayChatCompletionClient(
        [
            "1. WebSearchAgent : find the top scorer",  # planner
            call("search_web_tool", {"query": "Miami Heat 2006-2007"}),  # web search
            "2. DataAnalystAgent : compute the change",  # planner
            call("percentage_change_tool", {"start": 214, "end": 398}),  # analyst
            "Dwayne Wade, up 85.98%. TERMINATE",  # planner
        ]
    )
    planning_agent = AssistantAgent(
        "PlanningAgent",
        big_model,
        description="An agent for planning tasks, this agent should be the first to engage "
        "when given a new task.",
    )
    web_search_agent = AssistantAgent(
        "WebSearchAgent", big_model, tools=[search_web_tool], description="A web search agent."
    )
    data_analyst_agent = AssistantAgent(
        "DataAnalystAgent",
        big_model,
        tools=[percentage_change_tool],
        description="A data analyst agent. Useful for performing calculations.",
    )
    decided: list[str | None] = []

    def selector_func(messages: Thread) -> str | None:
        choice = planning_agent.name if messages[-1].source != planning_agent.name else None
        decided.append(choice)
        return choice

    small_model = ReplayChatCompletionClient(["WebSearchAgent", "DataAnalystAgent"])
    team = SelectorGroupChat(
        [planning_agent, web_search_agent, data_analyst_agent],
        model_client=small_model,
        termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(25),
        selector_func=selector_func,
    )
    result = await team.run(task="Who scored most in 2006-2007, and the rebound change?")

    assert sources(result.messages) == [
        "user",
        "PlanningAgent",
        "WebSearchAgent",
        "PlanningAgent",
        "DataAnalystAgent",
        "PlanningAgent",
    ]
    assert result.stop_reason == "Text 'TERMINATE' mentioned"
    summaries = [m for m in result.messages if isinstance(m, ToolCallSummaryMessage)]
    assert [m.content for m in summaries] == ["Dwayne Wade: 1397 points", "85.98130841121495"]
    # The smaller model is asked only when the function defers, and never for the planner.
    assert decided == ["PlanningAgent", None, "PlanningAgent", None, "PlanningAgent"]
    assert len(small_model.requests) == 2
    for request in small_model.requests:
        prompt = prompt_of(request)
        assert '["WebSearchAgent", "DataAnalystAgent"]' in prompt
        assert "PlanningAgent:" not in prompt.split("Read the following")[0]
    assert "PlanningAgent: 2. DataAnalystAgent : compute the change" in prompt_of(
        small_model.requests[1]
    )
    assert big_model.remaining == 0


def check_calculation(x: int, y: int, answer: int) -> str:
    return "Correct!" if x + y == answer else "Incorrect!"


async def test_calculation_check_loop_decided_by_selector_func() -> None:
    """Appendix B 19: Agent1 answers, Agent2 checks, until "Correct!"."""
    agent1 = AssistantAgent(
        "Agent1",
        ReplayChatCompletionClient(["3", "2"]),
        description="For calculation",
        system_message="Calculate the sum of two numbers",
    )
    agent2 = AssistantAgent(
        "Agent2",
        ReplayChatCompletionClient(
            [
                call("check_calculation", {"x": 1, "y": 1, "answer": 3}),
                call("check_calculation", {"x": 1, "y": 1, "answer": 2}, "2"),
            ]
        ),
        tools=[check_calculation],
        description="For checking calculation",
        system_message="Check the answer and respond with 'Correct!' or 'Incorrect!'",
    )

    def selector_func(messages: Thread) -> str | None:
        if len(messages) == 1 or messages[-1].to_text() == "Incorrect!":
            return "Agent1"
        if messages[-1].source == "Agent1":
            return "Agent2"
        return None

    selector_model = ReplayChatCompletionClient([])
    team = SelectorGroupChat(
        [agent1, agent2],
        model_client=selector_model,
        selector_func=selector_func,
        termination_condition=TextMentionTermination("Correct!"),
    )
    result = await team.run(task="What is 1 + 1?")

    chat = [m for m in result.messages if isinstance(m, BaseChatMessage)]
    assert [(m.source, m.to_text()) for m in chat] == [
        ("user", "What is 1 + 1?"),
        ("Agent1", "3"),
        ("Agent2", "Incorrect!"),
        ("Agent1", "2"),
        ("Agent2", "Correct!"),
    ]
    assert result.stop_reason == "Text 'Correct!' mentioned"
    assert selector_model.requests == []


# --- the prompt ----------------------------------------------------------------------------


async def test_prompt_lists_candidates_roles_and_history() -> None:
    a, c = agents("a", "c")
    b = agent("b", "Writes\n  long   texts.")  # whitespace is collapsed to one line
    client = ReplayChatCompletionClient(["a", "I pick c."])
    team = SelectorGroupChat([a, b, c], client, selector_prompt=SIMPLE_PROMPT, max_turns=2)
    result = await team.run(task="Go.\n")
    assert sources(result.messages) == ["user", "a", "c"]
    first, second = client.requests
    assert first == [
        UserMessage(
            content='R:\na: Does a.\nb: Writes long texts.\nc: Does c.\nP: ["a", "b", "c"]\n'
            "H:\nuser: Go.",
            source="user",
        )
    ]
    # The previous speaker is not a candidate: not listed, not in the roles.
    assert prompt_of(second) == (
        'R:\nb: Writes long texts.\nc: Does c.\nP: ["b", "c"]\nH:\nuser: Go.\n\na: a1'
    )


async def test_default_prompt_and_openai_models_get_a_system_message() -> None:
    info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=True,
        family="gpt-4o",
        structured_output=True,
    )
    client = ReplayChatCompletionClient(["b"], model_info=info)
    team = SelectorGroupChat(agents("a", "b"), client, max_turns=1)
    await team.run(task="Hello")
    (request,) = client.requests
    assert request == [
        SystemMessage(
            content=DEFAULT_SELECTOR_PROMPT.format(
                roles="a: Does a.\nb: Does b.", participants='["a", "b"]', history="user: Hello"
            )
        )
    ]


# --- candidates and the repeated-speaker rule ---------------------------------------------


async def test_two_participants_alternate_without_model_calls() -> None:
    client = ReplayChatCompletionClient(["b"])
    team = SelectorGroupChat(agents("a", "b"), client, max_turns=5)
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "b", "a", "b", "a", "b"]
    assert len(client.requests) == 1  # only the first turn had two candidates


async def test_model_choosing_the_previous_speaker_gets_feedback_and_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = ReplayChatCompletionClient(["a", "a", "b"])
    team = SelectorGroupChat(agents("a", "b", "c"), client, max_turns=2)
    with caplog.at_level(logging.WARNING, logger=SELECTOR_LOGGER):
        result = await team.run(task="go")
    assert sources(result.messages) == ["user", "a", "b"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "The selector model chose the previous speaker `a` although allow_repeated_speaker "
        "is False (attempt 1 of 3)."
    ]
    retry = client.requests[2]
    assert retry[1:] == [
        AssistantMessage(content="a", source="SelectorGroupChat_selector"),
        UserMessage(
            content="Repeated speaker is not allowed, please select a different name from: "
            '["b", "c"].',
            source="user",
        ),
    ]


async def test_allow_repeated_speaker_keeps_the_previous_speaker_a_candidate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = ReplayChatCompletionClient(["a", "a", "a"])
    team = SelectorGroupChat(agents("a", "b"), client, max_turns=3, allow_repeated_speaker=True)
    with caplog.at_level(logging.WARNING, logger=SELECTOR_LOGGER):
        result = await team.run(task="go")
    assert sources(result.messages) == ["user", "a", "a", "a"]
    assert len(client.requests) == 3
    assert all('["a", "b"]' in prompt_of(r) for r in client.requests)
    assert caplog.records == []


async def test_candidate_func_narrows_the_choice_and_overrides_repeats() -> None:
    seen: list[list[str]] = []

    def candidate_func(messages: Thread) -> list[str]:
        seen.append(sources(messages))
        return ["a"] if messages[-1].source == "user" else ["a", "c"]

    client = ReplayChatCompletionClient(["a", "c"])
    team = SelectorGroupChat(
        agents("a", "b", "c"),
        client,
        candidate_func=candidate_func,
        selector_prompt=SIMPLE_PROMPT,
        max_turns=3,
    )
    result = await team.run(task="go")
    # One candidate: no model call. Then the previous speaker `a` may repeat.
    assert sources(result.messages) == ["user", "a", "a", "c"]
    assert seen == [["user"], ["user", "a"], ["user", "a", "a"]]
    assert [prompt_of(r).split("\nH:")[0] for r in client.requests] == [
        'R:\na: Does a.\nc: Does c.\nP: ["a", "c"]'
    ] * 2


async def test_async_candidate_func() -> None:
    async def candidate_func(messages: Thread) -> list[str]:
        return ["c"]

    team = SelectorGroupChat(
        agents("a", "b", "c"),
        ReplayChatCompletionClient([]),
        candidate_func=candidate_func,
        allow_repeated_speaker=True,
        max_turns=2,
    )
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "c", "c"]


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ([], "candidate_func returned []; it must return a non-empty list"),
        (None, "candidate_func returned None; it must return a non-empty list"),
        ("a", "candidate_func returned 'a'; it must return a non-empty list"),
        (["a", "zed"], "candidate_func returned 'zed', which is not a participant"),
    ],
)
async def test_candidate_func_without_valid_names_raises(returned: Any, message: str) -> None:
    team = SelectorGroupChat(
        agents("a", "b"),
        ReplayChatCompletionClient([]),
        candidate_func=lambda messages: returned,
        max_turns=2,
    )
    with pytest.raises(NodeExecutionError, match="`SelectorGroupChat_selector`") as caught:
        await team.run(task="go")
    cause = caught.value.__cause__
    assert isinstance(cause, ValueError)
    assert str(cause).startswith(message)
    assert 'participant names (from ["a", "b"])' in str(cause) or "zed" in message
    # The team kept its state: retrying raises the same error again.
    with pytest.raises(NodeExecutionError, match=re.escape(message)):
        await team.run()


# --- retries and fallbacks -----------------------------------------------------------------


async def test_failed_selections_are_retried_with_feedback() -> None:
    client = ReplayChatCompletionClient(["nobody", "a and b", "`c`"])
    team = SelectorGroupChat(agents("a", "b", "c"), client, max_turns=1)
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "c"]
    assert [len(r) for r in client.requests] == [1, 3, 5]
    feedback = [m.content for m in client.requests[2][1:] if isinstance(m, UserMessage)]
    assert feedback == [
        'No valid name was mentioned. Please select from: ["a", "b", "c"].',
        'Expected exactly one name to be mentioned. Please select only one from: ["a", "b", "c"].',
    ]


async def test_a_non_candidate_is_refused() -> None:
    client = ReplayChatCompletionClient(["a", "c"])
    team = SelectorGroupChat(
        agents("a", "b", "c"), client, candidate_func=lambda m: ["b", "c"], max_turns=1
    )
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "c"]
    last = client.requests[1][-1]
    assert last == UserMessage(
        content='a cannot speak next. Please select one from: ["b", "c"].', source="user"
    )


async def test_fallback_is_first_candidate_then_previous_speaker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = ReplayChatCompletionClient(["?", "??", "!", "!!"])
    team = SelectorGroupChat(agents("a", "b", "c"), client, max_turns=2, max_selector_attempts=2)
    with caplog.at_level(logging.WARNING, logger=SELECTOR_LOGGER):
        result = await team.run(task="go")
    # No previous speaker: the first candidate; then the previous speaker, even though
    # repeats are not allowed (the documented fallback).
    assert sources(result.messages) == ["user", "a", "a"]
    assert len(client.requests) == 4
    assert [r.getMessage() for r in caplog.records] == [
        "The selector model did not select a speaker in 2 attempt(s); using the first "
        "candidate `a`.",
        "The selector model did not select a speaker in 2 attempt(s); using the previous "
        "speaker `a`.",
    ]


async def test_mentions_count_underscore_spellings_and_whole_words_only() -> None:
    names = ("web_search", "web_searcher", "analyst")
    client = ReplayChatCompletionClient(
        [
            "web searchers",  # no whole-word mention
            "Web search? web search it is",  # case matters: one mention of `web_search`
            "web\\_searcher, please",
        ]
    )
    team = SelectorGroupChat(agents(*names), client, max_turns=2)
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "web_search", "web_searcher"]
    assert [len(r) for r in client.requests] == [1, 3, 1]


# --- selector_func -------------------------------------------------------------------------


async def test_selector_func_returning_none_falls_back_to_the_model() -> None:
    calls: list[int] = []

    async def selector_func(messages: Thread) -> str | None:
        calls.append(len(messages))
        return "c" if len(messages) == 1 else None

    client = ReplayChatCompletionClient(["b"])
    team = SelectorGroupChat(
        agents("a", "b", "c"), client, selector_func=selector_func, max_turns=2
    )
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "c", "b"]
    assert calls == [1, 2]
    assert len(client.requests) == 1
    assert '["a", "b"]' in prompt_of(client.requests[0])  # `c` just spoke


async def test_selector_func_may_repeat_a_speaker() -> None:
    team = SelectorGroupChat(
        agents("a", "b"), ReplayChatCompletionClient([]), selector_func=lambda m: "a", max_turns=3
    )
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "a", "a", "a"]


async def test_selector_func_returning_an_unknown_name_raises() -> None:
    team = SelectorGroupChat(
        agents("a", "b"), ReplayChatCompletionClient([]), selector_func=lambda m: "zed", max_turns=1
    )
    with pytest.raises(NodeExecutionError) as caught:
        await team.run(task="go")
    cause = caught.value.__cause__
    assert isinstance(cause, ValueError)
    assert str(cause) == (
        "selector_func returned 'zed', which is not a participant of this SelectorGroupChat; "
        'return one of ["a", "b"] or None.'
    )


# --- turns, termination, resume -------------------------------------------------------------


async def test_max_turns_counts_participant_turns_only() -> None:
    team = SelectorGroupChat(
        agents("a", "b", "c"),
        ReplayChatCompletionClient(["b", "c", "a", "b", "a", "b"]),
        max_turns=3,
    )
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "b", "c", "a"]
    assert result.stop_reason == "Maximum number of turns 3 reached."
    steps = team.trace.steps
    assert steps.count("SelectorGroupChat_selector") == 3
    assert [s for s in steps if s != "SelectorGroupChat_selector"] == ["b", "c", "a"]
    # The next run resumes with a fresh selection; the counter starts again.
    result = await team.run()
    assert sources(result.messages) == ["b", "a", "b"]


async def test_termination_then_resume_selects_again() -> None:
    client = ReplayChatCompletionClient(["a", "b DONE", "c", "b"])
    a = ScriptedAgent("a", ["a says DONE"], description="A.")
    b = ScriptedAgent("b", ["b1", "b2"], description="B.")
    c = ScriptedAgent("c", ["c1"], description="C.")
    team = SelectorGroupChat(
        [a, b, c],
        client,
        selector_prompt=SIMPLE_PROMPT,
        termination_condition=TextMentionTermination("DONE"),
        max_turns=3,
    )
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "a"]
    assert result.stop_reason == "Text 'DONE' mentioned"
    assert team.selector.previous_speaker == "a"
    # Resume without a task: a new selection, in which `a` (the previous speaker) is not a
    # candidate. The selector model's "b DONE" is a selection, not a message: it stops nothing.
    result = await team.run()
    assert sources(result.messages) == ["b", "c", "b"]
    assert result.stop_reason == "Maximum number of turns 3 reached."
    assert prompt_of(client.requests[1]) == (
        'R:\nb: B.\nc: C.\nP: ["b", "c"]\nH:\nuser: go\n\na: a says DONE'
    )
    assert len(client.requests) == 4


async def test_new_task_after_termination_is_answered_by_a_fresh_selection() -> None:
    client = ReplayChatCompletionClient(["b", "a"])
    team = SelectorGroupChat(
        agents("a", "b", "c"),
        client,
        selector_prompt=SIMPLE_PROMPT,
        termination_condition=MaxMessageTermination(2),
    )
    result = await team.run(task="first")
    assert sources(result.messages) == ["user", "b"]
    result = await team.run(task="second")
    assert sources(result.messages) == ["user", "a"]
    assert prompt_of(client.requests[1]).endswith("H:\nuser: first\n\nb: b1\n\nuser: second")


async def test_save_state_to_json_and_resume_in_a_fresh_team() -> None:
    def build(script: list[str]) -> tuple[SelectorGroupChat, ReplayChatCompletionClient]:
        client = ReplayChatCompletionClient(script)
        team = SelectorGroupChat(
            agents("a", "b", "c"), client, selector_prompt=SIMPLE_PROMPT, max_turns=2
        )
        return team, client

    team, _ = build(["b", "c"])
    result = await team.run(task="go")
    assert sources(result.messages) == ["user", "b", "c"]
    state = json.loads(json.dumps(await team.save_state()))
    assert set(state["agent_states"]) == {
        "SelectorGroupChat_selector",
        "a",
        "b",
        "c",
        "SelectorGroupChatManager",
    }
    assert state["agent_states"]["SelectorGroupChat_selector"]["previous_speaker"] == "c"

    fresh, client = build(["b", "a"])
    await fresh.load_state(state)
    assert fresh.selector.previous_speaker == "c"
    assert sources(fresh.selector.thread) == ["user", "b"]  # `c` spoke after its last turn
    result = await fresh.run()
    # Agents continue their scripts (b2), the prompt has the whole history, `c` is excluded.
    assert [(m.source, m.to_text()) for m in result.messages] == [("b", "b2"), ("a", "a1")]
    assert prompt_of(client.requests[0]) == (
        'R:\na: Does a.\nb: Does b.\nP: ["a", "b"]\nH:\nuser: go\n\nb: b1\n\nc: c1'
    )
    # And a new task after loading is answered with the earlier context.
    again, client = build(["a", "b"])
    await again.load_state(state)
    result = await again.run(task="more")
    assert sources(result.messages) == ["user", "a", "b"]
    assert prompt_of(client.requests[0]).endswith("c: c1\n\nuser: more")


async def test_reset_forgets_history_previous_speaker_and_model_context() -> None:
    context = BufferedChatCompletionContext(
        buffer_size=10, initial_messages=[UserMessage(content="preloaded", source="admin")]
    )
    client = ReplayChatCompletionClient(["a", "b"])
    team = SelectorGroupChat(
        agents("a", "b", "c"),
        client,
        selector_prompt=SIMPLE_PROMPT,
        model_context=context,
        max_turns=1,
    )
    await team.run(task="go")
    assert prompt_of(client.requests[0]).endswith("H:\nadmin: preloaded\n\nuser: go")
    await team.reset()
    assert team.selector.thread == []
    assert team.selector.previous_speaker is None
    assert await context.get_messages() == []
    result = await team.run(task="again")
    assert sources(result.messages) == ["user", "b"]
    assert prompt_of(client.requests[1]).endswith('P: ["a", "b", "c"]\nH:\nuser: again')


async def test_model_context_decides_the_history_shown() -> None:
    client = ReplayChatCompletionClient(["a", "b", "c"])
    team = SelectorGroupChat(
        agents("a", "b", "c"),
        client,
        selector_prompt=SIMPLE_PROMPT,
        model_context=BufferedChatCompletionContext(buffer_size=2),
        max_turns=3,
    )
    await team.run(task="go")
    assert prompt_of(client.requests[2]).endswith("H:\na: a1\n\nb: b1")
    # selector_func/candidate_func still see the whole thread.
    assert sources(team.selector.thread) == ["user", "a", "b"]


async def test_a_failed_selection_is_retried_without_duplicating_history() -> None:
    class Flaky(ReplayChatCompletionClient):
        fail = True

        async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
            if self.fail:
                self.fail = False
                raise ConnectionError("model down")
            return await super().create(messages, **kwargs)

    client = Flaky(["a", "b"])
    team = SelectorGroupChat(
        agents("a", "b", "c"), client, selector_prompt=SIMPLE_PROMPT, max_turns=1
    )
    with pytest.raises(NodeExecutionError, match="model down"):
        await team.run(task="go")
    result = await team.run()
    assert sources(result.messages) == ["a"]
    assert prompt_of(client.requests[0]).endswith("H:\nuser: go")
    # The retried turn took the task once.
    assert sources(team.selector.thread) == ["user"]
    result = await team.run(task="next")
    assert prompt_of(client.requests[1]).endswith("H:\nuser: go\n\na: a1\n\nuser: next")


# --- events, streaming, other participants ------------------------------------------------


async def test_emit_team_events_streams_one_select_speaker_event_per_turn() -> None:
    team = SelectorGroupChat(
        agents("a", "b", "c"),
        ReplayChatCompletionClient(["c", "a", "b"]),
        max_turns=3,
        emit_team_events=True,
        name="crew",
    )
    streamed = [item async for item in team.run_stream(task="go")]
    events = [e for e in streamed if isinstance(e, SelectSpeakerEvent)]
    assert [(e.source, e.content) for e in events] == [
        ("crew", ["c"]),
        ("crew", ["a"]),
        ("crew", ["b"]),
    ]
    order = [
        f"select:{m.content[0]}" if isinstance(m, SelectSpeakerEvent) else m.source
        for m in streamed
        if isinstance(m, (SelectSpeakerEvent, TextMessage))
    ]
    assert order == ["user", "select:c", "c", "select:a", "a", "select:b", "b"]
    result = streamed[-1]
    assert isinstance(result, TaskResult)
    assert [e for e in result.messages if isinstance(e, SelectSpeakerEvent)] == events

    quiet = SelectorGroupChat(agents("a", "b"), ReplayChatCompletionClient(["a"]), max_turns=2)
    result = await quiet.run(task="go")
    assert not any(isinstance(m, SelectSpeakerEvent) for m in result.messages)


async def test_model_client_streaming_streams_chunks_not_kept_in_result() -> None:
    client = ReplayChatCompletionClient(["I choose b", "a"])
    team = SelectorGroupChat(
        agents("a", "b", "c"), client, model_client_streaming=True, max_turns=2
    )
    streamed = [item async for item in team.run_stream(task="go")]
    chunks = [e for e in streamed if isinstance(e, ModelClientStreamingChunkEvent)]
    assert "".join(c.content for c in chunks) == "I choose ba"
    assert {c.source for c in chunks} == {"SelectorGroupChat_selector"}
    result = streamed[-1]
    assert isinstance(result, TaskResult)
    assert sources(result.messages) == ["user", "b", "a"]
    assert not any(isinstance(m, ModelClientStreamingChunkEvent) for m in result.messages)


async def test_streaming_selector_emits_a_selector_event_after_its_chunks() -> None:
    """As AutoGen: with a streaming selector, each selection's full model answer follows
    its chunks as a ``SelectorEvent`` from the selector (kept in the result)."""
    client = ReplayChatCompletionClient(["I choose b", "a"])
    team = SelectorGroupChat(agents("a", "b"), client, model_client_streaming=True, max_turns=2)
    streamed = [item async for item in team.run_stream(task="go")]
    selector_events = [e for e in streamed if isinstance(e, SelectorEvent)]
    assert [(e.content, e.source) for e in selector_events] == [
        ("I choose b", "SelectorGroupChat_selector")
    ]  # the second turn has one candidate left (no repeats): no model call
    first = streamed.index(selector_events[0])
    assert isinstance(streamed[first - 1], ModelClientStreamingChunkEvent)
    result = streamed[-1]
    assert isinstance(result, TaskResult)
    assert [m for m in result.messages if isinstance(m, SelectorEvent)] == selector_events
    assert MessageFactory().create(selector_events[0].dump()) == selector_events[0]
    quiet = SelectorGroupChat(agents("a", "b"), ReplayChatCompletionClient(["b"]), max_turns=1)
    assert not any(isinstance(m, SelectorEvent) for m in (await quiet.run(task="go")).messages)


async def test_user_proxy_is_asked_whenever_selected() -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return f"user answer {len(prompts)}"

    user = UserProxyAgent("user_proxy", input_func=answer)
    team = SelectorGroupChat(
        [*agents("helper"), user],
        ReplayChatCompletionClient([]),
        selector_func=lambda m: "user_proxy" if m[-1].source == "helper" else "helper",
        max_turns=4,
    )
    result = await team.run(task="help me")
    assert sources(result.messages) == ["user", "helper", "user_proxy", "helper", "user_proxy"]
    assert len(prompts) == 2
    assert sum(isinstance(m, UserInputRequestedEvent) for m in result.messages) == 2


async def test_nested_team_participant_publishes_its_messages() -> None:
    inner = RoundRobinGroupChat(
        agents("x", "y"), name="inner", description="Two helpers.", max_turns=2
    )
    client = ReplayChatCompletionClient(["inner"])
    team = SelectorGroupChat(
        [*agents("a"), inner], client, selector_prompt=SIMPLE_PROMPT, max_turns=3
    )
    result = await team.run(task="go")
    # The inner team's messages are published under their own sources; with two
    # participants and no repeats, `inner` and `a` alternate without further model calls.
    assert [(m.source, m.to_text()) for m in result.messages] == [
        ("user", "go"),
        ("x", "x1"),
        ("y", "y1"),
        ("a", "a1"),
        ("x", "x2"),
        ("y", "y2"),
    ]
    assert [s for s in team.trace.steps if s != "SelectorGroupChat_selector"] == [
        "inner",
        "a",
        "inner",
    ]
    (request,) = client.requests
    assert prompt_of(request) == (
        'R:\na: Does a.\ninner: Two helpers.\nP: ["a", "inner"]\nH:\nuser: go'
    )


async def test_route_is_usable_directly() -> None:
    router = SelectorRouter("sel", [("a", "A."), ("b", "B.")], ReplayChatCompletionClient(["b"]))
    routing = await router.route([TextMessage(content="hi", source="user")], CancellationToken())
    assert list(routing.targets) == ["b"]
    assert router.previous_speaker == "b"
