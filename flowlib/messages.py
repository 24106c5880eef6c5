"""Messages agents exchange and events they emit.

Every message derives from [`BaseChatMessage`][flowlib.messages.BaseChatMessage] (agent-to-agent
communication, seen by the other participants and by termination conditions) or
[`BaseAgentEvent`][flowlib.messages.BaseAgentEvent] (observable progress for users and applications,
not processed by other agents). Each concrete class has a literal ``type`` field equal to its class
name, which [`MessageFactory`][flowlib.messages.MessageFactory] uses to rebuild a message from its
[`BaseMessage.dump`][flowlib.messages.BaseMessage.dump].

Examples:
    >>> msg = TextMessage(content="Hello", source="user")
    >>> print(msg)
    source='user' models_usage=None metadata={} content='Hello' type='TextMessage'
    >>> MessageFactory().create(msg.dump()) == msg
    True
"""

from __future__ import annotations

import contextlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, Field, computed_field
from typing_extensions import Self

from .code_executors import CodeBlock, CodeResult
from .component._base import ComponentBase
from .component._registry import register_builtin
from .errors import InvalidArgumentError, UnknownMessageTypeError
from .memory import MemoryContent
from .models import (
    FunctionCall,
    FunctionExecutionResult,
    Image,
    LLMMessage,
    RequestUsage,
    UserMessage,
)

__all__ = [
    "AgentEvent",
    "BaseAgentEvent",
    "BaseChatMessage",
    "BaseMessage",
    "BaseTextChatMessage",
    "ChatMessage",
    "CodeExecutionEvent",
    "CodeGenerationEvent",
    "HandoffMessage",
    "MemoryQueryEvent",
    "MessageFactory",
    "ModelClientStreamingChunkEvent",
    "MultiModalMessage",
    "NodeCacheHitEvent",
    "NodeRetryEvent",
    "SelectSpeakerEvent",
    "SelectorEvent",
    "StopMessage",
    "StructuredContentType",
    "StructuredMessage",
    "StructuredMessageFactory",
    "StructuredMessageFactoryConfig",
    "TextMessage",
    "ThoughtEvent",
    "ToolCallExecutionEvent",
    "ToolCallRequestEvent",
    "ToolCallSummaryMessage",
    "UserInputRequestedEvent",
]


def _new_id() -> str:
    """A random (version 4) UUID string, as ``str(uuid.uuid4())`` gives.

    Formatted by hand: ``uuid.UUID`` objects cost more than the rest of a message's
    construction, and every message on the executor's hot path needs an id.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------


class BaseMessage(BaseModel, ABC):
    """Abstract base of every message and event.

    Do not subclass this directly: subclass [`BaseChatMessage`][flowlib.messages.BaseChatMessage]
    for messages agents exchange, or [`BaseAgentEvent`][flowlib.messages.BaseAgentEvent] for
    observable events.
    """

    @abstractmethod
    def to_text(self) -> str:
        """Render the message as text for the console, users and termination conditions.

        This is not what models see; for chat messages use
        [`BaseChatMessage.to_model_text`][flowlib.messages.BaseChatMessage.to_model_text].
        """

    def dump(self) -> dict[str, Any]:
        """Convert the message to a JSON-serialisable dict.

        Datetimes become ISO 8601 strings and images base64 dicts. The dict always has a
        ``type`` key (the class name when the class declares no ``type`` field), so
        [`MessageFactory.create`][flowlib.messages.MessageFactory.create] can rebuild the message.

        Returns:
            A dict of JSON-safe values.
        """
        data = self.model_dump(mode="json")
        data.setdefault("type", type(self).__name__)
        return data

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> Self:
        """Create a message of this class from a dict made by
        [`dump`][flowlib.messages.BaseMessage.dump].

        Args:
            data: The dumped message.

        Returns:
            The message.

        Raises:
            pydantic.ValidationError: ``data`` does not fit this class.
        """
        return cls.model_validate(data)


class BaseChatMessage(BaseMessage, ABC):
    """Abstract base of messages agents send to each other.

    Subclass it for a new agent-to-agent message type (or use
    [`StructuredMessage`][flowlib.messages.StructuredMessage] when the content is a pydantic model).
    Agents process the content of chat messages with their models and answer with another chat
    message.

    Attributes:
        id: A unique id; a new UUID by default.
        source: The name of the agent that sent the message.
        models_usage: Model tokens spent producing the message.
        metadata: Free-form string metadata.
        created_at: When the message was made (timezone-aware, UTC by default).
    """

    id: str = Field(default_factory=_new_id, repr=False)
    """Unique identifier for this message."""
    source: str
    """The name of the agent that sent this message."""
    models_usage: RequestUsage | None = None
    """The model client usage incurred when producing this message."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Additional metadata about the message."""
    created_at: datetime = Field(default_factory=_utc_now, repr=False)
    """The time when the message was created."""

    @abstractmethod
    def to_model_text(self) -> str:
        """Render the content as text for a model.

        Used to build parts of a model message;
        [`to_model_message`][flowlib.messages.BaseChatMessage.to_model_message] builds a whole one.
        Not meant for the console: use [`to_text`][flowlib.messages.BaseChatMessage.to_text] for
        that.
        """

    @abstractmethod
    def to_model_message(self) -> UserMessage:
        """Convert the message to a [`UserMessage`][flowlib.models.UserMessage] for a model
        client."""


