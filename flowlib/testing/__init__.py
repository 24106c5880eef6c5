"""Property testing as a feature: fake agents, a reference run checker, graph strategies.

- Fake agents that never call a model: [`ScriptedAgent`][flowlib.testing.ScriptedAgent] (replies
from a script),
  [`EchoAgent`][flowlib.testing.EchoAgent], and [`GatedAgent`][flowlib.testing.GatedAgent] with a
  [`TurnRecorder`][flowlib.testing.TurnRecorder] to observe concurrency by events instead of by
  time.
- [`check_run`][flowlib.testing.check_run] / [`check_trace`][flowlib.testing.check_trace]: replay a
team's trace against the activation
  rules, independently of the executor; a [`RunTimeline`][flowlib.testing.RunTimeline] makes the
  check exact.
- [`flowlib.testing.strategies`][flowlib.testing.strategies] (needs ``hypothesis``): strategies that
generate valid
  graph specs (chains, fan-outs, joins, loops, random DAGs with back edges) and invalid
  ones with the error each must raise.

Examples:
    >>> import asyncio
    >>> from flowlib.teams import DiGraphBuilder, GraphFlow
    >>> writer = ScriptedAgent("writer", ["draft", "final draft"])
    >>> critic = ScriptedAgent("critic", ["REVISE", "APPROVE"])
    >>> builder = DiGraphBuilder().add_node(writer).add_node(critic)
    >>> _ = builder.add_edge(writer, critic).add_edge(critic, writer, condition="REVISE")
    >>> _ = builder.set_entry_point(writer)
    >>> team = GraphFlow(builder.get_participants(), builder.build(), max_turns=10)
    >>> timeline = RunTimeline.attach(team)
    >>> result = asyncio.run(team.run(task="write"))
    >>> team.trace.steps
    ['writer', 'critic', 'writer', 'critic']
    >>> check_run(team, timeline=timeline)
"""

from ._agents import (
    EchoAgent,
    GatedAgent,
    ScriptedAgent,
    ScriptExhaustedError,
    ScriptFunction,
    TurnEvent,
    TurnRecorder,
)
from ._checks import RunTimeline, TraceCheckError, check_run, check_trace

__all__ = [
    "EchoAgent",
    "GatedAgent",
    "RunTimeline",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptedAgent",
    "TraceCheckError",
    "TurnEvent",
    "TurnRecorder",
    "check_run",
    "check_trace",
]
