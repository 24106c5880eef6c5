"""The graph core: the IR every team compiles to, its validation, and the one executor."""

from ._conditions import (
    AllOf,
    AnyOf,
    CallableCondition,
    Contains,
    EdgeCondition,
    HandoffTo,
    IsHandoff,
    Not,
    Regex,
    describe_condition,
)
from ._executor import COMPLETE_REASON, GraphExecutor, RunRecorder
from ._fire import EdgeRule, edge_rule, edge_rules, fire_edges
from ._model import DiGraph, DiGraphEdge, DiGraphNode, NodeKind
from ._node import (
    AgentNode,
    DirectCallNode,
    FunctionNode,
    Node,
    NodeContext,
    RouterNode,
    TeamNode,
    TurnOutput,
    as_node,
)
from ._plan import ExecutionPlan
from ._router import Router, Routing, Selected
from ._signature import graph_description, graph_difference, graph_signature
from ._state import GraphManagerState
from ._trace import RunTrace, TraceObserver
from ._validate import GraphAnalysis, GraphWarning, graph_warnings, validate_graph

__all__ = [
    "COMPLETE_REASON",
    "AgentNode",
    "AllOf",
    "AnyOf",
    "CallableCondition",
    "Contains",
    "DiGraph",
    "DiGraphEdge",
    "DiGraphNode",
    "DirectCallNode",
    "EdgeCondition",
    "EdgeRule",
    "ExecutionPlan",
    "FunctionNode",
    "GraphAnalysis",
    "GraphExecutor",
    "GraphManagerState",
    "GraphWarning",
    "HandoffTo",
    "IsHandoff",
    "Node",
    "NodeContext",
    "NodeKind",
    "Not",
    "Regex",
    "Router",
    "RouterNode",
    "Routing",
    "RunRecorder",
    "RunTrace",
    "Selected",
    "TeamNode",
    "TraceObserver",
    "TurnOutput",
    "as_node",
    "describe_condition",
    "edge_rule",
    "edge_rules",
    "fire_edges",
    "graph_description",
    "graph_difference",
    "graph_signature",
    "graph_warnings",
    "validate_graph",
]
