"""A process that runs a map-reduce graph against a SQLite store and may SIGKILL itself.

Run by ``test_map_sigkill.py`` as ``python _map_child.py DB LEDGER ITEMS CONCURRENCY
KILL_AFTER``: a planner splits ITEMS into sub-questions, one researcher instance per
item (at most CONCURRENCY at once) appends ``<index>`` to LEDGER when it finishes, a
writer joins them. With KILL_AFTER > 0 the process kills itself right after its
KILL_AFTER-th checkpoint was committed; with KILL_AFTER = 0 it resumes the run (or runs
it whole) and prints the transcript as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow


class KillingStore:
    """A store that kills the process right after its n-th append committed."""

    def __init__(self, inner: SQLiteCheckpointStore, after: int) -> None:
        self._inner = inner
        self._left = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append(self, record: Any, *, status: Any, lease_owner: Any = None) -> None:
        await self._inner.append(record, status=status, lease_owner=lease_owner)
        self._left -= 1
        if self._left == 0:
            os.kill(os.getpid(), signal.SIGKILL)


def split(message: BaseChatMessage | None) -> list[str]:
    text = message.to_text() if message is not None else ""
    return [item for item in text.split(";") if item]


def team(store: Any, ledger: str, items: int, concurrency: int) -> GraphFlow:
    def planner(messages: list[BaseChatMessage]) -> str:
        return ";".join(f"q{i}" for i in range(items))

    async def researcher(messages: list[BaseChatMessage]) -> str:
        item = messages[0].to_text()
        # Later items finish first, so completion order differs from item order.
        await asyncio.sleep(0.002 * (items - int(item[1:])))
        with open(ledger, "a", encoding="utf-8") as handle:
            handle.write(item + "\n")
        return f"answer to {item}"

    def writer(messages: list[BaseChatMessage]) -> str:
        return " | ".join(m.to_text() for m in messages if m.source.startswith("researcher"))

    builder = DiGraphBuilder().add_node(planner).add_node(researcher)
    builder.add_node(writer, activation="all")
    builder.add_edge("planner", "researcher", map=split, max_concurrency=concurrency)
    builder.add_edge("researcher", "writer")
    return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)


async def main(db: str, ledger: str, items: int, concurrency: int, kill_after: int) -> None:
    inner = SQLiteCheckpointStore(db)
    store: Any = KillingStore(inner, kill_after) if kill_after else inner
    flow = team(store, ledger, items, concurrency)
    existing = await inner.get_run("r")
    if existing is None:
        result = await flow.run(task="question", run_id="r")
    else:
        result = await flow.run(run_id="r")
    await inner.close()
    history = [[m.source, m.to_text()] for m in result.messages]
    print(json.dumps(history))


if __name__ == "__main__":
    db, ledger, items, concurrency, kill_after = sys.argv[1:6]
    asyncio.run(main(db, ledger, int(items), int(concurrency), int(kill_after)))