class BaseAgentEvent(BaseMessage, ABC):
    """Abstract base of events that agents and teams emit for users and applications.

    Subclass it for a new observable event; override
    [`to_text`][flowlib.messages.BaseAgentEvent.to_text] to control how it renders. Events are not
    sent to other agents.

    Attributes:
        id: A unique id; a new UUID by default.
        source: The name of the agent (or team) that emitted the event.
        models_usage: Model tokens spent producing the event.
        metadata: Free-form string metadata.
        created_at: When the event was made (timezone-aware, UTC by default).
    """

    id: str = Field(default_factory=_new_id, repr=False)
    """Unique identifier for this event."""
    source: str
    """The name of the agent that sent this message."""
    models_usage: RequestUsage | None = None
    """The model client usage incurred when producing this message."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Additional metadata about the message."""
    created_at: datetime = Field(default_factory=_utc_now, repr=False)
    """The time when the message was created."""


class BaseTextChatMessage(BaseChatMessage, ABC):
    """Base of chat messages whose content is a string.

    Inherit from it when a new message type carries text: ``to_text``,
    ``to_model_text`` and ``to_model_message`` are implemented.

    Attributes:
        content: The text.
    """

    content: str
    """The content of the message."""

    def to_text(self) -> str:
        """Return the content."""
        return self.content

    def to_model_text(self) -> str:
        """Return the content."""
        return self.content

    def to_model_message(self) -> UserMessage:
        """Return ``UserMessage(content=self.content, source=self.source)``.

        A team broadcasts each message to every other agent, and each converts it: the
        conversion is made once and the same ``UserMessage`` is returned to every
        receiver (while ``content`` and ``source`` are unchanged), so a message costs one
        model message, not one per receiving agent. Treat it as read-only; copy it with
        ``model_copy`` to change it.
        """
        cached = _CONVERTED.get(id(self))
        if (
            cached is not None
            and cached[0] is self
            and cached[1].content is self.content
            and cached[1].source is self.source
        ):
            return cached[1]
        converted = UserMessage(content=self.content, source=self.source)
        if len(_CONVERTED) >= _CONVERTED_MAX:
            # The oldest (dicts keep insertion order), unless another thread got there first.
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del _CONVERTED[next(iter(_CONVERTED))]
        _CONVERTED[id(self)] = (self, converted)
        return converted


# The latest conversions, by message id(): a receiving agent converts a message within a
# few turns of its publication, so a small window shares nearly every conversion, and the
# messages it holds are kept alive at most that long.
_CONVERTED_MAX = 256
_CONVERTED: dict[int, tuple[BaseTextChatMessage, UserMessage]] = {}


# ---------------------------------------------------------------------------------------
# Chat messages
# ---------------------------------------------------------------------------------------


