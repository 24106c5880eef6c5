"""Unit tests of the scheduler and the activation tracker, without running any agent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from flowlib.errors import NodeExecutionError, StateError
from flowlib.graph import DiGraph, DiGraphEdge, DiGraphNode, ExecutionPlan, RunTrace
from flowlib.graph._scheduler import Finished, Scheduler
from flowlib.graph._validate import validate_graph
from flowlib.messages import MessageFactory, TextMessage


def plan_of(
    edges: Sequence[tuple[str, str, dict[str, Any]]], names: Sequence[str]
) -> ExecutionPlan:
    nodes = {
        name: DiGraphNode(
            name=name,
            edges=[DiGraphEdge(target=t, **kw) for s, t, kw in edges if s == name],
        )
        for name in names
    }
    graph = DiGraph(nodes=nodes, default_start_node=names[0])
    return ExecutionPlan(graph, validate_graph(graph))


def scheduler(plan: ExecutionPlan) -> Scheduler:
    trace = RunTrace(names=list(plan.names), edge_ends=[])
    return Scheduler(plan, MessageFactory(), trace)


def said(source: str, text: str) -> Finished:
    message = TextMessage(content=text, source=source)
    return Finished([message], message)


def test_a_node_activated_twice_before_it_starts_runs_once() -> None:
    sched = scheduler(plan_of([("a", "b", {})], ["a", "b"]))
    sched.activate(1)
    sched.activate(1)
    assert list(sched.ready) == [1]


def test_a_node_activated_while_running_runs_again_after_its_turn() -> None:
    plan = plan_of([("a", "b", {}), ("b", "a", {"condition": "AGAIN"})], ["a", "b"])
    sched = scheduler(plan)
    sched.start_from_entry()
    a, _ = sched.start()
    sched.activate(a)  # an edge into `a` fired while `a` runs
    assert not sched.ready and sched.nodes[a].pending
    sched.record(a, said("a", "x"), [])
    assert list(sched.ready) == [1, 0]  # `b` from the edge, then `a` again


def test_take_new_skips_the_nodes_own_messages_and_requeue_rewinds() -> None:
    sched = scheduler(plan_of([("a", "b", {})], ["a", "b"]))
    sched.start_from_entry()
    sched.thread.append(TextMessage(content="task", source="user"))
    sched.thread_node.append(-1)
    a, seen = sched.start()
    assert [m.content for m in seen] == ["task"]  # type: ignore[attr-defined]
    sched.record(a, said("a", "A1"), [])
    b, seen = sched.start()
    assert [m.content for m in seen] == ["task", "A1"]  # type: ignore[attr-defined]
    sched.requeue_front([b])
    assert sched.nodes[b].cursor == 0 and list(sched.ready) == [b] and not sched.nodes[b].running


def test_a_condition_that_raises_records_nothing() -> None:
    def broken(message: Any) -> bool:
        raise ValueError("bad condition")

    plan = plan_of([("a", "b", {}), ("a", "c", {"condition": broken})], ["a", "b", "c"])
    sched = scheduler(plan)
    sched.start_from_entry()
    a, _ = sched.start()
    with pytest.raises(NodeExecutionError, match="a -> c"):
        sched.record(a, said("a", "x"), [])
    assert sched.thread == [] and sched.nodes[a].running and not sched.ready


def test_bookkeeping_marks_running_nodes_to_run_again() -> None:
    sched = scheduler(plan_of([("a", "b", {}), ("a", "c", {})], ["a", "b", "c"]))
    sched.start_from_entry()
    a, _ = sched.start()
    sched.record(a, said("a", "A1"), [])
    b, _ = sched.start()
    kept = sched.bookkeeping()
    assert kept["ready"] == ["b", "c"] and kept["cursors"]["b"] == 0
    sched.nodes[b].handed_over = True  # a nested team that took its messages keeps its cursor
    assert sched.bookkeeping()["cursors"]["b"] == 1
    assert sched.bookkeeping(settled=True)["cursors"]["b"] == 0


def test_state_round_trip_and_bad_cursor() -> None:
    plan = plan_of([("a", "b", {})], ["a", "b"])
    sched = scheduler(plan)
    sched.start_from_entry()
    a, _ = sched.start()
    sched.record(a, said("a", "A1"), [])
    state = sched.save_state()
    other = scheduler(plan)
    other.apply_state(other.check_state(state))
    assert other.save_state() == state
    bad = state.model_copy(update={"cursors": {"a": 0, "b": 5}})
    with pytest.raises(StateError, match="cursor"):
        other.check_state(bad)


def test_all_join_activates_once_every_edge_fired() -> None:
    plan = plan_of(
        [("s", "a", {}), ("s", "b", {}), ("a", "j", {}), ("b", "j", {})], ["s", "a", "b", "j"]
    )
    tracker = scheduler(plan).tracker
    into_j = [edge for edge in plan.edges if plan.names[edge.target] == "j"]
    assert tracker.fire(into_j[0], lambda node: False) is False
    assert tracker.waiting() == [(into_j[0].group, [into_j[1].index])]
    assert tracker.fire(into_j[1], lambda node: False) is True
    assert tracker.waiting() == []


def test_any_group_absorbs_the_edges_of_sources_in_flight() -> None:
    plan = plan_of(
        [
            ("s", "a", {}),
            ("s", "b", {}),
            ("a", "j", {"activation_condition": "any"}),
            ("b", "j", {"activation_condition": "any"}),
        ],
        ["s", "a", "b", "j"],
    )
    tracker = scheduler(plan).tracker
    from_a, from_b = (edge for edge in plan.edges if plan.names[edge.target] == "j")
    b = plan.index["b"]
    assert tracker.fire(from_a, lambda node: node == b) is True
    assert tracker.is_absorbed(from_b) and tracker.take_absorbed(from_b)
    assert not tracker.is_absorbed(from_b)


def test_an_activation_during_an_interrupted_turn_runs_after_its_re_run() -> None:
    # b loops on itself; while its first turn runs, `a` activates it again; the turn is
    # interrupted. The re-run sees only what the first turn saw, its self-loop queues b,
    # and the activation from meanwhile gives one more turn after that (3 turns of b, as
    # when nothing is interrupted and the activation comes during the second turn).
    plan = plan_of([("a", "b", {}), ("b", "b", {"condition": "LOOP"})], ["a", "b"])
    sched = scheduler(plan)
    sched.start_from_entry()
    a, _ = sched.start()
    sched.record(a, said("a", "A1"), [])
    b, seen = sched.start()
    assert [m.content for m in seen] == ["A1"]  # type: ignore[attr-defined]
    sched.thread.append(TextMessage(content="late", source="a"))  # arrives meanwhile
    sched.thread_node.append(a)
    sched.activate(b)
    sched.requeue_front([b])  # interrupted
    assert sched.bookkeeping()["pending"] == ["b"]
    turns = 0
    while sched.ready:
        node, given = sched.start()
        seen = [m.content for m in given]  # type: ignore[attr-defined]
        if turns == 0:
            assert seen == ["A1"]  # the re-run sees what the interrupted turn saw
        if turns == 1:
            assert seen == ["late"]
        sched.record(node, said("b", "LOOP" if turns == 0 else "done"), [])
        turns += 1
    assert turns == 3
