"""Cache stores on external key-value stores: `DiskCacheStore` (``diskcache``) and
`RedisStore` (``redis``), for [`ChatCompletionCache`][flowlib.models.ChatCompletionCache].

Values are written as JSON through a pydantic ``TypeAdapter`` (as `SQLiteStore`
does), never pickled, so a shared cache cannot make a reader run code.
"""

from __future__ import annotations

import importlib
from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, TypeAdapter

from ..component import ComponentSerializationError
from ..component.internal import register_builtin
from ..errors import FlowlibError, MissingExtraError
from ._cache import CHAT_CACHE_VALUE_TYPE, CacheStore

if TYPE_CHECKING:
    import diskcache  # type: ignore[import-untyped]
    import redis

__all__ = [
    "CacheStoreTypeError",
    "DiskCacheStore",
    "DiskCacheStoreConfig",
    "RedisStore",
    "RedisStoreConfig",
]

T = TypeVar("T")


class CacheStoreTypeError(FlowlibError, TypeError):
    """A cache store was given the wrong kind of client (e.g. not a ``diskcache.Cache``)."""


class _JsonStore(CacheStore[T]):
    """A store that keeps each value as JSON text in an external key-value store."""

    def __init__(self, value_type: Any) -> None:
        self._value_type = value_type
        self._adapter: TypeAdapter[T] = TypeAdapter(value_type)

    def get(self, key: str, default: T | None = None) -> T | None:
        """Return the value stored under ``key``, or ``default``."""
        data = self._read(key)
        if data is None:
            return default
        return self._adapter.validate_json(data)

    def set(self, key: str, value: T) -> None:
        """Store ``value`` under ``key`` as JSON."""
        self._write(key, self._adapter.dump_json(value))

    @abstractmethod
    def _read(self, key: str) -> str | bytes | None:
        """The JSON stored under ``key``, or None."""

    @abstractmethod
    def _write(self, key: str, data: bytes) -> None:
        """Store the JSON ``data`` under ``key``."""

    def _refuse_custom_type(self) -> None:
        if self._value_type is not CHAT_CACHE_VALUE_TYPE:
            raise ComponentSerializationError(
                f"{type(self).__name__}: a custom value_type is a Python type, which a config "
                "cannot hold; only stores of chat results (the default) can be dumped."
            )


def _check_client(client: object, store: str, kind: str, wanted: str, example: str) -> None:
    """Check that ``client`` is an instance of ``kind`` (``module.Class``), whose module
    is the extra ``store`` needs."""
    package, _, name = kind.partition(".")
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise MissingExtraError(
            f"{store} needs the `{package}` package: pip install 'flowlib[{package}]'."
        ) from exc
    if not isinstance(client, getattr(module, name)):
        raise CacheStoreTypeError(
            f"{store} needs {wanted}, not {type(client).__name__}: {example}."
        )


class DiskCacheStoreConfig(BaseModel):
    """The component config of `DiskCacheStore`: the cache's directory."""

    directory: str


class DiskCacheStore(_JsonStore[T]):
    """A store in a ``diskcache.Cache`` (a directory of SQLite-indexed files).

    Args:
        cache_instance: The ``diskcache.Cache`` (``pip install 'flowlib[diskcache]'``).
        value_type: The type of the stored values; chat results by default.

    Raises:
        TypeError: If ``cache_instance`` is not a ``diskcache.Cache``.

    Examples:
        >>> import tempfile, diskcache
        >>> store = DiskCacheStore(diskcache.Cache(tempfile.mkdtemp()), value_type=int)
        >>> store.set("answer", 42)
        >>> store.get("answer"), store.get("missing", 0)
        (42, 0)
    """

    component_type: ClassVar[str] = "cache_store"
    component_config_schema: ClassVar[type[BaseModel]] = DiskCacheStoreConfig

    def __init__(
        self, cache_instance: diskcache.Cache, *, value_type: Any = CHAT_CACHE_VALUE_TYPE
    ) -> None:
        _check_client(
            cache_instance,
            "DiskCacheStore",
            "diskcache.Cache",
            "a diskcache.Cache",
            "DiskCacheStore(diskcache.Cache('/path/to/dir'))",
        )
        super().__init__(value_type)
        self._cache = cache_instance

    @property
    def cache(self) -> diskcache.Cache:
        """The ``diskcache.Cache``."""
        return self._cache

    def _read(self, key: str) -> str | bytes | None:
        return self._cache.get(key)  # type: ignore[no-any-return]

    def _write(self, key: str, data: bytes) -> None:
        self._cache.set(key, data.decode())

    def _to_config(self) -> DiskCacheStoreConfig:
        self._refuse_custom_type()
        return DiskCacheStoreConfig(directory=str(self._cache.directory))

    @classmethod
    def _from_config(cls, config: DiskCacheStoreConfig) -> DiskCacheStore[Any]:
        import diskcache

        return cls(diskcache.Cache(config.directory))


class RedisStoreConfig(BaseModel):
    """The component config of `RedisStore`: how to connect (the password is not
    written; add it to the config yourself when loading)."""

    host: str = "localhost"
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: bool = False
    socket_timeout: float | None = None
    prefix: str = ""


class RedisStore(_JsonStore[T]):
    """A store in Redis, through a synchronous ``redis.Redis`` client.

    Args:
        redis_instance: The client (``pip install 'flowlib[redis]'``).
        value_type: The type of the stored values; chat results by default.
        prefix: Put before every key, to keep several caches in one database.

    Raises:
        TypeError: If ``redis_instance`` is not a ``redis.Redis``.

    Examples:
        ```python
        import redis

        from flowlib.models import RedisStore

        store = RedisStore(redis.Redis(host="localhost", port=6379))
        ```
    """

    component_type: ClassVar[str] = "cache_store"
    component_config_schema: ClassVar[type[BaseModel]] = RedisStoreConfig

    def __init__(
        self,
        redis_instance: redis.Redis,
        *,
        value_type: Any = CHAT_CACHE_VALUE_TYPE,
        prefix: str = "",
    ) -> None:
        _check_client(
            redis_instance,
            "RedisStore",
            "redis.Redis",
            "a redis.Redis client",
            "RedisStore(redis.Redis(host=..., port=...))",
        )
        super().__init__(value_type)
        self._redis = redis_instance
        self._prefix = prefix

    @property
    def redis(self) -> redis.Redis:
        """The Redis client."""
        return self._redis

    def _read(self, key: str) -> str | bytes | None:
        return self._redis.get(self._prefix + key)

    def _write(self, key: str, data: bytes) -> None:
        self._redis.set(self._prefix + key, data)

    def _to_config(self) -> RedisStoreConfig:
        self._refuse_custom_type()
        kwargs = self._redis.connection_pool.connection_kwargs
        return RedisStoreConfig(
            host=str(kwargs.get("host", "localhost")),
            port=int(kwargs.get("port", 6379)),
            db=int(kwargs.get("db", 0)),
            username=kwargs.get("username"),
            ssl=self._redis.connection_pool.connection_class.__name__ == "SSLConnection",
            socket_timeout=kwargs.get("socket_timeout"),
            prefix=self._prefix,
        )

    @classmethod
    def _from_config(cls, config: RedisStoreConfig) -> RedisStore[Any]:
        import redis

        # The config's other fields are redis.Redis's connection options, by name.
        client = redis.Redis(**config.model_dump(exclude={"prefix"}))
        return cls(client, prefix=config.prefix)


register_builtin(DiskCacheStore, autogen="autogen_ext.cache_store.diskcache")
register_builtin(RedisStore, autogen="autogen_ext.cache_store.redis")
