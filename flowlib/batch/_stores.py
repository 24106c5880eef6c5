"""Checkpoint stores named by a URL, so a worker process can open the same store again.

A URL opens the store its scheme is registered for
([`checkpoint.open_store`][flowlib.checkpoint.open_store]: ``sqlite:///runs.db``,
``postgresql://...``, ``redis://...``, ``memory://`` and any scheme registered with
[`register_store_scheme`][flowlib.checkpoint.register_store_scheme]); batch files may
also name a SQLite file by a plain path ending in ``.db`` / ``.sqlite``. A store object
gives its URL through its ``url`` attribute.
"""

from __future__ import annotations

import os

from ..checkpoint import CheckpointStore, SQLiteCheckpointStore
from ..checkpoint import open_store as open_store_url
from ..errors import CheckpointArgumentError

__all__ = ["open_store", "store_url"]

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_SHARED = "`sqlite:///path/to/runs.db` (one machine), `postgresql://...` or `redis://...`"


def open_store(spec: str | os.PathLike[str]) -> CheckpointStore:
    """Open the checkpoint store a URL names, as
    [`checkpoint.open_store`][flowlib.checkpoint.open_store] does; a plain path ending in
    ``.db``/``.sqlite`` is also taken as a SQLite file (batch files name stores so).

    Args:
        spec: A store URL of a registered scheme (``sqlite:///runs.db``,
            ``postgresql://user@host/db``, ``redis://host:6379/0``, ``memory://``, ...)
            or a path ending in ``.db``/``.sqlite``.

    Returns:
        A new store object (the caller closes it).

    Raises:
        CheckpointArgumentError: If the URL's scheme is not registered, or its store
            refuses the URL.
    """
    text = os.fspath(spec)
    if "://" not in text and text.endswith(_SQLITE_SUFFIXES):
        return SQLiteCheckpointStore(text)
    return open_store_url(text)


def store_url(store: str | os.PathLike[str] | CheckpointStore) -> str:
    """The URL another process opens to reach the same store.

    Args:
        store: A store URL (checked by opening it, which connects to nothing, and
            returned as that store's ``url``: SQLite paths made absolute), or a store
            object whose ``url`` attribute names it.

    Raises:
        CheckpointArgumentError: If the store lives in this process only (its ``url`` is
            None: in-memory stores, SQLite ``:memory:``) or has no ``url`` attribute.
    """
    if isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    url = getattr(store, "url", None)
    if isinstance(url, str):
        return url
    if hasattr(store, "url"):
        raise CheckpointArgumentError(
            f"{store!r} lives in one process (its `url` is None), so it cannot be reopened "
            f"on a worker; workers need a shared store: {_SHARED}."
        )
    raise CheckpointArgumentError(
        f"A {type(store).__name__} has no `url` attribute, so it cannot be reopened on a "
        f"worker; give the store class a `url` (see the `CheckpointStore` protocol) or pass "
        f"a store URL ({_SHARED}) as `checkpoint_store`."
    )
