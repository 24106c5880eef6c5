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
from ._model import DiGraph, DiGraphEdge, DiGraphNode, InstanceFactory, MapFunction, NodeKind
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
from ._patterns import GraphPattern, pattern_of, register_pattern
from ._plan import ExecutionPlan
from ._policies import CachePolicy, RetryPolicy, check_timeout, is_transient
from ._router import Router, Routing, Selected
from ._scheduler import LoadedState, NodeRun, Scheduler
from ._signature import graph_description, graph_difference, graph_signature
from ._state import GraphManagerState
from ._thread import Thread
from ._trace import FiredEdges, RunObserver, RunTrace, StepNodes, TraceObserver, TurnScope
from ._validate import GraphAnalysis, GraphWarning, graph_warnings, validate_graph

__all__ = [
    "COMPLETE_REASON",
    "AgentNode",
    "AllOf",
    "AnyOf",
    "CachePolicy",
    "CallableCondition",
    "Contains",
    "DiGraph",
    "DiGraphEdge",
    "DiGraphNode",
    "DirectCallNode",
    "EdgeCondition",
    "EdgeRule",
    "ExecutionPlan",
    "FiredEdges",
    "FunctionNode",
    "GraphAnalysis",
    "GraphExecutor",
    "GraphManagerState",
    "GraphPattern",
    "GraphWarning",
    "HandoffTo",
    "InstanceFactory",
    "IsHandoff",
    "LoadedState",
    "MapFunction",
    "Node",
    "NodeContext",
    "NodeKind",
    "NodeRun",
    "Not",
    "Regex",
    "RetryPolicy",
    "Router",
    "RouterNode",
    "Routing",
    "RunObserver",
    "RunRecorder",
    "RunTrace",
    "Scheduler",
    "Selected",
    "StepNodes",
    "TeamNode",
    "Thread",
    "TraceObserver",
    "TurnOutput",
    "TurnScope",
    "as_node",
    "check_timeout",
    "describe_condition",
    "edge_rule",
    "edge_rules",
    "fire_edges",
    "graph_description",
    "graph_difference",
    "graph_signature",
    "graph_warnings",
    "is_transient",
    "pattern_of",
    "register_pattern",
    "validate_graph",
]
