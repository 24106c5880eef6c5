"""The team the fork tests fork, and faults at a store's write points.

Used by ``test_fork.py`` and by the process it SIGKILLs (``python _fork_team.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any

from flowlib.checkpoint import CheckpointStore, SQLiteCheckpointStore, open_store
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent

WRITES = ("INSERT", "UPDATE", "DELETE", "COMMIT")


CHILD_LEASE_TTL = 0.5
"""The killed child's lease on the fork lasts this long: the retry waits it out (a dead
process's lease blocks its run until it expires, issue 20 item 5)."""


def chain(store: CheckpointStore | None, *, lease_ttl: float = 30.0) -> GraphFlow:
    """A -> B -> C, each replying ``<name><turn>``."""
    builder = DiGraphBuilder()
    for name in "ABC":
        builder.add_node(ScriptedAgent(name, lambda i, _m, name=name: f"{name}{i}"))
    builder.add_edge("A", "B").add_edge("B", "C")
    flow = GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)
    flow.lease_ttl = lease_ttl
    return flow


async def lease_gone(store: CheckpointStore, run_id: str) -> None:
    """Wait until nobody holds an unexpired lease on ``run_id`` (a killed child's)."""
    deadline = time.time() + 60
    while True:
        lease = await store.get_lease(run_id)
        if lease is None or lease.expires_at < time.time():
            return
        assert time.time() < deadline, lease
        await asyncio.sleep(0.05)


class FaultyConnection:
    """A sqlite3 connection that fails at its ``at``-th write statement (1-based; the
    ``COMMIT`` counts), before it runs it, or right after it when ``after``; failing is
    ``fault()`` (raise, or kill the process)."""

    def __init__(
        self, conn: sqlite3.Connection, at: int, fault: Callable[[], None], *, after: bool
    ) -> None:
        self._conn = conn
        self._at = at
        self._fault = fault
        self._after = after
        self.writes = 0
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def _write(self, sql: str, run: Callable[[], Any]) -> Any:
        if not sql.lstrip().upper().startswith(WRITES):
            return run()
        self.writes += 1
        if self.writes != self._at:
            return run()
        self.fired = True
        if not self._after:
            self._fault()
        result = run()
        self._fault()
        return result

    def execute(self, sql: str, *args: Any) -> Any:
        return self._write(sql, lambda: self._conn.execute(sql, *args))

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._write(sql, lambda: self._conn.executemany(sql, *args))


async def with_fault(store: SQLiteCheckpointStore, connection: FaultyConnection) -> None:
    """Put ``connection`` (made on the store's own connection) in the store."""
    assert store._conn is not None
    store._conn = connection  # type: ignore[assignment]


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def child(url: str, source: str, checkpoint: int, fork: str, at: int, after: bool) -> None:
    """Fork ``source`` at ``checkpoint`` into ``fork``; SQLite: die at the ``at``-th write
    (PostgreSQL: the parent kills this process while the server is stalled)."""
    store = open_store(url)
    await store.list_runs()  # connect first, so the fault sees only the fork's writes
    if isinstance(store, SQLiteCheckpointStore) and at > 0:
        assert store._conn is not None
        await with_fault(store, FaultyConnection(store._conn, at, die, after=after))
    print("forking", flush=True)
    await chain(store, lease_ttl=CHILD_LEASE_TTL).run(run_id=fork, fork_from=(source, checkpoint))
    await store.close()


if __name__ == "__main__":
    url, source, checkpoint, fork, at, after = sys.argv[1:]
    asyncio.run(child(url, source, int(checkpoint), fork, int(at), after == "after"))
