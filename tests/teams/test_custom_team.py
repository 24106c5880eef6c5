"""A team written outside flowlib (examples/debate_team.py) gets everything the built-in
teams get, through public names only: runs and streams, checkpoints and resumes in a
fresh process's team, dumps and loads its config, draws with its pattern's title, is
explored by ``flowlib check``, and its pattern's traits are what the validator reads.
The run/stream/state/stop matrix it shares with the built-ins is tests/teams/test_team_common.py.
"""

from __future__ import annotations

import ast
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from _agents import Fake

from flowlib.agents import AssistantAgent
from flowlib.base import ChatAgent, TaskResult, Team
from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.cli import main
from flowlib.component import dump_component, load_component
from flowlib.errors import (
    ArgumentTypeError,
    ContractError,
    CycleWithoutExitError,
    InvalidArgumentError,
    NodeExecutionError,
    UnboundedLoopError,
)
from flowlib.graph import (
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    GraphPattern,
    graph_warnings,
    pattern_of,
    register_pattern,
    validate_graph,
)
from flowlib.messages import BaseChatMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.render import to_dot, to_mermaid
from flowlib.teams import BaseGroupChat, DiGraphBuilder, RoundRobinGroupChat
from flowlib.testing import ScriptedAgent, explore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
from debate_team import DEBATE, DebateTeam, build  # noqa: E402  (examples/ is no package)

VERDICT = "VERDICT: pro wins."


def debaters(judge_replies: Sequence[str] = ("more", VERDICT)) -> list[ChatAgent]:
    return [
        ScriptedAgent("pro", ["p1", "p2", "p3"]),
        ScriptedAgent("con", ["c1", "c2", "c3"]),
        ScriptedAgent("judge", list(judge_replies)),
    ]


def said(messages: Sequence[object]) -> list[str]:
    return [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, BaseChatMessage)]


UNINTERRUPTED = [
    "user:go",
    "pro:p1",
    "con:c1",
    "judge:more",
    "pro:p2",
    "con:c2",
    f"judge:{VERDICT}",
]


# --- the example uses no private flowlib name ----------------------------------------------


