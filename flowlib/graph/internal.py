"""What flowlib's other packages use of ``flowlib.graph``'s private modules (not public API)."""

from ._conditions import check_condition
from ._executor import Budget, RunOutcome
from ._shapes import Participant, hub_graph, ring_graph
from ._state import GRAPH_STATE_VERSION
from ._telemetry import RunSpans
from ._validate import GraphAnalysis, analyse, check_loop_bounded, validate_graph

__all__ = [
    "GRAPH_STATE_VERSION",
    "Budget",
    "GraphAnalysis",
    "Participant",
    "RunOutcome",
    "RunSpans",
    "analyse",
    "check_condition",
    "check_loop_bounded",
    "hub_graph",
    "ring_graph",
    "validate_graph",
]
