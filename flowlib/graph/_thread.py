"""A run's thread: its chat messages in order, where loaded ones are rebuilt when read.

A resumed run of 10,000 turns holds 10,000 stored messages, and most of them are never
read again (each node reads the thread from its cursor on). Rebuilding each one as a
pydantic model on resume cost about 50 us a message, so the thread keeps a loaded
message as its dump (or the dump's JSON text, as a store's snapshot keeps it:
``MessageDumps``) and builds the message the first time it is read. Saving the thread
gives a stored dump back as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

from pydantic_core import from_json

from .._english import a
from ..checkpoint.internal import MessageDumps
from ..errors import StateError
from ..messages import BaseChatMessage, MessageFactory

__all__ = ["Thread"]


class Thread(Sequence[BaseChatMessage]):
    """The chat messages published in a run, in order.

    It reads like a list of messages. Entries added by
    [`load`][flowlib.graph.Thread.load] stay dumps until read;
    the first read rebuilds the message (its class was checked at load) and keeps it.

    Args:
        factory: Rebuilds loaded messages.
    """

    __slots__ = ("_factory", "_items")

    def __init__(self, factory: MessageFactory) -> None:
        self._factory = factory
        # A message, or the dump of a loaded message not read yet (or its JSON text).
        self._items: list[BaseChatMessage | Mapping[str, Any] | str] = []

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> BaseChatMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[BaseChatMessage]: ...

    def __getitem__(self, index: int | slice) -> BaseChatMessage | list[BaseChatMessage]:
        if isinstance(index, slice):
            return [self._built(i) for i in range(*index.indices(len(self._items)))]
        item = self._items[index]
        if isinstance(item, BaseChatMessage):
            return item
        return self._built(index if index >= 0 else index + len(self._items))

    def __iter__(self) -> Iterator[BaseChatMessage]:
        for i in range(len(self._items)):
            yield self._built(i)

    def __reversed__(self) -> Iterator[BaseChatMessage]:
        for i in range(len(self._items) - 1, -1, -1):
            yield self._built(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Thread | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"Thread({len(self._items)} messages)"

    def append(self, message: BaseChatMessage) -> None:
        """Add ``message`` at the end."""
        self._items.append(message)

    def extend(self, messages: Iterable[BaseChatMessage]) -> None:
        """Add ``messages`` at the end, in order."""
        self._items.extend(messages)

    def clear(self) -> None:
        """Remove every message."""
        self._items.clear()

    def load(self, dumps: Sequence[Any]) -> None:
        """Add stored messages (dumps made by ``message.dump()``) at the end.

        Each dump's class is checked now (see [`check`][flowlib.graph.Thread.check]); the
        message is built when it is first read.

        Raises:
            StateError: If an entry is not a dump of a chat message class this team knows.
        """
        self.check(dumps)
        self._items.extend(dumps.raw() if isinstance(dumps, MessageDumps) else dumps)

    def check(self, dumps: Sequence[Any]) -> None:
        """Check that each of ``dumps`` names a chat message class this thread can build
        (one lookup per message), changing nothing.

        Raises:
            StateError: If an entry is not a dump of a chat message class this team knows.
        """
        known: set[str] = set()  # type names checked already: a thread has few
        items: Sequence[Any] = dumps
        if isinstance(dumps, MessageDumps):
            # Entries kept as text have their types listed (under the snapshot's checksum).
            items = dumps.raw()
            for name in dumps.types:
                if not self._known(name, known):
                    position = next(i for i, item in enumerate(items) if _type_of(item) == name)
                    raise _unknown(name, position)
        for position, data in enumerate(items):
            if type(data) is str:
                continue
            name = data.get("type") if isinstance(data, dict) else None
            if not self._known(name, known):
                raise _unknown(name, position)

    def _known(self, name: object, known: set[str]) -> bool:
        """Whether the message type ``name`` is a chat message class this thread can
        build (``known``: the names found so already, added to)."""
        if name in known:
            return True
        if isinstance(name, str):
            kind = self._factory.type_named(name)
            if kind is not None and issubclass(kind, BaseChatMessage):
                known.add(name)
                return True
        return False

    def dumps(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """The messages ``start`` to ``end`` as dumps (a loaded one not read yet as stored)."""
        return [_dump_of(item) for item in self._items[start:end]]

    def _built(self, index: int) -> BaseChatMessage:
        item = self._items[index]
        if isinstance(item, BaseChatMessage):
            return item
        try:
            message = self._factory.create(from_json(item) if isinstance(item, str) else item)
        except Exception as exc:
            raise StateError(
                f"Saved state holds a message at thread position {index} that does not "
                f"load ({exc}); the state is corrupt."
            ) from exc
        if not isinstance(message, BaseChatMessage):
            raise StateError(
                f"Saved state holds {a(type(message).__name__)} at thread position {index}, "
                "where a chat message belongs; the state is corrupt."
            )
        self._items[index] = message
        return message


def _type_of(item: object) -> object:
    """The ``type`` of a dump (or of its JSON text), or None."""
    if type(item) is str:
        try:
            item = from_json(item)
        except ValueError:
            return None
    return item.get("type") if isinstance(item, dict) else None


def _unknown(name: object, position: int) -> StateError:
    what = f"type `{name}`" if isinstance(name, str) else "no message type"
    return StateError(
        f"Saved state holds a message with {what} at thread position {position}, "
        "which this team cannot rebuild; pass its class in `custom_message_types`."
    )


def _dump_of(item: BaseChatMessage | Mapping[str, Any] | str) -> dict[str, Any]:
    """A thread entry as a dump (a loaded one not read yet as stored)."""
    if isinstance(item, BaseChatMessage):
        return dict(item.dump())
    if isinstance(item, str):
        parsed: dict[str, Any] = from_json(item)
        return parsed
    return dict(item)
