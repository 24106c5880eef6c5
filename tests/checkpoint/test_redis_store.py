"""The Redis checkpoint store, on a real ``redis-server`` started by the test on a free
loopback port: the same conformance suite as the built-in stores, written with public
flowlib names only, and opened by its registered ``redis://`` scheme."""

from __future__ import annotations

import ast
import itertools
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import flowlib.checkpoint.redis_store as redis_module
from flowlib.batch import open_store as open_batch_store
from flowlib.batch import store_url
from flowlib.checkpoint import (
    CheckpointRecord,
    RedisCheckpointStore,
    RunRecord,
    open_store,
    store_schemes,
)
from flowlib.errors import CheckpointArgumentError, CheckpointError
from flowlib.testing import STORE_RULES, StoreRule, check_checkpoint_store


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh redis-server on 127.0.0.1 (no persistence), for this module."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (scripts/bootstrap.sh installs it)")
    port = _free_port()
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path_factory.mktemp("redis"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("redis-server did not start within 20 s")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


_PREFIXES = itertools.count()


@pytest.fixture
def make_store(redis_url: str) -> Callable[[], RedisCheckpointStore]:
    """New, empty stores: one database, a key prefix of their own each."""
    return lambda: RedisCheckpointStore(redis_url, prefix=f"t{next(_PREFIXES)}:")


@pytest.mark.parametrize("rule", STORE_RULES)
async def test_the_redis_store_keeps_the_rule(
    make_store: Callable[[], RedisCheckpointStore], rule: StoreRule
) -> None:
    await check_checkpoint_store(make_store, rules=[rule])


def test_the_redis_store_uses_public_flowlib_names_only() -> None:
    """Every flowlib name the module imports is public (no `_` module or name), and it
    reaches no private attribute of what it imports."""
    tree = ast.parse(Path(redis_module.__file__).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"relative import of {node.module} (line {node.lineno})"
            if node.module and node.module.split(".")[0] == "flowlib":
                assert not any(part.startswith("_") for part in node.module.split(".")), node.module
                for alias in node.names:
                    assert not alias.name.startswith("_"), (node.module, alias.name)
                    imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            assert all(alias.name.split(".")[0] != "flowlib" for alias in node.names)
    assert {"RunRecord", "check_next", "CheckpointError"} <= imported
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported
        ):
            assert not node.attr.startswith("_"), f"{node.value.id}.{node.attr}"


async def test_the_redis_scheme_is_registered_and_reopens_the_same_store(redis_url: str) -> None:
    assert store_schemes()["redis"] == "redis://127.0.0.1:6379/0"
    store = open_store(f"{redis_url}?prefix=mine:")
    assert isinstance(store, RedisCheckpointStore) and store.prefix == "mine:"
    assert store_url(store) == f"{redis_url}?prefix=mine%3A"
    run = RunRecord(
        run_id="r1", team_type="T", graph_signature="s", state_version=1, created_at=1.0,
        updated_at=1.0,
    )  # fmt: skip
    await store.create_run(run)
    again = open_batch_store(store_url(store))  # what a batch worker opens
    other = open_store(redis_url)  # the default prefix: another store
    try:
        assert [r.run_id for r in await again.list_runs()] == ["r1"]
        assert await other.list_runs() == []
    finally:
        for opened in (store, again, other):
            await opened.close()


async def test_a_store_not_to_be_created_is_refused_and_nothing_is_written(
    redis_url: str,
) -> None:
    import redis.asyncio

    store = open_store(f"{redis_url}?prefix=absent:", create=False)
    with pytest.raises(CheckpointError, match=r"No checkpoint store .*`absent:meta`"):
        await store.list_runs()
    await store.close()
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        assert await client.keys("absent:*") == []
    finally:
        await client.aclose()


async def test_an_unreachable_server_is_a_checkpoint_error_without_the_password() -> None:
    store = RedisCheckpointStore(
        f"redis://user:secret@127.0.0.1:{_free_port()}/0", connect_timeout=1.0
    )
    started = time.monotonic()
    with pytest.raises(CheckpointError, match="Redis store") as caught:
        await store.list_runs()
    assert time.monotonic() - started < 10
    assert "secret" not in str(caught.value) and "secret" not in repr(store)
    await store.close()


async def test_a_value_changed_outside_flowlib_is_refused_by_key(redis_url: str) -> None:
    import redis.asyncio

    store = RedisCheckpointStore(redis_url, prefix="tamper:")
    run = RunRecord(
        run_id="r1", team_type="T", graph_signature="s", state_version=1, created_at=1.0,
        updated_at=1.0,
    )  # fmt: skip
    await store.create_run(run)
    await store.append(
        CheckpointRecord(run_id="r1", checkpoint_id=1, kind="start", turn=0, created_at=2.0),
        status="running",
    )
    client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
    try:
        await client.hset("tamper:records:r1", "1", '{"run_id": "r1"}')
        with pytest.raises(CheckpointError, match=r"`tamper:records:r1` field `1`"):
            await store.records("r1")
        await client.hset("tamper:run:r1", "turns", "many")
        with pytest.raises(CheckpointError, match=r"`tamper:run:r1`"):
            await store.get_run("r1")
    finally:
        await client.aclose()
        await store.close()


def test_bad_arguments_are_named() -> None:
    with pytest.raises(CheckpointArgumentError, match="url"):
        RedisCheckpointStore("http://127.0.0.1:6379")
    with pytest.raises(CheckpointArgumentError, match="prefix"):
        RedisCheckpointStore("redis://127.0.0.1:6379", prefix="")
