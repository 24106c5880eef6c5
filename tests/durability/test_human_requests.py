"""Human requests with ids (issue 20 item 6), across processes.

A run that stops for a person (a Swarm handing off to ``user``, a ``max_turns=1`` team, a
GraphFlow whose agent hands off to ``user``) records a pending request in its checkpoint;
``pending_requests(store)`` lists it from another process (a fresh store object on the
same file); ``team.answer(run_id, request_id, reply)`` runs the reply; the same answer
again is refused with ``RequestAlreadyAnsweredError`` and calls no model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flowlib.agents import AssistantAgent
from flowlib.checkpoint import CheckpointStore, SQLiteCheckpointStore
from flowlib.conditions import HandoffTermination
from flowlib.errors import HumanRequestError, RequestAlreadyAnsweredError
from flowlib.messages import HandoffMessage
from flowlib.models import CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from flowlib.teams import (
    BaseGroupChat,
    DiGraphBuilder,
    GraphFlow,
    RoundRobinGroupChat,
    Swarm,
    pending_requests,
)

USAGE = RequestUsage(prompt_tokens=1, completion_tokens=1)


def handoff_to_user() -> CreateResult:
    call = FunctionCall(id="c1", name="transfer_to_user", arguments="{}")
    return CreateResult(finish_reason="function_calls", content=[call], usage=USAGE, cached=False)


def swarm(store: CheckpointStore, model: ReplayChatCompletionClient) -> BaseGroupChat:
    alice = AssistantAgent("Alice", model, handoffs=["user"])
    return Swarm([alice], termination_condition=HandoffTermination("user"), checkpoint_store=store)


def one_turn(store: CheckpointStore, model: ReplayChatCompletionClient) -> BaseGroupChat:
    return RoundRobinGroupChat(
        [AssistantAgent("helper", model)], max_turns=1, checkpoint_store=store
    )


def graph_flow(store: CheckpointStore, model: ReplayChatCompletionClient) -> BaseGroupChat:
    planner = AssistantAgent("planner", model, handoffs=["user"])
    builder = DiGraphBuilder().add_node(planner)
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=HandoffTermination("user"),
        checkpoint_store=store,
    )


Build = Callable[[CheckpointStore, ReplayChatCompletionClient], BaseGroupChat]
CASES: dict[str, tuple[Build, str]] = {
    "swarm": (swarm, "Alice"),
    "max_turns_1": (one_turn, "helper"),
    "graph_flow": (graph_flow, "planner"),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_run_waiting_for_a_person_is_answered_once_across_processes(
    case: str, tmp_path: Path
) -> None:
    build, agent = CASES[case]
    path = tmp_path / "runs.db"
    first_model = ReplayChatCompletionClient(
        ["Which date?"] if case == "max_turns_1" else [handoff_to_user()]
    )
    store = SQLiteCheckpointStore(path)
    stopped = await build(store, first_model).start_run("Book a flight.", run_id="trip")
    await store.close()

    other = SQLiteCheckpointStore(path)  # another process
    pending = await pending_requests(other)
    assert [(p.run_id, p.request.asked, p.request.by) for p in pending] == [("trip", "user", agent)]
    request = pending[0].request
    assert request.question and request.created_at > 0 and stopped.stop_reason
    with pytest.raises(HumanRequestError, match="not waiting"):
        await build(other, ReplayChatCompletionClient([])).answer("trip", "nope", "hi")

    # The Swarm goes on with Alice until she hands off to the user again.
    then = [handoff_to_user()] if case == "swarm" else []
    model = ReplayChatCompletionClient(["Booked the 9:40 one.", *then])
    answered = await build(other, model).answer("trip", request.request_id, "The 9:40 one")
    reply = answered.messages[0]
    assert reply.source == "user" and reply.to_text().endswith("The 9:40 one")
    if case != "max_turns_1":
        assert isinstance(reply, HandoffMessage) and reply.target == agent
    assert "Booked the 9:40 one." in [m.to_text() for m in answered.messages]
    assert len(model.requests) == 1 + len(then)
    await other.close()

    third = SQLiteCheckpointStore(path)  # the same answer delivered again, elsewhere
    idle = ReplayChatCompletionClient([])
    before = len(await third.history("trip"))
    with pytest.raises(RequestAlreadyAnsweredError) as caught:
        await build(third, idle).answer("trip", request.request_id, "The 9:40 one")
    assert caught.value.request_id == request.request_id
    assert idle.requests == []  # no turn ran again
    assert len(await third.history("trip")) == before
    assert [p.request.request_id for p in await pending_requests(third)] != [request.request_id]
    await third.close()
