"""One interface for whatever a graph node runs, and its adapters.

The executor and the teams talk to every participant through a [`Node`][flowlib.graph.Node]:
run a turn, reset, pause, resume, save and load state. [`as_node`][flowlib.graph.as_node]
is the only place that looks at a participant's class; it wraps a chat agent in an
[`AgentNode`][flowlib.graph.AgentNode], a nested team in a
[`TeamNode`][flowlib.graph.TeamNode], a function node in a
[`FunctionNode`][flowlib.graph.FunctionNode] and a router in a
[`RouterNode`][flowlib.graph.RouterNode].

A node whose turn is a single call that may publish nothing (a plain function wrapped in
[`FunctionAgent`][flowlib.agents.FunctionAgent]) declares it with ``direct_call = True``
and a ``call`` coroutine ([`DirectCallNode`][flowlib.graph.DirectCallNode]); its adapter
then awaits ``call`` instead of streaming ``on_messages_stream``. This keeps the graph
package free of the concrete agent classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from .._english import a
from ..base import CancellationToken, ChatAgent, Response, TaskResult, Team
from ..checkpoint import StateChange, diff_state, json_state, state_change
from ..errors import ArgumentTypeError, ContractError, RoutingError
from ..messages import BaseAgentEvent, BaseChatMessage, MessageFactory
from ._model import NodeKind
from ._router import Router, Routing
from ._scheduler import Finished

__all__ = [
    "AgentNode",
    "DirectCallNode",
    "FunctionNode",
    "Node",
    "NodeContext",
    "RouterNode",
    "TeamNode",
    "TurnOutput",
    "as_node",
    "node_class",
]

Item = BaseAgentEvent | BaseChatMessage


@runtime_checkable
class DirectCallNode(Protocol):
    """A node run by one awaited call.

    Attributes:
        direct_call: True: run the node's turns through ``call``.
    """

    direct_call: ClassVar[bool]

    async def call(self, messages: Sequence[BaseChatMessage]) -> Response | None:
        """Run a turn on the new messages; None publishes nothing."""
        ...


@dataclass(slots=True)
class TurnOutput(Finished):
    """What a finished turn hands to the executor: what the scheduler records, plus what
    termination sees (``delta``) and what is streamed once the turn is recorded.

    Attributes:
        delta: The turn's events and messages, as termination sees them.
        tail: Items streamed only once the turn is recorded (an agent's reply), so a
            consumer never sees a message that an interruption could still take back.
    """

    delta: list[Item] = field(default_factory=list)
    tail: tuple[Item, ...] = ()


def _no_handover() -> None:
    return None


@dataclass(frozen=True, slots=True)
class NodeContext:
    """What an adapter needs to know of the graph it runs in.

    Attributes:
        names: The plan's node names, in plan order (for error messages).
        index: Node name to plan index.
        targets: The plan indexes of this node's edge targets (what a router may select).
        factory: Checks the messages an agent reports.
        handed_over: Called when a nested team takes its turn's messages into its own
            thread (a retry after an interruption must resume it, not hand them over
            again).
    """

    names: Sequence[str] = ()
    index: Mapping[str, int] = field(default_factory=dict)
    targets: frozenset[int] = frozenset()
    factory: MessageFactory | None = None
    handed_over: Callable[[], None] = _no_handover


class Node(ABC):
    """What the executor and the teams run: one participant behind one interface.

    Attributes:
        kind: How the node is drawn and reported (``agent``, ``team``, ``function`` or
            ``router``).
        counts_turn: Whether its turns count toward ``max_turns`` (routers' do not).
    """

    kind: ClassVar[NodeKind] = "agent"
    counts_turn: ClassVar[bool] = True

    __slots__ = ("_context", "participant")

    def __init__(self, participant: Any, context: NodeContext | None = None) -> None:
        self.participant = participant
        self._context = context if context is not None else NodeContext()

    @property
    def name(self) -> str:
        """The participant's name (the graph node's name)."""
        name: str = self.participant.name
        return name

    @abstractmethod
    def turn(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Item | TurnOutput, None]:
        """Run one turn on the new ``messages``: yield what the turn streams, then one
        [`TurnOutput`][flowlib.graph.TurnOutput] (last)."""

    async def reset(self) -> None:
        """Reset the participant to its initial state."""
        await self.participant.on_reset(CancellationToken())

    async def pause(self) -> None:
        """Tell the participant that its team is pausing."""
        await self.participant.on_pause(CancellationToken())

    async def resume(self) -> None:
        """Tell the participant that its team resumes."""
        await self.participant.on_resume(CancellationToken())

    async def save_state(self) -> Mapping[str, Any]:
        """The participant's state."""
        state: Mapping[str, Any] = await self.participant.save_state()
        return state

    async def save_state_since(self, base: Any) -> StateChange:
        """The participant's state now and the patch from ``base`` (an earlier state):
        through the participant's own ``save_state_since`` when it has one (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState]), so a checkpoint after
        each turn costs what the turn changed."""
        if type(self).save_state is Node.save_state:
            return await state_change(self.participant, base)
        state = json_state(await self.save_state())
        return StateChange(state, diff_state(base, state))

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore a state returned by ``save_state``."""
        await self.participant.load_state(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class _StreamedNode(Node):
    """A node whose turn runs the participant's stream (``_open``) to its end: what comes
    before the item that ends the turn (of type ``_ends_with``: a Response, a TaskResult, a
    Routing) is yielded as it comes; ``_finish`` turns that item (None: there was none)
    into the rest of the turn, its [`TurnOutput`][flowlib.graph.TurnOutput] last. A stream
    that must end with that item and did not is refused with ``_missing`` (``{name}``: the
    participant's)."""

    _ends_with: ClassVar[type]
    _missing: ClassVar[str | None] = None
    __slots__ = ()

    @abstractmethod
    def _open(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Any, None]:
        """The participant's stream for this turn."""

    @abstractmethod
    def _finish(self, end: Any) -> list[Item | TurnOutput]:
        """What the turn yields after the stream: its last item is the TurnOutput."""

    async def turn(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Item | TurnOutput, None]:
        ends_with = self._ends_with
        end: Any = None
        # Run the stream to its end (rather than leaving it at its last item): an abandoned
        # async generator is finalised through the event loop, which costs a wake-up per
        # turn. Interrupted, it is closed here, at once.
        stream = self._open(messages, token)
        finished = False
        try:
            async for item in stream:
                if isinstance(item, ends_with):
                    end = item
                elif end is None:
                    yield item
            finished = True
        finally:
            if not finished:
                await stream.aclose()
        if end is None and self._missing is not None:
            raise ContractError(self._missing.format(name=self.name))
        for out in self._finish(end):
            yield out


class AgentNode(_StreamedNode):
    """A chat agent: a turn streams ``on_messages_stream`` to its
    [`Response`][flowlib.base.Response]."""

    _ends_with = Response
    _missing = (
        "Agent `{name}`'s on_messages_stream() ended without yielding a Response; yield "
        "`Response(chat_message=...)` as its last item."
    )
    __slots__ = ()

    def _open(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Any, None]:
        agent: ChatAgent = self.participant
        return agent.on_messages_stream(messages, token)

    def _finish(self, end: Any) -> list[Item | TurnOutput]:
        agent: ChatAgent = self.participant
        response: Response = end
        # Termination sees what the agent reports as its turn (its Response's inner
        # messages and chat message), not everything it streamed: an agent wrapping a team
        # streams the inner team's messages, which are not the outer team's.
        chat = response.chat_message
        delta: list[Item] = [*response.inner_messages, chat] if response.inner_messages else [chat]
        factory = self._context.factory
        if factory is not None:
            factory.check(delta, agent=agent.name)
        return [TurnOutput([chat], chat, delta=delta, tail=(chat,))]


class FunctionNode(Node):
    """A [`DirectCallNode`][flowlib.graph.DirectCallNode]: a turn is one awaited ``call``;
    ``None`` publishes nothing."""

    kind: ClassVar[NodeKind] = "function"
    __slots__ = ()

    async def turn(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Item | TurnOutput, None]:
        answer: Response | None = await self.participant.call(messages)
        if answer is None:
            yield TurnOutput([], None)
            return
        delta: list[Item] = list(answer.inner_messages or ())
        for inner in delta:
            yield inner
        chat = answer.chat_message
        delta.append(chat)
        yield TurnOutput([chat], chat, delta=delta, tail=(chat,))


class TeamNode(_StreamedNode):
    """A nested team: a turn is a run of the team on the new messages; it publishes the
    chat messages the run produced."""

    kind: ClassVar[NodeKind] = "team"
    _ends_with = TaskResult  # a team's stream ends with it
    __slots__ = ()

    def _open(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Any, None]:
        team: Team = self.participant
        stream = team.run_stream(
            task=messages, cancellation_token=token, output_task_messages=False
        )
        # From its first step the team holds these messages in its own thread.
        self._context.handed_over()
        return stream

    def _finish(self, end: Any) -> list[Item | TurnOutput]:
        result: TaskResult | None = end
        produced = list(result.messages) if result is not None else []
        published = [m for m in produced if isinstance(m, BaseChatMessage)]
        return [TurnOutput(published, published[-1] if published else None, delta=produced)]

    async def reset(self) -> None:
        """Reset the nested team."""
        await self.participant.reset()

    async def pause(self) -> None:
        """Pause the nested team."""
        await self.participant.pause()

    async def resume(self) -> None:
        """Resume the nested team."""
        await self.participant.resume()


class RouterNode(_StreamedNode):
    """A [`Router`][flowlib.graph.Router]: a turn streams ``route_stream`` to its
    [`Routing`][flowlib.graph.Routing], checked against the node's edge targets. Its turns
    do not count toward ``max_turns``; pausing and resuming do nothing."""

    kind: ClassVar[NodeKind] = "router"
    counts_turn: ClassVar[bool] = False
    _ends_with = Routing
    _missing = (
        "Router `{name}`'s route_stream() ended without a Routing; yield a `Routing(...)` as "
        "its last item."
    )
    __slots__ = ()

    def _open(
        self, messages: list[BaseChatMessage], token: CancellationToken
    ) -> AsyncGenerator[Any, None]:
        router: Router = self.participant
        return router.route_stream(messages, token)

    def _finish(self, end: Any) -> list[Item | TurnOutput]:
        output = self._routed(end)
        return [*output.delta, output]

    def _routed(self, routing: Routing) -> TurnOutput:
        """Check a router's decision against its edges."""
        context = self._context
        allowed = context.targets
        selected: set[int] = set()
        for target in routing.targets:
            found = context.index.get(target)
            if found is None or found not in allowed:
                names = context.names
                options = ", ".join(f"`{names[t]}`" for t in sorted(allowed))
                raise RoutingError(
                    f"Router `{self.name}` selected `{target}`, which is not one of its edge "
                    f"targets ({options}); return targets from those."
                )
            selected.add(found)
        published = list(routing.messages)
        delta: list[Item] = [*routing.events, *published]
        final = published[-1] if published else None
        return TurnOutput(published, final, selected, routing.stop_reason, delta=delta)

    async def reset(self) -> None:
        """Reset the router."""
        await self.participant.reset()

    async def pause(self) -> None:
        """Routers have nothing to pause."""

    async def resume(self) -> None:
        """Routers have nothing to resume."""


def node_class(participant: object) -> type[Node]:
    """The adapter class [`as_node`][flowlib.graph.as_node] wraps ``participant`` in.

    Raises:
        ArgumentTypeError: If ``participant`` is not an agent, team, function node or
            router.
    """
    if isinstance(participant, Router):
        return RouterNode
    if isinstance(participant, Team):
        return TeamNode
    # DirectCallNode's structural check, without the runtime protocol's isinstance
    # (about 25 µs a call: it dominated building a large team).
    if getattr(participant, "direct_call", False) is True and callable(
        getattr(participant, "call", None)
    ):
        return FunctionNode
    if isinstance(participant, ChatAgent):
        return AgentNode
    raise ArgumentTypeError(
        f"A graph node cannot run {a(type(participant).__name__)}; pass a ChatAgent, a Team, "
        "a Router or a FunctionAgent as the participant.",
        argument="participant",
    )


def as_node(participant: object, context: NodeContext | None = None) -> Node:
    """Wrap ``participant`` in its [`Node`][flowlib.graph.Node] adapter: the only place
    that looks at a participant's class.

    Args:
        participant: A chat agent, a nested team, a function node or a router.
        context: What the node needs of its graph (edge targets, message factory, the
            team hand-over callback); the defaults suit a node run on its own.

    Raises:
        ArgumentTypeError: If ``participant`` is none of those.

    Examples:
        ```python
        node = as_node(FunctionAgent(lambda messages: "ok", name="step"))
        assert node.kind == "function"
        ```
    """
    return node_class(participant)(participant, context)