class TextMessage(BaseTextChatMessage):
    """A text message with string-only content."""

    type: Literal["TextMessage"] = "TextMessage"


class StopMessage(BaseTextChatMessage):
    """A message asking for the conversation to stop; termination conditions return one."""

    type: Literal["StopMessage"] = "StopMessage"


class HandoffMessage(BaseTextChatMessage):
    """A message handing the conversation over to another agent.

    Attributes:
        content: The handoff text.
        target: The name of the agent to hand off to.
        context: Model context passed on to the target agent.
    """

    target: str
    """The name of the target agent to handoff to."""
    context: list[LLMMessage] = Field(default_factory=list)
    """The model context to be passed to the target agent."""
    type: Literal["HandoffMessage"] = "HandoffMessage"


class ToolCallSummaryMessage(BaseTextChatMessage):
    """A summary of the results of an agent's tool calls.

    Attributes:
        content: The summary text.
        tool_calls: The tool calls that were made.
        results: Their results.
    """

    type: Literal["ToolCallSummaryMessage"] = "ToolCallSummaryMessage"
    tool_calls: list[FunctionCall]
    """The tool calls that were made."""
    results: list[FunctionExecutionResult]
    """The results of the tool calls."""


def _iterm_inline_image(image: Image) -> str:
    # iTerm2's inline image protocol: OSC 1337 ; File=inline=1 : <base64> BEL.
    return f"\x1b]1337;File=inline=1:{image.to_base64()}\x07"


class MultiModalMessage(BaseChatMessage):
    """A message mixing text and images.

    Attributes:
        content: Text and [`Image`][flowlib.models.Image] parts, in order.
    """

    content: list[str | Image]
    """The content of the message."""
    type: Literal["MultiModalMessage"] = "MultiModalMessage"

    def to_model_text(self, image_placeholder: str | None = "[image]") -> str:
        """Render the content as text for a model, one part per line.

        Args:
            image_placeholder: The text that stands for each image; None puts the
                image's base64 data there instead.

        Returns:
            The parts joined with newlines.
        """
        parts: list[str] = []
        for item in self.content:
            if isinstance(item, str):
                parts.append(item)
            elif image_placeholder is None:
                parts.append(item.to_base64())
            else:
                parts.append(image_placeholder)
        return "\n".join(parts)

    def to_text(self, iterm: bool = False) -> str:
        """Render the content for the console, one part per line.

        Args:
            iterm: Draw images inline with the iTerm2 escape sequence instead of
                writing ``<image>``.

        Returns:
            The parts joined with newlines.
        """
        parts: list[str] = []
        for item in self.content:
            if isinstance(item, str):
                parts.append(item)
            elif iterm:
                parts.append(_iterm_inline_image(item))
            else:
                parts.append("<image>")
        return "\n".join(parts)

    def to_model_message(self) -> UserMessage:
        """Return a ``UserMessage`` with the same text and image parts."""
        return UserMessage(content=list(self.content), source=self.source)


StructuredContentType = TypeVar("StructuredContentType", bound=BaseModel, covariant=True)
"""Type variable for structured content types."""


