"""The one edge-firing rule (issue 9.4) and the trace's observers."""

from __future__ import annotations

import asyncio

import pytest

from flowlib.graph import (
    Contains,
    DiGraphEdge,
    FiredEdges,
    RunTrace,
    StepNodes,
    edge_rule,
    fire_edges,
)
from flowlib.messages import TextMessage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import RunTimeline, ScriptedAgent


def msg(text: str) -> TextMessage:
    return TextMessage(content=text, source="a")


RULES = [
    edge_rule(DiGraphEdge(target="b"), index=0, target=1),
    edge_rule(DiGraphEdge(target="c", condition="yes"), index=1, target=2),
    edge_rule(DiGraphEdge(target="d", condition=Contains(text="no")), index=2, target=3),
    edge_rule(
        DiGraphEdge(target="e", condition=lambda m: "maybe" in m.to_text()), index=3, target=4
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", [True, True, False, False]),
        ("no", [True, False, True, False]),
        ("maybe yes", [True, True, False, True]),
        ("", [True, False, False, False]),
    ],
)
def test_conditions(text: str, expected: list[bool]) -> None:
    assert fire_edges(RULES, msg(text)) == expected
    # DiGraphEdge.check_condition is the same rule for one edge.
    edges = [
        DiGraphEdge(target="b"),
        DiGraphEdge(target="c", condition="yes"),
        DiGraphEdge(target="d", condition=Contains(text="no")),
        DiGraphEdge(target="e", condition=lambda m: "maybe" in m.to_text()),
    ]
    assert [edge.check_condition(msg(text)) for edge in edges] == expected


def test_no_final_message_fires_only_unconditional_edges() -> None:
    assert fire_edges(RULES, None) == [True, False, False, False]


def test_a_routers_selection_replaces_the_conditions() -> None:
    assert fire_edges(RULES, msg("yes"), selected={3, 4}) == [False, False, True, True]


def test_absorbed_edges_do_not_fire_and_check_is_used() -> None:
    calls: list[int] = []

    def check(rule: object, message: TextMessage) -> bool:
        calls.append(1)
        return True

    fired = fire_edges(RULES, msg("x"), absorbed=lambda rule: rule.index == 0, check=check)
    assert fired == [False, False, True, True]
    assert len(calls) == 2


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def on_start(self, trace: RunTrace, step: int) -> None:
        self.seen.append(("start", trace.step_nodes[step]))

    def on_fire(self, trace: RunTrace, position: int) -> None:
        self.seen.append(("fire", trace.fired[position][1]))

    def on_clear(self, trace: RunTrace) -> None:
        self.seen.append(("clear", 0))


def test_the_trace_tells_its_observers() -> None:
    trace = RunTrace(names=["a", "b"], edge_ends=[("a", "b")])
    recorder = Recorder()
    trace.add_observer(recorder)
    assert trace.start(0) == 0
    trace.fire(0, 0)
    assert trace.start(1) == 1
    trace.clear()
    trace.remove_observer(recorder)
    trace.start(1)
    assert recorder.seen == [("start", 0), ("fire", 0), ("start", 1), ("clear", 0)]
    assert trace.step_nodes == [1] and trace.fired == []


def test_a_timeline_observes_without_replacing_the_trace_lists() -> None:
    a, b = ScriptedAgent("a", ["x", "x"]), ScriptedAgent("b", ["y", "y"])
    builder = DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b)
    team = GraphFlow(builder.get_participants(), builder.build())
    timeline = RunTimeline.attach(team)
    # The trace's own logs (compact since issue 22 item 7; lists before), not swapped for
    # instrumented ones.
    assert type(team.trace.step_nodes) is StepNodes and type(team.trace.fired) is FiredEdges
    asyncio.run(team.run(task="go"))
    assert timeline.events == [("start", 0), ("fire", 0), ("start", 1)]
    timeline.detach()
    asyncio.run(team.run(task="again"))
    assert timeline.events == [("start", 0), ("fire", 0), ("start", 1)]
