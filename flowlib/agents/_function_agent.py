"""Plain Python functions as graph nodes."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel
from typing_extensions import Self

from .._english import clause
from ..base import CancellationToken, Response
from ..component import load_error, refuse_field
from ..component.internal import register_builtin
from ..errors import InvalidTypeError, InvalidValueError
from ..messages import BaseChatMessage, TextMessage
from ._base_chat_agent import BaseChatAgent

__all__ = ["FunctionAgent", "NodeFunction"]

_Result = str | BaseChatMessage | Response | None
NodeFunction = Callable[[Sequence[BaseChatMessage]], _Result | Awaitable[_Result]]
"""A sync or async function taking the new messages and returning a str, a chat message,
a [`Response`][flowlib.base.Response] or None."""


class FunctionAgent(BaseChatAgent):
    """Runs a plain sync or async function as an agent, so it can be a graph node.

    The function receives the chat messages that are new since its last turn and returns
    a string (published as a ``TextMessage`` from this node), a chat message, a
    ``Response``, or ``None`` (publishes nothing; only unconditional edges fire). A sync
    function runs on the event loop: keep it quick or make it async.

    Args:
        func: The function.
        name: The node name; defaults to ``func.__name__``.
        description: Defaults to the function's docstring.

    Raises:
        TypeError: If ``func`` is not callable or cannot take one positional argument.

    Examples:
        >>> def shout(messages):
        ...     return messages[-1].to_text().upper()
        >>> FunctionAgent(shout).name
        'shout'
    """

    direct_call: ClassVar[bool] = True
    """The graph executor runs this node's turns through ``call`` (one awaited call)."""

    def __init__(
        self, func: NodeFunction, *, name: str | None = None, description: str | None = None
    ) -> None:
        if not callable(func):
            raise InvalidTypeError(f"A function node needs a callable, not {type(func).__name__}.")
        node_name = name or getattr(func, "__name__", "")
        if node_name == "<lambda>" or not node_name:
            raise InvalidValueError(
                "A lambda has no usable name; give the node one: "
                "`add_node(func, name='my_step')` or `FunctionAgent(func, name='my_step')`."
            )
        try:
            inspect.signature(func).bind(())
        except TypeError as exc:
            raise InvalidTypeError(
                f"Function node `{node_name}` must accept one positional argument (the new "
                f"messages); its signature does not: {clause(exc)}."
            ) from None
        except ValueError:  # builtins without a signature: assume they take one argument
            pass
        super().__init__(node_name, description or inspect.getdoc(func) or "A function node.")
        self._func = func

    @property
    def func(self) -> NodeFunction:
        """The wrapped function."""
        return self._func

    # -- the component protocol: a function is code, never config --------------------------

    component_config_schema: ClassVar[type[BaseModel]] = BaseModel

    def _to_config(self) -> BaseModel:
        refuse_field(
            "func",
            f"FunctionAgent `{self.name}` runs the Python function "
            f"{getattr(self._func, '__qualname__', self._func)!r}, which a declarative config "
            "cannot hold (flowlib never loads code from one). Build this node in code, or use "
            "an agent that serialises (e.g. AssistantAgent).",
        )

    @classmethod
    def _from_config(cls, config: BaseModel) -> Self:
        raise load_error("a FunctionAgent runs Python code and cannot be loaded from a config.")

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """Any chat message: the function decides."""
        return (BaseChatMessage,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Call the function on the new messages.

        Raises:
            TypeError: If the function returns something else than the documented types,
                or ``None`` (use the executor, which accepts a function that publishes
                nothing, rather than calling ``on_messages`` directly).
        """
        result = await self.call(messages)
        if result is None:
            raise InvalidTypeError(
                f"Function node `{self.name}` returned None, so there is no chat message to "
                "return from on_messages(); return a string or a message."
            )
        return result

    async def call(self, messages: Sequence[BaseChatMessage]) -> Response | None:
        """Call the function and normalise its result (``None`` when it published nothing)."""
        value: Any = self._func(list(messages))
        if inspect.isawaitable(value):
            value = await value
        if value is None:
            return None
        if isinstance(value, Response):
            return value
        if isinstance(value, str):
            return Response(chat_message=TextMessage(content=value, source=self.name))
        if isinstance(value, BaseChatMessage):
            return Response(chat_message=value)
        raise InvalidTypeError(
            f"Function node `{self.name}` returned {type(value).__name__}; return a str, a "
            "chat message (e.g. TextMessage), a Response or None."
        )

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """A function node keeps no state."""


register_builtin(FunctionAgent, autogen="autogen_agentchat.agents", loadable=False)
