"""Store URLs: what a worker process opens to reach the batch's store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowlib.batch import open_store, store_url
from flowlib.checkpoint import (
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
)
from flowlib.errors import CheckpointArgumentError


def test_urls_open_the_store_they_name(tmp_path: Path) -> None:
    relative = open_store("sqlite:///runs.db")
    assert isinstance(relative, SQLiteCheckpointStore) and relative.path == "runs.db"
    absolute = open_store(f"sqlite:///{tmp_path}/runs.db")
    assert isinstance(absolute, SQLiteCheckpointStore)
    assert absolute.path == f"{tmp_path}/runs.db"
    assert isinstance(open_store(tmp_path / "plain.db"), SQLiteCheckpointStore)
    postgres = open_store("postgresql://flowlib@127.0.0.1:5/db")
    assert isinstance(postgres, PostgresCheckpointStore)
    assert isinstance(open_store("memory://"), InMemoryCheckpointStore)
    with pytest.raises(CheckpointArgumentError, match="unknown scheme `dynamodb`"):
        open_store("dynamodb://x")  # (issue 22 registered `redis://`)
    with pytest.raises(CheckpointArgumentError, match="names no file"):
        open_store("sqlite://")


def test_store_url_reopens_the_same_store_elsewhere(tmp_path: Path) -> None:
    url = store_url(SQLiteCheckpointStore(tmp_path / "a.db"))
    assert url == f"sqlite:///{tmp_path}/a.db"
    reopened = open_store(url)
    assert isinstance(reopened, SQLiteCheckpointStore)
    assert reopened.path == os.fspath(tmp_path / "a.db")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:  # a relative path is made absolute: workers start in another directory
        assert store_url("sqlite:///rel.db") == f"sqlite:///{tmp_path}/rel.db"
    finally:
        os.chdir(cwd)
    dsn = "postgresql://flowlib@127.0.0.1:5/db"
    assert store_url(PostgresCheckpointStore(dsn)) == dsn
    assert store_url(dsn) == dsn


def test_stores_of_one_process_are_refused_for_workers() -> None:
    with pytest.raises(CheckpointArgumentError, match="lives in one process"):
        store_url("memory://")
    with pytest.raises(CheckpointArgumentError, match="lives in one process"):
        store_url(SQLiteCheckpointStore(":memory:"))
    with pytest.raises(CheckpointArgumentError, match="cannot be reopened on a worker"):
        store_url(InMemoryCheckpointStore())
