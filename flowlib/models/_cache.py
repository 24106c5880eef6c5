"""Caching of model results: key-value stores and the ``ChatCompletionCache`` wrapper.

A cache is off unless a client is wrapped: ``ChatCompletionCache(client, store)``. The key
is a SHA-256 of the request (messages, tools, tool choice, JSON output, extra args), so a
store should serve one model: the model name is not part of the key.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import closing
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter
from typing_extensions import Self

from .._cancellation import CancellationToken
from ..component import ComponentModel, dump_field, load_field, refuse_field
from ..component.internal import register_builtin
from ..errors import InvalidValueError
from ._client import ChatCompletionClient, CreateRequest, ModelInfo, ToolChoice, ToolLike
from ._openai_mapping import tool_schema
from ._tracing import untraced
from ._types import CreateResult, LLMMessage, RequestUsage

__all__ = [
    "CHAT_CACHE_VALUE_TYPE",
    "CacheStore",
    "ChatCompletionCache",
    "InMemoryStore",
    "SQLiteStore",
]

T = TypeVar("T")

CHAT_CACHE_VALUE_TYPE = CreateResult | list[str | CreateResult]
"""What [`ChatCompletionCache`][flowlib.models.ChatCompletionCache] stores: a result, or a stream's
chunks then its result."""


class CacheStore(ABC, Generic[T]):
    """A key-value store for cached values.

    Examples:
        >>> store: CacheStore[int] = InMemoryStore()
        >>> store.set("answer", 42)
        >>> store.get("answer"), store.get("missing", 0)
        (42, 0)
    """

    @abstractmethod
    def get(self, key: str, default: T | None = None) -> T | None:
        """Return the value stored under ``key``, or ``default``."""

    @abstractmethod
    def set(self, key: str, value: T) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""


class EmptyConfig(BaseModel):
    """The config of a component without arguments."""

    model_config = ConfigDict(extra="forbid")


class SQLiteStoreConfig(BaseModel):
    """The config of [`SQLiteStore`][flowlib.models.SQLiteStore] (of chat results)."""

    model_config = ConfigDict(extra="forbid")

    path: str
    table: str = "flowlib_cache"


class ChatCompletionCacheConfig(BaseModel):
    """The config of [`ChatCompletionCache`][flowlib.models.ChatCompletionCache]."""

    model_config = ConfigDict(extra="forbid")

    client: ComponentModel
    store: ComponentModel | None = None


class InMemoryStore(CacheStore[T]):
    """A store in a dict, lost when the process ends."""

    component_type: ClassVar[str] = "cache_store"
    component_config_schema: ClassVar[type[BaseModel]] = EmptyConfig

    def _to_config(self) -> EmptyConfig:
        return EmptyConfig()

    @classmethod
    def _from_config(cls, config: EmptyConfig) -> Self:
        return cls()

    def __init__(self) -> None:
        self._values: dict[str, T] = {}

    def get(self, key: str, default: T | None = None) -> T | None:
        """Return the value stored under ``key``, or ``default``."""
        return self._values.get(key, default)

    def set(self, key: str, value: T) -> None:
        """Store ``value`` under ``key``."""
        self._values[key] = value

    def __len__(self) -> int:
        return len(self._values)


class SQLiteStore(CacheStore[T]):
    """A persistent store in an SQLite file (standard-library ``sqlite3``).

    Values are stored as JSON, written and read through a pydantic ``TypeAdapter`` of
    ``value_type``. Each operation opens its own short connection, so the store needs no
    closing, works from any thread, and several stores (or processes) can share a file.

    Args:
        path: The database file; created with its table when missing.
        value_type: The type of the stored values; chat results by default.
        table: The table name, to keep several caches in one file.

    Raises:
        ValueError: ``path`` is ``":memory:"`` (which would forget everything at once;
            use [`InMemoryStore`][flowlib.models.InMemoryStore]) or ``table`` is not an identifier.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "cache.db")
        >>> SQLiteStore(path, value_type=int).set("answer", 42)
        >>> SQLiteStore(path, value_type=int).get("answer")
        42
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        value_type: Any = CHAT_CACHE_VALUE_TYPE,
        table: str = "flowlib_cache",
    ) -> None:
        if os.fspath(path) == ":memory:":
            raise InvalidValueError("SQLiteStore needs a file path; use InMemoryStore for memory.")
        if not table.isidentifier():
            raise InvalidValueError(f"table must be an identifier, not `{table}`.")
        self._path = os.fspath(path)
        self._table = table
        self._value_type = value_type
        self._adapter: TypeAdapter[T] = TypeAdapter(value_type)
        self._lock = threading.Lock()
        with self._connect() as connection:
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    component_type: ClassVar[str] = "cache_store"
    component_config_schema: ClassVar[type[BaseModel]] = SQLiteStoreConfig

    def _to_config(self) -> SQLiteStoreConfig:
        if self._value_type is not CHAT_CACHE_VALUE_TYPE:
            refuse_field(
                "value_type",
                "a custom value_type is a Python type, which a config cannot hold; only "
                "stores of chat results (the default) can be dumped.",
            )
        return SQLiteStoreConfig(path=self._path, table=self._table)

    @classmethod
    def _from_config(cls, config: SQLiteStoreConfig) -> Self:
        return cls(**config.model_dump())  # the config's fields are options, by name

    def _connect(self) -> closing[sqlite3.Connection]:
        return closing(sqlite3.connect(self._path, timeout=30))

    def get(self, key: str, default: T | None = None) -> T | None:
        """Return the value stored under ``key``, or ``default``."""
        with self._connect() as connection:
            row = connection.execute(
                f"SELECT value FROM {self._table} WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return default
        return self._adapter.validate_json(row[0])

    def set(self, key: str, value: T) -> None:
        """Store ``value`` under ``key`` as JSON, replacing any previous value."""
        text = self._adapter.dump_json(value).decode()
        with self._lock, self._connect() as connection, connection:
            connection.execute(
                f"INSERT OR REPLACE INTO {self._table} (key, value) VALUES (?, ?)", (key, text)
            )


def _jsonable(value: Any) -> Any:
    """Reduce request arguments to JSON data for hashing."""
    if isinstance(value, type) and issubclass(value, BaseModel):
        return {"model": value.__name__, "schema": value.model_json_schema()}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


class ChatCompletionCache(ChatCompletionClient):
    """A caching wrapper: a repeated identical request is answered from the store.

    A hit returns the stored result with ``cached=True`` without calling the wrapped
    client; [`create_stream`][flowlib.models.ChatCompletionCache.create_stream] replays the stored
    chunks. Hits count in [`total_usage`][flowlib.models.ChatCompletionCache.total_usage] but not in
    [`actual_usage`][flowlib.models.ChatCompletionCache.actual_usage]. Results of
    [`create`][flowlib.models.ChatCompletionCache.create] and of
    [`create_stream`][flowlib.models.ChatCompletionCache.create_stream] share one key, so either can
    serve the other.

    Args:
        client: The model client to wrap.
        store: Where results are kept; an [`InMemoryStore`][flowlib.models.InMemoryStore] by
            default. Use [`SQLiteStore`][flowlib.models.SQLiteStore] to keep them across runs.

    Examples:
        >>> import asyncio
        >>> from flowlib.models import ReplayChatCompletionClient, UserMessage
        >>> cache = ChatCompletionCache(ReplayChatCompletionClient(["Paris."]))
        >>> ask = [UserMessage(content="Capital of France?", source="user")]
        >>> first = asyncio.run(cache.create(ask))
        >>> second = asyncio.run(cache.create(ask))  # the replay script is not used again
        >>> first.cached, second.cached, second.content
        (False, True, 'Paris.')
    """

    def __init__(
        self,
        client: ChatCompletionClient,
        store: CacheStore[CHAT_CACHE_VALUE_TYPE] | None = None,
    ) -> None:
        self._client = client
        self._store: CacheStore[CHAT_CACHE_VALUE_TYPE] = (
            store if store is not None else InMemoryStore()
        )
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    @property
    def client(self) -> ChatCompletionClient:
        """The wrapped client."""
        return self._client

    @property
    def store(self) -> CacheStore[CHAT_CACHE_VALUE_TYPE]:
        """The cache store."""
        return self._store

    component_config_schema: ClassVar[type[BaseModel]] = ChatCompletionCacheConfig

    def _to_config(self) -> ChatCompletionCacheConfig:
        return ChatCompletionCacheConfig(
            client=dump_field(self._client, "client"), store=dump_field(self._store, "store")
        )

    @classmethod
    def _from_config(cls, config: ChatCompletionCacheConfig) -> Self:
        client = load_field(config.client, "client", ChatCompletionClient)
        store = load_field(config.store, "store", CacheStore)
        return cls(client, store)

    @staticmethod
    def cache_key(
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
    ) -> str:
        """The cache key of a request: a SHA-256 hex digest of its canonical JSON."""
        request = {
            "messages": [message.model_dump(mode="json") for message in messages],
            "tools": [_jsonable(tool_schema(tool)) for tool in tools],
            "tool_choice": (
                tool_choice if isinstance(tool_choice, str) else tool_schema(tool_choice)["name"]
            ),
            "json_output": _jsonable(json_output),
            "extra_create_args": _jsonable(dict(extra_create_args or {})),
        }
        text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def _lookup(
        self, request: CreateRequest, cancellation_token: CancellationToken | None
    ) -> tuple[str, CHAT_CACHE_VALUE_TYPE | None]:
        """The request's cache key and what the store holds for it."""
        if cancellation_token is not None and cancellation_token.is_cancelled():
            raise asyncio.CancelledError()
        key = self.cache_key(request.messages, **request.options())
        return key, self._store.get(key)

    def _record(self, usage: RequestUsage, *, hit: bool) -> None:
        self._total += usage
        if not hit:
            self._actual += usage

    @untraced  # a miss is traced by the wrapped client; a hit is not a model call
    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """Return the cached result of this request, or ask the wrapped client and store it.

        Arguments are those of
        [`ChatCompletionClient.create`][flowlib.models.ChatCompletionClient.create].

        Raises:
            asyncio.CancelledError: ``cancellation_token`` is already cancelled.
        """
        request = CreateRequest(messages, tools, tool_choice, json_output, extra_create_args)
        key, stored = self._lookup(request, cancellation_token)
        if stored is not None:
            result = stored[-1] if isinstance(stored, list) else stored
            if isinstance(result, CreateResult):
                self._record(result.usage, hit=True)
                return result.model_copy(update={"cached": True}, deep=True)
        result = await self._client.create(
            messages, **request.options(), cancellation_token=cancellation_token
        )
        self._store.set(key, result.model_copy(deep=True))
        self._record(result.usage, hit=False)
        return result

    @untraced
    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolLike] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Replay a cached stream (or a cached result as one chunk), or stream from the
        wrapped client and store the chunks once the stream completes."""
        request = CreateRequest(messages, tools, tool_choice, json_output, extra_create_args)
        key, stored = self._lookup(request, cancellation_token)
        if stored is not None:
            items = list(stored) if isinstance(stored, list) else [stored]
            result = items[-1]
            if isinstance(result, CreateResult):
                chunks = [item for item in items[:-1] if isinstance(item, str)]
                if not isinstance(stored, list) and isinstance(result.content, str):
                    chunks = [result.content] if result.content else []
                for chunk in chunks:
                    if cancellation_token is not None and cancellation_token.is_cancelled():
                        raise asyncio.CancelledError()
                    yield chunk
                self._record(result.usage, hit=True)
                yield result.model_copy(update={"cached": True}, deep=True)
                return
        collected: list[str | CreateResult] = []
        async for item in self._client.create_stream(
            messages, **request.options(), cancellation_token=cancellation_token
        ):
            if isinstance(item, CreateResult):
                self._store.set(key, [*collected, item.model_copy(deep=True)])
                self._record(item.usage, hit=False)
            else:
                collected.append(item)
            yield item

    async def close(self) -> None:
        """Close the wrapped client."""
        await self._client.close()

    def actual_usage(self) -> RequestUsage:
        """Tokens of the requests that reached the wrapped client (cache misses)."""
        return self._actual

    def total_usage(self) -> RequestUsage:
        """Tokens of every request, cache hits included."""
        return self._total

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """The wrapped client's estimate."""
        return self._client.count_tokens(messages, tools=tools)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[ToolLike] = ()
    ) -> int:
        """The wrapped client's answer."""
        return self._client.remaining_tokens(messages, tools=tools)

    @property
    def model_info(self) -> ModelInfo:
        """The wrapped client's model info."""
        return self._client.model_info


register_builtin(ChatCompletionCache, autogen="autogen_ext.models.cache")
register_builtin(InMemoryStore, autogen="autogen_core", shared_state=True)
register_builtin(SQLiteStore)
