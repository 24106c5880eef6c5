"""Event streams: a conversation's [`MemoryStream`][flowlib.conversation.MemoryStream] and a turn's
[`RunStream`][flowlib.conversation.RunStream]."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable

from ..errors import InvalidValueError
from ..messages import BaseChatMessage
from ._events import Event

__all__ = ["EventIterator", "MemoryStream", "RunStream", "Subscriber"]

Subscriber = Callable[[Event], object] | Callable[[Event], Awaitable[object]]
"""A sync or async callback called with each event."""


class MemoryStream:
    """A conversation's event log: keeps every event of every turn, in order, and hands
    each new event to the subscribers, in order.

    Pass one to ``Agent.ask(..., stream=...)`` / ``Agent.run(..., stream=...)``; the
    conversation's continuations (``reply.ask``) keep using it, and ``reply.stream`` is
    it. When no stream is given, each new conversation gets its own.

    Subscribers are called one after another for each event, before the turn moves on;
    an async subscriber is awaited (so a slow one slows the turn down, and none misses or
    reorders an event). An exception raised by a subscriber fails the turn.

    The stream also holds the conversation's inbox: messages enqueued on a run after its
    turn finished wait here for the next turn on this stream.

    Examples:
        >>> stream = MemoryStream()
        >>> seen = []
        >>> unsubscribe = stream.subscribe(lambda event: seen.append(event.to_text()))
        >>> stream.events
        ()
    """

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._subscribers: list[Subscriber] = []
        self._pending: list[BaseChatMessage] = []
        self._lock: asyncio.Lock | None = None

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event published so far, oldest first."""
        return tuple(self._events)

    @property
    def pending(self) -> tuple[BaseChatMessage, ...]:
        """Enqueued messages waiting for the next turn on this stream."""
        return tuple(self._pending)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every event published from now on.

        Args:
            callback: A sync or async function of one event. Past events are in
                [`events`][flowlib.conversation.MemoryStream.events].

        Returns:
            A function that unsubscribes ``callback``.
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    async def _publish(self, event: Event, run_stream: RunStream | None = None) -> None:
        """Record ``event`` (here and in the turn's ``run_stream``) and deliver it."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            self._events.append(event)
            if run_stream is not None:
                run_stream._append(event)
            for callback in list(self._subscribers):
                outcome = callback(event)
                if inspect.isawaitable(outcome):
                    await outcome

    def _add_pending(self, messages: list[BaseChatMessage]) -> None:
        self._pending.extend(messages)

    def _take_pending(self) -> list[BaseChatMessage]:
        taken, self._pending = self._pending, []
        return taken

    def __repr__(self) -> str:
        return f"MemoryStream(events={len(self._events)}, subscribers={len(self._subscribers)})"


class RunStream:
    """The events of one turn (``run.stream``), buffered from the turn's start.

    Every [`join`][flowlib.conversation.RunStream.join] iterator starts at the turn's first event,
    so a late or second reader still sees them all. The conversation's whole log is
    [`memory`][flowlib.conversation.RunStream.memory].
    """

    def __init__(self, memory: MemoryStream) -> None:
        self._memory = memory
        self._events: list[Event] = []
        self._done = False
        self._changed: asyncio.Event | None = None

    @property
    def memory(self) -> MemoryStream:
        """The conversation's [`MemoryStream`][flowlib.conversation.MemoryStream] this turn
        publishes to."""
        return self._memory

    @property
    def events(self) -> tuple[Event, ...]:
        """The turn's events so far, oldest first."""
        return tuple(self._events)

    @property
    def done(self) -> bool:
        """Whether the turn has ended (finished, failed or was cancelled)."""
        return self._done

    def join(self, *, max_events: int | None = None) -> EventIterator:
        """Iterate over every event of the turn, live, from its first event.

        The iterator ends when the turn ends (a failure is raised by ``run.result()``,
        not here) or after ``max_events`` events. It only advances while something
        drives the turn (``run.start()`` or an awaited ``run.result()``).

        Put one time limit around the whole loop, not around each ``__anext__()``:
        cancelling one ``__anext__()`` closes the iterator, and later calls raise
        ``StopAsyncIteration``.

        Args:
            max_events: Stop after this many events (``None``: all of them).

        Raises:
            ValueError: If ``max_events`` is negative.
        """
        if max_events is not None and max_events < 0:
            raise InvalidValueError(f"max_events must be >= 0 or None, got {max_events}.")
        return EventIterator(self, max_events)

    def _append(self, event: Event) -> None:
        self._events.append(event)
        self._wake()

    def _close(self) -> None:
        self._done = True
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = asyncio.Event()
        await self._changed.wait()

    def __repr__(self) -> str:
        return f"RunStream(events={len(self._events)}, done={self._done})"


class EventIterator(AsyncIterator[Event]):
    """An iterator from [`RunStream.join`][flowlib.conversation.RunStream.join]; see there."""

    def __init__(self, stream: RunStream, max_events: int | None) -> None:
        self._stream = stream
        self._remaining = max_events
        self._position = 0
        self._closed = False

    def __aiter__(self) -> EventIterator:
        return self

    async def __anext__(self) -> Event:
        if self._closed or self._remaining == 0:
            self._closed = True
            raise StopAsyncIteration
        stream = self._stream
        try:
            while self._position >= len(stream._events):
                if stream._done:
                    self._closed = True
                    raise StopAsyncIteration
                await stream._wait()
        except asyncio.CancelledError:
            self._closed = True  # a cancelled pull closes the iterator, as documented
            raise
        event = stream._events[self._position]
        self._position += 1
        if self._remaining is not None:
            self._remaining -= 1
        return event

    async def aclose(self) -> None:
        """Stop iterating; later pulls raise ``StopAsyncIteration``."""
        self._closed = True
