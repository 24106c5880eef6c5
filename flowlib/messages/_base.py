"""The abstract bases of every message and event: ``BaseMessage``, ``BaseChatMessage``,
``BaseAgentEvent`` and ``BaseTextChatMessage`` (with its shared model-message conversion)."""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, NoReturn

from pydantic import Field
from typing_extensions import Self

from ..errors import InvalidTypeError
from ..models import (
    RequestUsage,
    UserMessage,
)
from ..models.internal import CompactModel


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


class _NoMetadata(dict[str, str]):
    """What a message with empty metadata stores: one empty, read-only dict shared by all
    of them. Reading ``message.metadata`` first gives the message its own empty dict
    (`_OwnMetadata`), so only code that reads the stored value directly (``dict(message)``,
    ``message.__dict__``) ever sees this one."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise InvalidTypeError(
            "This empty metadata dict is shared by the messages without metadata and is "
            "read-only; change `message.metadata` (each message's own dict) instead."
        )

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __copy__(self) -> _NoMetadata:
        return self

    def __deepcopy__(self, memo: Any) -> _NoMetadata:
        return self

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _no_metadata, ()


_NO_METADATA = _NoMetadata()


def _no_metadata() -> dict[str, str]:
    return _NO_METADATA


class _OwnMetadata:
    """``message.metadata``: the message's own dict, made when it is first read.

    An empty dict per message costs 64 bytes for every message a team keeps, and nearly
    every message has no metadata: they share one (read-only) until someone reads theirs.
    """

    def __get__(self, message: BaseMessage | None, owner: type | None = None) -> dict[str, str]:
        if message is None:
            # No class-level value, so pydantic takes the field from the base as it is.
            raise AttributeError("metadata")
        stored = message.__dict__
        value: dict[str, str] = stored["metadata"]
        if value is _NO_METADATA:
            value = stored["metadata"] = {}
        return value

    def __set__(self, message: BaseMessage, value: dict[str, str]) -> None:
        message.__dict__["metadata"] = value


# ---------------------------------------------------------------------------------------
# Base classes
# ---------------------------------------------------------------------------------------


class BaseMessage(CompactModel, ABC):
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

    def model_post_init(self, context: Any, /) -> None:
        """Share the fields set (`CompactModel`) and, when the metadata is empty, one
        read-only empty dict (``message.metadata`` still gives each message its own)."""
        super().model_post_init(context)
        stored = self.__dict__
        metadata = stored.get("metadata")
        if type(metadata) is dict and not metadata:
            stored["metadata"] = _NO_METADATA

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
    metadata: dict[str, str] = Field(default_factory=_no_metadata)
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
    metadata: dict[str, str] = Field(default_factory=_no_metadata)
    """Additional metadata about the message."""
    created_at: datetime = Field(default_factory=_utc_now, repr=False)
    """The time when the message was created."""


for _base in (BaseChatMessage, BaseAgentEvent):
    type.__setattr__(_base, "metadata", _OwnMetadata())


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
