"""A participant's state and what changed in it since the last checkpoint.

A checkpoint stores a patch of each participant whose turn it records (see
[`diff_state`][flowlib.checkpoint.diff_state]). Made the plain way, that patch costs a
full `save_state()` and a comparison of the whole state, every turn: for an agent whose
model context grows by a message per turn, the cost of a turn grows with the length of
the conversation. An object that knows what it changed since its previous state can say
so instead, in time proportional to the change: it implements
[`IncrementalState`][flowlib.checkpoint.IncrementalState] (flowlib's `AssistantAgent`
and model contexts do). [`state_change`][flowlib.checkpoint.state_change] uses it when
there, and the plain way otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic_core import to_jsonable_python

from ._patch import Patch, diff_state, patch_of

__all__ = [
    "IncrementalState",
    "Journal",
    "StateChange",
    "appended",
    "json_state",
    "patch_of",
    "state_change",
]


def json_state(state: Mapping[str, Any]) -> Any:
    """A saved state as plain JSON values (so patches compare exactly)."""
    return to_jsonable_python(dict(state))


@dataclass(frozen=True, slots=True)
class StateChange:
    """An object's state now, and the patch from a given earlier state to it.

    Attributes:
        state: The whole state, as plain JSON values (``json_state(save_state())``).
            It may share unchanged parts with the earlier state: treat both as
            read-only.
        patch: ``diff_state(base, state)`` for the ``base`` that was asked about.
    """

    state: Any
    patch: Patch


@runtime_checkable
class IncrementalState(Protocol):
    """An object that can tell what changed in its state since an earlier one.

    `save_state_since(base)` returns the same as the plain way,
    ``StateChange(state, diff_state(base, state))`` with
    ``state = json_state(await self.save_state())``, but may recognise ``base`` as a
    state it returned itself and then work in time proportional to the change. It
    must give the plain answer for any ``base`` it does not recognise.
    """

    async def save_state_since(self, base: Any) -> StateChange:
        """The state now, and the patch from ``base`` to it."""
        ...


async def state_change(source: Any, base: Any) -> StateChange:
    """``source``'s state now and the patch from ``base``: through
    ``source.save_state_since`` when it implements
    [`IncrementalState`][flowlib.checkpoint.IncrementalState], else by saving the whole
    state and comparing it with ``base``.

    Examples:
        >>> import asyncio
        >>> class Counter:
        ...     async def save_state(self):
        ...         return {"count": 2}
        >>> asyncio.run(state_change(Counter(), {"count": 1})).patch
        {'update': {'count': {'set': 2}}}
    """
    since = getattr(source, "save_state_since", None)  # cheaper than a Protocol isinstance
    if since is not None:
        change: StateChange = await since(base)
        return change
    state = json_state(await source.save_state())
    return StateChange(state, diff_state(base, state))


class Journal:
    """What an object's ``save_state_since`` returned last, and where the lists its state
    grows from stood then.

    An object whose state is mostly lists that only grow (a history, a thread) keeps one
    journal. ``fits(base, lists)`` says whether ``base`` is the state it returned last
    and every list only grew since: the same list object, no shorter, and the same last
    item where it ended. (Lists are only appended to or replaced whole; clearing one in
    place and growing it again puts other objects at that position.) Then only the
    items past ``start(i)`` need dumping.
    """

    __slots__ = ("marks", "state")

    def __init__(self) -> None:
        self.state: Any = None
        self.marks: tuple[tuple[Sequence[Any], int, Any], ...] = ()

    def fits(self, base: Any, lists: Sequence[Sequence[Any]]) -> bool:
        """Whether ``base`` is the kept state and ``lists`` only grew since."""
        if base is None or base is not self.state or len(lists) != len(self.marks):
            return False
        for items, (source, length, last) in zip(lists, self.marks, strict=True):
            if items is not source or len(items) < length:
                return False
            if length and items[length - 1] is not last:
                return False
        return True

    def start(self, index: int) -> int:
        """How long list ``index`` was when the kept state was made."""
        return self.marks[index][1]

    def keep(self, state: Any, lists: Sequence[Sequence[Any]]) -> None:
        """Remember ``state`` and where ``lists`` stand now."""
        self.state = state
        self.marks = tuple((items, len(items), items[-1] if items else None) for items in lists)

    def forget(self) -> None:
        """Drop the kept state: the next ``fits`` is false."""
        self.state = None
        self.marks = ()

    def whole(
        self, base: Any, state: Any, lists: Sequence[Sequence[Any]], *, keep: bool = True
    ) -> StateChange:
        """The change to ``state``, dumped whole (``fits`` was false): the patch from
        ``base`` by diffing; ``state`` is kept for the next call to grow from (unless
        ``keep`` is false)."""
        if keep:
            self.keep(state, lists)
        return StateChange(state, diff_state(base, state))

    def grown(
        self, base: Any, state: Any, patch: Patch, lists: Sequence[Sequence[Any]]
    ) -> StateChange:
        """The change to ``state``, built from ``base`` (``fits`` was true) with ``patch``:
        no change, and ``base`` stays the kept state, when ``patch`` is empty; else
        ``state`` is kept and returned with ``patch``."""
        if not patch:
            return StateChange(base, {})
        self.keep(state, lists)
        return StateChange(state, patch)


def appended(added: list[Any]) -> Patch:
    """The patch of a list that grew by ``added`` (``{}`` when nothing was added)."""
    return {"append": added} if added else {}
