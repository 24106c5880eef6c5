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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic_core import to_jsonable_python

from ._patch import Patch, diff_state

__all__ = ["IncrementalState", "StateChange", "json_state", "state_change"]


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
