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
        self._callbacks: list[Callable[[], object]] = []

    def cancel(self) -> None:
        """Cancel everything linked to this token. Calling it again does nothing."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def is_cancelled(self) -> bool:
        """Return whether [`cancel`][flowlib.base.CancellationToken.cancel] has been called."""
        return self._cancelled

    def add_callback(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` when the token is cancelled (at once if it already is)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], object]) -> None:
        """Forget a callback added with
        [`add_callback`][flowlib.base.CancellationToken.add_callback], if it is still pending."""
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def link_future(self, future: _F) -> _F:
        """Cancel ``future`` when this token is cancelled, and return it."""
        self.add_callback(future.cancel)
        return future
