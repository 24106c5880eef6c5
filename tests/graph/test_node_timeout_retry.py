"""Node timeout, the teams' ``turn_timeout`` (one mechanism, issue 23.3 / issue 21.4) and
node retry (issue 23.2): see docs/graph-semantics.md, "Node policies"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _agents import Fake

from flowlib.agents import AssistantAgent
from flowlib.base import CancellationToken
from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.component import load_component
from flowlib.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    NodeExecutionError,
    NodeTimeoutError,
)
from flowlib.graph import DiGraph, RetryPolicy, is_transient
from flowlib.messages import BaseChatMessage, NodeRetryEvent, TextMessage
from flowlib.models import ModelResponseError, ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteCheckpointStore]:
    opened = SQLiteCheckpointStore(str(tmp_path / "runs.db"))
    yield opened
    await opened.close()


class Sleeper:
    """A function node that sleeps ``delay`` seconds (and notes being cancelled)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self.cancelled = 0
        self.__name__ = "sleeper"

    async def __call__(self, messages: list[BaseChatMessage]) -> str:
        self.calls += 1
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "slept"


def counted(name: str, counter: dict[str, int]) -> Any:
    def node(messages: list[BaseChatMessage]) -> str:
        counter[name] = counter.get(name, 0) + 1
        return name.upper()

    node.__name__ = name
    return node


# --- timeout --------------------------------------------------------------------------


async def test_a_sleeping_node_is_cancelled_at_its_deadline_and_the_run_resumes(
    store: SQLiteCheckpointStore,
) -> None:
    counter: dict[str, int] = {}
    sleeper = Sleeper(30)

    def flow(delay_node: Sleeper) -> GraphFlow:
        builder = DiGraphBuilder().add_node(counted("first", counter))
        builder.add_node(delay_node, timeout=0.2).add_node(counted("last", counter))
        builder.add_edge("first", "sleeper").add_edge("sleeper", "last")
        return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)

    started = asyncio.get_running_loop().time()
    with pytest.raises(NodeExecutionError) as raised:
        await flow(sleeper).run(task="go", run_id="job")
    waited = asyncio.get_running_loop().time() - started
    assert isinstance(raised.value.__cause__, NodeTimeoutError)
    assert raised.value.node == "sleeper"
    assert raised.value.__cause__.timeout == 0.2
    assert sleeper.calls == 1 and sleeper.cancelled == 1  # cancelled, not left running
    assert waited < 10  # far from the node's 30 s
    history = await store.history("job")
    assert history[-1].kind == "stop"
    # The failed turn is recorded as failed and resumable: a fresh team (the node fixed)
    # continues the stored run; the finished node does not run again.
    fixed = Sleeper(0)
    result = await flow(fixed).run(run_id="job")
    assert fixed.calls == 1
    assert counter == {"first": 1, "last": 1}
    assert [m.source for m in result.messages if isinstance(m, TextMessage)][-2:] == [
        "sleeper",
        "last",
    ]


async def test_a_timed_out_turn_counts_as_a_failed_attempt_for_retry() -> None:
    sleeper = Sleeper(30)

    async def sometimes_slow(messages: list[BaseChatMessage]) -> str:
        if sleeper.calls == 0:
            return await sleeper(messages)
        sleeper.calls += 1
        return "fast"

    builder = DiGraphBuilder().add_node(
        sometimes_slow,
        timeout=0.2,
        retry=RetryPolicy(max_attempts=2, initial_interval=0, jitter=False),
    )
    team = GraphFlow(builder.get_participants(), builder.build())
    events = [item async for item in team.run_stream(task="go")]
    retries = [e for e in events if isinstance(e, NodeRetryEvent)]
    assert len(retries) == 1 and retries[0].error.startswith("NodeTimeoutError")
    assert sleeper.cancelled == 1 and sleeper.calls == 2
    assert [m.to_text() for m in events if isinstance(m, TextMessage)] == ["go", "fast"]


async def test_the_team_turn_timeout_is_every_nodes_default_and_a_node_timeout_wins() -> None:
    async def wait(agent: Fake, turn: int) -> None:
        await asyncio.sleep(30 if agent.name == "slow" else 0.4)

    quick, slow = Fake("quick", before_reply=wait), Fake("slow", before_reply=wait)
    builder = DiGraphBuilder().add_node(quick, timeout=5).add_node(slow)
    builder.add_edge("quick", "slow")
    team = GraphFlow(builder.get_participants(), builder.build(), turn_timeout=0.2)
    assert team.turn_timeout == 0.2
    with pytest.raises(NodeExecutionError) as raised:
        await team.run(task="go")
    # `quick` took 0.4 s under its own 5 s deadline; `slow` hit the team's 0.2 s.
    assert raised.value.node == "slow"
    assert isinstance(raised.value.__cause__, NodeTimeoutError)
    assert quick.turns == 1


