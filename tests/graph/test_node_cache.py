"""Cached node results (issue 23.4) on the real cache stores: SQLite, diskcache and a
redis-server started by the test. See docs/graph-semantics.md, "Node policies"."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.graph import CachePolicy
from flowlib.messages import BaseChatMessage, NodeCacheHitEvent, TextMessage
from flowlib.models import (
    CacheStore,
    DiskCacheStore,
    InMemoryStore,
    RedisStore,
    ReplayChatCompletionClient,
    SQLiteStore,
)
from flowlib.teams import DiGraphBuilder, GraphFlow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=workdir,
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
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield ("127.0.0.1", port)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["sqlite", "diskcache", "redis"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], CacheStore[Any]]]:
    """A factory of store handles on one underlying store (each run opens its own, as a
    new process would)."""
    if request.param == "sqlite":
        yield lambda: SQLiteStore(tmp_path / "cache.db")
    elif request.param == "diskcache":
        import diskcache

        opened: list[Any] = []

        def disk() -> CacheStore[Any]:
            cache = diskcache.Cache(str(tmp_path / "disk"))
            opened.append(cache)
            return DiskCacheStore(cache)

        yield disk
        for cache in opened:
            cache.close()
    else:
        import redis

        host, port = request.getfixturevalue("redis_url")
        clients: list[Any] = []
        prefix = f"{request.node.name}:"

        def remote() -> CacheStore[Any]:
            client = redis.Redis(host=host, port=port)
            clients.append(client)
            return RedisStore(client, prefix=prefix)

        yield remote
        for client in clients:
            client.close()


def researcher(answers: list[str]) -> tuple[AssistantAgent, ReplayChatCompletionClient]:
    client = ReplayChatCompletionClient(answers)
    return AssistantAgent("researcher", client), client


def flow(agent: AssistantAgent, policy: CachePolicy) -> GraphFlow:
    builder = DiGraphBuilder().add_node(agent, cache=policy)
    return GraphFlow(builder.get_participants(), builder.build())


async def test_the_second_run_hits_and_calls_no_model(store: Callable[[], CacheStore[Any]]) -> None:
    agent, client = researcher(["first answer"])
    first = await flow(agent, CachePolicy(store=store())).run(task="What is 2+2?")
    assert [m.to_text() for m in first.messages] == ["What is 2+2?", "first answer"]
    assert len(client.requests) == 1

    # A fresh agent (another process, say) whose model would answer differently.
    again, again_client = researcher(["second answer"])
    team = flow(again, CachePolicy(store=store()))
    items = [item async for item in team.run_stream(task="What is 2+2?")]
    texts = [m.to_text() for m in items if isinstance(m, TextMessage)]
    assert texts == ["What is 2+2?", "first answer"]
    hits = [e for e in items if isinstance(e, NodeCacheHitEvent)]
    assert [e.source for e in hits] == ["researcher"]
    assert team.trace.cache_hits == [0]
    assert len(again_client.requests) == 0


async def test_changed_input_misses(store: Callable[[], CacheStore[Any]]) -> None:
    agent, _ = researcher(["about two"])
    await flow(agent, CachePolicy(store=store())).run(task="What is 2+2?")
    other, other_client = researcher(["about three"])
    team = flow(other, CachePolicy(store=store()))
    result = await team.run(task="What is 1+2?")
    assert result.messages[-1].to_text() == "about three"
    assert team.trace.cache_hits == []
    assert len(other_client.requests) == 1


async def test_an_entry_past_its_ttl_is_a_miss(
    store: Callable[[], CacheStore[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, _ = researcher(["old"])
    await flow(agent, CachePolicy(store=store(), ttl=60)).run(task="q")
    fresh, _ = researcher(["unused"])
    team = flow(fresh, CachePolicy(store=store(), ttl=60))
    assert (await team.run(task="q")).messages[-1].to_text() == "old"  # within the TTL
    later = time.time() + 61
    monkeypatch.setattr("flowlib.graph._guard._now", lambda: later)
    expired, client = researcher(["new"])
    team = flow(expired, CachePolicy(store=store(), ttl=60))
    assert (await team.run(task="q")).messages[-1].to_text() == "new"
    assert team.trace.cache_hits == []
    assert len(client.requests) == 1


async def test_a_key_function_decides_what_matches() -> None:
    calls: list[str] = []

    def answer(messages: list[BaseChatMessage]) -> str:
        calls.append(messages[-1].to_text())
        return f"answer {len(calls)}"

    def last_word(messages: Any) -> str:
        return str(messages[-1].to_text().split()[-1])

    shared = InMemoryStore[Any]()
    policy = CachePolicy(store=shared, key=last_word)
    for task in ("tell me about cats", "what about cats", "and dogs"):
        builder = DiGraphBuilder().add_node(answer, cache=policy)
        await GraphFlow(builder.get_participants(), builder.build()).run(task=task)
    assert calls == ["tell me about cats", "and dogs"]


def test_a_cache_policy_needs_a_store() -> None:
    with pytest.raises(ValueError, match="cache store"):
        CachePolicy(store={})
