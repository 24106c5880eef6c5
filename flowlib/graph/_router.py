"""Router nodes: graph nodes that decide which of their outgoing edges fire.

A team whose next speaker is chosen at run time (the selector, Magentic-One's
orchestrator) compiles to a graph with a router at its hub: edges from the router to
every participant and back. On its turn the router sees the new messages, like any node,
and returns a [`Routing`][flowlib.graph.Routing]: the targets to activate, events to stream,
messages to publish, or a reason to stop. The executor fires exactly the router's edges to the
chosen targets; edge conditions on a router's edges are only labels
([`Selected`][flowlib.graph.Selected]).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .._cancellation import CancellationToken
from .._named import Named
from ..messages import BaseAgentEvent, BaseChatMessage
from ._conditions import EdgeCondition

__all__ = ["Router", "Routing", "Selected"]


@dataclass
class Routing:
    """A router's decision for one turn.

    Attributes:
        targets: Names of the nodes to activate (each must be a target of the router's
            edges). Empty with no ``stop_reason`` is a dead end.
        events: Events to stream and keep in the result (not broadcast).
        messages: Chat messages the router publishes (broadcast like any node's).
        stop_reason: When set, the run stops with this reason after this turn.
    """

    targets: Sequence[str] = ()
    events: Sequence[BaseAgentEvent] = ()
    messages: Sequence[BaseChatMessage] = ()
    stop_reason: str | None = None


class Selected(EdgeCondition):
    """Label of a router's edge: fires when the router selects ``target``.

    The executor decides router edges from the [`Routing`][flowlib.graph.Routing] itself; this
    condition makes the edge conditional in the IR (so a router hub is a valid loop), readable in
    dumps and drawings.
    """

    kind: Literal["selected"] = "selected"
    target: str

    def check(self, message: BaseChatMessage) -> bool:
        """A router's edges are decided by its routing, never by a message."""
        return False

    def label(self) -> str:
        return f"selected {self.target}"


class Router(Named, ABC):
    """Base class of router nodes.

    Subclasses implement [`route`][flowlib.graph.Router.route] (or
    [`route_stream`][flowlib.graph.Router.route_stream] to stream events while deciding) and keep
    whatever history they need: like agents, routers receive only the messages that are new since
    their previous turn.

    Args:
        name: The node name.
        description: What the router does.
    """

    component_type: ClassVar[str] = "router"

    def __init__(self, name: str, description: str = "Chooses the next speaker.") -> None:
        self._name = name
        self._description = description

    @abstractmethod
    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        """Decide the next node(s) from the new messages."""

    async def route_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Routing, None]:
        """Stream events while deciding; the last item is the [`Routing`][flowlib.graph.Routing].

        The default calls [`route`][flowlib.graph.Router.route].
        """
        yield await self.route(messages, cancellation_token)

    async def reset(self) -> None:
        """Forget history; called by the team's ``reset()``."""

    async def save_state(self) -> Mapping[str, Any]:
        """The router's state (JSON-serialisable)."""
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore [`save_state`][flowlib.graph.Router.save_state] output."""