async def test_round_robin_turn_timeout_cancels_the_turn_and_run_resumes_it() -> None:
    hold = {"slow": True}

    async def wait(agent: Fake, turn: int) -> None:
        if agent.name == "b" and hold["slow"]:
            await asyncio.sleep(30)

    a, b = Fake("a", before_reply=wait), Fake("b", before_reply=wait)
    team = RoundRobinGroupChat([a, b], max_turns=3, turn_timeout=0.2)
    with pytest.raises(NodeExecutionError) as raised:
        await team.run(task="go")
    assert isinstance(raised.value.__cause__, NodeTimeoutError)
    assert raised.value.partial_result.messages[-1].source == "a"
    hold["slow"] = False
    result = await team.run()
    # A failed run's budget continues on resume (docs/state.md): `a`, the timed-out
    # turn of `b`, then its re-run and `a` make the three turns.
    assert [m.source for m in result.messages] == ["b", "a"]
    assert b.turns == 1


async def test_turn_timeout_round_trips_through_the_config() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
    team = RoundRobinGroupChat([agent], max_turns=2, turn_timeout=1.5)
    config = team.dump_component()
    assert config.config["turn_timeout"] == 1.5
    loaded = load_component(config.model_dump(mode="json"))
    assert isinstance(loaded, RoundRobinGroupChat) and loaded.turn_timeout == 1.5


async def test_node_timeout_and_retry_dump_and_load_with_the_graph() -> None:
    def a(messages: list[BaseChatMessage]) -> str:
        return "a"

    policy = RetryPolicy(max_attempts=4, retry_on=(ConnectionError, ModelResponseError))
    graph = DiGraphBuilder().add_node(a, timeout=2.5, retry=policy).build()
    data = graph.dump()
    assert data["nodes"]["a"]["timeout"] == 2.5
    assert data["nodes"]["a"]["retry"]["retry_on"] == [
        "ConnectionError",
        "flowlib.models._openai_request.ModelResponseError",
    ]
    loaded = DiGraph.load(data)
    assert loaded.nodes["a"].timeout == 2.5 and loaded.nodes["a"].retry == policy
    # A node without policies dumps as before (AutoGen's shape).
    assert set(DiGraphBuilder().add_node(a).build().dump()["nodes"]["a"]) == {
        "name",
        "edges",
        "activation",
        "kind",
    }


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "3", True])
def test_a_bad_timeout_is_a_named_error(bad: object) -> None:
    def a(messages: list[BaseChatMessage]) -> str:
        return "a"

    with pytest.raises(InvalidArgumentError, match="timeout"):
        DiGraphBuilder().add_node(a, timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="turn_timeout"):
        RoundRobinGroupChat([Fake("a")], max_turns=1, turn_timeout=bad)  # type: ignore[arg-type]


def test_a_policy_of_the_wrong_type_is_a_named_error() -> None:
    def a(messages: list[BaseChatMessage]) -> str:
        return "a"

    with pytest.raises(ArgumentTypeError, match="`retry` must be a RetryPolicy"):
        DiGraphBuilder().add_node(a, retry=3)  # type: ignore[arg-type]


# --- retry ----------------------------------------------------------------------------


