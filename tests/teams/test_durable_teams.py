"""Every team kind resumes from its checkpoints (issue 10: "every team constructor takes
`checkpoint_store=`"): `RoundRobinGroupChat`, `SelectorGroupChat` (its router's thread and
model context), `Swarm`, `MagenticOneGroupChat` (its orchestrator's ledgers), a
`GraphFlow` with a nested team, and the `DebateTeam` of examples/debate_team.py (a team
written outside flowlib on its public extension points).

Every model answers as a function of what it is sent (not of how often it was called), so
a fresh team that resumes a run must reproduce the uninterrupted run exactly: the run is
interrupted by a model failure at each turn in turn, resumed in a fresh team on the same
store, and its stored transcript and its agents' model contexts are compared with the
uninterrupted run's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.base import Handoff
from flowlib.checkpoint import CheckpointStore, InMemoryCheckpointStore, SQLiteCheckpointStore, fold
from flowlib.conditions import TextMentionTermination
from flowlib.errors import NodeExecutionError
from flowlib.messages import TextMessage
from flowlib.models import (
    CreateResult,
    FunctionCall,
    LLMMessage,
    ReplayChatCompletionClient,
    RequestUsage,
)
from flowlib.teams import (
    BaseGroupChat,
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)

Answer = Callable[[Sequence[LLMMessage]], "str | CreateResult"]


class Scripted(ReplayChatCompletionClient):
    """A model whose answer is ``answer(messages)``; it fails on call ``fail_at`` (and on
    that call only), as a model server that goes down for one request."""

    def __init__(self, answer: Answer, fail: list[Any] | None = None) -> None:
        super().__init__(["unused"])
        self._answer = answer
        # Shared by a team's clients: [calls left before the failure, and, to hang rather
        # than raise, an event set when the call that hangs has started].
        self._fail = fail

    async def create(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> CreateResult:
        if self._fail is not None and self._fail[0] >= 0:
            self._fail[0] -= 1
            if self._fail[0] < 0:
                if len(self._fail) > 1:
                    self._fail[1].set()
                    await asyncio.Event().wait()  # in flight until the run is cancelled
                raise RuntimeError("the model server is down")
        answer = self._answer(messages)
        if isinstance(answer, CreateResult):
            return answer
        usage = RequestUsage(prompt_tokens=len(messages), completion_tokens=1)
        return CreateResult(finish_reason="stop", content=answer, usage=usage, cached=False)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, **kwargs)


def says(name: str) -> Answer:
    return lambda messages: f"{name} heard {len(messages)}"


def assistant(name: str, fail: list[int] | None, **kwargs: Any) -> AssistantAgent:
    return AssistantAgent(name, Scripted(says(name), fail), **kwargs)


def bound(stop: str | None, turns: int) -> dict[str, Any]:
    """End at the message that mentions ``stop`` or, for the probe run, after ``turns``
    turns. (``max_turns`` counts the turns of one ``run()`` call, so a resumed run would
    run more turns in all; the text ends it where the uninterrupted run ended.)"""
    if stop is None:
        return {"max_turns": turns}
    return {"termination_condition": TextMentionTermination(stop)}


def round_robin(
    store: CheckpointStore | None, fail: list[int] | None, stop: str | None
) -> BaseGroupChat:
    agents = [assistant(name, fail) for name in ("a", "b", "c")]
    return RoundRobinGroupChat(agents, checkpoint_store=store, **bound(stop, 9))


def selector(
    store: CheckpointStore | None, fail: list[int] | None, stop: str | None
) -> BaseGroupChat:
    names = ("a", "b", "c")

    def pick(messages: Sequence[LLMMessage]) -> str:
        return names[sum(len(str(m.content)) for m in messages) % 3]

    agents = [assistant(name, fail) for name in names]
    return SelectorGroupChat(
        agents,
        model_client=Scripted(pick, fail),
        allow_repeated_speaker=True,
        checkpoint_store=store,
        **bound(stop, 8),
    )


def swarm(store: CheckpointStore | None, fail: list[int] | None, stop: str | None) -> BaseGroupChat:
    def hand(target: str, name: str) -> Answer:
        def answer(messages: Sequence[LLMMessage]) -> str | CreateResult:
            if len(messages) % 3 == 0:
                call = FunctionCall(
                    id=f"c{len(messages)}", name=f"transfer_to_{target}", arguments="{}"
                )
                usage = RequestUsage(prompt_tokens=len(messages), completion_tokens=1)
                return CreateResult(
                    finish_reason="function_calls", content=[call], usage=usage, cached=False
                )
            return f"{name} heard {len(messages)}"

        return answer

    a = AssistantAgent("a", Scripted(hand("b", "a"), fail), handoffs=[Handoff(target="b")])
    b = AssistantAgent("b", Scripted(hand("a", "b"), fail), handoffs=[Handoff(target="a")])
    return Swarm([a, b], checkpoint_store=store, **bound(stop, 10))


def magentic(
    store: CheckpointStore | None, fail: list[int] | None, stop: str | None
) -> BaseGroupChat:
    # Ends by itself: the ledger says the request is satisfied once the request is long.
    def orchestrate(messages: Sequence[LLMMessage]) -> str:
        last = str(messages[-1].content)
        if last.startswith("We have been handed the request"):
            return "GIVEN FACTS: a question."
        if last.startswith("These are the members of the team"):
            return "- a answers\n- b checks"
        if last.startswith("As a reminder, the request"):
            done = len(messages) >= 12
            speaker = ("a", "b")[len(messages) % 2]
            return json.dumps(
                {
                    "is_request_satisfied": {"reason": "r", "answer": done},
                    "is_in_loop": {"reason": "r", "answer": False},
                    "is_progress_being_made": {"reason": "r", "answer": True},
                    "next_speaker": {"reason": "r", "answer": speaker},
                    "instruction_or_question": {"reason": "r", "answer": f"go {len(messages)}"},
                }
            )
        return f"final answer after {len(messages)}"

    agents = [assistant(name, fail) for name in ("a", "b")]
    return MagenticOneGroupChat(
        agents, model_client=Scripted(orchestrate, fail), checkpoint_store=store
    )


def nested(
    store: CheckpointStore | None, fail: list[int] | None, stop: str | None
) -> BaseGroupChat:
    inner = RoundRobinGroupChat(
        [assistant("x", fail), assistant("y", fail)], max_turns=3, name="inner"
    )
    first, last = assistant("a", fail), assistant("b", fail)
    builder = DiGraphBuilder().add_node(first).add_node(inner).add_node(last)
    builder.add_edge("a", "inner").add_edge("inner", "b").set_entry_point("a")
    builder.add_edge("b", "a", condition=lambda message: "heard 1" not in str(message.content))
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        checkpoint_store=store,
        **bound(stop, 12),
    )


def debate(
    store: CheckpointStore | None, fail: list[int] | None, stop: str | None
) -> BaseGroupChat:
    # examples/debate_team.py, a team written outside flowlib: it ends by itself when the
    # judge's reply holds the verdict (after the second round).
    from debate_team import DebateTeam

    def judge(messages: Sequence[LLMMessage]) -> str:
        return "VERDICT: a wins" if len(messages) >= 8 else f"judge heard {len(messages)}"

    agents = [assistant("a", fail), assistant("b", fail)]
    agents.append(AssistantAgent("judge", Scripted(judge, fail)))
    return DebateTeam(agents, checkpoint_store=store, max_turns=12)


sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

Build = Callable[[CheckpointStore | None, list[int] | None, str | None], BaseGroupChat]
TEAMS: dict[str, Build] = {
    "round_robin": round_robin,
    "selector": selector,
    "swarm": swarm,
    "magentic_one": magentic,
    "nested": nested,
    "debate": debate,
}


async def transcript(store: CheckpointStore, run_id: str) -> list[tuple[str, str]]:
    folded = fold(await store.records(run_id), run_id=run_id)
    return [(str(m.get("source")), str(m.get("content"))) for m in folded.messages]


async def contexts(team: BaseGroupChat) -> dict[str, Any]:
    """Every agent's model context, nested teams included."""
    found: dict[str, Any] = {}
    for participant in team.participants:
        if isinstance(participant, AssistantAgent):
            found[participant.name] = await participant.model_context.save_state()
        elif isinstance(participant, BaseGroupChat):
            found.update(await contexts(participant))
    return found


