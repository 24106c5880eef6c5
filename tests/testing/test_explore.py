"""flowlib.testing.explore: seeded buggy flows are found with the right rule, nodes and a
short counterexample; sound flows (and every example) pass."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings

from flowlib.agents import AssistantAgent
from flowlib.base import ChatAgent
from flowlib.cli import load_object
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.errors import ArgumentTypeError, FlowUnsoundError, InvalidArgumentError
from flowlib.graph import Not, Regex
from flowlib.messages import BaseAgentEvent, BaseChatMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, SelectorGroupChat, Swarm
from flowlib.testing import (
    RoutingOutcome,
    ScriptedAgent,
    assert_flow_sound,
    explore,
    routing_outcomes,
)

EXAMPLES = sorted(
    p
    for p in (Path(__file__).parents[2] / "examples").glob("*.py")
    if not p.name.startswith("_") and p.stem != "conversation_steering"
)


def _agents(*names: str) -> list[ScriptedAgent]:
    return [ScriptedAgent(name, ["unused"]) for name in names]


def _flow(
    names: str,
    edges: Sequence[tuple[str, str, object]],
    *,
    entry: str | None = None,
    **team: object,
) -> GraphFlow:
    builder = DiGraphBuilder()
    agents = {agent.name: agent for agent in _agents(*names.split())}
    for agent in agents.values():
        builder.add_node(agent)
    for source, target, condition in edges:
        builder.add_edge(source, target, condition=condition)  # type: ignore[arg-type]
    if entry is not None:
        builder.set_entry_point(entry)
    return GraphFlow(builder.get_participants(), builder.build(), **team)  # type: ignore[arg-type]


def join_flow() -> GraphFlow:
    """The issue's example: A -> B on "left", A -> C on "right", B and C join at D."""
    return _flow(
        "A B C D", [("A", "B", "left"), ("A", "C", "right"), ("B", "D", None), ("C", "D", None)]
    )


def _only(report: object, rule: str) -> list[object]:
    return [f for f in report.findings if f.rule == rule]  # type: ignore[attr-defined]


# --- seeded bugs ---------------------------------------------------------------------------


def test_join_fed_by_exclusive_branches_never_completes() -> None:
    report = explore(join_flow())
    joins = _only(report, "join_never_completes")
    assert [f.nodes for f in joins] == [("D",)]  # type: ignore[attr-defined]
    (join,) = joins
    assert 1 <= len(join.counterexample) <= 3  # type: ignore[attr-defined]
    first = join.counterexample[0]  # type: ignore[attr-defined]
    assert first.node == "A" and ("left" in first.text) != ("right" in first.text)
    assert "`D` was left waiting for" in join.message  # type: ignore[attr-defined]
    # The branch point itself can match neither keyword: a dead end, found too.
    assert [f.nodes for f in _only(report, "dead_end")] == [("A",)]  # type: ignore[attr-defined]


def test_join_with_any_activation_is_sound() -> None:
    builder = DiGraphBuilder()
    a, b, c, d = _agents("A", "B", "C", "D")
    for agent in (a, b, c, d):
        builder.add_node(agent)
    builder.add_edge(a, b, condition="left").add_edge(a, c, condition=Not(condition="left"))
    builder.add_edge(b, d, activation_condition="any").add_edge(c, d, activation_condition="any")
    team = GraphFlow(builder.get_participants(), builder.build())
    report = assert_flow_sound(team)
    assert report.visited == {"A", "B", "C", "D"}


def test_dead_end_is_found_with_a_one_reply_counterexample() -> None:
    report = explore(_flow("A B", [("A", "B", "yes")]))
    (finding,) = report.findings
    assert finding.rule == "dead_end" and finding.nodes == ("A",)
    assert [turn.node for turn in finding.counterexample] == ["A"]
    assert "yes" not in finding.counterexample[0].text
    assert "`A -> B`" in finding.message


def test_loop_whose_exit_keyword_is_never_produced_runs_away() -> None:
    # writer -> done only when it says FINAL; otherwise back through the critic. Nothing
    # but the keyword bounds the loop, so a writer that never says it loops forever.
    team = _flow(
        "writer critic done",
        [
            ("writer", "done", "FINAL"),
            ("writer", "critic", Not(condition="FINAL")),
            ("critic", "writer", None),
        ],
        entry="writer",
        termination_condition=TextMentionTermination("published", sources=["done"]),
    )
    report = explore(team, max_turns=6)
    (finding,) = report.findings
    assert finding.rule == "runaway_loop" and finding.nodes == ("writer", "critic")
    assert len(finding.counterexample) == 6
    assert all("FINAL" not in turn.text for turn in finding.counterexample)
    # Bounded by the team itself, the same loop is sound.
    bounded = _flow(
        "writer critic done",
        [
            ("writer", "done", "FINAL"),
            ("writer", "critic", Not(condition="FINAL")),
            ("critic", "writer", None),
        ],
        entry="writer",
        termination_condition=TextMentionTermination("published", sources=["done"]),
        max_turns=8,
    )
    assert explore(bounded).ok


