"""Issue 16.6: where AutoGen raises ``ValueError``, ``TypeError`` or ``RuntimeError`` for a
check, flowlib's error is an instance of the same built-in type, and a ``FlowlibError``.

Each row names the AutoGen check (file and what it checks), the built-in type AutoGen
raises, and code that trips the same check in flowlib. docs/choices.md lists the same
table with flowlib's class.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from _agents import Fake
from pydantic import ValidationError

from flowlib.agents import AssistantAgent, BaseChatAgent, UserProxyAgent
from flowlib.base import CancellationToken, Handoff, Response
from flowlib.conditions import MaxMessageTermination, TokenUsageTermination
from flowlib.errors import FlowlibError
from flowlib.memory import ListMemory
from flowlib.messages import BaseChatMessage, HandoffMessage, MessageFactory, TextMessage
from flowlib.models import ModelInfo, ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, SelectorGroupChat, Swarm
from flowlib.tools import FunctionTool, StaticWorkbench

Action = Callable[[], Any] | Callable[[], Awaitable[Any]]

NO_TOOLS = ModelInfo(
    vision=False,
    function_calling=False,
    json_output=False,
    family="unknown",
    structured_output=False,
)


def client(info: ModelInfo | None = None) -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(["ok"], model_info=info)


def lookup(city: str) -> str:
    """Look a city up."""
    return city


def transfer_to_b() -> str:
    """A tool named like the handoff to `b`."""
    return "b"


class NotAMessage(BaseChatMessage):
    """A chat message class that no factory knows."""

    content: str

    def to_text(self) -> str:
        return self.content

    def to_model_text(self) -> str:
        return self.content

    def to_model_message(self) -> Any:
        return TextMessage(content=self.content, source=self.source).to_model_message()


class Hanging(BaseChatAgent):
    """Waits until released, so a team is running while the test calls it again."""

    def __init__(self, name: str, started: asyncio.Event, release: asyncio.Event) -> None:
        super().__init__(name, "waits")
        self.started = started
        self.release = release

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        self.started.set()
        await self.release.wait()
        return Response(chat_message=TextMessage(content="done", source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass


async def while_running(call: Callable[[RoundRobinGroupChat], Awaitable[Any]]) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    team = RoundRobinGroupChat([Hanging("h", started, release)], max_turns=1)
    run = asyncio.ensure_future(team.run(task="go"))
    await started.wait()
    try:
        await call(team)
    finally:
        release.set()
        await run


async def run_team_again() -> None:
    await while_running(lambda team: team.run(task="again"))


async def reset_running_team() -> None:
    await while_running(lambda team: team.reset())


async def load_state_into_running_team() -> None:
    async def load(team: RoundRobinGroupChat) -> None:
        await team.load_state(await team.save_state())

    await while_running(load)


async def load_state_without_agent() -> None:
    team = RoundRobinGroupChat([Fake("a")], max_turns=1)
    state = dict(await team.save_state())
    state["agent_states"] = {
        key: value for key, value in state["agent_states"].items() if key != "a"
    }
    await RoundRobinGroupChat([Fake("a")], max_turns=1).load_state(state)


async def failing_input() -> None:
    def broken(prompt: str) -> str:
        raise OSError("no terminal")

    await UserProxyAgent("user", input_func=broken).run(task="hi")


def graph_with(build: Callable[[DiGraphBuilder], None]) -> Callable[[], Any]:
    def make() -> Any:
        builder = DiGraphBuilder()
        build(builder)
        return builder.build()

    return make


def cycle(builder: DiGraphBuilder) -> None:
    a, b = Fake("a"), Fake("b")
    builder.add_node(a).add_node(b).add_edge(a, b).add_edge(b, a).set_entry_point(a)


def conflicting_activation(builder: DiGraphBuilder) -> None:
    a, b, c = Fake("a"), Fake("b"), Fake("c")
    builder.add_node(a).add_node(b).add_node(c)
    builder.add_edge(a, c, activation_group="g", activation_condition="all")
    builder.add_edge(b, c, activation_group="g", activation_condition="any")


# (id, built-in type AutoGen raises, where AutoGen checks it, the flowlib call)
CASES: list[tuple[str, type[Exception], str, Action]] = [
    # --- agents ----------------------------------------------------------------------
    (
        "agent-name-not-identifier",
        ValueError,
        "agents/_base_chat_agent.py: name must be an identifier",
        lambda: Fake("not an identifier"),
    ),
    (
        "agent-run-task-item-not-message",
        ValueError,
        "agents/_base_chat_agent.py: invalid message type in sequence",
        lambda: Fake("a").run(task=["text", 3]),  # type: ignore[list-item]
    ),
    (
        "memory-not-a-memory",
        TypeError,
        "agents/_assistant_agent.py: expected Memory, List[Memory] or None",
        lambda: AssistantAgent("a", client(), memory="notes"),  # type: ignore[arg-type]
    ),
    (
        "memory-entry-not-a-memory",
        TypeError,
        "agents/_assistant_agent.py: expected Memory, List[Memory] or None",
        lambda: AssistantAgent("a", client(), memory=[ListMemory(), "notes"]),  # type: ignore[list-item]
    ),
    (
        "tools-without-function-calling",
        ValueError,
        "agents/_assistant_agent.py: the model does not support function calling",
        lambda: AssistantAgent("a", client(NO_TOOLS), tools=[lookup]),
    ),
    (
        "unsupported-tool-type",
        ValueError,
        "agents/_assistant_agent.py: unsupported tool type",
        lambda: AssistantAgent("a", client(), tools=[42]),  # type: ignore[list-item]
    ),
    (
        "duplicate-tool-names",
        ValueError,
        "agents/_assistant_agent.py: tool names must be unique",
        lambda: AssistantAgent("a", client(), tools=[lookup, FunctionTool(lookup, "again")]),
    ),
    (
        "handoffs-without-function-calling",
        ValueError,
        "agents/_assistant_agent.py: function calling needed for handoffs",
        lambda: AssistantAgent("a", client(NO_TOOLS), handoffs=["b"]),
    ),
    (
        "unsupported-handoff-type",
        ValueError,
        "agents/_assistant_agent.py: unsupported handoff type",
        lambda: AssistantAgent("a", client(), handoffs=[42]),  # type: ignore[list-item]
    ),
    (
        "duplicate-handoff-names",
        ValueError,
        "agents/_assistant_agent.py: handoff names must be unique",
        lambda: AssistantAgent("a", client(), handoffs=["b", Handoff(target="b")]),
    ),
    (
        "handoff-named-like-tool",
        ValueError,
        "agents/_assistant_agent.py: handoff names must be unique from tool names",
        lambda: AssistantAgent("a", client(), tools=[transfer_to_b], handoffs=["b"]),
    ),
    (
        "tools-and-workbench",
        ValueError,
        "agents/_assistant_agent.py: tools cannot be used with a workbench",
        lambda: AssistantAgent("a", client(), tools=[lookup], workbench=StaticWorkbench([])),
    ),
    (
        "max-tool-iterations-below-one",
        ValueError,
        "agents/_assistant_agent.py: max_tool_iterations >= 1",
        lambda: AssistantAgent("a", client(), max_tool_iterations=0),
    ),
    (
        "handoff-name-not-identifier",
        ValueError,
        "base/_handoff.py: handoff name must be a valid identifier",
        lambda: Handoff(target="b", name="not valid"),
    ),
    (
        "user-proxy-input-fails",
        RuntimeError,
        "agents/_user_proxy_agent.py: failed to get user input",
        failing_input,
    ),
    (
        "input-request-context-instantiated",
        RuntimeError,
        "agents/_user_proxy_agent.py: InputRequestContext cannot be instantiated",
        lambda: UserProxyAgent.InputRequestContext(),
    ),
    (
        "input-request-id-outside-input",
        RuntimeError,
        "agents/_user_proxy_agent.py: request_id() outside the input callback",
        lambda: UserProxyAgent.InputRequestContext.request_id(),
    ),
    # --- teams -----------------------------------------------------------------------
    (
        "team-without-participants",
        ValueError,
        "teams/_base_group_chat.py: at least one participant is required",
        lambda: RoundRobinGroupChat([]),
    ),
    (
        "team-duplicate-participants",
        ValueError,
        "teams/_base_group_chat.py: participant names must be unique",
        lambda: RoundRobinGroupChat([Fake("a"), Fake("a")]),
    ),
    (
        "team-max-turns-zero",
        ValueError,
        "teams/_base_group_chat_manager.py: max turns must be greater than 0",
        lambda: RoundRobinGroupChat([Fake("a")], max_turns=0),
    ),
    (
        "team-task-item-not-message",
        ValueError,
        "teams/_base_group_chat.py: all messages in task list must be BaseChatMessage",
        lambda: RoundRobinGroupChat([Fake("a")], max_turns=1).run(task=[3]),  # type: ignore[list-item]
    ),
    (
        "team-task-wrong-type",
        ValueError,
        "teams/_base_group_chat.py: task must be a string, a message or a list",
        lambda: RoundRobinGroupChat([Fake("a")], max_turns=1).run(task=3),  # type: ignore[arg-type]
    ),
    (
        "team-task-unregistered-type",
        ValueError,
        "teams/_base_group_chat.py: message type not registered with the factory",
        lambda: RoundRobinGroupChat([Fake("a")], max_turns=1).run(
            task=[NotAMessage(content="hi", source="user")]
        ),
    ),
    (
        "team-already-running",
        ValueError,
        "teams/_base_group_chat.py: the team is already running",
        run_team_again,
    ),
    (
        "team-reset-while-running",
        RuntimeError,
        "teams/_base_group_chat.py: cannot reset while running",
        reset_running_team,
    ),
    (
        "team-load-state-while-running",
        RuntimeError,
        "teams/_base_group_chat.py: cannot load while running",
        load_state_into_running_team,
    ),
    (
        "team-load-state-missing-agent",
        ValueError,
        "teams/_base_group_chat.py: agent state not found in the saved state",
        load_state_without_agent,
    ),
    (
        "swarm-participant-is-team",
        TypeError,
        "teams/_swarm_group_chat.py: participant must be a ChatAgent",
        lambda: Swarm([RoundRobinGroupChat([Fake("a")], max_turns=1)]),  # type: ignore[list-item]
    ),
    (
        "swarm-handoff-task-to-stranger",
        ValueError,
        "teams/_swarm_group_chat.py: handoff target is not a participant",
        lambda: Swarm([Fake("a")], max_turns=1).run(
            task=HandoffMessage(content="x", source="user", target="nobody")
        ),
    ),
    (
        "selector-one-participant",
        ValueError,
        "teams/_selector_group_chat.py: at least two participants",
        lambda: SelectorGroupChat([Fake("a")], model_client=client()),
    ),
    (
        "graph-flow-participant-is-not-agent",
        TypeError,
        "teams/_digraph_group_chat.py: participant must be a ChatAgent",
        lambda: DiGraphBuilder().add_node(42),  # type: ignore[arg-type]
    ),
    (
        "graph-edge-unknown-source",
        ValueError,
        "teams/_graph_builder.py: source node must be added before adding an edge",
        lambda: DiGraphBuilder().add_node(Fake("b")).add_edge("a", "b"),
    ),
    (
        "graph-entry-unknown",
        ValueError,
        "teams/_graph_builder.py: start node must be added before setting as entry point",
        lambda: DiGraphBuilder().add_node(Fake("a")).set_entry_point("b"),
    ),
    (
        "graph-empty",
        ValueError,
        "teams/_digraph_group_chat.py: graph has no nodes",
        lambda: GraphFlow([], graph=DiGraphBuilder().build()),
    ),
    ("graph-cycle-without-exit", ValueError, "_digraph_group_chat.py: cycle", graph_with(cycle)),
    (
        "graph-conflicting-activation",
        ValueError,
        "teams/_digraph_group_chat.py: conflicting activation conditions",
        graph_with(conflicting_activation),
    ),
    # --- termination conditions ------------------------------------------------------
    (
        "token-usage-without-limits",
        ValueError,
        "conditions/_terminations.py: at least one token limit must be provided",
        lambda: TokenUsageTermination(),
    ),
    (
        "terminated-condition-reused",
        RuntimeError,
        "base/_termination.py: termination condition has already been reached",
        None,  # filled below: needs a fired condition
    ),
    # --- messages --------------------------------------------------------------------
    (
        "factory-register-not-message",
        ValueError,
        "messages.py: must be a subclass of BaseChatMessage or BaseAgentEvent",
        lambda: MessageFactory().register(int),  # type: ignore[arg-type]
    ),
    (
        "factory-create-without-type",
        ValueError,
        "messages.py: field 'type' is required",
        lambda: MessageFactory().create({"content": "x", "source": "a"}),
    ),
    (
        "factory-create-unknown-type",
        ValueError,
        "messages.py: unknown message type",
        lambda: MessageFactory().create({"type": "Nope", "source": "a"}),
    ),
]


async def reuse_fired_condition() -> None:
    condition = MaxMessageTermination(1)
    await condition([TextMessage(content="x", source="a")])
    await condition([TextMessage(content="y", source="a")])


CASES = [
    (name, kind, where, reuse_fired_condition if action is None else action)
    for name, kind, where, action in CASES
]


@pytest.mark.parametrize(
    ("kind", "action"),
    [pytest.param(kind, action, id=name) for name, kind, _, action in CASES],
)
async def test_same_builtin_type_as_autogen(kind: type[Exception], action: Action) -> None:
    with pytest.raises(Exception) as caught:
        outcome = action()
        if inspect.isawaitable(outcome):
            await outcome
    assert isinstance(caught.value, kind), f"{type(caught.value).__mro__} is not a {kind}"
    if isinstance(caught.value, ValidationError):
        return  # a pydantic model's own validation, as in AutoGen (a ValueError)
    assert isinstance(caught.value, FlowlibError), f"{type(caught.value).__mro__}"


def test_every_autogen_check_is_listed_in_the_choices() -> None:
    from pathlib import Path

    choices = (Path(__file__).parents[1] / "docs" / "choices.md").read_text()
    missing = [name for name, *_ in CASES if f"`{name}`" not in choices]
    assert not missing, missing