class StructuredMessage(BaseChatMessage, Generic[StructuredContentType]):
    """A chat message whose content is a pydantic model.

    Parametrise it with the content model: ``StructuredMessage[MyContent]``. Its
    ``type`` is the parametrised class name (``"StructuredMessage[MyContent]"``);
    register that class on a [`MessageFactory`][flowlib.messages.MessageFactory] (or a team's
    ``custom_message_types``) to load dumps back.

    Attributes:
        content: The content model.
        format_string: (Experimental) A ``str.format`` template over the content's fields,
            used by [`to_text`][flowlib.messages.StructuredMessage.to_text], e.g.
            ``"Hello, {text} {number}!"``.

    Examples:
        >>> class Greeting(BaseModel):
        ...     text: str
        ...     number: int
        >>> msg = StructuredMessage[Greeting](
        ...     content=Greeting(text="Hello", number=42), source="agent"
        ... )
        >>> msg.to_text()
        '{"text": "Hello", "number": 42}'
        >>> msg.model_copy(update={"format_string": "{text}, {number}!"}).to_text()
        'Hello, 42!'
    """

    content: StructuredContentType
    """The content of the message. Must be a subclass of pydantic ``BaseModel``."""
    format_string: str | None = None
    """(Experimental) A template over the content fields that
    [`to_text`][flowlib.messages.StructuredMessage.to_text] renders."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def type(self) -> str:
        """The class name, e.g. ``"StructuredMessage[MyContent]"``."""
        return type(self).__name__

    def to_text(self) -> str:
        """Render the content: the format string filled with its fields, or else JSON."""
        if self.format_string is not None:
            return self.format_string.format(**self.content.model_dump())
        return json.dumps(self.content.model_dump(mode="json"), ensure_ascii=False)

    def to_model_text(self) -> str:
        """Render the content for a model; the same text as
        [`to_text`][flowlib.messages.StructuredMessage.to_text]."""
        return self.to_text()

    def to_model_message(self) -> UserMessage:
        """Return ``UserMessage(content=self.to_model_text(), source=self.source)``."""
        return UserMessage(content=self.to_model_text(), source=self.source)


# ---------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------


class ToolCallRequestEvent(BaseAgentEvent):
    """The model asked for tool calls.

    Attributes:
        content: The tool calls.
    """

    content: list[FunctionCall]
    """The tool calls."""
    type: Literal["ToolCallRequestEvent"] = "ToolCallRequestEvent"

    def to_text(self) -> str:
        """Return the list of calls as Python shows it."""
        return str(self.content)


class ToolCallExecutionEvent(BaseAgentEvent):
    """Tool calls were executed.

    Attributes:
        content: The results of the calls.
    """

    content: list[FunctionExecutionResult]
    """The tool call results."""
    type: Literal["ToolCallExecutionEvent"] = "ToolCallExecutionEvent"

    def to_text(self) -> str:
        """Return the list of results as Python shows it."""
        return str(self.content)


class MemoryQueryEvent(BaseAgentEvent):
    """Memory was queried before a model call.

    Attributes:
        content: The memory items found.
    """

    content: list[MemoryContent]
    """The memory query results."""
    type: Literal["MemoryQueryEvent"] = "MemoryQueryEvent"

    def to_text(self) -> str:
        """Return the list of memory items as Python shows it."""
        return str(self.content)


class UserInputRequestedEvent(BaseAgentEvent):
    """A user proxy asks for user input; emitted before its input callback runs.

    Attributes:
        request_id: Identifies the input request.
        content: Always empty; present for consumers that expect a ``content`` field.
    """

    request_id: str
    """Identifier for the user input request."""
    content: Literal[""] = ""
    """Empty content for compat with consumers expecting a content field."""
    type: Literal["UserInputRequestedEvent"] = "UserInputRequestedEvent"

    def to_text(self) -> str:
        """Return the (empty) content."""
        return self.content


class ModelClientStreamingChunkEvent(BaseAgentEvent):
    """A chunk of text streamed by a model client.

    Attributes:
        content: The text chunk.
        full_message_id: The id of the complete message the chunks add up to, when known.
    """

    content: str
    """A string chunk from the model client."""
    full_message_id: str | None = None
    """The id of the complete message that may come after the chunks."""
    type: Literal["ModelClientStreamingChunkEvent"] = "ModelClientStreamingChunkEvent"

    def to_text(self) -> str:
        """Return the chunk."""
        return self.content


class ThoughtEvent(BaseAgentEvent):
    """The model's reasoning, or text that came along with its tool calls.

    Attributes:
        content: The thought text.
    """

    content: str
    """The thought process of the model."""
    type: Literal["ThoughtEvent"] = "ThoughtEvent"

    def to_text(self) -> str:
        """Return the thought."""
        return self.content


class SelectSpeakerEvent(BaseAgentEvent):
    """A team selected the next speaker(s).

    Attributes:
        content: The names of the selected speakers.
    """

    content: list[str]
    """The names of the selected speakers."""
    type: Literal["SelectSpeakerEvent"] = "SelectSpeakerEvent"

    def to_text(self) -> str:
        """Return the list of names as Python shows it."""
        return str(self.content)


class SelectorEvent(BaseAgentEvent):
    """An event of a ``SelectorGroupChat``: the selector model's full answer, streamed after
    its chunks when the selector streams (``model_client_streaming=True``).

    Attributes:
        content: The content of the event.
    """

    content: str
    """The content of the event."""
    type: Literal["SelectorEvent"] = "SelectorEvent"

    def to_text(self) -> str:
        """Return the content."""
        return self.content


class CodeGenerationEvent(BaseAgentEvent):
    """A model generated code.

    Attributes:
        retry_attempt: 0 for the first generation, then 1, 2, ... for retries.
        content: The complete model answer.
        code_blocks: The code blocks found in the answer.
    """

    retry_attempt: int
    """Retry number; 0 means the first generation."""
    content: str
    """The complete content as a string."""
    code_blocks: list[CodeBlock]
    """The code blocks present in the content."""
    type: Literal["CodeGenerationEvent"] = "CodeGenerationEvent"

    def to_text(self) -> str:
        """Return the model answer."""
        return self.content


class CodeExecutionEvent(BaseAgentEvent):
    """Code was executed.

    Attributes:
        retry_attempt: 0 for the first execution, then 1, 2, ... for retries.
        result: The execution result.
    """

    retry_attempt: int
    """Retry number; 0 means the first execution."""
    result: CodeResult
    """The code execution result."""
    type: Literal["CodeExecutionEvent"] = "CodeExecutionEvent"

    def to_text(self) -> str:
        """Return the output of the execution."""
        return self.result.output


class NodeRetryEvent(BaseAgentEvent):
    """A graph node's turn failed with an error its retry policy retries; the node runs
    the turn again after ``delay`` seconds (``add_node(..., retry=RetryPolicy(...))``).

    Attributes:
        attempt: The attempt that failed, from 1.
        max_attempts: How many attempts the policy allows.
        error: The failure, as ``"<ErrorType>: <message>"``.
        delay: Seconds until the next attempt.
    """

    attempt: int
    """The attempt that failed, from 1."""
    max_attempts: int
    """How many attempts the node's retry policy allows."""
    error: str
    """The failure, as ``"<ErrorType>: <message>"``."""
    delay: float
    """Seconds until the next attempt."""
    type: Literal["NodeRetryEvent"] = "NodeRetryEvent"

    def to_text(self) -> str:
        """Say which attempt failed, why, and when the next one starts."""
        return (
            f"attempt {self.attempt} of {self.max_attempts} failed ({self.error}); "
            f"retrying in {self.delay:.3g} s"
        )


