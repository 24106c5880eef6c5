"""Edit, then continue (issue 20 item 7; LangGraph's ``update_state``).

``team.edit_run(run_id, append=..., replace=..., author=..., reason=...)`` writes the
edited thread as a new checkpoint whose bookkeeping records who and why; the run then
goes on with ``continue_run``/``resume_run`` and the agents receive the edit. A fork is
edited alone. An edit while the run's lease is held, or with a bad index, is refused by
name and changes nothing. On SQLite and the real PostgreSQL fixture, with a fresh team
and a fresh store object (as another process would).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from flowlib.agents import AssistantAgent
from flowlib.checkpoint import CheckpointStore, PostgresCheckpointStore, SQLiteCheckpointStore
from flowlib.errors import (
    InvalidArgumentError,
    NodeExecutionError,
    RunLeaseError,
    RunNotFoundError,
)
from flowlib.messages import TextMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import BaseGroupChat, RoundRobinGroupChat


def team(store: CheckpointStore, model: ReplayChatCompletionClient) -> BaseGroupChat:
    return RoundRobinGroupChat(
        [AssistantAgent("helper", model)], max_turns=2, checkpoint_store=store
    )


def replies() -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient([f"reply {i}" for i in range(10)])


def seen(model: ReplayChatCompletionClient) -> str:
    """What the model was sent in its last call."""
    return " | ".join(str(getattr(m, "content", m)) for m in model.requests[-1])


@pytest.fixture(params=["sqlite", "postgres"])
async def opener(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[], CheckpointStore]]:
    opened: list[CheckpointStore] = []

    def open_store() -> CheckpointStore:
        store: CheckpointStore
        if request.param == "sqlite":
            store = SQLiteCheckpointStore(tmp_path / "runs.db")
        else:
            store = PostgresCheckpointStore(request.getfixturevalue("postgres_dsn"))
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        await store.close()


async def test_an_edit_is_an_audited_checkpoint_and_a_fresh_team_continues_with_it(
    opener: Callable[[], CheckpointStore],
) -> None:
    store = opener()
    run_id = f"edit-{id(store)}"
    first = await team(store, replies()).start_run("plan the trip", run_id=run_id)
    assert [m.to_text() for m in first.messages][-1] == "reply 1"
    before = len(await store.history(run_id))
    # A fresh team on a fresh store object (another process) edits the stopped run.
    editor = opener()
    checkpoint = await team(editor, replies()).edit_run(
        run_id,
        replace={0: TextMessage(content="plan the trip to Oslo", source="user")},
        append=[TextMessage(content="use the night train", source="operator")],
        author="ops@example.com",
        reason="the customer called",
    )
    assert checkpoint == before + 1
    last = (await editor.records(run_id))[-1]
    assert last.checkpoint_id == checkpoint
    edit = last.bookkeeping["edit"]
    assert (edit["author"], edit["reason"]) == ("ops@example.com", "the customer called")
    assert (edit["appended"], edit["replaced"]) == (1, [0])
    folded = await editor.load(run_id)
    assert folded.messages[0]["content"] == "plan the trip to Oslo"
    assert folded.messages[-1]["content"] == "use the night train"
    # Yet another fresh team continues: the agent is sent the appended message.
    model = replies()
    more = await team(opener(), model).continue_run(run_id)
    assert "use the night train" in seen(model)
    assert more.stop_reason == "Maximum number of turns 2 reached."
    texts = [str(m.get("content")) for m in (await opener().load(run_id)).messages]
    assert texts[0] == "plan the trip to Oslo"
    assert "use the night train" in texts


async def test_a_fork_is_edited_alone(opener: Callable[[], CheckpointStore]) -> None:
    store = opener()
    source = f"src-{id(store)}"
    fork = f"fork-{id(store)}"
    await team(store, replies()).start_run("draft a poem", run_id=source)
    at = len(await store.history(source))
    source_records = [r.model_dump() for r in await store.records(source)]
    await team(store, replies()).fork_run(source, at=at, run_id=fork)
    await team(store, replies()).edit_run(
        fork,
        append=[TextMessage(content="make it rhyme", source="editor")],
        author="editor",
        reason="try a variant",
    )
    assert [r.model_dump() for r in await store.records(source)] == source_records
    model = replies()
    await team(opener(), model).continue_run(fork)
    assert "make it rhyme" in seen(model)
    assert not any(
        "make it rhyme" in str(m.get("content")) for m in (await store.load(source)).messages
    )


async def test_an_edit_of_a_run_being_executed_or_a_bad_edit_changes_nothing(
    opener: Callable[[], CheckpointStore],
) -> None:
    store = opener()
    run_id = f"busy-{id(store)}"
    await team(store, replies()).start_run("count", run_id=run_id)
    records = [r.model_dump() for r in await store.records(run_id)]
    note = [TextMessage(content="x", source="ops")]
    await store.acquire_lease(run_id, "another-host:1:executor", ttl=60)
    with pytest.raises(RunLeaseError):
        await team(opener(), replies()).edit_run(run_id, append=note, author="a", reason="r")
    await store.release_lease(run_id, "another-host:1:executor")
    with pytest.raises(InvalidArgumentError, match="no message 99"):
        await team(store, replies()).edit_run(
            run_id, replace={99: note[0]}, append=note, author="a", reason="r"
        )
    with pytest.raises(InvalidArgumentError, match="author"):
        await team(store, replies()).edit_run(run_id, append=note, author=" ", reason="r")
    with pytest.raises(RunNotFoundError):
        await team(store, replies()).edit_run("nope", append=note, author="a", reason="r")
    assert [r.model_dump() for r in await store.records(run_id)] == records
    assert await store.get_lease(run_id) is None or (
        (await store.get_lease(run_id)).owner != "another-host:1:executor"  # type: ignore[union-attr]
    )


async def test_an_interrupted_run_is_edited_then_resumed_with_its_budget(
    opener: Callable[[], CheckpointStore],
) -> None:
    store = opener()
    run_id = f"failed-{id(store)}"

    def three(model: ReplayChatCompletionClient) -> BaseGroupChat:
        return RoundRobinGroupChat(
            [AssistantAgent("helper", model)], max_turns=3, checkpoint_store=opener()
        )

    with pytest.raises(NodeExecutionError):  # the model gives out after one reply
        await three(ReplayChatCompletionClient(["reply 0"])).start_run("go", run_id=run_id)
    await three(replies()).edit_run(
        run_id,
        append=[TextMessage(content="skip step two", source="ops")],
        author="ops",
        reason="step two is broken",
    )
    model = replies()
    resumed = await three(model).resume_run(run_id)
    assert "skip step two" in seen(model)
    assert resumed.stop_reason == "Maximum number of turns 3 reached."
    assert len(model.requests) == 2  # the budget continued: 1 turn ran before the edit
