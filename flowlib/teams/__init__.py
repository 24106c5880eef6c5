"""Teams: every pattern compiles to the graph IR and runs on the one executor."""

from ..graph import DiGraph, DiGraphEdge, DiGraphNode
from ..graph.internal import HumanRequest, RunPhase
from ._builder import DiGraphBuilder
from ._config import TeamConfig
from ._graph_flow import GraphFlow
from ._group_chat import BaseGroupChat
from ._magentic_one import MagenticOneGroupChat
from ._options import TeamOptions
from ._policy import TaskContext, TeamPolicy
from ._round_robin import RoundRobinGroupChat
from ._selector import SelectorGroupChat
from ._stored_runs import PendingRequest, pending_requests, runs_to_recover
from ._swarm import Swarm

__all__ = [
    "BaseGroupChat",
    "DiGraph",
    "DiGraphBuilder",
    "DiGraphEdge",
    "DiGraphNode",
    "GraphFlow",
    "HumanRequest",
    "MagenticOneGroupChat",
    "PendingRequest",
    "RoundRobinGroupChat",
    "RunPhase",
    "SelectorGroupChat",
    "Swarm",
    "TaskContext",
    "TeamConfig",
    "TeamOptions",
    "TeamPolicy",
    "pending_requests",
    "runs_to_recover",
]
