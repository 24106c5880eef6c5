"""What the executor needs from a node beyond the chat-agent interface.

A node whose turn is a single call that may publish nothing (a plain function wrapped in
[`FunctionAgent`][flowlib.agents.FunctionAgent]) declares it with ``direct_call = True``
and a ``call`` coroutine; the executor then awaits ``call`` instead of streaming
``on_messages_stream``. This keeps the graph package free of the concrete agent classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from ..base import Response
from ..messages import BaseChatMessage

__all__ = ["DirectCallNode"]


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
