"""What flowlib's other packages use of ``flowlib.graph``'s private modules (not public API)."""

from ._checkpointer import Checkpointer, Durability, StoredRun
from ._conditions import check_condition
from ._executor import Budget, RunOutcome
from ._run import (
    RUN_STATE_VERSION,
    TRANSITIONS,
    HumanRequest,
    Run,
    RunPhase,
    RunState,
    state_machine,
)
from ._shapes import Participant, hub_graph, ring_graph
from ._state import GRAPH_STATE_VERSION
from ._telemetry import RunSpans
from ._validate import GraphAnalysis, analyse, check_loop_bounded, validate_graph

__all__ = [
    "GRAPH_STATE_VERSION",
    "RUN_STATE_VERSION",
    "TRANSITIONS",
    "Budget",
    "Checkpointer",
    "Durability",
    "GraphAnalysis",
    "HumanRequest",
    "Participant",
    "Run",
    "RunOutcome",
    "RunPhase",
    "RunSpans",
    "RunState",
    "StoredRun",
    "analyse",
    "check_condition",
    "check_loop_bounded",
    "hub_graph",
    "ring_graph",
    "state_machine",
    "validate_graph",
]
