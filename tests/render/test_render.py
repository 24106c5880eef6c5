"""flowlib.render: DOT and Mermaid snapshots, SVG parsed as XML, PNG, files and errors.

Snapshots live in ``tests/render/snapshots/<case>.dot`` / ``.mmd`` and are compared exactly; a
mismatch prints a unified diff. Regenerate them after an intended change with::

    FLOWLIB_UPDATE_SNAPSHOTS=1 pytest tests/render/test_render.py

and review the diff before committing.
"""

from __future__ import annotations

import asyncio
import difflib
import doctest
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import flowlib.render
from flowlib.base import TaskResult
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.errors import FlowlibError
from flowlib.graph import (
    AnyOf,
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    HandoffTo,
    IsHandoff,
    Not,
    Regex,
    RunTrace,
)
from flowlib.messages import BaseChatMessage
from flowlib.render import (
    GraphvizNotFoundError,
    RenderError,
    render,
    to_dot,
    to_mermaid,
    to_svg,
)
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, Swarm
from flowlib.testing import ScriptedAgent

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("FLOWLIB_UPDATE_SNAPSHOTS") == "1"
HAS_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="Graphviz `dot` is not installed")


# --- the graphs ---------------------------------------------------------------------------


def build(
    nodes: Sequence[str | tuple[str, str]],
    edges: Sequence[tuple[Any, ...]],
    *,
    entry: str | None = None,
    kinds: dict[str, str] | None = None,
    pattern: str | None = None,
    validate: bool = True,
) -> DiGraph:
    """A DiGraph of function-less nodes: ``nodes`` are names (or ``(name, activation)``),
    ``edges`` are ``(source, target, **DiGraphEdge fields as a dict)``."""
    spec: dict[str, DiGraphNode] = {}
    for item in nodes:
        name, activation = (item, "all") if isinstance(item, str) else item
        kind = (kinds or {}).get(name, "agent")
        spec[name] = DiGraphNode(name=name, activation=activation, kind=kind)  # type: ignore[arg-type]
    for source, target, *rest in edges:
        options: dict[str, Any] = rest[0] if rest else {}
        spec[source].edges.append(DiGraphEdge(target=target, **options))
    graph = DiGraph(nodes=spec, default_start_node=entry, pattern=pattern)
    if validate:
        graph.graph_validate()
    return graph


def is_long(message: BaseChatMessage) -> bool:
    return len(message.to_model_text()) > 100


class HandoffAgent(ScriptedAgent):
    """A scripted agent that declares handoff targets (all a Swarm's graph needs)."""

    def __init__(self, name: str, handoffs: Sequence[str]) -> None:
        super().__init__(name, ["..."])
        self.handoffs = list(handoffs)


def sequential() -> DiGraph:
    return build(["a", "b", "c"], [("a", "b"), ("b", "c")])


def fan_out_join() -> DiGraph:
    return build(
        ["split", "left", "right", "join"],
        [("split", "left"), ("split", "right"), ("left", "join"), ("right", "join")],
    )


def conditional_branch() -> DiGraph:
    return build(
        ["classify", "yes_path", "no_path"],
        [
            ("classify", "yes_path", {"condition": "YES"}),
            ("classify", "no_path", {"condition": "NO"}),
        ],
    )


def loop_with_exit() -> DiGraph:
    return build(
        ["writer", "critic", "publish"],
        [
            ("writer", "critic"),
            ("critic", "writer", {"condition": "REVISE"}),
            ("critic", "publish", {"condition": "APPROVE"}),
        ],
        entry="writer",
    )


def loop_back_group() -> DiGraph:
    return build(
        ["A", "B", "C", "E"],
        [
            ("A", "B", {"activation_group": "initial"}),
            ("B", "C"),
            ("C", "B", {"condition": "loop", "activation_group": "loop_back"}),
            ("C", "E", {"condition": "exit"}),
        ],
    )


def any_group() -> DiGraph:
    return build(
        ["A", "B", "C1", "C2", "E"],
        [
            ("A", "B"),
            ("B", "C1", {"condition": "work"}),
            ("B", "C2", {"condition": "work"}),
            ("C1", "B", {"activation_group": "loop_back", "activation_condition": "any"}),
            ("C2", "B", {"activation_group": "loop_back", "activation_condition": "any"}),
            ("B", "E", {"condition": "DONE"}),
        ],
    )


