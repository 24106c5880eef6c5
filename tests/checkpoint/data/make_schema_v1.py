"""How ``schema_v1.db`` was made: run with the code of the commit before the schema
version was introduced (schema "v1": the tables as flowlib wrote them before it kept a
version), from the repository root:

    PYTHONPATH=. python tests/checkpoint/data/make_schema_v1.py tests/checkpoint/data/schema_v1.db

The file holds three runs of a two-agent ``RoundRobinGroupChat`` of ``AssistantAgent``s
with replayed replies: ``talk`` (stopped by ``max_turns=3``, resumable), ``done``
(complete, then pruned to its last 2 records) and ``fork`` (forked from ``talk`` at
checkpoint 2). ``tests/checkpoint/test_schema.py`` opens a copy, upgrades it and resumes.
"""

from __future__ import annotations

import asyncio
import os
import sys

from flowlib.agents import AssistantAgent
from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.conditions import TextMentionTermination
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import RoundRobinGroupChat


def team(store: SQLiteCheckpointStore, **kw: object) -> RoundRobinGroupChat:
    agents = [
        AssistantAgent(name, ReplayChatCompletionClient([f"{name}{i}" for i in range(8)]))
        for name in ("x", "y")
    ]
    return RoundRobinGroupChat(agents, checkpoint_store=store, **kw)  # type: ignore[arg-type]


async def main(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)
    store = SQLiteCheckpointStore(path)
    await team(store, max_turns=3).run(task="start", run_id="talk")
    await team(store, termination_condition=TextMentionTermination("y2")).run(
        task="go", run_id="done"
    )
    await store.prune("done", keep_last=2)
    await team(store, max_turns=2).run(run_id="fork", fork_from=("talk", "2"))
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
