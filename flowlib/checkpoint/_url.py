"""Opening a checkpoint store from a URL, as the command line and workers name stores."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from ..errors import CheckpointArgumentError
from ._memory import InMemoryCheckpointStore
from ._postgres import PostgresCheckpointStore
from ._sqlite import SQLiteCheckpointStore
from ._types import CheckpointStore

__all__ = ["open_store"]

_FORMS = (
    "`sqlite:///runs.db` (a file relative to the working directory), "
    "`sqlite:////abs/path/runs.db`, `postgresql://user@host:5432/db` or `memory://`"
)


def open_store(url: str, *, create: bool = True) -> CheckpointStore:
    """Open the checkpoint store a URL names.

    - `sqlite:///runs.db`: a
      [`SQLiteCheckpointStore`][flowlib.checkpoint.SQLiteCheckpointStore] on `runs.db`,
      relative to the working directory; `sqlite:////var/lib/runs.db`: an absolute path;
      `?synchronous=FULL`: an fsync per checkpoint (survives a power cut, not only a
      killed process).
    - `postgresql://user:pw@host:5432/db` (or `postgres://`): a
      [`PostgresCheckpointStore`][flowlib.checkpoint.PostgresCheckpointStore] with that DSN.
    - `memory://`: a new
      [`InMemoryCheckpointStore`][flowlib.checkpoint.InMemoryCheckpointStore].

    Nothing is connected or created until the store is first used.

    Args:
        url: The store's URL.
        create: Whether a store that does not exist yet (a missing SQLite file, a
            database without flowlib's tables) is created on first use; False: the
            first call raises ``CheckpointError`` saying there is no store there (what
            read-only commands want).

    Returns:
        The store; close it with `await store.close()`.

    Raises:
        CheckpointArgumentError: If the URL is not a string, has an unknown scheme, names
            no SQLite file, or has an unknown query option. The message shows the
            accepted forms.

    Examples:
        ```python
        store = open_store("sqlite:///runs.db")
        runs = await store.list_runs()
        await store.close()
        ```
    """
    if not isinstance(url, str):
        raise CheckpointArgumentError(
            f"A store URL must be a string, got {type(url).__name__}; use {_FORMS}."
        )
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or not scheme:
        raise CheckpointArgumentError(f"Store URL {url!r} has no scheme; use {_FORMS}.")
    if scheme in ("postgresql", "postgres"):
        if not rest:
            raise CheckpointArgumentError(
                f"Store URL {url!r} names no PostgreSQL server; use e.g. "
                "`postgresql://user@127.0.0.1:5432/db`."
            )
        return PostgresCheckpointStore(url, create=create)
    if scheme == "sqlite":
        return _sqlite(url, rest, create=create)
    if scheme == "memory":
        if rest.strip("/"):
            raise CheckpointArgumentError(
                f"Store URL {url!r}: `memory://` takes no path (each one is a new, empty "
                "store in this process)."
            )
        return InMemoryCheckpointStore()
    raise CheckpointArgumentError(
        f"Store URL {url!r} has the unknown scheme `{scheme}`; use {_FORMS}."
    )


def _sqlite(url: str, rest: str, *, create: bool) -> SQLiteCheckpointStore:
    parts = urlsplit("sqlite://" + rest)
    if parts.netloc:
        raise CheckpointArgumentError(
            f"Store URL {url!r} names the host `{parts.netloc}`; a SQLite store is a local "
            "file: `sqlite:///runs.db` (three slashes, relative) or `sqlite:////abs/runs.db`."
        )
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if not path:
        raise CheckpointArgumentError(
            f"Store URL {url!r} names no file; use `sqlite:///runs.db` (relative) or "
            "`sqlite:////abs/path/runs.db`."
        )
    synchronous = "NORMAL"
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key != "synchronous" or value.upper() not in ("NORMAL", "FULL"):
            raise CheckpointArgumentError(
                f"Store URL {url!r}: unknown option `{key}={value}`; the only option is "
                "`synchronous=NORMAL` (the default) or `synchronous=FULL`."
            )
        synchronous = value.upper()
    return SQLiteCheckpointStore(
        path, synchronous="FULL" if synchronous == "FULL" else "NORMAL", create=create
    )
