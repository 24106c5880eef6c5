"""The events a conversation turn emits, and how flowlib's agent output maps onto them.

The names follow seed 000 (AG2). Each event is a flowlib
[`BaseAgentEvent`][flowlib.messages.BaseAgentEvent] (pydantic, with ``id``, ``source``,
``created_at``, ``dump()``), so it can be stored and rebuilt with
[`MessageFactory`][flowlib.messages.MessageFactory] once registered.

Mapping of what the wrapped agent or team yields:

- ``ToolCallRequestEvent`` -> one [`ToolCallEvent`][flowlib.conversation.ToolCallEvent] per call;
- ``ToolCallExecutionEvent`` -> one [`ToolResultEvent`][flowlib.conversation.ToolResultEvent] per
result;
- ``ModelClientStreamingChunkEvent`` ->
[`ModelMessageChunk`][flowlib.conversation.ModelMessageChunk];
- every other flowlib event or chat message (the user's ``TextMessage``, the agent's
  final message, ``ThoughtEvent``, a team's participant messages, ...) -> itself.

The conversation layer adds [`HumanInputRequest`][flowlib.conversation.HumanInputRequest] /
[`HumanInputResponse`][flowlib.conversation.HumanInputResponse] (from
[`ask_human`][flowlib.conversation.ask_human]) and closes every successful turn with a
[`ReplyEvent`][flowlib.conversation.ReplyEvent].
"""

from __future__ import annotations

from typing import Literal

from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ModelClientStreamingChunkEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)

__all__ = [
    "CONVERSATION_EVENT_TYPES",
    "Event",
    "HumanInputRequest",
    "HumanInputResponse",
    "ModelMessageChunk",
    "ReplyEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "to_events",
]

Event = BaseAgentEvent | BaseChatMessage
"""Anything a turn emits: one of this module's events or a flowlib message/event."""


class ToolCallEvent(BaseAgentEvent):
    """The model asked to call a tool.

    Attributes:
        call_id: The id pairing the call with its
            [`ToolResultEvent`][flowlib.conversation.ToolResultEvent].
        name: The tool's name.
        arguments: The arguments, as the JSON text the model produced.
    """

    call_id: str
    name: str
    arguments: str
    type: Literal["ToolCallEvent"] = "ToolCallEvent"

    def to_text(self) -> str:
        """Return ``name(arguments)``."""
        return f"{self.name}({self.arguments})"


class ToolResultEvent(BaseAgentEvent):
    """A tool call finished.

    Attributes:
        call_id: The id of the [`ToolCallEvent`][flowlib.conversation.ToolCallEvent] it answers.
        name: The tool's name.
        content: The result as text (what the model sees).
        is_error: Whether the tool failed (``content`` then says why).
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    type: Literal["ToolResultEvent"] = "ToolResultEvent"

    def to_text(self) -> str:
        """Return the result text."""
        return self.content


class ModelMessageChunk(BaseAgentEvent):
    """A piece of the model's answer, streamed while it is generated (``streaming=True``).

    Attributes:
        content: The text chunk.
        message_id: The id of the complete message the chunks add up to, when known.
    """

    content: str
    message_id: str | None = None
    type: Literal["ModelMessageChunk"] = "ModelMessageChunk"

    def to_text(self) -> str:
        """Return the chunk."""
        return self.content


class HumanInputRequest(BaseAgentEvent):
    """The turn asks a human (for example a tool asking for confirmation).

    The agent's ``human_input`` handler receives this event and returns the answer.

    Attributes:
        prompt: The question.
        request_id: Identifies the request; the
            [`HumanInputResponse`][flowlib.conversation.HumanInputResponse] repeats it.
    """

    prompt: str
    request_id: str
    type: Literal["HumanInputRequest"] = "HumanInputRequest"

    def to_text(self) -> str:
        """Return the prompt."""
        return self.prompt


class HumanInputResponse(BaseAgentEvent):
    """The human's answer to a [`HumanInputRequest`][flowlib.conversation.HumanInputRequest].

    Attributes:
        request_id: The id of the request answered.
        content: The answer.
    """

    request_id: str
    content: str
    type: Literal["HumanInputResponse"] = "HumanInputResponse"

    def to_text(self) -> str:
        """Return the answer."""
        return self.content


class ReplyEvent(BaseAgentEvent):
    """The turn's final reply; always the last event of a successful turn.

    Attributes:
        content: The reply's text (``AgentReply.body``).
        message_id: The id of the final chat message (``AgentReply.response.id``).
    """

    content: str
    message_id: str
    type: Literal["ReplyEvent"] = "ReplyEvent"

    def to_text(self) -> str:
        """Return the reply text."""
        return self.content


CONVERSATION_EVENT_TYPES: tuple[type[BaseAgentEvent], ...] = tuple(
    value
    for value in list(globals().values())
    if isinstance(value, type)
    and issubclass(value, BaseAgentEvent)
    and value.__module__ == __name__
)
"""The event classes this module defines, in the order it defines them; register them
with a [`MessageFactory`][flowlib.messages.MessageFactory] to rebuild stored events."""


def to_events(item: Event) -> list[Event]:
    """Map one item yielded by a flowlib agent or team to conversation events."""
    if isinstance(item, ToolCallRequestEvent):
        return [
            ToolCallEvent(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                source=item.source,
                models_usage=item.models_usage,
            )
            for call in item.content
        ]
    if isinstance(item, ToolCallExecutionEvent):
        return [
            ToolResultEvent(
                call_id=result.call_id,
                name=result.name,
                content=result.content,
                is_error=bool(result.is_error),
                source=item.source,
            )
            for result in item.content
        ]
    if isinstance(item, ModelClientStreamingChunkEvent):
        return [
            ModelMessageChunk(
                content=item.content, message_id=item.full_message_id, source=item.source
            )
        ]
    return [item]
