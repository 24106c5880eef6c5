"""A stored thread's message dumps, kept as the JSON text they were stored as until read.

A 10,000-turn run's snapshot holds 10,000 message dumps. Parsing them all into dicts on
resume took longer than everything else the resume does (about 2 us a message, and the
garbage collector then walks every new dict), while the resumed run reads only the last
few. So a snapshot stores one message per line (see ``flowlib.checkpoint._sql``), and a
resume keeps each line as its text: it is parsed the first time it is read, and written
back as it is when the state is stored again. The snapshot's message lines are not even
split: they stay one text, and a line is found (from the end) when it is first read.
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

    The first entries may be held as one text, their JSON lines joined by newlines
    (``of_lines``, what a snapshot stores): it is not split, since a resume reads only
    the last few of them; a line is found, from the end, when it is first read, and
    the text is written back whole when the state is stored again.

    Args:
        items: Dicts, or the JSON text of a dict.
        types: The ``type`` of every text entry among ``items``.
        block: The first ``count`` entries as one text (see ``of_lines``); ``items``
            come after them.
        count: How many entries ``block`` holds.
        starts: Where the block's last lines start, last first (found so far).
        read: The block's entries parsed so far, by position.
    """

    __slots__ = ("_block", "_count", "_items", "_read", "_starts", "types")

    def __init__(
        self,
        items: Iterable[str | dict[str, Any]] = (),
        types: Iterable[str | None] = (),
        *,
        block: str = "",
        count: int = 0,
        starts: Iterable[int] = (),
        read: dict[int, dict[str, Any]] | None = None,
    ) -> None:
        self._block = block  # the first `_count` entries: JSON lines joined by "\n"
        self._count = count
        self._starts = list(starts)  # where the block's last lines start, last first
        self._read = {} if read is None else dict(read)  # block entries parsed, by position
        self._items: list[str | dict[str, Any]] = list(items)
        self.types: set[str | None] = set(types)

    @classmethod
    def of_lines(cls, block: str, count: int, types: Iterable[str | None]) -> MessageDumps:
        """``count`` entries held as ``block``, their JSON lines joined by newlines (JSON
        never holds a raw newline). The number of lines is checked when one is first
        read (``CheckpointError`` if it is not ``count``)."""
        return cls((), types, block=block, count=count) if count else cls((), types)

    def __len__(self) -> int:
        return self._count + len(self._items)

    def __getitem__(self, index: Any) -> Any:
        """The dump at ``index`` (parsed now if it was kept as text); a list for a slice."""
        positions = range(len(self))
        if isinstance(index, slice):
            return [self._parsed(i) for i in positions[index]]
        return self._parsed(positions[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._count:
            self.raw()  # read whole: one split is cheaper than finding each line
        for i in range(len(self)):
            yield self._parsed(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageDumps | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"MessageDumps({len(self)} messages)"

    def extend(self, dumps: Iterable[dict[str, Any]]) -> None:
        """Add parsed dumps at the end."""
        self._items.extend(dumps)

    def copy(self) -> MessageDumps:
        """A new sequence of the same entries (the text and parsed ones shared)."""
        return MessageDumps(
            self._items,
            self.types,
            block=self._block,
            count=self._count,
            starts=self._starts,
            read=self._read,
        )

    def lines(self) -> tuple[str, int, list[str | dict[str, Any]]]:
        """The entries as held, not to be changed: the text of the first ones (their
        JSON lines joined by newlines; "" if none), how many it holds, and the others
        (a dict, or the JSON text of one)."""
        if self._count:
            self._check_count()
        return self._block, self._count, self._items

    def loose(self) -> list[str | dict[str, Any]]:
        """The entries after those held as one text (``lines``), as held."""
        return self._items

    def raw(self) -> list[str | dict[str, Any]]:
        """Every entry as held, a dict or the JSON text of one (not to be changed); the
        text of the first ones is split into its lines now."""
        if self._count:
            lines: list[str | dict[str, Any]] = list(self._block.split("\n"))
            if len(lines) != self._count:
                raise _miscounted(self._count, len(lines))
            for position, parsed in self._read.items():
                lines[position] = parsed
            self._items[:0] = lines
            self._block, self._count, self._starts, self._read = "", 0, [], {}
        return self._items

    def _parsed(self, index: int) -> dict[str, Any]:
        if index < self._count:
            found = self._read.get(index)
            if found is None:
                found = self._read[index] = _parse(self._line(index), index)
            return found
        item = self._items[index - self._count]
        if type(item) is str:
            parsed = _parse(item, index)
            self._items[index - self._count] = parsed
            return parsed
        assert type(item) is dict
        return item

    def _line(self, index: int) -> str:
        """The text of the block's line ``index``, found from the end of the block."""
        block, starts = self._block, self._starts
        if not starts:
            self._check_count()
            starts.append(block.rfind("\n") + 1)
        last = self._count - 1
        while last - len(starts) + 1 > index:
            starts.append(block.rfind("\n", 0, starts[-1] - 1) + 1)
        start = starts[last - index]
        end = len(block) if index == last else starts[last - index - 1] - 1
        return block[start:end]

    def _check_count(self) -> None:
        lines = self._block.count("\n") + 1
        if lines != self._count:
            raise _miscounted(self._count, lines)


def _parse(text: str, index: int) -> dict[str, Any]:
    try:
        parsed = from_json(text)
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
    return parsed


def _miscounted(count: int, lines: int) -> CheckpointError:
    return CheckpointError(
        f"Stored thread text holds {lines} message lines where its state lists {count} "
        "messages; the stored state is corrupt."
    )


def materialized(folded: FoldedRun) -> FoldedRun:
    """``folded`` with its messages as a plain list of dicts (what ``store.load`` gives
    callers: a list of their own, whatever the store kept as text)."""
    if isinstance(folded.messages, MessageDumps):
        folded.messages = list(folded.messages)
    return folded
