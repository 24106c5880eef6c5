"""Flows the studio tests name on ``flowlib studio``'s command line."""

from __future__ import annotations

import os
from typing import Any

from flowlib.conditions import MaxMessageTermination
from flowlib.graph import Not
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat
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
    """A loop ``a -> b -> c -> a`` (until ``c`` says done, which it never does) whose turns
    each take 0.5 s, stopped by ``max_turns`` after 12 turns: a run another process is
    writing while the page watches."""
    agents = [
        ScriptedAgent(name, [f"{name} turn {i}" for i in range(6)], delay=0.5)
        for name in ("a", "b", "c")
    ]
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    builder.add_node(ScriptedAgent("end", ["ended"]))
    builder.add_edge("a", "b").add_edge("b", "c")
    builder.add_edge("c", "a", condition=Not(condition="done"))
    builder.add_edge("c", "end", condition="done")
    builder.set_entry_point("a")
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        max_turns=int(os.environ.get("STUDIO_TEST_TURNS", "12")),
        checkpoint_store=checkpoint_store,
    )


HOSTILE = (
    '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    "<b>bold?</b> & \u202e"
)


def build_hostile(checkpoint_store: Any = None) -> GraphFlow:
    """One agent whose reply is markup that must stay text on the page."""
    builder = DiGraphBuilder().add_node(ScriptedAgent("writer", [HOSTILE]))
    builder.set_entry_point("writer")
    return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=checkpoint_store)


def build_ask(checkpoint_store: Any = None) -> RoundRobinGroupChat:
    """``max_turns=1``: after each turn the run waits for a person's reply (a pending
    request with an id)."""
    helper = ScriptedAgent("helper", lambda turn, _: f"Question {turn}: which colour?")
    return RoundRobinGroupChat([helper], max_turns=1, checkpoint_store=checkpoint_store)
