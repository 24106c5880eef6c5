"""Store URL schemes are a registry: users register theirs with the call the built-in
stores use, and ``open_store`` / batch workers open them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flowlib.batch import store_url
from flowlib.checkpoint import (
    CheckpointStore,
    InMemoryCheckpointStore,
    open_store,
    register_store_scheme,
    store_schemes,
)
from flowlib.checkpoint import _url as registry
from flowlib.errors import CheckpointArgumentError


class NamedStore(InMemoryCheckpointStore):
    """A store another process could reach by its URL."""

    def __init__(self, url: str, *, create: bool) -> None:
        super().__init__()
        self.url = url  # type: ignore[misc]
        self.create = create


def open_named(url: str, *, create: bool) -> CheckpointStore:
    return NamedStore(url, create=create)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    saved = dict(registry._SCHEMES)
    yield
    registry._SCHEMES.clear()
    registry._SCHEMES.update(saved)


def test_the_built_in_schemes_are_registered() -> None:
    assert {"memory", "sqlite", "postgresql", "postgres", "redis", "rediss"} <= set(store_schemes())


@pytest.mark.usefixtures("clean_registry")
def test_a_registered_scheme_opens_its_store_and_reopens_on_workers() -> None:
    with pytest.raises(CheckpointArgumentError, match="unknown scheme `named`"):
        open_store("named://a")
    register_store_scheme("Named", open_named, example="named://bucket")
    store = open_store("NAMED://a", create=False)
    assert isinstance(store, NamedStore) and store.create is False
    assert store_url(store) == "NAMED://a"
    with pytest.raises(CheckpointArgumentError, match="`named://bucket`"):
        open_store("nope://")  # the accepted forms list the new scheme
    register_store_scheme("named", open_named, example="named://bucket")  # the same: fine
    with pytest.raises(CheckpointArgumentError, match="registered already"):
        register_store_scheme("named", lambda url, *, create: open_named(url, create=create),
                              example="named://x")  # fmt: skip
    register_store_scheme(
        "named", lambda url, *, create: InMemoryCheckpointStore(), example="named://x", replace=True
    )
    assert type(open_store("named://a")) is InMemoryCheckpointStore


@pytest.mark.usefixtures("clean_registry")
def test_an_opener_named_by_string_is_imported_on_first_use() -> None:
    register_store_scheme("lazy", f"{__name__}:open_named", example="lazy://x")
    assert isinstance(open_store("lazy://x"), NamedStore)
    register_store_scheme("broken", f"{__name__}:missing", example="broken://x")
    with pytest.raises(CheckpointArgumentError, match="names no function"):
        open_store("broken://x")


def test_bad_registrations_are_refused() -> None:
    for scheme in ("", "1x", "a b", "x://"):
        with pytest.raises(CheckpointArgumentError, match="scheme"):
            register_store_scheme(scheme, open_named, example=f"{scheme}://x")
    with pytest.raises(CheckpointArgumentError, match="callable"):
        register_store_scheme("x", "not a name", example="x://y")  # type: ignore[arg-type]
    with pytest.raises(CheckpointArgumentError, match="example"):
        register_store_scheme("x", open_named, example="y://z")
    assert "x" not in store_schemes()


def test_a_store_without_url_cannot_go_to_workers() -> None:
    with pytest.raises(CheckpointArgumentError, match="lives in one process"):
        store_url(InMemoryCheckpointStore())
    with pytest.raises(CheckpointArgumentError, match="has no `url` attribute"):
        store_url(object())  # type: ignore[arg-type]
