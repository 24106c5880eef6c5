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
from ..errors import CheckpointError, StateError
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

    __slots__ = ("_factory", "_items", "_stored", "_stored_built")

    def __init__(self, factory: MessageFactory) -> None:
        self._factory = factory
        # The first messages, as a store's resume read them (kept whole: see `load`).
        self._stored: MessageDumps | None = None
        self._stored_built: dict[int, BaseChatMessage] = {}  # those of them read so far
        # The others: a message, or the dump of a loaded message not read yet (or its
        # JSON text).
        self._items: list[BaseChatMessage | Mapping[str, Any] | str] = []

    def _first(self) -> int:
        """How many messages ``_stored`` holds."""
        return 0 if self._stored is None else len(self._stored)

    def __len__(self) -> int:
        return self._first() + len(self._items)

    @overload
    def __getitem__(self, index: int) -> BaseChatMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[BaseChatMessage]: ...

    def __getitem__(self, index: int | slice) -> BaseChatMessage | list[BaseChatMessage]:
        if isinstance(index, slice):
            return [self._built(i) for i in range(*index.indices(len(self)))]
        return self._built(range(len(self))[index])

    def __iter__(self) -> Iterator[BaseChatMessage]:
        for i in range(len(self)):
            yield self._built(i)

    def __reversed__(self) -> Iterator[BaseChatMessage]:
        for i in range(len(self) - 1, -1, -1):
            yield self._built(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Thread | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"Thread({len(self)} messages)"

    def append(self, message: BaseChatMessage) -> None:
        """Add ``message`` at the end."""
        self._items.append(message)

    def extend(self, messages: Iterable[BaseChatMessage]) -> None:
        """Add ``messages`` at the end, in order."""
        self._items.extend(messages)

    def clear(self) -> None:
        """Remove every message."""
        self._items.clear()
        self._stored = None
        self._stored_built = {}

    def load(self, dumps: Sequence[Any]) -> None:
        """Add stored messages (dumps made by ``message.dump()``) at the end.

        Each dump's class is checked now (see [`check`][flowlib.graph.Thread.check]); the
        message is built when it is first read. An empty thread keeps a store's
        ``MessageDumps`` as it is (a long run's snapshot: one text, not split).

        Raises:
            StateError: If an entry is not a dump of a chat message class this team knows.
        """
        self.check(dumps)
        if isinstance(dumps, MessageDumps):
            if not len(self):
                self._stored, self._stored_built = dumps.copy(), {}
                return
            dumps = dumps.raw()
        self._items.extend(dumps)

    def check(self, dumps: Sequence[Any]) -> None:
        """Check that each of ``dumps`` names a chat message class this thread can build
        (one lookup per message), changing nothing.

        Raises:
            StateError: If an entry is not a dump of a chat message class this team knows.
        """
        known: set[str] = set()  # type names checked already: a thread has few
        items: Sequence[Any] = dumps
        first = 0
        if isinstance(dumps, MessageDumps):
            # Entries kept as text have their types listed (under the snapshot's checksum).
            for name in dumps.types:
                if not self._known(name, known):
                    raise _unknown(name, _position_of(dumps, name))
            items = dumps.loose()
            first = len(dumps) - len(items)
        for position, data in enumerate(items, first):
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
        first = self._first()
        found = []
        for i in range(*slice(start, end).indices(len(self))):
            if i >= first:
                found.append(_dump_of(self._items[i - first]))
            elif i in self._stored_built:
                found.append(dict(self._stored_built[i].dump()))
            else:
                assert self._stored is not None
                found.append(dict(self._stored[i]))
        return found

    def _built(self, index: int) -> BaseChatMessage:
        first = self._first()
        stored = self._stored
        item: Mapping[str, Any] | str | None = None
        if index < first:
            built = self._stored_built.get(index)
            if built is not None:
                return built
        else:
            held = self._items[index - first]
            if isinstance(held, BaseChatMessage):
                return held
            item = held
        try:
            if item is None:
                assert stored is not None
                item = stored[index]  # parsed now (a CheckpointError if damaged)
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
        if index < first:
            self._stored_built[index] = message
        else:
            self._items[index - first] = message
        return message


def _position_of(dumps: MessageDumps, name: object) -> int:
    """The position of the first of ``dumps`` of type ``name`` (one that does not parse:
    of no type)."""
    for position in range(len(dumps)):
        try:
            kind = dumps[position].get("type")
        except CheckpointError:
            kind = None
        if kind == name:
            return position
    return 0


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
