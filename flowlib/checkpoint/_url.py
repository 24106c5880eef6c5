"""Checkpoint stores named by URL: a registry of URL schemes, each with the function that
opens a store from a URL of its scheme.

The built-in stores register their schemes (``memory``, ``sqlite``, ``postgresql``,
``redis``) with [`register_store_scheme`][flowlib.checkpoint.register_store_scheme], the same
call a store of your own uses; [`open_store`][flowlib.checkpoint.open_store] looks the
scheme up. The other direction, store to URL (what a worker process opens to reach the
same store), is the store's optional ``url`` attribute.
"""

from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass
from typing import Protocol, cast

from ..errors import CheckpointArgumentError
from ._types import CheckpointStore

__all__ = ["StoreOpener", "open_store", "register_store_scheme", "store_schemes"]


class StoreOpener(Protocol):
    """Opens the store a URL names: ``opener(url, create=True)``.

    ``url`` has the opener's scheme (as given, scheme in any case). ``create`` says
    whether a store that does not exist yet is created on first use; with False the
    store's first call raises ``CheckpointError`` saying there is no store there (what
    read-only commands want). Opening should not connect: the store connects on first
    use. A URL the opener cannot use raises ``CheckpointArgumentError`` saying why.
    """

    def __call__(self, url: str, *, create: bool) -> CheckpointStore: ...


@dataclass
class _Scheme:
    opener: StoreOpener | str  # as registered: the function, or its "module:function"
    example: str
    found: StoreOpener | None = None

    def resolve(self) -> StoreOpener:
        if self.found is None:
            if isinstance(self.opener, str):
                module, _, name = self.opener.partition(":")
                found = getattr(importlib.import_module(module), name, None)
                if not callable(found):
                    raise CheckpointArgumentError(
                        f"The store opener `{self.opener}` names no function (module "
                        f"`{module}` has no callable `{name}`)."
                    )
                self.found = cast(StoreOpener, found)
            else:
                self.found = self.opener
        return self.found


_SCHEMES: dict[str, _Scheme] = {}
_LOCK = threading.Lock()
_SCHEME_NAME = re.compile(r"[a-z][a-z0-9+.-]*")
_OPENER_NAME = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def register_store_scheme(
    scheme: str, opener: StoreOpener | str, *, example: str, replace: bool = False
) -> None:
    """Make ``open_store`` (and so ``flowlib runs --store``, ``FLOWLIB_STORE``, batch
    workers and Ray workers) open URLs of ``scheme`` with ``opener``.

    Args:
        scheme: The URL scheme, without ``://`` (``"redis"``); case does not matter.
        opener: Called as ``opener(url, create=...)`` (see
            [`StoreOpener`][flowlib.checkpoint.StoreOpener]); or its name,
            ``"package.module:function"``, imported when a URL of the scheme is first
            opened (so registering costs no import, and the store's module may import
            ``flowlib.checkpoint`` itself).
        example: A URL of the scheme, shown in error messages that list the accepted
            forms (``"redis://127.0.0.1:6379/0"``).
        replace: Whether an already registered scheme may be replaced (default: a
            second registration is refused, so two stores cannot silently fight over one
            scheme).

    Raises:
        CheckpointArgumentError: The scheme is not a URL scheme, the opener is not
            callable, or the scheme is registered already and ``replace`` is False.

    Examples:
        ```python
        from flowlib.checkpoint import register_store_scheme

        def open_file_store(url: str, *, create: bool) -> FileCheckpointStore:
            return FileCheckpointStore(url.removeprefix("file://"), create=create)

        register_store_scheme("file", open_file_store, example="file:///var/runs")
        ```
    """
    if not isinstance(scheme, str) or not _SCHEME_NAME.fullmatch(scheme.lower()):
        raise CheckpointArgumentError(
            f"A store URL scheme is a letter then letters, digits, `+`, `-` or `.` (as in "
            f"`redis`), without `://`; got {scheme!r}."
        )
    if not (callable(opener) or (isinstance(opener, str) and _OPENER_NAME.fullmatch(opener))):
        raise CheckpointArgumentError(
            f"The opener of scheme `{scheme}` must be callable as opener(url, create=...), "
            f"or its name as 'package.module:function'; got {opener!r}."
        )
    if not isinstance(example, str) or not example.lower().startswith(scheme.lower() + "://"):
        raise CheckpointArgumentError(
            f"`example` must be a URL of the scheme `{scheme}` (`{scheme}://...`), got {example!r}."
        )
    key = scheme.lower()
    with _LOCK:
        if key in _SCHEMES and not replace and _SCHEMES[key].opener != opener:
            raise CheckpointArgumentError(
                f"The store URL scheme `{key}` is registered already (opened by "
                f"{_name(_SCHEMES[key].opener)}); pass `replace=True` to replace it."
            )
        _SCHEMES[key] = _Scheme(opener, example)


