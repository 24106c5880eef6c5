"""Checkpointed runs (issue 10, API in docs/state.md): a checkpoint after every recorded
turn, resume in a fresh team, fork, graph checks, flat bytes per turn, Swarm handoff to a
user across processes. Over the in-memory and SQLite stores, and PostgreSQL once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _agents import Fake, texts

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken
from flowlib.checkpoint import (
    CheckpointStore,
    InMemoryCheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    fold,
)
from flowlib.conditions import HandoffTermination, MaxMessageTermination
from flowlib.errors import (
    ArgumentTypeError,
    CheckpointArgumentError,
    InvalidArgumentError,
    NodeExecutionError,
    StateError,
)
from flowlib.messages import HandoffMessage, TextMessage
from flowlib.models import CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, Swarm

GUARD = 60


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    opened: CheckpointStore
    if request.param == "memory":
        opened = InMemoryCheckpointStore()
    else:
        opened = SQLiteCheckpointStore(str(tmp_path / "runs.db"))
    yield opened
    await opened.close()


def chain(agents: Sequence[Fake], store: CheckpointStore | None, **kw: Any) -> GraphFlow:
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for first, second in itertools.pairwise(agents):
        builder.add_edge(first.name, second.name)
    return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store, **kw)


def call(name: str) -> CreateResult:
    usage = RequestUsage(prompt_tokens=1, completion_tokens=1)
    content = [FunctionCall(id="call_1", arguments="{}", name=name)]
    return CreateResult(finish_reason="function_calls", content=content, usage=usage, cached=False)


def fakes(*names: str, **kw: Any) -> list[Fake]:
    return [Fake(name, **kw) for name in names]


# --- a checkpoint per turn ---------------------------------------------------------------


async def test_a_checkpoint_after_every_turn_and_at_the_stop(store: CheckpointStore) -> None:
    flow = chain(fakes("A", "B", "C"), store)
    result = await flow.run(task="go", run_id="r1")
    assert result.run_id == "r1"
    history = await store.history("r1")
    assert [(h.kind, h.node) for h in history] == [
        ("start", None),
        ("turn", "A"),
        ("turn", "B"),
        ("turn", "C"),
        ("stop", None),
    ]
    assert [h.message_count for h in history] == [1, 1, 1, 1, 0]
    records = await store.records("r1")
    assert [r.bookkeeping["edges_fired"] for r in records] == [
        [],
        [["A", "B"]],
        [["B", "C"]],
        [],
        [],
    ]
    run = await store.get_run("r1")
    assert run is not None and run.status == "complete" and run.turns == 3


async def test_run_id_is_generated_and_reported() -> None:
    flow = chain(fakes("A"), None)
    first, second = await flow.run(task="a"), await flow.run(task="b")
    assert first.run_id and second.run_id and first.run_id != second.run_id
    assert (await flow.run(task="c", run_id="mine")).run_id == "mine"


async def test_each_checkpoint_is_written_before_its_messages_are_seen(
    store: CheckpointStore,
) -> None:
    flow = chain(fakes("A", "B"), store)
    seen_before: list[tuple[str, int]] = []
    async for item in flow.run_stream(task="go", run_id="r"):
        if isinstance(item, TextMessage) and item.source != "user":
            history = await store.history("r")
            seen_before.append((item.source, len([h for h in history if h.kind == "turn"])))
    assert seen_before == [("A", 1), ("B", 2)]


# --- resume ------------------------------------------------------------------------------


async def test_resume_after_an_error_in_a_fresh_team(store: CheckpointStore) -> None:
    first = chain([Fake("A"), Fake("B"), Fake("C", fail=RuntimeError("down"))], store)
    with pytest.raises(NodeExecutionError) as caught:
        await first.run(task="go", run_id="job")
    assert caught.value.partial_result.run_id == "job"  # type: ignore[attr-defined]
    run = await store.get_run("job")
    assert run is not None and run.status == "failed"

    a, b, c = fakes("A", "B", "C")
    fresh = chain([a, b, c], store)
    result = await fresh.run(run_id="job")
    assert texts(result.messages) == ["C:C1"]
    assert (a.turns, b.turns, c.turns) == (1, 1, 1)  # A and B's states were loaded
    assert a.seen == [] and b.seen == []  # ... and they did not run again
    assert c.seen == [["user:go", "A:A1", "B:B1"]]


async def test_resume_after_a_cancellation_never_repeats_a_finished_turn(
    store: CheckpointStore,
) -> None:
    token = CancellationToken()

    async def cancel(agent: Fake, turn: int) -> None:
        token.cancel()
        await asyncio.Event().wait()

    first = chain([Fake("A"), Fake("B"), Fake("C", before_reply=cancel)], store)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(first.run(task="go", run_id="job", cancellation_token=token), GUARD)
    a, b, c = fakes("A", "B", "C")
    result = await chain([a, b, c], store).run(run_id="job")
    assert texts(result.messages) == ["C:C1"]
    assert a.seen == [] and b.seen == []


async def test_resume_restores_the_agents_model_contexts(store: CheckpointStore) -> None:
    def team() -> RoundRobinGroupChat:
        agents = [
            AssistantAgent(name, ReplayChatCompletionClient([f"{name}{i}" for i in range(4)]))
            for name in ("x", "y")
        ]
        return RoundRobinGroupChat(agents, max_turns=3, checkpoint_store=store)

    first = team()
    await first.run(task="start", run_id="talk")
    fresh = team()
    result = await fresh.run(run_id="talk")  # resumes after `max_turns` with y, x, y
    assert [m.source for m in result.messages] == ["y", "x", "y"]
    x = fresh.participants[0]
    assert isinstance(x, AssistantAgent)
    context = [getattr(m, "content", None) for m in await x.model_context.get_messages()]
    assert context[:3] == ["start", "x0", "y0"]


async def test_a_completed_run_returns_its_stored_result(store: CheckpointStore) -> None:
    done = await chain(fakes("A", "B"), store).run(task="go", run_id="done")
    a, b = fakes("A", "B")
    again = await chain([a, b], store).run(run_id="done")
    assert texts(again.messages) == texts(done.messages)
    assert again.stop_reason == done.stop_reason and again.run_id == "done"
    assert a.seen == [] and b.seen == []


async def test_a_new_task_is_a_new_turn_of_the_run(store: CheckpointStore) -> None:
    await chain(fakes("A", "B"), store).run(task="one", run_id="r")
    a, b = fakes("A", "B")
    result = await chain([a, b], store).run(task="two", run_id="r")
    assert texts(result.messages) == ["user:two", "A:A2", "B:B2"]
    assert a.seen == [["B:B1", "user:two"]]  # A had seen `one` in the first process


async def test_the_same_team_continues_its_run_without_reloading(store: CheckpointStore) -> None:
    agents = fakes("A", "B")
    flow = chain(agents, store, max_turns=1)
    await flow.run(task="go", run_id="r")
    result = await flow.run(run_id="r")
    assert texts(result.messages) == ["B:B1"]
    records = await store.records("r")
    assert [r.checkpoint_id for r in records] == list(range(1, len(records) + 1))


async def test_exit_durability_writes_only_at_stops(store: CheckpointStore) -> None:
    flow = chain(fakes("A", "B", "C"), store, durability="exit")
    await flow.run(task="go", run_id="r")
    history = await store.history("r")
    assert [h.kind for h in history] == ["start", "stop"]  # the first holds the task
    assert [h.message_count for h in history] == [1, 3]
    a, b, c = fakes("A", "B", "C")
    again = await chain([a, b, c], store).run(task="more", run_id="r")
    assert texts(again.messages) == ["user:more", "A:A2", "B:B2", "C:C2"]


# --- graph checks, fork -----------------------------------------------------------------


async def test_resuming_with_another_graph_names_what_differs(store: CheckpointStore) -> None:
    await chain(fakes("A", "B"), store, max_turns=1).run(task="go", run_id="r")
    other = chain(fakes("A", "C"), store, max_turns=1)
    with pytest.raises(StateError) as caught:
        await other.run(run_id="r")
    message = str(caught.value)
    assert "`B`" in message and "`C`" in message and "A -> B" in message


async def test_fork_continues_from_a_past_checkpoint(store: CheckpointStore) -> None:
    await chain(fakes("A", "B", "C"), store).run(task="go", run_id="orig")
    history = await store.history("orig")
    after_a = next(h.checkpoint_id for h in history if h.node == "A")
    a, b, c = fakes("A", "B", "C")
    forked = chain([a, b, c], store)
    result = await forked.run(run_id="fork", fork_from=("orig", str(after_a)))
    assert texts(result.messages) == ["B:B1", "C:C1"]
    assert a.seen == []
    run = await store.get_run("fork")
    assert run is not None and run.forked_from == ("orig", after_a)
    original = await store.history("orig")
    assert original == history  # the source run is untouched


async def test_bad_durable_arguments_are_named(store: CheckpointStore) -> None:
    with pytest.raises(ArgumentTypeError, match="checkpoint_store"):
        chain(fakes("A"), "runs.db")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="durability"):
        chain(fakes("A"), store, durability="always")  # type: ignore[arg-type]
    flow = chain(fakes("A"), store)
    with pytest.raises(InvalidArgumentError, match="fork_from"):
        await flow.run(run_id="x", fork_from=("orig",))  # type: ignore[arg-type]
    with pytest.raises(CheckpointArgumentError, match="nope"):
        await flow.run(run_id="x", fork_from=("nope", 1))
    with pytest.raises(InvalidArgumentError, match="fork_from"):
        await chain(fakes("A"), None).run(run_id="x", fork_from=("orig", 1))
    with pytest.raises(InvalidArgumentError, match="run_id"):
        await flow.run(run_id="")


# --- bytes per turn ------------------------------------------------------------------------


def record_sizes(records: Sequence[Any], *turns: int) -> list[int]:
    """The JSON size of the ``turn`` records at the given (1-based) turns, time left out."""
    sizes = []
    for turn in turns:
        record = records[turn - 1]
        sizes.append(len(record.model_dump_json(exclude={"created_at"})))
    return sizes


async def test_bytes_per_turn_do_not_grow_with_the_run() -> None:
    store = InMemoryCheckpointStore()
    team = RoundRobinGroupChat(fakes("x", "y"), max_turns=2000, checkpoint_store=store)
    await team.run(task="start", run_id="long")
    records = [r for r in await store.records("long") if r.kind == "turn"]
    assert len(records) == 2000
    early, late = record_sizes(records, 10, 2000)
    assert abs(late - early) <= 0.05 * early, (early, late)


@pytest.mark.parametrize(
    "turns", [pytest.param(300, id="300"), pytest.param(2000, id="2000", marks=pytest.mark.slow)]
)
async def test_an_agents_growing_model_context_is_stored_as_appends(turns: int) -> None:
    store = InMemoryCheckpointStore()
    replies = [f"reply {i:05d}" for i in range(turns // 2)]
    agents = [AssistantAgent(name, ReplayChatCompletionClient(replies)) for name in ("x", "y")]
    team = RoundRobinGroupChat(agents, max_turns=turns, checkpoint_store=store)
    await team.run(task="start", run_id="long")
    records = [r for r in await store.records("long") if r.kind == "turn"]
    assert len(records) == turns
    early, late = record_sizes(records, 10, turns)
    assert abs(late - early) <= 0.05 * early, (early, late)


# --- human in the loop across processes ----------------------------------------------------


async def test_swarm_handoff_to_user_then_resume_in_a_fresh_team(
    store: CheckpointStore,
) -> None:
    def swarm(model: ReplayChatCompletionClient) -> Swarm:
        alice = AssistantAgent("Alice", model, handoffs=["user"])
        termination = HandoffTermination(target="user") | MaxMessageTermination(3)
        return Swarm([alice], termination_condition=termination, checkpoint_store=store)

    first = await swarm(ReplayChatCompletionClient([call("transfer_to_user")])).run(
        task="What is bob's birthday?", run_id="hitl"
    )
    assert first.stop_reason == "Handoff to user from Alice detected."

    # Another request, another process: the same configuration and the user's answer.
    model = ReplayChatCompletionClient(["It is on 1st January.", "Bye."])
    answer = HandoffMessage(source="user", target="Alice", content="Bob was born on 1st January.")
    resumed = await swarm(model).run(task=answer, run_id="hitl")
    assert texts(resumed.messages)[:2] == [
        "user:Bob was born on 1st January.",
        "Alice:It is on 1st January.",
    ]
    said = [f"{m.source}:{m.content}" for m in model.requests[0] if hasattr(m, "source")]
    assert said[0] == "user:What is bob's birthday?"
    assert said[-1] == "user:Bob was born on 1st January."
    # Forked from the handoff without the user's answer, the fork is where the source
    # stopped: its stored result, and nothing runs (issue 20: a fork of a stopped
    # checkpoint with no task used to run on; here it was refused, nobody continuing).
    history = await store.history("hitl")
    handed_off = next(h.checkpoint_id for h in history if h.kind == "stop")
    idle = ReplayChatCompletionClient([])
    fork = await swarm(idle).run(run_id="hitl2", fork_from=("hitl", handed_off))
    assert fork.stop_reason == "Handoff to user from Alice detected."
    assert idle.requests == []


# --- PostgreSQL ----------------------------------------------------------------------------


async def test_resume_in_a_fresh_team_and_store_on_postgresql(postgres_dsn: str) -> None:
    def team(store: CheckpointStore, fail: bool) -> tuple[GraphFlow, list[Fake]]:
        agents = [Fake("A"), Fake("B"), Fake("C", fail=RuntimeError("x") if fail else None)]
        return chain(agents, store), agents

    first_store = PostgresCheckpointStore(postgres_dsn)
    first, _ = team(first_store, True)
    with pytest.raises(NodeExecutionError):
        await first.run(task="go", run_id="pg")
    await first_store.close()
    second_store = PostgresCheckpointStore(postgres_dsn)
    try:
        second, (a, b, _) = team(second_store, False)
        result = await second.run(run_id="pg")
        assert texts(result.messages) == ["C:C1"]
        assert a.seen == [] and b.seen == []
        run = await second_store.get_run("pg")
        assert run is not None and run.status == "complete"
    finally:
        await second_store.close()


# --- a write interrupted after the store committed it ---------------------------------------


class SlowAfterCommit(InMemoryCheckpointStore):
    """Commits a record, then keeps the writer waiting: cancelled there, the writer cannot
    know whether the record was stored."""

    def __init__(self) -> None:
        super().__init__()
        self.hold_at: int | None = None
        self.held = asyncio.Event()

    async def append(self, record: Any, *, status: Any, lease_owner: str | None = None) -> None:
        await super().append(record, status=status, lease_owner=lease_owner)
        if record.checkpoint_id == self.hold_at:
            self.held.set()
            await asyncio.Event().wait()


async def test_a_write_cancelled_after_its_commit_is_counted_once() -> None:
    store = SlowAfterCommit()
    store.hold_at = 3  # start (with the task), A's turn, then B's turn
    agents = fakes("A", "B", "C")
    flow = chain(agents, store)
    running = asyncio.ensure_future(flow.run(task="go", run_id="r"))
    await asyncio.wait_for(store.held.wait(), GUARD)
    running.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await running
    # B's turn was recorded (its checkpoint is in the store): its reply is in the result.
    partial = caught.value.partial_result  # type: ignore[attr-defined]
    assert texts(partial.messages) == ["user:go", "A:A1", "B:B1"]
    store.hold_at = None
    stopped = await store.history("r")
    assert [h.kind for h in stopped][-2:] == ["turn", "stop"]  # the stop was written after it
    result = await flow.run(run_id="r")  # the same team goes on writing where it was
    assert texts(result.messages) == ["C:C1"]
    records = await store.records("r")
    assert [r.checkpoint_id for r in records] == list(range(1, len(records) + 1))
    nodes = [r.node for r in records if r.kind == "turn"]
    assert nodes == ["A", "B", "C"]
    a, b, c = fakes("A", "B", "C")
    again = await chain([a, b, c], store).run(run_id="r")
    assert texts(again.messages) == texts(result.messages)  # stored result, nothing re-run
    assert a.seen == b.seen == c.seen == []


class FailingWrites(InMemoryCheckpointStore):
    """Refuses ``failures`` appends from the ``first``-th on (a store that was briefly down)."""

    def __init__(self, first: int, failures: int) -> None:
        super().__init__()
        self.first, self.failures, self.appends = first, failures, 0

    async def append(self, record: Any, *, status: Any, lease_owner: str | None = None) -> None:
        self.appends += 1
        if self.first <= self.appends < self.first + self.failures:
            raise ConnectionError("store down")
        await super().append(record, status=status, lease_owner=lease_owner)


async def test_messages_of_failed_writes_go_into_the_next_record() -> None:
    store = FailingWrites(first=3, failures=2)  # B's turn record and the stop record fail
    flow = chain(fakes("A", "B", "C"), store, max_turns=2)
    with pytest.raises(ConnectionError):
        await flow.run(task="go", run_id="r")
    # The same team goes on; its next record catches up. The interrupted run had spent
    # its budget (2 turns), so it stops at once, as the uninterrupted run did (issue 20:
    # max_turns counts per run, not per run() call); the next run() is a new budget.
    resumed = await flow.run(run_id="r")
    assert resumed.stop_reason == "Maximum number of turns 2 reached."
    await flow.run(run_id="r")
    state = await flow.save_state()
    thread = state["agent_states"]["GraphFlowManager"]["message_thread"]
    folded = fold(await store.records("r"))
    assert [m["content"] for m in folded.messages] == [m["content"] for m in thread]
    assert [m["content"] for m in thread] == ["go", "A1", "B1", "C1"]


async def test_a_run_killed_after_its_first_record_resumes_with_its_task() -> None:
    # Killed (every write from the second on fails) right after the first record: that
    # record holds the task, so a fresh team resumes with no task and A still gets it.
    dying = FailingWrites(first=2, failures=1_000)
    with pytest.raises(ConnectionError):
        await chain(fakes("A", "B"), dying).run(task="go", run_id="r")
    store = InMemoryCheckpointStore()
    run = await dying.get_run("r")
    assert run is not None
    await store.create_run(run.model_copy(update={"last_checkpoint": 0}))
    for record in await dying.records("r"):
        await store.append(record, status="running")
    assert [h.kind for h in await store.history("r")] == ["start"]
    a, b = fakes("A", "B")
    result = await chain([a, b], store).run(run_id="r")
    assert a.seen == [["user:go"]]
    assert texts(result.messages) == ["A:A1", "B:B1"]


async def test_fifty_concurrent_runs_on_one_sqlite_store_all_resume(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(str(tmp_path / "many.db"))
    try:
        first = [
            chain([Fake("A"), Fake("B"), Fake("C", fail=RuntimeError("down"))], store)
            for _ in range(50)
        ]
        outcomes = await asyncio.gather(
            *(team.run(task=f"job {i}", run_id=f"job-{i}") for i, team in enumerate(first)),
            return_exceptions=True,
        )
        assert all(isinstance(o, NodeExecutionError) for o in outcomes)
        fresh = [chain(fakes("A", "B", "C"), store) for _ in range(50)]
        results = await asyncio.gather(
            *(team.run(run_id=f"job-{i}") for i, team in enumerate(fresh))
        )
        assert [texts(r.messages) for r in results] == [["C:C1"]] * 50
        for i, team in enumerate(fresh):
            a, _, c = team.participants
            assert isinstance(c, Fake) and c.seen == [[f"user:job {i}", "A:A1", "B:B1"]]
            assert isinstance(a, Fake) and a.seen == []
    finally:
        await store.close()