class NodeCacheHitEvent(BaseAgentEvent):
    """A graph node's turn was answered from its cache (``add_node(...,
    cache=CachePolicy(...))``): its model and tools were not called.

    Attributes:
        key: The cache key that matched.
    """

    key: str
    """The cache key that matched."""
    type: Literal["NodeCacheHitEvent"] = "NodeCacheHitEvent"

    def to_text(self) -> str:
        """Say that the turn came from the cache."""
        return f"cache hit ({self.key[:12]})"


# ---------------------------------------------------------------------------------------
# Unions and the factory
# ---------------------------------------------------------------------------------------

ChatMessage = Annotated[
    TextMessage | MultiModalMessage | StopMessage | ToolCallSummaryMessage | HandoffMessage,
    Field(discriminator="type"),
]
"""The built-in concrete chat messages (not ``StructuredMessage``), told apart by ``type``."""

AgentEvent = Annotated[
    ToolCallRequestEvent
    | ToolCallExecutionEvent
    | MemoryQueryEvent
    | UserInputRequestedEvent
    | ModelClientStreamingChunkEvent
    | ThoughtEvent
    | SelectSpeakerEvent
    | SelectorEvent
    | CodeGenerationEvent
    | CodeExecutionEvent
    | NodeRetryEvent
    | NodeCacheHitEvent,
    Field(discriminator="type"),
]
"""The built-in concrete agent events, told apart by ``type``."""

