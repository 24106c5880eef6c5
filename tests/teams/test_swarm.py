"""Swarm: the speaker changes only by handoff; compiled to handoff edges and self-loops."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from flowlib.agents import AssistantAgent, BaseChatAgent, SocietyOfMindAgent
from flowlib.base import CancellationToken, Handoff, Response, TaskResult
from flowlib.conditions import HandoffTermination, MaxMessageTermination
from flowlib.errors import DuplicateNodeError, UnboundedLoopError, UnreachableNodeError
from flowlib.graph import AnyOf, DiGraph, HandoffTo, IsHandoff, Not, validate_graph
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    SelectSpeakerEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from flowlib.models import (
    CreateResult,
    FunctionCall,
    FunctionExecutionResultMessage,
    ReplayChatCompletionClient,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from flowlib.teams import RoundRobinGroupChat, Swarm
from flowlib.testing import ScriptedAgent

USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
TO_USER = (
    "Digraph execution is complete: `{agent}` handed off to `user`, which is not a "
    "participant of the swarm; resume with run(task=HandoffMessage(source=..., "
    "target=<a participant>, content=...))"
)


def calls(*names: str) -> CreateResult:
    """A model answer that calls the named tools (no arguments)."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"call_{i}", arguments="{}", name=n) for i, n in enumerate(names)],
        usage=USAGE,
        cached=False,
    )


