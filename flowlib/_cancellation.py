"""Cooperative cancellation shared by agents, teams, tools and model calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["CancellationToken"]

_F = TypeVar("_F", bound="asyncio.Future[Any]")


class CancellationToken:
    """A token that aborts the work linked to it when
    [`cancel`][flowlib.base.CancellationToken.cancel] is called.

    Awaitables linked with [`link_future`][flowlib.base.CancellationToken.link_future] are
    cancelled, so the code awaiting them sees ``asyncio.CancelledError``; callbacks added with
    [`add_callback`][flowlib.base.CancellationToken.add_callback] run once. Linking to a token that
    is already cancelled cancels at once.

    Examples:
        >>> token = CancellationToken()
        >>> token.is_cancelled()
        False
        >>> token.cancel()
        >>> token.is_cancelled()
        True
    """

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        # Pending callbacks by a sequence number (dicts keep insertion order), and the
        # numbers of each callback, so removing one costs O(1), not a list scan: a
        # model reply of 20,000 tool calls adds and removes 20,000 of them (issue 21.7).
        self._callbacks: dict[int, Callable[[], object]] = {}
        self._numbers: dict[Any, list[int]] = {}
        self._next = 0

    def cancel(self) -> None:
        """Cancel everything linked to this token. Calling it again does nothing."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
            self._numbers.clear()
        for callback in callbacks:
            callback()

    def is_cancelled(self) -> bool:
        """Return whether [`cancel`][flowlib.base.CancellationToken.cancel] has been called."""
        return self._cancelled

    def add_callback(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` when the token is cancelled (at once if it already is)."""
        with self._lock:
            if not self._cancelled:
                number = self._next
                self._next += 1
                self._callbacks[number] = callback
                self._numbers.setdefault(_key(callback), []).append(number)
                return
        callback()

    def remove_callback(self, callback: Callable[[], object]) -> None:
        """Forget a callback added with
        [`add_callback`][flowlib.base.CancellationToken.add_callback], if it is still
        pending (the latest addition of it, if it was added more than once). Constant
        time."""
        with self._lock:
            key = _key(callback)
            numbers = self._numbers.get(key)
            if not numbers:
                return
            del self._callbacks[numbers.pop()]
            if not numbers:
                del self._numbers[key]

    def link_future(self, future: _F) -> _F:
        """Cancel ``future`` when this token is cancelled, and return it."""
        self.add_callback(future.cancel)
        return future


def _key(callback: Callable[[], object]) -> Any:
    """A dict key equal for equal callbacks (``task.cancel`` bound twice compares equal);
    an unhashable callable is keyed by its identity."""
    try:
        hash(callback)
    except TypeError:
        return ("id", id(callback))
    return callback