def _handoff_agent(name: str, handoffs: list[str]) -> AssistantAgent:
    return AssistantAgent(name, model_client=ReplayChatCompletionClient(["hi"]), handoffs=handoffs)


def test_swarm_handoff_to_an_absent_agent() -> None:
    alice = _handoff_agent("alice", ["bob", "carol"])  # carol is not in the team
    bob = _handoff_agent("bob", ["alice"])
    report = explore(Swarm([alice, bob], max_turns=10))
    (finding,) = report.findings
    assert finding.rule == "handoff_to_non_participant" and finding.nodes == ("alice",)
    assert finding.counterexample[-1].handoff == "carol"
    assert len(finding.counterexample) <= 3
    assert "HandoffTermination(target='carol')" in finding.message


def test_swarm_handoff_to_the_user_with_handoff_termination_is_sound() -> None:
    alice = _handoff_agent("alice", ["bob", "user"])
    bob = _handoff_agent("bob", ["alice"])
    stop = TextMentionTermination("TERMINATE") | MaxMessageTermination(10)
    from flowlib.conditions import HandoffTermination

    team = Swarm([alice, bob], termination_condition=HandoffTermination(target="user") | stop)
    assert explore(team).ok


def test_swarm_agent_nobody_hands_off_to_is_unreachable() -> None:
    alice = _handoff_agent("alice", ["bob"])
    bob = _handoff_agent("bob", ["alice"])
    carol = _handoff_agent("carol", ["alice"])
    report = explore(Swarm([alice, bob, carol], max_turns=6))
    assert [(f.rule, f.nodes) for f in report.findings] == [("unreachable_node", ("carol",))]
    assert report.findings[0].counterexample == ()