def self_loop() -> DiGraph:
    return build(
        ["start", "worker", "finish"],
        [
            ("start", "worker"),
            ("worker", "worker", {"condition": "AGAIN"}),
            ("worker", "finish", {"condition": "DONE"}),
        ],
    )


def callable_and_label() -> DiGraph:
    return build(
        ["router", "long_path", "short_path", "other"],
        [
            ("router", "long_path", {"condition": is_long}),
            ("router", "short_path", {"condition": lambda m: True, "label": "short reply"}),
            ("router", "other", {"condition": "x", "label": "anything else"}),
        ],
        kinds={"router": "router", "other": "function"},
    )


def all_kinds() -> DiGraph:
    """One node of each kind (a team without its participants: a 3-D box) and condition
    objects, whose own labels are drawn."""
    return build(
        ["agent", "router", "team", "function"],
        [
            ("agent", "router"),
            ("router", "team", {"condition": Regex(pattern="^go", ignore_case=True)}),
            ("router", "function", {"condition": AnyOf(conditions=["a", HandoffTo(target="x")])}),
            ("team", "function", {"condition": Not(condition=IsHandoff())}),
        ],
        kinds={"router": "router", "team": "team", "function": "function"},
    )


def selector_graph() -> DiGraph:
    """The shape a selector team compiles to: a router hub with edges out and back."""
    return build(
        ["selector", "researcher", "writer"],
        [
            ("selector", "researcher"),
            ("selector", "writer"),
            ("researcher", "selector"),
            ("writer", "selector"),
        ],
        entry="selector",
        kinds={"selector": "router"},
        pattern="selector",
        validate=False,
    )


SPECIAL_LABEL = 'a "label"\r\nwith\ttabs & #lt; <b> | `x` \\N 100%'


def special_characters() -> DiGraph:
    """Node names that are DOT and Mermaid keywords, labels with markup and escapes."""
    return build(
        ["graph", "end"],
        [
            ("graph", "end", {"condition": 'say "hi"\nthen \\N'}),
            ("graph", "end", {"condition": "y", "label": SPECIAL_LABEL}),
        ],
    )


def round_robin() -> RoundRobinGroupChat:
    return RoundRobinGroupChat(
        [
            ScriptedAgent("planner", ["p"]),
            ScriptedAgent("coder", ["c"]),
            ScriptedAgent("tester", ["t"]),
        ],
        termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(10),
        max_turns=9,
    )


def swarm() -> Swarm:
    return Swarm(
        [
            HandoffAgent("triage", ["billing", "support", "user"]),
            HandoffAgent("billing", ["triage"]),
            HandoffAgent("support", ["triage"]),
        ],
        max_turns=12,
    )


def nested_agents() -> tuple[RoundRobinGroupChat, GraphFlow]:
    inner = RoundRobinGroupChat(
        [ScriptedAgent("drafter", ["d1", "d2"]), ScriptedAgent("editor", ["e1", "e2"])],
        name="writers",
        max_turns=2,
    )
    plan = ScriptedAgent("plan", ["outline"])
    summary = ScriptedAgent("summary", ["done"])
    builder = DiGraphBuilder().add_node(plan).add_node(inner).add_node(summary)
    builder.add_edge(plan, inner).add_edge(inner, summary)
    return inner, GraphFlow(builder.get_participants(), builder.build(), name="pipeline")


def nested() -> GraphFlow:
    return nested_agents()[1]


def nested_twice() -> GraphFlow:
    """A team inside a team inside a graph, entered first and left last."""
    innermost = RoundRobinGroupChat(
        [ScriptedAgent("fact_checker", ["ok"])], name="checks", max_turns=1
    )
    middle = RoundRobinGroupChat(
        [innermost, ScriptedAgent("editor", ["ok"])], name="review", max_turns=2
    )
    publish = ScriptedAgent("publish", ["done"])
    builder = DiGraphBuilder().add_node(middle).add_node(publish)
    builder.add_edge(middle, publish)
    return GraphFlow(builder.get_participants(), builder.build(), name="outer")


def review_flow() -> GraphFlow:
    writer = ScriptedAgent("writer", ["draft", "second draft"])
    critic = ScriptedAgent("critic", ["REVISE", "APPROVE"])
    publish = ScriptedAgent("publish", ["published"])
    builder = DiGraphBuilder().add_node(writer).add_node(critic).add_node(publish)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, writer, condition="REVISE")
    builder.add_edge(critic, publish, condition="APPROVE")
    builder.set_entry_point(writer)
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=10)


