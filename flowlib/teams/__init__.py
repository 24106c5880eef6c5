"""Teams: GraphFlow and its builder; every team compiles to the graph IR."""

from ..graph import DiGraph, DiGraphEdge, DiGraphNode
from ._builder import DiGraphBuilder
from ._graph_flow import GraphFlow
from ._group_chat import BaseGroupChat

__all__ = [
    "BaseGroupChat",
    "DiGraph",
    "DiGraphBuilder",
    "DiGraphEdge",
    "DiGraphNode",
    "GraphFlow",
]
