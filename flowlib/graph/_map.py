"""A map target's turn: one fresh instance per item of its map edge, run concurrently
under the edge's bound.

To the scheduler the map is one turn of the target node (one step, one turn toward
``max_turns``): it starts when the map edge fires and ends when every instance has
finished. In between, each instance's output leaves along the target's out-edges on its
own: the scheduler records instances in item order as they finish
(`Scheduler.record_instances`: the output goes to the thread, edges into ``any`` groups
fire on its conditions), and the edges into ``all`` groups fire once, when the map ends,
so a node after the map with ``activation="all"`` is the reduce and receives the
outputs in item order. An empty list runs nothing; the reduce still fires.

Instance ``i`` is named ``<target>[i]``: its messages and events carry that source, and
the run's trace lists it. Each instance is a fresh participant (the node's ``instances``
factory, or a copy made from the participant's component config; a function node is
called as it is), so instances share no model context. A finished instance's output is
kept in the scheduler's state at once (``map_done`` until recorded): a map interrupted by
an error, a cancellation or a crash runs only the instances that had not finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ..base import CancellationToken
from ..component import dump_component, load_component
from ..errors import ContractError
from ..messages import BaseAgentEvent, BaseChatMessage, MessageFactory
from ..tools.internal import current_scope, keyed_turn
from ._guard import Attempts, NodeGuard, consume
from ._model import InstanceFactory
from ._node import Node, NodeContext, TurnOutput, as_node, node_class

__all__ = ["instance_name", "run_map"]

Item = BaseAgentEvent | BaseChatMessage
Emit = Callable[[Item], None]


def instance_name(node: str, index: int) -> str:
    """The name of instance ``index`` of map target ``node``: ``node[index]``."""
    return f"{node}[{index}]"


def _renamed(item: Any, old: str, new: str) -> Any:
    if getattr(item, "source", None) == old:
        return item.model_copy(update={"source": new})
    return item


class MapInstances:
    """Builds the participants of a map target's instances.

    Args:
        node: The target's adapter (its participant is the template).
        factory: The node's ``instances`` factory, if any.
        message_factory: Checks the messages instances report.
    """

    def __init__(
        self, node: Node, factory: InstanceFactory | None, message_factory: MessageFactory
    ) -> None:
        self._node = node
        self._factory = factory
        self._message_factory = message_factory
        self._config: Any = None
        self._context = NodeContext(factory=message_factory)
        self._adapters: dict[type, type[Node]] = {}  # node_class per participant class
        # A plain function keeps no state: its one adapter serves every instance.
        self._shared: Node | None = None
        if factory is None and node.kind == "function":
            self._shared = as_node(node.participant, self._context)

    def build(self, index: int) -> Node:
        """A fresh [`Node`][flowlib.graph.Node] for instance ``index``."""
        if self._shared is not None:
            return self._shared
        participant: Any = self._factory(index) if self._factory is not None else self._copy()
        adapter = self._adapters.get(type(participant))
        if adapter is None:
            adapter = self._adapters[type(participant)] = node_class(participant)
        return adapter(participant, self._context)

    def _copy(self) -> Any:
        template = self._node.participant
        try:
            if self._config is None:
                self._config = dump_component(template)
            return load_component(self._config)
        except Exception as exc:
            raise ContractError(
                f"Map target `{template.name}` needs a fresh participant per item, and a copy "
                f"of it could not be made from its component config ({exc}); pass "
                "`add_node(agent, instances=lambda i: make_agent(i))`."
            ) from exc


async def run_map(
    name: str,
    items: list[BaseChatMessage],
    todo: list[int],
    instances: MapInstances,
    *,
    limit: int | None,
    guard: NodeGuard | None,
    token: CancellationToken,
    emit: Emit,
    finished: Callable[[int, list[BaseChatMessage]], None],
) -> TurnOutput:
    """Run the instances ``todo`` of map target ``name``; return the map's (empty) turn.

    Args:
        name: The target node's name.
        items: One per instance, in order.
        todo: The indices of the instances to run (the others finished before).
        instances: Builds each instance.
        limit: At most this many instances at once (None: all).
        guard: The node's policies, applied to each instance's turn.
        token: Cancels the instances.
        emit: Streams what the instances stream (renamed to their instance).
        finished: Told the index and the published messages (renamed to the instance) of
            each instance as it finishes.
    """
    semaphore = asyncio.Semaphore(limit or max(1, len(todo)))

    async def one(index: int, item: BaseChatMessage) -> None:
        async with semaphore:
            node = instances.build(index)
            label = instance_name(name, index)
            original = node.name

            def forward(streamed: Item) -> None:
                emit(_renamed(streamed, original, label))

            parent = current_scope()  # the map turn's: each instance's key derives from it

            def turn(given: list[BaseChatMessage]) -> AsyncGenerator[Item | TurnOutput, None]:
                stream = node.turn(given, token)
                return stream if parent is None else keyed_turn(stream, parent.child("item", index))

            output: TurnOutput | None
            if guard is not None:
                output = await guard.run(turn, [item], forward, Attempts(), node=node)
            else:
                output = await consume(turn([item]), forward)
            published = output.published if output is not None else []
            finished(index, [_renamed(m, original, label) for m in published])

    running = [asyncio.ensure_future(one(index, items[index])) for index in todo]
    try:
        await asyncio.gather(*running)
    except BaseException:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
    return TurnOutput([], None, delta=[], tail=())