def branch_flow() -> GraphFlow:
    def start(messages: Sequence[BaseChatMessage]) -> str:
        return "go left"

    def left(messages: Sequence[BaseChatMessage]) -> str:
        return "left done"

    def right(messages: Sequence[BaseChatMessage]) -> str:
        return "right done"

    builder = DiGraphBuilder().add_node(start).add_node(left).add_node(right)
    builder.add_edge(start, left, condition="left").add_edge(start, right, condition="right")
    return GraphFlow(builder.get_participants(), builder.build())


def run(team: Any, task: str = "go") -> TaskResult:
    result: TaskResult = asyncio.run(team.run(task=task))
    return result


def traced_review() -> GraphFlow:
    team = review_flow()
    run(team)
    return team


def traced_branch() -> GraphFlow:
    team = branch_flow()
    run(team)
    return team


def traced_nested() -> GraphFlow:
    team = nested()
    run(team)
    return team


# name -> (object to draw, trace argument)
CASES: dict[str, Callable[[], tuple[Any, Any]]] = {
    "sequential": lambda: (sequential(), None),
    "fan_out_join": lambda: (fan_out_join(), None),
    "conditional_branch": lambda: (conditional_branch(), None),
    "loop_with_exit": lambda: (loop_with_exit(), None),
    "loop_back_group": lambda: (loop_back_group(), None),
    "any_group": lambda: (any_group(), None),
    "self_loop": lambda: (self_loop(), None),
    "callable_and_label": lambda: (callable_and_label(), None),
    "special_characters": lambda: (special_characters(), None),
    "round_robin": lambda: (round_robin(), None),
    "swarm": lambda: (swarm(), None),
    "nested": lambda: (nested(), None),
    "nested_twice": lambda: (nested_twice(), None),
    "all_kinds": lambda: (all_kinds(), None),
    "selector_graph": lambda: (selector_graph(), None),
    "traced_review": lambda: (traced_review(), True),
    "traced_branch": lambda: (traced_branch(), True),
    "traced_nested": lambda: (traced_nested(), True),
}


# --- snapshots ----------------------------------------------------------------------------