_BUILTIN_MESSAGE_TYPES: tuple[type[BaseChatMessage | BaseAgentEvent], ...] = (
    TextMessage,
    MultiModalMessage,
    StopMessage,
    ToolCallSummaryMessage,
    HandoffMessage,
    ToolCallRequestEvent,
    ToolCallExecutionEvent,
    MemoryQueryEvent,
    UserInputRequestedEvent,
    ModelClientStreamingChunkEvent,
    ThoughtEvent,
    SelectSpeakerEvent,
    SelectorEvent,
    CodeGenerationEvent,
    CodeExecutionEvent,
    NodeRetryEvent,
    NodeCacheHitEvent,
)


def _type_name(message_type: type[BaseMessage]) -> str:
    """Return the ``type`` value a class's dumps carry (see
    [`BaseMessage.dump`][flowlib.messages.BaseMessage.dump])."""
    field = message_type.model_fields.get("type")
    default = field.default if field is not None else None
    return default if isinstance(default, str) else message_type.__name__


class MessageFactory:
    """Rebuilds messages and events from their [`dump`][flowlib.messages.BaseMessage.dump].

    The built-in message and event types are registered from the start; register custom
    subclasses of [`BaseChatMessage`][flowlib.messages.BaseChatMessage] /
    [`BaseAgentEvent`][flowlib.messages.BaseAgentEvent], and each concrete ``StructuredMessage[T]``
    in use, with [`register`][flowlib.messages.MessageFactory.register].

    Examples:
        >>> factory = MessageFactory()
        >>> msg = factory.create({"type": "TextMessage", "source": "user", "content": "Hi"})
        >>> msg.to_text()
        'Hi'
    """

    def __init__(self) -> None:
        self._types: dict[str, type[BaseChatMessage | BaseAgentEvent]] = {
            _type_name(message_type): message_type for message_type in _BUILTIN_MESSAGE_TYPES
        }
        # The registered classes themselves: one set lookup checks a message's class.
        self._classes: set[type[BaseMessage]] = set(_BUILTIN_MESSAGE_TYPES)

    @property
    def custom_types(self) -> list[type[BaseChatMessage | BaseAgentEvent]]:
        """The registered classes beyond the built-in messages and events."""
        return [t for t in self._types.values() if t not in _BUILTIN_MESSAGE_TYPES]

    def type_named(self, name: str) -> type[BaseChatMessage | BaseAgentEvent] | None:
        """The class registered under the type name ``name``, or None.

        Args:
            name: A dump's ``type`` value.
        """
        return self._types.get(name)

    def is_registered(self, message_type: type[BaseChatMessage | BaseAgentEvent]) -> bool:
        """Tell whether ``message_type`` is registered.

        Args:
            message_type: A message or event class.

        Returns:
            True when this exact class is registered under its type name.
        """
        return self._types.get(_type_name(message_type)) is message_type

    def register(self, message_type: type[BaseChatMessage | BaseAgentEvent]) -> None:
        """Register a message or event class so [`create`][flowlib.messages.MessageFactory.create]
        can rebuild it.

        Registering the same class again does nothing.

        Args:
            message_type: A concrete subclass of
                [`BaseChatMessage`][flowlib.messages.BaseChatMessage] or
                [`BaseAgentEvent`][flowlib.messages.BaseAgentEvent], or a parametrised
                ``StructuredMessage[T]``.

        Raises:
            ValueError: ``message_type`` is not such a class, or another class is already
                registered under the same type name.
        """
        if not isinstance(message_type, type) or not issubclass(
            message_type, (BaseChatMessage, BaseAgentEvent)
        ):
            raise InvalidArgumentError(
                f"Cannot register `{message_type!r}`: message types must be subclasses of "
                "BaseChatMessage or BaseAgentEvent.",
                argument="message_type",
            )
        if message_type.__abstractmethods__:
            missing = ", ".join(sorted(message_type.__abstractmethods__))
            raise InvalidArgumentError(
                f"Cannot register `{message_type.__name__}`: it is abstract (implement {missing}).",
                argument="message_type",
            )
        unparametrised = issubclass(message_type, StructuredMessage) and bool(
            message_type.__pydantic_generic_metadata__["parameters"]
        )
        if unparametrised:
            raise InvalidArgumentError(
                f"Cannot register `{message_type.__name__}` without its content type: "
                "register the parametrised class, e.g. StructuredMessage[MyContent].",
                argument="message_type",
            )
        name = _type_name(message_type)
        existing = self._types.get(name)
        if existing is not None and existing is not message_type:
            raise InvalidArgumentError(
                f"Message type `{name}` is already registered for "
                f"`{existing.__module__}.{existing.__qualname__}`; give "
                f"`{message_type.__module__}.{message_type.__qualname__}` another name.",
                argument="message_type",
            )
        self._types[name] = message_type
        self._classes.add(message_type)

    def register_produced(self, participants: Iterable[object]) -> None:
        """Register the ``StructuredMessage[T]`` classes that agents declare in
        ``produced_message_types``, as AutoGen's teams do (other custom classes still go
        through ``custom_message_types``).

        Args:
            participants: A team's participants; those without ``produced_message_types``
                (teams, routers) are skipped.
        """
        for participant in participants:
            for message_type in getattr(participant, "produced_message_types", ()):
                if (
                    isinstance(message_type, type)
                    and issubclass(message_type, StructuredMessage)
                    and not message_type.__pydantic_generic_metadata__["parameters"]
                    and _type_name(message_type) not in self._types
                ):
                    self.register(message_type)

    def check(self, messages: Iterable[BaseMessage], *, agent: str | None = None) -> None:
        """Refuse messages whose class is not registered, as AutoGen's teams do.

        One set lookup per message, so a team can call it on every turn.

        Args:
            messages: Task messages, or what an agent produced.
            agent: The agent that produced them; None for a task.

        Raises:
            UnknownMessageTypeError: A message's class is not registered (a ``ValueError``).
        """
        classes = self._classes
        for message in messages:
            if type(message) not in classes:
                kind = type(message)
                source = "The task" if agent is None else f"Agent `{agent}`"
                raise UnknownMessageTypeError(
                    f"{source} has a `{kind.__name__}` message, a type "
                    f"this team does not know. Pass `custom_message_types=[{kind.__name__}]` "
                    "when you build the team.",
                    message_type=kind,
                )

    def create(self, data: Mapping[str, Any]) -> BaseChatMessage | BaseAgentEvent:
        """Rebuild a message or event from its dump.

        Args:
            data: A dict made by [`BaseMessage.dump`][flowlib.messages.BaseMessage.dump].

        Returns:
            A message of the registered class named by ``data["type"]``.

        Raises:
            ValueError: ``data`` has no ``type``, its type is not registered, or the data
                does not fit the class (``pydantic.ValidationError`` is a ``ValueError``).
        """
        name = data.get("type")
        if not isinstance(name, str):
            raise InvalidArgumentError(
                "Cannot rebuild a message without a string `type` field; pass a dict made by "
                "message.dump().",
                argument="data",
            )
        message_type = self._types.get(name)
        if message_type is None:
            raise InvalidArgumentError(
                f"Unknown message type `{name}`: register the class with "
                "MessageFactory.register() (for a team, pass it in `custom_message_types`).",
                argument="data",
            )
        return message_type.load(data)


