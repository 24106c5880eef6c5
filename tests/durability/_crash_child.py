"""A process that runs a drawn graph against a SQLite store and may SIGKILL itself.

Run by ``test_sigkill.py`` as ``python _crash_child.py PLAN.json``. The plan names the
pickled ``GraphSpec``, the database, the run id, the side-effect ledger file, whether to
start the run (with a task) or resume it, and where to die:

- ``{"turn": k, "yields": j}``: inside the k-th turn started, after j awaits;
- ``{"turn": k, "after_effect": true}``: the k-th turn finished and left its side
  effect, and its reply was not returned yet;
- ``{"append": n}``: right after the n-th checkpoint of this process was committed.

Exit status 0: the run ended; the parent sees -SIGKILL when the process killed itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import sys
from typing import Any

from _durable import CHILD_LEASE_TTL, Ledger, Trigger, team_of, when_lease_free

from flowlib.checkpoint import SQLiteCheckpointStore


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillingStore:
    """A store that kills the process right after its n-th append committed."""

    def __init__(self, inner: SQLiteCheckpointStore, after: int) -> None:
        self._inner = inner
        self._left = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append(self, record: Any, *, status: Any, lease_owner: str | None = None) -> None:
        await self._inner.append(record, status=status, lease_owner=lease_owner)
        self._left -= 1
        if self._left == 0:
            die()


async def main(plan: dict[str, Any]) -> None:
    with open(plan["spec"], "rb") as handle:
        spec = pickle.load(handle)
    store: Any = SQLiteCheckpointStore(plan["db"])
    kill = plan.get("kill") or {}
    trigger = None
    if "append" in kill:
        store = KillingStore(store, kill["append"])
    elif "turn" in kill:
        trigger = Trigger(
            at_turn=kill["turn"],
            yields=kill.get("yields", 0),
            after_effect=kill.get("after_effect", False),
            fire=die,
        )
    team = team_of(spec, store, Ledger(plan["ledger"]), trigger)
    team.lease_ttl = CHILD_LEASE_TTL
    try:
        if plan["start"]:
            await team.run(task="go", run_id=plan["run_id"])
        else:
            await when_lease_free(lambda: team.run(run_id=plan["run_id"]))
    finally:
        await store.close()


if __name__ == "__main__":
    with open(sys.argv[1]) as plan_file:
        asyncio.run(main(json.load(plan_file)))
