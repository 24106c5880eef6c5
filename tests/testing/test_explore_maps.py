"""`explore` / `flowlib check` over map edges and node policies (issue 23.5): maps run
with 0, 1 and several items, retried turns with drawn transient failures, policies
without their waits and stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings

from flowlib.agents import AssistantAgent
from flowlib.graph import CachePolicy, RetryPolicy
from flowlib.messages import BaseChatMessage, NodeRetryEvent, TextMessage
from flowlib.models import ReplayChatCompletionClient, SQLiteStore
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import RoutingOutcome, explore, routing_outcomes


def split(message: BaseChatMessage | None) -> list[str]:
    raise AssertionError("exploration draws the items; the map function is not called")


def agent(name: str) -> AssistantAgent:
    return AssistantAgent(name, ReplayChatCompletionClient([]))


def map_flow(tmp: Path, *, conditional_exit: bool = False) -> GraphFlow:
    builder = DiGraphBuilder().add_node(agent("planner"))
    builder.add_node(
        agent("researcher"),
        timeout=0.001,  # would time out a real turn; exploration has no deadline
        retry=RetryPolicy(max_attempts=3, initial_interval=60),
        cache=CachePolicy(store=SQLiteStore(tmp / "cache.db")),
    )
    builder.add_node(agent("writer"), activation="all")
    builder.add_edge("planner", "researcher", map=split)
    if conditional_exit:
        builder.add_edge("researcher", "writer", condition="DONE")
    else:
        builder.add_edge("researcher", "writer")
    return GraphFlow(builder.get_participants(), builder.build())


def test_a_map_reduce_flow_is_sound_with_zero_one_and_many_items(tmp_path: Path) -> None:
    report = explore(map_flow(tmp_path), max_examples=40)
    assert report.ok, str(report)
    with sqlite3.connect(tmp_path / "cache.db") as db:  # no stand-in turn was cached
        assert db.execute("SELECT COUNT(*) FROM flowlib_cache").fetchone() == (0,)


def test_a_map_target_matching_none_of_its_edges_is_a_dead_end(tmp_path: Path) -> None:
    report = explore(map_flow(tmp_path, conditional_exit=True), max_examples=40)
    assert "dead_end" in report.rules()
    finding = next(f for f in report.findings if f.rule == "dead_end")
    assert finding.nodes == ("researcher",)


def test_exploration_draws_none_one_and_several_instances(tmp_path: Path) -> None:
    team = map_flow(tmp_path)
    seen: set[int] = set()

    @settings(max_examples=40, database=None)
    @given(routing_outcomes(team))
    def check(outcome: RoutingOutcome) -> None:
        counts = outcome.trace.instance_counts()
        seen.add(next(iter(counts.values()), 0))
        steps = outcome.trace.steps
        assert steps[:2] == ["planner", "researcher"]
        assert steps[-1] == "writer"  # the reduce fires once, even after no items
        instances = [m.source for m in outcome.messages if m.source.startswith("researcher")]
        assert instances == [f"researcher[{i}]" for i in range(len(instances))]

    check()
    assert seen == {0, 1, 3}


def test_exploration_walks_retried_turns_and_records_each_once() -> None:
    builder = DiGraphBuilder().add_node(agent("fetch"), retry=RetryPolicy(max_attempts=3))
    builder.add_node(agent("summarise")).add_edge("fetch", "summarise")
    team = GraphFlow(builder.get_participants(), builder.build())
    failures: set[int] = set()

    @settings(max_examples=40, database=None)
    @given(routing_outcomes(team))
    def check(outcome: RoutingOutcome) -> None:
        retries = [m for m in outcome.messages if isinstance(m, NodeRetryEvent)]
        failures.add(len(retries))
        assert outcome.trace.steps == ["fetch", "summarise"]
        assert [m.source for m in outcome.messages if isinstance(m, TextMessage)] == [
            "user",
            "fetch",
            "summarise",
        ]
        assert not outcome.findings

    check()
    assert failures == {0, 1, 2}  # never the third: the turn always recovers
    assert explore(team, max_examples=30).ok
