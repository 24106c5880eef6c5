"""A stored thread's message dumps, kept as the JSON text they were stored as until read.

A 10,000-turn run's snapshot holds 10,000 message dumps. Parsing them all into dicts on
resume took longer than everything else the resume does (about 2 us a message, and the
garbage collector then walks every new dict), while the resumed run reads only the last
few. So a snapshot stores one message per line (see ``flowlib.checkpoint._sql``), and a
resume keeps each line as its text: it is parsed the first time it is read, and written
back as it is when the state is stored again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic_core import from_json

from ..errors import CheckpointError
from ._types import FoldedRun

__all__ = ["MessageDumps", "materialized"]


class MessageDumps(Sequence[dict[str, Any]]):
    """Message dumps (``message.dump()`` dicts) in thread order, some kept as JSON text.

    It reads like a list of dicts: an entry kept as text is parsed when first read (and
    kept parsed). ``types`` names the message types of the text entries (the snapshot
    lists them, under its checksum), so a thread can check that it knows every entry's
    class without parsing them.

    Args:
        items: Dicts, or the JSON text of a dict.
        types: The ``type`` of every text entry among ``items``.
    """

    __slots__ = ("_items", "types")

    def __init__(
        self, items: Iterable[str | dict[str, Any]] = (), types: Iterable[str | None] = ()
    ) -> None:
        self._items: list[str | dict[str, Any]] = list(items)
        self.types: set[str | None] = set(types)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        """The dump at ``index`` (parsed now if it was kept as text); a list for a slice."""
        positions = range(len(self._items))
        if isinstance(index, slice):
            return [self._parsed(i) for i in positions[index]]
        return self._parsed(positions[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self._items)):
            yield self._parsed(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageDumps | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"MessageDumps({len(self._items)} messages)"

    def extend(self, dumps: Iterable[dict[str, Any]]) -> None:
        """Add parsed dumps at the end."""
        self._items.extend(dumps)

    def copy(self) -> MessageDumps:
        """A new sequence of the same entries (parsed ones shared)."""
        return MessageDumps(self._items, self.types)

    def raw(self) -> list[str | dict[str, Any]]:
        """The entries as held: a dict, or the JSON text of one (not to be changed)."""
        return self._items

    def _parsed(self, index: int) -> dict[str, Any]:
        item = self._items[index]
        if type(item) is str:
            try:
                parsed = from_json(item)
            except ValueError as exc:
                raise CheckpointError(
                    f"Stored message at thread position {index} is not valid JSON ({exc}); "
                    "the stored state is corrupt."
                ) from None
            if type(parsed) is not dict:
                raise CheckpointError(
                    f"Stored message at thread position {index} is not a message object; "
                    "the stored state is corrupt."
                )
            self._items[index] = parsed
            return parsed
        assert type(item) is dict
        return item


def materialized(folded: FoldedRun) -> FoldedRun:
    """``folded`` with its messages as a plain list of dicts (what ``store.load`` gives
    callers: a list of their own, whatever the store kept as text)."""
    if isinstance(folded.messages, MessageDumps):
        folded.messages = list(folded.messages)
    return folded