class Flaky:
    """Fails ``failures`` times with ``error``, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0
        self.__name__ = "flaky"

    async def __call__(self, messages: list[BaseChatMessage]) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return f"answer after {self.calls} attempts"


def flaky_flow(flaky: Flaky, policy: RetryPolicy) -> GraphFlow:
    counter: dict[str, int] = {}
    builder = DiGraphBuilder().add_node(counted("first", counter))
    builder.add_node(flaky, retry=policy).add_node(counted("after", counter))
    builder.add_edge("first", "flaky").add_edge("flaky", "after")
    return GraphFlow(builder.get_participants(), builder.build())


async def test_failing_twice_then_succeeding_is_recorded_once_after_three_attempts() -> None:
    flaky = Flaky(2, ConnectionResetError("reset by peer"))
    team = flaky_flow(flaky, RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False))
    items = [item async for item in team.run_stream(task="go")]
    assert flaky.calls == 3
    messages = [m for m in items if isinstance(m, TextMessage)]
    assert [m.source for m in messages] == ["user", "first", "flaky", "after"]
    assert messages[2].content == "answer after 3 attempts"
    retries = [e for e in items if isinstance(e, NodeRetryEvent)]
    assert [(e.source, e.attempt, e.max_attempts) for e in retries] == [
        ("flaky", 1, 3),
        ("flaky", 2, 3),
    ]
    assert retries[0].error == "ConnectionResetError: reset by peer"
    assert [r.delay for r in retries] == [0.01, 0.02]
    # The trace: one step for the turn, marked with its three attempts.
    assert team.trace.steps == ["first", "flaky", "after"]
    assert team.trace.attempts == {1: 3}


async def test_a_non_retryable_error_fails_at_once() -> None:
    flaky = Flaky(1, KeyError("missing"))
    team = flaky_flow(flaky, RetryPolicy(max_attempts=5, initial_interval=0))
    events: list[Any] = []
    with pytest.raises(NodeExecutionError) as raised:
        async for item in team.run_stream(task="go"):
            events.append(item)
    assert flaky.calls == 1
    assert isinstance(raised.value.__cause__, KeyError)
    assert not [e for e in events if isinstance(e, NodeRetryEvent)]


async def test_the_failure_is_recorded_after_the_last_attempt_and_the_run_resumes() -> None:
    flaky = Flaky(5, ConnectionRefusedError("down"))
    team = flaky_flow(flaky, RetryPolicy(max_attempts=3, initial_interval=0))
    with pytest.raises(NodeExecutionError) as raised:
        await team.run(task="go")
    assert flaky.calls == 3 and isinstance(raised.value.__cause__, ConnectionRefusedError)
    assert team.trace.steps[-1] == "flaky"
    flaky.failures = 0
    result = await team.run()
    assert [m.source for m in result.messages] == ["flaky", "after"]


async def test_retry_on_lists_the_error_types() -> None:
    flaky = Flaky(1, KeyError("once"))
    team = flaky_flow(flaky, RetryPolicy(max_attempts=2, initial_interval=0, retry_on=(KeyError,)))
    result = await team.run(task="go")
    assert flaky.calls == 2 and result.messages[-1].source == "after"


async def test_a_retried_agent_starts_each_attempt_from_its_state_before_the_turn() -> None:
    fail = {"left": 1}

    class Remembering(Fake):
        async def on_messages_stream(self, messages: Any, token: CancellationToken) -> Any:
            self.seen.append([m.to_text() for m in messages])
            if fail["left"]:
                fail["left"] -= 1
                raise ConnectionError("dropped")
            async for item in super().on_messages_stream(messages, token):
                yield item

        async def save_state(self) -> dict[str, Any]:
            return {"seen": [list(s) for s in self.seen]}

        async def load_state(self, state: Any) -> None:
            self.seen = [list(s) for s in state["seen"]]

    agent = Remembering("agent")
    builder = DiGraphBuilder().add_node(agent, retry=RetryPolicy(initial_interval=0))
    team = GraphFlow(builder.get_participants(), builder.build())
    await team.run(task="go")
    assert agent.seen[0] == ["go"]  # the failed attempt's trace was rolled back


def test_the_default_retries_transport_errors_not_programming_errors() -> None:
    class APIConnectionError(Exception):  # the OpenAI SDK's, by name
        pass

    for error in (
        ConnectionResetError(),
        TimeoutError(),
        NodeTimeoutError("n", 1),
        ModelResponseError("stalled"),
        APIConnectionError(),
    ):
        assert is_transient(error), error
    for error in (KeyError("x"), TypeError(), ValueError(), AttributeError(), ZeroDivisionError()):
        assert not is_transient(error), error


def test_retry_policy_delays_grow_and_are_capped() -> None:
    policy = RetryPolicy(initial_interval=1, backoff=3, max_interval=5, jitter=False)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1, 3, 5, 5]
    jittered = RetryPolicy(initial_interval=1, backoff=2, jitter=True)
    assert all(0.5 <= jittered.delay(1) <= 1 for _ in range(50))


def test_retry_on_from_a_config_resolves_known_errors_only() -> None:
    assert RetryPolicy.model_validate({"retry_on": ["KeyError"]}).retry_on == (KeyError,)
    with pytest.raises(ValueError, match=r"os\.system"):
        RetryPolicy.model_validate({"retry_on": ["os.system"]})
