"""Per-node policies: [`RetryPolicy`][flowlib.graph.RetryPolicy] and
[`CachePolicy`][flowlib.graph.CachePolicy] (the node ``timeout`` is a plain number).

They are plain data on a [`DiGraphNode`][flowlib.graph.DiGraphNode]: they dump with the
graph and load back (a custom error type or a cache key function only with the caller's
permission, like any callable). What they do at run time is in ``_guard.py``.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from .. import errors
from ..errors import InvalidArgumentError, InvalidValueError
from ..models import CacheStore, ModelResponseError

__all__ = ["CachePolicy", "RetryPolicy", "check_timeout", "is_transient"]


def check_timeout(value: object, argument: str) -> None:
    """Refuse a deadline that is not a positive number of seconds (None: no deadline).

    Raises:
        InvalidArgumentError: ``value`` is not None, not a number, or not above 0.
    """
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value > 0
        or value == float("inf")
    ):
        raise InvalidArgumentError(
            f"`{argument}` must be a positive number of seconds or None, not {value!r}.",
            argument=argument,
        )


_TRANSIENT_NAMES = frozenset(
    {
        # The OpenAI SDK's transport and server-side errors (matched by name so flowlib
        # needs no SDK import to classify them).
        "APIConnectionError",
        "APITimeoutError",
        "RateLimitError",
        "InternalServerError",
        # httpx / httpx2 / aiohttp transports.
        "TransportError",
        "TimeoutException",
        "NetworkError",
        "ServerTimeoutError",
        "ClientConnectionError",
        # flowlib's own: a model server's unusable (cut, stalled, garbled) answer, an MCP
        # server that failed, a node turn past its deadline.
        "ModelResponseError",
        "McpServerError",
        "NodeTimeoutError",
    }
)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is what a [`RetryPolicy`][flowlib.graph.RetryPolicy] retries by
    default: a model or tool transport error (connection refused or reset, a timeout, a
    rate limit, a server error, a cut or stalled stream, an MCP server failure, a node
    deadline), never a programming error (``TypeError``, ``KeyError``, ``ValueError``...).
    """
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(error).__mro__)


def _error_name(error_type: type[BaseException]) -> str:
    if error_type.__module__ == "builtins":
        return error_type.__qualname__
    return f"{error_type.__module__}.{error_type.__qualname__}"


def _known_error(name: str, allowed: Mapping[str, type[BaseException]]) -> type[BaseException]:
    """Resolve an error type written in a config: a builtin exception, one of flowlib's
    errors, or one the caller passed (``error_types=``); never by importing a module."""
    if name in allowed:
        return allowed[name]
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    short = name.rpartition(".")[2]
    if name.startswith("flowlib."):
        found = (
            ModelResponseError if short == "ModelResponseError" else getattr(errors, short, None)
        )
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
    raise InvalidArgumentError(
        f"RetryPolicy `retry_on` names the error type `{name}`, which is neither a builtin "
        "exception nor a flowlib error; pass the class itself when loading "
        f"(`error_types={{{name!r}: TheError}}`).",
        argument="retry_on",
    )


class RetryPolicy(BaseModel):
    """Retry a node's failed turn (``add_node(node, retry=RetryPolicy(...))``).

    The turn runs again on an error ``retry_on`` lists, waiting
    ``min(max_interval, initial_interval * backoff ** (attempt - 1))`` seconds between
    attempts (with ``jitter``, a random time between half of that and all of it). Each
    retry is a [`NodeRetryEvent`][flowlib.messages.NodeRetryEvent] in the stream and an
    entry in the run's trace; a turn that succeeds on a later attempt is recorded once;
    after the last attempt the run fails with the last error, resumably.

    Attributes:
        max_attempts: Attempts in all, the first included (1: no retry).
        initial_interval: Seconds before the second attempt.
        backoff: Factor by which the wait grows per attempt.
        max_interval: The longest wait, in seconds.
        jitter: Randomise each wait (between half and all of it), so retries of many
            runs do not hit a recovering server together.
        retry_on: The error types to retry (subclasses included). ``None``: model and
            tool transport errors (see [`is_transient`][flowlib.graph.is_transient]), not
            programming errors.

    Examples:
        >>> policy = RetryPolicy(max_attempts=3, initial_interval=0.1, jitter=False)
        >>> [policy.delay(1), policy.delay(2)]
        [0.1, 0.2]
        >>> policy.retries(ConnectionResetError()), policy.retries(KeyError("x"))
        (True, False)
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    max_attempts: int = Field(default=3, ge=1)
    initial_interval: float = Field(default=0.5, ge=0)
    backoff: float = Field(default=2.0, ge=1)
    max_interval: float = Field(default=30.0, ge=0)
    jitter: bool = True
    retry_on: tuple[type[BaseException], ...] | None = None

    @field_validator("retry_on", mode="before")
    @classmethod
    def _types_from_names(cls, value: Any, info: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, type):
            value = (value,)
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise InvalidValueError(
                "`retry_on` must be a list of exception classes (or their names in a config)"
            )
        allowed: Mapping[str, type[BaseException]] = {}
        if isinstance(info.context, Mapping):
            allowed = info.context.get("error_types") or {}
        return tuple(_known_error(v, allowed) if isinstance(v, str) else v for v in value)

    @field_serializer("retry_on")
    def _types_to_names(self, value: tuple[type[BaseException], ...] | None) -> list[str] | None:
        return None if value is None else [_error_name(error_type) for error_type in value]

    def retries(self, error: BaseException) -> bool:
        """Whether ``error`` is one this policy retries."""
        if self.retry_on is None:
            return is_transient(error)
        return isinstance(error, self.retry_on)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (from 1)."""
        interval = min(self.max_interval, self.initial_interval * self.backoff ** (attempt - 1))
        if self.jitter:
            interval *= 0.5 + random.random() / 2  # spreading retries, not security
        return interval


CacheKey = Callable[[Sequence[Any]], str]
"""A cache key function: the turn's input messages to a string."""


class CachePolicy(BaseModel):
    """Answer a node's turn from a cache when its input matches an earlier turn
    (``add_node(node, cache=CachePolicy(store, ttl=...))``).

    The key is the node's name and its turn's input messages (their content, not their
    ids or times), or what ``key`` returns for them. A hit publishes the stored output
    without calling the node's model or tools, streams a
    [`NodeCacheHitEvent`][flowlib.messages.NodeCacheHitEvent] and marks the turn in the
    run's trace. A miss runs the turn and stores what it published.

    Attributes:
        store: Any flowlib cache store (``InMemoryStore``, ``SQLiteStore``,
            ``DiskCacheStore``, ``RedisStore``) made for chat results (the default
            ``value_type``): a node result is written as one JSON text, which such a
            store accepts.
        ttl: Seconds a stored result stays valid; ``None``: forever.
        key: Computes the key's input part from the turn's messages instead of their
            content (e.g. only the last message's text).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    store: Any
    ttl: float | None = Field(default=None, gt=0)
    key: CacheKey | None = None

    @field_validator("store")
    @classmethod
    def _is_store(cls, value: Any) -> Any:
        if not isinstance(value, CacheStore):
            raise InvalidValueError(
                "`store` must be a flowlib cache store (InMemoryStore, SQLiteStore, "
                f"DiskCacheStore, RedisStore), not {type(value).__name__}"
            )
        return value

    @field_validator("key")
    @classmethod
    def _key_is_callable(cls, value: Any) -> Any:
        if value is not None and not callable(value):
            raise InvalidValueError(
                f"`key` must be a function of the messages, not {type(value).__name__}"
            )
        return value
