"""Cache stores on external key-value stores: `DiskCacheStore` (``diskcache``) and
`RedisStore` (``redis``), for [`ChatCompletionCache`][flowlib.models.ChatCompletionCache].

Values are written as JSON through a pydantic ``TypeAdapter`` (as `SQLiteStore`
does), never pickled, so a shared cache cannot make a reader run code.
"""

from __future__ import annotations

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


class DiskCacheStoreConfig(BaseModel):
    """The component config of `DiskCacheStore`: the cache's directory."""

    directory: str


class DiskCacheStore(CacheStore[T]):
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
    component_provider_override: ClassVar[str] = "flowlib.models.DiskCacheStore"
    component_config_schema: ClassVar[type[BaseModel]] = DiskCacheStoreConfig

    def __init__(
        self, cache_instance: diskcache.Cache, *, value_type: Any = CHAT_CACHE_VALUE_TYPE
    ) -> None:
        try:
            import diskcache
        except ImportError as exc:
            raise MissingExtraError(
                "DiskCacheStore needs the `diskcache` package: pip install 'flowlib[diskcache]'."
            ) from exc

        if not isinstance(cache_instance, diskcache.Cache):
            raise CacheStoreTypeError(
                f"DiskCacheStore needs a diskcache.Cache, not {type(cache_instance).__name__}: "
                "DiskCacheStore(diskcache.Cache('/path/to/dir'))."
            )
        self._cache = cache_instance
        self._value_type = value_type
        self._adapter: TypeAdapter[T] = TypeAdapter(value_type)

    @property
    def cache(self) -> diskcache.Cache:
        """The ``diskcache.Cache``."""
        return self._cache

    def get(self, key: str, default: T | None = None) -> T | None:
        """Return the value stored under ``key``, or ``default``."""
        text = self._cache.get(key)
        if text is None:
            return default
        return self._adapter.validate_json(text)

    def set(self, key: str, value: T) -> None:
        """Store ``value`` under ``key`` as JSON."""
        self._cache.set(key, self._adapter.dump_json(value).decode())

    def _to_config(self) -> DiskCacheStoreConfig:
        _refuse_custom_type(self._value_type, "DiskCacheStore")
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


class RedisStore(CacheStore[T]):
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
    component_provider_override: ClassVar[str] = "flowlib.models.RedisStore"
    component_config_schema: ClassVar[type[BaseModel]] = RedisStoreConfig

    def __init__(
        self,
        redis_instance: redis.Redis,
        *,
        value_type: Any = CHAT_CACHE_VALUE_TYPE,
        prefix: str = "",
    ) -> None:
        try:
            import redis
        except ImportError as exc:
            raise MissingExtraError(
                "RedisStore needs the `redis` package: pip install 'flowlib[redis]'."
            ) from exc

        if not isinstance(redis_instance, redis.Redis):
            raise CacheStoreTypeError(
                f"RedisStore needs a redis.Redis client, not {type(redis_instance).__name__}: "
                "RedisStore(redis.Redis(host=..., port=...))."
            )
        self._redis = redis_instance
        self._value_type = value_type
        self._prefix = prefix
        self._adapter: TypeAdapter[T] = TypeAdapter(value_type)

    @property
    def redis(self) -> redis.Redis:
        """The Redis client."""
        return self._redis

    def get(self, key: str, default: T | None = None) -> T | None:
        """Return the value stored under ``key``, or ``default``."""
        data = self._redis.get(self._prefix + key)
        if data is None:
            return default
        return self._adapter.validate_json(data)

    def set(self, key: str, value: T) -> None:
        """Store ``value`` under ``key`` as JSON."""
        self._redis.set(self._prefix + key, self._adapter.dump_json(value))

    def _to_config(self) -> RedisStoreConfig:
        _refuse_custom_type(self._value_type, "RedisStore")
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

        client = redis.Redis(
            host=config.host,
            port=config.port,
            db=config.db,
            username=config.username,
            password=config.password,
            ssl=config.ssl,
            socket_timeout=config.socket_timeout,
        )
        return cls(client, prefix=config.prefix)


def _refuse_custom_type(value_type: Any, store: str) -> None:
    if value_type is not CHAT_CACHE_VALUE_TYPE:
        raise ComponentSerializationError(
            f"{store}: a custom value_type is a Python type, which a config cannot hold; "
            "only stores of chat results (the default) can be dumped."
        )


register_builtin(
    DiskCacheStore,
    "flowlib.models.DiskCacheStore",
    aliases=("autogen_ext.cache_store.diskcache.DiskCacheStore", "DiskCacheStore"),
)
register_builtin(
    RedisStore,
    "flowlib.models.RedisStore",
    aliases=("autogen_ext.cache_store.redis.RedisStore", "RedisStore"),
)
