"""``ChatCompletionContext``: the message history an agent keeps, and the view of it that
is sent to the model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..checkpoint import Journal, StateChange, appended, diff_state, json_state, patch_of
from ..component.internal import ComponentBase
from ..errors import InvalidTypeError, StateError
from ..models import (
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

__all__ = ["CONTEXT_STATE_VERSION", "ChatCompletionContext", "ChatCompletionContextState"]

CONTEXT_STATE_VERSION = 1
"""The format version written by
[`ChatCompletionContext.save_state`][flowlib.model_context.ChatCompletionContext.save_state]."""

_LLM_MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)


class ChatCompletionContextState(BaseModel):
    """The saved state of a model context: its whole history, not the view.

    Attributes:
        messages: Every message held, oldest first.
        version: Format version; loading another version is refused.
    """

    type: Literal["ChatCompletionContextState"] = "ChatCompletionContextState"
    version: int = CONTEXT_STATE_VERSION
    messages: list[LLMMessage] = Field(default_factory=list)


class ContextConfig(BaseModel):
    """The config of
    [`UnboundedChatCompletionContext`][flowlib.model_context.UnboundedChatCompletionContext]
    and the base of the other model contexts' configs: the preloaded messages."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    initial_messages: list[LLMMessage] | None = None


class ChatCompletionContext(ComponentBase, ABC):
    """Stores an agent's LLM messages and decides which of them the model sees.

    Subclasses implement [`get_messages`][flowlib.model_context.ChatCompletionContext.get_messages]
    (the view); storage, [`clear`][flowlib.model_context.ChatCompletionContext.clear] and state
    handling are shared. The history may be preloaded with ``initial_messages``;
    [`clear`][flowlib.model_context.ChatCompletionContext.clear] (what an agent's reset calls) drops
    them too.

    Model contexts are components: ``context.dump_component()`` writes the constructor
    arguments (and the preloaded messages, not the history);
    ``ChatCompletionContext.load_component(config)`` builds one.

    Args:
        initial_messages: Messages to start the history with.

    Examples:
        A view that drops the reasoning of earlier answers (for reasoning models):

        >>> import asyncio
        >>> from flowlib.model_context import UnboundedChatCompletionContext
        >>> from flowlib.models import AssistantMessage
        >>> class ReasoningModelContext(UnboundedChatCompletionContext):
        ...     async def get_messages(self):
        ...         messages = await super().get_messages()
        ...         return [
        ...             m.model_copy(update={"thought": None})
        ...             if isinstance(m, AssistantMessage) else m
        ...             for m in messages
        ...         ]
        >>> context = ReasoningModelContext(
        ...     [AssistantMessage(content="4", thought="2+2...", source="a")]
        ... )
        >>> asyncio.run(context.get_messages())[0].thought is None
        True
    """

    component_type: ClassVar[str] = "chat_completion_context"

    def __init__(self, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        self._initial_messages: list[LLMMessage] = []
        for message in initial_messages or ():
            self._initial_messages.append(_checked(message))
        self._messages: list[LLMMessage] = list(self._initial_messages)
        self._journal = Journal()

    def _initial_config(self) -> list[LLMMessage] | None:
        """The preloaded messages for a config (None when there are none)."""
        return list(self._initial_messages) or None

    async def add_message(self, message: LLMMessage) -> None:
        """Append a message to the history.

        Raises:
            TypeError: If ``message`` is not an LLM message (for example a chat message
                that was not converted with ``to_model_message()``).
        """
        self._messages.append(_checked(message))

    @abstractmethod
    async def get_messages(self) -> list[LLMMessage]:
        """Return the view of the history to send to the model (a new list)."""

    async def clear(self) -> None:
        """Forget every message, the preloaded ones included."""
        self._messages = []

    async def save_state(self) -> Mapping[str, Any]:
        """Return the history as JSON-serialisable, versioned data."""
        return ChatCompletionContextState(messages=list(self._messages)).model_dump(mode="json")

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now (as `save_state()` gives it) and the patch from ``base``.

        When ``base`` is the state this method returned last and the history has only
        grown since (by `add_message()`), this dumps only the new messages: a
        checkpoint per turn costs the same at turn 5,000 as at turn 5 (see
        [`IncrementalState`][flowlib.checkpoint.IncrementalState]). Otherwise, and for
        subclasses that override `save_state()`, it saves and compares the whole state.
        """
        messages = self._messages
        journal: Journal | None = getattr(self, "_journal", None)  # (a subclass may skip __init__)
        if journal is None:
            journal = self._journal = Journal()
        if (
            journal.fits(base, [messages])
            and type(self).save_state is ChatCompletionContext.save_state
        ):
            added = _MESSAGES.dump_python(messages[journal.start(0) :], mode="json")
            if not added:
                return StateChange(base, {})
            state = {**base, "messages": [*base["messages"], *added]}
            patch = patch_of(base, state, {"messages": appended(added)})
        else:
            state = json_state(await self.save_state())
            patch = diff_state(base, state)
        journal.keep(state, [messages])
        return StateChange(state, patch)

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Replace the history with one saved by
        [`save_state`][flowlib.model_context.ChatCompletionContext.save_state].

        A state without ``type``/``version`` (AutoGen's ``{"messages": [...]}``) is read as
        version 1.

        Raises:
            StateError: If the state has another version or is malformed.
        """
        version = state.get("version", CONTEXT_STATE_VERSION)
        if version != CONTEXT_STATE_VERSION:
            raise StateError(
                f"Model context state has version {version!r}; this flowlib reads version "
                f"{CONTEXT_STATE_VERSION}. Save it again with this version of flowlib."
            )
        try:
            loaded = ChatCompletionContextState.model_validate(dict(state))
        except ValidationError as exc:
            raise StateError(f"Model context state is malformed: {exc}") from exc
        self._messages = list(loaded.messages)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(messages={len(self._messages)})"

    # -- rollback points (used by agents to make a turn all-or-nothing) ----------------

    def _rollback_point(self) -> RollbackPoint:
        """Mark the history as it stands, in O(1): the list and its length.

        The history only grows by appending (`add_message()`) and is only replaced
        whole (`clear()`, `load_state()`), so the list object and its length are
        enough to restore it, without copying or serialising it.
        """
        messages = self._messages
        return RollbackPoint(messages, len(messages), messages[-1] if messages else None)

    def _roll_back(self, point: RollbackPoint) -> None:
        """Restore the history to ``point``: drop what was appended since, or bring back
        the list that `clear()`/`load_state()` replaced."""
        messages = point.messages
        intact = len(messages) >= point.length and (
            point.length == 0 or messages[point.length - 1] is point.last
        )
        if not intact:
            # Something rewrote the marked list in place (a subclass trimming it): the
            # marked state is gone, so keep what there is rather than guess.
            return
        journal: Journal | None = getattr(self, "_journal", None)
        if journal is not None and journal.marks and journal.start(0) > point.length:
            journal.forget()  # its messages past the point are gone
        del messages[point.length :]
        self._messages = messages

    def _messages_at(self, point: RollbackPoint) -> list[LLMMessage]:
        """The history as it was at ``point`` (a new list)."""
        return point.messages[: point.length]


_MESSAGES: TypeAdapter[list[LLMMessage]] = TypeAdapter(list[LLMMessage])


class RollbackPoint:
    """The history list of a context and its length at one moment."""

    __slots__ = ("last", "length", "messages")

    def __init__(self, messages: list[LLMMessage], length: int, last: LLMMessage | None) -> None:
        self.messages = messages
        self.length = length
        self.last = last


def _checked(message: Any) -> LLMMessage:
    if not isinstance(message, _LLM_MESSAGE_TYPES):
        raise InvalidTypeError(
            f"A model context holds LLM messages (SystemMessage, UserMessage, "
            f"AssistantMessage, FunctionExecutionResultMessage), not "
            f"{type(message).__name__}. Convert chat messages with to_model_message()."
        )
    return message


def is_tool_call_message(message: LLMMessage) -> bool:
    """Whether ``message`` is an assistant message made of function calls."""
    return (
        isinstance(message, AssistantMessage)
        and isinstance(message.content, list)
        and bool(message.content)
        and all(isinstance(item, FunctionCall) for item in message.content)
    )


def drop_orphan_results(messages: list[LLMMessage]) -> list[LLMMessage]:
    """Remove result messages whose function calls are not in ``messages``.

    A model API rejects a tool result that answers no visible call, so views that cut
    the history call this after cutting.
    """
    call_ids = {
        item.id
        for message in messages
        if isinstance(message, AssistantMessage) and isinstance(message.content, list)
        for item in message.content
    }
    return [
        message
        for message in messages
        if not (
            isinstance(message, FunctionExecutionResultMessage)
            and any(result.call_id not in call_ids for result in message.content)
        )
    ]
