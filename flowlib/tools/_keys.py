"""Idempotency keys: a key per node turn and per tool call, stable across retries and
resumes of the same call, different for every other call.

A team's executor opens a *scope* around each node turn; the key of the ``k``-th recorded
turn of node ``n`` in run ``r`` is derived from ``(r, n, k)``. An interrupted turn was
never recorded, so its re-run (a retry in the same process, or a resume in a fresh
process from the checkpoint store) is again the ``k``-th turn and gets the same key. Each
tool call inside a turn gets a child scope numbered by its position among the turn's tool
calls (the ``i``-th call of the turn, in the order the model asked for them) and its tool's
name. A nested team's turns derive from the scope of the turn (or tool call) that runs
them, so keys stay stable at every depth.

Tools and function nodes read the key with [`call_key`][flowlib.tools.call_key]; MCP
tool calls send it to the server in the request's ``_meta`` (``flowlib/call_key``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from ..errors import ContractError

__all__ = [
    "MCP_META_KEY",
    "CallScope",
    "NoCallKeyError",
    "call_key",
    "call_scope",
    "current_scope",
    "keyed_turn",
    "mcp_meta",
    "tool_call_scope",
    "tool_call_scopes",
    "turn_scope",
]

_T = TypeVar("_T")

MCP_META_KEY = "flowlib/call_key"
"""The key under which an MCP tool call's request ``_meta`` carries the call key."""


class NoCallKeyError(ContractError):
    """[`call_key`][flowlib.tools.call_key] was called outside a node turn and a tool call."""


class CallScope:
    """A node turn or a tool call, with the key that identifies it.

    The key (a sha-256) is computed on first use, so a turn whose code never asks for it
    costs no hashing.

    Args:
        key: The idempotency key, or None to derive it from ``parts`` (and ``parent``'s
            key) when first read.
        path: What the key is derived from, readable (``run r / node n #k / call i tool``).
        durable: Whether the key is derived from a run id (False: a call outside any team
            run, whose key is random and is never repeated).
        parts: The parts the key is derived from (with ``key`` None).
        parent: The scope whose key the parts extend, if any.

    Attributes:
        key: The idempotency key (64 hex digits).
        path: See above.
        durable: See above.
    """

    __slots__ = ("_calls", "_key", "_parent", "_parts", "_path", "durable")

    def __init__(
        self,
        key: str | None,
        path: str | None = None,
        durable: bool = True,
        *,
        parts: tuple[object, ...] = (),
        parent: CallScope | None = None,
    ) -> None:
        self._key = key
        self._path = path
        self.durable = durable
        self._parts = parts
        self._parent = parent
        self._calls = 0

    @property
    def key(self) -> str:
        """The idempotency key (64 hex digits)."""
        if self._key is None:
            parts = self._parts if self._parent is None else (self._parent.key, *self._parts)
            self._key = _derive(*parts)
        return self._key

    @property
    def path(self) -> str:
        """What the key is derived from, readable."""
        if self._path is None:
            assert self._parent is not None
            self._path = f"{self._parent.path} / {' '.join(map(str, self._parts))}"
        return self._path

    def __repr__(self) -> str:
        return f"CallScope(key={self.key!r}, path={self.path!r}, durable={self.durable!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallScope):
            return NotImplemented
        return (self.key, self.path, self.durable) == (other.key, other.path, other.durable)

    __hash__ = None  # type: ignore[assignment]

    def child(self, *parts: object) -> CallScope:
        """A scope inside this one, identified by ``parts``."""
        return CallScope(None, None, self.durable, parts=parts, parent=self)

    def take_calls(self, count: int) -> int:
        """Reserve ``count`` consecutive call positions; return the first."""
        first = self._calls
        self._calls += count
        return first


_SCOPE: ContextVar[CallScope | None] = ContextVar("flowlib_call_scope", default=None)


