"""flowlib.testing: the fake agents, the run checker, and what each strategy promises."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
import sys
from collections.abc import Sequence
from itertools import pairwise
from typing import Any, Literal

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

import flowlib.testing.strategies as strategies_module
from flowlib.base import CancellationToken
from flowlib.errors import (
    ActivationConflictError,
    ConditionSerializationError,
    CycleWithoutExitError,
    DuplicateNodeError,
    EmptyGraphError,
    GraphError,
    NodeExecutionError,
    NoStartNodeError,
    ParticipantMismatchError,
    StateError,
    UnboundedLoopError,
    UnknownNodeError,
    UnreachableNodeError,
)
from flowlib.graph import COMPLETE_REASON, Contains, DiGraph, RunTrace, validate_graph
from flowlib.messages import TextMessage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import (
    EchoAgent,
    GatedAgent,
    RunTimeline,
    ScriptedAgent,
    ScriptExhaustedError,
    TraceCheckError,
    TurnRecorder,
    check_run,
    check_trace,
)
from flowlib.testing.specs import IDENTIFIER
from flowlib.testing.strategies import (
    EdgeSpec,
    GraphSpec,
    NodeSpec,
    TextCheck,
    chains,
    dags,
    dags_with_back_edges,
    fan_outs,
    interleaved,
    invalid_graphs,
    joins,
    loops_with_exit,
    valid_graphs,
)

few = settings(max_examples=40, deadline=None)


def texts(messages: Sequence[object]) -> list[str]:
    return [m.to_text() for m in messages if isinstance(m, TextMessage)]


def graph_of(spec: GraphSpec) -> dict[str, list[str]]:
    successors: dict[str, list[str]] = {name: [] for name in spec.names}
    for edge in spec.edges:
        successors[edge.source].append(edge.target)
    return successors


def indegree(spec: GraphSpec) -> dict[str, int]:
    counts = dict.fromkeys(spec.names, 0)
    for edge in spec.edges:
        counts[edge.target] += 1
    return counts


# --- ScriptedAgent ---------------------------------------------------------------------


async def test_scripted_agent_replies_in_order_and_records_what_it_saw() -> None:
    agent = ScriptedAgent("writer", ["one", "two"])
    first = await agent.run(task="hello")
    second = await agent.run(task=[TextMessage(content="a", source="x")])
    assert texts(first.messages) == ["hello", "one"]
    assert texts(second.messages) == ["a", "two"]
    assert agent.turns == 2
    assert agent.replies == ["one", "two"]
    assert [[m.to_text() for m in turn] for turn in agent.seen] == [["hello"], ["a"]]
    assert first.messages[-1].source == "writer"
    assert agent.produced_message_types == (TextMessage,)


async def test_scripted_agent_says_how_many_outputs_were_scripted_when_it_runs_out() -> None:
    agent = ScriptedAgent("critic", ["only"])
    await agent.run(task="x")
    with pytest.raises(ScriptExhaustedError, match=r"`critic` was scripted with 1 output"):
        await agent.run(task="y")
    assert agent.turns == 1  # a failed turn does not move the script on


async def test_scripted_agent_then_reply_continues_after_the_script() -> None:
    agent = ScriptedAgent("critic", ["REVISE"], then="APPROVE")
    replies = [texts((await agent.run(task="x")).messages)[-1] for _ in range(3)]
    assert replies == ["REVISE", "APPROVE", "APPROVE"]


async def test_scripted_agent_with_a_function_gets_turn_index_and_new_messages() -> None:
    calls: list[tuple[int, list[str]]] = []

    def script(turn: int, messages: object) -> str:
        assert isinstance(messages, list)
        calls.append((turn, [m.to_text() for m in messages]))
        return f"turn {turn}"

    agent = ScriptedAgent("f", script)
    await agent.run(task="a")
    result = await agent.run(task="b")
    assert calls == [(0, ["a"]), (1, ["b"])]
    assert texts(result.messages)[-1] == "turn 1"


def test_scripted_agent_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError, match=r"pass a list"):
        ScriptedAgent("a", "oops")
    with pytest.raises(ValueError, match="delay"):
        ScriptedAgent("a", ["x"], delay=-1)
    with pytest.raises(ValueError, match="yields"):
        ScriptedAgent("a", ["x"], yields=[0, -1])


async def test_scripted_agent_reset_and_state_round_trip() -> None:
    agent = ScriptedAgent("a", ["one", "two", "three"])
    await agent.run(task="x")
    state = json.loads(json.dumps(await agent.save_state()))
    copy = ScriptedAgent("a", ["one", "two", "three"])
    await copy.load_state(state)
    assert copy.turns == 1
    assert texts((await copy.run(task="y")).messages)[-1] == "two"
    await agent.on_reset(CancellationToken())
    assert (agent.turns, agent.seen, agent.replies, agent.resets) == (0, [], [], 1)
    with pytest.raises(StateError, match="`a`"):
        await copy.load_state({"type": "Other", "position": 1})


async def test_yields_order_concurrent_turns_without_wall_clock_time() -> None:
    recorder = TurnRecorder()
    slow = ScriptedAgent("slow", ["s"], yields=3, recorder=recorder)
    fast = ScriptedAgent("fast", ["f"], yields=[0], recorder=recorder)
    await asyncio.gather(slow.run(task="x"), fast.run(task="x"))
    assert recorder.starts == ["slow", "fast"]
    assert recorder.ends == ["fast", "slow"]
    assert recorder.overlapped("slow", "fast")
    assert recorder.max_concurrent == 2


async def test_echo_agent_repeats_the_last_message() -> None:
    agent = EchoAgent("parrot")
    result = await agent.run(task=[TextMessage(content=t, source="u") for t in ("a", "b")])
    assert texts(result.messages)[-1] == "b"
    assert texts((await agent.run()).messages) == [""]
    assert agent.turns == 2


# --- GatedAgent and TurnRecorder ---------------------------------------------------------


async def test_gated_agent_waits_for_release() -> None:
    agent = GatedAgent("g", ["one", "two"])
    turn = asyncio.ensure_future(agent.run(task="x"))
    await agent.started.wait()
    assert agent.waiting and not turn.done()
    agent.release()
    assert texts((await turn).messages)[-1] == "one"
    assert agent.finished.is_set() and not agent.waiting
    agent.open()
    assert texts((await agent.run(task="y")).messages)[-1] == "two"
    with pytest.raises(ValueError, match="turns >= 1"):
        agent.release(0)


async def test_gated_agent_release_ahead_of_time_and_cancellation() -> None:
    recorder = TurnRecorder()
    agent = GatedAgent("g", ["one"], recorder=recorder)
    turn = asyncio.ensure_future(agent.run(task="x"))
    await agent.started.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert agent.turns == 0  # a cancelled turn is replayed with the same reply
    assert [e.kind for e in recorder.events] == ["start", "cancel"]
    assert recorder.running == []
    agent.release()  # released before the next turn arrives
    assert texts((await agent.run(task="x")).messages)[-1] == "one"


def test_turn_recorder_overlap_and_order() -> None:
    recorder = TurnRecorder()
    recorder.start("a", 0)
    recorder.end("a", 0)
    recorder.start("b", 0)
    recorder.start("c", 0)
    assert recorder.running == ["b", "c"]
    recorder.end("c", 0, cancelled=True)
    recorder.end("b", 0)
    assert not recorder.overlapped("a", "b")
    assert recorder.overlapped("c", "b")
    assert (recorder.starts, recorder.ends, recorder.max_concurrent) == (
        ["a", "b", "c"],
        ["a", "b"],
        2,
    )


async def test_gated_agent_shows_eager_scheduling_in_a_team() -> None:
    # a -> (slow, c), c -> d: d finishes while slow still waits at its gate.
    a, c = ScriptedAgent("a", ["go"]), ScriptedAgent("c", ["ok"])
    slow, d = GatedAgent("slow", ["late"]), GatedAgent("d", ["done"])
    d.open()
    builder = DiGraphBuilder()
    for agent in (a, slow, c, d):
        builder.add_node(agent)
    builder.add_edge(a, slow).add_edge(a, c).add_edge(c, d)
    team = GraphFlow(builder.get_participants(), builder.build())
    running = asyncio.ensure_future(team.run(task="x"))
    await d.finished.wait()
    assert slow.waiting
    slow.release()
    result = await running
    assert texts(result.messages)[-1] == "late"


async def test_scripted_agents_resume_a_loop_from_saved_state() -> None:
    def team() -> GraphFlow:
        writer = ScriptedAgent("writer", ["d1", "d2", "d3"])
        critic = ScriptedAgent("critic", ["REVISE", "REVISE", "APPROVE"])
        builder = DiGraphBuilder().add_node(writer).add_node(critic).set_entry_point(writer)
        builder.add_edge(writer, critic).add_edge(critic, writer, condition="REVISE")
        return GraphFlow(builder.get_participants(), builder.build(), max_turns=3)

    first = team()
    await first.run(task="write")
    second = team()
    await second.load_state(json.loads(json.dumps(await first.save_state())))
    result = await second.run()
    assert second.trace.steps == ["critic", "writer", "critic"]
    assert texts(result.messages) == ["REVISE", "d3", "APPROVE"]


async def test_an_over_running_node_fails_the_run_with_the_script_error() -> None:
    spec = GraphSpec(nodes=(NodeSpec("a"), NodeSpec("b")), edges=(EdgeSpec("a", "b"),))
    team = spec.team()
    await team.run(task="x")
    with pytest.raises(NodeExecutionError) as info:
        await team.run(task="again")  # fresh run from the entry; "a" has one reply only
    assert isinstance(info.value.__cause__, ScriptExhaustedError)


# --- the run checker -----------------------------------------------------------------------


def chain_graph() -> DiGraph:
    return GraphSpec(
        nodes=(NodeSpec("a"), NodeSpec("b")), edges=(EdgeSpec("a", "b", "GO"),)
    ).build()


def join_graph(activation: Literal["all", "any"] = "all") -> DiGraph:
    spec = GraphSpec(
        nodes=(NodeSpec("a"), NodeSpec("b"), NodeSpec("c", activation=activation)),
        edges=(EdgeSpec("a", "c"), EdgeSpec("b", "c")),
    )
    return spec.build()


def trace(graph: DiGraph, steps: list[str], fired: list[tuple[int, int]], stop: str) -> RunTrace:
    names = list(graph.nodes)
    return RunTrace(
        names=names,
        edge_ends=[(s, e.target) for s, e in graph.iter_edges()],
        step_nodes=[names.index(n) for n in steps],
        fired=fired,
        stop_reason=stop,
    )


async def test_check_run_accepts_a_real_run() -> None:
    spec = GraphSpec(
        nodes=(NodeSpec("a", ("GO",)), NodeSpec("b"), NodeSpec("c"), NodeSpec("d")),
        edges=(
            EdgeSpec("a", "b", "GO"),
            EdgeSpec("a", "c"),
            EdgeSpec("b", "d"),
            EdgeSpec("c", "d"),
        ),
    )
    team = spec.team()
    timeline = RunTimeline.attach(team)
    await team.run(task="x")
    check_run(team, timeline=timeline)
    check_run(team)  # without a timeline: what the trace alone implies


@pytest.mark.parametrize(
    ("steps", "fired", "stop", "replies", "match"),
    [
        (["b", "a"], [], COMPLETE_REASON, None, "must start with the entry nodes"),
        (["a", "b"], [], COMPLETE_REASON, None, "without enough activations"),
        (["a", "b"], [(1, 0)], COMPLETE_REASON, None, "not a turn of its source"),
        (["a", "b"], [(0, 0), (0, 0)], COMPLETE_REASON, None, "fired twice"),
        (["a", "b"], [(0, 0)], COMPLETE_REASON, ["no", "ok"], "does not match the reply"),
        (["a"], [], COMPLETE_REASON, ["GO"], "matched the reply 'GO' of step 0 but did not"),
        (["a"], [], COMPLETE_REASON, ["no"], "stop reason does not name it"),
    ],
)
def test_check_trace_rejects_forged_traces(
    steps: list[str],
    fired: list[tuple[int, int]],
    stop: str,
    replies: list[str | None] | None,
    match: str,
) -> None:
    graph = chain_graph()
    with pytest.raises(TraceCheckError, match=match):
        check_trace(graph, trace(graph, steps, fired, stop), replies=replies)


def test_check_trace_with_a_timeline_catches_early_and_repeated_starts() -> None:
    graph = join_graph()  # a -> c, b -> c: c joins both
    early = trace(graph, ["a", "b", "c"], [(0, 0), (1, 1)], COMPLETE_REASON)
    check_trace(graph, early)  # the trace alone cannot tell when the edges fired
    timeline = RunTimeline(
        events=[("start", 0), ("start", 1), ("fire", 0), ("start", 2), ("fire", 1)]
    )
    with pytest.raises(TraceCheckError, match="`c` started at step 2 but had no unused"):
        check_trace(graph, early, timeline=timeline)
    # c is an `any` join: activated twice before it starts, it must run once.
    any_join = join_graph(activation="any")
    twice = trace(any_join, ["a", "b", "c", "c"], [(0, 0), (1, 1)], COMPLETE_REASON)
    check_trace(any_join, twice)
    merged = RunTimeline(
        events=[("start", 0), ("start", 1), ("fire", 0), ("fire", 1), ("start", 2), ("start", 3)]
    )
    with pytest.raises(TraceCheckError, match="`c` started at step 3 but had no unused"):
        check_trace(any_join, twice, timeline=merged)


def test_check_trace_with_a_timeline_catches_lost_activations_and_wrong_steps() -> None:
    graph = chain_graph()
    lost = trace(graph, ["a"], [(0, 0)], COMPLETE_REASON)
    with pytest.raises(TraceCheckError, match=r"`b` was activated .* but never ran"):
        check_trace(graph, lost, timeline=RunTimeline(events=[("start", 0), ("fire", 0)]))
    join = join_graph()
    wrong = trace(join, ["a", "b", "c"], [(1, 0), (1, 1)], COMPLETE_REASON)
    events = RunTimeline(
        events=[("start", 0), ("start", 1), ("fire", 0), ("fire", 1), ("start", 2)]
    )
    with pytest.raises(TraceCheckError, match=r"records step 1 .* the source's turn is step 0"):
        check_trace(join, wrong, timeline=events)
    check_trace(join, wrong, timeline=events, check_steps=False)


def test_check_trace_requires_the_stop_reason_to_name_a_waiting_join() -> None:
    graph = join_graph()
    waiting = trace(graph, ["a", "b"], [(0, 0)], COMPLETE_REASON)
    with pytest.raises(TraceCheckError, match="left waiting"):
        check_trace(graph, waiting)
    named = trace(graph, ["a", "b"], [(0, 0)], f"{COMPLETE_REASON}: node `c` was still waiting")
    check_trace(graph, named)


def test_timeline_attach_and_verify_errors() -> None:
    with pytest.raises(TypeError, match="needs a team"):
        RunTimeline.attach(object())
    graph = chain_graph()
    with pytest.raises(RuntimeError, match="saw 0 starts"):
        RunTimeline().verify(trace(graph, ["a"], [], COMPLETE_REASON))
    with pytest.raises(TraceCheckError, match="does not belong"):
        check_trace(join_graph(), trace(graph, ["a"], [], COMPLETE_REASON))


# --- GraphSpec -----------------------------------------------------------------------------


def test_graph_spec_helpers() -> None:
    spec = GraphSpec(
        nodes=(NodeSpec("a", ("REVISE",), then="APPROVE"), NodeSpec("b", activation="any")),
        edges=(
            EdgeSpec("a", "a", TextCheck("REVISE")),
            EdgeSpec("a", "b", Contains(text="APPROVE")),
        ),
        entry="a",
    )
    assert spec.names == ("a", "b")
    assert spec.node("b").activation == "any"
    with pytest.raises(KeyError):
        spec.node("zz")
    assert spec.is_cyclic and spec.entry_nodes() == ["a"]
    assert spec.conditions() == {"has_revise": TextCheck("REVISE")}
    # a: entry + 1 scripted REVISE = 2; b: once per run of a, capped by its 1 reply.
    assert spec.run_bound() == 3
    assert spec.team().max_turns == 3
    with pytest.raises(UnboundedLoopError):
        spec.team(max_turns=None)
    assert "a -> a if TextCheck('REVISE')" in spec.describe()
    assert repr(NodeSpec("a")) == "NodeSpec(name='a')"
    assert TextCheck("<k1>").__name__ == "has_k1"
    assert TextCheck("x")(TextMessage(content="axb", source="s"))


def test_graph_spec_graph_keeps_what_the_builder_rejects() -> None:
    spec = GraphSpec(nodes=(NodeSpec("a"),), edges=(EdgeSpec("a", "ghost"), EdgeSpec("zz", "a")))
    raw = spec.graph()
    assert [(s, e.target) for s, e in raw.iter_edges()] == [("a", "ghost")]
    with pytest.raises(UnknownNodeError, match="`ghost`"):
        validate_graph(raw)
    assert spec.run_bound() is None


def test_run_bound_is_none_for_loops_the_scripts_do_not_end() -> None:
    spec = GraphSpec(
        nodes=(NodeSpec("a", then="REVISE"),), edges=(EdgeSpec("a", "a", "REVISE"),), entry="a"
    )
    assert spec.run_bound() is None
    assert spec.team().max_turns == strategies_module.DEFAULT_MAX_TURNS


# --- strategies promise what they say ------------------------------------------------------


@few
@given(chains())
def test_chains(spec: GraphSpec) -> None:
    assert [(e.source, e.target) for e in spec.edges] == list(pairwise(spec.names))
    assert all(e.condition is None for e in spec.edges)
    assert spec.expected_steps == spec.names and not spec.is_cyclic


@few
@given(fan_outs())
def test_fan_outs(spec: GraphSpec) -> None:
    root = spec.names[0]
    assert graph_of(spec)[root]
    assert indegree(spec)[root] == 0
    assert all(indegree(spec)[name] == 1 for name in spec.names[1:])
    assert not spec.is_cyclic and all(e.condition is None for e in spec.edges)


@few
@given(joins())
def test_joins(spec: GraphSpec) -> None:
    joined = [name for name, count in indegree(spec).items() if count >= 2]
    assert len(joined) == 1
    assert len(graph_of(spec)[spec.names[0]]) >= 2
    assert not spec.is_cyclic
    spec.build()


@few
@given(loops_with_exit())
def test_loops_with_exit(spec: GraphSpec) -> None:
    assert spec.is_cyclic
    back = [e for e in spec.edges if e.condition is not None and "REVISE" in repr(e.condition)]
    out = [e for e in spec.edges if e.condition is not None and "APPROVE" in repr(e.condition)]
    assert len(back) == 1 and len(out) == 1 and back[0].source == out[0].source
    checker = spec.node(back[0].source)
    assert checker.outputs[-1] == "APPROVE" and checker.then is None
    assert spec.expected_steps is not None
    assert len(spec.expected_steps) == sum(len(node.outputs) for node in spec.nodes)
    assert spec.run_bound() is not None


@few
@given(dags())
def test_dags(spec: GraphSpec) -> None:
    assert not spec.is_cyclic
    assert validate_graph(spec.build()).entry
    assert spec.run_bound() is not None


@few
@given(dags_with_back_edges())
def test_dags_with_back_edges(spec: GraphSpec) -> None:
    unconditional = GraphSpec(spec.nodes, tuple(e for e in spec.edges if e.condition is None))
    assert not unconditional.is_cyclic  # every cycle has a conditional edge
    assert any(e.condition is not None and "<b" in repr(e.condition) for e in spec.edges)
    for edge in spec.edges:
        node = spec.node(edge.source)
        if "<b" in repr(edge.condition):
            assert node.then is not None and not edge.matches(node.then)
    assert spec.run_bound() is not None
    spec.build()


@few
@given(valid_graphs(max_nodes=4))
def test_valid_graphs_build_and_are_bounded(spec: GraphSpec) -> None:
    graph = spec.build()
    assert len(graph.nodes) == len(spec.nodes)
    assert spec.run_bound() is not None


@few
@given(interleaved(valid_graphs(), max_yields=2))
def test_interleaved_changes_only_the_yields(spec: GraphSpec) -> None:
    assert all(len(n.yields) <= 4 and all(0 <= y <= 2 for y in n.yields) for n in spec.nodes)
    plain = dataclasses.replace(
        spec, nodes=tuple(dataclasses.replace(n, yields=()) for n in spec.nodes)
    )
    assert plain.build().dump() == spec.build().dump()


ERRORS = [
    EmptyGraphError,
    DuplicateNodeError,
    UnknownNodeError,
    NoStartNodeError,
    UnreachableNodeError,
    CycleWithoutExitError,
    ActivationConflictError,
    ParticipantMismatchError,
    UnboundedLoopError,
    ConditionSerializationError,
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: e.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_invalid_graphs_of_one_kind(error: type[GraphError], data: st.DataObject) -> None:
    case = data.draw(invalid_graphs(errors=[error]))
    assert case.error is error
    with pytest.raises(error):
        case.trigger()


def test_invalid_graphs_rejects_unknown_error_types() -> None:
    with pytest.raises(ValueError, match="cannot produce"):
        invalid_graphs(errors=[StateError])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="cannot produce"):
        invalid_graphs(errors=[])


def test_strategies_all_matches_public_names() -> None:
    public = {
        name
        for name, value in vars(strategies_module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", "") == strategies_module.__name__
    }
    assert public <= set(strategies_module.__all__)
    assert all(hasattr(strategies_module, name) for name in strategies_module.__all__)


def test_strategies_say_what_to_install_without_hypothesis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "flowlib.testing.strategies")
    with pytest.raises(ImportError, match="pip install hypothesis"):
        importlib.import_module("flowlib.testing.strategies")


@few
@given(strategies_module.node_names(1, 6))
def test_node_names_are_unique_identifiers(names: list[str]) -> None:
    assert 1 <= len(names) <= 6 and len(set(names)) == len(names)
    assert all(IDENTIFIER.fullmatch(name) for name in names), names


@pytest.mark.parametrize(
    "wanted",
    [
        lambda n: len(n) == 6 and "_" in n and any(c.isdigit() for c in n),
        lambda n: n.startswith("z") and n.endswith("9"),
        lambda n: len(n) == 1,
    ],
)
def test_node_names_reach_every_corner_of_the_identifier_pattern(wanted: Any) -> None:
    # The names are drawn from pieces, not from the pattern: every kind of character and
    # every length the pattern allows must still come up.
    found = find(
        strategies_module.node_names(1, 1).map(lambda names: names[0]),
        wanted,
        settings=settings(max_examples=5_000, database=None),
    )
    assert IDENTIFIER.fullmatch(found) and wanted(found)