async def interrupt(team: BaseGroupChat, fail: list[Any], how: str) -> None:
    """Run until the model call ``fail`` names fails (``raise``) or, with the call in
    flight, the task awaiting the run is cancelled (``cancel``)."""
    if how == "raise":
        with pytest.raises(NodeExecutionError):
            await team.run(task="start", run_id="r")
        return
    started = asyncio.Event()
    fail.append(started)
    running = asyncio.ensure_future(team.run(task="start", run_id="r"))
    await asyncio.wait_for(started.wait(), 30)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


@pytest.mark.parametrize(
    ("kind", "how"), [("memory", "raise"), ("sqlite", "raise"), ("sqlite", "cancel")]
)
@pytest.mark.parametrize("team", sorted(TEAMS))
async def test_a_run_failed_at_any_model_call_resumes_to_the_uninterrupted_run(
    team: str, kind: str, how: str, tmp_path: Path
) -> None:
    build = TEAMS[team]
    probe = build(None, None, None)
    ended = await probe.run(task="start")
    texts = [m.to_text() for m in ended.messages if isinstance(m, TextMessage)]
    last = max(i for i, text in enumerate(texts) if texts.count(text) == 1)
    # Teams that end by themselves; for the others, the text's first mention ends the run.
    stop = None if team in ("magentic_one", "debate") else texts[last]
    calls = [10_000]
    reference_store = InMemoryCheckpointStore()
    reference = build(reference_store, calls, stop)
    await reference.run(task="start", run_id="r")
    want = await transcript(reference_store, "r")
    assert want[-1][1] == texts[last if stop else -1]
    want_contexts = await contexts(reference)
    made = 10_000 - calls[0]
    assert made >= 6, made
    for fail_at in range(made):
        store: CheckpointStore = (
            InMemoryCheckpointStore()
            if kind == "memory"
            else SQLiteCheckpointStore(str(tmp_path / f"{team}-{fail_at}.db"))
        )
        fail: list[Any] = [fail_at]
        await interrupt(build(store, fail, stop), fail, how)
        fresh = build(store, None, stop)
        await fresh.run(run_id="r")
        assert await transcript(store, "r") == want, fail_at
        assert await contexts(fresh) == want_contexts, fail_at
        await store.close()
