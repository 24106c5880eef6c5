"""Property testing as a feature: fake agents, a reference run checker, graph strategies.

- [`tool_calls`][flowlib.testing.tool_calls]: a scripted model reply that calls tools, for a
  ``ReplayChatCompletionClient`` (see "Scripting models" in the testing docs).
- Fake agents that never call a model: [`ScriptedAgent`][flowlib.testing.ScriptedAgent] (replies
from a script),
  [`EchoAgent`][flowlib.testing.EchoAgent], and [`GatedAgent`][flowlib.testing.GatedAgent] with a
  [`TurnRecorder`][flowlib.testing.TurnRecorder] to observe concurrency by events instead of by
  time.
- [`check_run`][flowlib.testing.check_run] / [`check_trace`][flowlib.testing.check_trace]: replay a
team's trace against the activation
  rules, independently of the executor; a [`RunTimeline`][flowlib.testing.RunTimeline] makes the
  check exact.
- [`check_crashes`][flowlib.testing.check_crashes] /
  [`assert_survives_crashes`][flowlib.testing.assert_survives_crashes]: interrupt your own
  flow (exception, cancellation, SIGKILL) and check that it resumes to the same outcome.
- [`check_checkpoint_store`][flowlib.testing.check_checkpoint_store]: the conformance
  suite of the checkpoint store protocol, for a store of your own.
- [`flowlib.testing.strategies`][flowlib.testing.strategies] (needs ``hypothesis``): strategies that
generate valid
  graph specs (chains, fan-outs, joins, loops, random DAGs with back edges) and invalid
  ones with the error each must raise, as the specs of
  [`flowlib.testing.specs`][flowlib.testing.specs].

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

import importlib
from typing import TYPE_CHECKING, Any

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
from ._scripting import tool_calls
from ._store_rules import (
    STORE_RULES,
    CheckpointStoreRuleError,
    StoreRule,
    check_checkpoint_store,
)

if TYPE_CHECKING:
    from ._crash import (
        CRASH_RULES,
        CrashFinding,
        CrashReport,
        CrashRule,
        FlowNotCrashSafeError,
        Interruption,
        assert_survives_crashes,
        check_crashes,
    )
    from ._explore import (
        RULES,
        ExploreReport,
        Finding,
        RoutingOutcome,
        Rule,
        assert_flow_sound,
        explore,
        routing_outcomes,
    )
    from ._standins import NobodyToPickError, StandIn, StandInRouter, StandInSelector, Turn

# Exploring a flow needs hypothesis (the `testing` extra); the fake agents and checks
# above do not, so those names load on first use.
_LAZY = {
    **dict.fromkeys(
        (
            "RULES",
            "STORE_RULES",
            "ExploreReport",
            "Finding",
            "Rule",
            "RoutingOutcome",
            "assert_flow_sound",
            "explore",
            "routing_outcomes",
        ),
        "._explore",
    ),
    **dict.fromkeys(
        (
            "CRASH_RULES",
            "CrashFinding",
            "CrashReport",
            "CheckpointStoreRuleError",
            "CrashRule",
            "FlowNotCrashSafeError",
            "Interruption",
            "assert_survives_crashes",
            "check_checkpoint_store",
            "check_crashes",
        ),
        "._crash",
    ),
    **dict.fromkeys(
        ("NobodyToPickError", "StandIn", "StandInRouter", "StandInSelector", "Turn"),
        "._standins",
    ),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(where, __name__)
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        raise ImportError(
            f"flowlib.testing.{name} explores flows with hypothesis, which is not installed; "
            "`pip install 'flowlib[testing]'` (or `pip install hypothesis`)."
        ) from exc
    return getattr(module, name)


__all__ = [
    "CRASH_RULES",
    "RULES",
    "STORE_RULES",
    "CheckpointStoreRuleError",
    "CrashFinding",
    "CrashReport",
    "CrashRule",
    "EchoAgent",
    "ExploreReport",
    "Finding",
    "FlowNotCrashSafeError",
    "GatedAgent",
    "Interruption",
    "NobodyToPickError",
    "RoutingOutcome",
    "Rule",
    "RunTimeline",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptedAgent",
    "StandIn",
    "StandInRouter",
    "StandInSelector",
    "StoreRule",
    "TraceCheckError",
    "Turn",
    "TurnEvent",
    "TurnRecorder",
    "assert_flow_sound",
    "assert_survives_crashes",
    "check_checkpoint_store",
    "check_crashes",
    "check_run",
    "check_trace",
    "explore",
    "routing_outcomes",
    "tool_calls",
]
