"""A node turn under its policies: answered from the cache, bounded by a deadline,
retried on transient errors.

The executor runs a turn through a [`NodeGuard`][] only when the node has a policy (a
``timeout``, a ``retry`` or a ``cache``, or the team's ``turn_timeout``); every other turn
takes the executor's plain path, so nodes without policies pay nothing for them.

Order, per turn: the cache is looked up once; on a miss each attempt runs under the
deadline (a timed-out attempt is a failed attempt, so the retry policy applies to it);
a successful turn is written to the cache and handed to the executor once, to be
recorded once, whatever attempt it took.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ..errors import NodeTimeoutError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
    NodeCacheHitEvent,
    NodeRetryEvent,
)
from ._node import Node, TurnOutput
from ._policies import CachePolicy, RetryPolicy

__all__ = ["Attempts", "NodeGuard", "cache_key", "consume"]

Item = BaseAgentEvent | BaseChatMessage
TurnFactory = Callable[[list[BaseChatMessage]], AsyncGenerator[Item | TurnOutput, None]]
Emit = Callable[[Item], None]

CACHE_FORMAT = 1
"""The version of a cached node result (a change makes old entries misses)."""

_now = time.time  # the clock a TTL is measured on (tests move it)

_VOLATILE = ("id", "created_at", "models_usage")
"""Message fields left out of the cache key: they differ between equal messages."""


def cache_key(node: str, messages: Sequence[BaseChatMessage], policy: CachePolicy) -> str:
    """The cache key of ``node``'s turn on ``messages`` under ``policy``."""
    if policy.key is not None:
        part: Any = str(policy.key(list(messages)))
    else:
        part = []
        for message in messages:
            data = dict(message.dump())
            for field in _VOLATILE:
                data.pop(field, None)
            part.append(data)
    text = json.dumps(
        {"format": CACHE_FORMAT, "node": node, "input": part},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return "flowlib-node:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(slots=True)
class Attempts:
    """What a guarded turn reports to the trace: how many attempts it took, whether it
    was a cache hit."""

    attempts: int = 1
    cache_hit: bool = False


@dataclass(slots=True, eq=False)
class NodeGuard:
    """Runs one node's turns under its timeout, retry and cache policies.

    Args:
        name: The node's name.
        node: The node's adapter (its state is restored before a retry).
        timeout: Seconds per attempt, or None.
        retry: The retry policy, or None (one attempt).
        cache: The cache policy, or None.
        factory: Rebuilds cached messages.
    """

    name: str
    node: Node
    _: KW_ONLY
    timeout: float | None
    retry: RetryPolicy | None
    cache: CachePolicy | None
    factory: MessageFactory

    async def run(
        self,
        turn: TurnFactory,
        messages: list[BaseChatMessage],
        emit: Emit,
        report: Attempts,
        *,
        retry_messages: Callable[[list[BaseChatMessage]], list[BaseChatMessage]] | None = None,
        node: Node | None = None,
    ) -> TurnOutput | None:
        """Run a turn; return its output (None: the turn yielded no output).

        Args:
            turn: Starts one attempt on the given messages.
            messages: The turn's input.
            emit: Forwards an item the turn streams (and the guard's events).
            report: Filled with the attempt count and whether the cache answered.
            retry_messages: The input of a later attempt (a nested team that already took
                its messages gets none); default: the same messages.
            node: The node the turn runs on, if not the guard's own (a map instance).

        Raises:
            NodeTimeoutError: The last attempt ran past the deadline.
            Exception: The last attempt's error, or the first one no retry covers.
        """
        key: str | None = None
        if self.cache is not None:
            key = cache_key(self.name, messages, self.cache)
            hit = await asyncio.to_thread(self._cached, key)
            if hit is not None:
                report.cache_hit = True
                emit(NodeCacheHitEvent(source=self.name, key=key))
                return hit
        retry = self.retry
        runs_on = node if node is not None else self.node
        saved: Any = None
        if retry is not None and retry.max_attempts > 1 and runs_on.kind == "agent":
            # A failed attempt may have changed the agent (its model context holds the
            # messages): each retry starts from the state the turn started from.
            saved = await runs_on.save_state()
        attempt = 1
        given = messages
        while True:
            try:
                output = await self._attempt(turn, given, emit)
                break
            except Exception as error:
                if retry is None or attempt >= retry.max_attempts or not retry.retries(error):
                    raise
                delay = retry.delay(attempt)
                emit(
                    NodeRetryEvent(
                        source=self.name,
                        attempt=attempt,
                        max_attempts=retry.max_attempts,
                        error=f"{type(error).__name__}: {error}",
                        delay=delay,
                    )
                )
                if saved is not None:
                    await runs_on.load_state(saved)
                await asyncio.sleep(delay)
                attempt += 1
                report.attempts = attempt
                if retry_messages is not None:
                    given = retry_messages(messages)
        if key is not None and output is not None:
            await asyncio.to_thread(self._store, key, output)
        return output

    async def _attempt(
        self, turn: TurnFactory, messages: list[BaseChatMessage], emit: Emit
    ) -> TurnOutput | None:
        if self.timeout is None:
            return await consume(turn(messages), emit)
        # The attempt runs in its own task so the deadline cancels only it.
        attempt = asyncio.ensure_future(consume(turn(messages), emit))
        try:
            done, _ = await asyncio.wait((attempt,), timeout=self.timeout)
        except asyncio.CancelledError:
            attempt.cancel()
            await asyncio.gather(attempt, return_exceptions=True)
            raise
        if not done:
            attempt.cancel()
            await asyncio.gather(attempt, return_exceptions=True)
            raise NodeTimeoutError(self.name, self.timeout)
        return attempt.result()

    # --- the cache ----------------------------------------------------------------------

    def _cached(self, key: str) -> TurnOutput | None:
        assert self.cache is not None
        raw = self.cache.store.get(key)
        if isinstance(raw, list) and len(raw) == 1:
            raw = raw[0]  # written as a one-item list (what chat-result stores accept)
        if not isinstance(raw, str):
            return None
        try:
            entry = json.loads(raw)
            if entry.get("format") != CACHE_FORMAT:
                return None
            ttl = self.cache.ttl
            if ttl is not None and _now() - float(entry["written"]) > ttl:
                return None
            published: list[BaseChatMessage] = []
            for data in entry["published"]:
                fresh = {k: v for k, v in data.items() if k not in ("id", "created_at")}
                message = self.factory.create(fresh)
                assert isinstance(message, BaseChatMessage)
                published.append(message)
        except Exception:
            return None  # an unreadable entry is a miss; the turn runs and rewrites it
        final = published[-1] if published else None
        return TurnOutput(published, final, delta=list(published), tail=tuple(published))

    def _store(self, key: str, output: TurnOutput) -> None:
        assert self.cache is not None
        entry = {
            "format": CACHE_FORMAT,
            "node": self.name,
            "written": _now(),
            "published": [dict(message.dump()) for message in output.published],
        }
        self.cache.store.set(key, [json.dumps(entry, default=str)])


async def consume(stream: AsyncGenerator[Item | TurnOutput, None], emit: Emit) -> TurnOutput | None:
    output: TurnOutput | None = None
    async for item in stream:
        if isinstance(item, TurnOutput):
            output = item
        else:
            emit(item)
    return output
