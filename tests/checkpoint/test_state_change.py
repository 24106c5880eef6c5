"""Incremental snapshots (`save_state_since`, docs/state.md): a checkpointed agent's state
change costs what its turn changed, and is always what the plain way gives.

- For any sequence of changes to a model context or an agent (appends, failed turns
  rolled back, clears, loads, resets), `save_state_since(base)` returns exactly
  ``json_state(save_state())`` and ``diff_state(base, state)``, whatever ``base`` is.
- A checkpointed conversation dumps each message once over the whole run (the work per
  turn does not grow with the conversation), and never saves a whole context after the
  first snapshot.
- Runs interrupted at every turn and resumed in a fresh team end with the model contexts
  of the uninterrupted run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

import flowlib.model_context._base as context_module
from flowlib.agents import AssistantAgent, CodeExecutorAgent, SocietyOfMindAgent
from flowlib.base import CancellationToken
from flowlib.checkpoint import (
    CheckpointStore,
    IncrementalState,
    InMemoryCheckpointStore,
    SQLiteCheckpointStore,
    StateChange,
    apply_patch,
    diff_state,
    json_state,
    state_change,
)
from flowlib.code_executors import LocalCommandLineCodeExecutor
from flowlib.errors import NodeExecutionError
from flowlib.messages import TextMessage
from flowlib.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    UnboundedChatCompletionContext,
)
from flowlib.models import (
    CreateResult,
    LLMMessage,
    ReplayChatCompletionClient,
    RequestUsage,
    UserMessage,
)
from flowlib.teams import (
    BaseGroupChat,
    DiGraphBuilder,
    GraphFlow,
    RoundRobinGroupChat,
    SelectorGroupChat,
)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text: tells 1, 1.0 and True apart, and dict key order matters."""
    return bool(to_json(a) == to_json(b))


async def check_change(source: Any, base: Any) -> StateChange:
    """``source.save_state_since(base)`` against the plain way; returns the change."""
    change = await source.save_state_since(base)
    plain = json_state(await source.save_state())
    assert same_json(change.state, plain)
    assert same_json(change.patch, diff_state(base, plain))
    assert apply_patch(base, change.patch) == plain
    return change


class SavesMore(UnboundedChatCompletionContext):
    """A user context whose saved state has a field of its own."""

    async def save_state(self) -> Mapping[str, Any]:
        return {**await super().save_state(), "note": len(self._messages)}


class TrimsInPlace(UnboundedChatCompletionContext):
    """A user context that trims its history in place when it grows past four."""

    async def add_message(self, message: LLMMessage) -> None:
        await super().add_message(message)
        if len(self._messages) > 4:
            del self._messages[0]


CONTEXTS = [
    UnboundedChatCompletionContext,
    lambda: BufferedChatCompletionContext(buffer_size=2),
    SavesMore,
    TrimsInPlace,
]

STEPS = st.lists(
    st.sampled_from(["add", "add", "add", "mark", "roll_back", "clear", "load", "snap", "snap"]),
    max_size=30,
)
BASES = st.sampled_from(["last", "last", "older", "none", "foreign"])


@settings(max_examples=150, deadline=None)
@given(kind=st.integers(0, len(CONTEXTS) - 1), steps=STEPS, bases=st.lists(BASES, min_size=30))
def test_a_context_change_is_what_the_plain_way_gives(
    kind: int, steps: list[str], bases: list[str]
) -> None:
    async def scenario() -> None:
        context: ChatCompletionContext = CONTEXTS[kind]()
        states: list[Any] = []
        point = context._rollback_point()
        saved = await context.save_state()
        for index, step in enumerate(steps):
            if step == "add":
                await context.add_message(UserMessage(content=f"m{index}", source="u"))
            elif step == "mark":
                point = context._rollback_point()
            elif step == "roll_back":
                context._roll_back(point)
            elif step == "clear":
                await context.clear()
            elif step == "load":
                await context.load_state(saved)
            else:
                choice = bases[index]
                base = {
                    "last": states[-1] if states else None,
                    "older": states[0] if states else None,
                    "none": None,
                    "foreign": {"messages": [], "type": "other"},
                }[choice]
                states.append((await check_change(context, base)).state)
                saved = await context.save_state()
        await check_change(context, states[-1] if states else None)

    asyncio.run(scenario())