def store_schemes() -> dict[str, str]:
    """The registered store URL schemes, each with its example URL, in registration
    order."""
    with _LOCK:
        return {scheme: entry.example for scheme, entry in _SCHEMES.items()}


def _name(opener: object) -> str:
    if isinstance(opener, str):
        return f"`{opener}`"
    module = getattr(opener, "__module__", None)
    name = getattr(opener, "__qualname__", type(opener).__qualname__)
    return f"`{module}.{name}`" if module else f"`{name}`"


def _forms() -> str:
    examples = [f"`{example}`" for example in store_schemes().values()]
    return ", ".join(examples[:-1]) + f" or {examples[-1]}" if len(examples) > 1 else examples[0]


def open_store(url: str, *, create: bool = True) -> CheckpointStore:
    """Open the checkpoint store a URL names, by the opener registered for its scheme.

    The built-in schemes:

    - `sqlite:///runs.db`: a
      [`SQLiteCheckpointStore`][flowlib.checkpoint.SQLiteCheckpointStore] on `runs.db`,
      relative to the working directory; `sqlite:////var/lib/runs.db`: an absolute path;
      `?synchronous=FULL`: an fsync per checkpoint (survives a power cut, not only a
      killed process).
    - `postgresql://user:pw@host:5432/db` (or `postgres://`): a
      [`PostgresCheckpointStore`][flowlib.checkpoint.PostgresCheckpointStore] with that DSN.
    - `redis://host:6379/0` (or `rediss://` for TLS), `?prefix=flowlib:` for the keys'
      prefix: a [`RedisCheckpointStore`][flowlib.checkpoint.redis_store.RedisCheckpointStore].
    - `memory://`: a new
      [`InMemoryCheckpointStore`][flowlib.checkpoint.InMemoryCheckpointStore].

    More come from [`register_store_scheme`][flowlib.checkpoint.register_store_scheme].
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
        CheckpointArgumentError: If the URL is not a string, has no or an unknown scheme,
            or its opener refuses it (no SQLite file, an unknown query option, ...). The
            message shows the accepted forms.

    Examples:
        ```python
        store = open_store("sqlite:///runs.db")
        runs = await store.list_runs()
        await store.close()
        ```
    """
    if not isinstance(url, str):
        raise CheckpointArgumentError(
            f"A store URL must be a string, got {type(url).__name__}; use {_forms()}."
        )
    scheme, sep, _ = url.partition("://")
    scheme = scheme.lower()
    if not sep or not scheme:
        raise CheckpointArgumentError(f"Store URL {url!r} has no scheme; use {_forms()}.")
    with _LOCK:
        entry = _SCHEMES.get(scheme)
    if entry is None:
        raise CheckpointArgumentError(
            f"Store URL {url!r} has the unknown scheme `{scheme}`; use {_forms()} (or "
            "register the scheme of your own store with "
            "`flowlib.checkpoint.register_store_scheme`)."
        )
    return entry.resolve()(url, create=create)