def test_selector_with_an_impossible_candidate_rule() -> None:
    def candidates(thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
        # After the writer speaks, only an "editor" may follow: there is none.
        return ["editor"] if thread[-1].source == "writer" else ["writer"]

    team = SelectorGroupChat(
        _agents("writer", "critic"),
        ReplayChatCompletionClient(["writer"]),
        candidate_func=candidates,
        max_turns=6,
    )
    report = explore(team)
    (finding,) = [f for f in report.findings if f.rule == "selector_picks_nobody"]
    assert finding.nodes == ("SelectorGroupChat_selector",)
    assert "editor" in finding.message
    assert [t.node for t in finding.counterexample] == [
        "SelectorGroupChat_selector",
        "writer",
    ]


def test_selector_that_returns_nothing_for_some_thread() -> None:
    def candidates(thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
        return [] if "stop" in thread[-1].to_text() else ["writer", "critic"]

    team = SelectorGroupChat(
        _agents("writer", "critic"),
        ReplayChatCompletionClient(["writer"]),
        candidate_func=candidates,
        max_turns=6,
        termination_condition=TextMentionTermination("stop", sources=["nobody"]),
    )
    report = explore(team)
    assert "selector_picks_nobody" in report.rules()


def test_termination_that_can_never_fire() -> None:
    team = RoundRobinGroupChat(
        _agents("writer", "critic"),
        termination_condition=TextMentionTermination("APPROVE", sources=["editor"]),
        max_turns=4,
    )
    report = explore(team)
    assert [(f.rule, f.nodes) for f in report.findings] == [("termination_never_fires", ())]
    assert "editor" in report.findings[0].message


def test_a_node_behind_the_termination_keyword_never_runs() -> None:
    # The edge to `done` fires on FINAL, but FINAL also stops the run first.
    team = _flow(
        "writer done",
        [("writer", "done", "FINAL"), ("writer", "writer", Not(condition="FINAL"))],
        entry="writer",
        termination_condition=TextMentionTermination("FINAL"),
        max_turns=5,
    )
    report = explore(team)
    assert [(f.rule, f.nodes) for f in report.findings] == [("unreachable_node", ("done",))]


def test_round_robin_bounded_only_by_a_keyword_runs_away() -> None:
    team = RoundRobinGroupChat(
        _agents("writer", "critic"), termination_condition=TextMentionTermination("APPROVE")
    )
    report = explore(team, max_turns=5)
    assert [(f.rule, f.nodes) for f in report.findings] == [("runaway_loop", ("writer", "critic"))]


def test_a_condition_that_raises_is_a_node_error() -> None:
    def fragile(message: BaseChatMessage) -> bool:
        return message.to_model_text()[0] == "x"  # IndexError on an empty reply

    report = explore(_flow("A B C", [("A", "B", fragile), ("A", "C", Not(condition="zz"))]))
    (finding,) = [f for f in report.findings if f.rule == "node_error"]
    assert finding.nodes == ("A",) and "IndexError" in finding.message


# --- what the stand-ins can reach ------------------------------------------------------------


def test_regex_conditions_are_satisfied_by_drawn_text() -> None:
    ticket = Regex(pattern=r"TICKET-[0-9]{3}\b")
    team = _flow("A B C", [("A", "B", ticket), ("A", "C", Not(condition=ticket))])
    report = assert_flow_sound(team)
    assert report.visited == {"A", "B", "C"}


def test_callable_conditions_get_the_literals_they_compare_with() -> None:
    def is_bug(message: BaseChatMessage) -> bool:
        return message.to_model_text().strip().upper().startswith("YES")

    def not_bug(message: BaseChatMessage) -> bool:
        return not is_bug(message)

    team = _flow(
        "classify bug other", [("classify", "bug", is_bug), ("classify", "other", not_bug)]
    )
    assert assert_flow_sound(team).visited == {"classify", "bug", "other"}


def test_routing_outcomes_in_a_users_own_property_test() -> None:
    team = _flow(
        "writer critic publish",
        [
            ("writer", "critic", None),
            ("critic", "publish", "APPROVE"),
            ("critic", "writer", Not(condition="APPROVE")),
        ],
        entry="writer",
        max_turns=10,
    )
    seen: list[RoutingOutcome] = []

    @settings(max_examples=40, database=None, deadline=None)
    @given(routing_outcomes(team))
    def publisher_only_after_approval(outcome: RoutingOutcome) -> None:
        seen.append(outcome)
        assert not outcome.findings
        if "publish" in outcome.steps:
            critic_said = [t.text for t in outcome.turns if t.node == "critic"]
            assert "APPROVE" in critic_said[-1]
            assert outcome.steps[-1] == "publish"

    publisher_only_after_approval()
    assert any("publish" in o.steps for o in seen)
    assert any("publish" not in o.steps for o in seen)


# --- the API -------------------------------------------------------------------------------


def test_assert_flow_sound_raises_with_the_report() -> None:
    with pytest.raises(FlowUnsoundError) as caught:
        assert_flow_sound(join_flow())
    assert isinstance(caught.value, AssertionError)
    assert "[join_never_completes] `D`" in str(caught.value)
    assert "counterexample" in str(caught.value)
    assert not caught.value.report.ok  # type: ignore[attr-defined]


def test_exploration_is_deterministic() -> None:
    assert str(explore(join_flow())) == str(explore(join_flow()))


async def test_explore_from_async_code() -> None:
    report = explore(join_flow(), max_examples=30)
    assert "join_never_completes" in report.rules()
    assert asyncio.get_running_loop() is not None


def test_stand_ins_never_call_the_real_agents() -> None:
    team = join_flow()
    explore(team)
    agents = [p for p in team.participants if isinstance(p, ChatAgent)]
    assert all(isinstance(a, ScriptedAgent) and a.turns == 0 for a in agents)


@pytest.mark.parametrize(
    ("kwargs", "error", "argument"),
    [
        ({"max_turns": 0}, InvalidArgumentError, "max_turns"),
        ({"max_examples": 0}, InvalidArgumentError, "max_examples"),
    ],
)
def test_bad_arguments(kwargs: dict[str, int], error: type[Exception], argument: str) -> None:
    with pytest.raises(error) as caught:
        explore(join_flow(), **kwargs)  # type: ignore[arg-type]
    assert caught.value.argument == argument  # type: ignore[attr-defined]


def test_not_a_team() -> None:
    with pytest.raises(ArgumentTypeError, match="needs a flowlib team"):
        explore("team")


def test_a_bare_graph_can_be_explored() -> None:
    report = explore(join_flow().graph)
    assert "join_never_completes" in report.rules()
    selector = SelectorGroupChat(
        _agents("writer", "critic"), ReplayChatCompletionClient(["writer"]), max_turns=4
    )
    # Without the team, the router node draws among its edges (and never stops).
    hub = explore(selector.graph, max_turns=4)
    assert [(f.rule, f.nodes) for f in hub.findings] == [
        ("runaway_loop", ("SelectorGroupChat_selector", "writer", "critic"))
    ]


# --- the examples ----------------------------------------------------------------------------


def _build(path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return load_object(f"{path}:build")


@pytest.mark.parametrize("path", EXAMPLES[:3], ids=lambda p: p.stem)
def test_examples_are_sound(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = explore(_build(path, monkeypatch), max_examples=40)
    assert report.ok, str(report)


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_is_sound(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = explore(_build(path, monkeypatch))
    assert report.ok, str(report)


def test_without_hypothesis_the_fake_agents_still_import() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import flowlib.testing as t\n"
        "assert t.ScriptedAgent\n"
        "try:\n"
        "    t.explore\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'flowlib[testing]'" in done.stdout
