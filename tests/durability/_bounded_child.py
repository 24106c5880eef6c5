"""A process that runs a bounded team (``_bounded.build``) and may SIGKILL itself.

Run by ``test_bounded_sigkill.py`` as ``python _bounded_child.py KIND BOUND URL MODE AT``:
``MODE`` is ``start`` (``start_run`` with the task, killed at model call ``AT``; -1:
never) or ``resume`` (``resume_run``). Exit status 0: the run ended; -SIGKILL: killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from _bounded import build
from _durable import CHILD_LEASE_TTL, when_lease_free

from flowlib.checkpoint import open_store


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(kind: str, bound: str, url: str, mode: str, at: int) -> None:
    store = open_store(url)
    try:
        if mode == "start":
            team = build(kind, bound, store, [at] if at >= 0 else None, die)
            team.lease_ttl = CHILD_LEASE_TTL
            await team.start_run("start", run_id="r")
        else:
            await when_lease_free(lambda: build(kind, bound, store).resume_run("r"))
    finally:
        await store.close()


if __name__ == "__main__":
    kind, bound, url, mode, at = sys.argv[1:]
    asyncio.run(main(kind, bound, url, mode, int(at)))