# ---------------------------------------------------------------------------------------
# StructuredMessageFactory (a component: imported here, after the message classes, because
# flowlib.component imports this module)
# ---------------------------------------------------------------------------------------


class StructuredMessageFactoryConfig(BaseModel):
    """The component config of a
    [`StructuredMessageFactory`][flowlib.messages.StructuredMessageFactory].

    Attributes:
        json_schema: The content model's JSON schema.
        format_string: The ``format_string`` given to messages.
        content_model_name: The content model's class name.
    """

    json_schema: dict[str, Any]
    format_string: str | None = None
    content_model_name: str


class StructuredMessageFactory(ComponentBase):
    """Makes ``StructuredMessage`` classes from a pydantic model or a JSON schema, and dumps
    them as a component (so a structured output type survives ``dump_component``).

    Give ``input_model`` (a pydantic model class) or ``json_schema`` (the schema of one, as
    ``Model.model_json_schema()`` writes it); a schema is turned into a generated model
    class named ``content_model_name``. The factory then offers the content model as
    ``ContentModel`` and the message class ``StructuredMessage[ContentModel]`` as
    ``StructuredMessage``.

    Args:
        json_schema: A JSON schema of an object, to build the content model from.
        input_model: The content model class (instead of ``json_schema``).
        format_string: A ``str.format`` template over the content's fields, for the
            messages' ``to_text()``.
        content_model_name: The name of the model built from ``json_schema``; defaults to
            ``"GeneratedContentModel"``.

    Attributes:
        ContentModel: The content model class.
        StructuredMessage: ``StructuredMessage[ContentModel]``.
        format_string: The template given.

    Raises:
        InvalidArgumentError: Neither or both of ``json_schema`` and ``input_model`` are
            given, or the schema uses something outside the supported subset (objects,
            scalars, arrays, enums, unions, ``$defs``).
        ArgumentTypeError: ``input_model`` is not a pydantic model class.

    Examples:
        >>> class Review(BaseModel):
        ...     verdict: str
        ...     score: int
        >>> factory = StructuredMessageFactory(
        ...     input_model=Review, format_string="{verdict} ({score})"
        ... )
        >>> message = factory.StructuredMessage(
        ...     content=Review(verdict="good", score=8), source="critic",
        ...     format_string=factory.format_string,
        ... )
        >>> message.to_text()
        'good (8)'
        >>> loaded = StructuredMessageFactory.load_component(factory.dump_component())
        >>> loaded.ContentModel(verdict="fine", score=6).model_dump()
        {'verdict': 'fine', 'score': 6}
    """

    component_type: ClassVar[str] = "structured_message"
    component_provider_override: ClassVar[str] = "flowlib.messages.StructuredMessageFactory"
    component_config_schema: ClassVar[type[BaseModel]] = StructuredMessageFactoryConfig

    def __init__(
        self,
        json_schema: dict[str, Any] | None = None,
        *,
        input_model: type[BaseModel] | None = None,
        format_string: str | None = None,
        content_model_name: str | None = None,
    ) -> None:
        from ._schema_model import schema_to_model
        from .errors import ArgumentTypeError, InvalidArgumentError

        if (json_schema is None) == (input_model is None):
            raise InvalidArgumentError(
                "StructuredMessageFactory needs exactly one of `json_schema` and `input_model`: "
                "StructuredMessageFactory(input_model=MyContent) or "
                "StructuredMessageFactory(json_schema=MyContent.model_json_schema()).",
                argument="input_model" if json_schema is None else "json_schema",
            )
        if input_model is not None:
            if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
                raise ArgumentTypeError(
                    f"StructuredMessageFactory: `input_model` must be a pydantic model class, "
                    f"not {input_model!r}.",
                    argument="input_model",
                )
            content: type[BaseModel] = input_model
        else:
            assert json_schema is not None
            content = schema_to_model(json_schema, content_model_name or "GeneratedContentModel")
        self.ContentModel: type[BaseModel] = content
        self.StructuredMessage: type[StructuredMessage[Any]] = StructuredMessage[content]  # type: ignore[valid-type]
        self.format_string = format_string

    def _to_config(self) -> StructuredMessageFactoryConfig:
        return StructuredMessageFactoryConfig(
            json_schema=self.ContentModel.model_json_schema(),
            format_string=self.format_string,
            content_model_name=self.ContentModel.__name__,
        )

    @classmethod
    def _from_config(cls, config: StructuredMessageFactoryConfig) -> StructuredMessageFactory:
        return cls(
            json_schema=config.json_schema,
            format_string=config.format_string,
            content_model_name=config.content_model_name,
        )


register_builtin(
    StructuredMessageFactory,
    "flowlib.messages.StructuredMessageFactory",
    aliases=("autogen_agentchat.messages.StructuredMessageFactory", "StructuredMessageFactory"),
)