class Counting(ReplayChatCompletionClient):
    """Answers with what it was sent (its name and the number of messages), so replies
    depend on the conversation and not on how often the client was called."""

    def __init__(self, name: str, fail_at: int | None = None) -> None:
        super().__init__(["unused"])
        self._name = name
        self._fail_at = fail_at
        self.calls = 0

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        self.calls += 1
        if self.calls == self._fail_at:
            raise RuntimeError("the model is down")
        usage = RequestUsage(prompt_tokens=len(messages), completion_tokens=1)
        content = f"{self._name} saw {len(messages)}"
        return CreateResult(finish_reason="stop", content=content, usage=usage, cached=False)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, **kwargs)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.sampled_from(["turn", "turn", "fail", "reset", "load", "snap"])))
def test_an_agent_change_is_what_the_plain_way_gives(steps: list[str]) -> None:
    async def scenario() -> None:
        client = Counting("a")
        agent = AssistantAgent("a", client, system_message="be brief")
        token = CancellationToken()
        last: Any = None
        saved = await agent.save_state()
        for index, step in enumerate(steps):
            message = TextMessage(content=f"t{index}", source="user")
            if step == "turn":
                await agent.on_messages([message], token)
            elif step == "fail":
                client._fail_at = client.calls + 1
                with pytest.raises(RuntimeError):
                    await agent.on_messages([message], token)
            elif step == "reset":
                await agent.on_reset(token)
            elif step == "load":
                await agent.load_state(saved)
            else:
                last = (await check_change(agent, last)).state
                saved = await agent.save_state()
        await check_change(agent, last)

    asyncio.run(scenario())


def talk(
    store: CheckpointStore | None, turns: int, fail_at: int | None = None
) -> RoundRobinGroupChat:
    agents = [
        AssistantAgent(name, Counting(name, fail_at if name == "b" else None))
        for name in ("a", "b")
    ]
    return RoundRobinGroupChat(agents, max_turns=turns, checkpoint_store=store)


async def contexts(team: RoundRobinGroupChat) -> list[Any]:
    found = []
    for agent in team.participants:
        assert isinstance(agent, AssistantAgent)
        found.append(await agent.model_context.save_state())
    return found


async def test_a_checkpointed_conversation_dumps_each_message_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dumped = 0
    whole = 0
    adapter = context_module._MESSAGES
    plain = context_module.json_state

    class CountingAdapter:
        def dump_python(self, messages: list[LLMMessage], **kwargs: Any) -> Any:
            nonlocal dumped
            dumped += len(messages)
            return adapter.dump_python(messages, **kwargs)

    def counting_json_state(state: Mapping[str, Any]) -> Any:
        nonlocal whole
        whole += 1
        return plain(state)

    monkeypatch.setattr(context_module, "_MESSAGES", CountingAdapter())
    monkeypatch.setattr(context_module, "json_state", counting_json_state)
    team = talk(InMemoryCheckpointStore(), 300)
    await team.run(task="start", run_id="long")
    held = sum(len(state["messages"]) for state in await contexts(team))
    # Each agent's first snapshot saves its (empty) context whole; after that, only the
    # messages each turn added are dumped.
    assert whole == 2
    assert dumped == held  # each message dumped once


