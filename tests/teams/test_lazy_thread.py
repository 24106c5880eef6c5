"""A resumed run does not rebuild every message it ever published (issue 20 item 9).

Rebuilding each stored message as a pydantic model made resume O(run length): about
1.6 s at 10,000 turns. The thread keeps loaded messages as their dumps and builds one
when it is first read, so a resumed run builds only what its next turns read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _agents import Fake

from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.errors import StateError
from flowlib.graph import Thread
from flowlib.messages import MessageFactory, StopMessage, TextMessage
from flowlib.teams import RoundRobinGroupChat

TURNS = 40


def team(store: SQLiteCheckpointStore, max_turns: int) -> RoundRobinGroupChat:
    return RoundRobinGroupChat([Fake("a"), Fake("b")], max_turns=max_turns, checkpoint_store=store)


async def test_a_resumed_run_builds_only_the_messages_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointStore(path)
    first = await team(store, TURNS).run(task="go", run_id="long")
    assert len(first.messages) == TURNS + 1
    await store.close()

    built: list[str] = []
    load = TextMessage.load.__func__  # type: ignore[attr-defined]

    def counting(cls: type[TextMessage], data: Any) -> TextMessage:
        built.append(data["content"])
        return load(cls, data)  # type: ignore[no-any-return]

    monkeypatch.setattr(TextMessage, "load", classmethod(counting))
    store = SQLiteCheckpointStore(path)
    resumed = team(store, 2)
    result = await resumed.run(run_id="long")
    # The next speaker reads the one message new to it; nothing else is rebuilt.
    assert [m.to_text() for m in result.messages] == ["a21", "b21"]
    assert len(built) <= 2, built
    # The saved state still holds every message, unread ones exactly as stored.
    state = await resumed.save_state()
    thread = state["agent_states"]["RoundRobinGroupChatManager"]["message_thread"]
    assert [m["content"] for m in thread] == [
        "go",
        *[f"{'ab'[i % 2]}{i // 2 + 1}" for i in range(TURNS + 2)],
    ]
    assert len(built) <= 2, built
    # Reading the thread rebuilds the messages, once each.
    executor_thread = resumed._executor.scheduler.thread
    assert [m.to_text() for m in executor_thread][:3] == ["go", "a1", "b1"]
    assert executor_thread[1] is executor_thread[1]
    await store.close()


def test_a_stored_message_of_an_unknown_class_is_refused_at_load() -> None:
    thread = Thread(MessageFactory())
    with pytest.raises(StateError, match="type `Mystery` at thread position 1"):
        thread.load([TextMessage(content="x", source="a").dump(), {"type": "Mystery"}])
    with pytest.raises(StateError, match="no message type at thread position 0"):
        thread.load([["not", "a", "dump"]])
    assert len(thread) == 0  # a refused load adds nothing


def test_a_damaged_stored_message_is_a_state_error_when_read() -> None:
    thread = Thread(MessageFactory())
    good = TextMessage(content="x", source="a")
    thread.load([good.dump(), {"type": "TextMessage", "content": 3}])
    assert thread[0] == good
    assert thread.dumps() == [good.dump(), {"type": "TextMessage", "content": 3}]
    with pytest.raises(StateError, match="thread position 1 that does not load"):
        thread[-1]
    with pytest.raises(StateError, match="thread position 1"):
        list(thread)


def test_a_thread_reads_like_a_list() -> None:
    thread = Thread(MessageFactory())
    messages = [TextMessage(content=str(i), source="a") for i in range(4)]
    thread.extend(messages[:2])
    thread.load([m.dump() for m in messages[2:3]])
    thread.append(messages[3])
    assert thread == messages and thread != messages[:3]
    assert thread[1:3] == messages[1:3] and list(reversed(thread)) == messages[::-1]
    assert thread.index(messages[2]) == 2 and messages[3] in thread
    assert thread.dumps(1, 3) == [m.dump() for m in messages[1:3]]
    thread.clear()
    assert len(thread) == 0 and thread == []
    assert StopMessage(content="s", source="a") not in thread