def check_snapshot(name: str, actual: str) -> None:
    """Compare ``actual`` with ``snapshots/<name>`` exactly; write it when updating."""
    path = SNAPSHOTS / name
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(
                f"No snapshot {path.name}; create it with FLOWLIB_UPDATE_SNAPSHOTS=1 and review it."
            )
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"snapshots/{name}",
                tofile="actual",
            )
        )
        pytest.fail(
            f"{name} differs from its snapshot (regenerate with FLOWLIB_UPDATE_SNAPSHOTS=1 "
            f"if intended):\n{diff}",
            pytrace=False,
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_dot_snapshot(case: str) -> None:
    obj, trace = CASES[case]()
    check_snapshot(f"{case}.dot", to_dot(obj, trace=trace))


@pytest.mark.parametrize("case", sorted(CASES))
def test_mermaid_snapshot(case: str) -> None:
    obj, trace = CASES[case]()
    check_snapshot(f"{case}.mmd", to_mermaid(obj, trace=trace))


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_is_deterministic(case: str) -> None:
    first, first_trace = CASES[case]()
    second, second_trace = CASES[case]()
    assert to_dot(first, trace=first_trace) == to_dot(second, trace=second_trace)
    assert to_mermaid(first, trace=first_trace) == to_mermaid(second, trace=second_trace)
    assert "0x" not in to_dot(first, trace=first_trace)  # no memory addresses


@needs_dot
@pytest.mark.parametrize("case", sorted(CASES))
def test_dot_is_valid_graphviz_without_warnings(case: str, tmp_path: Path) -> None:
    import subprocess

    obj, trace = CASES[case]()
    source = tmp_path / "graph.dot"
    source.write_text(to_dot(obj, trace=trace), encoding="utf-8")
    done = subprocess.run(
        ["dot", "-Tsvg", str(source), "-o", str(tmp_path / "graph.svg")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# --- SVG and PNG --------------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def svg_groups(svg: str, kind: str) -> list[str]:
    """The ``<title>`` of every ``<g class=kind>`` in ``svg``."""
    root = ET.fromstring(svg)
    titles = []
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == kind:
            title = group.find(f"{SVG}title")
            assert title is not None and title.text is not None
            titles.append(title.text)
    return titles


def svg_texts(svg: str) -> list[str]:
    return [text.text or "" for text in ET.fromstring(svg).iter(f"{SVG}text")]


FLAT_CASES = [name for name in sorted(CASES) if "nested" not in name]


@needs_dot
@pytest.mark.parametrize("case", FLAT_CASES)
def test_svg_has_a_node_for_every_node_and_an_edge_for_every_edge(case: str) -> None:
    obj, trace = CASES[case]()
    graph = obj if isinstance(obj, DiGraph) else obj.graph
    svg = to_svg(obj, trace=trace)
    nodes = svg_groups(svg, "node")
    edges = svg_groups(svg, "edge")
    for name in graph.nodes:
        assert nodes.count(name) == 1, f"no node {name!r} in the SVG"
    expected = [f"{source}->{edge.target}" for source, edge in graph.iter_edges()]
    for title in set(expected):
        assert edges.count(title) == expected.count(title), title
    starts = [f"@start->{name}" for name in graph.entry_nodes()]
    assert sorted(edges) == sorted(expected + starts)
    assert nodes.count("@start") == 1


@needs_dot
def test_svg_of_a_nested_team_has_a_cluster_with_the_inner_graph() -> None:
    inner, team = nested_agents()
    svg = to_svg(team)
    assert svg_groups(svg, "cluster") == ["cluster_writers"]
    nodes = svg_groups(svg, "node")
    assert {"plan", "summary", "writers/drafter", "writers/editor", "writers/@start"} <= set(nodes)
    assert "writers" not in nodes  # the team is the cluster, not a node
    edges = svg_groups(svg, "edge")
    assert "plan->writers/@start" in edges  # into the cluster, at its start point
    assert "writers/editor->summary" in edges  # out of the cluster
    for source, edge in inner.graph.iter_edges():
        assert f"writers/{source}->writers/{edge.target}" in edges
    inner_edges = len(list(inner.graph.iter_edges()))
    assert len(edges) == len(list(team.graph.iter_edges())) + inner_edges + 2  # + 2 starts


@needs_dot
def test_svg_shows_labels_verbatim() -> None:
    texts = [text.replace("\u00a0", " ") for text in svg_texts(to_svg(special_characters()))]
    assert "'say \"hi\"\\nthen \\\\N'" in texts  # repr() of the condition
    # The explicit label, one text per line: CR LF is a line break, a tab a space.
    assert 'a "label"' in texts
    assert "with tabs & #lt; <b> | `x` \\N 100%" in texts
    assert "graph" in texts and "end" in texts


@needs_dot
def test_svg_of_a_trace_marks_steps() -> None:
    texts = svg_texts(to_svg(traced_review(), trace=True))
    assert "#1, #3" in texts  # writer ran twice; writer -> critic fired twice
    assert "#4" in texts


@needs_dot
def test_png_starts_with_the_png_magic(tmp_path: Path) -> None:
    path = render(loop_with_exit(), tmp_path / "flow.png")
    assert path == tmp_path / "flow.png"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


# --- render() -----------------------------------------------------------------------------


@needs_dot
@pytest.mark.parametrize(
    ("file", "format", "check"),
    [
        ("flow.svg", None, lambda data: b"<svg" in data),
        ("flow.png", None, lambda data: data.startswith(b"\x89PNG")),
        ("flow.dot", None, lambda data: data.startswith(b"digraph flowlib {")),
        ("flow.gv", None, lambda data: data.startswith(b"digraph flowlib {")),
        ("flow.mmd", None, lambda data: data.startswith(b"flowchart TB")),
        ("flow.mermaid", None, lambda data: data.startswith(b"flowchart TB")),
        ("flow.txt", "mermaid", lambda data: data.startswith(b"flowchart TB")),
        ("flow.out", "DOT", lambda data: data.startswith(b"digraph")),
        ("FLOW.SVG", None, lambda data: b"<svg" in data),
    ],
)
def test_render_picks_the_format_from_the_suffix_or_the_argument(
    tmp_path: Path, file: str, format: str | None, check: Callable[[bytes], bool]
) -> None:
    written = render(sequential(), str(tmp_path / file), format=format)
    assert written == tmp_path / file
    assert check(written.read_bytes())


def test_render_writes_the_same_text_as_to_dot_and_to_mermaid(tmp_path: Path) -> None:
    team = traced_review()
    dot = render(team, tmp_path / "a.dot", trace=True, title="Review")
    mmd = render(team, tmp_path / "a.mmd", trace=True, title="Review")
    assert dot.read_text(encoding="utf-8") == to_dot(team, trace=True, title="Review")
    assert mmd.read_text(encoding="utf-8") == to_mermaid(team, trace=True, title="Review")


@pytest.mark.parametrize(("file", "format"), [("flow.jpg", None), ("flow", None), ("a.svg", "pdf")])
def test_render_rejects_unknown_formats(tmp_path: Path, file: str, format: str | None) -> None:
    with pytest.raises(ValueError, match="mermaid") as caught:
        render(sequential(), tmp_path / file, format=format)
    assert "svg" in str(caught.value)
    assert not (tmp_path / file).exists()


# --- Graphviz missing or failing ----------------------------------------------------------


@pytest.fixture
def no_graphviz_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.usefixtures("no_graphviz_on_path")
def test_missing_dot_raises_an_error_that_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(GraphvizNotFoundError) as caught:
        to_svg(sequential())
    error = caught.value
    assert isinstance(error, RenderError)
    assert isinstance(error, FlowlibError)
    assert isinstance(error, RuntimeError)
    message = str(error)
    for hint in ("apt-get install graphviz", "brew install graphviz", "conda", "PATH"):
        assert hint in message
    with pytest.raises(GraphvizNotFoundError):
        render(sequential(), tmp_path / "flow.png")
    assert not (tmp_path / "flow.png").exists()


@pytest.mark.usefixtures("no_graphviz_on_path")
def test_text_formats_need_no_graphviz(tmp_path: Path) -> None:
    assert to_dot(sequential()).startswith("digraph")
    assert to_mermaid(sequential()).startswith("flowchart")
    assert render(sequential(), tmp_path / "flow.dot").exists()


@needs_dot
def test_a_failing_dot_raises_render_error_with_its_message() -> None:
    from flowlib.render._output import _pipe

    with pytest.raises(RenderError, match="syntax error") as caught:
        _pipe("digraph { a -> }", "svg")
    assert not isinstance(caught.value, GraphvizNotFoundError)


# --- traces -------------------------------------------------------------------------------


def test_a_task_result_draws_like_the_teams_own_trace() -> None:
    team = review_flow()
    result = run(team)
    assert to_dot(team, trace=result) == to_dot(team, trace=True)
    assert to_mermaid(team, trace=result) == to_mermaid(team, trace=True)


def test_a_task_result_on_another_team_rebuilds_the_path_from_its_messages() -> None:
    result = run(review_flow())
    fresh = review_flow()  # same shape, never run: its own trace cannot be used
    dot = to_dot(fresh, trace=result)
    assert "(path rebuilt from the messages)" in dot
    exact = to_dot(traced_review(), trace=True)
    # Same nodes, steps and fired edges as the exact trace; only the title differs.
    assert dot.splitlines()[2:] == exact.splitlines()[2:]


def test_a_task_result_of_a_nested_team_counts_the_team_turn_once() -> None:
    result = run(nested())
    dot = to_dot(nested(), trace=result)
    assert '"plan" [label="plan\\n#1"' in dot
    assert 'label="writers (RoundRobinGroupChat)  #2' in dot
    assert '"summary" [label="summary\\n#3"' in dot


def test_an_explicit_run_trace_draws_a_bare_graph() -> None:
    team = traced_review()
    dot = to_dot(team.graph, trace=team.trace)
    assert '"critic" -> "publish" [label="\'APPROVE\'\\n#4"' in dot


def test_a_trace_of_another_graph_is_rejected() -> None:
    team = traced_review()
    with pytest.raises(ValueError, match="different graph"):
        to_dot(sequential(), trace=team.trace)


def test_trace_true_needs_a_team() -> None:
    with pytest.raises(TypeError, match="trace=True"):
        to_dot(sequential(), trace=True)


def test_a_wrong_trace_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="RunTrace, a TaskResult"):
        to_dot(sequential(), trace="yes")  # type: ignore[arg-type]


def test_trace_false_is_no_overlay() -> None:
    team = traced_review()
    assert to_dot(team, trace=False) == to_dot(team)


def test_a_team_that_has_not_run_is_all_grey() -> None:
    dot = to_dot(review_flow(), trace=True)
    assert "not run yet" in dot
    assert "#1" not in dot
    assert dot.count('fontcolor="#9aa0a6"') == 3 + 3  # three nodes, three edges


def test_long_step_lists_are_cut() -> None:
    steps = RunTrace(names=["a", "b"], edge_ends=[("a", "b"), ("b", "b")])
    steps.step_nodes = [0, *([1] * 12)]
    steps.fired = [(0, 0), *[(i, 1) for i in range(1, 13)]]
    graph = build(["a", "b"], [("a", "b"), ("b", "b", {"condition": "again"})])
    dot = to_dot(graph, trace=steps)
    assert "#2, #3, #4, #5, #6, #7, #8, #9, … (+4)" in dot


# --- titles, errors, escaping -------------------------------------------------------------


def test_title_replaces_the_heading_and_keeps_the_pattern() -> None:
    dot = to_dot(round_robin(), title='My "team"')
    assert 'label="My \\"team\\"\\nround-robin ring, bounded by' in dot
    assert to_mermaid(round_robin(), title="T").startswith('---\ntitle: "T — round-robin')


def test_magentic_one_and_unknown_patterns_are_named() -> None:
    graph = selector_graph()
    graph.pattern = "magentic_one"
    assert "Magentic-One orchestrator, bounded by" in to_dot(graph)
    graph.pattern = "pipeline"
    assert 'label="pipeline pattern"' in to_dot(graph)


def test_a_team_node_without_its_team_is_a_3d_box() -> None:
    assert '"team" [label="team", shape=box3d' in to_dot(all_kinds())
    assert '    n2[["team"]]' in to_mermaid(all_kinds())


def test_a_bare_round_robin_graph_names_its_bound_generically() -> None:
    dot = to_dot(round_robin().graph)
    assert "bounded by the team's termination condition / max_turns" in dot
    assert "a loop without a conditional edge" in dot


def test_only_graphs_and_teams_can_be_drawn() -> None:
    with pytest.raises(TypeError, match="DiGraph or a team"):
        to_dot(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DiGraph or a team"):
        to_mermaid(42)  # type: ignore[arg-type]


def test_dot_quote_escapes_everything_graphviz_interprets() -> None:
    from flowlib.render._dot import dot_quote

    assert dot_quote('a "b"') == '"a \\"b\\""'
    assert dot_quote("x\\N\\n") == '"x\\\\N\\\\n"'
    assert dot_quote("one\ntwo\r\nthree\rfour") == '"one\\ntwo\\nthree\\nfour"'
    assert dot_quote("tab\there\x00") == '"tab here "'
    assert dot_quote("ünïcode → ok") == '"ünïcode → ok"'


def test_mermaid_text_escapes_markup() -> None:
    from flowlib.render._mermaid import mermaid_text

    assert mermaid_text('say "hi"') == "say #34;hi#34;"
    assert mermaid_text("a<b>&c|d`e") == "a#60;b#62;#38;c#124;d#96;e"
    assert mermaid_text("#1, #2") == "#1, #2"  # not an entity: left as is
    assert mermaid_text("#lt; #x1;") == "#35;lt; #35;x1;"
    assert mermaid_text("one\ntwo\r\nthree\tfour") == "one<br/>two<br/>three four"


def test_mermaid_ids_are_positions_so_keywords_are_safe() -> None:
    text = to_mermaid(special_characters())
    assert '    n0("graph")' in text
    assert '    n1("end")' in text
    assert "end -" not in text


def test_exports_match_all() -> None:
    exported = set(flowlib.render.__all__)
    public = {
        name
        for name, value in vars(flowlib.render).items()
        if not name.startswith("_")
        and str(getattr(value, "__module__", "")).startswith("flowlib.render")
    }
    assert public == exported
    assert len(exported) == len(flowlib.render.__all__)


@pytest.mark.parametrize(
    "module",
    ["flowlib.render", "flowlib.render._dot", "flowlib.render._mermaid", "flowlib.render._output"],
)
def test_docstring_examples_run(module: str) -> None:
    import importlib

    failures, tried = doctest.testmod(importlib.import_module(module))
    assert tried > 0
    assert failures == 0