def test_the_protocol_and_the_plain_way() -> None:
    class Plain:
        async def save_state(self) -> Mapping[str, Any]:
            return {"n": 1}

    assert isinstance(UnboundedChatCompletionContext(), IncrementalState)
    assert not isinstance(Plain(), IncrementalState)
    change = asyncio.run(state_change(Plain(), None))
    assert change == StateChange({"n": 1}, {"set": {"n": 1}})


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_runs_interrupted_at_every_turn_resume_to_the_uninterrupted_contexts(
    kind: str, tmp_path: Path
) -> None:
    turns = 12
    reference = talk(None, turns)
    await reference.run(task="start")
    want = await contexts(reference)
    for fail_at in range(1, turns // 2 + 1):
        store: CheckpointStore = (
            InMemoryCheckpointStore()
            if kind == "memory"
            else SQLiteCheckpointStore(str(tmp_path / f"{fail_at}.db"))
        )
        first = talk(store, turns, fail_at=fail_at)
        with pytest.raises(NodeExecutionError):
            await first.run(task="start", run_id="r")
        done = 2 * (fail_at - 1) + 1  # b fails on its fail_at-th turn
        assert done > 0
        # The resumed run continues the interrupted run's budget of max_turns (issue 20;
        # this test used to build the fresh team with `turns - done`).
        fresh = talk(store, turns)
        await fresh.run(run_id="r")
        assert await contexts(fresh) == want, fail_at
        await store.close()


# --- teams and routers -----------------------------------------------------------------


def selector_team(fail: list[int]) -> BaseGroupChat:
    names = ("a", "b")
    agents = [AssistantAgent(name, Counting(name)) for name in names]
    picker = Counting("pick")

    async def pick(messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        if fail and fail[0] == 0:
            fail.clear()
            raise RuntimeError("the selector's model is down")
        if fail:
            fail[0] -= 1
        usage = RequestUsage(prompt_tokens=1, completion_tokens=1)
        name = names[len(messages) % 2]
        return CreateResult(finish_reason="stop", content=name, usage=usage, cached=False)

    picker.create = pick  # type: ignore[method-assign]
    return SelectorGroupChat(agents, model_client=picker, allow_repeated_speaker=True, max_turns=3)


def nested_team(fail: list[int]) -> BaseGroupChat:
    x = AssistantAgent("x", Counting("x"))
    y = AssistantAgent("y", Counting("y", fail_at=fail[0] + 1 if fail else None))
    inner = RoundRobinGroupChat([x, y], max_turns=2, name="inner")
    first = AssistantAgent("a", Counting("a"))
    builder = DiGraphBuilder().add_node(first).add_node(inner)
    builder.add_edge("a", "inner").add_edge(
        "inner", "a", condition=lambda m: "9" not in str(m.content)
    )
    builder.set_entry_point("a")
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=3)


TEAM_STEPS = st.lists(st.sampled_from(["run", "run", "fail", "reset", "load", "snap", "snap"]))


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["selector", "nested"]), steps=TEAM_STEPS, older=st.booleans())
def test_a_team_change_is_what_the_plain_way_gives(
    kind: str, steps: list[str], older: bool
) -> None:
    async def scenario() -> None:
        fail: list[int] = []
        team = (selector_team if kind == "selector" else nested_team)(fail)
        states: list[Any] = []
        saved = await team.save_state()
        for step in steps:
            if step == "run":
                await team.run(task="go" if not states else None)
            elif step == "fail":
                fail[:] = [1]
                with contextlib.suppress(NodeExecutionError):
                    await team.run(task="go")
                fail.clear()
            elif step == "reset":
                await team.reset()
            elif step == "load":
                await team.load_state(saved)
            else:
                base = states[0] if older and states else (states[-1] if states else None)
                states.append((await check_change(team, base)).state)
                saved = await team.save_state()
        await check_change(team, states[-1] if states else None)

    asyncio.run(scenario())


def society_of_mind() -> SocietyOfMindAgent:
    inner = RoundRobinGroupChat(
        [AssistantAgent("x", Counting("x")), AssistantAgent("y", Counting("y"))], max_turns=2
    )
    return SocietyOfMindAgent("som", team=inner, model_client=Counting("som"))


def code_executor() -> CodeExecutorAgent:
    # The model answers without code, so nothing is executed. (Before, the agent had no
    # save_state_since: it was saved whole and compared.)
    return CodeExecutorAgent("coder", LocalCommandLineCodeExecutor(), model_client=Counting("c"))


@pytest.mark.parametrize("make_agent", [society_of_mind, code_executor])
@settings(max_examples=30, deadline=None)
@given(
    steps=st.lists(st.sampled_from(["turn", "turn", "reset", "load", "snap", "snap"])),
    older=st.booleans(),
)
def test_an_agent_of_parts_change_is_what_the_plain_way_gives(
    make_agent: Callable[[], SocietyOfMindAgent | CodeExecutorAgent],
    steps: list[str],
    older: bool,
) -> None:
    """A SocietyOfMindAgent (its inner team and model context) and a CodeExecutorAgent
    (its model context) report their parts' changes, which are what the plain way gives."""

    async def scenario() -> None:
        agent = make_agent()
        token = CancellationToken()
        states: list[Any] = []
        saved = await agent.save_state()
        for index, step in enumerate(steps):
            if step == "turn":
                await agent.on_messages([TextMessage(content=f"t{index}", source="user")], token)
            elif step == "reset":
                await agent.on_reset(token)
            elif step == "load":
                await agent.load_state(saved)
            else:
                base = states[0] if older and states else (states[-1] if states else None)
                states.append((await check_change(agent, base)).state)
                saved = await agent.save_state()
        await check_change(agent, states[-1] if states else None)

    asyncio.run(scenario())
