"""A UserProxyAgent waiting inside its turn is a pending request (issue 20 item 6).

While the agent waits for its input function, the run writes a ``wait`` checkpoint with
the request (id, who asked, what was asked) pending, so it is listed by the store and
``flowlib runs pending``. If the process dies (SIGKILL) or the run is cancelled while it
waits, another process answers by id: the run resumes, the asking turn runs again and
takes the answer instead of asking, and the answer counts once (a second answer is
refused and runs nothing).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from _agents import Fake

from flowlib.agents import UserProxyAgent
from flowlib.base import CancellationToken
from flowlib.checkpoint import CheckpointRecord, SQLiteCheckpointStore
from flowlib.errors import CheckpointError, RequestAlreadyAnsweredError
from flowlib.messages import TextMessage, UserInputRequestedEvent
from flowlib.teams import RoundRobinGroupChat


def team(store: SQLiteCheckpointStore, answers: list[str]) -> RoundRobinGroupChat:
    """``a`` then the user, three turns; the user's input function replies from
    ``answers`` (it must not be called when the reply was given by ``answer()``)."""

    async def ask(prompt: str, token: CancellationToken | None) -> str:
        if not answers:
            await asyncio.Event().wait()  # the person never answers in this process
        return answers.pop(0)

    user = UserProxyAgent("user", input_func=ask)
    return RoundRobinGroupChat([Fake("a"), user], max_turns=3, checkpoint_store=store)


def texts(messages: Sequence[object]) -> list[str]:
    return [f"{m.source}:{m.to_text()}" for m in messages if isinstance(m, TextMessage)]


async def test_a_waiting_user_proxy_is_listed_and_answered_once_in_another_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointStore(path)
    asked: list[UserInputRequestedEvent] = []

    async def consume() -> None:
        async for item in team(store, []).run_stream(task="Book it?", run_id="trip"):
            if isinstance(item, UserInputRequestedEvent):
                asked.append(item)

    running = asyncio.create_task(consume())
    while not asked:
        await asyncio.sleep(0.01)
    # Listed while the process still waits (another store object: another process).
    reader = SQLiteCheckpointStore(path)
    pending = await reader.list_pending()
    assert [(p.run_id, p.request_id, p.asked, p.kind, p.question) for p in pending] == [
        ("trip", asked[0].request_id, "user", "input", "a1")
    ]
    running.cancel()  # the fault: the run is interrupted while the person is asked
    with pytest.raises(asyncio.CancelledError):
        await running
    await store.close()
    assert [p.request_id for p in await reader.list_pending()] == [asked[0].request_id]
    await reader.close()

    answered_by = SQLiteCheckpointStore(path)  # another process answers by id
    result = await team(answered_by, []).answer("trip", asked[0].request_id, "yes")
    assert texts(result.messages) == ["user:yes", "a:a2"]
    assert await answered_by.list_pending() == []
    with pytest.raises(RequestAlreadyAnsweredError):
        await team(answered_by, []).answer("trip", asked[0].request_id, "yes again")
    whole = (await answered_by.load("trip")).messages
    assert [m["content"] for m in whole] == ["Book it?", "a1", "yes", "a2"]
    await answered_by.close()


class DiesAtTheFirstTurn(SQLiteCheckpointStore):
    """A store whose process "dies" (the append raises) when the first turn record is
    written: what was written before it (the answer, in the run state) stays."""

    dead = False

    async def append(self, record: CheckpointRecord, **kwargs: Any) -> None:
        self.dead = self.dead or record.kind == "turn"
        if self.dead:  # nothing more is written, as after a SIGKILL
            raise CheckpointError("the process died here")
        await super().append(record, **kwargs)


async def test_an_answer_taken_by_a_process_that_died_is_not_lost_or_counted_twice(
    tmp_path: Path,
) -> None:
    """The answering process writes the answer into the run state before the asking
    turn runs again; if it dies then, the next resume gives the turn that answer (the
    input function is not called) and the request stays answered."""
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointStore(path)
    asked: list[str] = []
    async with aclosing(team(store, []).run_stream(task="Book it?", run_id="trip")) as stream:
        async for item in stream:
            if isinstance(item, UserInputRequestedEvent):
                asked.append(item.request_id)
                break  # the consumer leaves: the run is interrupted while asking
    await store.close()

    dying = DiesAtTheFirstTurn(path)
    with pytest.raises(CheckpointError, match="died here"):
        await team(dying, []).answer("trip", asked[0], "yes")
    await dying.close()

    resumed = SQLiteCheckpointStore(path)
    assert await resumed.list_pending() == []
    with pytest.raises(RequestAlreadyAnsweredError):
        await team(resumed, []).answer("trip", asked[0], "yes again")
    result = await asyncio.wait_for(team(resumed, []).resume_run("trip"), timeout=60)
    assert texts(result.messages) == ["user:yes", "a:a2"]
    assert [m["content"] for m in (await resumed.load("trip")).messages] == [
        "Book it?",
        "a1",
        "yes",
        "a2",
    ]
    await resumed.close()


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    sys.path[:0] = [{tests!r}]
    from flowlib.agents import UserProxyAgent
    from flowlib.checkpoint import SQLiteCheckpointStore
    from flowlib.teams import RoundRobinGroupChat
    from _agents import Fake

    async def ask(prompt, token):
        print("asked", flush=True)
        await asyncio.Event().wait()

    async def main():
        store = SQLiteCheckpointStore({path!r})
        user = UserProxyAgent("user", input_func=ask)
        team = RoundRobinGroupChat([Fake("a"), user], max_turns=3, checkpoint_store=store)
        team.lease_ttl = 1.0
        await team.start_run("Book it?", run_id="trip")

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_a_process_killed_while_its_user_proxy_waits_is_answered_by_another(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    tests = str(Path(__file__).resolve().parent.parent)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(tests=tests, path=str(path))],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"asked"
    reader = SQLiteCheckpointStore(path)
    deadline = time.monotonic() + 60
    while not (pending := await reader.list_pending()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)  # the process dies while the person is asked
    child.wait()
    child.stdout.close()
    assert [(p.run_id, p.asked, p.kind) for p in pending] == [("trip", "user", "input")]
    await reader.close()

    store = SQLiteCheckpointStore(path)
    result = await team(store, ["no, the person answered by id"]).answer(
        "trip", pending[0].request_id, "yes"
    )
    assert texts(result.messages) == ["user:yes", "a:a2"]
    with pytest.raises(RequestAlreadyAnsweredError):
        await team(store, []).answer("trip", pending[0].request_id, "yes")
    assert [m["content"] for m in (await store.load("trip")).messages] == [
        "Book it?",
        "a1",
        "yes",
        "a2",
    ]
    assert await store.list_pending() == []
    await store.close()