def _derive(*parts: object) -> str:
    """A key from ``parts``: sha-256 of their JSON (so no two part lists collide)."""
    text = json.dumps([str(part) for part in parts], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def current_scope() -> CallScope | None:
    """The innermost node turn or tool call running in this context, if any."""
    return _SCOPE.get()


def call_key() -> str:
    """The idempotency key of the tool call (or function-node turn) running now.

    The key is the same on every attempt of one call: a retry, and the re-run of the call
    after the run was interrupted and resumed (in this process or another one, from the
    checkpoint store). It differs for every other call, including two calls of one tool
    with the same arguments in one turn. Pass it to the service you call (an
    ``Idempotency-Key`` header), or record your result under it with
    [`CallResults`][flowlib.checkpoint.CallResults] so a finished side effect is not
    repeated.

    Inside a tool called by an agent it is the tool call's key; inside a function node
    (or any agent code outside a tool call) it is the turn's key. A tool called outside a
    team run (an agent run on its own) gets a random key, which is never repeated.

    Raises:
        NoCallKeyError: Outside any node turn and tool call.

    Examples:
        ```python
        from flowlib.tools import call_key

        async def charge(card: str, cents: int) -> str:
            return await bank.charge(card, cents, idempotency_key=call_key())
        ```
    """
    scope = _SCOPE.get()
    if scope is None:
        raise NoCallKeyError(
            "call_key() is only available inside a tool call made by an agent or inside a "
            "node's turn in a team run; call it from the tool's body (not at import or set-up "
            "time)."
        )
    return scope.key


@contextmanager
def call_scope(scope: CallScope) -> Iterator[CallScope]:
    """Run the block inside ``scope`` (what [`call_key`][flowlib.tools.call_key] reads)."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def turn_scope(run_id: str | None, node: str, turn: int) -> CallScope:
    """The scope of the ``turn``-th recorded turn (from 0) of ``node`` in ``run_id``.

    Inside another scope (a nested team run by a node turn or a tool call) the turn is
    derived from that scope instead of the (nested team's own, unstable) run id.
    """
    parent = _SCOPE.get()
    if parent is not None:
        return parent.child("node", node, turn)
    if run_id is None:
        return CallScope(_derive("random", uuid.uuid4().hex), f"node {node} #{turn}", False)
    return CallScope(
        None, f"run {run_id} / node {node} #{turn}", parts=("run", run_id, "node", node, turn)
    )


def tool_call_scopes(names: list[str]) -> list[CallScope]:
    """The scopes of a batch of tool calls made by one model response, in call order.

    Positions are counted over the whole enclosing turn (a turn that calls the model three
    times numbers its calls 0, 1, 2, ... across the three responses).
    """
    parent = _SCOPE.get()
    if parent is None:
        parent = CallScope(_derive("random", uuid.uuid4().hex), "no run", False)
    first = parent.take_calls(len(names))
    return [parent.child("call", first + i, name) for i, name in enumerate(names)]


def tool_call_scope(name: str) -> CallScope:
    """The scope of one tool call made directly (not by a model response)."""
    return tool_call_scopes([name])[0]


def keyed_turn(stream: AsyncGenerator[_T, None], scope: CallScope) -> AsyncGenerator[_T, None]:
    """Re-yield ``stream`` (a node turn) with ``scope`` set only while ``stream`` runs a
    step, so the consumer of a team's ``run_stream`` never sees a turn's key between
    items."""
    return _Keyed(stream, scope)


class _Keyed:
    """`keyed_turn`'s stream: a plain async iterator (no generator frame of its own and
    no event-loop async-generator hooks; a turn's hot path passes through it)."""

    __slots__ = ("_done", "_scope", "_stream")

    def __init__(self, stream: AsyncGenerator[Any, None], scope: CallScope) -> None:
        self._stream = stream
        self._scope = scope
        self._done = False

    def __aiter__(self) -> _Keyed:
        return self

    async def __anext__(self) -> Any:
        token = _SCOPE.set(self._scope)
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            self._done = True
            raise
        finally:
            _SCOPE.reset(token)

    async def asend(self, value: Any) -> Any:
        return await self.__anext__()

    async def athrow(self, *args: Any) -> Any:
        token = _SCOPE.set(self._scope)
        try:
            return await self._stream.athrow(*args)
        finally:
            _SCOPE.reset(token)

    async def aclose(self) -> None:
        if self._done:
            return
        self._done = True
        token = _SCOPE.set(self._scope)
        try:
            await self._stream.aclose()
        finally:
            _SCOPE.reset(token)


def mcp_meta() -> dict[str, str] | None:
    """The ``_meta`` of an MCP ``tools/call`` request made now: the call key, if any."""
    scope = _SCOPE.get()
    return None if scope is None else {MCP_META_KEY: scope.key}
