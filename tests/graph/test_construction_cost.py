"""Construction as cheap as a turn (issue 22.6): a graph is analysed once (the team
reuses the builder's validation, a changed graph is validated again), team construction
is linear in the graph's size with a small constant, and a turn's idempotency key costs
nothing until it is read. Costs are counted in Python calls, not timed, so they hold on a
busy machine."""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Callable
from typing import Any

import pytest

import flowlib.graph._validate as validate_module
from flowlib.agents import FunctionAgent
from flowlib.errors import UnknownNodeError
from flowlib.graph import DiGraphEdge
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.tools import call_key


def _calls(action: Callable[[], object]) -> int:
    """How many Python and C calls ``action`` makes."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count


def _chain(size: int) -> tuple[list[FunctionAgent], DiGraphBuilder]:
    agents = [FunctionAgent(lambda messages: "ok", name=f"n{i}") for i in range(size)]
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for first, second in itertools.pairwise(agents):
        builder.add_edge(first, second)
    return agents, builder


def test_a_team_reuses_the_validation_of_the_graph_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    analysed: list[object] = []
    original = validate_module._analyse

    def counting(graph: Any) -> Any:
        analysed.append(graph)
        return original(graph)

    monkeypatch.setattr(validate_module, "_analyse", counting)
    agents, builder = _chain(5)
    graph = builder.build()
    assert len(analysed) == 1
    GraphFlow(agents, graph=graph)
    GraphFlow(agents, graph=graph, max_turns=3)
    assert len(analysed) == 1  # networkx ran once, for the builder's build()


def test_a_graph_changed_after_its_validation_is_validated_again() -> None:
    agents, builder = _chain(3)
    graph = builder.build()
    GraphFlow(agents, graph=graph)
    graph.nodes["n2"].edges.append(DiGraphEdge(target="ghost"))
    with pytest.raises(UnknownNodeError, match="ghost"):
        GraphFlow(agents, graph=graph)


def test_team_construction_is_linear_with_a_small_constant() -> None:
    per_node = []
    for size in (100, 400):
        agents, builder = _chain(size)
        graph = builder.build()
        per_node.append(_calls(functools.partial(GraphFlow, agents, graph=graph)) / size)
    small, large = per_node
    assert large <= small * 1.1  # linear: calls per node do not grow with the size
    assert large < 100, f"{large:.0f} calls per node to build a team"


async def test_a_turn_computes_its_key_only_when_it_is_read() -> None:
    hashed: list[int] = []
    import flowlib.tools._keys as keys

    original = keys._derive

    def counting(*parts: object) -> str:
        hashed.append(1)
        return original(*parts)

    keys._derive = counting  # type: ignore[assignment]
    try:
        seen: list[str] = []

        def quiet(messages: Any) -> str:
            return "ok"

        def asks(messages: Any) -> str:
            seen.append(call_key())
            return "ok"

        builder = DiGraphBuilder()
        builder.add_node(FunctionAgent(quiet, name="quiet"))
        builder.add_node(FunctionAgent(asks, name="asks"))
        builder.add_edge("quiet", "asks")
        team = GraphFlow(builder.get_participants(), builder.build())
        await team.run(task="go", run_id="r1")
        assert len(hashed) == 1  # the turn that read its key; not the quiet one
        assert len(seen) == 1 and len(seen[0]) == 64
    finally:
        keys._derive = original  # type: ignore[assignment]
