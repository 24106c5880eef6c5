"""GraphFlow end to end: documented patterns, eager scheduling, broadcast, stopping,
resuming, errors, cancellation, streaming, nesting and lifecycle hooks.

Agents are instant scripted fakes (``tests/_agents.py``); concurrency is shown with
``asyncio.Event``s that would deadlock a sequential executor, never with timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from _agents import Fake, Recorder, sources, texts, wait_for

from flowlib.base import CancellationToken, TaskResult
from flowlib.conditions import (
    ExternalTermination,
    FunctionalTermination,
    MaxMessageTermination,
    TextMentionTermination,
)
from flowlib.errors import NodeExecutionError
from flowlib.graph import COMPLETE_REASON, Contains, Not
from flowlib.messages import (
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    TextMessage,
    ThoughtEvent,
)
from flowlib.teams import DiGraphBuilder, GraphFlow

GUARD = 30  # seconds; only ever reached when a run deadlocks (i.e. the feature is broken)


def team(
    agents: Sequence[Any],
    edges: Sequence[tuple[Any, ...]],
    *,
    entry: str | None = None,
    **kw: Any,
) -> GraphFlow:
    """A GraphFlow over ``agents`` with ``(source, target[, condition | {add_edge kwargs}])``."""
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for source, target, *rest in edges:
        options = rest[0] if rest else {}
        if not isinstance(options, dict):
            options = {"condition": options}
        builder.add_edge(source, target, **options)
    if entry is not None:
        builder.set_entry_point(entry)
    return GraphFlow(builder.get_participants(), builder.build(), **kw)


async def run(flow: GraphFlow, **kw: Any) -> TaskResult:
    """``flow.run(**kw)``, failing instead of hanging if the run deadlocks."""
    return await asyncio.wait_for(flow.run(**kw), GUARD)


def has(text: str) -> Any:
    def check(message: BaseChatMessage) -> bool:
        return text in message.to_model_text()

    return check


def lacks(text: str) -> Any:
    def check(message: BaseChatMessage) -> bool:
        return text not in message.to_model_text()

    return check


# --- documented patterns ------------------------------------------------------------------


async def test_sequential_chain() -> None:
    a, b, c = Fake("A"), Fake("B"), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "C")])
    result = await run(flow, task="go")
    assert texts(result.messages) == ["user:go", "A:A1", "B:B1", "C:C1"]
    assert result.stop_reason == COMPLETE_REASON
    assert flow.trace.steps == ["A", "B", "C"]
    assert a.seen == [["user:go"]]
    assert b.seen == [["user:go", "A:A1"]]
    assert c.seen == [["user:go", "A:A1", "B:B1"]]


async def test_fan_out_runs_every_branch_and_starts_in_insertion_order() -> None:
    log: list[str] = []
    agents = [Fake(n, log=log) for n in ("A", "B", "C", "D", "E")]
    flow = team(agents, [("A", "B"), ("A", "C"), ("A", "D"), ("A", "E")])
    result = await run(flow, task="go")
    assert texts(result.messages)[:2] == ["user:go", "A:A1"]
    assert sorted(texts(result.messages)[2:]) == ["B:B1", "C:C1", "D:D1", "E:E1"]
    assert flow.trace.steps == ["A", "B", "C", "D", "E"]
    starts = [entry for entry in log if entry.startswith("start:")]
    assert starts == ["start:A", "start:B", "start:C", "start:D", "start:E"]
    # Siblings started together: none of them saw another's reply.
    for agent in agents[1:]:
        assert agent.seen == [["user:go", "A:A1"]]
    assert result.stop_reason == COMPLETE_REASON


async def test_several_start_nodes_start_in_insertion_order_and_join() -> None:
    log: list[str] = []
    x, y, z = Fake("X", log=log), Fake("Y", log=log), Fake("Z", log=log)
    flow = team([x, y, z], [("X", "Z"), ("Y", "Z")])
    result = await run(flow, task="go")
    assert flow.trace.steps == ["X", "Y", "Z"]
    assert z.turns == 1
    assert log.index("start:Z") > max(log.index("end:X"), log.index("end:Y"))
    assert sorted(z.seen[0]) == ["X:X1", "Y:Y1", "user:go"]
    assert texts(result.messages)[-1] == "Z:Z1"


@pytest.mark.parametrize("reply", ["yes", "no"])
@pytest.mark.parametrize("style", ["callable", "string", "object", "conditional_edges"])
async def test_conditional_branch(style: str, reply: str) -> None:
    a, b, c = Fake("A", [reply]), Fake("B"), Fake("C")
    edges: list[tuple[Any, ...]]
    if style == "callable":
        edges = [("A", "B", has("yes")), ("A", "C", lacks("yes"))]
    elif style == "string":
        edges = [("A", "B", "yes"), ("A", "C", "no")]
    elif style == "object":
        edges = [("A", "B", Contains(text="yes")), ("A", "C", Not(condition=Contains(text="yes")))]
    else:
        edges = []
    builder = DiGraphBuilder().add_node(a).add_node(b).add_node(c)
    for source, target, condition in edges:
        builder.add_edge(source, target, condition=condition)
    if style == "conditional_edges":
        builder.add_conditional_edges(a, {"yes": b, "no": "C"})
    flow = GraphFlow(builder.get_participants(), builder.build())
    result = await run(flow, task="go")
    taken, skipped = (b, c) if reply == "yes" else (c, b)
    assert texts(result.messages) == ["user:go", f"A:{reply}", f"{taken.name}:{taken.name}1"]
    assert taken.turns == 1
    assert skipped.turns == 0
    assert flow.trace.steps == ["A", taken.name]
    assert result.stop_reason == COMPLETE_REASON


async def test_every_matching_edge_fires() -> None:
    a, b, c, d = Fake("A", ["red and blue"]), Fake("B"), Fake("C"), Fake("D")
    flow = team([a, b, c, d], [("A", "B", "red"), ("A", "C", "blue"), ("A", "D", "green")])
    await run(flow, task="go")
    assert (b.turns, c.turns, d.turns) == (1, 1, 0)


async def test_loop_with_exit() -> None:
    a, b, c = Fake("A"), Fake("B", ["revise", "revise", "APPROVE"]), Fake("C")
    flow = team(
        [a, b, c],
        [("A", "B"), ("B", "C", "APPROVE"), ("B", "A", lacks("APPROVE"))],
        entry="A",
        termination_condition=MaxMessageTermination(20),
    )
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "A", "B", "A", "B", "C"]
    assert texts(result.messages) == [
        "user:go",
        "A:A1",
        "B:revise",
        "A:A2",
        "B:revise",
        "A:A3",
        "B:APPROVE",
        "C:C1",
    ]
    assert a.seen == [["user:go"], ["B:revise"], ["B:revise"]]
    assert b.seen == [["user:go", "A:A1"], ["A:A2"], ["A:A3"]]
    assert result.stop_reason == COMPLETE_REASON


@pytest.mark.parametrize("group", ["loop_back", None])
async def test_loop_with_second_path_into_the_same_node(group: str | None) -> None:
    # A -> B -> C -> B: B is entered from A once and from C on every lap.
    a, b, c, d = Fake("A"), Fake("B"), Fake("C", ["again", "again", "done"]), Fake("D")
    flow = team(
        [a, b, c, d],
        [
            ("A", "B"),
            ("B", "C"),
            ("C", "B", {"condition": "again", "activation_group": group}),
            ("C", "D", "done"),
        ],
        termination_condition=MaxMessageTermination(20),
    )
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "C", "B", "C", "B", "C", "D"]
    assert b.seen == [["user:go", "A:A1"], ["C:again"], ["C:again"]]
    assert result.stop_reason == COMPLETE_REASON


def fan_loop(
    b_replies: Sequence[str], **c2_kw: Any
) -> tuple[GraphFlow, dict[str, Fake], list[str]]:
    """A -> B -> (C1, C2) -> B -> E, the loop-back edges in one ``any`` group."""
    log: list[str] = []
    agents = {
        "A": Fake("A", log=log),
        "B": Fake("B", b_replies, log=log),
        "C1": Fake("C1", log=log),
        "C2": Fake("C2", log=log, **c2_kw),
        "E": Fake("E", log=log),
    }
    back = {"activation_group": "loop_back_group", "activation_condition": "any"}
    flow = team(
        list(agents.values()),
        [
            ("A", "B"),
            ("B", "C1", lacks("exit")),
            ("B", "C2", lacks("exit")),
            ("B", "E", "exit"),
            ("C1", "B", back),
            ("C2", "B", back),
        ],
        termination_condition=MaxMessageTermination(50),
    )
    return flow, agents, log


async def test_fan_out_loop_with_any_group_runs_b_once_per_round() -> None:
    flow, agents, _ = fan_loop(["go", "go", "exit"])
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "C1", "C2", "B", "C1", "C2", "B", "E"]
    assert [agents[n].turns for n in ("A", "B", "C1", "C2", "E")] == [1, 3, 2, 2, 1]
    assert result.stop_reason == COMPLETE_REASON


async def test_fan_out_loop_with_any_group_and_a_slow_branch() -> None:
    # C2's first turn only ends once B has started its second turn (so B cannot have
    # waited for C2): B must still run once per round, not once per finished branch.
    gate = asyncio.Event()

    async def open_gate(agent: Fake, turn: int) -> None:
        if turn == 1:
            gate.set()

    flow, agents, log = fan_loop(["go", "go", "exit"], before_reply=wait_for(gate, on_turn=0))
    agents["B"].before_reply = open_gate
    result = await run(flow, task="go")
    assert agents["B"].turns == 3
    assert agents["E"].turns == 1
    second_b = [i for i, e in enumerate(log) if e == "start:B"][1]
    assert second_b < log.index("end:C2")  # B's second round overlapped C2's first turn
    assert texts(result.messages)[-2:] == ["B:exit", "E:E1"]
    assert result.stop_reason == COMPLETE_REASON


async def test_self_loop_with_conditional_exit() -> None:
    a, b, c = Fake("A"), Fake("B", ["more", "more", "done"]), Fake("C")
    flow = team(
        [a, b, c],
        [("A", "B"), ("B", "B", "more"), ("B", "C", "done")],
        max_turns=20,
    )
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "B", "B", "C"]
    # B never receives its own messages; nothing else was published between its turns.
    assert b.seen == [["user:go", "A:A1"], [], []]
    assert c.seen == [["user:go", "A:A1", "B:more", "B:more", "B:done"]]
    assert result.stop_reason == COMPLETE_REASON


async def test_entry_node_that_is_also_a_loop_back_target() -> None:
    a, b, c = Fake("A"), Fake("B", ["again", "done"]), Fake("C")
    flow = team(
        [a, b, c],
        [("A", "B"), ("B", "A", "again"), ("B", "C", "done")],
        entry="A",
        max_turns=20,
    )
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "A", "B", "C"]
    assert a.seen == [["user:go"], ["B:again"]]
    assert result.stop_reason == COMPLETE_REASON


async def test_join_inside_a_loop_still_joins() -> None:
    log: list[str] = []
    names = ("A", "B", "C", "D", "E", "F")
    agents = {n: Fake(n, ["again", "done"] if n == "E" else (), log=log) for n in names}
    flow = team(
        list(agents.values()),
        [
            ("A", "B"),
            ("B", "C"),
            ("B", "D"),
            ("C", "E"),
            ("D", "E"),
            ("E", "B", "again"),
            ("E", "F", "done"),
        ],
        max_turns=30,
    )
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "C", "D", "E", "B", "C", "D", "E", "F"]
    assert agents["E"].turns == 2
    # Each E turn saw both branches of its round.
    assert sorted(agents["E"].seen[0]) == ["A:A1", "B:B1", "C:C1", "D:D1", "user:go"]
    assert sorted(agents["E"].seen[1]) == ["B:B2", "C:C2", "D:D2"]
    assert result.stop_reason == COMPLETE_REASON


async def test_join_waits_for_a_slow_branch() -> None:
    log: list[str] = []
    gate = asyncio.Event()

    async def open_gate(agent: Fake, turn: int) -> None:
        gate.set()

    a, b, d = Fake("A", log=log), Fake("B", log=log, before_reply=open_gate), Fake("D", log=log)
    c = Fake("C", log=log, before_reply=wait_for(gate))
    flow = team([a, b, c, d], [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    result = await run(flow, task="go")
    assert d.turns == 1
    assert log.index("start:D") > log.index("end:C")
    assert d.seen == [["user:go", "A:A1", "B:B1", "C:C1"]]
    assert texts(result.messages)[-1] == "D:D1"


async def test_any_activation_node_runs_once_per_activation() -> None:
    a, b, c = Fake("A"), Fake("B"), Fake("C")
    d = Fake("D")
    builder = DiGraphBuilder().add_node(a).add_node(b).add_node(c).add_node(d, activation="any")
    builder.add_edge("A", "B").add_edge("A", "C").add_edge("B", "D").add_edge("C", "D")
    flow = GraphFlow(builder.get_participants(), builder.build())
    await run(flow, task="go")
    # B's edge activates D; C's edge, still in flight then, is absorbed: D runs once.
    assert d.turns == 1
    assert flow.trace.steps[:3] == ["A", "B", "C"]


# --- eager scheduling ---------------------------------------------------------------------


async def test_parallel_branches_run_concurrently() -> None:
    # B waits for an event only C sets: a sequential executor would deadlock here.
    gate = asyncio.Event()

    async def open_gate(agent: Fake, turn: int) -> None:
        gate.set()

    a, d = Fake("A"), Fake("D")
    b, c = Fake("B", before_reply=wait_for(gate)), Fake("C", before_reply=open_gate)
    flow = team([a, b, c, d], [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    result = await run(flow, task="go")
    assert texts(result.messages) == ["user:go", "A:A1", "C:C1", "B:B1", "D:D1"]
    assert flow.trace.steps == ["A", "B", "C", "D"]
    assert d.seen == [["user:go", "A:A1", "C:C1", "B:B1"]]


async def test_uneven_branches_downstream_of_short_branch_starts_early() -> None:
    # Long branch C only finishes once B2 (after the short branch's B) has started.
    log: list[str] = []
    gate = asyncio.Event()

    async def open_gate(agent: Fake, turn: int) -> None:
        gate.set()

    a, b = Fake("A", log=log), Fake("B", log=log)
    b2 = Fake("B2", log=log, before_reply=open_gate)
    c = Fake("C", log=log, before_reply=wait_for(gate))
    d = Fake("D", log=log)
    flow = team([a, b, b2, c, d], [("A", "B"), ("A", "C"), ("B", "B2"), ("B2", "D"), ("C", "D")])
    result = await run(flow, task="go")
    assert log.index("start:B2") < log.index("end:C")
    assert log.index("start:D") > log.index("end:C")
    assert d.turns == 1
    assert texts(result.messages)[-1] == "D:D1"
    assert sorted(d.seen[0]) == ["A:A1", "B2:B21", "B:B1", "C:C1", "user:go"]


# --- every message is seen ----------------------------------------------------------------


async def test_each_agent_sees_everything_since_its_last_turn_except_its_own() -> None:
    agents = [Fake("A"), Fake("B"), Fake("C", ["again", "done"]), Fake("D")]
    a, b, c, d = agents
    flow = team(
        agents,
        [("A", "B"), ("B", "C"), ("C", "A", "again"), ("C", "D", "done")],
        entry="A",
        max_turns=20,
    )
    result = await run(flow, task="go")
    assert texts(result.messages) == [
        "user:go",
        "A:A1",
        "B:B1",
        "C:again",
        "A:A2",
        "B:B2",
        "C:done",
        "D:D1",
    ]
    assert a.seen == [["user:go"], ["B:B1", "C:again"]]
    assert b.seen == [["user:go", "A:A1"], ["C:again", "A:A2"]]
    assert c.seen == [["user:go", "A:A1", "B:B1"], ["A:A2", "B:B2"]]
    assert d.seen == [texts(result.messages)[:-1]]


async def test_events_are_not_broadcast() -> None:
    a, b = Fake("A", thought="thinking"), Fake("B")
    flow = team([a, b], [("A", "B")])
    result = await run(flow, task="go")
    assert any(isinstance(m, ThoughtEvent) for m in result.messages)
    assert b.seen == [["user:go", "A:A1"]]


async def test_termination_sees_every_delta_including_task_and_events() -> None:
    recorder = Recorder()
    a, b, c = Fake("A", thought="hmm"), Fake("B"), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("A", "C")], termination_condition=recorder)
    await run(flow, task="go")
    assert recorder.deltas[:2] == [["user:go"], ["A:hmm", "A:A1"]]
    assert sorted(map(tuple, recorder.deltas[2:])) == [("B:B1",), ("C:C1",)]
    assert recorder.resets == 1  # auto-reset once the run stopped


async def test_task_message_from_a_node_name_triggers_nothing() -> None:
    a, b, c = Fake("A"), Fake("B"), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "C")])
    task = TextMessage(content="hi from B", source="B")
    result = await run(flow, task=task)
    assert flow.trace.steps == ["A", "B", "C"]
    assert (a.turns, b.turns, c.turns) == (1, 1, 1)
    assert texts(result.messages) == ["B:hi from B", "A:A1", "B:B1", "C:C1"]
    assert a.seen == [["B:hi from B"]]
    # It is a task message, not B's own turn: B is shown it too.
    assert b.seen == [["B:hi from B", "A:A1"]]


async def test_task_as_a_list_of_messages() -> None:
    a, b = Fake("A"), Fake("B")
    flow = team([a, b], [("A", "B")])
    task = [TextMessage(content="one", source="user"), TextMessage(content="two", source="bob")]
    result = await run(flow, task=task)
    assert texts(result.messages) == ["user:one", "bob:two", "A:A1", "B:B1"]
    assert a.seen == [["user:one", "bob:two"]]


# --- termination --------------------------------------------------------------------------


async def test_termination_on_a_fast_branch_lets_the_slow_turn_finish() -> None:
    # B says STOP while C is still running; C is released only once termination fired.
    log: list[str] = []
    gate = asyncio.Event()

    def stop_on_stop(messages: Sequence[Any]) -> bool:
        hit = any("STOP" in m.to_text() for m in messages)
        if hit:
            gate.set()
        return hit

    a, b = Fake("A", log=log), Fake("B", ["STOP"], log=log)
    c = Fake("C", log=log, before_reply=wait_for(gate))
    d, e = Fake("D", log=log), Fake("E", log=log)
    flow = team(
        [a, b, c, d, e],
        [("A", "B"), ("A", "C"), ("B", "E"), ("C", "D")],
        termination_condition=FunctionalTermination(stop_on_stop),
    )
    result = await run(flow, task="go")
    assert result.stop_reason == "Functional termination condition met"
    assert texts(result.messages) == ["user:go", "A:A1", "B:STOP", "C:C1"]
    assert (d.turns, e.turns) == (0, 0)
    assert "start:D" not in log and "start:E" not in log
    # The stopped run kept what was activated: resuming runs exactly those.
    resumed = await run(flow)
    assert sorted(flow.trace.steps) == ["D", "E"]
    assert sorted(texts(resumed.messages)) == ["D:D1", "E:E1"]
    assert resumed.stop_reason == COMPLETE_REASON


async def test_text_mention_stop_reason_is_the_conditions_text() -> None:
    a, b, c = Fake("A", ["TERMINATE now"]), Fake("B"), Fake("C")
    flow = team(
        [a, b, c],
        [("A", "B"), ("B", "C")],
        termination_condition=TextMentionTermination("TERMINATE"),
    )
    result = await run(flow, task="go")
    assert result.stop_reason == "Text 'TERMINATE' mentioned"
    assert texts(result.messages) == ["user:go", "A:TERMINATE now"]
    assert b.turns == 0


async def test_max_message_termination_counts_task_messages() -> None:
    agents = [Fake(n) for n in "ABCD"]
    flow = team(
        agents, [("A", "B"), ("B", "C"), ("C", "D")], termination_condition=MaxMessageTermination(3)
    )
    result = await run(flow, task="go")
    assert texts(result.messages) == ["user:go", "A:A1", "B:B1"]
    assert result.stop_reason == "Maximum number of messages 3 reached, current message count: 3"


async def test_task_alone_can_trigger_termination() -> None:
    a, b = Fake("A"), Fake("B")
    flow = team([a, b], [("A", "B")], termination_condition=MaxMessageTermination(2))
    task = [TextMessage(content="one", source="user"), TextMessage(content="two", source="user")]
    result = await run(flow, task=task)
    assert texts(result.messages) == ["user:one", "user:two"]
    assert result.stop_reason == "Maximum number of messages 2 reached, current message count: 2"
    assert a.turns == 0
    resumed = await run(flow)
    assert texts(resumed.messages) == ["A:A1", "B:B1"]
    assert a.seen == [["user:one", "user:two"]]


def ping_pong(**kw: Any) -> tuple[GraphFlow, Fake, Fake]:
    """A -> B -> A while B says "again"; B -> C on "done"."""
    a, b, c = Fake("A"), Fake("B", ["again"] * 20 + ["done"]), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "A", "again"), ("B", "C", "done")], entry="A", **kw)
    return flow, a, b


async def test_max_messages_resume_continues_the_loop_and_condition_auto_resets() -> None:
    stop = MaxMessageTermination(3)
    flow, a, _ = ping_pong(termination_condition=stop)
    first = await run(flow, task="go")
    assert texts(first.messages) == ["user:go", "A:A1", "B:again"]
    assert stop.terminated is False  # reset when the run stopped
    second = await run(flow)
    assert texts(second.messages) == ["A:A2", "B:again", "A:A3"]
    assert flow.trace.steps == ["A", "B", "A"]
    assert second.stop_reason == "Maximum number of messages 3 reached, current message count: 3"
    third = await run(flow)
    assert texts(third.messages) == ["B:again", "A:A4", "B:again"]
    assert a.seen[1:] == [["B:again"], ["B:again"], ["B:again"]]


async def test_max_turns_stops_and_resumes() -> None:
    flow, _, b = ping_pong(max_turns=3)
    first = await run(flow, task="go")
    assert first.stop_reason == "Maximum number of turns 3 reached."
    assert flow.trace.steps == ["A", "B", "A"]
    second = await run(flow)
    assert second.stop_reason == "Maximum number of turns 3 reached."
    assert flow.trace.steps == ["B", "A", "B"]
    assert texts(second.messages) == ["B:again", "A:A3", "B:again"]
    assert b.seen[1] == ["A:A2"]


async def test_max_turns_and_termination_whichever_first() -> None:
    flow, _, _ = ping_pong(max_turns=5, termination_condition=MaxMessageTermination(3))
    first = await run(flow, task="go")
    assert first.stop_reason.startswith("Maximum number of messages 3")  # type: ignore[union-attr]
    flow2, _, _ = ping_pong(max_turns=1, termination_condition=MaxMessageTermination(30))
    second = await run(flow2, task="go")
    assert second.stop_reason == "Maximum number of turns 1 reached."


async def test_new_task_after_natural_completion_starts_from_entry_with_context() -> None:
    a, b = Fake("A"), Fake("B")
    flow = team([a, b], [("A", "B")])
    first = await run(flow, task="one")
    assert first.stop_reason is not None and first.stop_reason.startswith(
        "Digraph execution is complete"
    )
    second = await run(flow, task="two")
    assert flow.trace.steps == ["A", "B"]
    assert texts(second.messages) == ["user:two", "A:A2", "B:B2"]
    # The team keeps its context: A is shown what happened since its last turn.
    assert a.seen == [["user:one"], ["B:B1", "user:two"]]
    assert b.seen == [["user:one", "A:A1"], ["user:two", "A:A2"]]


async def test_new_task_after_natural_completion_of_a_loop_restarts_the_loop() -> None:
    a, b, c = Fake("A"), Fake("B", ["again", "done", "again", "done"]), Fake("C")
    flow = team(
        [a, b, c], [("A", "B"), ("B", "A", "again"), ("B", "C", "done")], entry="A", max_turns=20
    )
    await run(flow, task="one")
    assert flow.trace.steps == ["A", "B", "A", "B", "C"]
    await run(flow, task="two")
    assert flow.trace.steps == ["A", "B", "A", "B", "C"]


async def test_run_without_task_on_a_fresh_team_starts_from_entry() -> None:
    a, b = Fake("A"), Fake("B")
    flow = team([a, b], [("A", "B")])
    result = await run(flow)
    assert texts(result.messages) == ["A:A1", "B:B1"]
    assert a.seen == [[]]


async def test_dead_end_is_named_in_the_stop_reason() -> None:
    a, b, c, d = Fake("A"), Fake("B", ["no"]), Fake("C"), Fake("D")
    flow = team([a, b, c, d], [("A", "B"), ("B", "C", "yes"), ("B", "D", "maybe")])
    result = await run(flow, task="go")
    assert texts(result.messages) == ["user:go", "A:A1", "B:no"]
    reason = result.stop_reason
    assert reason is not None
    assert reason.startswith(COMPLETE_REASON)
    assert reason != COMPLETE_REASON
    assert "`B`" in reason
    assert "`A`" not in reason


async def test_join_that_never_completes_is_named_in_the_stop_reason() -> None:
    a, b, c, d = Fake("A", ["no"]), Fake("B"), Fake("C"), Fake("D")
    flow = team([a, b, c, d], [("A", "B", "yes"), ("A", "C"), ("B", "D"), ("C", "D")])
    result = await run(flow, task="go")
    assert d.turns == 0
    assert texts(result.messages) == ["user:go", "A:no", "C:C1"]
    reason = result.stop_reason
    assert reason is not None and reason.startswith(COMPLETE_REASON)
    assert "`D`" in reason
    assert "`B -> D`" in reason


# --- external termination and cancellation ------------------------------------------------


async def test_external_termination_stops_after_the_running_turn() -> None:
    external = ExternalTermination()

    async def press_stop(agent: Fake, turn: int) -> None:
        external.set()

    a, b, c = Fake("A"), Fake("B", before_reply=press_stop), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "C")], termination_condition=external)
    result = await run(flow, task="go")
    assert texts(result.messages) == ["user:go", "A:A1", "B:B1"]
    assert result.stop_reason == "External termination requested"
    assert c.turns == 0
    b.before_reply = None
    resumed = await run(flow)
    assert flow.trace.steps == ["C"]
    assert texts(resumed.messages) == ["C:C1"]
    assert c.seen == [["user:go", "A:A1", "B:B1"]]


async def test_external_termination_waits_for_concurrent_turns() -> None:
    external = ExternalTermination()
    gate = asyncio.Event()

    def release_after_b(messages: Sequence[Any]) -> None:
        if any(m.source == "B" for m in messages):
            gate.set()  # C is still running when B's turn is checked

    async def press_stop(agent: Fake, turn: int) -> None:
        external.set()

    log: list[str] = []
    a = Fake("A", log=log)
    b = Fake("B", log=log, before_reply=press_stop)
    c = Fake("C", log=log, before_reply=wait_for(gate))
    d, e = Fake("D", log=log), Fake("E", log=log)
    flow = team(
        [a, b, c, d, e],
        [("A", "B"), ("A", "C"), ("B", "D"), ("C", "E")],
        termination_condition=Recorder(release_after_b) | external,
    )
    result = await run(flow, task="go")
    assert result.stop_reason == "External termination requested"
    assert texts(result.messages) == ["user:go", "A:A1", "B:B1", "C:C1"]
    assert "start:D" not in log and "start:E" not in log


async def test_cancellation_while_an_agent_awaits() -> None:
    token = CancellationToken()
    blocked = asyncio.Event()

    async def hang_once(agent: Fake, turn: int) -> None:
        if not blocked.is_set():
            blocked.set()
            token.cancel()
            await asyncio.Event().wait()  # never set: only cancellation ends it

    a, b, c = Fake("A"), Fake("B", before_reply=hang_once), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "C")])
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(flow.run(task="go", cancellation_token=token), GUARD)
    assert b.turns == 0
    resumed = await run(flow)
    assert flow.trace.steps == ["B", "C"]
    assert texts(resumed.messages) == ["B:B1", "C:C1"]
    assert c.seen == [["user:go", "A:A1", "B:B1"]]


async def test_cancellation_of_concurrent_nodes_from_outside() -> None:
    token = CancellationToken()
    started = {"B": asyncio.Event(), "C": asyncio.Event()}
    hang = {"B": True, "C": True}

    async def hang_first(agent: Fake, turn: int) -> None:
        started[agent.name].set()
        if hang[agent.name]:
            await asyncio.Event().wait()

    a, d = Fake("A"), Fake("D")
    b, c = Fake("B", before_reply=hang_first), Fake("C", before_reply=hang_first)
    flow = team([a, b, c, d], [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    running = asyncio.ensure_future(flow.run(task="go", cancellation_token=token))
    await asyncio.wait_for(asyncio.gather(started["B"].wait(), started["C"].wait()), GUARD)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, GUARD)
    assert (b.turns, c.turns, d.turns) == (0, 0, 0)
    hang.update(B=False, C=False)
    resumed = await run(flow)
    assert sorted(flow.trace.steps[:2]) == ["B", "C"]
    assert flow.trace.steps[2:] == ["D"]
    assert sorted(texts(resumed.messages)) == ["B:B1", "C:C1", "D:D1"]


async def test_cancelled_before_start_raises() -> None:
    token = CancellationToken()
    token.cancel()
    a = Fake("A")
    flow = team([a], [])
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(flow.run(task="go", cancellation_token=token), GUARD)
    assert a.turns == 0


async def test_node_rerun_after_cancellation_sees_its_messages() -> None:
    token = CancellationToken()
    blocked = asyncio.Event()

    async def hang_once(agent: Fake, turn: int) -> None:
        if not blocked.is_set():
            blocked.set()
            token.cancel()
            await asyncio.Event().wait()

    a, b = Fake("A"), Fake("B", before_reply=hang_once)
    flow = team([a, b], [("A", "B")])
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(flow.run(task="go", cancellation_token=token), GUARD)
    await run(flow)
    assert b.seen == [["user:go", "A:A1"], ["user:go", "A:A1"]]


# --- node errors --------------------------------------------------------------------------


async def test_node_error_names_the_node_keeps_state_and_retries() -> None:
    boom = RuntimeError("boom")
    a, b, c = Fake("A"), Fake("B", fail=boom), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "C")])
    with pytest.raises(NodeExecutionError) as info:
        await run(flow, task="go")
    error = info.value
    assert error.node == "B"
    assert error.__cause__ is boom
    assert "`B`" in str(error) and "boom" in str(error)
    assert isinstance(error, RuntimeError)
    assert a.turns == 1 and c.turns == 0
    b.fail = None
    resumed = await run(flow)
    assert flow.trace.steps == ["B", "C"]
    assert texts(resumed.messages) == ["B:B1", "C:C1"]
    assert resumed.stop_reason == COMPLETE_REASON
    assert a.turns == 1  # A did not run again


async def test_node_retried_after_error_sees_its_messages() -> None:
    a, b = Fake("A"), Fake("B", fail=RuntimeError("boom"))
    flow = team([a, b], [("A", "B")])
    with pytest.raises(NodeExecutionError):
        await run(flow, task="go")
    b.fail = None
    await run(flow)
    assert b.seen[-1] == ["user:go", "A:A1"]


async def test_function_node_error() -> None:
    def explode(messages: Sequence[BaseChatMessage]) -> str:
        raise KeyError("missing")

    builder = DiGraphBuilder().add_node(Fake("A")).add_node(explode).add_edge("A", "explode")
    flow = GraphFlow(builder.get_participants(), builder.build())
    with pytest.raises(NodeExecutionError) as info:
        await run(flow, task="go")
    assert info.value.node == "explode"
    assert isinstance(info.value.__cause__, KeyError)
    assert "`explode`" in str(info.value)


async def test_failing_edge_condition_names_the_source_and_edge() -> None:
    def broken(message: BaseChatMessage) -> bool:
        raise ZeroDivisionError("bad condition")

    flow = team([Fake("A"), Fake("B")], [("A", "B", broken)])
    with pytest.raises(NodeExecutionError) as info:
        await run(flow, task="go")
    assert info.value.node == "A"
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "`A -> B`" in str(info.value)


async def test_error_in_a_concurrent_branch() -> None:
    gate = asyncio.Event()
    boom = ValueError("branch failed")
    a, d = Fake("A"), Fake("D")
    b = Fake("B", fail=boom)
    c = Fake("C", before_reply=wait_for(gate))
    flow = team([a, b, c, d], [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    with pytest.raises(NodeExecutionError) as info:
        await run(flow, task="go")
    assert info.value.node == "B"
    assert info.value.__cause__ is boom
    assert c.turns == 0  # C was interrupted, not completed
    b.fail = None
    gate.set()
    resumed = await run(flow)
    assert sorted(flow.trace.steps[:2]) == ["B", "C"]
    assert flow.trace.steps[2:] == ["D"]
    assert sorted(texts(resumed.messages)) == ["B:B1", "C:C1", "D:D1"]


# --- streaming ----------------------------------------------------------------------------


async def test_run_stream_yields_task_events_messages_then_result() -> None:
    a, b = Fake("A", thought="plan"), Fake("B", chunks=["he", "llo"])
    flow = team([a, b], [("A", "B")])
    items = [item async for item in flow.run_stream(task="go")]
    kinds = [type(item).__name__ for item in items]
    assert kinds == [
        "TextMessage",
        "ThoughtEvent",
        "TextMessage",
        "ModelClientStreamingChunkEvent",
        "ModelClientStreamingChunkEvent",
        "TextMessage",
        "TaskResult",
    ]
    assert [item.source for item in items[:-1]] == ["user", "A", "A", "B", "B", "B"]  # type: ignore[union-attr]
    result = items[-1]
    assert isinstance(result, TaskResult)
    assert result.stop_reason == COMPLETE_REASON
    # The result keeps everything but the chunks, in stream order.
    expected = [i for i in items[:-1] if not isinstance(i, ModelClientStreamingChunkEvent)]
    assert list(result.messages) == expected
    assert not any(isinstance(m, ModelClientStreamingChunkEvent) for m in result.messages)


async def test_run_returns_what_run_stream_kept() -> None:
    a, b = Fake("A", thought="plan", chunks=["x"]), Fake("B")
    flow = team([a, b], [("A", "B")])
    result = await run(flow, task="go")
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "ThoughtEvent",
        "TextMessage",
        "TextMessage",
    ]


async def test_output_task_messages_false() -> None:
    a, b = Fake("A"), Fake("B")
    flow = team([a, b], [("A", "B")])
    items = [item async for item in flow.run_stream(task="go", output_task_messages=False)]
    result = items[-1]
    assert isinstance(result, TaskResult)
    assert texts(items[:-1]) == ["A:A1", "B:B1"]
    assert texts(result.messages) == ["A:A1", "B:B1"]
    # The agents were still given the task.
    assert a.seen == [["user:go"]]
    result2 = await run(flow, task="again", output_task_messages=False)
    assert sources(result2.messages) == ["A", "B"]


async def test_concurrent_streams_are_interleaved_but_complete() -> None:
    a = Fake("A")
    b, c = Fake("B", chunks=["b1", "b2"]), Fake("C", chunks=["c1", "c2"])
    flow = team([a, b, c], [("A", "B"), ("A", "C")])
    items = [item async for item in flow.run_stream(task="go")]
    chunks = [i.content for i in items if isinstance(i, ModelClientStreamingChunkEvent)]
    assert sorted(chunks) == ["b1", "b2", "c1", "c2"]
    assert chunks.index("b1") < chunks.index("b2")
    assert chunks.index("c1") < chunks.index("c2")
    for name in ("B", "C"):
        last_chunk = max(
            i
            for i, x in enumerate(items)
            if isinstance(x, ModelClientStreamingChunkEvent) and x.source == name
        )
        message = next(
            i for i, x in enumerate(items) if isinstance(x, TextMessage) and x.source == name
        )
        assert last_chunk < message


# --- nested teams -------------------------------------------------------------------------


async def test_graph_flow_as_a_node_of_a_graph_flow() -> None:
    x, y = Fake("X", thought="inner thought"), Fake("Y")
    inner = team([x, y], [("X", "Y")], name="inner")
    a, b = Fake("A"), Fake("B")
    outer = team([a, inner, b], [("A", "inner"), ("inner", "B")])
    result = await run(outer, task="go")
    assert outer.trace.steps == ["A", "inner", "B"]
    assert texts(result.messages) == ["user:go", "A:A1", "X:X1", "Y:Y1", "B:B1"]
    assert any(isinstance(m, ThoughtEvent) and m.source == "X" for m in result.messages)
    assert x.seen == [["user:go", "A:A1"]]
    assert y.seen == [["user:go", "A:A1", "X:X1"]]
    # The inner team's chat messages were published to the outer thread.
    assert b.seen == [["user:go", "A:A1", "X:X1", "Y:Y1"]]
    assert result.stop_reason == COMPLETE_REASON


async def test_nested_team_in_an_outer_loop() -> None:
    x, y = Fake("X"), Fake("Y", ["again", "done"])
    inner = team([x, y], [("X", "Y")], name="inner")
    a, c = Fake("A"), Fake("C")
    outer = team(
        [a, inner, c],
        [("A", "inner"), ("inner", "A", "again"), ("inner", "C", "done")],
        entry="A",
        max_turns=10,
    )
    result = await run(outer, task="go")
    assert outer.trace.steps == ["A", "inner", "A", "inner", "C"]
    assert texts(result.messages) == [
        "user:go",
        "A:A1",
        "X:X1",
        "Y:again",
        "A:A2",
        "X:X2",
        "Y:done",
        "C:C1",
    ]
    assert a.seen == [["user:go"], ["X:X1", "Y:again"]]
    assert x.seen[1] == ["Y:again", "A:A2"]


# --- lifecycle ----------------------------------------------------------------------------


async def test_pause_resume_and_reset_call_participant_hooks() -> None:
    x = Fake("X")
    inner = team([x], [], name="inner")
    a, b = Fake("A"), Fake("B")
    stop = Recorder()
    flow = team([a, inner, b], [("A", "inner"), ("inner", "B")], termination_condition=stop)
    await run(flow, task="go")
    await flow.pause()
    assert (a.pauses, b.pauses, x.pauses) == (1, 1, 1)
    await flow.resume()
    assert (a.resumes, b.resumes, x.resumes) == (1, 1, 1)
    resets_before = stop.resets
    await flow.reset()
    assert (a.resets, b.resets, x.resets) == (1, 1, 1)
    assert stop.resets == resets_before + 1
    result = await run(flow, task="fresh")
    assert a.seen == [["user:fresh"]]  # the thread was cleared
    assert texts(result.messages) == ["user:fresh", "A:A1", "X:X1", "B:B1"]


async def test_reset_clears_a_stopped_loop() -> None:
    flow, a, _ = ping_pong(max_turns=3)
    await run(flow, task="go")
    await flow.reset()
    result = await run(flow, task="new")
    assert flow.trace.steps == ["A", "B", "A"]
    assert a.seen[0] == ["user:new"]
    assert texts(result.messages)[0] == "user:new"


async def test_reset_and_run_while_running_raise() -> None:
    outcomes: dict[str, BaseException | None] = {}

    async def meddle(agent: Fake, turn: int) -> None:
        for label, action in (
            ("reset", flow.reset()),
            ("run", flow.run(task="again")),
            ("load_state", flow.load_state({})),
        ):
            try:
                await action
                outcomes[label] = None
            except BaseException as exc:
                outcomes[label] = exc
        try:
            await flow.run_stream().__anext__()
            outcomes["run_stream"] = None
        except BaseException as exc:
            outcomes["run_stream"] = exc

    a, b, c = Fake("A"), Fake("B", before_reply=meddle), Fake("C")
    flow = team([a, b, c], [("A", "B"), ("B", "C")])
    result = await run(flow, task="go")
    for label in ("reset", "run", "run_stream", "load_state"):
        assert isinstance(outcomes[label], RuntimeError), (label, outcomes[label])
    assert "running" in str(outcomes["reset"])
    # The refused calls did not disturb the run.
    assert flow.trace.steps == ["A", "B", "C"]
    assert texts(result.messages) == ["user:go", "A:A1", "B:B1", "C:C1"]
    assert a.turns == 1


async def test_two_concurrent_runs_refused_from_outside() -> None:
    gate = asyncio.Event()
    started = asyncio.Event()

    async def hold(agent: Fake, turn: int) -> None:
        started.set()
        await gate.wait()

    flow = team([Fake("A", before_reply=hold), Fake("B")], [("A", "B")])
    first = asyncio.ensure_future(flow.run(task="one"))
    await asyncio.wait_for(started.wait(), GUARD)
    with pytest.raises(RuntimeError, match="already running"):
        await flow.run(task="two")
    gate.set()
    result = await asyncio.wait_for(first, GUARD)
    assert texts(result.messages) == ["user:one", "A:A1", "B:B1"]


async def test_team_properties() -> None:
    flow = team([Fake("A"), Fake("B")], [("A", "B")], max_turns=4)
    assert flow.name == "GraphFlow"
    assert flow.description == "A team of agents"
    assert flow.max_turns == 4
    assert [p.name for p in flow.participants] == ["A", "B"]
    assert list(flow.graph.nodes) == ["A", "B"]
    named = team([Fake("A")], [], name="mine", description="does things")
    assert (named.name, named.description) == ("mine", "does things")


async def test_plain_function_nodes_run() -> None:
    seen: list[list[str]] = []

    def draft(messages: Sequence[BaseChatMessage]) -> str:
        seen.append([m.to_model_text() for m in messages])
        return "a draft"

    async def review(messages: Sequence[BaseChatMessage]) -> str:
        seen.append([m.to_model_text() for m in messages])
        return "APPROVE"

    def silent(messages: Sequence[BaseChatMessage]) -> None:
        seen.append([m.to_model_text() for m in messages])

    builder = (
        DiGraphBuilder()
        .add_node(draft)
        .add_node(review)
        .add_node(silent)
        .add_node(lambda messages: "end", name="finish")
        .add_edge("draft", "review")
        .add_edge("review", "silent", condition="APPROVE")
        .add_edge("silent", "finish")
    )
    flow = GraphFlow(builder.get_participants(), builder.build())
    result = await run(flow, task="write")
    assert texts(result.messages) == [
        "user:write",
        "draft:a draft",
        "review:APPROVE",
        "finish:end",
    ]
    assert seen == [["write"], ["write", "a draft"], ["write", "a draft", "APPROVE"]]
    assert flow.trace.steps == ["draft", "review", "silent", "finish"]


async def test_two_self_loops_in_one_any_group_rerun_once_per_turn() -> None:
    from flowlib.testing import ScriptedAgent

    # Both loops match on turn 1: the second firing must not absorb the first edge (both
    # come from the completing node), or the X match on turn 2 would be swallowed.
    b = ScriptedAgent("b", ["X Y", "X", "stop"])
    builder = DiGraphBuilder().add_node(b)
    builder.add_edge("b", "b", condition="X", activation_group="again", activation_condition="any")
    builder.add_edge("b", "b", condition="Y", activation_group="again", activation_condition="any")
    builder.set_entry_point("b")
    flow = GraphFlow(builder.get_participants(), builder.build(), max_turns=10)
    result = await flow.run(task="go")
    assert flow.trace.steps == ["b", "b", "b"]
    assert result.stop_reason is not None
    assert result.stop_reason.startswith("Digraph execution is complete")
