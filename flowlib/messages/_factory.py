"""``MessageFactory``, which rebuilds a message or event from its dump by its ``type``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, get_args

from ..errors import InvalidArgumentError, UnknownMessageTypeError
from ._base import BaseAgentEvent, BaseChatMessage, BaseMessage
from ._chat import ChatMessage, StructuredMessage
from ._events import AgentEvent

# The unions are written next to their classes; the factory knows their members.
_BUILTIN_MESSAGE_TYPES: tuple[type[BaseChatMessage | BaseAgentEvent], ...] = (
    *get_args(get_args(ChatMessage)[0]),
    *get_args(get_args(AgentEvent)[0]),
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
