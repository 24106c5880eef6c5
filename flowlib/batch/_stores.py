"""Checkpoint stores named by a URL, so a worker process can open the same store again.

``sqlite:///runs.db`` (relative to the working directory; ``sqlite:////abs/runs.db`` for an
absolute path, as in SQLAlchemy; or a plain path ending in ``.db`` / ``.sqlite``) opens a
[`SQLiteCheckpointStore`][flowlib.checkpoint.SQLiteCheckpointStore];
``postgresql://...`` / ``postgres://...`` a
[`PostgresCheckpointStore`][flowlib.checkpoint.PostgresCheckpointStore]; ``memory://`` an
[`InMemoryCheckpointStore`][flowlib.checkpoint.InMemoryCheckpointStore] (one process only).
"""

from __future__ import annotations

import os

from ..checkpoint import (
    CheckpointStore,
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
)
from ..checkpoint import open_store as open_store_url
from ..errors import CheckpointArgumentError

__all__ = ["open_store", "store_url"]

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def open_store(spec: str | os.PathLike[str]) -> CheckpointStore:
    """Open the checkpoint store a URL names, as
    [`checkpoint.open_store`][flowlib.checkpoint.open_store] does; a plain path ending in
    ``.db``/``.sqlite`` is also taken as a SQLite file (batch files name stores so).

    Args:
        spec: ``sqlite:///runs.db`` (relative), ``sqlite:////abs/runs.db``, a path
            ending in ``.db``/``.sqlite``, ``postgresql://user@host/db`` or ``memory://``.

    Returns:
        A new store object (the caller closes it).

    Raises:
        CheckpointArgumentError: If the URL's scheme is not one of those.
    """
    text = os.fspath(spec)
    if "://" not in text and text.endswith(_SQLITE_SUFFIXES):
        return SQLiteCheckpointStore(text)
    return open_store_url(text)


def store_url(store: str | os.PathLike[str] | CheckpointStore) -> str:
    """The URL another process opens to reach the same store.

    Args:
        store: A store URL (returned checked and unchanged, SQLite paths made absolute),
            a [`SQLiteCheckpointStore`][flowlib.checkpoint.SQLiteCheckpointStore] on a file
            or a [`PostgresCheckpointStore`][flowlib.checkpoint.PostgresCheckpointStore].

    Raises:
        CheckpointArgumentError: If the store lives in this process only (in-memory
            stores, SQLite ``:memory:``) or is of a kind without a URL.
    """
    if isinstance(store, (str, os.PathLike)):
        text = os.fspath(store)
        opened = open_store(text)  # checks the scheme; opening is lazy, nothing connects
        if isinstance(opened, InMemoryCheckpointStore):
            raise CheckpointArgumentError(
                "`memory://` lives in one process; workers need a shared store: "
                "`sqlite:///path/to/runs.db` (one machine) or `postgresql://...`."
            )
        store = opened
    if isinstance(store, SQLiteCheckpointStore):
        if store.path == ":memory:":
            raise CheckpointArgumentError(
                "A SQLite store on `:memory:` lives in one process; give it a file path."
            )
        return "sqlite:///" + os.path.abspath(store.path)
    if isinstance(store, PostgresCheckpointStore):
        return store.dsn
    raise CheckpointArgumentError(
        f"A {type(store).__name__} cannot be reopened on a worker; pass a store URL "
        "(`sqlite:///path/to/runs.db` or `postgresql://...`) as `checkpoint_store`."
    )
