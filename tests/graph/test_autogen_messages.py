"""Issue 16.7: the errors AutoGen's own tests match by text keep flowlib's wording, but
name the same nodes and facts (docs/choices.md lists the differences)."""

from __future__ import annotations

import pytest
from _agents import Fake

from flowlib.agents import CodeExecutorAgent
from flowlib.code_executors import LocalCommandLineCodeExecutor
from flowlib.errors import (
    ActivationConflictError,
    CycleWithoutExitError,
    EmptyGraphError,
    NoStartNodeError,
    UnboundedLoopError,
)
from flowlib.graph._validate import validate_graph
from flowlib.messages import TextMessage
from flowlib.teams import DiGraph, DiGraphEdge, DiGraphNode, GraphFlow

Spec = dict[str, list[tuple[str, dict[str, str]]]]


def graph(spec: Spec, start: str | None = None) -> DiGraph:
    return DiGraph(
        nodes={
            name: DiGraphNode(name=name, edges=[DiGraphEdge(target=t, **kw) for t, kw in edges])
            for name, edges in spec.items()
        },
        default_start_node=start,
    )


def test_cycle_without_exit_names_the_cycle_as_autogen_does() -> None:
    # AutoGen: "Cycle detected without exit condition: A -> B -> C -> A"
    spec: Spec = {"S": [("A", {})], "A": [("B", {})], "B": [("C", {})], "C": [("A", {})]}
    with pytest.raises(CycleWithoutExitError, match="`A -> B -> C -> A`") as caught:
        validate_graph(graph(spec))
    assert caught.value.edges == (("A", "B"), ("B", "C"), ("C", "A"))


def test_conflicting_activation_names_target_group_conditions_and_sources() -> None:
    # AutoGen: "Conflicting activation conditions for target 'D' group 'D': 'all' (from
    # node 'B') and 'any' (from node 'C')"
    spec: Spec = {
        "A": [("B", {}), ("C", {})],
        "B": [("D", {"activation_condition": "all"})],
        "C": [("D", {"activation_condition": "any"})],
        "D": [],
    }
    with pytest.raises(ActivationConflictError) as caught:
        validate_graph(graph(spec))
    text = str(caught.value)
    for fact in ("group `D` of node `D`", "`all` (`B -> D`)", "`any` (`C -> D`)"):
        assert fact in text
    assert caught.value.edges == (("B", "D"), ("C", "D"))


def test_no_start_node_names_the_candidates() -> None:
    # AutoGen: "Graph must have at least one start node"
    with pytest.raises(NoStartNodeError, match="every node has an incoming edge") as caught:
        validate_graph(graph({"A": [("B", {})], "B": [("A", {"condition": "x"})]}))
    assert caught.value.nodes == ("A", "B")


def test_empty_graph() -> None:
    # AutoGen: "Graph has no nodes."
    with pytest.raises(EmptyGraphError, match="The graph has no nodes"):
        validate_graph(DiGraph(nodes={}))


def test_unbounded_cycle_names_the_loop_and_both_ways_out() -> None:
    # AutoGen: "A termination condition is required for cyclic graphs without a maximum
    # turn limit."
    spec: Spec = {"A": [("B", {})], "B": [("A", {"condition": "x"})]}
    with pytest.raises(UnboundedLoopError) as caught:
        GraphFlow([Fake("A"), Fake("B")], graph=graph(spec, start="A"))
    text = str(caught.value)
    assert "termination_condition" in text and "max_turns" in text
    assert caught.value.nodes == ("A", "B")


async def test_exit_code_text_names_the_code_and_the_output(tmp_path: object) -> None:
    # AutoGen: "The script ran, then exited with an error (POSIX exit code: 1)\nIts output
    # was:\n..."; flowlib: "... (exit code 1).\nIts output was:\n..."
    executor = LocalCommandLineCodeExecutor(work_dir=str(tmp_path))
    agent = CodeExecutorAgent("runner", code_executor=executor)
    code = "```python\nprint('half way')\nraise SystemExit(3)\n```"
    result = await agent.run(task=TextMessage(content=code, source="user"))
    reply = result.messages[-1].to_text()
    assert reply.startswith("The script ran, then exited with an error (exit code 3).\n")
    assert "Its output was:\nhalf way" in reply
