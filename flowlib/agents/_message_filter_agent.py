"""A wrapper agent that lets only chosen messages through to the agent it wraps."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import Self

from ..base import CancellationToken, ChatAgent, Response
from ..component import ComponentModel, dump_field, load_field
from ..component.internal import register_builtin
from ..messages import BaseAgentEvent, BaseChatMessage
from ._base_chat_agent import BaseChatAgent

__all__ = ["MessageFilterAgent", "MessageFilterConfig", "PerSourceFilter"]


class PerSourceFilter(BaseModel):
    """Which messages of one source to keep.

    Attributes:
        source: The ``source`` (sender name) the filter applies to.
        position: ``"first"`` or ``"last"`` to keep the first or last ``count`` messages;
            ``None`` keeps every message of the source.
        count: How many messages ``position`` keeps; ``None`` keeps them all.
    """

    source: str
    position: Literal["first", "last"] | None = None
    count: int | None = Field(default=None, ge=0)

    def select(self, messages: Sequence[BaseChatMessage]) -> list[int]:
        """Return the positions in ``messages`` this filter keeps, in order."""
        positions = [i for i, message in enumerate(messages) if message.source == self.source]
        if self.position is None or self.count is None:
            return positions
        if self.position == "first":
            return positions[: self.count]
        return positions[len(positions) - self.count :] if self.count else []


class MessageFilterConfig(BaseModel):
    """The per-source filters of a [`MessageFilterAgent`][flowlib.agents.MessageFilterAgent].

    Attributes:
        per_source: One filter per source to let through; sources without a filter are
            dropped.
    """

    per_source: list[PerSourceFilter]


class MessageFilterAgentConfig(BaseModel):
    """The config of [`MessageFilterAgent`][flowlib.agents.MessageFilterAgent]."""

    model_config = ConfigDict(extra="forbid")

    name: str
    wrapped_agent: ComponentModel
    filter: MessageFilterConfig


class MessageFilterAgent(BaseChatAgent):
    """(Experimental) Filters the messages of each call before the wrapped agent sees them.

    On every call the new messages are filtered per source: a message passes when a
    [`PerSourceFilter`][flowlib.agents.PerSourceFilter] for its ``source`` selects it, so messages
    from sources without a filter are dropped. Kept messages stay in their original order (a message
    two filters select passes once). Reset, pause, resume, state and close go straight
    to the wrapped agent.

    Filters apply to the messages of one call: inside a team, those are the messages
    published since the agent's previous turn. The wrapped agent's replies carry the
    wrapped agent's own name as ``source``, so give it the same name as the wrapper when
    other filters refer to it.

    Args:
        name: The agent's (and its graph node's) name.
        wrapped_agent: The agent that handles the filtered messages.
        filter: The per-source filters.

    Examples:
        A node of a looping graph that only sees the task and the latest reply of ``B``:

        >>> from flowlib.agents import FunctionAgent
        >>> def A(messages):
        ...     return " + ".join(m.to_text() for m in messages)
        >>> agent_a = MessageFilterAgent(
        ...     name="A",
        ...     wrapped_agent=FunctionAgent(A),
        ...     filter=MessageFilterConfig(
        ...         per_source=[
        ...             PerSourceFilter(source="user", position="first", count=1),
        ...             PerSourceFilter(source="B", position="last", count=1),
        ...         ]
        ...     ),
        ... )
    """

    def __init__(self, name: str, wrapped_agent: ChatAgent, filter: MessageFilterConfig) -> None:
        super().__init__(name, wrapped_agent.description)
        self._wrapped_agent = wrapped_agent
        self._filter = filter

    @property
    def wrapped_agent(self) -> ChatAgent:
        """The agent that receives the filtered messages."""
        return self._wrapped_agent

    @property
    def filter(self) -> MessageFilterConfig:
        """The filters in use."""
        return self._filter

    component_config_schema: ClassVar[type[BaseModel]] = MessageFilterAgentConfig

    def _to_config(self) -> MessageFilterAgentConfig:
        return MessageFilterAgentConfig(
            name=self.name,
            wrapped_agent=dump_field(self._wrapped_agent, "wrapped_agent"),
            filter=self._filter,
        )

    @classmethod
    def _from_config(cls, config: MessageFilterAgentConfig) -> Self:
        wrapped = load_field(config.wrapped_agent, "wrapped_agent", ChatAgent)
        return cls(config.name, wrapped_agent=wrapped, filter=config.filter)

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        """The wrapped agent's message types."""
        return self._wrapped_agent.produced_message_types

    def apply_filter(self, messages: Sequence[BaseChatMessage]) -> list[BaseChatMessage]:
        """Return the messages the filters keep, in their original order.

        Args:
            messages: The new messages of one call.
        """
        keep: set[int] = set()
        for source_filter in self._filter.per_source:
            keep.update(source_filter.select(messages))
        return [message for i, message in enumerate(messages) if i in keep]

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        """Filter ``messages`` and return the wrapped agent's response to what is left."""
        return await self._wrapped_agent.on_messages(
            self.apply_filter(messages), cancellation_token
        )

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Filter ``messages`` and stream the wrapped agent's events and response."""
        async for item in self._wrapped_agent.on_messages_stream(
            self.apply_filter(messages), cancellation_token
        ):
            yield item

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """Reset the wrapped agent."""
        await self._wrapped_agent.on_reset(cancellation_token)

    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        """Pause the wrapped agent."""
        await self._wrapped_agent.on_pause(cancellation_token)

    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        """Resume the wrapped agent."""
        await self._wrapped_agent.on_resume(cancellation_token)

    async def save_state(self) -> Mapping[str, Any]:
        """Return the wrapped agent's state."""
        return await self._wrapped_agent.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Load state into the wrapped agent."""
        await self._wrapped_agent.load_state(state)

    async def close(self) -> None:
        """Close the wrapped agent."""
        await self._wrapped_agent.close()


register_builtin(MessageFilterAgent, autogen="autogen_agentchat.agents")
