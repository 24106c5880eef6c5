"""MagenticOneGroupChat: the hub graph, the task ledger, the progress ledger (stalls,
re-planning, retries, errors), the final answer, stopping, resuming and state.

The orchestrator's model is a ``ReplayChatCompletionClient`` scripted with fact sheets,
plans and ledger JSON; participants are ``ScriptedAgent``s (or an ``AssistantAgent`` on a
replay client), so every model call and every message is known in advance.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.errors import DuplicateNodeError, NodeExecutionError, StateError, UnboundedLoopError
from flowlib.graph import DiGraph, Selected
from flowlib.messages import SelectSpeakerEvent, TextMessage
from flowlib.models import (
    AssistantMessage,
    CreateResult,
    ModelInfo,
    ReplayChatCompletionClient,
    UserMessage,
)
from flowlib.teams import MagenticOneGroupChat, RoundRobinGroupChat
from flowlib.teams._magentic_one import (
    LEDGER_ATTEMPTS,
    ORCHESTRATOR_NAME,
    OrchestratorError,
    parse_progress_ledger,
)
from flowlib.teams._magentic_one._prompts import ORCHESTRATOR_FINAL_ANSWER_PROMPT
from flowlib.testing import ScriptedAgent

ORC = ORCHESTRATOR_NAME
TASK = "Find the answer to everything."
FACTS = "GIVEN FACTS: the question. EDUCATED GUESSES: 42."
PLAN = "- coder computes it\n- reviewer checks it"


def ledger(
    *,
    done: bool = False,
    loop: bool = False,
    progress: bool = True,
    speaker: Any = "coder",
    say: str = "Compute it.",
    reason: str = "r",
    drop: tuple[str, ...] = (),
) -> str:
    """A progress ledger answer as the model would write it."""
    data = {
        "is_request_satisfied": {"reason": reason, "answer": done},
        "is_in_loop": {"reason": "r", "answer": loop},
        "is_progress_being_made": {"reason": "r", "answer": progress},
        "next_speaker": {"reason": "r", "answer": speaker},
        "instruction_or_question": {"reason": "r", "answer": say},
    }
    for key in drop:
        del data[key]
    return json.dumps(data)


def agents() -> tuple[ScriptedAgent, ScriptedAgent]:
    coder = ScriptedAgent(
        "coder", lambda turn, _: f"code {turn}", description="Writes and runs code."
    )
    reviewer = ScriptedAgent(
        "reviewer", lambda turn, _: f"review {turn}", description="Reviews   the\ncode."
    )
    return coder, reviewer


def texts(messages: Any) -> list[str]:
    return [m.to_text() for m in messages]


def sources(messages: Any) -> list[str]:
    return [m.source for m in messages]


def origin(message: Any) -> str | None:
    """The ``source`` of a model message (None for kinds without one)."""
    return getattr(message, "source", None)


# --- the graph and the constructor ------------------------------------------------------


def test_graph_is_a_valid_hub() -> None:
    coder, reviewer = agents()
    team = MagenticOneGroupChat([coder, reviewer], ReplayChatCompletionClient([]))
    graph = team.graph
    graph.graph_validate()
    assert graph.pattern == "magentic_one"
    assert list(graph.nodes) == [ORC, "coder", "reviewer"]
    assert graph.default_start_node == ORC
    hub = graph.nodes[ORC]
    assert hub.kind == "router"
    assert [(e.target, e.condition) for e in hub.edges] == [
        ("coder", Selected(target="coder")),
        ("reviewer", Selected(target="reviewer")),
    ]
    for name in ("coder", "reviewer"):
        node = graph.nodes[name]
        assert (node.kind, node.activation) == ("agent", "any")
        assert [(e.target, e.condition) for e in node.edges] == [(ORC, None)]
    assert graph.has_cycles_with_exit()
    again = DiGraph.model_validate_json(graph.model_dump_json())
    assert again.model_dump() == graph.model_dump()
    assert team.max_turns == 20
    assert team.max_stalls == 3
    assert team.final_answer_prompt == ORCHESTRATOR_FINAL_ANSWER_PROMPT
    assert (team.name, team.description) == ("MagenticOneGroupChat", "A team of agents.")


def test_constructor_errors() -> None:
    model = ReplayChatCompletionClient([])
    coder, reviewer = agents()
    with pytest.raises(ValueError, match="at least one participant"):
        MagenticOneGroupChat([], model)
    nested = RoundRobinGroupChat([ScriptedAgent("inner", ["x"])], max_turns=1)
    with pytest.raises(ValueError, match="`RoundRobinGroupChat` is a team"):
        MagenticOneGroupChat([coder, nested], model)  # type: ignore[list-item]
    with pytest.raises(DuplicateNodeError, match="Two participants are named `coder`"):
        MagenticOneGroupChat([coder, ScriptedAgent("coder", ["x"])], model)
    with pytest.raises(DuplicateNodeError, match=f"named `{ORC}`.*rename the participant"):
        MagenticOneGroupChat([coder, ScriptedAgent(ORC, ["x"])], model)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_stalls must be a positive integer"):
            MagenticOneGroupChat([coder], model, max_stalls=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="final_answer_prompt must be a non-empty string"):
        MagenticOneGroupChat([coder], model, final_answer_prompt=" ")
    with pytest.raises(ValueError, match="remove the `runtime=` argument"):
        MagenticOneGroupChat([coder], model, runtime=object())
    with pytest.raises(UnboundedLoopError, match="neither a termination_condition nor max_turns"):
        MagenticOneGroupChat([coder], model, max_turns=None)
    unbounded = MagenticOneGroupChat(
        [coder, reviewer], model, max_turns=None, termination_condition=MaxMessageTermination(5)
    )
    assert unbounded.max_turns is None


# --- a task from plan to final answer ---------------------------------------------------


async def test_happy_path_plans_directs_and_answers() -> None:
    coder, reviewer = agents()
    model = ReplayChatCompletionClient(
        [
            FACTS,
            PLAN,
            ledger(speaker="coder", say="Compute it."),
            ledger(speaker="reviewer", say="Check the code."),
            ledger(done=True, reason="The reviewer confirmed 42."),
            "The answer is 42.",
        ]
    )
    team = MagenticOneGroupChat([coder, reviewer], model)
    result = await team.run(task=TASK)

    assert sources(result.messages) == ["user", ORC, ORC, "coder", ORC, "reviewer", ORC]
    assert result.stop_reason == "The reviewer confirmed 42."
    final = result.messages[-1]
    assert isinstance(final, TextMessage)
    assert final.content == "The answer is 42."
    assert final.models_usage is not None
    ledger_message, first_instruction = result.messages[1], result.messages[2]
    assert TASK in ledger_message.to_text()
    assert FACTS in ledger_message.to_text()
    assert PLAN in ledger_message.to_text()
    # One line per member, whitespace collapsed.
    assert "coder: Writes and runs code.\nreviewer: Reviews the code." in ledger_message.to_text()
    assert first_instruction.to_text() == "Compute it."
    assert first_instruction.metadata == {"next_speaker": "coder"}
    assert result.messages[4].metadata == {"next_speaker": "reviewer"}
    assert team.trace.steps == [ORC, "coder", ORC, "reviewer", ORC]

    # Facts, then a plan that sees the facts and the team.
    facts_request, plan_request, progress_request = model.requests[:3]
    assert len(facts_request) == 1 and TASK in str(facts_request[0].content)
    assert [type(m) for m in plan_request] == [UserMessage, AssistantMessage, UserMessage]
    assert plan_request[1].content == FACTS
    assert "coder: Writes and runs code." in str(plan_request[2].content)
    # The progress ledger sees the transcript (its own messages as the assistant's) and
    # is asked for JSON listing the valid names.
    assert [type(m) for m in progress_request] == [AssistantMessage, UserMessage]
    assert progress_request[0].content == ledger_message.to_text()
    assert "One of: coder, reviewer" in str(progress_request[-1].content)
    assert [args["json_output"] for args in model.request_args] == [
        None,
        None,
        True,
        True,
        True,
        None,
    ]
    second_progress = model.requests[3]
    assert [(type(m).__name__, origin(m)) for m in second_progress[:-1]] == [
        ("AssistantMessage", ORC),
        ("AssistantMessage", ORC),
        ("UserMessage", "coder"),
    ]
    final_request = model.requests[-1]
    assert final_request[-2].content == "review 0"
    assert TASK in str(final_request[-1].content)
    assert "final answer" in str(final_request[-1].content)

    # Participants start afresh with the ledger, and see every message since their turn.
    assert (coder.resets, reviewer.resets) == (1, 1)
    assert texts(coder.seen[0]) == [TASK, ledger_message.to_text(), "Compute it."]
    assert texts(reviewer.seen[0])[-2:] == ["code 0", "Check the code."]

    # The task was answered: nothing to resume.
    assert not team.orchestrator.has_task
    with pytest.raises(ValueError, match="no task under way"):
        await team.run()


async def test_request_satisfied_on_the_first_ledger() -> None:
    coder, _ = agents()
    model = ReplayChatCompletionClient([FACTS, PLAN, ledger(done=True, reason=""), "Known."])
    result = await MagenticOneGroupChat([coder], model).run(task=TASK)
    assert sources(result.messages) == ["user", ORC, ORC]
    assert result.messages[-1].to_text() == "Known."
    # An empty reason still gives a stop reason.
    assert result.stop_reason == "The orchestrator judged the request satisfied."
    assert coder.turns == 0


async def test_custom_final_answer_prompt_fills_only_the_task() -> None:
    coder, _ = agents()
    model = ReplayChatCompletionClient([FACTS, PLAN, ledger(done=True), "ok"])
    prompt = "Answer {task} in one word. Keep {braces} and {0} as they are."
    team = MagenticOneGroupChat([coder], model, final_answer_prompt=prompt)
    await team.run(task=TASK)
    assert model.requests[-1][-1].content == (
        f"Answer {TASK} in one word. Keep {{braces}} and {{0}} as they are."
    )


async def test_a_new_task_is_planned_from_scratch() -> None:
    coder, reviewer = agents()
    model = ReplayChatCompletionClient(
        [
            FACTS,
            PLAN,
            ledger(speaker="coder"),
            ledger(done=True),
            "first answer",
            "facts 2",
            "plan 2",
            ledger(done=True, reason="second"),
            "second answer",
        ]
    )
    team = MagenticOneGroupChat([coder, reviewer], model)
    await team.run(task=TASK)
    result = await team.run(task="Another task.")
    assert sources(result.messages) == ["user", ORC, ORC]
    assert "Another task." in result.messages[1].to_text()
    assert TASK not in result.messages[1].to_text()
    assert team.orchestrator.task == "Another task."
    assert (team.orchestrator.facts, team.orchestrator.plan) == ("facts 2", "plan 2")
    # The progress ledger of the new task sees only the new ledger, not the old work.
    assert len(model.requests[-2]) == 2
    assert (coder.resets, reviewer.resets) == (2, 2)
    assert result.stop_reason == "second"


async def test_team_events_and_a_participant_on_a_model() -> None:
    writer_model = ReplayChatCompletionClient(["A poem about graphs."])
    writer = AssistantAgent("writer", model_client=writer_model, description="Writes poems.")
    model = ReplayChatCompletionClient(
        [FACTS, PLAN, ledger(speaker="writer", say="Write the poem."), ledger(done=True), "Done."]
    )
    team = MagenticOneGroupChat([writer], model, emit_team_events=True)
    result = await team.run(task="Write a poem.")
    kinds = [(type(m).__name__, m.source) for m in result.messages]
    assert kinds == [
        ("TextMessage", "user"),
        ("TextMessage", ORC),
        ("TextMessage", ORC),
        ("SelectSpeakerEvent", "MagenticOneGroupChat"),
        ("TextMessage", "writer"),
        ("TextMessage", ORC),
    ]
    event = result.messages[3]
    assert isinstance(event, SelectSpeakerEvent) and event.content == ["writer"]
    # The writer's model saw the task, the ledger and the instruction.
    seen = [str(m.content) for m in writer_model.requests[0] if isinstance(m, UserMessage)]
    assert seen[0] == "Write a poem."
    assert "Write a poem." in seen[1] and PLAN in seen[1]
    assert seen[2] == "Write the poem."


async def test_no_json_mode_when_the_model_lacks_it() -> None:
    coder, _ = agents()
    info = ModelInfo(
        vision=False,
        function_calling=False,
        json_output=False,
        family="unknown",
        structured_output=False,
    )
    model = ReplayChatCompletionClient([FACTS, PLAN, ledger(done=True), "x"], model_info=info)
    await MagenticOneGroupChat([coder], model).run(task=TASK)
    assert all(args["json_output"] is None for args in model.request_args)


# --- stalls and re-planning -------------------------------------------------------------


async def test_stalls_replan_after_max_stalls() -> None:
    coder, reviewer = agents()
    model = ReplayChatCompletionClient(
        [
            FACTS,
            PLAN,
            ledger(say="go 1"),  # stalls 0
            ledger(progress=False, say="go 2"),  # 1
            ledger(say="go 3"),  # progress takes one off: 0
            ledger(loop=True, say="go 4"),  # 1
            ledger(progress=False, loop=True, say="unused"),  # 2 = max_stalls: re-plan
            "new facts",
            "new plan",
            ledger(speaker="reviewer", say="go 5"),  # the new ledger's first step
            ledger(done=True),
            "answer",
        ]
    )
    team = MagenticOneGroupChat([coder, reviewer], model, max_stalls=2)
    result = await team.run(task=TASK)

    orchestrator_texts = [m.to_text() for m in result.messages if m.source == ORC]
    assert orchestrator_texts[1:5] == ["go 1", "go 2", "go 3", "go 4"]
    new_ledger = orchestrator_texts[5]
    assert "new facts" in new_ledger and "new plan" in new_ledger and TASK in new_ledger
    assert orchestrator_texts[6:] == ["go 5", "answer"]
    assert "unused" not in orchestrator_texts
    assert sources(result.messages)[-5:] == ["coder", ORC, ORC, "reviewer", ORC]

    # The facts update sees the transcript and the old facts; the plan update the team.
    facts_update = model.requests[7]
    assert [origin(m) for m in facts_update[:2]] == [ORC, ORC]
    assert any(m.content == "code 3" for m in facts_update)
    assert FACTS in str(facts_update[-1].content) and TASK in str(facts_update[-1].content)
    plan_update = model.requests[8]
    assert plan_update[-2].content == "new facts"
    assert "reviewer: Reviews the code." in str(plan_update[-1].content)
    # After re-planning the transcript restarts at the new ledger.
    assert [m.content for m in model.requests[9][:-1]] == [new_ledger]
    assert (coder.resets, reviewer.resets) == (2, 2)
    assert team.orchestrator.facts == "new facts"
    assert team.orchestrator.plan == "new plan"


async def test_one_replan_per_turn_and_stall_count_reset() -> None:
    coder, _ = agents()
    model = ReplayChatCompletionClient(
        [
            FACTS,
            PLAN,
            ledger(say="first"),
            ledger(progress=False, say="unused"),  # 1 = max_stalls: re-plan
            "facts 2",
            "plan 2",
            ledger(progress=False, say="after re-plan"),  # stalled again: counted only
            ledger(progress=False, say="unused 2"),  # the next turn re-plans again
            "facts 3",
            "plan 3",
            ledger(say="third ledger"),
            ledger(done=True),
            "answer",
        ]
    )
    team = MagenticOneGroupChat([coder], model, max_stalls=1, max_turns=2)
    result = await team.run(task=TASK)
    orchestrator_texts = [m.to_text() for m in result.messages if m.source == ORC]
    assert orchestrator_texts[1] == "first"
    assert "facts 2" in orchestrator_texts[2]
    assert orchestrator_texts[3] == "after re-plan"
    assert result.stop_reason == "Maximum number of turns 2 reached."
    assert team.orchestrator.n_stalls == 1
    assert model.remaining == 6
    result = await team.run()
    assert [m.to_text() for m in result.messages if m.source == ORC][1] == "third ledger"
    assert "facts 3" in result.messages[0].to_text()
    assert team.orchestrator.n_stalls == 0


# --- unusable ledgers -------------------------------------------------------------------


async def test_invalid_json_is_retried_with_feedback() -> None:
    coder, _ = agents()
    fenced = "Here you go:\n```json\n" + ledger(done=True, reason="fine") + "\n```"
    model = ReplayChatCompletionClient([FACTS, PLAN, "I think we are done.", fenced, "answer"])
    result = await MagenticOneGroupChat([coder], model).run(task=TASK)
    assert result.stop_reason == "fine"
    retry = model.requests[3]
    assert isinstance(retry[-2], AssistantMessage)
    assert retry[-2].content == "I think we are done."
    assert "not a JSON object" in str(retry[-1].content)
    assert "only the JSON object" in str(retry[-1].content)
    # The final answer's context does not carry the failed attempt.
    assert all(m.content != "I think we are done." for m in model.requests[-1])


async def test_invalid_json_fails_after_the_retries_and_the_turn_can_be_retried() -> None:
    coder, _ = agents()
    bad = ["nope", "{not json", "[1, 2]"]
    model = ReplayChatCompletionClient(
        [FACTS, PLAN, *bad, FACTS, PLAN, ledger(done=True, reason="ok"), "answer"]
    )
    team = MagenticOneGroupChat([coder], model)
    with pytest.raises(ValueError, match=r"unusable after 3 attempts.*not a JSON object") as info:
        await team.run(task=TASK)
    error = info.value
    assert isinstance(error, OrchestratorError)
    assert isinstance(error, NodeExecutionError)
    assert error.node == ORC
    assert LEDGER_ATTEMPTS == 3
    assert model.remaining == 4
    # Nothing of the failed turn was committed: run() plans the same task again.
    assert team.orchestrator.has_task and team.orchestrator.facts == ""
    result = await team.run()
    assert result.stop_reason == "ok"
    assert sources(result.messages) == [ORC, ORC]
    assert TASK in result.messages[0].to_text()


async def test_missing_keys_error_names_them() -> None:
    coder, reviewer = agents()
    broken = ledger(drop=("is_in_loop", "next_speaker"))
    model = ReplayChatCompletionClient([FACTS, PLAN, broken, broken, broken])
    team = MagenticOneGroupChat([coder, reviewer], model)
    with pytest.raises(ValueError, match="missing the keys `is_in_loop`, `next_speaker`"):
        await team.run(task=TASK)
    assert model.remaining == 0


async def test_answer_without_an_answer_counts_as_missing() -> None:
    coder, reviewer = agents()
    data = json.loads(ledger())
    data["is_request_satisfied"] = {"reason": "no answer given"}
    data["is_in_loop"] = "false"
    broken = json.dumps(data)
    model = ReplayChatCompletionClient([FACTS, PLAN, broken, broken, broken])
    with pytest.raises(ValueError, match="`is_request_satisfied`, `is_in_loop`"):
        await MagenticOneGroupChat([coder, reviewer], model).run(task=TASK)


async def test_invalid_next_speaker_error_names_the_valid_ones() -> None:
    coder, reviewer = agents()
    wrong = ledger(speaker="intern")
    model = ReplayChatCompletionClient([FACTS, PLAN, wrong, wrong, wrong])
    with pytest.raises(
        ValueError,
        match="next speaker 'intern' is not a participant; valid speakers are `coder`, `reviewer`",
    ):
        await MagenticOneGroupChat([coder, reviewer], model).run(task=TASK)


async def test_invalid_next_speaker_is_retried() -> None:
    coder, reviewer = agents()
    model = ReplayChatCompletionClient(
        [FACTS, PLAN, ledger(speaker="intern"), ledger(speaker=" `Reviewer` ")]
    )
    team = MagenticOneGroupChat([coder, reviewer], model, max_turns=1)
    result = await team.run(task=TASK)
    assert sources(result.messages)[-1] == "reviewer"
    assert "'intern' is not a participant" in str(model.requests[3][-1].content)


async def test_single_participant_needs_no_next_speaker() -> None:
    coder, _ = agents()
    model = ReplayChatCompletionClient(
        [FACTS, PLAN, ledger(drop=("next_speaker",)), ledger(speaker="someone else")]
    )
    team = MagenticOneGroupChat([coder], model, max_turns=2)
    result = await team.run(task=TASK)
    assert sources(result.messages) == ["user", ORC, ORC, "coder", ORC, "coder"]


def test_parse_progress_ledger_is_lenient_where_it_is_safe() -> None:
    names = ["coder", "reviewer"]
    data = json.loads(ledger())
    data["is_request_satisfied"] = {"answer": "False"}  # a string, and no reason
    text = "Sure! " + json.dumps(data) + " Hope this helps."
    parsed = parse_progress_ledger(text, names)
    assert (parsed.is_request_satisfied, parsed.next_speaker) == (False, "coder")
    assert not parsed.is_stalled
    data = json.loads(ledger(speaker="nobody", done=True))
    data["is_in_loop"]["answer"] = "yes"
    parsed = parse_progress_ledger(json.dumps(data), names)
    assert parsed.is_request_satisfied and parsed.is_in_loop and parsed.is_stalled
    assert parsed.next_speaker == ""  # not needed once the request is satisfied
    data["is_in_loop"]["answer"] = "maybe"
    with pytest.raises(ValueError, match=r"`is_in_loop.answer` must be true or false"):
        parse_progress_ledger(json.dumps(data), names)
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_progress_ledger("[]", names)


# --- stopping and resuming --------------------------------------------------------------


async def test_max_turns_default_20_counts_participant_turns_and_resumes() -> None:
    coder, _ = agents()
    script = [FACTS, PLAN, *[ledger(say=f"step {i}") for i in range(20)]]
    model = ReplayChatCompletionClient([*script, ledger(done=True, reason="done"), "answer"])
    team = MagenticOneGroupChat([coder], model)
    result = await team.run(task=TASK)
    assert result.stop_reason == "Maximum number of turns 20 reached."
    assert sources(result.messages).count("coder") == 20
    assert sources(result.messages).count(ORC) == 21  # the ledger and 20 instructions
    assert team.orchestrator.has_task
    resumed = await team.run()
    assert sources(resumed.messages) == [ORC]
    assert resumed.stop_reason == "done"
    assert model.requests[-2][-2].content == "code 19"


async def test_termination_condition_stops_and_the_task_resumes() -> None:
    coder = ScriptedAgent("coder", ["working", "TERMINATE please"])
    model = ReplayChatCompletionClient(
        [FACTS, PLAN, ledger(), ledger(), ledger(done=True, reason="ok"), "answer"]
    )
    team = MagenticOneGroupChat(
        [coder], model, termination_condition=TextMentionTermination("TERMINATE")
    )
    result = await team.run(task=TASK)
    assert result.stop_reason == "Text 'TERMINATE' mentioned"
    assert sources(result.messages)[-1] == "coder"
    resumed = await team.run()
    assert resumed.stop_reason == "ok"
    assert [m.content for m in model.requests[-2] if origin(m) == "coder"] == [
        "working",
        "TERMINATE please",
    ]


async def test_termination_sees_the_orchestrators_messages() -> None:
    coder, _ = agents()
    model = ReplayChatCompletionClient([FACTS, PLAN, ledger()])
    team = MagenticOneGroupChat([coder], model, termination_condition=MaxMessageTermination(3))
    result = await team.run(task=TASK)
    assert sources(result.messages) == ["user", ORC, ORC]
    assert result.stop_reason == "Maximum number of messages 3 reached, current message count: 3"
    assert coder.turns == 0


async def test_save_json_load_into_a_fresh_team_and_resume() -> None:
    coder, reviewer = agents()
    first_model = ReplayChatCompletionClient(
        [FACTS, PLAN, ledger(progress=False, speaker="coder", say="Compute it.")]
    )
    team = MagenticOneGroupChat([coder, reviewer], first_model, max_turns=1, max_stalls=5)
    await team.run(task=TASK)
    state = json.loads(json.dumps(await team.save_state()))
    saved = state["agent_states"][ORC]
    assert saved["type"] == "MagenticOneOrchestratorState"
    assert (saved["facts"], saved["plan"], saved["n_stalls"]) == (FACTS, PLAN, 1)

    coder2, reviewer2 = agents()
    second_model = ReplayChatCompletionClient(
        [ledger(speaker="reviewer", say="Check."), ledger(done=True, reason="ok"), "42"]
    )
    fresh = MagenticOneGroupChat([coder2, reviewer2], second_model, max_turns=1, max_stalls=5)
    await fresh.load_state(state)
    assert (fresh.orchestrator.task, fresh.orchestrator.facts) == (TASK, FACTS)
    assert fresh.orchestrator.n_stalls == 1
    result = await fresh.run()
    assert sources(result.messages) == [ORC, "reviewer"]
    # The orchestrator resumed with the saved transcript and the coder's reply.
    progress = second_model.requests[0]
    assert [m.content for m in progress[:-1]][1:] == ["Compute it.", "code 0"]
    assert TASK in str(progress[0].content)
    # The reviewer's first turn sees everything since the start, from the saved thread.
    assert texts(reviewer2.seen[0])[0] == TASK
    assert texts(reviewer2.seen[0])[-2:] == ["code 0", "Check."]
    result = await fresh.run()
    assert result.stop_reason == "ok"
    assert result.messages[-1].to_text() == "42"


async def test_reset_forgets_the_task() -> None:
    coder, _ = agents()
    model = ReplayChatCompletionClient([FACTS, PLAN, ledger()])
    team = MagenticOneGroupChat([coder], model, max_turns=1)
    await team.run(task=TASK)
    assert team.orchestrator.has_task
    await team.reset()
    orchestrator = team.orchestrator
    assert not orchestrator.has_task
    assert (orchestrator.task, orchestrator.facts, orchestrator.plan) == ("", "", "")
    saved = await orchestrator.save_state()
    assert saved["message_thread"] == [] and saved["n_stalls"] == 0
    with pytest.raises(ValueError, match="no task under way"):
        await team.run()


async def test_a_malformed_state_is_refused_naming_where_it_is_malformed() -> None:
    coder, _ = agents()
    team = MagenticOneGroupChat([coder], ReplayChatCompletionClient([]))
    state = {"type": "MagenticOneOrchestratorState", "n_stalls": "many"}
    with pytest.raises(StateError, match=r"malformed .*the first at `n_stalls`"):
        await team.orchestrator.load_state(state)


async def test_load_state_rejects_foreign_states() -> None:
    coder, _ = agents()
    team = MagenticOneGroupChat([coder], ReplayChatCompletionClient([]))
    with pytest.raises(StateError, match="cannot load this state"):
        await team.orchestrator.load_state({"type": "SomethingElse"})
    with pytest.raises(StateError, match="version 2"):
        await team.orchestrator.load_state({"type": "MagenticOneOrchestratorState", "version": 2})
    with pytest.raises(StateError, match="cannot rebuild its transcript"):
        await team.orchestrator.load_state(
            {"type": "MagenticOneOrchestratorState", "message_thread": [{"type": "Unknown"}]}
        )


class GatedModel(ReplayChatCompletionClient):
    """A replay client whose first call waits for ``gate`` (to cancel a planning turn)."""

    def __init__(self, script: list[str]) -> None:
        super().__init__(script)
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        if not self.gate.is_set():
            self.entered.set()
            await self.gate.wait()
        return await super().create(*args, **kwargs)


async def test_a_cancelled_planning_turn_keeps_the_task_and_resumes() -> None:
    coder, _ = agents()
    model = GatedModel([FACTS, PLAN, ledger(done=True, reason="ok"), "answer"])
    team = MagenticOneGroupChat([coder], model)
    token = CancellationToken()
    running = asyncio.ensure_future(team.run(task=TASK, cancellation_token=token))
    await asyncio.wait_for(model.entered.wait(), 30)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, 30)
    saved = (await team.save_state())["agent_states"][ORC]
    assert saved["pending_task"] == TASK and not saved["active"]
    model.gate.set()
    result = await team.run()
    assert sources(result.messages) == [ORC, ORC]
    assert TASK in result.messages[0].to_text()
    assert result.stop_reason == "ok"
