"""The graph shapes the built-in teams compile to, and what a graph node can run.

A round-robin team is a ring, a selector or Magentic-One team a hub around its router;
each shape is built here once, from the participants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from ..base import ChatAgent, Team
from ._model import DiGraph, DiGraphEdge, DiGraphNode, NodeKind
from ._node import node_class
from ._router import Router, Selected

__all__ = ["Participant", "hub_graph", "node_kind", "ring_graph"]

Participant: TypeAlias = ChatAgent | Team | Router
"""What a graph node runs: an agent, a nested team, or a router that picks the next node."""


def node_kind(participant: Participant) -> NodeKind:
    """The node kind of ``participant`` (how it is drawn and described)."""
    return node_class(participant).kind


def ring_graph(participants: Sequence[ChatAgent | Team]) -> DiGraph:
    """The ring ``p[0] -> p[1] -> ... -> p[0]`` of a round-robin team."""
    names = [participant.name for participant in participants]
    nodes = {
        participant.name: DiGraphNode(
            name=participant.name,
            edges=[DiGraphEdge(target=names[(position + 1) % len(names)])],
            kind=node_kind(participant),
        )
        for position, participant in enumerate(participants)
    }
    return DiGraph(
        nodes=nodes, default_start_node=names[0] if names else None, pattern="round_robin"
    )


def hub_graph(router: str, participants: Sequence[ChatAgent | Team], *, pattern: str) -> DiGraph:
    """The hub around ``router``: ``router -> p`` when the router selects ``p``
    (``Selected(p)``), and ``p -> router`` for every participant; all ``any`` activation."""
    nodes = {
        router: DiGraphNode(
            name=router,
            kind="router",
            activation="any",
            edges=[
                DiGraphEdge(target=p.name, condition=Selected(target=p.name)) for p in participants
            ],
        )
    }
    for participant in participants:
        nodes[participant.name] = DiGraphNode(
            name=participant.name,
            kind=node_kind(participant),
            activation="any",
            edges=[DiGraphEdge(target=router)],
        )
    return DiGraph(nodes=nodes, default_start_node=router, pattern=pattern)