def test_the_example_imports_only_public_flowlib_names() -> None:
    tree = ast.parse((EXAMPLES / "debate_team.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("flowlib"):
            assert not any(part.startswith("_") for part in node.module.split(".")), node.module
            assert not any(alias.name.startswith("_") for alias in node.names), node.module
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert not (node.attr.startswith("_") and node.value.id != "self"), node.attr


# --- run, stream, the policy's stop reason --------------------------------------------------


async def test_the_judge_ends_the_debate_with_its_verdict() -> None:
    result = await DebateTeam(debaters(), max_turns=12).run(task="go")
    assert said(result.messages) == UNINTERRUPTED
    assert result.stop_reason is not None
    assert result.stop_reason.endswith(f"`judge` gave the verdict: {VERDICT}")


async def test_the_stream_yields_what_run_returns() -> None:
    items = [item async for item in DebateTeam(debaters(), max_turns=12).run_stream(task="go")]
    assert isinstance(items[-1], TaskResult)
    assert said(items[:-1]) == UNINTERRUPTED == said(items[-1].messages)


async def test_the_example_runs_as_documented() -> None:
    result = await build().run(task="Motion: tea is better than coffee.")
    assert [m.source for m in result.messages][1:] == ["pro", "con", "judge"] * 2
    assert "gave the verdict: VERDICT" in (result.stop_reason or "")


# --- checkpoints: resume in a fresh team -----------------------------------------------------


async def test_a_stopped_debate_resumes_from_its_checkpoint_in_a_fresh_team(
    tmp_path: Path,
) -> None:
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    first = await DebateTeam(debaters(), max_turns=4, checkpoint_store=store).run(
        task="go", run_id="debate"
    )
    assert said(first.messages) == UNINTERRUPTED[:5]
    # A fresh team on fresh agents (as in a new process): the checkpoint restores them.
    fresh = DebateTeam(debaters(), max_turns=4, checkpoint_store=store)
    second = await fresh.run(run_id="debate")
    assert said(second.messages) == UNINTERRUPTED[5:]
    assert (second.stop_reason or "").endswith(f"gave the verdict: {VERDICT}")
    assert [run.run_id for run in await store.list_runs()] == ["debate"]


async def test_a_failed_turn_is_run_again_by_a_fresh_team(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    judge = Fake("judge", ["more", VERDICT], fail=RuntimeError("model down"))
    team = DebateTeam([Fake("pro"), Fake("con"), judge], max_turns=12, checkpoint_store=store)
    with pytest.raises(NodeExecutionError, match="`judge`"):
        await team.run(task="go", run_id="r")
    again = DebateTeam(
        [Fake("pro"), Fake("con"), Fake("judge", ["more", VERDICT])],
        max_turns=12,
        checkpoint_store=store,
    )
    result = await again.run(run_id="r")
    assert said(result.messages) == ["judge:more", "pro:pro2", "con:con2", f"judge:{VERDICT}"]


# --- configs ---------------------------------------------------------------------------------


def assistants() -> list[ChatAgent]:
    """The debate's agents on replay models (components a config can hold)."""
    return [
        AssistantAgent(name, ReplayChatCompletionClient(replies), system_message=None)
        for name, replies in (
            ("pro", ["p1", "p2"]),
            ("con", ["c1", "c2"]),
            ("judge", ["more", VERDICT]),
        )
    ]


async def test_the_config_dumps_and_loads_by_its_provider() -> None:
    team = DebateTeam(assistants(), verdict="VERDICT", max_turns=12, name="debate")
    config = json.loads(json.dumps(dump_component(team).model_dump(mode="json")))
    assert config["provider"] == "examples.debate_team.DebateTeam"
    assert config["component_type"] == "team"
    assert config["config"]["verdict"] == "VERDICT"
    assert [p["config"]["name"] for p in config["config"]["participants"]] == [
        "pro",
        "con",
        "judge",
    ]
    loaded = load_component(config)
    assert type(loaded).__qualname__ == "DebateTeam" and isinstance(loaded, BaseGroupChat)
    assert dump_component(loaded).model_dump(mode="json") == config
    result = await loaded.run(task="go")
    assert said(result.messages) == UNINTERRUPTED


# --- drawing, checking ------------------------------------------------------------------------


def test_the_drawing_is_titled_by_the_pattern() -> None:
    team = DebateTeam(debaters(), max_turns=12)
    assert team.graph.pattern == "debate"
    dot = to_dot(team)
    assert "debate, bounded by max_turns=12" in dot
    assert DEBATE.note is not None and DEBATE.note in dot
    assert "debate, bounded by max_turns=12" in to_mermaid(team)


def test_check_explores_the_debate() -> None:
    report = explore(DebateTeam(debaters(), max_turns=12), max_examples=10)
    assert report.ok, str(report)
    assert report.visited == {"pro", "con", "judge"}


def test_flowlib_check_runs_on_the_example_file() -> None:
    out = io.StringIO()
    code = main(["check", f"{EXAMPLES / 'debate_team.py'}:build", "--max-examples", "10"], out=out)
    assert code == 0, out.getvalue()
    assert "DebateTeam: sound" in out.getvalue()


# --- bad input -----------------------------------------------------------------------------


def test_a_debate_needs_two_debaters_and_a_judge() -> None:
    with pytest.raises(InvalidArgumentError, match="two debaters and a judge"):
        DebateTeam(debaters()[:2], max_turns=4)
    with pytest.raises(InvalidArgumentError, match="verdict"):
        DebateTeam(debaters(), verdict=" ", max_turns=4)
    with pytest.raises(ArgumentTypeError, match="DebateTeam: `participants`"):
        DebateTeam("pro con judge", max_turns=4)  # type: ignore[arg-type]


def test_a_team_that_builds_no_graph_is_named() -> None:
    class NoGraph(BaseGroupChat):
        pass

    with pytest.raises(ContractError, match=r"NoGraph.*build_graph"):
        NoGraph([ScriptedAgent("a", ["x"])])


# --- traits: what the validator and the renderer read --------------------------------------


class Ring(BaseGroupChat):
    """A ring without a conditional edge: only a pattern that allows it validates it."""

    def build_graph(self, participants: Sequence[ChatAgent | Team]) -> DiGraph:
        names = [p.name for p in participants]
        nodes = {
            name: DiGraphNode(name=name, edges=[DiGraphEdge(target=names[(i + 1) % len(names)])])
            for i, name in enumerate(names)
        }
        return DiGraph(nodes=nodes, default_start_node=names[0])


def test_a_pattern_with_loops_without_exit_lets_an_unconditional_ring_validate() -> None:
    agents = lambda: [ScriptedAgent("a", ["x"]), ScriptedAgent("b", ["y"])]  # noqa: E731

    class Plain(Ring):
        pass

    with pytest.raises(CycleWithoutExitError):
        Plain(agents(), max_turns=2)

    class Bounded(Ring, pattern=GraphPattern("test_ring", title="ring", loops_without_exit=True)):
        pass

    team = Bounded(agents(), max_turns=2)
    assert team.graph.pattern == "test_ring"
    assert pattern_of("test_ring") is Bounded.pattern
    validate_graph(team.graph)  # the pattern's trait, read from the graph's pattern name
    assert "ring, bounded by max_turns=2" in to_dot(team)
    # Built unbounded (to draw or dump it) but refused when it runs, like a round robin.
    unbounded = Bounded(agents())
    assert "ring, bounded by nothing" in to_dot(unbounded)


async def test_an_unbounded_ring_is_refused_when_it_runs() -> None:
    class Bounded(Ring, pattern=GraphPattern("test_ring2", loops_without_exit=True)):
        pass

    team = Bounded([ScriptedAgent("a", ["x"]), ScriptedAgent("b", ["y"])])
    with pytest.raises(UnboundedLoopError):
        await team.run(task="go")


def test_the_built_in_patterns_are_registered_by_their_teams() -> None:
    assert RoundRobinGroupChat.pattern is pattern_of("round_robin")
    swarm = pattern_of("swarm")
    assert swarm is not None and swarm.start_anywhere and swarm.ends_on_no_match
    assert pattern_of("no such pattern") is None


def test_a_pattern_needs_a_name() -> None:
    with pytest.raises(InvalidArgumentError, match="name"):
        GraphPattern(" ")


def test_ends_on_no_match_silences_the_fallback_warning() -> None:
    builder = DiGraphBuilder()
    for name in ("a", "b"):
        builder.add_node(ScriptedAgent(name, ["x"]))
    builder.add_edge("a", "b", condition="go").add_edge("b", "a", condition="back")
    graph = builder.set_entry_point("a").build()
    assert {w.kind for w in graph_warnings(graph)} == {"no_fallback"}
    register_pattern(GraphPattern("test_quiet", ends_on_no_match=True))
    assert graph_warnings(graph.model_copy(update={"pattern": "test_quiet"})) == []