def chat(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
    """``source:text`` of each chat message; handoffs as ``source->target``."""
    out = []
    for m in messages:
        if isinstance(m, HandoffMessage):
            out.append(f"{m.source}->{m.target}")
        elif isinstance(m, BaseChatMessage):
            out.append(f"{m.source}:{m.to_text()}")
    return out


class Relay(BaseChatAgent):
    """A model-free agent: each scripted reply is text, or ``"->name"`` for a handoff
    (past the script: ``"<name><turn>"``).

    ``handoffs`` is declared only when given, like an ``AssistantAgent``'s; without it the
    agent is like a ``UserProxyAgent`` or a custom agent, whose handoffs are not known.
    """

    def __init__(self, name: str, script: Sequence[str], handoffs: Sequence[str] | None = None):
        super().__init__(name, f"Relay {name}.")
        self.script = list(script)
        self.turns = 0
        self.seen: list[list[str]] = []
        if handoffs is not None:
            self.handoffs = list(handoffs)

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage, HandoffMessage)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        self.seen.append(chat(messages))
        turn = self.turns
        reply = self.script[turn] if turn < len(self.script) else f"{self.name}{turn + 1}"
        self.turns += 1
        if reply.startswith("->"):
            target = reply[2:]
            return Response(
                chat_message=HandoffMessage(content=f"to {target}", target=target, source=self.name)
            )
        return Response(chat_message=TextMessage(content=reply, source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.turns = 0
        self.seen.clear()

    async def save_state(self) -> Mapping[str, Any]:
        return {"turns": self.turns}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        self.turns = state["turns"]


# --- the compiled graph -------------------------------------------------------------------


def test_graph_has_an_edge_per_handoff_and_a_self_loop() -> None:
    alice = AssistantAgent(
        "Alice", ReplayChatCompletionClient([]), handoffs=["Bob", Handoff(target="user")]
    )
    bob = AssistantAgent("Bob", ReplayChatCompletionClient([]), handoffs=["Alice"])
    team = Swarm([alice, bob], max_turns=5)
    graph = team.graph
    assert graph.pattern == "swarm"
    assert graph.default_start_node == "Alice"
    edges = [(source, edge.target, edge.condition) for source, edge in graph.iter_edges()]
    # `user` is not a participant: no edge (a handoff to it ends the run).
    assert edges == [
        ("Alice", "Bob", HandoffTo(target="Bob")),
        ("Alice", "Alice", Not(condition=IsHandoff())),
        ("Bob", "Alice", HandoffTo(target="Alice")),
        ("Bob", "Bob", Not(condition=IsHandoff())),
    ]
    assert {node.activation for node in graph.nodes.values()} == {"any"}
    # Every condition is serialisable: the IR round-trips through JSON.
    loaded = DiGraph.load(json.loads(json.dumps(graph.dump())))
    assert loaded.dump() == graph.dump()
    handoff = HandoffMessage(content="", target="Bob", source="Alice")
    text = TextMessage(content="hi", source="Alice")
    assert [
        (e.check_condition(handoff), e.check_condition(text)) for e in loaded.nodes["Alice"].edges
    ] == [
        (True, False),
        (False, True),
    ]
    validate_graph(graph)


def test_agent_without_declared_handoffs_gets_an_edge_to_every_participant() -> None:
    team = Swarm([Relay("a", []), Relay("b", []), Relay("c", [], handoffs=[])], max_turns=5)
    edges = [(s, e.target, e.condition) for s, e in team.graph.iter_edges()]
    keep = Not(condition=IsHandoff())
    assert edges[:4] == [
        ("a", "b", HandoffTo(target="b")),
        ("a", "c", HandoffTo(target="c")),
        ("a", "a", AnyOf(conditions=[keep, HandoffTo(target="a")])),
        ("b", "a", HandoffTo(target="a")),
    ]
    # `c` declares that it hands off to nobody: only its self-loop.
    assert [e for e in edges if e[0] == "c"] == [("c", "c", keep)]


def test_unreachable_participants_are_allowed() -> None:
    # Nobody hands off to `bob`; a handoff task can still start him.
    team = Swarm([Relay("alice", [], handoffs=[]), Relay("bob", [], handoffs=[])], max_turns=2)
    assert list(team.graph.nodes) == ["alice", "bob"]
    with pytest.raises(UnreachableNodeError, match="`bob`"):
        validate_graph(team.graph, allow_unreachable=False)
    validate_graph(team.graph)  # a swarm's pattern allows it by default
    validate_graph(team.graph, allow_unreachable=True)


def test_defaults() -> None:
    team = Swarm([Relay("a", [])], max_turns=1)
    assert team.name == "Swarm" == Swarm.DEFAULT_NAME
    assert team.description == "A team of agents." == Swarm.DEFAULT_DESCRIPTION
    assert team.component_type == "team"


# --- construction errors ------------------------------------------------------------------


def test_nested_team_is_rejected() -> None:
    inner = RoundRobinGroupChat([ScriptedAgent("x", [])], name="inner", max_turns=1)
    with pytest.raises(ValueError, match="`inner` is a team"):
        Swarm([Relay("a", []), inner], max_turns=1)  # type: ignore[list-item]


def test_no_participants_duplicates_and_unbounded_loop_are_value_errors() -> None:
    with pytest.raises(ValueError, match="at least one participant"):
        Swarm([], max_turns=1)
    with pytest.raises(DuplicateNodeError, match="`a`"):
        Swarm([Relay("a", []), Relay("a", [])], max_turns=1)
    with pytest.raises(UnboundedLoopError):
        Swarm([Relay("a", [])])
    with pytest.raises(ValueError, match="runtime"):
        Swarm([Relay("a", [])], max_turns=1, runtime=object())


# --- running ------------------------------------------------------------------------------


async def test_first_participant_speaks_first_and_keeps_the_turn_without_handoff() -> None:
    a = Relay("a", ["a1", "a2", "a3"])
    b = Relay("b", ["b1"])
    team = Swarm([a, b], max_turns=3)
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a:a1", "a:a2", "a:a3"]
    assert result.stop_reason == "Maximum number of turns 3 reached."
    assert b.turns == 0


async def test_handoffs_pass_the_turn_and_everyone_sees_everything() -> None:
    a = Relay("a", ["->b", "a2"], handoffs=["b"])
    b = Relay("b", ["b1", "->c"], handoffs=["c"])
    c = Relay("c", ["c1", "->a"])
    team = Swarm([a, b, c], max_turns=6)
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a->b", "b:b1", "b->c", "c:c1", "c->a", "a:a2"]
    assert team.trace.steps == ["a", "b", "b", "c", "c", "a"]
    assert c.seen == [["user:go", "a->b", "b:b1", "b->c"], []]
    assert a.seen[-1] == ["b:b1", "b->c", "c:c1", "c->a"]


async def test_alice_hands_off_to_bob_with_a_model() -> None:
    alice_model = ReplayChatCompletionClient([calls("transfer_to_bob")])
    bob_model = ReplayChatCompletionClient(["Bob's birthday is on 1st January."])
    alice = AssistantAgent("Alice", alice_model, handoffs=["Bob"])
    bob = AssistantAgent("Bob", bob_model, system_message="You are Bob.")
    team = Swarm([alice, bob], termination_condition=MaxMessageTermination(3))
    result = await team.run(task="What is bob's birthday?")
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "HandoffMessage",
        "TextMessage",
    ]
    assert chat(result.messages) == [
        "user:What is bob's birthday?",
        "Alice->Bob",
        "Bob:Bob's birthday is on 1st January.",
    ]
    assert result.stop_reason == "Maximum number of messages 3 reached, current message count: 3"
    # Alice was offered the handoff tool; Bob saw the task and Alice's handoff.
    assert [t.name for t in alice_model.request_args[0]["tools"]] == ["transfer_to_bob"]
    (request,) = bob_model.requests
    assert request[0] == SystemMessage(content="You are Bob.")
    assert [(m.source, m.content) for m in request[1:] if isinstance(m, UserMessage)] == [
        ("user", "What is bob's birthday?"),
        ("Alice", "Transferred to Bob, adopting the role of Bob immediately."),
    ]


async def test_handoff_to_a_non_participant_ends_the_run_with_a_clear_reason() -> None:
    a = Relay("a", ["a1", "->user"], handoffs=["user"])
    team = Swarm([a, Relay("b", [])], max_turns=10)
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a:a1", "a->user"]
    assert result.stop_reason == TO_USER.format(agent="a")


async def test_handoff_termination_stops_first() -> None:
    model = ReplayChatCompletionClient([calls("transfer_to_user")])
    alice = AssistantAgent("Alice", model, handoffs=["user"])
    team = Swarm([alice], termination_condition=HandoffTermination(target="user"))
    result = await team.run(task="What is bob's birthday?")
    assert [type(m) for m in result.messages] == [
        TextMessage,
        ToolCallRequestEvent,
        ToolCallExecutionEvent,
        HandoffMessage,
    ]
    assert result.stop_reason == "Handoff to user from Alice detected."


async def test_resume_with_a_handoff_message_to_any_participant() -> None:
    a = Relay("a", ["->user"], handoffs=["user"])
    b = Relay("b", ["b1", "b2"])
    team = Swarm([a, b], max_turns=2)
    await team.run(task="go")
    task = HandoffMessage(source="user", target="b", content="b, take over")
    result = await team.run(task=task)
    assert chat(result.messages) == ["user->b", "b:b1", "b:b2"]
    assert b.seen == [["user:go", "a->user", "user->b"], []]


async def test_the_last_handoff_of_the_task_decides() -> None:
    a, b, c = Relay("a", ["a1"]), Relay("b", ["b1"]), Relay("c", ["c1"])
    team = Swarm([a, b, c], max_turns=1)
    task = [
        HandoffMessage(source="user", target="b", content="b?"),
        TextMessage(content="context", source="user"),
        HandoffMessage(source="user", target="c", content="no, c"),
    ]
    result = await team.run(task=task)
    assert chat(result.messages) == ["user->b", "user:context", "user->c", "c:c1"]


async def test_resume_after_max_turns_continues_with_the_handoff_target() -> None:
    a = Relay("a", ["->b"], handoffs=["b"])
    b = Relay("b", ["b1", "b2"])
    team = Swarm([a, b], max_turns=1)
    first = await team.run(task="go")
    assert chat(first.messages) == ["user:go", "a->b"]
    second = await team.run()
    assert chat(second.messages) == ["b:b1"]
    third = await team.run(task="more")
    assert chat(third.messages) == ["user:more", "b:b2"]


@pytest.mark.parametrize("stopped_by", ["handoff to user", "max_turns"])
async def test_bad_handoff_target_is_a_value_error_and_leaves_the_state_unchanged(
    stopped_by: str,
) -> None:
    a = Relay("a", ["a1", "->user"], handoffs=["user"])
    b = Relay("b", ["b1"])
    team = Swarm([a, b], max_turns=2 if stopped_by == "handoff to user" else 1)
    await team.run(task="go")
    before = json.dumps(await team.save_state(), sort_keys=True)
    bad = HandoffMessage(source="user", target="nobody", content="?")
    with pytest.raises(ValueError, match=r"hands off to `nobody`.*one of `a`, `b`"):
        await team.run(task=bad)
    with pytest.raises(ValueError, match="`nobody`"):
        _ = [
            item async for item in team.run_stream(task=[TextMessage(content="x", source="u"), bad])
        ]
    assert json.dumps(await team.save_state(), sort_keys=True) == before
    # A good target works as if nothing had happened.
    result = await team.run(task=HandoffMessage(source="user", target="b", content="b!"))
    assert chat(result.messages)[:2] == ["user->b", "b:b1"]
    earlier = ["user:go", "a:a1"] if stopped_by == "max_turns" else ["user:go", "a:a1", "a->user"]
    assert b.seen[0] == [*earlier, "user->b"]


async def test_plain_task_after_a_handoff_to_the_user_is_a_value_error() -> None:
    a = Relay("a", ["->user", "a2"], handoffs=["user"])
    team = Swarm([a, Relay("b", [])], max_turns=3)
    await team.run(task="go")
    before = await team.save_state()
    with pytest.raises(ValueError, match=r"`a` handed off to `user`.*HandoffMessage"):
        await team.run(task="here is the answer")
    with pytest.raises(ValueError, match=r"`a` handed off to `user`"):
        await team.run()
    assert await team.save_state() == before
    # After a reset the team starts afresh with a plain task.
    await team.reset()
    result = await team.run(task="new task")
    assert chat(result.messages)[:2] == ["user:new task", "a->user"]


async def test_handoff_to_an_undeclared_participant_is_explained() -> None:
    a = Relay("a", ["->b"], handoffs=["c"])
    team = Swarm([a, Relay("b", []), Relay("c", [])], max_turns=3)
    result = await team.run(task="go")
    assert result.stop_reason == (
        "Digraph execution is complete: `a` handed off to `b`, which is not one of `a`'s "
        "declared handoffs; add it to the agent's `handoffs`"
    )


async def test_agent_without_declared_handoffs_hands_off_to_anyone() -> None:
    # Like a UserProxyAgent answering a handoff: its handoffs are not declared.
    a = Relay("a", ["->b", "a2"], handoffs=["b"])
    b = Relay("b", ["->a"])
    team = Swarm([a, b], max_turns=3)
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a->b", "b->a", "a:a2"]


async def test_handoff_to_itself_keeps_the_turn() -> None:
    a = Relay("a", ["->a", "a2"], handoffs=["a"])
    team = Swarm([a], max_turns=2)
    result = await team.run(task="go")
    assert chat(result.messages) == ["user:go", "a->a", "a:a2"]
    assert result.stop_reason == "Maximum number of turns 2 reached."


async def test_emit_team_events_names_each_speaker() -> None:
    a = Relay("a", ["->b"], handoffs=["b"])
    b = Relay("b", ["b1", "b2"])
    team = Swarm([a, b], max_turns=3, emit_team_events=True)
    result = await team.run(task="go")
    events = [(m.source, m.content) for m in result.messages if isinstance(m, SelectSpeakerEvent)]
    assert events == [("Swarm", ["a"]), ("Swarm", ["b"]), ("Swarm", ["b"])]


async def test_state_round_trip_resumes_with_the_right_speaker() -> None:
    def build() -> tuple[Swarm, Relay]:
        a = Relay("a", ["->b"], handoffs=["b"])
        b = Relay("b", ["b1", "b2"])
        return Swarm([a, b], max_turns=1), b

    team, _ = build()
    await team.run(task="go")
    state = json.loads(json.dumps(await team.save_state()))
    assert state["agent_states"]["SwarmManager"]["ready"] == ["b"]
    fresh, b = build()
    await fresh.load_state(state)
    result = await fresh.run()
    assert chat(result.messages) == ["b:b1"]
    assert b.seen == [["user:go", "a->b"]]


async def test_context_only_handoff_in_the_task_chooses_no_speaker() -> None:
    # A SocietyOfMindAgent passes earlier messages to its inner team as a HandoffMessage
    # with an empty target; the swarm keeps its speaker instead of rejecting the task.
    inner = Swarm([Relay("x", ["x1", "x2"]), Relay("y", [])], max_turns=1)
    model = ReplayChatCompletionClient(["first answer", "second answer"])
    society = SocietyOfMindAgent("society", team=inner, model_client=model)
    # run_stream's result keeps the inner team's messages (run() returns only the task and
    # the answer, as AutoGen's SocietyOfMindAgent does).
    first = [item async for item in society.run_stream(task="one")][-1]
    second = [item async for item in society.run_stream(task="two")][-1]
    assert isinstance(first, TaskResult) and isinstance(second, TaskResult)
    assert chat(first.messages) == ["user:one", "x:x1", "society:first answer"]
    assert chat(second.messages) == ["user:two", "x:x1", "society:second answer"]
    context = HandoffMessage(source="boss", target="", content="earlier messages")
    team = Swarm([Relay("a", ["a1"]), Relay("b", [])], max_turns=1)
    result = await team.run(task=[context, TextMessage(content="go", source="user")])
    assert chat(result.messages) == ["boss->", "user:go", "a:a1"]


async def test_handoff_carries_the_tool_calls_of_its_answer_to_the_next_agent() -> None:
    def lookup_birthday(name: str) -> str:
        """Look up a birthday."""
        return f"{name}: 1st January"

    answer = CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id="c1", arguments='{"name": "Bob"}', name="lookup_birthday"),
            FunctionCall(id="c2", arguments="{}", name="transfer_to_bob"),
        ],
        usage=USAGE,
        cached=False,
    )
    alice = AssistantAgent(
        "Alice", ReplayChatCompletionClient([answer]), tools=[lookup_birthday], handoffs=["Bob"]
    )
    bob_model = ReplayChatCompletionClient(["It is on 1st January."])
    bob = AssistantAgent("Bob", bob_model, system_message=None)
    team = Swarm([alice, bob], max_turns=2)
    result = await team.run(task="When is Bob's birthday?")
    handoff = next(m for m in result.messages if isinstance(m, HandoffMessage))
    assert handoff.target == "Bob"
    assert [type(m).__name__ for m in handoff.context] == [
        "AssistantMessage",
        "FunctionExecutionResultMessage",
    ]
    # Bob's model sees the task, Alice's lookup and its result, then the handoff.
    (request,) = bob_model.requests
    assert [type(m).__name__ for m in request] == [
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
        "UserMessage",
    ]
    results = request[2]
    assert isinstance(results, FunctionExecutionResultMessage)
    assert [r.content for r in results.content] == ["Bob: 1st January"]
    assert chat(result.messages)[-1] == "Bob:It is on 1st January."
