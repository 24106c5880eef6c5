"""Flows the studio tests name on ``flowlib studio``'s command line."""

from __future__ import annotations

import os
from typing import Any

from flowlib.conditions import MaxMessageTermination
from flowlib.graph import Not
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent


def build(checkpoint_store: Any = None) -> GraphFlow:
    """writer -> critic -> (writer | publish): five turns, critic approves the 2nd draft."""
    writer = ScriptedAgent("writer", ["draft 1", "draft 2", "draft 3"])
    critic = ScriptedAgent("critic", ["REVISE: shorter", "APPROVE", "APPROVE"])
    publish = ScriptedAgent("publish", ["Published."])
    builder = DiGraphBuilder().add_node(writer).add_node(critic).add_node(publish)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, publish, condition="APPROVE")
    builder.add_edge(critic, writer, condition=Not(condition="APPROVE"))
    builder.set_entry_point(writer)
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(20),
        checkpoint_store=checkpoint_store,
    )


def build_slow(checkpoint_store: Any = None) -> GraphFlow:
    """A ring of ``a -> b -> c -> a`` whose turns each take 0.5 s, 12 turns in all: a run
    another process is writing while the page watches."""
    names = ("a", "b", "c")
    agents = [
        ScriptedAgent(name, [f"{name} turn {i}" for i in range(6)], delay=0.5) for name in names
    ]
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    builder.add_edge("a", "b").add_edge("b", "c").add_edge("c", "a")
    builder.set_entry_point("a")
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        max_turns=int(os.environ.get("STUDIO_TEST_TURNS", "12")),
        checkpoint_store=checkpoint_store,
    )
